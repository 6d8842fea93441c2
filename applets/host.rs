//! The host's side of getting a trace off the board: converting a stream
//! or a console log to a trace.dat, writing Perfetto's format (listening
//! for `tr-cat -N`: listen.rs). The module is behind the cargo feature
//! `host` (on in the default build, off in the board build, which only
//! writes streams and sends).

use crate::cli::Error;
use crate::decode;
use std::path::Path;

/// `tr-cat STREAM -o trace.dat`: the stream (`-`: standard input) as a
/// version 6 trace.dat.
pub fn convert(input: &str, output: &str) -> Result<(), Error> {
    use std::io::Write as _;
    let inp = Path::new(input);
    let Some(bytes) = crate::stream_in::load_stream(inp)? else {
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

/// `tr-cat FILE -o OUT.pftrace`: Perfetto's protobuf trace format.
pub fn perfetto(input: decode::Input<'_>, o: &decode::RawOpts, output: &str) -> Result<(), Error> {
    use std::io::Write as _;
    let mut tr = trbox::perfetto::TraceBuilder::new();
    let meta = decode::collect(input, o, &|| false, &mut |m, it| {
        if let decode::Item::Record { cpu, ts, payload, .. } = it {
            let endian = m.trace.endian;
            if let Some(ev) = m.trace.events.event_of(payload, endian) {
                tr.event(ev, cpu, ts, m.pid(ev, payload), payload, endian);
            }
        }
    })?;
    let threads: Vec<(i32, &str)> = meta
        .saved_cmdlines
        .lines()
        .filter_map(|l| l.trim().split_once(' ').and_then(|(p, c)| Some((p.parse().ok()?, c.trim()))))
        .collect();
    let events = tr.events;
    let symbol = |a: u64| {
        use trbox::printfmt::SymbolLookup;
        // The name alone, as the function_graph tracer prints it (%ps).
        meta.trace.symbols.lookup(a).map(|s| s.name.to_string())
    };
    let bytes = tr.finish(&threads, meta.uname.as_deref(), &symbol);
    let mut f = trbox::sys::record::create_output(Path::new(output))?;
    f.write_all(&bytes).map_err(|e| Error::runtime(format!("{output}: {}", trbox::sys::describe(&e))))?;
    eprintln!("tr-cat: {output}: {events} events, {} bytes (Perfetto trace)", bytes.len());
    Ok(())
}
