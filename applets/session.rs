//! The set-up every run on the live tracefs shares: the kernel's tracefs
//! (not a copy), -B's instance, the signal handlers that end a run cleanly,
//! the lock that keeps two runs off one buffer, and the run's undo log.

use crate::applets::cli::{Common, Error};
use std::os::fd::RawFd;
use trbox::sys::guard::Event;
use trbox::sys::lock::Lock;
use trbox::sys::state::State;
use trbox::sys::{signals, Tracefs};

/// A run on the live tracefs, in -B's instance where given.
pub(crate) struct Live {
    /// Released before an instance trbox made is removed (the fields drop in
    /// this order): the lock is taken on the instance's directory.
    _lock: Lock,
    pub(crate) t: Tracefs,
    /// Readable when a signal (Ctrl-C, SIGTERM, SIGHUP, -t's timer) came.
    pub(crate) wake: RawFd,
}

impl Live {
    /// Open the tracefs (-T) and [`enter`](Live::enter) it.
    pub(crate) fn open(common: &Common, keep: bool) -> Result<Live, Error> {
        Live::enter(Tracefs::open(common.tracefs.as_deref())?, common, keep)
    }

    /// Work in `t`, which must be the kernel's: in -B's instance (made if
    /// missing, and removed again unless `keep`), with the signal handlers
    /// in place and the lock taken (--wait: waited for). The handlers come
    /// first, so that a Ctrl-C once the instance exists removes it.
    pub(crate) fn enter(mut t: Tracefs, common: &Common, keep: bool) -> Result<Live, Error> {
        require_live(&t)?;
        let wake = signals::install().map_err(trbox::sys::Error::Signals)?;
        if let Some(i) = &common.instance {
            t.enter_or_create_instance(i)?;
            t.keep_instance = keep;
        }
        Live::lock(t, common.wait, wake)
    }

    /// Work in `t` as it is: an applet that chose its instance itself,
    /// after installing the signal handlers (`wake`: what
    /// `signals::install` returned).
    pub(crate) fn lock(t: Tracefs, wait: bool, wake: RawFd) -> Result<Live, Error> {
        Ok(Live { _lock: Lock::take(t.dir(), wait)?, t, wake })
    }

    /// The run's undo log, with tracing idle until the run's window opens:
    /// only the traced window records, not trbox's own work before the
    /// tracer, its filters and the pid filter are in place. With `keep`
    /// (-k) the settings stay afterwards. Guarded: a run killed outright
    /// puts tracefs back all the same, and `first`, a State the run made
    /// before this one (global settings: probes, osnoise), after it, as
    /// the drops do.
    pub(crate) fn state(&self, keep: bool, mut first: Option<&mut State<'_>>) -> Result<State<'_>, Error> {
        let mut st = State::new(&self.t);
        st.set_keep(keep);
        // Its notes' tag before the fork: the guard's copy reads them.
        if let Some(f) = first.as_deref_mut() {
            f.join(None, b'G');
        }
        let notes = st.guard(&mut |e, _| match (e, first.as_deref_mut()) {
            (Event::Note(n), Some(f)) => f.absorb(n),
            (Event::PutBack, Some(f)) => drop(f.put_back()),
            _ => {}
        });
        if let Some(f) = first {
            f.join(notes, b'G');
        }
        st.set(self.t.tracing_on_file(), "0")?;
        Ok(st)
    }
}

/// A run or a switch changes the kernel's own tracefs (or debugfs) only: a
/// copy of a tree given with -T is only read — writing it as root would
/// write wherever its files lead, for no effect on the kernel.
pub(crate) fn require_live(t: &Tracefs) -> Result<(), Error> {
    if t.is_live() {
        return Ok(());
    }
    Err(Error::usage(format!("{}: a copy of a tracefs tree, not the kernel's: it is only read", t.top().display()))
        .hint("drop -T to change the live tracefs, or read the copy (tr-on, tr-cat --raw, tr-event --list)"))
}
