//! The host's side of getting a trace off the board: converting a stream
//! or a console log to a trace.dat, writing Perfetto's format or Parquet
//! in LISA's layout (listening
//! for `tr-cat -N`: listen.rs). The module is behind the cargo feature
//! `host` (on in the default build, off in the board build, which only
//! writes streams and sends).

use crate::applets::cli::Error;
use std::path::Path;
use trbox::sys::read;

/// `tr-cat STREAM -o trace.dat`: the stream (`-`: standard input) as a
/// version 6 trace.dat.
pub(crate) fn convert(input: &str, output: &str) -> Result<(), Error> {
    use std::io::Write as _;
    let inp = Path::new(input);
    // A long recording's stream runs to gigabytes: on a terminal, the MiB
    // read so far.
    let progress = crate::applets::progress::Progress::new(None, true, true);
    let loaded = read::load_stream_with(inp, &|n| {
        if progress.due() {
            progress.show(format_args!("{} MiB read", n >> 20));
        }
    });
    progress.clear();
    let Some(bytes) = loaded? else {
        return Err(Error::usage(format!("{input}: not a trbox stream (tr-cat -o - writes one); nothing to convert"))
            .hint("a trace.dat is read as it is: tr-cat FILE"));
    };
    if output == "-" {
        return Err(Error::usage("the stream is already on standard output's side: give -o a file name"));
    }
    let mut f = trbox::sys::record::create_output(Path::new(output))?;
    f.write_all(&bytes).map_err(|e| Error::runtime(format!("{output}: {}", trbox::sys::describe(&e))))?;
    eprintln!("tr-cat: {output}: {} bytes (trace.dat version 6)", bytes.len());
    Ok(())
}

/// `tr-cat FILE -o OUT.pftrace`: Perfetto's protobuf trace format (the
/// library's Perfetto sink), written to `output`.
pub(crate) fn perfetto(reader: read::Reader, o: &read::RawOpts, output: &str) -> Result<(), Error> {
    let path = Path::new(output);
    let f = trbox::sys::record::create_output(path)?;
    let size = f.try_clone().map_err(|e| Error::runtime(format!("{output}: {}", trbox::sys::describe(&e))))?;
    let written = || size.metadata().map_or(0, |m| m.len());
    // A big file takes a while: on a terminal, what is written so far.
    let progress = crate::applets::progress::Progress::new(None, true, true);
    let done = || {
        if progress.due() {
            progress.show(format_args!("{} MiB written", written() >> 20));
        }
        false
    };
    let converted = crate::applets::command::stop(&done)
        .and_then(|stop| Ok(read::perfetto(reader, o, &stop, read::Out::file(f), path)?));
    progress.clear();
    match converted {
        Ok(n) => {
            crate::applets::command::note_empty(n.empty);
            eprintln!(
                "tr-cat: {output}: {} events ({} sched_switch/sched_waking in compact form), {} bytes (Perfetto trace)",
                n.events,
                n.compact,
                written()
            );
            Ok(())
        }
        Err(e) => {
            // Nothing half-written is left behind.
            let _ = std::fs::remove_file(path);
            Err(e)
        }
    }
}

/// `tr-cat FILE… -o OUT.parquet`: the directory LISA's `trace-dump
/// parquet` writes (the library's Parquet sink); several FILEs under
/// `source=NAME/`, NAME the file's name without `.dat`.
pub(crate) fn parquet(files: &[String], output: &str, o: &read::parquet::Options) -> Result<(), Error> {
    let out = Path::new(output);
    let mut names: Vec<String> = Vec::new();
    for f in files {
        let base = Path::new(f.as_str()).file_name().map_or(f.to_string(), |n| n.to_string_lossy().into_owned());
        let name = base.strip_suffix(".dat").unwrap_or(&base).to_string();
        if names.contains(&name) {
            return Err(Error::usage(format!("{f}: a second recording named {name}: each is source={name}/"))
                .hint("give the files distinct names"));
        }
        names.push(name);
    }
    let fleet = files.len() > 1;
    let sources: Vec<read::parquet::Source<'_>> = files
        .iter()
        .zip(names)
        .map(|(f, n)| read::parquet::Source { path: Path::new(f.as_str()), name: fleet.then_some(n) })
        .collect();
    if out.symlink_metadata().is_ok() {
        return Err(Error::runtime(format!("{output}: already exists; nothing is written over"))
            .hint("remove it or give another name"));
    }
    let w = read::parquet::parquet(&sources, out, o)?;
    if w.files == 0 {
        crate::applets::cli::note(
            &Error::runtime(format!("{output}: no event: the recording holds no record, so no EVENT.parquet"))
                .hint("tr-cat --stats FILE counts its events"),
        );
        return Ok(());
    }
    eprintln!("tr-cat: {output}: {} events in {} files (Parquet, LISA's layout)", w.rows, w.files);
    Ok(())
}

/// `tr-cat --from-console LOG` where the log holds the kernel's own dump
/// (`ftrace_dump_on_oops`) and no trbox recording: the dump's lines as
/// the kernel printed them (console prefix removed) and the oops lines
/// that followed, `--json` (one object per event line) or `--stats`.
/// `None` when the log holds a recording (the usual reading then goes on;
/// a dump beside it is mentioned on stderr). Neither: an error (exit 2).
pub(crate) fn console_dump(log: &str, json: bool, stats: bool) -> Result<Option<()>, Error> {
    use std::fmt::Write as _;
    use trbox::ftrace_dump::{self as fd, Stats};
    let bytes = std::fs::read(log).map_err(|e| Error::runtime(format!("{log}: {}", trbox::sys::describe(&e))))?;
    let text = String::from_utf8_lossy(&bytes);
    let dumps = fd::find(&text);
    let recording = text.contains(trbox::tracedat::console::BEGIN);
    if recording {
        if let Some(d) = dumps.first() {
            eprintln!("tr-cat: {log} also holds the kernel's ftrace dump (line {}); the recording is read", d.line);
        }
        return Ok(None);
    }
    if dumps.is_empty() {
        return Err(Error::runtime(format!(
            "{log}: neither a trbox recording ({}) nor a kernel ftrace dump (Dumping ftrace buffer:)",
            trbox::tracedat::console::BEGIN
        ))
        .hint("record with 'tr-cat -o - --console', or arm the dump with 'tr-on --dump-on-oops all'"));
    }
    let mut o = String::new();
    for d in &dumps {
        let name = d.instance.as_deref().map_or(String::new(), |i| format!(" of instance {i}"));
        if !json {
            let state = if d.empty {
                ": empty"
            } else if !d.complete {
                ": cut off (the log ends inside it)"
            } else {
                ""
            };
            let _ = writeln!(o, "# {log}:{}: the kernel's ftrace dump{name}{state}", d.line);
        }
        if stats {
            let s = Stats::of(d);
            let unit = if s.in_us { "us" } else { "" };
            let span = s.span.map_or(String::new(), |(a, b)| format!(", {a}{unit} to {b}{unit}"));
            // The report's headline: the oops or panic, not the sysrq key.
            let cause = d.before.iter().filter(|l| fd::opens_report(l)).find(|l| !l.starts_with("sysrq:"));
            if let Some(cause) = cause.or(d.before.first()) {
                let _ = writeln!(o, "dumped at: {cause}");
            }
            let _ = writeln!(o, "{} events, {} other lines{span}", s.events, s.other);
            let _ = writeln!(o, "{:>4} {:>10} {:>10}", "CPU", "events", "lost");
            for (c, n, l) in &s.by_cpu {
                let l = l.map_or("?".to_string(), |l| l.to_string());
                let _ = writeln!(o, "{c:>4} {n:>10} {l:>10}");
            }
            let _ = writeln!(o, "{:>10}  event", "count");
            for (e, n) in &s.by_event {
                let _ = writeln!(o, "{n:>10}  {e}");
            }
            continue;
        }
        if json {
            for l in &d.lines {
                let Some(e) = fd::parse(l) else { continue };
                let _ = dump_line_json(&mut o, &e);
                o.push('\n');
            }
            continue;
        }
        if !d.before.is_empty() {
            let _ = writeln!(o, "# before the dump:");
            for l in &d.before {
                o.push_str(l);
                o.push('\n');
            }
            let _ = writeln!(o, "# the dump:");
        }
        for l in d.warnings.iter().chain(&d.lines) {
            o.push_str(l);
            o.push('\n');
        }
        if !d.after.is_empty() {
            let _ = writeln!(o, "# after the dump:");
            for l in &d.after {
                o.push_str(l);
                o.push('\n');
            }
        }
    }
    crate::applets::cli::print(&o).map(Some)
}

/// A dump's event line as a JSON object: `ts_us`, `cpu`, `pid`, `comm`,
/// `flags`, `event`, `body`.
fn dump_line_json(w: &mut dyn std::fmt::Write, e: &trbox::ftrace_dump::Line<'_>) -> std::fmt::Result {
    let mut o = trbox::json::Object::begin(w)?;
    o.uint("ts_us", e.ts)?;
    o.uint("cpu", u64::from(e.cpu))?;
    o.int("pid", e.pid)?;
    o.string("comm", e.comm)?;
    o.string("flags", e.flags)?;
    o.string("event", e.event)?;
    o.string("body", e.body)?;
    o.end()
}
