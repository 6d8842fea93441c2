//! tr-cat: print the trace buffer, decode the raw per-CPU pages or a
//! trace.dat, or record the raw pages into one (-o, see record.rs).

use crate::cli::{self, Common, Error};
use std::io::Write as _;
use trbox::sys::read::Out;
use trbox::sys::read::{self, Filter, RawOpts};
use trbox::sys::Tracefs;

const HELP: &str = "\
Usage: tr-cat [--raw [-f]] [-j N] [FILE]
       tr-cat -o FILE|- | -N IP:PORT [-e EV] [-t S] [-m KB] [-- CMD]

Print the trace buffer (the kernel's `trace` file, not consumed), its raw
pages decoded by trbox (--raw) or a trace.dat FILE; or record (-o, -N)
until Ctrl-C, -t or `-- CMD` ends.

FILE\ta trace.dat (v6/v7) or a stream of tr-cat -o - (`-`:
\tstandard input); all its buffers, or -B NAME
-o, --output FILE\trecord the raw pages into this trace.dat; `-`: a
\tstream on standard output; with a stream FILE: convert
-m, --max-kb KB\twith -o: keep at most KB of trace data, the newest;
\twith --listen: the most one recording may send
--raw\tdecode per_cpu/cpuN/trace_pipe_raw (consumes the
\tbuffer)
-f, --follow\twith --raw: keep streaming as the buffers fill (Ctrl-C
\tends)
-t, --time S\tstop after S seconds (with --follow or -o)
--cpu CPUS\tonly these CPUs (comma-separated)
--pid PID\tonly events of this pid
--comm COMM\tonly events of tasks whose comm matches (a glob)
  -e, --event SYS:EVENT
\tonly this event (SYS:EVENT, globs allowed; repeatable);
\twith -o: enable it for the recording
--json\tone JSON object per event instead of text
--stats\twith --raw or FILE: counts instead of events (per CPU,
\tevent, task; over 20 tasks: by comm, the 20 with the most)
--all\twith --stats: a row for every task
-j, --jobs N\twith --raw or FILE: render on N threads (default: one
\tper CPU)
--console\twith -o -: as text lines for a serial console
-N, --net IP:PORT\trecord and send to trace-cmd listen at IP:PORT
-h, --help\tthis text
";

/// The options of the host build only (not in a board's binary).
#[cfg(feature = "host")]
const HOST_HELP: &str = "
In the host build:
\
-i, --input FILE\tthe FILE to read, given as an option: `-i -` reads a
\tstream (or a trace.dat) from standard input
--from-console LOG\tread the recording that tr-cat -o - --console printed,
\tfrom a captured console log (with -o FILE: convert it
\tto a trace.dat)
  --listen [ADDR:]PORT
\treceive recordings from tr-cat -N or trace-cmd record -N
\t-t on PORT (of ADDR only, e.g. 127.0.0.1 behind an ssh
\ttunnel), into trace.HOST:PORT.dat files (in the -o DIR);
\t16 senders at once, -m KB each (default 1 GiB); no
\tauthentication: use it on a trusted network only
";
#[cfg(not(feature = "host"))]
const HOST_HELP: &str = "";

const OPTS: &[cli::Opt] = &[
    ('o', "output", true),
    ('m', "max-kb", true),
    (' ', "raw", false),
    ('f', "follow", false),
    ('t', "time", true),
    (' ', "cpu", true),
    (' ', "pid", true),
    (' ', "comm", true),
    ('e', "event", true),
    (' ', "json", false),
    (' ', "stats", false),
    (' ', "all", false),
    ('j', "jobs", true),
    ('i', "input", true),
    (' ', "console", false),
    (' ', "from-console", true),
    ('N', "net", true),
    (' ', "listen", true),
];

#[derive(Default)]
struct Args {
    output: Option<String>,
    max_kb: Option<u64>,
    raw: bool,
    follow: bool,
    time: Option<cli::Seconds>,
    cpu: Option<String>,
    pid: Option<i32>,
    comm: Option<String>,
    event: Vec<String>,
    json: bool,
    stats: bool,
    all: bool,
    jobs: Option<usize>,
    file: Option<String>,
    #[cfg(feature = "host")]
    input: Option<String>,
    console: bool,
    #[cfg(feature = "host")]
    from_console: Option<String>,
    net: Option<String>,
    #[cfg(feature = "host")]
    listen: Option<std::net::SocketAddr>,
}

impl Args {
    fn parse(args: &[String]) -> Result<Args, Error> {
        let mut a = Args::default();
        let mut p = cli::Parser::new("tr-cat", &[HELP, HOST_HELP], OPTS, args);
        while let Some(o) = p.next()? {
            match o {
                "output" => a.output = Some(p.value()),
                "max-kb" => a.max_kb = Some(p.num()?),
                "raw" => a.raw = true,
                "follow" => a.follow = true,
                "time" => a.time = Some(p.seconds()?),
                "cpu" => a.cpu = Some(p.value()),
                "pid" => a.pid = Some(p.num()?),
                "comm" => a.comm = Some(p.value()),
                "event" => a.event.push(p.value()),
                "json" => a.json = true,
                "stats" => a.stats = true,
                "all" => a.all = true,
                "jobs" => a.jobs = Some(p.num()?),
                #[cfg(feature = "host")]
                "input" => a.input = Some(p.value()),
                "console" => a.console = true,
                #[cfg(feature = "host")]
                "from-console" => a.from_console = Some(p.value()),
                "net" => a.net = Some(p.value()),
                #[cfg(feature = "host")]
                "listen" => a.listen = Some(crate::listen::parse_addr(&p.value())?),
                #[cfg(not(feature = "host"))]
                "input" | "from-console" | "listen" => {
                    return Err(Error::usage(format!(
                        "--{o} is in the host build of trbox only, not in this board build"
                    )))
                }
                _ if a.file.is_none() => a.file = Some(p.value()),
                _ => return Err(p.extra()),
            }
        }
        Ok(a)
    }
}

pub fn main(common: &Common, args: &[String]) -> Result<(), Error> {
    let (own, cmd) = crate::command::split(args);
    #[cfg_attr(not(feature = "host"), allow(unused_mut))]
    let mut a = Args::parse(own)?;
    #[cfg(feature = "host")]
    if host_side(common, &mut a, cmd)?.is_some() {
        return Ok(());
    }
    // -o FILE, -o - or -N HOST:PORT: one recorder.
    if let Some(o) = a.net.as_ref().or(a.output.as_ref()) {
        if a.raw || a.follow || a.json || a.file.is_some() || (a.net.is_some() && a.output.is_some()) {
            return Err(Error::usage(
                "-o and -N record; they do not combine with each other, --raw, -f, --json or a FILE to read",
            ));
        }
        let r = crate::record::Request {
            path: o,
            events: &a.event,
            time: a.time,
            max_kb: a.max_kb,
            cmd,
            console: a.console,
            net: a.net.is_some(),
        };
        return crate::record::run(common, r);
    }
    if !cmd.is_empty() {
        return Err(Error::usage("'-- CMD' goes with -o").hint("e.g. tr-cat -o trace.dat -- CMD"));
    }
    trbox::sys::signals::install().map_err(|e| Error::runtime(format!("cannot install signal handlers: {e}")))?;
    let opts = |follow| RawOpts {
        only: None,
        filter: Filter { pid: a.pid, comm: a.comm.clone(), events: a.event.clone(), not_self: false },
        follow,
        json: a.json,
        limit: a.time.map(|s| s.0),
        since: None,
        threads: a.jobs.map(|n| n.max(1)),
        reading: Default::default(),
    };
    if let Some(f) = &a.file {
        // A recorded file needs no tracefs (and no root).
        let mut o = opts(false);
        o.only = parse_cpus(a.cpu.as_deref())?;
        let input = read::Input::trace_dat("tr-cat", std::path::Path::new(f), common.instance.as_deref(), &o)?;
        if a.stats {
            return stats(input, &o, a.all);
        }
        if !read::print(input, &o, &|| false)? && filtered(&a) {
            // (No record at all, or none on the CPUs of --cpu, has its own note.)
            crate::cli::note(
                &Error::runtime(format!("no event in {f} passes the filters"))
                    .hint(format!("tr-cat --stats {f} counts its events by CPU, event and task")),
            );
        }
        return Ok(());
    }
    let mut t = Tracefs::open(common.tracefs.as_deref())?;
    if let Some(i) = &common.instance {
        t.enter_instance(i)?;
    }
    let cpus = parse_cpus(a.cpu.as_deref())?;
    if a.follow && !a.raw {
        return Err(Error::usage("--follow works with --raw").hint("try 'tr-cat --raw -f'"));
    }
    if a.stats && !a.raw {
        return Err(Error::usage("--stats counts raw pages or a file")
            .hint("try 'tr-cat --raw --stats' or 'tr-cat --stats FILE'"));
    }
    if a.raw {
        let mut o = opts(a.follow);
        o.only = cpus;
        let input = read::Input::tree(&t, &o)?;
        if a.stats {
            stats(input, &o, a.all)
        } else {
            if !read::print(input, &o, &|| false)? {
                let what = if filtered(&a) || o.only.is_some() {
                    "no event in the buffer passes the filters"
                } else {
                    "the buffer holds no events"
                };
                crate::cli::note(
                    &Error::runtime(what).hint("record with tr-event, tr-on or tr-cat -o; tr-on shows what is enabled"),
                );
            }
            Ok(())
        }
    } else {
        let text = t.read("trace")?;
        let mut out = Out::stdout();
        let _ = out.write_all(text.as_bytes());
        Ok(out.finish()?)
    }
}

/// Whether -e, --pid or --comm leave records out.
fn filtered(a: &Args) -> bool {
    !a.event.is_empty() || a.pid.is_some() || a.comm.is_some()
}

/// What a Perfetto conversion reads: the filters, once through.
#[cfg(feature = "host")]
fn perfetto_opts(a: &Args) -> Result<RawOpts, Error> {
    Ok(RawOpts {
        only: parse_cpus(a.cpu.as_deref())?,
        filter: Filter { pid: a.pid, comm: a.comm.clone(), events: a.event.clone(), not_self: false },
        follow: false,
        json: false,
        limit: None,
        since: None,
        threads: None,
        reading: Default::default(),
    })
}

/// What only the host build does: read a stream or a console log (`-i`,
/// `--from-console`), convert (`FILE -o trace.dat`, `-o X.pftrace`),
/// listen (`--listen`). Some(()) when it was one of those.
#[cfg(feature = "host")]
fn host_side(common: &Common, a: &mut Args, cmd: &[String]) -> Result<Option<()>, Error> {
    if let Some(i) = a.from_console.take() {
        if a.file.is_some() || a.input.is_some() {
            return Err(Error::usage("--from-console LOG is the file to read: give no other FILE"));
        }
        a.file = Some(i);
    }
    if let Some(i) = a.input.take() {
        if a.file.is_some() {
            return Err(Error::usage("give the file to read once: as FILE or with -i"));
        }
        a.file = Some(i);
    }
    if let (Some(o), Some(f)) = (&a.output, &a.file) {
        if o.ends_with(".pftrace") {
            let ro = perfetto_opts(a)?;
            let input = read::Input::trace_dat("tr-cat", std::path::Path::new(f), common.instance.as_deref(), &ro)?;
            return crate::host::perfetto(input, &ro, o).map(Some);
        }
        if a.raw || a.follow || a.json || !cmd.is_empty() || !a.event.is_empty() {
            return Err(Error::usage(
                "FILE -o OUT converts a stream; it does not combine with --raw, -f, --json, -e or -- CMD",
            ));
        }
        return crate::host::convert(f, o).map(Some);
    }
    if let Some(o) = a.output.as_ref().filter(|o| o.ends_with(".pftrace") && a.raw) {
        // A tree's raw pages (a copy with -T, or the live buffer, consumed).
        let mut t = Tracefs::open(common.tracefs.as_deref())?;
        if let Some(i) = &common.instance {
            t.enter_instance(i)?;
        }
        let ro = perfetto_opts(a)?;
        let input = read::Input::tree(&t, &ro)?;
        return crate::host::perfetto(input, &ro, o).map(Some);
    }
    if let Some(addr) = a.listen {
        return crate::listen::listen(addr, a.output.as_deref().unwrap_or("."), a.max_kb).map(Some);
    }
    Ok(None)
}

/// `--stats`: count everything kept, print the table at the end.
fn stats(input: read::Input<'_>, o: &RawOpts, all_tasks: bool) -> Result<(), Error> {
    let mut st = trbox::sys::read::Summary::default();
    let meta = read::collect(input, o, &|| false, &mut |m, it| st.add(m, it))?;
    let mut out = Out::stdout();
    let _ = out.write_all(st.render(&meta, all_tasks).as_bytes());
    Ok(out.finish()?)
}

fn parse_cpus(s: Option<&str>) -> Result<Option<Vec<u32>>, Error> {
    let Some(s) = s else { return Ok(None) };
    s.split(',')
        .map(|c| c.trim().parse::<u32>().map_err(|_| Error::usage(format!("--cpu: '{c}' is not a CPU number"))))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}
