//! What several applets share around a tracing run: `-- CMD` (the command
//! is forked held before exec, its pid goes into the pid filters, then it is
//! released), event names (resolving with suggestions; the list is
//! `Tracefs::list_events`) and the traced window.

use crate::applets::cli::Error;
use crate::applets::progress::Progress;
use std::cell::RefCell;
use std::time::Duration;
use trbox::names::{closest, glob_match};
use trbox::sys::child::Paused;
#[cfg(feature = "decode")]
use trbox::sys::read::{RawOpts, Reader, Reading};
use trbox::sys::state::State;
use trbox::sys::stop::Stop;
use trbox::sys::{describe, signals, Held, Tracefs};

/// `args` split at the first `--`: (the applet's own options, the command).
pub(crate) fn split(args: &[String]) -> (&[String], &[String]) {
    match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &args[args.len()..]),
    }
}

/// Which pid filters follow the command (and its children).
#[derive(Clone, Copy, Default)]
pub(crate) struct Follow {
    /// set_event_pid + options/event-fork
    pub(crate) events: bool,
    /// set_ftrace_pid + options/function-fork (function and graph tracers)
    pub(crate) functions: bool,
}

/// The traced command, if any. Interior mutability because the decode loop
/// polls it through a `&dyn Fn() -> bool`.
pub(crate) struct Command {
    child: RefCell<Option<Paused>>,
    name: String,
}

impl Command {
    /// Fork `cmd` held before exec and put its pid into the filters `follow`
    /// names (through `st`, so they are restored). No command: a no-op.
    pub(crate) fn start(cmd: &[String], st: &mut State, follow: Follow) -> Result<Command, Error> {
        let Some((prog, rest)) = cmd.split_first() else {
            return Ok(Command { child: RefCell::new(None), name: String::new() });
        };
        let c = Paused::spawn(prog, rest).map_err(|e| {
            Error::runtime(format!("cannot run '{prog}': {}", describe(&e))).hint("check the command name and PATH")
        })?;
        let pid = c.pid().to_string();
        let me = Command { child: RefCell::new(Some(c)), name: prog.clone() };
        let t = st.tracefs();
        st.for_run(|st| {
            if follow.events {
                st.set_list("set_event_pid", std::slice::from_ref(&pid))?;
                if t.exists("options/event-fork") {
                    st.set("options/event-fork", "1")?;
                }
            }
            if follow.functions {
                st.set_list("set_ftrace_pid", &[pid])?;
                if t.exists("options/function-fork") {
                    st.set("options/function-fork", "1")?;
                }
            }
            Ok::<_, Error>(())
        })?;
        Ok(me)
    }

    /// Let the command exec (call once tracing is on).
    pub(crate) fn release(&self) -> Result<(), Error> {
        match self.child.borrow_mut().as_mut() {
            Some(c) => c.release().map_err(|e| {
                Error::runtime(format!("cannot run '{}': {}", self.name, describe(&e)))
                    .hint("check the command name and PATH")
            }),
            None => Ok(()),
        }
    }

    /// The command's pid, if there is one.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.borrow().as_ref().map(|c| c.pid())
    }

    /// Is there a command?
    pub(crate) fn is_some(&self) -> bool {
        self.child.borrow().is_some()
    }

    /// Has the command ended? (false without a command)
    pub(crate) fn exited(&self) -> bool {
        self.child.borrow_mut().as_mut().is_some_and(|c| c.try_wait().is_some())
    }

    /// Wait for the command and return its exit status (128+signal when
    /// killed); None without a command. A command still running (Ctrl-C got
    /// it too, or -t ended the run) gets a moment, then SIGTERM.
    pub(crate) fn finish(&self) -> Option<u8> {
        let mut c = self.child.borrow_mut().take()?;
        if c.try_wait().is_none() {
            std::thread::sleep(Duration::from_millis(100));
            if c.try_wait().is_none() {
                c.signal(libc::SIGTERM);
            }
        }
        Some(c.wait().clamp(0, 255) as u8)
    }
}

/// The applet's result once the command is done: its status becomes ours.
pub(crate) fn exit_with(status: Option<u8>) -> Result<(), Error> {
    match status {
        Some(0) | None => Ok(()),
        Some(code) => Err(Error { code, msg: String::new(), hint: None }),
    }
}

/// `SYS:EVENT`, `SYS:GLOB`, `SYS`, or a bare event name → matching events;
/// none → an error naming the closest ones.
pub(crate) fn resolve(all: &[String], spec: &str) -> Result<Vec<String>, Error> {
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
    Err(no_event(format!("unknown event '{spec}'"), spec, all, "list the events with: tr-event --list"))
}

/// An event name `spec` that matches none of `all` (SYS:EVENT): `msg`,
/// and the closest names as the hint (else `otherwise`).
pub(crate) fn no_event(msg: String, spec: &str, all: &[String], otherwise: &str) -> Error {
    let near = closest(spec, all.iter().map(String::as_str), 3);
    let e = Error::runtime(msg);
    if near.is_empty() {
        e.hint(otherwise)
    } else {
        e.hint(format!("did you mean: {}", near.join(", ")))
    }
}

/// Several specs (each may be comma-separated) → sorted, deduplicated events.
pub(crate) fn resolve_all(all: &[String], specs: &[String]) -> Result<Vec<String>, Error> {
    let mut events = Vec::new();
    for spec in specs.iter().flat_map(|s| s.split(',')).filter(|s| !s.is_empty()) {
        events.extend(resolve(all, spec)?);
    }
    events.sort_unstable();
    events.dedup();
    Ok(events)
}

/// A write that needs function tracing failed (set_ftrace_pid, the stack
/// tracer sysctl): EPERM says plainly that the kernel refuses dynamic
/// ftrace. (State::set_tracer / set_functions do this themselves.)
pub(crate) fn ftrace_write(r: Result<bool, trbox::sys::Error>) -> Result<bool, Error> {
    r.map_err(|e| trbox::sys::state::ftrace_refused(e).into())
}

/// Keep trbox's own work (reading formats, kallsyms and pages while the
/// window is open) out of a system-wide run — one with no pid filter and no
/// command: otherwise every read of the buffer is traced too (a function
/// under the function tracers, a syscall or sched event), and reading that
/// makes more. `follow` says which lists: set_ftrace_notrace_pid and
/// set_event_notrace_pid (5.8+; older kernels trace us). For this run
/// only: a `-k` run puts them back too (a dead pid is no setting to keep).
pub(crate) fn not_mine(st: &mut State, follow: Follow) -> Result<(), Error> {
    // The run's guard too (forked before: not added as a fork).
    let mut me = vec![std::process::id().to_string()];
    me.extend(st.guard_pid().map(|p| p.to_string()));
    st.for_run(|st| {
        for (on, file, fork) in [
            (follow.functions, "set_ftrace_notrace_pid", "options/function-fork"),
            (follow.events, "set_event_notrace_pid", "options/event-fork"),
        ] {
            if !on || !st.tracefs().exists(file) {
                continue;
            }
            ftrace_write(st.set_list(file, &me))?;
            // trbox's threads (the live buffers' readers) are its forks: the
            // kernel adds them to the list as they start (5.8+, as the
            // list). Left on after a -k run, it would make a later
            // `-P PID` run follow that pid's children.
            if st.tracefs().exists(fork) {
                st.set(fork, "1")?;
            }
        }
        Ok(())
    })
}

/// `-r` read the live buffer (what `held` says it held): that took its
/// events out, which a person must know before reading it again.
pub(crate) fn note_consumed(t: &Tracefs, held: Held) {
    if t.is_live() && held.entries > 0 {
        crate::applets::cli::note(
            &Error::runtime(format!("-r took the buffer's {} events out of it (a raw read consumes)", held.entries))
                .hint("tr-cat prints the buffer as text and leaves it: run it first to keep a copy"),
        );
    }
}

/// `what` (nothing shown) of a buffer `held` says is empty: why, and what
/// to do (`again`: how to record anew). None when it holds events.
pub(crate) fn empty_buffer(what: &str, held: Held, again: &str) -> Option<Error> {
    match held {
        Held { entries: 0, read: 0 } => {
            Some(Error::runtime(format!("{what}: it is empty")).hint(format!("record first: {again}")))
        }
        Held { entries: 0, read } => Some(
            Error::runtime(format!("{what}: it is empty, an earlier read took its {read} events out"))
                .hint(format!("a read of the raw pages consumes them: record again, {again}")),
        ),
        _ => None,
    }
}

/// Each `-P` pid is a process that exists: a filter on one that does not
/// records nothing, which the run would only tell at its end.
pub(crate) fn running(pids: &[u32]) -> Result<(), Error> {
    for &p in pids {
        let gone = i32::try_from(p).map_or(true, |p| {
            // SAFETY: signal 0 sends nothing; it only looks the pid up.
            (unsafe { libc::kill(p, 0) }) != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
        });
        if gone {
            return Err(Error::runtime(format!("-P {p}: no such process"))
                .hint("ps lists the processes; -- CMD traces a command from its start"));
        }
    }
    Ok(())
}

/// `-P` and `-- CMD` both choose whom a run traces: only one may be given.
pub(crate) fn one_target(pids: &[u32], cmd: &[String]) -> Result<(), Error> {
    if !pids.is_empty() && !cmd.is_empty() {
        return Err(Error::usage("-P and -- CMD both choose the traced pids: give one of them"));
    }
    Ok(())
}

/// Whose records a run keeps, in the pid filters `follow` names: the
/// command's (and its forks'), else the `-P` pids', else everyone's but
/// trbox's own ([`not_mine`]). Call it before the events are enabled, so
/// that nothing of the set-up is recorded.
pub(crate) fn whom(st: &mut State, cmd: &[String], pids: &[u32], follow: Follow) -> Result<Command, Error> {
    if !cmd.is_empty() {
        return Command::start(cmd, st, follow);
    }
    let none = Command { child: RefCell::new(None), name: String::new() };
    if pids.is_empty() {
        not_mine(st, follow)?;
        return Ok(none);
    }
    running(pids)?;
    let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
    if follow.events {
        st.set_list("set_event_pid", &pids)?;
    }
    if follow.functions {
        ftrace_write(st.set_list("set_ftrace_pid", &pids))?;
    }
    Ok(none)
}

/// A run's traced window on one switch file (`tracing_on`, or the stack
/// tracer's sysctl): switched on once everything is in place, and off again
/// by the first stop — Ctrl-C, SIGTERM, SIGHUP and -t (a timer signal) in
/// the signal handler, the command's end by [`Window::stop`] — so that what
/// is read afterwards is a closed window: it does not grow while it is read
/// out, nor record trbox reading it. With `-k` the switch goes back on after
/// the read (the tracer is left running, as set up).
pub(crate) struct Window<'t> {
    t: &'t Tracefs,
    rel: &'static str,
    shut: std::fs::File,
    keep: bool,
}

impl<'t> Window<'t> {
    /// Switch `rel` on through `st` (restored), with the stop armed and
    /// `limit` (-t) counting from now.
    pub(crate) fn open(
        st: &mut State<'t>,
        rel: &'static str,
        limit: Option<Duration>,
    ) -> Result<Self, trbox::sys::Error> {
        let t = st.tracefs();
        let p = t.path(rel);
        let shut = std::fs::OpenOptions::new().write(true).open(&p).map_err(|e| trbox::sys::Error::io(&p, e))?;
        let w = Window { t, rel, shut, keep: st.keeps() };
        signals::shut_on_stop(std::os::unix::io::AsRawFd::as_raw_fd(&w.shut));
        st.set(rel, "1")?;
        if limit.is_some() {
            signals::stop_after(limit).map_err(|e| trbox::sys::Error::io("setitimer", e))?;
        }
        Ok(w)
    }

    /// A stop that is no signal: close the window now.
    pub(crate) fn stop(&self) {
        signals::request_stop();
    }
}

impl Drop for Window<'_> {
    fn drop(&mut self) {
        let _ = signals::stop_after(None);
        signals::shut_on_stop(-1);
        if self.keep {
            let _ = self.t.write(self.rel, "1");
        }
    }
}

/// [`stream`] printing the records as text (or JSON), the formats of every
/// enabled event read: what tr-event and tr-on show.
#[cfg(feature = "decode")]
pub(crate) fn stream_text(
    t: &Tracefs,
    st: &mut State,
    child: &Command,
    o: RawOpts,
    limit: Option<Duration>,
    empty: &Empty,
) -> Result<Option<u8>, Error> {
    stream(t, st, child, o, limit, false, &print, Some(empty))
}

/// What tr-event and tr-on show without trbox's decoder (feature decode):
/// the kernel's own text, from trace_pipe.
#[cfg(not(feature = "decode"))]
pub(crate) fn stream_text(
    t: &Tracefs,
    st: &mut State,
    child: &Command,
    limit: Option<Duration>,
    empty: &Empty,
) -> Result<Option<u8>, Error> {
    window(t, st, child, limit, false, Some(empty), &|stop| {
        let pipe = trbox::sys::trace_pipe::TracePipe::open(t)?;
        child.release()?;
        let mut out = trbox::sys::read::Out::stdout();
        let shown = pipe.follow(&mut out, stop)?;
        out.finish()?;
        Ok(shown)
    })
}

/// What a run does with the records of its window: print them decoded, or
/// aggregate them (`stop` says when to stop following); whether it showed
/// anything.
#[cfg(feature = "decode")]
pub(crate) type Show<'a> = dyn Fn(Reader, &RawOpts, &Stop<'_>) -> Result<bool, Error> + 'a;

/// What ends an applet's read: `done()` (asked first), or Ctrl-C, SIGTERM,
/// SIGHUP, -t's timer. The handlers are installed here when they are not
/// yet: the library installs none.
pub(crate) fn stop(done: &dyn Fn() -> bool) -> Result<Stop<'_>, Error> {
    signals::install().map_err(trbox::sys::Error::Signals)?;
    Ok(signals::stop(done))
}

/// The records as the kernel's text (or JSON) on standard output until
/// `stop`, the note of a read that met nothing on stderr; whether anything
/// was shown.
#[cfg(feature = "decode")]
pub(crate) fn print(reader: Reader, o: &RawOpts, stop: &Stop<'_>) -> Result<bool, Error> {
    let mut out = trbox::sys::read::Out::stdout();
    let printed = trbox::sys::read::print(reader, o, stop, &mut out)?;
    note_empty(printed.empty);
    out.finish()?;
    Ok(printed.shown)
}

/// Never silently nothing: the note of a read that met nothing at all
/// (what the library returns, `Printed::empty`, `Session::empty`), on stderr.
#[cfg(feature = "decode")]
pub(crate) fn note_empty(note: Option<String>) {
    if let Some(n) = note {
        eprintln!("{n}");
    }
}

/// The traced end of a run, once it is set up (tracing idle): the window
/// opened, the command released, its records handed to `show` until the
/// command ends (or Ctrl-C / the time limit) and the closed window is read
/// out; then the command's exit status (None without one). A window that
/// showed nothing says so on stderr (`empty`: what was traced, for whom;
/// None where `show` says it itself). `o`: how to print and what to read
/// (`json`, `reading`, `kernel`); the window sets the rest (it follows, from
/// now, not the reader's own records, the enabled systems' formats).
/// `quiet`: `show` prints only once the window is closed (a table, a
/// summary): a -t window without a command then shows its progress on a
/// terminal's stderr even when standard output is that terminal.
#[allow(clippy::too_many_arguments)]
#[cfg(feature = "decode")]
pub(crate) fn stream(
    t: &Tracefs,
    st: &mut State,
    child: &Command,
    o: RawOpts,
    limit: Option<Duration>,
    quiet: bool,
    show: &Show,
    empty: Option<&Empty>,
) -> Result<Option<u8>, Error> {
    // The formats of what this window can record (Reading::enabled), read
    // after the run's events are on.
    let mut opts = RawOpts { reading: Reading { enabled: true, ..o.reading }, follow: true, since: t.now(), ..o };
    opts.filter.not_self = true;
    window(t, st, child, limit, quiet, empty, &|stop| {
        // The buffer's readers (threads reading ahead) start before the
        // command runs: a busy command fills the kernel's buffer in
        // milliseconds, less than opening the tree takes. The rest (the
        // comms, saved_cmdlines) is read after the release (it returns once
        // the command runs), so that they name it.
        let reader = Reader::of_tree_then(t, &opts, &|| child.release());
        reader.and_then(|i| show(i, &opts, stop))
    })
}

/// How a window's records are read ([`window`]): until `stop` (the
/// argument) says the window closed; whether anything was shown.
type Read<'a> = dyn Fn(&Stop<'_>) -> Result<bool, Error> + 'a;

/// The window of [`stream`]: opened, `read` until it is closed (`done`
/// says so) and read out, the note for an empty one; the command's exit
/// status.
fn window(
    t: &Tracefs,
    st: &mut State,
    child: &Command,
    limit: Option<Duration>,
    quiet: bool,
    empty: Option<&Empty>,
    read: &Read,
) -> Result<Option<u8>, Error> {
    let command = child.is_some();
    let w = Window::open(st, t.tracing_on_file(), limit)?;
    let progress = Progress::new(limit, limit.is_some() && !command, quiet);
    // The command's end is seen here rather than by the decode loop, so
    // that it closes the window as a signal does.
    // The read loop asks this first, also after a stop (it drains then):
    // the progress line goes before anything is printed.
    let done = || {
        let end = child.exited();
        if end {
            w.stop();
        }
        if signals::stop_requested().is_some() {
            progress.clear();
        } else if progress.due() {
            progress.show(format_args!("tracing"));
        }
        end
    };
    let r = stop(&done).and_then(|stop| read(&stop));
    progress.clear();
    // The command may still run (Ctrl-C, -t): it got the same signal from
    // the terminal, or it is ended now.
    let status = child.finish();
    drop(w);
    if let (false, Some(empty)) = (r?, empty) {
        crate::applets::cli::note(&empty(&window_text(command, limit)));
    }
    Ok(status)
}

/// The note for a window that recorded nothing, given how long it was open
/// ([`window_text`]): what was not seen, and what to check.
pub(crate) type Empty<'a> = dyn Fn(&str) -> Error + 'a;

/// "in 1.5 s" / "while the command ran" / "until the stop": how long the
/// window was open, for [`Empty`] notes.
pub(crate) fn window_text(command: bool, limit: Option<Duration>) -> String {
    match (command, limit) {
        (true, _) => "while the command ran".to_string(),
        (false, Some(d)) => format!("in {}.{} s", d.as_secs(), d.subsec_millis() / 100),
        (false, None) => "before the stop".to_string(),
    }
}
