//! tr-cat: print the trace buffer, decode the raw per-CPU pages or a
//! trace.dat, or record the raw pages into one (-o, [`record`]); on the
//! host also trace-cmd's listener (--listen, [`listen`]) and the
//! conversions (console dumps, Perfetto, [`host`]).

#[cfg(feature = "host")]
mod host;
#[cfg(feature = "host")]
mod listen;
mod record;

use crate::applets::cli::{self, Error};
use argh::{ArgsInfo, FromArgs};
use std::io::Write as _;
use trbox::sys::read::Out;
#[cfg(feature = "decode")]
use trbox::sys::read::{self, Filter, RawOpts};
use trbox::sys::Tracefs;

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help"))]
#[cfg_attr(
    feature = "decode",
    doc = "Print the trace buffer (the kernel's trace file, not consumed), its raw pages decoded by trbox \
(--raw) or a trace.dat FILE; or record (-o, -N) until Ctrl-C, -t or the command after -- ends."
)]
#[cfg_attr(
    not(feature = "decode"),
    doc = "Print the trace buffer (the kernel's trace file, not consumed); or record (-o) until Ctrl-C, -t or \
the command after -- ends. A recording is read by a trbox with the decoder (the host's)."
)]
#[cfg_attr(
    feature = "host",
    argh(
        example = "{command_name}   # the trace file, as the kernel prints it",
        example = "{command_name} --raw --follow -t 5   # decode the raw pages as they fill",
        example = "{command_name} -o trace.dat -e 'sched:*' -- make",
        example = "{command_name} trace.dat --stats",
        example = "{command_name} board1.dat board2.dat -o fleet.parquet   # LISA's layout, for DuckDB",
        example = "{command_name} -o - --console -t 2   # a recording as text on a serial console"
    )
)]
pub(crate) struct Args {
    #[cfg_attr(
        feature = "decode",
        doc = "a trace.dat (v6/v7) or a stream of tr-cat -o - (-: standard input); all its buffers, or -B NAME; \
several with -o OUT.parquet (host build), each into OUT.parquet/source=NAME/"
    )]
    #[cfg_attr(not(feature = "decode"), doc = "a recording to read: not in this configuration (no decoder)")]
    #[argh(positional, arg_name = "FILE")]
    files: Vec<String>,
    /// record the raw pages into this trace.dat; -: a stream on standard
    /// output; with a stream FILE: convert
    #[argh(option, short = 'o', arg_name = "FILE")]
    output: Option<String>,
    /// with -o: keep at most KB of trace data, the newest; with --listen: the
    /// most one recording may send
    #[argh(option, short = 'm', arg_name = "KB")]
    max_kb: Option<u64>,
    #[cfg(feature = "decode")]
    /// decode per_cpu/cpuN/trace_pipe_raw (consumes the buffer)
    #[argh(switch)]
    raw: bool,
    #[cfg(feature = "decode")]
    /// with --raw: keep streaming as the buffers fill (Ctrl-C ends)
    #[argh(switch)]
    follow: bool,
    /// stop after S seconds (with --follow or -o)
    #[argh(option, short = 't', arg_name = "S")]
    time: Option<cli::Seconds>,
    #[cfg(feature = "decode")]
    /// only these CPUs (a CPU list: 0-1,3)
    #[argh(option, arg_name = "CPUS")]
    cpus: Option<cli::Cpus>,
    #[cfg(feature = "decode")]
    /// only events of this pid
    #[argh(option, short = 'P', arg_name = "PID")]
    pid: Option<i32>,
    #[cfg(feature = "decode")]
    /// only events of tasks whose comm matches (a glob)
    #[argh(option, arg_name = "COMM")]
    comm: Option<String>,
    /// only this event (SYS:EVENT, globs allowed; repeatable); with -o: enable
    /// it for the recording
    #[argh(option, short = 'e', arg_name = "SYS:EVENT")]
    event: Vec<String>,
    #[cfg(feature = "decode")]
    /// one JSON object per event instead of text
    #[argh(switch)]
    json: bool,
    #[cfg(feature = "decode")]
    /// with --raw or FILE: counts instead of events (per CPU, event, task;
    /// over 20 tasks: by comm, the 20 with the most)
    #[argh(switch)]
    stats: bool,
    #[cfg(feature = "decode")]
    /// with --stats: a row for every task
    #[argh(switch)]
    all: bool,
    #[cfg(feature = "decode")]
    /// with --raw or FILE: decode on N threads (default: one per CPU)
    #[argh(option, short = 'j', arg_name = "N")]
    jobs: Option<usize>,
    /// with -o -: as text lines for a serial console
    #[cfg(feature = "console")]
    #[argh(switch)]
    console: bool,
    /// record and send to trace-cmd listen (or tr-cat --listen) at IP:PORT
    #[cfg(feature = "net")]
    #[argh(option, short = 'N', arg_name = "IP:PORT")]
    net: Option<String>,
    /// host build: the FILE to read, given as an option (-i -: a stream or a
    /// trace.dat on standard input)
    #[cfg(feature = "host")]
    #[argh(option, short = 'i', arg_name = "FILE")]
    input: Option<String>,
    /// host build: read the recording that tr-cat -o - --console printed,
    /// from a captured console log (with -o FILE: convert it to a trace.dat)
    #[cfg(feature = "host")]
    #[argh(option, arg_name = "LOG")]
    from_console: Option<String>,
    /// host build: receive recordings from tr-cat -N or trace-cmd record -N
    /// -t on PORT (of ADDR only, e.g. 127.0.0.1 behind an ssh tunnel), into
    /// trace.HOST:PORT.dat files (in the -o DIR; -o DIR.parquet: each into
    /// DIR.parquet/source=HOST_PORT/); 16 senders at once, -m KB each
    /// (default 1 GiB); no authentication: a trusted network only
    #[cfg(feature = "host")]
    #[argh(option, arg_name = "[ADDR:]PORT")]
    listen: Option<String>,
    /// host build: with -o OUT.parquet (also --listen's), how the columns
    /// are compressed: snappy (the default, as LISA's), zstd (smaller) or
    /// none
    #[cfg(feature = "host")]
    #[argh(option, arg_name = "CODEC")]
    compression: Option<read::parquet::Codec>,
}

impl Args {
    /// The FILE to read (main has refused several, but with -o X.parquet).
    fn file(&self) -> Option<&String> {
        self.files.first()
    }

    /// --raw, --follow or --json: reading, which a recording does not do
    /// (feature decode).
    fn reads(&self) -> bool {
        #[cfg(feature = "decode")]
        return self.raw || self.follow || self.json;
        #[cfg(not(feature = "decode"))]
        false
    }

    /// `-N HOST:PORT` (feature net).
    fn net(&self) -> Option<&String> {
        #[cfg(feature = "net")]
        return self.net.as_ref();
        #[cfg(not(feature = "net"))]
        None
    }

    /// `--console` (feature console).
    fn console(&self) -> bool {
        #[cfg(feature = "console")]
        return self.console;
        #[cfg(not(feature = "console"))]
        false
    }
}

pub(crate) fn main(args: &[String]) -> Result<(), Error> {
    let (own, cmd) = crate::applets::command::split(args);
    #[cfg_attr(not(feature = "host"), allow(unused_mut))]
    let (common, mut a) = cli::parse::<Args>("tr-cat", own)?;
    let common = &common;
    if a.files.len() > 1 && !a.output.as_ref().is_some_and(|o| o.ends_with(".parquet")) {
        return Err(Error::usage("one FILE is read at a time; several go with -o OUT.parquet (host build)"));
    }
    #[cfg(feature = "host")]
    if host_side(common, &mut a, cmd)?.is_some() {
        return Ok(());
    }
    // -o FILE, -o - or -N HOST:PORT: one recorder.
    if let Some(o) = a.net().or(a.output.as_ref()) {
        if a.reads() || a.file().is_some() || (a.net().is_some() && a.output.is_some()) {
            return Err(Error::usage(
                "-o and -N record; they do not combine with each other, --raw, --follow, --json or a FILE to read",
            ));
        }
        let r = record::Request {
            path: o,
            events: &a.event,
            time: a.time,
            max_kb: a.max_kb,
            cmd,
            console: a.console(),
            net: a.net().is_some(),
        };
        return record::run(common, r);
    }
    if !cmd.is_empty() {
        return Err(Error::usage("'-- CMD' goes with -o").hint("e.g. tr-cat -o trace.dat -- CMD"));
    }
    #[cfg(feature = "decode")]
    return decode(common, &a);
    #[cfg(not(feature = "decode"))]
    {
        if a.file().is_some() {
            return Err(crate::applets::cli::left_out("reading a FILE", "decode"));
        }
        print_trace(&open(common)?)
    }
}

/// The tracefs of -T (or the live one), in -B's instance.
fn open(common: &cli::Common) -> Result<Tracefs, Error> {
    let mut t = Tracefs::open(common.tracefs.as_deref())?;
    if let Some(i) = &common.instance {
        t.enter_instance(i)?;
    }
    Ok(t)
}

/// The kernel's `trace` file, as it prints it (not consumed).
fn print_trace(t: &Tracefs) -> Result<(), Error> {
    let text = t.read("trace")?;
    let mut out = Out::stdout();
    let _ = out.write_all(text.as_bytes());
    Ok(out.finish()?)
}

/// Reading with trbox's decoder: a FILE, --raw (also --stats, --json), or
/// the `trace` file.
#[cfg(feature = "decode")]
fn decode(common: &cli::Common, a: &Args) -> Result<(), Error> {
    trbox::sys::signals::install().map_err(trbox::sys::Error::Signals)?;
    let opts = |follow| RawOpts {
        only: None,
        filter: Filter { pid: a.pid, comm: a.comm.clone(), events: a.event.clone(), not_self: false },
        follow,
        json: a.json,
        limit: a.time.map(|s| s.0),
        since: None,
        threads: a.jobs.map(|n| n.max(1)),
        reading: Default::default(),
        kernel: common.kernel.clone(),
    };
    if let Some(f) = a.file() {
        // A recorded file needs no tracefs (and no root).
        let mut o = opts(false);
        o.only = a.cpus.clone().map(|c| c.0);
        let reader = read::Reader::dat("tr-cat", std::path::Path::new(f), common.instance.as_deref(), &o)?;
        known_events(&reader, &o, &format!("{f} has"))?;
        if a.stats {
            return stats(reader, &o, a.all);
        }
        if !crate::applets::command::print(reader, &o, &crate::applets::command::stop(&|| false)?)? && filtered(a) {
            // (No record at all, or none on the CPUs of --cpus, has its own note.)
            crate::applets::cli::note(
                &Error::runtime(format!("no event in {f} passes the filters"))
                    .hint(format!("tr-cat --stats {f} counts its events by CPU, event and task")),
            );
        }
        return Ok(());
    }
    let t = open(common)?;
    let cpus = a.cpus.clone().map(|c| c.0);
    if a.follow && !a.raw {
        return Err(Error::usage("--follow works with --raw").hint("try 'tr-cat --raw --follow'"));
    }
    if a.stats && !a.raw {
        return Err(Error::usage("--stats counts raw pages or a file")
            .hint("try 'tr-cat --raw --stats' or 'tr-cat --stats FILE'"));
    }
    if a.raw {
        let mut o = opts(a.follow);
        o.only = cpus;
        let held = t.held();
        let reader = read::Reader::of_tree(&t, &o)?;
        known_events(&reader, &o, "this tracefs has")?;
        if a.stats {
            stats(reader, &o, a.all)
        } else {
            if !crate::applets::command::print(reader, &o, &crate::applets::command::stop(&|| false)?)? {
                let again = "tr-event, tr-on or tr-cat -o record; tr-on shows what is enabled";
                let e = if filtered(a) || o.only.is_some() {
                    Error::runtime("no event in the buffer passes the filters").hint(again)
                } else {
                    let empty = crate::applets::command::empty_buffer("no events to read", held, again);
                    // (A copy's stats need not be those of the pages copied.)
                    empty
                        .filter(|_| t.is_live())
                        .unwrap_or_else(|| Error::runtime("the buffer holds no events").hint(again))
                };
                crate::applets::cli::note(&e);
            }
            Ok(())
        }
    } else {
        print_trace(&t)
    }
}

/// An -e that names no event the input has formats of is said with the
/// closest names, as tr-event offers them: an error when no -e does, else
/// a note.
#[cfg(feature = "decode")]
fn known_events(reader: &read::Reader, o: &RawOpts, what: &str) -> Result<(), Error> {
    let bad = o.filter.unmatched(reader.session().events());
    if bad.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = reader.session().events().iter().map(|e| format!("{}:{}", e.system, e.name)).collect();
    let err = |spec: &str| {
        let msg = format!("-e {spec}: {what} no such event");
        crate::applets::command::no_event(msg, spec, &names, "tr-cat --stats counts the events of a recording")
    };
    if bad.len() == o.filter.events.len() {
        return Err(err(bad[0]));
    }
    bad.iter().for_each(|spec| crate::applets::cli::note(&err(spec)));
    Ok(())
}

/// Whether -e, --pid or --comm leave records out.
#[cfg(feature = "decode")]
fn filtered(a: &Args) -> bool {
    !a.event.is_empty() || a.pid.is_some() || a.comm.is_some()
}

/// What a Perfetto conversion reads: the filters, once through.
#[cfg(feature = "host")]
fn perfetto_opts(common: &cli::Common, a: &Args) -> Result<RawOpts, Error> {
    Ok(RawOpts {
        only: a.cpus.clone().map(|c| c.0),
        filter: Filter { pid: a.pid, comm: a.comm.clone(), events: a.event.clone(), not_self: false },
        follow: false,
        json: false,
        limit: None,
        since: None,
        threads: a.jobs.map(|n| n.max(1)),
        reading: Default::default(),
        kernel: common.kernel.clone(),
    })
}

/// What only the host build does: read a stream or a console log (`-i`,
/// `--from-console`), convert (`FILE -o trace.dat`, `-o X.pftrace`,
/// `FILE… -o X.parquet`),
/// listen (`--listen`). Some(()) when it was one of those.
#[cfg(feature = "host")]
fn host_side(common: &cli::Common, a: &mut Args, cmd: &[String]) -> Result<Option<()>, Error> {
    let to_parquet = a.output.as_ref().is_some_and(|o| o.ends_with(".parquet"));
    if a.compression.is_some() && !to_parquet {
        return Err(Error::usage("--compression is how -o OUT.parquet compresses its columns: give -o OUT.parquet")
            .hint("e.g. tr-cat trace.dat -o trace.parquet --compression zstd"));
    }
    let conversion = read::parquet::Options {
        codec: a.compression.unwrap_or_default(),
        read: read::ReadOptions { kernel: common.kernel.clone(), ..Default::default() },
        threads: a.jobs.map(|n| n.max(1)),
    };
    if let Some(addr) = &a.listen {
        let addr = listen::parse_addr(addr)?;
        let dir = a.output.as_deref().unwrap_or(".");
        return listen::listen(addr, dir, a.max_kb, to_parquet.then_some(conversion)).map(Some);
    }
    if let Some(i) = a.from_console.take() {
        if a.file().is_some() || a.input.is_some() {
            return Err(Error::usage("--from-console LOG is the file to read: give no other FILE"));
        }
        if a.output.is_none() && host::console_dump(&i, a.json, a.stats)?.is_some() {
            return Ok(Some(()));
        }
        a.files = vec![i];
    }
    if let Some(i) = a.input.take() {
        if a.file().is_some() {
            return Err(Error::usage("give the file to read once: as FILE or with -i"));
        }
        a.files = vec![i];
    }
    if let Some(o) = a.output.as_ref().filter(|o| o.ends_with(".parquet")) {
        return parquet(a, o, cmd, &conversion).map(Some);
    }
    if let (Some(o), Some(f)) = (&a.output, a.file()) {
        if o.ends_with(".pftrace") {
            let ro = perfetto_opts(common, a)?;
            let reader = read::Reader::dat("tr-cat", std::path::Path::new(f), common.instance.as_deref(), &ro)?;
            return host::perfetto(reader, &ro, o).map(Some);
        }
        if a.raw || a.follow || a.json || !cmd.is_empty() || !a.event.is_empty() {
            return Err(Error::usage(
                "FILE -o OUT converts a stream; it does not combine with --raw, --follow, --json, -e or -- CMD",
            ));
        }
        return host::convert(f, o).map(Some);
    }
    if let Some(o) = a.output.as_ref().filter(|o| o.ends_with(".pftrace") && a.raw) {
        // A tree's raw pages (a copy with -T, or the live buffer, consumed).
        let mut t = Tracefs::open(common.tracefs.as_deref())?;
        if let Some(i) = &common.instance {
            t.enter_instance(i)?;
        }
        let ro = perfetto_opts(common, a)?;
        let reader = read::Reader::of_tree(&t, &ro)?;
        return host::perfetto(reader, &ro, o).map(Some);
    }
    Ok(None)
}

/// `FILE… -o OUT.parquet`: each recording into LISA's layout.
#[cfg(feature = "host")]
fn parquet(a: &Args, o: &str, cmd: &[String], conversion: &read::parquet::Options) -> Result<(), Error> {
    if a.files.is_empty() {
        return Err(Error::usage("-o OUT.parquet converts a recording: give the FILE (or FILEs) to read")
            .hint(format!("e.g. tr-cat trace.dat -o {o}")));
    }
    if a.raw || a.follow || a.json || a.stats || filtered(a) || a.cpus.is_some() || !cmd.is_empty() {
        return Err(Error::usage(
            "-o OUT.parquet converts every record of the FILEs; it does not combine with --raw, --follow, --json, \
--stats, -e, --pid, --comm, --cpus or -- CMD",
        ));
    }
    host::parquet(&a.files, o, conversion)
}

/// `--stats`: count everything kept (on every CPU, by time slices, where
/// the input allows), print the table at the end.
#[cfg(feature = "decode")]
fn stats(reader: read::Reader, o: &RawOpts, all_tasks: bool) -> Result<(), Error> {
    let (st, session) = read::summarize(reader, o, &crate::applets::command::stop(&|| false)?)?;
    crate::applets::command::note_empty(session.empty.clone());
    let t = &session.trace;
    let names = trbox::summary::Summarized {
        events: &t.events,
        cmdlines: &t.cmdlines,
        buffers: &session.buffers,
        in_ns: t.in_ns(),
        problems: &t.problems,
    };
    let mut out = Out::stdout();
    let _ = out.write_all(st.render(&names, all_tasks).as_bytes());
    Ok(out.finish()?)
}
