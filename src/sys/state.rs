//! Changing tracefs safely: every change records how to undo it, values that
//! are already set are never written, and everything is put back — in
//! reverse order — when the [`State`] is dropped (normal exit, error, or a
//! signal that made the applet return), unless `keep` is set. What only
//! this run needs (`State::for_run`: the pid filters of `-- CMD`, the
//! lists that leave trbox itself out) is put back even then.

use super::error::Error;
use super::guard::{Event, Guard, Notes};
use super::tracefs::Tracefs;
use crate::{ctl, probe};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

enum Undo {
    /// Write the old value back (O_TRUNC).
    Write { rel: String, value: String },
    /// Append a line that cancels what was added (`!trigger`, `-:probe`).
    Append { rel: String, line: String },
    /// Write the old value back into a file outside tracefs (sysfs).
    File { path: PathBuf, value: String },
    /// Write the old value back if the file reads otherwise: an event's
    /// `enable` that a trigger removed before left switched.
    Ensure { rel: String, value: String },
}

/// One change and how to undo it.
struct Step {
    undo: Undo,
    /// Made for this run only ([`State::for_run`]): undone under `keep` too.
    run_only: bool,
}

/// The changes one run made.
pub(crate) struct State<'t> {
    t: &'t Tracefs,
    undo: Vec<Step>,
    /// `-k/--keep`: leave the changes in place.
    keep: bool,
    /// The run's guard ([`State::guard`]), dropped after the state is put
    /// back, and the way to tell it of each change.
    guard: Option<Guard>,
    notes: Option<Notes>,
    /// The first byte of this State's notes (two States, one guard).
    tag: u8,
    /// Inside [`State::for_run`].
    run_only: bool,
}

/// A guard's note from a State (its tag, by default), `[tag, what, flag,
/// …]`: a change (`what`: W, A, F, E: its undo step, `flag`: run-only;
/// then the two texts, NUL between), `K` (flag: keep) or `U` (all undone).
const NOTE: u8 = b'S';
const NOTE_UNDONE: u8 = b'U';

impl<'t> State<'t> {
    /// The tracefs (or instance) this state changes.
    pub(crate) fn tracefs(&self) -> &'t Tracefs {
        self.t
    }

    /// Nothing changed yet in `t`.
    pub(crate) fn new(t: &'t Tracefs) -> Self {
        State { t, undo: Vec::new(), keep: false, guard: None, notes: None, tag: NOTE, run_only: false }
    }

    fn push(&mut self, undo: Undo) {
        let (kind, a, b) = match &undo {
            Undo::Write { rel, value } => (b'W', rel.as_bytes(), value),
            Undo::Append { rel, line } => (b'A', rel.as_bytes(), line),
            Undo::File { path, value } => (b'F', path.as_os_str().as_encoded_bytes(), value),
            Undo::Ensure { rel, value } => (b'E', rel.as_bytes(), value),
        };
        self.note(kind, self.run_only as u8, a, b.as_bytes());
        self.undo.push(Step { undo, run_only: self.run_only });
    }

    /// The write of the change last [`State::push`]ed failed. Each undo
    /// step is taken before its write, so that a guard hears of it first
    /// (killed between the two, the run would leave a change its guard
    /// never heard of); a write that failed takes its step back, and a
    /// value written over is put back at once: the kernel may have taken
    /// part of the write (the globs or pids of a list before the one it
    /// rejected), or shows a rejected filter, with its parse error, until
    /// the next write. (The guard keeps the step: killed before its end,
    /// the run's guard writes the old value again, or fails to remove what
    /// was not added, and says so.)
    fn not_made(&mut self) {
        if let Some(Step { undo: Undo::Write { rel, value }, .. }) = self.undo.pop() {
            let _ = self.t.write(&rel, &value);
        }
    }

    /// `-k/--keep`: leave the changes in place at the end (those of
    /// [`State::for_run`] aside).
    pub(crate) fn set_keep(&mut self, keep: bool) {
        self.keep = keep;
        self.note(b'K', keep as u8, &[], &[]);
    }

    pub(crate) fn keeps(&self) -> bool {
        self.keep
    }

    /// To the guard, if any: `[tag, what, flag, a…, 0, b…]`.
    fn note(&self, what: u8, flag: u8, a: &[u8], b: &[u8]) {
        if let Some(n) = &self.notes {
            n.send(&[&[self.tag, what, flag], a, &[0], b]);
        }
    }

    /// From now on a guard process watches this run: killed outright
    /// (SIGKILL, a crash: no destructor runs), the guard puts tracefs back
    /// as the drop would have ([`super::guard`]). `also` sees the guard's
    /// events too, with the guard's copy of this state: the notes, the
    /// death before this state is put back ([`Event::Orphaned`]: `tr-cat
    /// -o` finishes its file) and after ([`Event::PutBack`]: a State
    /// made before this one, [`State::join`]ed, is put back). Returns
    /// another sender of notes to the guard, for `also`'s side of the run.
    pub(crate) fn guard(&mut self, also: &mut dyn FnMut(Event<'_>, &mut Self)) -> Option<Notes> {
        let g = Guard::watch(&mut |e| match e {
            Event::Note(n) => {
                self.absorb(n);
                also(Event::Note(n), self);
            }
            Event::Orphaned | Event::PutBack => {
                also(Event::Orphaned, self);
                // What fails is logged ("could not restore").
                let _ = self.put_back();
                also(Event::PutBack, self);
                if !self.keep {
                    self.t.remove_own_instance();
                }
                self.t.unmount_own();
                log::warn!("the run was killed: its guard put tracefs back");
            }
        })?;
        self.notes = g.notes();
        let more = g.notes();
        self.guard = Some(g);
        more
    }

    /// Tell another State's guard of this State's changes from now on
    /// (`tag`: other than the guarded State's); that State's `also` calls
    /// [`State::absorb`] and [`State::put_back`] in the guard.
    pub(crate) fn join(&mut self, notes: Option<Notes>, tag: u8) {
        self.notes = notes;
        self.tag = tag;
    }

    /// The guard's pid, which the run's own pids are with (`not_mine`).
    pub(crate) fn guard_pid(&self) -> Option<u32> {
        self.guard.as_ref().map(Guard::pid)
    }

    /// In the guard's copy: a note the run's State sent (others are not
    /// this State's).
    pub(crate) fn absorb(&mut self, note: &[u8]) {
        let [tag, what, run_only, rest @ ..] = note else { return };
        if *tag != self.tag {
            return;
        }
        let cut = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        let text = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap_or_default();
        let (a, b) = (text(rest.get(..cut).unwrap_or_default()), text(rest.get(cut + 1..).unwrap_or_default()));
        let undo = match *what {
            NOTE_UNDONE => return self.undo.clear(),
            b'K' => return self.keep = *run_only == 1,
            b'W' => Undo::Write { rel: a, value: b },
            b'A' => Undo::Append { rel: a, line: b },
            b'F' => Undo::File { path: a.into(), value: b },
            _ => Undo::Ensure { rel: a, value: b },
        };
        self.undo.push(Step { undo, run_only: *run_only == 1 });
    }

    /// What the end of the run does: everything back, or under `keep`
    /// what was for the run only.
    pub(crate) fn put_back(&mut self) -> Result<(), Error> {
        if self.keep {
            self.undo_steps(|s| s.run_only)
        } else {
            self.restore()
        }
    }

    /// Make the changes of `f` for this run only: they are put back at its
    /// end even under `keep`. A pid filter on the `-- CMD` that exited is no
    /// setting to keep: once the kernel has taken an exited pid out of
    /// `set_event_pid`, the list reads empty but still filters, so every
    /// later event of the buffer would be dropped (issue 26).
    pub(crate) fn for_run<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let was = std::mem::replace(&mut self.run_only, true);
        let r = f(self);
        self.run_only = was;
        r
    }

    /// Set a single-value control file (`current_tracer`, `tracing_on`,
    /// `trace_clock`, `options/X`, `events/S/E/enable`, `buffer_size_kb`…).
    /// Returns whether anything was written.
    pub(crate) fn set(&mut self, rel: &str, value: &str) -> Result<bool, Error> {
        let cur = self.t.read(rel)?;
        let old = ctl::writable_value(&cur).to_string();
        if old == value.trim() {
            return Ok(false);
        }
        self.push(Undo::Write { rel: rel.into(), value: old });
        self.t.write(rel, value).inspect_err(|_| self.not_made())?;
        Ok(true)
    }

    /// Replace a list file (`set_event_pid`, `set_ftrace_filter`,
    /// `set_graph_function`…) with `items`; the old list comes back on
    /// restore.
    pub(crate) fn set_list(&mut self, rel: &str, items: &[String]) -> Result<bool, Error> {
        let cur = self.t.read(rel)?;
        let old: Vec<&str> = ctl::entries(&cur).filter(|l| *l != "no pid").collect();
        if old.iter().copied().eq(items.iter().map(String::as_str)) {
            return Ok(false);
        }
        let old = old.join("\n");
        self.push(Undo::Write { rel: rel.into(), value: old });
        self.t.write(rel, &items.join("\n")).inspect_err(|_| self.not_made())?;
        Ok(true)
    }

    /// Set an event's (or system's) filter; `filter` of `None` clears it.
    /// A rejected filter reports the kernel's error_log text.
    pub(crate) fn set_filter(&mut self, event_dir: &str, filter: Option<&str>) -> Result<bool, Error> {
        let rel = format!("{event_dir}/filter");
        let cur = self.t.read(&rel)?;
        let old = ctl::filter(&cur).map(String::from);
        if old.as_deref() == filter {
            return Ok(false);
        }
        let old = old.unwrap_or_else(|| "0".into());
        self.push(Undo::Write { rel: rel.clone(), value: old });
        self.t.write_checked(&rel, filter.unwrap_or("0")).inspect_err(|_| self.not_made())?;
        Ok(true)
    }

    /// Add a trigger (`stacktrace`, `traceoff if …`, `hist:…`) to an event;
    /// removed again on restore. An identical trigger already present is left
    /// alone. A command the kernel lacks (the event's `trigger` file lists
    /// the ones it has) gives [`Error::NoTrigger`].
    pub(crate) fn add_trigger(&mut self, event_dir: &str, trigger: &str) -> Result<bool, Error> {
        let rel = format!("{event_dir}/trigger");
        let cur = self.t.read(&rel)?;
        if ctl::triggers(&cur).any(|t| trigger_matches(t, trigger)) {
            return Ok(false);
        }
        let cmd = ctl::trigger_command(trigger);
        if let Some(have) = ctl::available_triggers(&cur).filter(|h| !h.contains(&cmd)) {
            return Err(Error::NoTrigger { name: cmd.into(), available: have.join(" ") });
        }
        // Once an enable_event (disable_event) trigger has fired, removing
        // it leaves its target enabled (disabled) for real: the kernel
        // drops the soft mode and keeps the state the trigger set
        // (trace_events.c `__ftrace_event_enable_disable()`). The target's
        // enable comes back after the trigger is gone.
        if let Some((sys, ev)) = ctl::trigger_target(trigger) {
            let en = format!("events/{sys}/{ev}/enable");
            if let Ok(v) = self.t.read(&en) {
                self.push(Undo::Ensure { rel: en, value: ctl::writable_value(&v).into() });
            }
        }
        self.push(Undo::Append { rel: rel.clone(), line: format!("!{trigger}") });
        self.t.append_checked(&rel, trigger).inspect_err(|_| self.not_made())?;
        Ok(true)
    }

    /// Create a dynamic event (kprobe, uprobe…) from its definition; it is
    /// removed on restore. `file` is `dynamic_events`, `kprobe_events` or
    /// `uprobe_events`; `name` is `GROUP/EVENT` as the kernel lists it.
    pub(crate) fn add_dynamic_event(&mut self, file: &str, def: &str, name: &str) -> Result<(), Error> {
        // An event of that name already there (another tool's probe): 5.7+
        // adds ours to it (trace_kprobe.c, trace_uprobe.c: append_trace_*),
        // and removing ours at the end would remove theirs with it. Older
        // kernels refuse it with EEXIST: so does this.
        if self.t.exists(&format!("events/{name}")) {
            let err = std::io::Error::from_raw_os_error(libc::EEXIST);
            return Err(Error::Rejected { path: self.t.path(file), value: def.into(), err, kernel: None });
        }
        self.push(Undo::Append { rel: file.into(), line: format!("-:{name}") });
        self.t.append_checked(file, def).inspect_err(|_| self.not_made())
    }

    /// Select a tracer in `current_tracer`. A tracer the kernel lacks gives
    /// [`Error::NoTracer`] with the ones it has; EPERM (function tracers
    /// where dynamic ftrace is refused) gives [`Error::FtraceRefused`].
    pub(crate) fn set_tracer(&mut self, name: &str) -> Result<bool, Error> {
        self.t.require_tracer(name)?;
        self.set("current_tracer", name).map_err(ftrace_refused)
    }

    /// Turn a word of `osnoise/options` on or off (`NAME` / `NO_NAME`, as
    /// the kernel lists them: trace_osnoise.c, osnoise_options_show). None
    /// when the kernel has no such option (before 6.3, no file at all).
    pub(crate) fn set_osnoise_option(&mut self, name: &str, on: bool) -> Result<Option<bool>, Error> {
        let rel = "osnoise/options";
        let cur = self.t.read(rel).unwrap_or_default();
        let no = format!("NO_{name}");
        let (want, old) = if on { (name, no.as_str()) } else { (no.as_str(), name) };
        let mut words = cur.split_whitespace();
        if words.clone().any(|w| w == want) {
            return Ok(Some(false));
        }
        if !words.any(|w| w == old) {
            return Ok(None);
        }
        self.push(Undo::Write { rel: rel.into(), value: old.into() });
        self.t.write(rel, want).inspect_err(|_| self.not_made())?;
        Ok(Some(true))
    }

    /// Set a file outside tracefs (`/sys/devices/system/cpu/cpuN/cpuidle/
    /// stateM/disable` for `--deepest-idle-state`), put back like the
    /// others. Returns whether anything was written.
    pub(crate) fn set_file(&mut self, path: &std::path::Path, value: &str) -> Result<bool, Error> {
        let io = |e| Error::io(path, e);
        let old = std::fs::read_to_string(path).map_err(io)?.trim().to_string();
        if old == value {
            return Ok(false);
        }
        self.push(Undo::File { path: path.into(), value: old });
        std::fs::write(path, value).map_err(io).inspect_err(|_| self.not_made())?;
        Ok(true)
    }

    /// Set the sub-buffer size (`buffer_subbuf_size_kb`, 6.8+) and then
    /// the buffer size, `kb` or the one it had. The kernel keeps a
    /// buffer's data bytes across a sub-buffer change but leaves
    /// `buffer_size_kb` reading the old size (ring_buffer.c
    /// `ring_buffer_subbuf_order_set()`; trace.c updates no entries), and
    /// sizes a buffer in sub-buffers of the size in place when
    /// `buffer_size_kb` is written ([`ctl::buffer_kb_for`]): so the
    /// sub-buffer goes first, the size is written after it even when it
    /// reads the same, and on restore the same order: the sub-buffer, then
    /// the size. Returns whether anything was written.
    pub(crate) fn set_buffer_sizes(&mut self, subbuf_kb: Option<u64>, kb: Option<u64>) -> Result<bool, Error> {
        const SIZE: &str = "buffer_size_kb";
        let Some(sub) = subbuf_kb else {
            return kb.map_or(Ok(false), |kb| self.set(SIZE, &kb.to_string()));
        };
        let rel = "buffer_subbuf_size_kb";
        let old_sub = ctl::writable_value(&self.t.read(rel)?).to_string();
        if old_sub == sub.to_string() {
            return kb.map_or(Ok(false), |kb| self.set(SIZE, &kb.to_string()));
        }
        // Per-CPU sizes that differ read `X`: left as they are.
        let old = ctl::writable_value(&self.t.read(SIZE)?).to_string();
        let size = old.parse::<u64>().ok();
        if size.is_some() {
            self.push(Undo::Write { rel: SIZE.into(), value: old });
        }
        self.push(Undo::Write { rel: rel.into(), value: old_sub });
        self.t.write(rel, &sub.to_string()).inspect_err(|_| self.not_made())?;
        if let Some(kb) = kb.or(size) {
            self.t.write(SIZE, &kb.to_string())?;
        }
        Ok(true)
    }

    /// Turn `options/NAME` on or off.
    pub(crate) fn set_option(&mut self, name: &str, on: bool) -> Result<bool, Error> {
        self.set(&format!("options/{name}"), if on { "1" } else { "0" })
    }

    /// Replace a function list (`set_ftrace_filter`, `set_ftrace_notrace`,
    /// `set_graph_function`, `set_graph_notrace`, `stack_trace_filter`)
    /// with `globs`. A glob matching no function is rejected by the kernel
    /// after the ones before it were taken, so the old list is put back at
    /// once; EPERM gives [`Error::FtraceRefused`].
    pub(crate) fn set_functions(&mut self, rel: &str, globs: &[String]) -> Result<bool, Error> {
        let cur = self.t.read(rel).map_err(ftrace_refused)?;
        let old: Vec<&str> = ctl::entries(&cur).collect();
        if old.iter().copied().eq(globs.iter().map(String::as_str)) {
            return Ok(false);
        }
        let old = old.join("\n");
        self.push(Undo::Write { rel: rel.into(), value: old });
        self.t.write_checked(rel, &globs.join("\n")).inspect_err(|_| self.not_made()).map_err(
            |e| match ftrace_refused(e) {
                Error::Rejected { path, value, err, kernel: None } if err.raw_os_error() == Some(libc::EINVAL) => {
                    let kernel = Some("no function in available_filter_functions matches it".into());
                    Error::Rejected { path, value, err, kernel }
                }
                e => e,
            },
        )?;
        Ok(true)
    }

    /// Create a kprobe or uprobe from its definition line (see
    /// [`crate::probe::Def::line`]); `name` is its `GROUP/EVENT`. Written to
    /// `dynamic_events` where the kernel has it, else to `kprobe_events` /
    /// `uprobe_events`; removed on restore. `None` when this kernel has no
    /// such probes at all (no `kprobe_events` / `uprobe_events`): nothing is
    /// written then.
    pub(crate) fn add_probe(&mut self, kind: probe::Kind, line: &str, name: &str) -> Result<Option<()>, Error> {
        let own = probe_file(kind);
        if !self.t.exists(own) {
            return Ok(None);
        }
        let file = if self.t.exists("dynamic_events") { "dynamic_events" } else { own };
        self.add_dynamic_event(file, line, name).map(Some)
    }

    /// Put everything back now (also done on drop). Every undo step is tried
    /// even if one fails; failures are logged and the first is returned.
    pub(crate) fn restore(&mut self) -> Result<(), Error> {
        self.undo_steps(|_| true)
    }

    /// Undo the steps `which` selects, newest first; forget the others.
    fn undo_steps(&mut self, which: impl Fn(&Step) -> bool) -> Result<(), Error> {
        self.note(NOTE_UNDONE, 0, &[], &[]);
        let mut first = None;
        while let Some(step) = self.undo.pop() {
            if !which(&step) {
                continue;
            }
            let r = match &step.undo {
                Undo::Write { rel, value } => self.t.write(rel, value),
                Undo::Append { rel, line } => self.t.append(rel, line),
                Undo::File { path, value } => std::fs::write(path, value).map_err(|e| Error::io(path, e)),
                Undo::Ensure { rel, value } => match self.t.read(rel) {
                    Ok(v) if ctl::writable_value(&v) != value => self.t.write(rel, value),
                    r => r.map(drop),
                },
            };
            if let Err(e) = r {
                log::warn!("could not restore: {e}");
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// EPERM on a function-tracing file (or the stack tracer sysctl) means
/// dynamic ftrace is refused: [`Error::FtraceRefused`].
pub(crate) fn ftrace_refused(e: Error) -> Error {
    match e {
        Error::Io { path, err } | Error::Rejected { path, err, .. } if err.raw_os_error() == Some(libc::EPERM) => {
            Error::FtraceRefused { path }
        }
        e => e,
    }
}

/// The file that says the kernel has this kind of probe (it exists with
/// CONFIG_KPROBE_EVENTS / CONFIG_UPROBE_EVENTS, also next to
/// `dynamic_events`).
pub(crate) fn probe_file(kind: probe::Kind) -> &'static str {
    match kind {
        probe::Kind::Kprobe => "kprobe_events",
        probe::Kind::Uprobe => "uprobe_events",
    }
}

/// Does a line of a `trigger` file show the trigger we would add? The kernel
/// lists `stacktrace` as `stacktrace:unlimited`, `traceoff:1` as `traceoff:1`.
fn trigger_matches(listed: &str, ours: &str) -> bool {
    let (l_cmd, l_filter) = split_filter(listed);
    let (o_cmd, o_filter) = split_filter(ours);
    l_filter == o_filter && (l_cmd == o_cmd || l_cmd.strip_suffix(":unlimited") == Some(o_cmd))
}

fn split_filter(t: &str) -> (&str, &str) {
    match t.split_once(" if ") {
        Some((c, f)) => (c.trim(), f.trim()),
        None => (t.trim(), ""),
    }
}

impl Drop for State<'_> {
    fn drop(&mut self) {
        let _ = self.put_back();
        // Then the guard is told all is done (dropped with the fields).
    }
}

impl Tracefs {
    /// Is `name` in `available_tracers`? Otherwise [`Error::NoTracer`] with
    /// the tracers this kernel has. A tree without the file passes.
    pub(crate) fn require_tracer(&self, name: &str) -> Result<(), Error> {
        match self.read_opt("available_tracers")? {
            Some(av) if !av.split_whitespace().any(|a| a == name) => {
                Err(Error::NoTracer { name: name.into(), available: av.split_whitespace().map(String::from).collect() })
            }
            _ => Ok(()),
        }
    }

    /// Write a control file in one write() (the kernel parses each write on
    /// its own), truncating it first.
    pub(crate) fn write(&self, rel: &str, value: &str) -> Result<(), Error> {
        self.write_with(rel, value, false)
    }

    /// Append to a control file (triggers, dynamic events).
    pub(crate) fn append(&self, rel: &str, value: &str) -> Result<(), Error> {
        self.write_with(rel, value, true)
    }

    fn write_with(&self, rel: &str, value: &str, append: bool) -> Result<(), Error> {
        let p: PathBuf = self.path(rel);
        // Never through a symlink: tracefs has none, and the applets write no
        // copied tree (-T); O_NOFOLLOW keeps it so for any other caller.
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(!append)
            .append(append)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&p)
            .map_err(|e| Error::io(&p, e))?;
        let mut v = value.as_bytes().to_vec();
        if v.last() != Some(&b'\n') {
            v.push(b'\n');
        }
        f.write_all(&v).map_err(|e| Error::io(&p, e))
    }

    /// Like [`Tracefs::write`], but a rejected value is explained with the
    /// kernel's own error_log entry (message, command and caret).
    pub(crate) fn write_checked(&self, rel: &str, value: &str) -> Result<(), Error> {
        self.checked(rel, value, false)
    }

    /// Like [`Tracefs::append`], with the error_log explanation.
    pub(crate) fn append_checked(&self, rel: &str, value: &str) -> Result<(), Error> {
        self.checked(rel, value, true)
    }

    fn checked(&self, rel: &str, value: &str, append: bool) -> Result<(), Error> {
        let log_before = self.read_opt("error_log").ok().flatten();
        match self.write_with(rel, value, append) {
            Ok(()) => Ok(()),
            Err(Error::Io { path, err }) => {
                let after = self.read_opt("error_log").ok().flatten();
                let kernel = match (&log_before, &after) {
                    (b, Some(a)) if b.as_deref() != Some(a.as_str()) => ctl::last_error(a),
                    _ => None,
                };
                Err(Error::Rejected { path, value: value.trim().into(), err, kernel })
            }
            Err(e) => Err(e),
        }
    }
}
