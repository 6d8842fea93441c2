//! tr-lat's `wakeup` mode: from `sched_waking` (else `sched_wakeup`) of a
//! task to the `sched_switch` whose `next_pid` is that task, per task and
//! per priority class (the kernel's `prio`: -1 deadline, 0..99 real-time,
//! 100..139 normal); `sched_process_fork` follows the children of the
//! tasks a run is limited to.

use super::{class, find, require, Ev, Missing, Rec, Rows, Sample, Table, VecMap, MAX_OPEN};
use crate::format::EventTable;

/// The events, the first of a `|` pair preferred (sched_waking is 4.3+).
pub(super) const WAKING: &str = "sched:sched_waking|sched:sched_wakeup";
pub(super) const SWITCH: &str = "sched:sched_switch";
pub(super) const FORK: &str = "?sched:sched_process_fork";

/// sched_waking's fields read, and their indexes in [`Ev`].
const WAKING_FIELDS: &[&str] = &["pid", "prio", "comm"];
const PID: usize = 0;
const PRIO: usize = 1;
/// sched_switch's fields read.
const SWITCH_FIELDS: &[&str] = &["next_pid", "next_prio", "next_comm", "prev_pid"];
const NEXT_PID: usize = 0;
const NEXT_PRIO: usize = 1;
const NEXT_COMM: usize = 2;
const PREV_PID: usize = 3;
/// sched_process_fork's fields read.
const FORK_FIELDS: &[&str] = &["parent_pid", "child_pid"];
const PARENT_PID: usize = 0;
const CHILD_PID: usize = 1;

/// The wakeup mode's events and open wakings.
pub(super) struct Wakeup {
    waking: Ev,
    switch: Ev,
    fork: Option<Ev>,
    /// Real-time (and deadline) tasks only.
    rt_only: bool,
    /// Only wakeups of these tasks (and their children), when set.
    pub(super) only: Option<VecMap<i64, ()>>,
    /// Never wakeups of these tasks (the measuring tool's own).
    pub(super) left_out: VecMap<i64, ()>,
    /// pid → (prio, waking time).
    pub(super) open: VecMap<i64, (i64, u64)>,
}

impl Wakeup {
    pub(super) fn new(events: &EventTable, rt_only: bool) -> Result<Wakeup, Missing> {
        Ok(Wakeup {
            waking: require(events, WAKING, WAKING_FIELDS)?,
            switch: require(events, SWITCH, SWITCH_FIELDS)?,
            fork: find(events, FORK, FORK_FIELDS, false)?,
            rt_only,
            only: None,
            left_out: VecMap::new(),
            open: VecMap::new(),
        })
    }

    /// Feed one record; `no_switch` counts the wakings that no switch to
    /// their task followed.
    pub(super) fn record(&mut self, rows: &mut Rows, no_switch: &mut u64, r: &Rec) -> Option<Sample> {
        if r.id == self.waking.id {
            let ev = &self.waking;
            let pid = r.int(ev, PID)?;
            let prio = r.int(ev, PRIO)?;
            if pid == 0
                || (self.rt_only && prio >= 100)
                || self.only.as_ref().is_some_and(|o| !o.contains_key(&pid))
                || self.left_out.contains_key(&pid)
            {
                return None;
            }
            // The newest waking counts. The kernel writes sched_waking
            // only for a task whose state matches the wakeup (not
            // TASK_RUNNING: try_to_wake_up's ttwu_state_match), and the
            // wakeup makes it TASK_RUNNING: a second waking means the
            // task ran in between, so the first one's switch was not
            // seen (or never came: woken before it left the CPU,
            // ttwu_runnable). Kept, the first would pair with a switch
            // much later: second-long false maxima (issue 26).
            if (self.open.len() < MAX_OPEN || self.open.contains_key(&pid))
                && self.open.insert(pid, (prio, r.ts)).is_some()
            {
                *no_switch += 1;
            }
            None
        } else if r.id == self.switch.id {
            let ev = &self.switch;
            // A switch away from a task with an open waking: it ran, so
            // the switch to it was not seen (or none was needed).
            if let Some(prev) = r.int(ev, PREV_PID).filter(|&prev| prev != 0) {
                if self.open.remove(&prev).is_some() {
                    *no_switch += 1;
                }
            }
            let pid = r.int(ev, NEXT_PID)?;
            let (_, begin) = self.open.remove(&pid)?;
            let prio = r.int(ev, NEXT_PRIO)?;
            let name = r.text(ev, NEXT_COMM);
            let s = r.sample(Table::Task, pid, begin);
            rows.add(Table::Task, pid, Some(&name), s.ns);
            rows.add(Table::Class, class(prio), None, s.ns);
            Some(s)
        } else {
            let ev = self.fork.as_ref().filter(|f| f.id == r.id)?;
            let (parent, child) = (r.int(ev, PARENT_PID)?, r.int(ev, CHILD_PID)?);
            if let Some(o) = self.only.as_mut().filter(|o| o.contains_key(&parent) && o.len() < MAX_OPEN) {
                o.insert(child, ());
            }
            None
        }
    }
}
