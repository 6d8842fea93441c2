//! tr-event: list events, show formats, or enable events (with filters and
//! triggers) and stream them decoded until Ctrl-C, -t or the command ends.
//! Everything it changes is put back on the way out.

use crate::cli::{self, Common, Error};
use crate::decode::{self, Filter, RawOpts};
use argh::FromArgs;
use std::cell::RefCell;
use std::io::Write as _;
use std::time::Duration;
use trbox::ctl::{closest, glob_match, CpuStats};
use trbox::sys::lock::Lock;
use trbox::sys::state::State;
use trbox::sys::child::Paused;
use trbox::sys::{describe, signals, Tracefs};

#[derive(FromArgs)]
/// Enable trace events and stream them decoded until Ctrl-C, -t or the
/// command after `--` ends; or list events (-l) and show formats (--format).
/// Usage: tr-event SYS:EVENT[,...] [-f FILTER] [-R TRIGGER] [-t S] [-- CMD]
struct Args {
    /// list events (optionally matching GLOB, e.g. 'sched:*')
    #[argh(switch, short = 'l')]
    list: bool,
    /// show the format of SYS:EVENT
    #[argh(option)]
    format: Option<String>,
    /// filter for the events (the kernel's filter syntax)
    #[argh(option, short = 'f')]
    filter: Option<String>,
    /// trigger to attach (e.g. stacktrace, 'traceoff if pid == 1');
    /// repeatable
    #[argh(option, short = 'R')]
    trigger: Vec<String>,
    /// stop after SECONDS
    #[argh(option, short = 't')]
    time: Option<f64>,
    /// leave the events enabled when done
    #[argh(switch, short = 'k')]
    keep: bool,
    /// wait for another trbox run to finish instead of failing
    #[argh(switch)]
    wait: bool,
    /// one JSON object per event
    #[argh(switch)]
    json: bool,
    /// events: SYS:EVENT, SYS:GLOB or SYS (comma-separated or repeated)
    #[argh(positional)]
    events: Vec<String>,
}

pub fn main(common: &Common, args: &[String]) -> Result<(), Error> {
    // Everything after `--` is the command to trace.
    let (own, cmd) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &args[args.len()..]),
    };
    let a: Args = cli::parse("tr-event", own)?;
    let mut t = Tracefs::open(common.tracefs.as_deref())?;
    let all = list_events(&t)?;
    if a.list {
        let glob = a.events.first().map(String::as_str).unwrap_or("*");
        let mut out = crate::out::Out::stdout();
        for e in all.iter().filter(|e| glob_match(glob, e)) {
            let _ = writeln!(out, "{e}");
        }
        return out.finish();
    }
    if let Some(f) = &a.format {
        let ev = resolve(&all, f)?;
        let [one] = ev.as_slice() else {
            return Err(Error::usage(format!("--format takes one event, '{f}' matches {}", ev.len())));
        };
        print!("{}", t.read(&format!("{}/format", event_dir(one)))?);
        return Ok(());
    }
    let mut events = Vec::new();
    for spec in a.events.iter().flat_map(|s| s.split(',')).filter(|s| !s.is_empty()) {
        events.extend(resolve(&all, spec)?);
    }
    if events.is_empty() {
        return Err(Error::usage("no events given").hint("e.g. tr-event sched:sched_switch; list them with tr-event -l"));
    }
    events.sort();
    events.dedup();
    if let Some(i) = &common.instance {
        t.enter_or_create_instance(i)?;
        t.keep_instance = a.keep;
    }
    signals::install().map_err(|e| Error::runtime(format!("cannot install signal handlers: {e}")))?;
    let _lock = Lock::take(common.instance.as_deref(), a.wait, "tr-event")?;
    let child = RefCell::new(None::<Paused>);
    let status = {
        let mut st = State::new(&t);
        st.keep = a.keep;
        for e in &events {
            let dir = event_dir(e);
            if let Some(f) = &a.filter {
                st.set_filter(&dir, Some(f))?;
            }
            for tr in &a.trigger {
                st.add_trigger(&dir, tr)?;
            }
            st.set(&format!("{dir}/enable"), "1")?;
        }
        let since = now(&t);
        if let Some((prog, rest)) = cmd.split_first() {
            let c = Paused::spawn(prog, rest).map_err(|e| Error::runtime(format!("cannot start '{prog}': {}", describe(&e))))?;
            let pid = c.pid();
            *child.borrow_mut() = Some(c);
            st.set_list("set_event_pid", &[pid.to_string()])?;
            if t.exists("options/event-fork") {
                st.set("options/event-fork", "1")?;
            }
        }
        st.set(tracing_on_file(&t), "1")?;
        if let Some(c) = child.borrow_mut().as_mut() {
            c.release().map_err(|e| {
                Error::runtime(format!("cannot run '{}': {}", cmd[0], describe(&e))).hint("check the command name and PATH")
            })?;
        }
        let opts = RawOpts {
            only: None,
            filter: Filter { pid: None, comm: None, events: Vec::new() },
            follow: true,
            json: a.json,
            limit: a.time.map(Duration::from_secs_f64),
            since,
        };
        let exited = || child.borrow_mut().as_mut().is_some_and(|c| c.try_wait().is_some());
        let r = decode::Input::tree(&t, &opts).and_then(|i| decode::run(i, &opts, &exited));
        // The command may still run (Ctrl-C, -t): it got the same signal
        // from the terminal, or we end it now.
        let status = child.borrow_mut().take().map(finish_child);
        r?;
        status
    };
    match status {
        Some(0) | None => Ok(()),
        Some(code) => Err(Error { code, msg: String::new(), hint: None }),
    }
}

/// `sys:event` for every event directory, sorted.
fn list_events(t: &Tracefs) -> Result<Vec<String>, Error> {
    let mut v = Vec::new();
    for sys in t.list_dir("events")? {
        for ev in t.list_dir(&format!("events/{sys}")).unwrap_or_default() {
            if t.exists(&format!("events/{sys}/{ev}/enable")) && !ev.contains('.') && t.path(&format!("events/{sys}/{ev}")).is_dir() {
                v.push(format!("{sys}:{ev}"));
            }
        }
    }
    v.sort();
    Ok(v)
}

fn event_dir(e: &str) -> String {
    format!("events/{}", e.replacen(':', "/", 1))
}

/// `SYS:EVENT`, `SYS:GLOB`, `SYS`, or a bare event name → matching events;
/// none → an error naming the closest ones.
fn resolve(all: &[String], spec: &str) -> Result<Vec<String>, Error> {
    let pat = if spec.contains(':') {
        spec.to_string()
    } else if all.iter().any(|e| e.split(':').next() == Some(spec)) {
        format!("{spec}:*")
    } else {
        format!("*:{spec}")
    };
    let m: Vec<String> = all.iter().filter(|e| glob_match(&pat, e)).cloned().collect();
    if !m.is_empty() {
        return Ok(m);
    }
    let near = closest(spec, all.iter().map(String::as_str), 3);
    let e = Error::runtime(format!("unknown event '{spec}'"));
    Err(if near.is_empty() {
        e.hint("list the events with: tr-event -l")
    } else {
        e.hint(format!("did you mean: {}", near.join(", ")))
    })
}

fn tracing_on_file(t: &Tracefs) -> &'static str {
    if t.exists("tracing_on") { "tracing_on" } else { "tracing_enabled" }
}

/// The trace clock now (the oldest CPU's view), so that what was already in
/// the buffer is not shown as if this run had caused it.
fn now(t: &Tracefs) -> Option<u64> {
    t.cpus().ok()?.iter().filter_map(|c| t.read(&format!("per_cpu/cpu{c}/stats")).ok()).filter_map(|s| CpuStats::parse(&s).now).min()
}

/// Wait for the command; its exit status (128+signal when killed).
fn finish_child(mut c: Paused) -> u8 {
    if c.try_wait().is_none() {
        // A command that got the terminal's Ctrl-C gets a moment to end,
        // then is asked to.
        std::thread::sleep(Duration::from_millis(100));
        if c.try_wait().is_none() {
            c.signal(libc::SIGTERM);
        }
    }
    c.wait().clamp(0, 255) as u8
}
