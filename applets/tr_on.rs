//! tr-on: show the tracing state (no arguments), switch it (a tracer,
//! options: the settings stay), or trace one run with the settings (`-- CMD`
//! or `-t S`: the trace is streamed, then everything is restored).

use crate::applets::cli::{self, Common, Error};
use crate::applets::command::{self, Follow};
use crate::applets::session::Live;
use argh::{ArgsInfo, FromArgs};
use std::fmt::Write;
use trbox::ctl;
use trbox::ctl::DumpOnOops;
use trbox::sys::state::State;
use trbox::sys::status::{Item, Status, Unavailable};
use trbox::sys::{reset, Found, Tracefs};

cli::with_boot_options! {
    #[derive(FromArgs, ArgsInfo)]
    #[argh(help_triggers("-h", "--help"))]
    /// Show the ftrace state (no arguments), switch it (a TRACER and/or options
    /// stay set), or trace one run with them (-- CMD or -t S: printed, then all
    /// restored unless -k; the exit status is CMD's).
    #[cfg_attr(
        feature = "host",
        argh(
            example = "{command_name}   # status report",
            example = "{command_name} function -l 'vfs_*' -c -P 42",
            example = "{command_name} function_graph -- ls /   # trace ls only, then restore",
            example = "{command_name} -O sym-offset -C global -t 5",
            example = "{command_name} --reset   # back to a clean default"
        )
    )]
    #[argh(note = "--reset also turns tracing on and clears kprobes/uprobes; what the kernel \
    refuses (EPERM) is reported as skipped. -P, -- CMD: events are filtered by pid too \
    (set_event_pid); -- CMD always follows the command's forks.")]
    pub(crate) struct Args {
        /// the tracer for current_tracer (function, function_graph, nop...)
        #[argh(positional, arg_name = "TRACER")]
        tracer: Option<String>,
        /// turn tracing off (the tracer and filters are set up but idle)
        #[argh(switch)]
        off: bool,
        /// first back to a clean default: nop, no events, filters, triggers or
        /// probes, default options and clock, tracing on (buffer sizes and
        /// instances stay)
        #[argh(switch)]
        reset: bool,
        /// buffer size per CPU in KiB
        #[argh(option, short = 'b', arg_name = "KB")]
        buffer: Option<u64>,
        /// sub-buffer size in KiB (buffer_subbuf_size_kb, kernels 6.8+; the
        /// kernel rounds it up to a power-of-two number of pages)
        #[argh(option, short = 'S', arg_name = "KB")]
        subbuf: Option<u64>,
        /// trace clock (one of trace_clock: local, global, mono...)
        #[argh(option, short = 'C', arg_name = "CLOCK")]
        clock: Option<String>,
        /// set a trace option (OPT) or clear it (noOPT); repeatable
        #[argh(option, short = 'O', arg_name = "OPT")]
        option: Vec<String>,
        /// trace only functions matching GLOB (set_ftrace_filter); repeatable
        #[argh(option, short = 'l', arg_name = "GLOB")]
        func: Vec<String>,
        /// never trace functions matching GLOB (set_ftrace_notrace); repeatable
        #[argh(option, short = 'n', arg_name = "GLOB")]
        notrace: Vec<String>,
        /// trace only PID (set_ftrace_pid and set_event_pid); repeatable
        #[argh(option, short = 'P', arg_name = "PID")]
        pid: Vec<u32>,
        /// follow forks: children of traced pids are traced too (function-fork,
        /// event-fork; always on for -- CMD)
        #[argh(switch, short = 'c')]
        children: bool,
        /// with -- CMD or -t: leave the settings in place afterwards
        #[argh(switch, short = 'k')]
        keep: bool,
        /// run for S seconds with the settings, printing the trace
        #[argh(option, short = 't', arg_name = "S")]
        time: Option<cli::Seconds>,
        /// with -- CMD or -t: one JSON object per event
        #[cfg(feature = "decode")]
        #[argh(switch)]
        json: bool,
        /// arm ftrace_dump_on_oops: every CPU's buffer or the oopsing one's
        /// (-B: that instance's, 6.9+)
        #[argh(option, arg_name = "all|cpu")]
        dump_on_oops: Option<String>,
    }
}

impl Args {
    /// `--json` (feature decode).
    fn json(&self) -> bool {
        #[cfg(feature = "decode")]
        return self.json;
        #[cfg(not(feature = "decode"))]
        false
    }

    fn changes_something(&self) -> bool {
        self.tracer.is_some()
            || self.off
            || self.reset
            || self.buffer.is_some()
            || self.subbuf.is_some()
            || self.clock.is_some()
            || !self.option.is_empty()
            || !self.func.is_empty()
            || !self.notrace.is_empty()
            || !self.pid.is_empty()
            || self.children
            || self.dump_on_oops.is_some()
    }

    fn dump_mode(&self) -> Result<Option<DumpOnOops>, Error> {
        match self.dump_on_oops.as_deref() {
            None => Ok(None),
            Some("all") => Ok(Some(DumpOnOops::AllCpus)),
            Some("cpu") => Ok(Some(DumpOnOops::OopsCpu)),
            Some(_) => Err(Error::usage("--dump-on-oops takes all or cpu")),
        }
    }
}

/// The sysctl behind ftrace_dump_on_oops (kernel/trace/trace.c; an int
/// 0/1/2 before 6.9, a string that may name instances since).
pub(crate) const DUMP_SYSCTL: &str = "/proc/sys/kernel/ftrace_dump_on_oops";

pub(crate) fn main(args: &[String]) -> Result<(), Error> {
    let (own, cmd) = command::split(args);
    let (common, a) = cli::parse::<Args>("tr-on", own)?;
    let common = &common;
    let run = !cmd.is_empty() || a.time.is_some();
    let dump = a.dump_mode()?;
    // The board build has no --boot (argh: unrecognized argument).
    #[cfg(feature = "host")]
    if cli::boot_wanted(a.boot, common, a.persist)? {
        if run || a.reset || a.keep || a.json() {
            return Err(Error::usage("--boot prints settings: not with -- CMD, -t, --reset, -k or --json"));
        }
        return boot(common, &a, dump);
    }
    if !run && !a.changes_something() {
        if a.keep || common.wait || a.json() {
            return Err(Error::usage("nothing to switch or run").hint("try 'tr-on --help'"));
        }
        return show(common);
    }
    if run && (a.reset || a.off) {
        return Err(Error::usage("--reset and --off switch the state for good: not with -- CMD or -t")
            .hint("run 'tr-on --reset' first, then 'tr-on ... -- CMD'"));
    }
    command::one_target(&a.pid, cmd)?;
    if a.buffer == Some(0) {
        return Err(Error::usage("-b needs a size in KiB above 0"));
    }
    if a.time.is_some_and(|t| t.0.is_zero()) {
        return Err(Error::usage("-t needs a number of seconds above 0"));
    }
    let mut live = Live::open(common, false)?;
    if a.reset {
        reset_all(&live.t)?;
    }
    if !run {
        // Everything is restored when a step fails; a switch keeps its
        // settings only once all of them are in place.
        let mut st = State::new(&live.t);
        apply(&mut st, &a, dump)?;
        st.set(live.t.tracing_on_file(), if a.off { "0" } else { "1" })?;
        st.set_keep(true);
        drop(st);
        live.t.keep_instance = true;
        return Ok(());
    }
    let t = &live.t;
    let mut st = live.state(false, None)?;
    // The decoder's symbols before a function tracer hooks every kernel
    // function (the kernel's own text, without decode, needs none).
    if cfg!(feature = "decode") && matches!(a.tracer.as_deref(), Some("function" | "function_graph")) {
        trbox::sys::read_live_ahead();
    }
    apply(&mut st, &a, dump)?;
    let status = {
        let tracer = t.read_opt("current_tracer")?.unwrap_or_default();
        // The function pid filter matters to function-based tracers only,
        // and some kernels refuse it (EPERM) while events still work.
        let functions = !matches!(tracer.trim(), "" | "nop") && t.read("set_ftrace_pid").is_ok();
        let follow = Follow { events: t.exists("set_event_pid"), functions };
        // -P was applied with the other settings; a run without it or a
        // command keeps trbox's own work out.
        let child = command::whom(&mut st, cmd, &[], if a.pid.is_empty() { follow } else { Follow::default() })?;
        st.set_keep(a.keep);
        let tracer = tracer.trim().to_string();
        // nop with no event on records nothing by design: say what would.
        let idle = tracer == "nop" && t.read_opt("events/enable")?.is_some_and(|e| e.trim() == "0");
        let empty = |w: &str| {
            let e = Error::runtime(format!("nothing was recorded {w} (tracer {tracer})"));
            if idle {
                e.hint("nop records events only: name a tracer or enable events (tr-event)")
            } else {
                e.hint("check the filters (-l, -P, events) and that the traced code ran: tr-on shows the settings")
            }
        };
        let r = command::stream_text(
            t,
            &mut st,
            &child,
            #[cfg(feature = "decode")]
            trbox::sys::read::RawOpts { json: a.json, kernel: common.kernel.clone(), ..Default::default() },
            a.time.map(|s| s.0),
            &empty,
        );
        r?
    };
    drop(st);
    live.t.keep_instance = a.keep;
    command::exit_with(status)
}

/// `--reset`: what the kernel refuses (EPERM) is reported as skipped; any
/// other failure ends the run after everything else was reset.
fn reset_all(t: &Tracefs) -> Result<(), Error> {
    let mut skipped = Vec::new();
    let mut failed = None;
    for e in reset::reset(t) {
        if e.errno() == Some(libc::EPERM) {
            skipped.push(rel_path(t, &e));
        } else {
            log::warn!("{e}");
            failed.get_or_insert(e);
        }
    }
    if !skipped.is_empty() {
        eprintln!("tr-on: --reset skipped what this kernel refuses (EPERM): {}", skipped.join(", "));
    }
    match failed {
        Some(e) => Err(Error::from(e).hint("the rest was reset; 'tr-on' shows what is left")),
        None => Ok(()),
    }
}

fn rel_path(t: &Tracefs, e: &trbox::sys::Error) -> String {
    use trbox::sys::Error as E;
    match e {
        E::Io { path, .. } | E::Rejected { path, .. } | E::FtraceRefused { path } => {
            path.strip_prefix(t.dir()).unwrap_or(path).display().to_string()
        }
        e => e.to_string(),
    }
}

/// Every setting the options ask for, through `st` (restored unless kept).
fn apply(st: &mut State<'_>, a: &Args, dump: Option<DumpOnOops>) -> Result<(), Error> {
    let t = st.tracefs();
    if let Some(d) = dump {
        // An instance's name is refused (EINVAL) before 6.9.
        st.set(DUMP_SYSCTL, &d.value(t.instance.as_deref()))
            .map_err(|e| Error::from(e).hint("ftrace_dump_on_oops names instances (-B) from 6.9 on"))?;
    }
    if a.subbuf.is_some() && !t.exists("buffer_subbuf_size_kb") {
        return Err(Error::usage("-S: this kernel has no buffer_subbuf_size_kb (sub-buffer sizes came in 6.8)")
            .hint("its sub-buffers are one page; -b sets the buffer size"));
    }
    st.set_buffer_sizes(a.subbuf, a.buffer)?;
    if let Some(c) = &a.clock {
        let text = t.read("trace_clock")?;
        let choices = ctl::choices(&text);
        if !choices.contains(&c.as_str()) {
            return Err(unknown("clock", c, &choices));
        }
        st.set("trace_clock", c)?;
    }
    // The names options/ lists, not any path below it: `-O ../tracing_on`
    // is no option.
    let options = if a.option.is_empty() { Vec::new() } else { t.list_dir("options")? };
    let is_option = |n: &str| options.iter().any(|o| o == n);
    for o in &a.option {
        let (name, on) = match o.strip_prefix("no") {
            _ if is_option(o) => (o.as_str(), true),
            Some(n) if is_option(n) => (n, false),
            _ => {
                // Offer noOPT forms to a noOPT typo; list the plain names.
                let no = if o.starts_with("no") { "no" } else { "" };
                let names: Vec<String> = options.iter().map(|n| format!("{no}{n}")).collect();
                let near = trbox::names::closest(o, names.iter().map(String::as_str), 3);
                let e = Error::runtime(format!("unknown trace option '{o}'"));
                return Err(if near.is_empty() {
                    let plain: Vec<&str> = options.iter().map(String::as_str).collect();
                    let text = format!("options are: {} (noOPT turns one off)", plain.join(" "));
                    e.hint(cli::wrap(&text, 79 - 13).replace('\n', "\n  "))
                } else {
                    e.hint(format!("did you mean: {}", near.join(", ")))
                });
            }
        };
        st.set_option(name, on)?;
    }
    if !a.func.is_empty() {
        st.set_functions("set_ftrace_filter", &a.func)?;
    }
    if !a.notrace.is_empty() {
        st.set_functions("set_ftrace_notrace", &a.notrace)?;
    }
    if !a.pid.is_empty() {
        command::running(&a.pid)?;
        let pids: Vec<String> = a.pid.iter().map(u32::to_string).collect();
        if t.exists("set_event_pid") {
            st.set_list("set_event_pid", &pids)?;
        }
        match st.set_list("set_ftrace_pid", &pids) {
            Ok(_) => {}
            Err(e) if matches!(e.errno(), Some(libc::EPERM | libc::ENOENT)) => {
                eprintln!("tr-on: -P: set_ftrace_pid: {}; only events are filtered by pid", why_not(&e));
            }
            Err(e) => return Err(e.into()),
        }
    }
    if a.children {
        for o in ["event-fork", "function-fork"] {
            if t.exists(&format!("options/{o}")) {
                st.set_option(o, true)?;
            }
        }
    }
    // The tracer last: selecting it starts a fresh buffer with the filters
    // already in place.
    if let Some(tr) = &a.tracer {
        st.set_tracer(tr).map_err(|e| {
            let near = match &e {
                trbox::sys::Error::NoTracer { available, .. } => {
                    trbox::names::closest(tr, available.iter().map(String::as_str), 2).join(", ")
                }
                _ => String::new(),
            };
            let err = Error::from(e);
            if near.is_empty() {
                err
            } else {
                err.hint(format!("did you mean: {near}"))
            }
        })?;
    }
    Ok(())
}

fn why_not(e: &trbox::sys::Error) -> &'static str {
    match e.errno() {
        Some(libc::EPERM) => "not permitted by this kernel",
        _ => "not available on this kernel",
    }
}

/// An unknown name: the closest ones, or all when there are few.
fn unknown(what: &str, name: &str, names: &[&str]) -> Error {
    let near = trbox::names::closest(name, names.iter().copied(), 3);
    let e = Error::runtime(format!("unknown {what} '{name}'"));
    if !near.is_empty() {
        e.hint(format!("did you mean: {}", near.join(", ")))
    } else {
        e.hint(cli::wrap(&format!("this kernel has: {}", names.join(" ")), 79 - 13).replace('\n', "\n  "))
    }
}

fn show(common: &Common) -> Result<(), Error> {
    let mut t = Tracefs::open(common.tracefs.as_deref())?;
    if let Some(i) = &common.instance {
        t.enter_instance(i)?;
    }
    let st = Status::read(&t);
    crate::applets::cli::print(&report(&t, &st))?;
    Ok(())
}

fn why(u: &Unavailable) -> String {
    match u {
        Unavailable::Absent => "not available on this kernel".into(),
        Unavailable::NotPermitted(e) => format!("not permitted ({e})"),
        Unavailable::Failed(s) => format!("unreadable: {s}"),
    }
}

/// `label  value`, or the reason the value is missing.
fn line(out: &mut String, label: &str, v: Item<String>) {
    let v = v.unwrap_or_else(|u| why(&u));
    // Long values (tracer lists, filters) wrap under the value column.
    let v = cli::wrap(&v, 80 - 12).replace('\n', "\n            ");
    let _ = writeln!(out, "{label:<12}{v}");
}

fn list(v: &Item<Vec<String>>, empty: &str) -> Item<String> {
    match v {
        Ok(l) if l.is_empty() => Ok(empty.into()),
        Ok(l) => Ok(l.join(", ")),
        Err(u) => Err(u.clone()),
    }
}

/// The report text (80 columns; long lists wrap naturally on the console).
fn report(t: &Tracefs, st: &Status) -> String {
    let mut o = String::new();
    let how = match &t.found {
        Found::Given => "given",
        Found::Tracefs => "tracefs",
        Found::Debugfs => "debugfs",
        Found::MountedByUs(_) => "mounted by trbox for this run",
    };
    let _ = writeln!(o, "{:<12}{} ({how})", "tracefs", t.dir().display());
    let tracer = st.tracer.clone().map(|cur| match &st.available_tracers {
        Ok(av) => format!("{cur}  (available: {})", av.join(" ")),
        Err(_) => cur,
    });
    line(&mut o, "tracer", tracer);
    let on = st.tracing_on.clone().map(|(v, old)| {
        let s = if v == "1" {
            "on"
        } else if v == "0" {
            "off"
        } else {
            v.as_str()
        };
        if old {
            format!("{s} (tracing_enabled)")
        } else {
            s.to_string()
        }
    });
    line(&mut o, "tracing", on);
    line(&mut o, "clock", st.clock.clone());
    line(&mut o, "buffer", buffer(t, st));
    if let Ok(th) = &st.tracing_thresh {
        if th != "0" {
            line(&mut o, "thresh", Ok(format!("{th} us")));
        }
    }
    line(&mut o, "options", options(&st.options, t.instance.is_some()));
    events(&mut o, &st.events);
    line(&mut o, "functions", list(&st.ftrace_filter, "all"));
    line(&mut o, "notrace", list(&st.ftrace_notrace, "none"));
    if st.graph_function.is_ok() {
        line(&mut o, "graph funcs", list(&st.graph_function, "all"));
    }
    line(&mut o, "ftrace pid", list(&st.ftrace_pid, pids_all(&st.function_fork)));
    line(&mut o, "event pid", list(&st.event_pid, pids_all(&st.event_fork)));
    match &st.dynamic_events {
        Ok(d) if !d.is_empty() => {
            let _ = writeln!(o, "dynamic");
            for e in d {
                let _ = writeln!(o, "  {e}");
            }
        }
        d => line(&mut o, "dynamic", list(d, "none")),
    }
    if t.instance.is_none() {
        line(&mut o, "instances", list(&st.instances, "none"));
    }
    // Persistent instances (with last_boot_info, 6.12+; -B: that one):
    // whose events, then last_boot_info's lines under the value column
    // (feature boot).
    let cpu_list = t.cpus().unwrap_or_default();
    let persistent = if cfg!(feature = "boot") { t.instances().unwrap_or_default() } else { Vec::new() };
    for n in persistent {
        let d = t.top().join("instances").join(&n);
        let Ok(info) = std::fs::read_to_string(d.join("last_boot_info")) else { continue };
        if t.instance.as_ref().is_some_and(|i| *i != n) {
            continue;
        }
        let mut e = 0;
        for c in &cpu_list {
            let s = std::fs::read_to_string(d.join(format!("per_cpu/cpu{c}/stats"))).unwrap_or_default();
            e += trbox::ctl::CpuStats::parse(&s).entries.unwrap_or(0);
        }
        let what = trbox::lastboot::whose(&info, e);
        line(&mut o, "persistent", Ok(format!("{n}: {what} ({e}); last_boot_info:\n{info}")));
    }
    // A sysctl of the running kernel: not shown for a copied tree.
    if !matches!(t.found, Found::Given) {
        if let Ok(v) = std::fs::read_to_string(DUMP_SYSCTL) {
            // 1: every CPU's buffer, 2: the oopsing CPU's (tr-on --help).
            line(&mut o, "oops dump", Ok(v.trim().to_string()));
        }
        // Tracing set up by the kernel command line (--boot prints one;
        // feature boot).
        if let Some(c) = cfg!(feature = "boot").then(|| std::fs::read_to_string("/proc/cmdline").ok()).flatten() {
            let words = trbox::boot::from_cmdline(&c);
            if !words.is_empty() {
                line(&mut o, "from boot", Ok(words.join(" ")));
            }
        }
        // And by a bootconfig's ftrace.* keys (boot-time tracing, 5.6+).
        if let Some(b) = cfg!(feature = "boot").then(|| std::fs::read_to_string("/proc/bootconfig").ok()).flatten() {
            let n = b.lines().filter(|l| l.starts_with("ftrace.")).count();
            if n > 0 {
                line(&mut o, "from boot", Ok(format!("{n} ftrace.* keys in /proc/bootconfig")));
            }
        }
    }
    cpus(&mut o, st);
    o
}

/// The trace options that differ from the kernel's defaults
/// (`trbox::kernel::option_default`), as -O writes them (OPT, noOPT); the
/// fork options first: they decide whom the pid filters keep.
fn options(opts: &Item<Vec<(String, bool)>>, instance: bool) -> Item<String> {
    let opts = opts.as_ref().map_err(Clone::clone)?;
    let mut set: Vec<String> = Vec::new();
    for (name, on) in opts {
        match trbox::kernel::option_default(name, instance) {
            Some(d) if d != *on => set.push(format!("{}{name}", if *on { "" } else { "no" })),
            Some(_) => {}
            None => log::info!("options/{name}: no default known to trbox (a kernel newer than its rules?)"),
        }
    }
    set.sort_by_key(|o| !o.ends_with("-fork"));
    Ok(if set.is_empty() { "the kernel's defaults".into() } else { set.join(" ") })
}

/// What an empty pid list means. With the fork option on, the kernel
/// takes each exited pid out of the list (sched_process_free) but keeps
/// the emptied list, which reads empty and lets no task through: the file
/// cannot tell that from no list at all (kernel/trace trace_events.c,
/// ftrace.c: only a write frees it). Without the option nothing empties
/// a list.
fn pids_all(fork: &Item<String>) -> &'static str {
    match fork.as_deref() {
        Ok("1") => "all, or none if its pids exited (fork on): --reset",
        _ => "all",
    }
}

fn buffer(t: &Tracefs, st: &Status) -> Item<String> {
    let per_cpu = st.buffer_kb.clone()?;
    // "7 (expanded: 1408)": the buffer is allocated small until first use,
    // then in whole sub-buffers (ctl::buffer_kb_in_use).
    let data = t.read("events/header_page").ok().and_then(|h| trbox::format::HeaderPage::parse(&h).ok());
    let mut s = match per_cpu.split_once(" (expanded: ") {
        Some((now, exp)) => {
            let exp = exp.trim_end_matches(')');
            let in_use = data.and_then(|d| ctl::buffer_kb_in_use(&per_cpu, d.data_size.into()));
            format!("{now} KiB per CPU ({} once in use)", in_use.map_or(exp.to_string(), |kb| kb.to_string()))
        }
        None if per_cpu == "X" => "per-CPU sizes differ (see below)".to_string(),
        None => format!("{per_cpu} KiB per CPU"),
    };
    if let Ok(total) = &st.buffer_total_kb {
        let _ = write!(s, ", {} KiB total", total.split_whitespace().next().unwrap_or(total));
    }
    if let Ok(sub) = &st.subbuf_kb {
        let _ = write!(s, ", {sub} KiB sub-buffers");
    }
    Ok(s)
}

fn events(o: &mut String, ev: &Item<Vec<EventState>>) {
    match ev {
        Err(u) => line(o, "events", Err(u.clone())),
        Ok(v) if v.is_empty() => line(o, "events", Ok("none".into())),
        Ok(v) => {
            let on = v.iter().filter(|e| e.enable.starts_with('1')).count();
            let _ = writeln!(o, "events      {on} enabled");
            for e in v {
                let state = match e.enable.as_str() {
                    "1" => "",
                    "0" => " (disabled)",
                    s if s.ends_with('*') => " (soft mode)",
                    _ => " (partly)",
                };
                let _ = writeln!(o, "  {}{state}", e.name);
                if let Some(f) = &e.filter {
                    let _ = writeln!(o, "    filter: {f}");
                }
                for tr in &e.triggers {
                    let _ = writeln!(o, "    trigger: {tr}");
                }
            }
        }
    }
}

use trbox::sys::status::EventState;

fn num(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), |n| n.to_string())
}

fn cpus(o: &mut String, st: &Status) {
    let cpus = match &st.cpus {
        Err(u) => return line(o, "per-CPU", Err(u.clone())),
        Ok(c) if c.is_empty() => return line(o, "per-CPU", Ok("no per_cpu directories".into())),
        Ok(c) => c,
    };
    let _ = writeln!(
        o,
        "\n{:>4} {:>10} {:>10} {:>10} {:>10}  buffer",
        "CPU", "entries", "overrun", "commit-ovr", "dropped"
    );
    let (mut ent, mut ovr, mut cov, mut drp) = (0u64, 0u64, 0u64, 0u64);
    for c in cpus {
        match &c.stats {
            Ok(s) => {
                ent += s.entries.unwrap_or(0);
                ovr += s.overrun.unwrap_or(0);
                cov += s.commit_overrun.unwrap_or(0);
                drp += s.dropped.unwrap_or(0);
                let kb = c
                    .buffer_kb
                    .clone()
                    .map_or_else(|u| why(&u), |k| format!("{} KiB", k.split(' ').next().unwrap_or(&k)));
                let _ = writeln!(
                    o,
                    "{:>4} {:>10} {:>10} {:>10} {:>10}  {kb}",
                    c.cpu,
                    num(s.entries),
                    num(s.overrun),
                    num(s.commit_overrun),
                    num(s.dropped)
                );
            }
            Err(u) => {
                let _ = writeln!(o, "{:>4} {}", c.cpu, why(u));
            }
        }
    }
    if cpus.len() > 1 {
        let _ = writeln!(o, "{:>4} {ent:>10} {ovr:>10} {cov:>10} {drp:>10}", "all");
    }
    if ovr + cov + drp > 0 {
        let _ = writeln!(o, "LOST EVENTS: {} (overrun {ovr}, commit overrun {cov}, dropped {drp})", ovr + cov + drp);
    }
}

/// `--boot`: the command line and bootconfig for the options given.
#[cfg(feature = "host")]
fn boot(common: &Common, a: &Args, dump: Option<DumpOnOops>) -> Result<(), Error> {
    let s = trbox::boot::Settings {
        instance: common.instance.as_deref(),
        persist_mb: a.persist,
        tracer: a.tracer.as_deref(),
        buffer_kb: a.buffer,
        clock: a.clock.as_deref(),
        options: &a.option,
        functions: &a.func,
        notrace: &a.notrace,
        off: a.off,
        dump_on_oops: dump,
        ..Default::default()
    };
    let mut none = Vec::new();
    if !a.pid.is_empty() {
        none.push("-P: no boot-time form (pids exist only after boot)");
    }
    if a.subbuf.is_some() {
        none.push("-S: no boot-time form (sub-buffer size)");
    }
    if a.children {
        none.push("-c: follows the pids of -P: no boot-time form");
    }
    cli::print_boot(&trbox::boot::boot(&s), &none)
}
