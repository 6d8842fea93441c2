//! tr-event: list events, show formats, or enable events (with filters and
//! triggers) and stream them decoded until Ctrl-C, -t or the command ends.
//! Everything it changes is put back on the way out.

use crate::cli::{self, Common, Error};
use crate::decode::{self, Filter, RawOpts};
use argh::FromArgs;
use crate::command::{self, event_dir, list_events, now, resolve, resolve_all, tracing_on_file, Command, Follow};
use std::io::Write as _;
use std::time::Duration;
use trbox::ctl::glob_match;
use trbox::sys::lock::Lock;
use trbox::sys::state::State;
use trbox::sys::{signals, Tracefs};

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
    let (own, cmd) = command::split(args);
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
    let events = resolve_all(&all, &a.events)?;
    if events.is_empty() {
        return Err(Error::usage("no events given").hint("e.g. tr-event sched:sched_switch; list them with tr-event -l"));
    }
    if let Some(i) = &common.instance {
        t.enter_or_create_instance(i)?;
        t.keep_instance = a.keep;
    }
    signals::install().map_err(|e| Error::runtime(format!("cannot install signal handlers: {e}")))?;
    let _lock = Lock::take(common.instance.as_deref(), a.wait, "tr-event")?;
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
        let child = Command::start(cmd, &mut st, Follow { events: true, functions: false })?;
        st.set(tracing_on_file(&t), "1")?;
        child.release()?;
        let opts = RawOpts {
            only: None,
            filter: Filter { pid: None, comm: None, events: Vec::new() },
            follow: true,
            json: a.json,
            limit: a.time.map(Duration::from_secs_f64),
            since,
        };
        let r = decode::Input::tree(&t, &opts).and_then(|i| decode::run(i, &opts, &|| child.exited()));
        // The command may still run (Ctrl-C, -t): it got the same signal
        // from the terminal, or we end it now.
        let status = child.finish();
        r?;
        status
    };
    command::exit_with(status)
}
