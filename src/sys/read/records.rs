//! A read's records ([`Records`]): the per-CPU page streams and the one
//! merge loop over them ([`Records::step`]), in time order across CPUs and
//! buffers. A [`Reader`](super::Reader) pulls its entries through it (as
//! `Entry`s: reader.rs), and so do the applets' sinks (the text printer,
//! the collectors): a read that follows the live buffer waits for data,
//! names new tasks and ends at the stop here too.

use super::out::Out;
use crate::merge::{Merger, Pick};
use crate::render::{Cmdlines, CommonFields};
use crate::sys::error::Error;
use crate::sys::pages::{wait_for_data, CpuPages};
use crate::sys::stop::Stop;
use crate::sys::Tracefs;
use std::io::Write as _;
use std::time::{Duration, Instant};

/// poll() readiness on trace_pipe_raw follows `buffer_percent`: a trickle
/// below it is still looked for this often.
const WAIT_TICK: Duration = Duration::from_millis(250);

/// The records' side of a read: the page streams and their merge.
pub(crate) struct Records {
    pub(super) streams: Vec<CpuPages>,
    pub(super) merger: Merger,
    /// Where the common fields are (alike in every format of a kernel).
    pub(super) common: Option<CommonFields>,
    /// The trace clock at which the read ends: a live read's start (a
    /// [`Reader`](super::Reader) of the live buffer), or a followed read's
    /// stop. Tracing is still on then, and reading the buffer can itself
    /// make events (a syscall event of read(), a sched_switch): without a
    /// bound, draining what its own reads cause never ends.
    pub(super) until: Option<u64>,
    /// The live tree, while a read of it follows: its comms now and then,
    /// its clock at the stop.
    pub(super) tree: Option<Tracefs>,
    pace: Pace,
}

/// How a followed read paces itself.
struct Pace {
    /// When the read began, for its time limit.
    start: Instant,
    /// The read's time limit (`-t`).
    limit: Option<Duration>,
    /// Longest wait for data (`Reading::pace`; else [`WAIT_TICK`]).
    tick: Duration,
    /// Steps taken, and when the comms were last read.
    turns: u32,
    comms_at: Instant,
    /// A wait for data ended: what is ready is read before the merge
    /// waits on the pending streams again.
    ready: bool,
}

/// What the merge loop does next.
pub(super) enum Step {
    /// Take the next item of this stream: it comes next in time.
    Take(usize),
    /// New tasks appeared while following: their comms, for the sink.
    Comms(Cmdlines),
    /// The read is over.
    End,
}

impl Records {
    pub(super) fn new(streams: Vec<CpuPages>, common: Option<CommonFields>) -> Records {
        let now = Instant::now();
        Records {
            merger: Merger::new(streams.len()),
            streams,
            common,
            until: None,
            tree: None,
            pace: Pace { start: now, limit: None, tick: WAIT_TICK, turns: 0, comms_at: now, ready: false },
        }
    }

    /// A followed read begins now: it ends after `limit`, and waits for
    /// data at most `tick` at a time. The session was opened with the
    /// comms just now: the first look for new ones waits.
    pub(super) fn pace(&mut self, limit: Option<Duration>, tick: Option<Duration>) {
        let now = Instant::now();
        self.pace = Pace { start: now, limit, tick: tick.unwrap_or(WAIT_TICK), turns: 0, comms_at: now, ready: false };
    }

    fn stopping(&self, stop: &Stop<'_>) -> bool {
        stop.asked() || self.pace.limit.is_some_and(|l| self.pace.start.elapsed() >= l)
    }

    /// The live tree's comms, when it is followed: at the end of a read,
    /// the names of tasks born late in the window (a command's exec just
    /// before it ended), for a sink that names them after the read.
    pub(super) fn comms(&self) -> Option<Cmdlines> {
        match self.tree.as_ref().map(|t| t.read_top_opt("saved_cmdlines")) {
            Some(Ok(Some(text))) => Some(Cmdlines::parse(&text)),
            _ => None,
        }
    }

    /// The merge loop, one step: drain (or follow until `stop`, or the
    /// time limit), in timestamp order. `out`, the sink's output, is
    /// flushed before a wait for data, and a broken one ends the read.
    pub(super) fn step(&mut self, stop: &Stop<'_>, mut out: Option<&mut Out>) -> Step {
        let broken = |out: &Option<&mut Out>| out.as_ref().is_some_and(|o| o.broken());
        loop {
            if self.pace.ready {
                // An idle CPU must not hold the others back for ever. What
                // is ready can grow as fast as it is read (events of our
                // own reads): a stop must still get through.
                if !self.stopping(stop) && !broken(&out) {
                    if let Pick::Cpu(i) = self.merger.next_ready(&mut self.streams) {
                        return Step::Take(i);
                    }
                }
                self.pace.ready = false;
            }
            // Following live, the comms are read again now and then: a
            // busy buffer may never leave the loop idle (where they are
            // read too), and tasks born in the window (a command's exec)
            // are named after the first look.
            self.pace.turns = self.pace.turns.wrapping_add(1);
            if self.pace.turns % 1024 == 1 && self.tree.is_some() && self.pace.comms_at.elapsed() >= COMMS_EVERY {
                self.pace.comms_at = Instant::now();
                if let Some(c) = self.comms() {
                    return Step::Comms(c);
                }
            }
            let stopped = self.stopping(stop);
            if broken(&out) {
                return Step::End;
            }
            if stopped && self.streams.iter().any(|s| s.follow) {
                // Ctrl-C / time limit / the command ended: read what is
                // buffered, then end.
                self.streams.iter_mut().for_each(|s| s.follow = false);
                self.until = self.tree.as_ref().and_then(Tracefs::now);
            }
            match self.merger.next(&mut self.streams) {
                Pick::Cpu(i) => {
                    if let (Some(u), Some(s)) = (self.until, self.streams.get_mut(i)) {
                        if s.peek_ts().ok().flatten().is_some_and(|ts| ts > u) {
                            // Merged order: everything left is newer still.
                            return Step::End;
                        }
                    }
                    return Step::Take(i);
                }
                Pick::End => return Step::End,
                Pick::Pending(_) => {
                    if let Some(o) = out.as_deref_mut() {
                        let _ = o.flush();
                    }
                    let p = &self.pace;
                    let left = p.limit.map_or(Duration::from_secs(3600), |l| l.saturating_sub(p.start.elapsed()));
                    wait_for_data(&self.streams, stop.wake(), left.min(p.tick));
                    self.pace.ready = true;
                    // New tasks appeared meanwhile: their comms too.
                    if let Some(c) = self.comms() {
                        return Step::Comms(c);
                    }
                }
            }
        }
    }

    /// The end of the merge loop: the first read error of a stream.
    pub(super) fn end(&mut self) -> Result<(), Error> {
        for s in self.streams.iter() {
            let c = &s.counts;
            log::debug!(
                "cpu{}: {} pages, {} records, {} damaged, {} with bad times, {} cut off, {} lost (+{} pages with \
                 an unknown loss)",
                s.cpu,
                c.pages,
                c.records,
                c.damaged,
                c.bad_time,
                c.truncated,
                c.lost,
                c.lost_unknown
            );
        }
        match self.streams.iter_mut().find_map(|s| s.error.take()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The stream whose item comes next in a read that does not follow
    /// (a file, a copy, a drained buffer); `None` at the end.
    pub(super) fn pick(&mut self) -> Option<usize> {
        loop {
            match self.step(&Stop::never(), None) {
                Step::Take(i) => return Some(i),
                // Only a followed read names new tasks.
                Step::Comms(_) => {}
                Step::End => return None,
            }
        }
    }
}

/// How often a followed read looks for new tasks' comms while busy.
const COMMS_EVERY: Duration = Duration::from_millis(100);
