//! tr-stack: kernel stacks. The stack tracer's deepest stack (default);
//! the stacks behind an event (`-e`, the `stacktrace` trigger) or behind
//! calls of a function (`-l GLOB`, the function tracer's func_stack_trace),
//! counted and listed most frequent first.

use crate::applets::cli::{self, Error};
use crate::applets::command::{self, resolve_all, Follow, Window};
use crate::applets::session::Live;
use argh::{ArgsInfo, FromArgs};
use std::io::Write as _;
use std::time::Duration;
use trbox::names::glob_match;
use trbox::printfmt::SymbolLookup;
use trbox::stacks::{write_folded, write_table, StackCounts};
use trbox::sys::lock::Lock;
use trbox::sys::read::Out;
use trbox::sys::read::{self, Entry, RawOpts, Reader};
use trbox::sys::state::{ftrace_refused, State};
use trbox::sys::{event_dir, signals, Tracefs};

/// The stack tracer's switch (a sysctl, outside tracefs).
const STACK_SYSCTL: &str = "/proc/sys/kernel/stack_tracer_enabled";

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help"))]
/// Kernel stacks: the stack tracer's deepest stack; with -e, the distinct
/// stacks behind an event, counted; with -l, who calls a function.
#[cfg_attr(
    feature = "host",
    argh(
        example = "{command_name} --reset -t 5   # the deepest stack in 5 s",
        example = "{command_name} -e sched:sched_switch -t 1",
        example = "{command_name} -l 'kmalloc*' --folded -- ls"
    )
)]
pub(crate) struct Args {
    /// count the stacks behind these events (repeatable, comma-separated)
    #[argh(option, short = 'e', arg_name = "SYS:EVENT")]
    event: Vec<String>,
    /// only events matching this filter (the kernel's filter syntax)
    #[argh(option, short = 'f', arg_name = "FILTER")]
    filter: Option<String>,
    /// count the stacks behind calls of the functions matching GLOB (function
    /// tracer, set_ftrace_filter)
    #[argh(option, short = 'l', arg_name = "GLOB")]
    func: Option<String>,
    /// only these processes (set_event_pid / set_ftrace_pid); repeatable
    #[argh(option, short = 'P', arg_name = "PID")]
    pid: Vec<u32>,
    /// print folded stacks (for flame graphs) instead of the table
    #[argh(switch)]
    folded: bool,
    /// stack tracer: reset the maximum (stack_max_size) first
    #[argh(switch)]
    reset: bool,
    /// stack tracer: only these functions (stack_trace_filter)
    #[argh(option, arg_name = "GLOB")]
    limit: Option<String>,
    /// stop after S seconds
    #[argh(option, short = 't', arg_name = "S")]
    time: Option<cli::Seconds>,
    /// read a trace.dat (its kernel_stack records) instead of tracing
    #[argh(option, short = 'i', arg_name = "FILE")]
    input: Option<String>,
    /// leave the settings in place when done
    #[argh(switch, short = 'k')]
    keep: bool,
}

pub(crate) fn main(args: &[String]) -> Result<(), Error> {
    let (own, cmd) = command::split(args);
    let (common, a) = cli::parse::<Args>("tr-stack", own)?;
    let common = &common;
    if !a.event.is_empty() && a.func.is_some() {
        return Err(Error::usage("-e and -l are alternatives"));
    }
    command::one_target(&a.pid, cmd)?;
    signals::install().map_err(trbox::sys::Error::Signals)?;
    let limit = a.time.map(|s| s.0);
    let opts =
        |follow: bool, since| RawOpts { follow, limit, since, kernel: common.kernel.clone(), ..Default::default() };
    if let Some(f) = &a.input {
        let o = opts(false, None);
        let reader = Reader::dat("tr-stack", std::path::Path::new(f), common.instance.as_deref(), &o)?;
        return count_stacks(reader, &a, &o, &|| false, true);
    }
    let mut t = Tracefs::open(common.tracefs.as_deref())?;
    if !t.is_live() {
        // A copy: count the stacks it holds (or show its stack tracer table).
        if let Some(i) = &common.instance {
            t.enter_instance(i)?;
        }
        if a.event.is_empty() && a.func.is_none() && t.exists("stack_trace") {
            return print_table(&t);
        }
        let o = opts(false, None);
        return count_stacks(Reader::of_tree(&t, &o)?, &a, &o, &|| false, true);
    }
    if a.event.is_empty() && a.func.is_none() {
        if !cmd.is_empty() {
            return Err(Error::usage("the stack tracer takes no command").hint("use -t S, or -e/-l with -- CMD"));
        }
        return stack_tracer(&t, &a, common.wait, limit);
    }
    let all = t.list_events()?;
    let events = resolve_all(&all, &a.event)?;
    if a.func.is_some() {
        t.require_tracer("function")?;
    }
    let live = Live::enter(t, common, a.keep)?;
    let t = &live.t;
    let status = {
        let mut st = live.state(a.keep, None)?;
        let trigger = match &a.filter {
            Some(f) => format!("stacktrace if {f}"),
            None => "stacktrace".to_string(),
        };
        for e in &events {
            let dir = event_dir(e);
            if let Some(f) = &a.filter {
                st.set_filter(&dir, Some(f))?;
            }
            st.add_trigger(&dir, &trigger).map_err(|err| {
                let exists = err.errno() == Some(libc::EEXIST);
                let err = Error::from(err);
                if exists {
                    // The kernel keeps one stacktrace trigger per event.
                    err.hint(format!("{e} already has another stacktrace trigger: see {dir}/trigger"))
                } else {
                    err
                }
            })?;
            st.set(&format!("{dir}/enable"), "1")?;
        }
        if let Some(g) = &a.func {
            st.set_functions("set_ftrace_filter", std::slice::from_ref(g))?;
        }
        // Tracing is idle until the window opens: the order of the set-up
        // does not matter to what is recorded, and the function filter
        // first names dynamic ftrace plainly where the kernel refuses it.
        let follow = Follow { events: !events.is_empty(), functions: a.func.is_some() };
        let child = command::whom(&mut st, cmd, &a.pid, follow)?;
        // Every stack needs the symbols: read before the tracer and the
        // window (read in it, the read's own kernel calls are traced).
        trbox::sys::read_live_ahead();
        if a.func.is_some() {
            st.set_tracer("function")?;
            st.set("options/func_stack_trace", "1")?;
        }
        // count_stacks says itself that nothing came (an error: no table).
        let r = command::stream(
            t,
            &mut st,
            &child,
            RawOpts { kernel: common.kernel.clone(), ..Default::default() },
            limit,
            true,
            &|i, o, stop| count_stacks(i, &a, o, &|| stop.asked(), false).map(|()| true),
            None,
        );
        r?
    };
    command::exit_with(status)
}

/// Collect kernel_stack records and print them counted (table or folded);
/// `recorded`: from a file or a copy, not this run's trace.
fn count_stacks(reader: Reader, a: &Args, o: &RawOpts, done: &dyn Fn() -> bool, recorded: bool) -> Result<(), Error> {
    let mut counts: Option<StackCounts> = None;
    let session = read::collect(reader, o, &command::stop(done)?, &mut |m, it| {
        let c = counts.get_or_insert_with(|| StackCounts::new(&m.trace.events, m.trace.abi()));
        match it {
            Entry::Event(ev) => c.record(&m.trace.events, m.slot(ev.buffer(), ev.cpu()), ev.payload()),
            Entry::Lost { buffer, cpu, .. } => c.lost(m.slot(buffer, cpu)),
            // collect() hands over nothing else.
            Entry::Damaged { .. } | Entry::Unknown { .. } => {}
        }
    })?;
    let mut rows = counts
        .as_ref()
        .map(|c| c.rows(&session.trace.events, Some(&session.trace.symbols as &dyn SymbolLookup)))
        .unwrap_or_default();
    // On recorded data -e picks the stacks of those events (or functions).
    let wanted: Vec<&str> =
        a.event.iter().flat_map(|e| e.split(',')).chain(a.func.as_deref()).filter(|s| !s.is_empty()).collect();
    if !wanted.is_empty() {
        rows.retain(|r| {
            let bare = r.origin.rsplit(':').next().unwrap_or("");
            wanted
                .iter()
                .any(|w| glob_match(w, &r.origin) || glob_match(w, bare) || glob_match(&format!("{w}:*"), &r.origin))
        });
    }
    if rows.is_empty() {
        let e = Error::runtime("no kernel stacks were recorded");
        return Err(if recorded {
            e.hint("the recording holds no kernel_stack records of these: it was made without stack traces")
        } else if a.func.is_some() {
            e.hint("did the function run? (check the name against available_filter_functions)")
        } else {
            e.hint("did the event happen? try a longer -t")
        });
    }
    let mut text = String::new();
    let _ = if a.folded { write_folded(&mut text, &rows) } else { write_table(&mut text, &rows) };
    let mut out = Out::stdout();
    let _ = out.write_all(text.as_bytes());
    Ok(out.finish()?)
}

/// The stack tracer: enable it (and the filter) until -t or Ctrl-C, print
/// the deepest stack, put the switch and the filter back.
fn stack_tracer(t: &Tracefs, a: &Args, wait: bool, limit: Option<Duration>) -> Result<(), Error> {
    let sysctl = std::path::Path::new(STACK_SYSCTL);
    if !sysctl.exists() || !t.exists("stack_trace") {
        return Err(Error::runtime(
            "this kernel has no stack tracer (CONFIG_STACK_TRACER is not set: no /proc/sys/kernel/stack_tracer_enabled, no stack_trace in tracefs)",
        )
        .hint("tr-stack -e SYS:EVENT shows the stacks behind an event without it"));
    }
    let _lock = Lock::take(t.top(), wait)?;
    let mut st = State::new(t);
    st.set_keep(a.keep);
    st.guard(&mut |_, _| {});
    if let Some(g) = &a.limit {
        st.set_functions("stack_trace_filter", std::slice::from_ref(g))?;
    }
    if a.reset {
        // The maximum is a measurement, not a setting: not put back.
        t.write("stack_max_size", "0")?;
    }
    // An absolute path: State keeps and restores it like a tracefs file.
    let w = Window::open(&mut st, STACK_SYSCTL, limit).map_err(ftrace_refused)?;
    while signals::stop_requested().is_none() {
        std::thread::sleep(Duration::from_millis(50));
    }
    w.stop();
    print_table(t)
}

/// `stack_max_size` and the `stack_trace` table, as the kernel writes them.
fn print_table(t: &Tracefs) -> Result<(), Error> {
    let max = t.read_opt("stack_max_size")?.unwrap_or_default();
    let table = t.read("stack_trace")?;
    let mut out = Out::stdout();
    let _ = writeln!(out, "stack_max_size: {} bytes", max.trim());
    let _ = out.write_all(table.as_bytes());
    Ok(out.finish()?)
}
