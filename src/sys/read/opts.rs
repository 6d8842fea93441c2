//! What a read keeps and how it runs ([`RawOpts`]): the output filters
//! ([`Filter`]: pid, comm, events, trbox's own threads), the CPUs, whether
//! to follow, the time limit, the threads.

use crate::abi::Endian;
use crate::format::{EventFormat, EventTable, FieldLoc};
use crate::names::glob_match;
use crate::render::Cmdlines;
use std::time::Duration;

/// What to keep. The default keeps every record.
#[derive(Clone, Default)]
pub(crate) struct Filter {
    /// Only records written by this pid.
    pub(crate) pid: Option<i32>,
    /// Only records of tasks whose comm matches this glob.
    pub(crate) comm: Option<String>,
    /// Only these events (`SYS:EVENT` or `EVENT`, globs); empty: all.
    pub(crate) events: Vec<String>,
    /// Leave out trbox's own threads (a live run): the records they wrote
    /// and the scheduler events about them. The kernel's notrace pid list
    /// keeps most out, but it records a switch when either side is
    /// traced, and a waking when the waker is.
    pub(crate) not_self: bool,
}

/// What a [`Filter`] works out once per run, before the first record
/// ([`Filter::prepare`]): the globs of `-e` run once per event, not once
/// per record (a `format!` and two matches each: half of `tr-cat -e`).
#[derive(Default)]
pub(crate) struct Prepared {
    /// The events `-e` takes, by id (`common_type`, a short on every
    /// kernel); `None` without `-e`.
    ids: Option<Vec<bool>>,
    /// trbox's threads, with `not_self`.
    own: Vec<i32>,
    /// The field naming the task a scheduler event is about besides its
    /// writer (`next_pid`, a waking's `pid`), by event id.
    about: Vec<(u32, FieldLoc)>,
}

impl Filter {
    /// Work out what the filter needs of `table` (and, with `not_self`,
    /// which threads are trbox's: call it once its readers run).
    pub(crate) fn prepare(&self, table: &EventTable) -> Prepared {
        let mut p = Prepared::default();
        if !self.events.is_empty() {
            let mut ids = vec![false; 1 << 16];
            for ev in table.iter() {
                if let Some(k) = ids.get_mut(ev.id as usize) {
                    *k = self.events.iter().any(|g| takes(g, ev));
                }
            }
            p.ids = Some(ids);
        }
        if self.not_self {
            p.own = crate::sys::thread::own_tids();
            for (name, field) in [
                ("sched_switch", "next_pid"),
                ("sched_waking", "pid"),
                ("sched_wakeup", "pid"),
                ("sched_wakeup_new", "pid"),
            ] {
                if let Some(f) = table.by_name(&format!("sched:{name}")).and_then(|ev| Some((ev.id, ev.field(field)?)))
                {
                    p.about.push((f.0, f.1.loc()));
                }
            }
        }
        p
    }

    /// The `events` patterns that no event of `table` matches: a name
    /// mistyped, or an event a recording holds no format of.
    pub(crate) fn unmatched(&self, table: &EventTable) -> Vec<&str> {
        self.events.iter().filter(|g| !table.iter().any(|ev| takes(g, ev))).map(String::as_str).collect()
    }

    /// Whether a record passes; `p`: what [`Filter::prepare`] gave.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn keep(
        &self,
        p: &Prepared,
        ev: &EventFormat,
        payload: &[u8],
        endian: Endian,
        pid: i32,
        cmdlines: &Cmdlines,
    ) -> bool {
        self.pid.map_or(true, |want| want == pid)
            && self.comm.as_deref().map_or(true, |c| glob_match(c, cmdlines.comm(pid)))
            && p.ids.as_ref().map_or(true, |ids| ids.get(ev.id as usize) == Some(&true))
            && (p.own.is_empty() || !p.mine(ev, payload, endian, pid))
    }
}

/// Does pattern `g` (`SYS:EVENT` or `EVENT`, globs) take `ev`?
fn takes(g: &str, ev: &EventFormat) -> bool {
    glob_match(g, &ev.name) || glob_match(g, &format!("{}:{}", ev.system, ev.name))
}

impl Prepared {
    /// Did trbox write the record, or is it a scheduler event about one of
    /// its threads?
    fn mine(&self, ev: &EventFormat, payload: &[u8], endian: Endian, pid: i32) -> bool {
        self.own.contains(&pid)
            || self
                .about
                .iter()
                .find(|a| a.0 == ev.id)
                .and_then(|a| a.1.int(payload, endian))
                .is_some_and(|task| self.own.iter().any(|&t| i64::from(t) == task))
    }
}

/// Options of a raw read: what to keep, how to follow and print. The
/// default drains every CPU's records once, as text, unfiltered; name the
/// fields that differ (`RawOpts { follow: true, ..Default::default() }`).
#[derive(Clone, Default)]
pub(crate) struct RawOpts {
    /// Only these CPUs' pages; `None`: every CPU.
    pub(crate) only: Option<Vec<u32>>,
    /// Which records to keep.
    pub(crate) filter: Filter,
    /// Keep reading a live buffer as it fills, until a stop (Ctrl-C, the
    /// limit, the caller's [`Stop`](crate::sys::stop::Stop)).
    pub(crate) follow: bool,
    /// The printer writes one JSON object per record instead of text.
    pub(crate) json: bool,
    /// Stop following after this long.
    pub(crate) limit: Option<Duration>,
    /// Skip records older than this trace-clock time (what was in the
    /// buffer before this run started).
    pub(crate) since: Option<u64>,
    /// Threads that render a drained buffer; `None`: one per CPU this
    /// process may run on.
    pub(crate) threads: Option<usize>,
    /// What a live reader of a few events of its own needs.
    pub(crate) reading: Reading,
    /// Read as of this kernel release (`--kernel`, e.g. `4.19`): its text
    /// rules, whatever the trace's uname, UNAME option or formats say.
    pub(crate) kernel: Option<String>,
}

/// What a live reader of a few events of its own needs of the tracefs.
#[derive(Clone, Copy, Default)]
pub(crate) struct Reading {
    /// Only these event systems' formats (and ftrace's) are read: see
    /// `sys::trace::open_tree_with`. A record of another is an unknown id.
    pub(crate) systems: Option<&'static [&'static str]>,
    /// Without `systems`: only the systems that have an enabled event when
    /// the buffer is opened ([`Tracefs::enabled_systems`]) and ftrace's. A
    /// window of a run's own records nothing else, and the tracefs of a
    /// kernel with syscall events has some 2,000 formats (a minute's
    /// reading on a loaded TCG armv7 board, longer than the command it
    /// traced). An event someone else enables during the window is an
    /// unknown id.
    ///
    /// [`Tracefs::enabled_systems`]: crate::sys::Tracefs::enabled_systems
    pub(crate) enabled: bool,
    /// Follow at this pace: the buffer read once per `pace`, by the
    /// decoder, with no read-ahead threads. For a slow writer (a latency
    /// tracer's entries, ~80 KB/s per CPU at a 1 ms period) whose reader
    /// must disturb the measured CPUs least: each read of a page the
    /// kernel is still writing copies its records with interrupts off.
    pub(crate) pace: Option<Duration>,
}
