//! tr-event: list events, show formats, or enable events (with filters and
//! triggers) and stream them decoded until Ctrl-C, -t or the command ends.
//! Everything it changes is put back on the way out.

use crate::applets::cli::{self, Error};
use crate::applets::command::{self, resolve, resolve_all, Follow};
use crate::applets::session::Live;
use argh::{ArgsInfo, FromArgs};
use std::io::Write as _;
use trbox::probe::Kind;
#[cfg(feature = "probe")]
use trbox::probe::{Def, GROUP};
#[cfg(feature = "probe")]
use trbox::sys::elf;
use trbox::sys::state::{probe_file, State};
use trbox::sys::{event_dir, Tracefs};

cli::with_boot_options! {
    #[derive(FromArgs, ArgsInfo)]
    #[argh(help_triggers("-h", "--help"))]
    #[cfg_attr(
        feature = "decode",
        doc = "Enable trace events and stream them decoded until Ctrl-C, -t or the command after -- ends; or list \
    events (--list) and show formats (--format)."
    )]
    #[cfg_attr(
        not(feature = "decode"),
        doc = "Enable trace events and stream them (the kernel's text) until Ctrl-C, -t or the command after -- \
    ends; or list events (--list) and show formats (--format)."
    )]
    #[cfg_attr(
        feature = "host",
        argh(
            example = "{command_name} sched:sched_switch,irq -t 2",
            example = "{command_name} 'syscalls:sys_enter_open*' -f 'common_pid != 1' -- ls",
            example = "{command_name} --list 'sched:*'"
        )
    )]
    #[argh(note = "Probes live for the run (trbox/FUNCTION, or p:GROUP/NAME), e.g. \
    --uprobe '/bin/bash:readline', --kprobe 'do_sys_openat2 path=+0($arg2):ustring'. \
    -f and -R go to the SYS:EVENT events, else to the probes.")]
    pub(crate) struct Args {
        /// events: SYS:EVENT, SYS:GLOB or SYS (comma-separated or repeated); with
        /// --list: a GLOB of the events to list
        #[argh(positional, arg_name = "EVENTS")]
        events: Vec<String>,
        /// list events (those matching EVENTS, e.g. 'sched:*')
        #[argh(switch, short = 'L')]
        list: bool,
        /// show the format of SYS:EVENT
        #[argh(option, arg_name = "SYS:EVENT")]
        format: Option<String>,
        /// filter for the SYS:EVENT events (the probes when there are none; the
        /// kernel's filter syntax)
        #[argh(option, short = 'f', arg_name = "FILTER")]
        filter: Option<String>,
        /// trigger to attach (e.g. stacktrace, 'traceoff if pid == 1') to the
        /// same events as -f; repeatable
        #[argh(option, short = 'R', arg_name = "TRIGGER")]
        trigger: Vec<String>,
        /// only events of these processes (set_event_pid); repeatable
        #[argh(option, short = 'P', arg_name = "PID")]
        pid: Vec<u32>,
        /// stop after S seconds
        #[argh(option, short = 't', arg_name = "S")]
        time: Option<cli::Seconds>,
        /// leave the events enabled when done
        #[argh(switch, short = 'k')]
        keep: bool,
        /// one JSON object per event
        #[cfg(feature = "decode")]
        #[argh(switch)]
        json: bool,
        /// kprobe '[p[:[GRP/]NAME]] SYMBOL[+OFF] [ARGS]' (repeatable)
        #[cfg(feature = "probe")]
        #[argh(option, arg_name = "PROBE")]
        kprobe: Vec<String>,
        /// kretprobe '[r[N][:[GRP/]NAME]] SYMBOL [ARGS]' (repeatable)
        #[cfg(feature = "probe")]
        #[argh(option, arg_name = "PROBE")]
        kretprobe: Vec<String>,
        /// uprobe '[p[:[GRP/]NAME]] PATH:SYMBOL[+OFF] [ARGS]' (PATH:0xOFF too;
        /// repeatable)
        #[cfg(feature = "probe")]
        #[argh(option, arg_name = "PROBE")]
        uprobe: Vec<String>,
        /// uprobe on return '[r[:[GRP/]NAME]] PATH:SYMBOL [ARGS]' (repeatable)
        #[cfg(feature = "probe")]
        #[argh(option, arg_name = "PROBE")]
        uretprobe: Vec<String>,
    }
}

pub(crate) fn main(args: &[String]) -> Result<(), Error> {
    let (own, cmd) = command::split(args);
    let (common, a) = cli::parse::<Args>("tr-event", own)?;
    let common = &common;
    command::one_target(&a.pid, cmd)?;
    #[cfg(feature = "host")]
    if cli::boot_wanted(a.boot, common, a.persist)? {
        return boot(common, &a, cmd);
    }
    let t = Tracefs::open(common.tracefs.as_deref())?;
    let all = t.list_events()?;
    if a.list {
        // The names enabling takes: a system (`sched`), SYS:GLOB, or an
        // event's name or glob; none matching is said with the closest.
        let listed = match a.events.first() {
            Some(spec) => resolve(&all, spec)?,
            None => all,
        };
        let mut out = trbox::sys::read::Out::stdout();
        for e in &listed {
            let _ = writeln!(out, "{e}");
        }
        return Ok(out.finish()?);
    }
    if let Some(f) = &a.format {
        let ev = resolve(&all, f)?;
        let [one] = ev.as_slice() else {
            return Err(Error::usage(format!("--format takes one event, '{f}' matches {}", ev.len())));
        };
        crate::applets::cli::print(&t.read(&format!("{}/format", event_dir(one)))?)?;
        return Ok(());
    }
    let top = t.top_level();
    let probes = probes(&a, &top)?;
    let mut events = resolve_all(&all, &a.events)?;
    if events.is_empty() && probes.is_empty() {
        return Err(Error::usage("no events given").hint(
            "e.g. tr-event sched:sched_switch, or a probe: --kprobe/--uprobe; list events with tr-event --list",
        ));
    }
    let live = Live::enter(t, common, a.keep)?;
    let t = &live.t;
    // Dynamic events are global (top level, also with -B); this state is
    // restored after the one that enables them, so they are disabled
    // before they are removed.
    let mut made = State::new(&top);
    made.set_keep(a.keep);
    // A filter names the fields of the events it was written for; a probe
    // has other fields (its own arguments), so it gets -f/-R only when it
    // is all there is.
    let named = events.len();
    for p in &probes {
        if made.add_probe(p.kind, &p.line, &format!("{}/{}", p.group, p.event))?.is_none() {
            return Err(no_probes(&top, p.kind));
        }
        events.push(format!("{}:{}", p.group, p.event));
    }
    let status = {
        let mut st = live.state(a.keep, Some(&mut made))?;
        // The pid filter first: events enabled before it would also record
        // this process setting up (its opens, for a kprobe).
        let child = command::whom(&mut st, cmd, &a.pid, Follow { events: true, functions: false })?;
        for (i, e) in events.iter().enumerate() {
            let dir = event_dir(e);
            if named == 0 || i < named {
                if let Some(f) = &a.filter {
                    st.set_filter(&dir, Some(f))?;
                }
                for tr in &a.trigger {
                    st.add_trigger(&dir, tr)?;
                }
            }
            st.set(&format!("{dir}/enable"), "1")?;
        }
        // A few names, or how many (a system is dozens): one line.
        let system = |e: &String| e.split(':').next().map(String::from);
        let names = match events.as_slice() {
            few if few.len() <= 3 => few.join(", "),
            [first, rest @ ..] if rest.iter().all(|e| system(e) == system(first)) => {
                format!("{} events of {}", events.len(), system(first).unwrap_or_default())
            }
            all => format!("{} events", all.len()),
        };
        let empty = |w: &str| {
            let e = Error::runtime(format!("no events were recorded {w} ({names})"));
            e.hint(if a.filter.is_some() {
                "the filter (-f) may reject them all; or they did not happen"
            } else if !cmd.is_empty() {
                "did the command make them? (its children are followed)"
            } else {
                "did they happen? try a longer -t"
            })
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
    command::exit_with(status)
}

/// A probe to make: its line for the kernel and its name.
struct Probe {
    kind: Kind,
    line: String,
    group: String,
    event: String,
}

/// Every probe option parsed, checked against the kernel's probe support
/// and (uprobes) resolved to a file offset, before anything is changed.
#[cfg(feature = "probe")]
fn probes(a: &Args, top: &Tracefs) -> Result<Vec<Probe>, Error> {
    let mut out: Vec<Probe> = Vec::new();
    let opts = [
        (Kind::Kprobe, false, &a.kprobe, "--kprobe"),
        (Kind::Kprobe, true, &a.kretprobe, "--kretprobe"),
        (Kind::Uprobe, false, &a.uprobe, "--uprobe"),
        (Kind::Uprobe, true, &a.uretprobe, "--uretprobe"),
    ];
    for (kind, ret, defs, opt) in opts {
        for text in defs {
            let d = Def::parse(kind, ret, text).map_err(|e| {
                let form = if kind == Kind::Kprobe { "SYMBOL[+OFF] [ARGS]" } else { "PATH:SYMBOL[+OFF] [ARGS]" };
                Error::usage(format!("{opt} '{text}': {e}")).hint(format!("give {opt} '[p|r][:GROUP/NAME] {form}'"))
            })?;
            if !top.exists(probe_file(kind)) {
                return Err(no_probes(top, kind));
            }
            let place = match (kind, d.uprobe_target()) {
                (Kind::Uprobe, Some((path, sym))) => {
                    let in_context = |e: trbox::sys::Error| {
                        let mut e = Error::from(e);
                        e.msg = format!("{opt}: {}", e.msg);
                        e
                    };
                    let file = elf::locate(path).map_err(|e| match e.errno() {
                        Some(libc::ENOENT) if !path.contains('/') => in_context(e).hint(format!(
                            "a bare name is looked for in $PATH, a library's (NAME.so*) in $LD_LIBRARY_PATH:{}; or give its path",
                            elf::LIB_DIRS
                        )),
                        _ => in_context(e),
                    })?;
                    let loc = elf::resolve(&file, sym).map_err(in_context)?;
                    // The kernel splits the definition at white space.
                    let Some(p) = file.to_str().filter(|p| !p.contains(char::is_whitespace)) else {
                        return Err(Error::runtime(format!(
                            "{opt}: '{}': the kernel cannot take a path with spaces",
                            file.display()
                        ))
                        .hint("probe it through a symbolic link without spaces"));
                    };
                    log::info!("{sym} in {p}: address 0x{:x}, file offset 0x{:x}", loc.vaddr, loc.offset);
                    format!("{p}:0x{:x}", loc.offset)
                }
                _ => d.place.to_string(),
            };
            let group = d.group.unwrap_or(GROUP).to_string();
            let event = match d.event {
                Some(e) => e.to_string(),
                None => unused_name(top, &group, &d.default_name(), &out),
            };
            out.push(Probe { kind, line: d.line(&group, &event, &place), group, event });
        }
    }
    Ok(out)
}

/// No probe options in this build (feature probe).
#[cfg(not(feature = "probe"))]
fn probes(_: &Args, _: &Tracefs) -> Result<Vec<Probe>, Error> {
    Ok(Vec::new())
}

/// `base`, or `base_2`, `base_3`… if the kernel or this run already has an
/// event of that name in `group`.
#[cfg(feature = "probe")]
fn unused_name(top: &Tracefs, group: &str, base: &str, made: &[Probe]) -> String {
    let taken =
        |n: &str| top.exists(&format!("events/{group}/{n}")) || made.iter().any(|p| p.group == group && p.event == n);
    let mut name = base.to_string();
    let mut i = 2;
    while taken(&name) && i < 1000 {
        name = format!("{base}_{i}");
        i += 1;
    }
    name
}

/// This kernel lacks kprobes or uprobes: say which, and what still works.
fn no_probes(top: &Tracefs, kind: Kind) -> Error {
    let (what, config, other, other_opt) = match kind {
        Kind::Kprobe => ("kprobes", "CONFIG_KPROBE_EVENTS", Kind::Uprobe, "uprobes (--uprobe)"),
        Kind::Uprobe => ("uprobes", "CONFIG_UPROBE_EVENTS", Kind::Kprobe, "kprobes (--kprobe)"),
    };
    let mut works = String::from("trace events (tr-event --list) still work");
    if top.exists(probe_file(other)) {
        works = format!("{works}, and so do {other_opt}");
    }
    Error::runtime(format!(
        "this kernel has no {what}: tracefs has no {} (it was built without {config})",
        probe_file(kind)
    ))
    .hint(works)
}

/// `--boot`: the events (with -f, -R) from boot. A bare word is a system
/// for tr-event but an event name for the kernel's `trace_event=`: where
/// tracefs tells, a system becomes `SYS:*`.
#[cfg(feature = "host")]
fn boot(common: &cli::Common, a: &Args, cmd: &[String]) -> Result<(), Error> {
    if !cmd.is_empty() || a.time.is_some() || a.keep || a.json || a.list || a.format.is_some() {
        return Err(Error::usage("--boot prints settings: not with -- CMD, -t, -k, --json, --list or --format"));
    }
    let t = Tracefs::open(common.tracefs.as_deref()).ok();
    let events: Vec<String> = a
        .events
        .iter()
        .flat_map(|e| e.split(','))
        .filter(|e| !e.is_empty())
        .map(|e| match &t {
            Some(t)
                if !e.contains(':') && t.exists(&format!("events/{e}")) && !t.exists(&format!("events/{e}/format")) =>
            {
                format!("{e}:*")
            }
            _ => e.to_string(),
        })
        .collect();
    if events.is_empty() {
        return Err(Error::usage("--boot: no events given").hint("e.g. tr-event --boot sched:sched_switch"));
    }
    let s = trbox::boot::Settings {
        instance: common.instance.as_deref(),
        persist_mb: a.persist,
        events: &events,
        filter: a.filter.as_deref(),
        triggers: &a.trigger,
        ..Default::default()
    };
    let mut none = Vec::new();
    if !a.pid.is_empty() {
        none.push("-P: no boot-time form (pids exist only after boot)");
    }
    if !(a.kprobe.is_empty() && a.kretprobe.is_empty() && a.uprobe.is_empty() && a.uretprobe.is_empty()) {
        none.push("probes: not printed (bootconfig has ftrace.event.kprobes.E.probes)");
    }
    cli::print_boot(&trbox::boot::boot(&s), &none)
}
