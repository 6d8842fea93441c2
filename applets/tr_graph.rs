//! tr-graph: run the function_graph tracer and print the call graph rendered
//! by trbox from the raw funcgraph records (or folded stacks / a top table);
//! also on a recorded trace.dat (-i) or a copy of a tracefs tree (-T).

use crate::applets::cli::{self, Error};
use crate::applets::command::{self, Follow};
use crate::applets::session::Live;
use argh::{ArgsInfo, FromArgs};
use std::io::Write as _;
use trbox::graph::stats::{GraphStats, TopBy};
use trbox::graph::write_header;
use trbox::printfmt::SymbolLookup;
use trbox::sys::read::Out;
use trbox::sys::read::{self, Entry, RawOpts, Reader};
use trbox::sys::stop::Stop;
use trbox::sys::{signals, Tracefs};

cli::with_boot_options! {
    #[derive(FromArgs, ArgsInfo)]
    #[argh(help_triggers("-h", "--help"))]
    /// Trace kernel function calls (function_graph) and print the call graph,
    /// folded stacks (--folded) or the functions with the most time (--top N);
    /// or read recorded data (-i FILE, -T COPY, -r), tracing nothing.
    #[cfg_attr(
        feature = "host",
        argh(
            example = "{command_name} vfs_read -d 3 -t 1",
            example = "{command_name} --top 10 -- ls /",
            example = "{command_name} -i trace.dat --folded > out.folded"
        )
    )]
    pub(crate) struct Args {
        /// graph only below these functions (set_graph_function; globs allowed)
        #[argh(positional, arg_name = "FUNC")]
        funcs: Vec<String>,
        /// nesting depth limit (max_graph_depth)
        #[argh(option, short = 'd', arg_name = "N")]
        depth: Option<u32>,
        /// only this process (set_ftrace_pid)
        #[argh(option, short = 'P', arg_name = "PID")]
        pid: Option<u32>,
        /// only calls that took at least N microseconds (tracing_thresh)
        #[argh(option, arg_name = "N")]
        min_us: Option<u64>,
        /// stop after S seconds
        #[argh(option, short = 't', arg_name = "S")]
        time: Option<cli::Seconds>,
        /// print folded stacks weighted by time (ns) at the end
        #[argh(switch)]
        folded: bool,
        /// print the N functions with the most total time at the end
        #[argh(option, arg_name = "N")]
        top: Option<usize>,
        /// host build: write a flame graph of the calls to FILE (SVG: opens in a
        /// browser)
        #[cfg(feature = "host")]
        #[argh(option, arg_name = "FILE")]
        svg: Option<String>,
        /// read a trace.dat instead of tracing
        #[argh(option, short = 'i', arg_name = "FILE")]
        input: Option<String>,
        /// print what the buffer holds now (e.g. after -k), setting nothing
        /// up; the read takes the records out (no raw read leaves them)
        #[argh(switch, short = 'r')]
        read: bool,
        /// leave the tracer set up when done
        #[argh(switch, short = 'k')]
        keep: bool,
    }
}

impl Args {
    /// `--svg FILE`, in the host build.
    fn svg(&self) -> Option<&str> {
        #[cfg(feature = "host")]
        return self.svg.as_deref();
        #[cfg(not(feature = "host"))]
        None
    }
}

pub(crate) fn main(args: &[String]) -> Result<(), Error> {
    let (own, cmd) = command::split(args);
    let (common, a) = cli::parse::<Args>("tr-graph", own)?;
    let common = &common;
    command::one_target(a.pid.as_slice(), cmd)?;
    if a.folded && a.top.is_some() {
        return Err(
            Error::usage("--folded and --top are alternatives").hint("run tr-graph twice, or on a recorded file (-i)")
        );
    }
    #[cfg(feature = "host")]
    if cli::boot_wanted(a.boot, common, a.persist)? {
        return boot(common, &a, cmd);
    }
    signals::install().map_err(trbox::sys::Error::Signals)?;
    let opts = |follow: bool, since| RawOpts {
        follow,
        limit: a.time.map(|s| s.0),
        since,
        kernel: common.kernel.clone(),
        ..Default::default()
    };
    if let Some(f) = &a.input {
        // A recorded file needs no tracefs (and no root).
        let o = opts(false, None);
        let reader = Reader::dat("tr-graph", std::path::Path::new(f), common.instance.as_deref(), &o)?;
        return output(reader, &a, &o, &|| false).map(drop);
    }
    let mut t = Tracefs::open(common.tracefs.as_deref())?;
    if !t.is_live() || a.read {
        if !cmd.is_empty() || !a.funcs.is_empty() {
            return Err(Error::usage("a copy of a tracefs tree (or -r) is only read: no FUNC and no -- CMD"));
        }
        if let Some(i) = &common.instance {
            t.enter_instance(i)?;
        }
        // Setting a tracer resets the buffer (trace.c `tracer_init()`):
        // another tracer's buffer holds no function_graph records.
        let tracer = t.read_opt("current_tracer")?.map(|s| s.trim().to_string());
        if let Some(tr) = tracer.filter(|tr| tr != "function_graph") {
            return Err(Error::runtime(format!("the buffer's tracer is {tr}: it holds no function_graph calls"))
                .hint("tr-graph -t S traces them (with -k, tr-graph -r reads them after)"));
        }
        // (A copy's stats need not be those of the pages copied.)
        let held = t.held();
        let again = "tr-graph -t S traces calls and prints them (with -k, tr-graph -r reads them after)";
        if let Some(e) = command::empty_buffer("no function_graph calls to read", held, again).filter(|_| t.is_live()) {
            return Err(e);
        }
        let o = opts(false, None);
        let shown = output(Reader::of_tree(&t, &o)?.graph_layout(), &a, &o, &|| false)?;
        if !shown {
            cli::note(&none_recorded(&a, "in the buffer"));
        }
        command::note_consumed(&t, held);
        return Ok(());
    }
    t.require_tracer("function_graph")?;
    let live = Live::enter(t, common, a.keep)?;
    let t = &live.t;
    let status = {
        let mut st = live.state(a.keep, None)?;
        if !a.funcs.is_empty() {
            st.set_functions("set_graph_function", &a.funcs)?;
        }
        if let Some(d) = a.depth {
            need(t, "max_graph_depth")?;
            st.set("max_graph_depth", &d.to_string())?;
        }
        if let Some(us) = a.min_us {
            need(t, "tracing_thresh")?;
            st.set("tracing_thresh", &us.to_string())?;
        }
        // The tracer before the pid filters (tracing is idle: nothing is
        // recorded yet). Registered while a filter is set, function_graph
        // keeps filtering by a stale pid after the filter is cleared on
        // armv7:7.2 (the kernel of Debian sid, 7.2.13 armmp: after a -k run
        // nothing more was recorded until current_tracer changed; on arm64
        // the same kernel is fine): fgraph.c's register_ftrace_graph() puts
        // fgraph_pid_func in place when pids are enabled, and clearing them
        // did not take it away there.
        // The symbols first: read with function_graph on, every kernel
        // call of that read goes through its hooks.
        trbox::sys::read_live_ahead();
        st.set_tracer("function_graph")?;
        let child = command::whom(&mut st, cmd, a.pid.as_slice(), Follow { events: false, functions: true })?;
        let show = |i: Reader, o: &RawOpts, stop: &Stop<'_>| output(i.graph_layout(), &a, o, &|| stop.asked());
        let r = command::stream(
            t,
            &mut st,
            &child,
            RawOpts { kernel: common.kernel.clone(), ..Default::default() },
            a.time.map(|s| s.0),
            a.folded || a.top.is_some() || a.svg().is_some(),
            &show,
            Some(&|w| none_recorded(&a, w)),
        );
        r?
    };
    command::exit_with(status)
}

fn need(t: &Tracefs, file: &str) -> Result<(), Error> {
    if t.exists(file) {
        Ok(())
    } else {
        Err(Error::runtime(format!("this kernel has no {file} file (too old for this option)")))
    }
}

/// No function_graph call in the window (`when`: how long it was open, or
/// "" for recorded data): which functions, and what to check.
fn none_recorded(a: &Args, when: &str) -> Error {
    let what = match a.funcs.as_slice() {
        [] => "no function_graph calls were recorded".to_string(),
        f => format!("no calls of {} were recorded", f.join(", ")),
    };
    let whom = match a.pid {
        Some(p) => format!(" (pid {p})"),
        None => String::new(),
    };
    let e = Error::runtime(format!("{what}{}{when}{whom}", if when.is_empty() { "" } else { " " }));
    e.hint(match a.funcs.first() {
        Some(f) => format!("was it called then? 'tr-stack -l {f} -t 5' shows who calls it (a system call may be served by another function, e.g. sendfile(2) does not go through vfs_read)"),
        None => "check the function names and that the code ran".to_string(),
    })
}

/// The graph as it streams, or the aggregation at the end; whether it
/// showed anything.
fn output(reader: Reader, a: &Args, o: &RawOpts, done: &dyn Fn() -> bool) -> Result<bool, Error> {
    if !a.folded && a.top.is_none() && a.svg().is_none() {
        if let Some(g) = reader.graph_opts() {
            let mut h = String::from("# tracer: function_graph\n#\n");
            let _ = write_header(&mut h, &g);
            let mut out = Out::stdout();
            let _ = out.write_all(h.as_bytes());
            out.finish()?;
        }
        return command::print(reader, o, &command::stop(done)?);
    }
    let mut stats: Option<GraphStats> = None;
    let session = read::collect(reader, o, &command::stop(done)?, &mut |m, it| {
        if let Entry::Event(ev) = it {
            stats
                .get_or_insert_with(|| GraphStats::new(&m.trace.events, m.trace.abi(), false))
                .record(ev.payload(), &m.trace.cmdlines);
        }
    })?;
    let Some(s) = stats.filter(|s| s.calls() > 0) else {
        return Err(none_recorded(a, ""));
    };
    let syms = Some(&session.trace.symbols as &dyn SymbolLookup);
    #[cfg(feature = "host")]
    if let Some(path) = a.svg() {
        write_svg(path, &s.folded(syms), a)?;
    }
    let mut text = String::new();
    let _ = match a.top {
        Some(n) => s.write_top(&mut text, syms, n, TopBy::Total),
        None if a.folded => s.write_folded(&mut text, syms),
        None => Ok(()),
    };
    let mut out = Out::stdout();
    let _ = out.write_all(text.as_bytes());
    out.finish()?;
    Ok(true)
}

/// `--boot`: function_graph with its filter and depth from boot.
#[cfg(feature = "host")]
fn boot(common: &cli::Common, a: &Args, cmd: &[String]) -> Result<(), Error> {
    if !cmd.is_empty() || a.time.is_some() || a.input.is_some() || a.read || a.keep {
        return Err(Error::usage("--boot prints settings: not with -- CMD, -t, -i, -r or -k"));
    }
    let s = trbox::boot::Settings {
        instance: common.instance.as_deref(),
        persist_mb: a.persist,
        tracer: Some("function_graph"),
        graph_functions: &a.funcs,
        graph_depth: a.depth,
        ..Default::default()
    };
    let mut none = Vec::new();
    if a.pid.is_some() {
        none.push("-P: no boot-time form (pids exist only after boot)");
    }
    if a.min_us.is_some() {
        none.push("--min-us: no boot-time form (tracing_thresh)");
    }
    cli::print_boot(&trbox::boot::boot(&s), &none)
}

/// `--svg FILE`: the flame graph of the folded stacks, and a line on stderr
/// saying where it went. Never written through a symlink (a FILE in /tmp
/// could be anyone's link). Host build only (4,976 bytes of the aarch64
/// board build when measured): a board records (`tr-cat -o`) and the host
/// draws (`tr-graph -i FILE --svg OUT`).
#[cfg(feature = "host")]
fn write_svg(path: &str, folded: &[(String, u64)], a: &Args) -> Result<(), Error> {
    use std::os::unix::fs::OpenOptionsExt;
    let title = match (a.funcs.as_slice(), &a.input) {
        (_, Some(f)) => format!("tr-graph -i {f}"),
        ([], None) => "tr-graph".to_string(),
        (f, None) => format!("tr-graph {}", f.join(" ")),
    };
    let mut svg = String::new();
    let _ = trbox::graph::flame::write_svg(&mut svg, folded, &title);
    let fail = |e: std::io::Error| Error::runtime(format!("{path}: {e}"));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(fail)?;
    f.write_all(svg.as_bytes()).map_err(fail)?;
    eprintln!("tr-graph: flame graph of {} stacks written to {path}", folded.len());
    Ok(())
}
