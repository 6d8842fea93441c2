//! tr-lat's `syscall` mode: `raw_syscalls:sys_enter` → `sys_exit` of the
//! same task, per system call number (`id`) and per task; where the
//! kernel has the per-call events (`syscalls:sys_enter_openat`,
//! CONFIG_FTRACE_SYSCALLS) they are read instead, for the same numbers
//! and the calls' names.

use alloc::string::String;

use super::{find, Ev, Missing, Rec, Rows, Sample, Table, VecMap, MAX_OPEN};
use crate::format::EventTable;

/// The raw events, left out where the per-call events are.
pub(super) const ENTER: &str = "raw_syscalls:sys_enter";
pub(super) const EXIT: &str = "raw_syscalls:sys_exit";

/// The system of the per-call syscall events (`syscalls:sys_enter_openat`).
pub(crate) const SYSCALL_EVENTS: &str = "syscalls";

/// The fields read: sys_enter's `id` and sys_exit's `id` and `ret`, or the
/// per-call events' `__syscall_nr` (and `ret`); their indexes in [`Ev`].
const RAW_ENTER_FIELDS: &[&str] = &["id"];
const RAW_EXIT_FIELDS: &[&str] = &["id", "ret"];
const CALL_ENTER_FIELDS: &[&str] = &["__syscall_nr"];
const CALL_EXIT_FIELDS: &[&str] = &["__syscall_nr", "ret"];
const NR: usize = 0;
const RET: usize = 1;

/// A per-call syscall event: its call's name (`openat`), whether it is the
/// enter or the exit, and its fields.
struct CallEv {
    name: String,
    enter: bool,
    ev: Ev,
}

/// The syscall mode's events and open calls.
pub(super) struct Syscall {
    enter: Option<Ev>,
    exit: Option<Ev>,
    /// The per-call events by ID, where the kernel has them.
    calls: VecMap<u32, CallEv>,
    /// pid → (number, enter time).
    pub(super) open: VecMap<i64, (i64, u64)>,
}

impl Syscall {
    pub(super) fn new(events: &EventTable) -> Result<Syscall, Missing> {
        let mut calls = VecMap::new();
        for ev in events.iter().filter(|e| e.system == SYSCALL_EVENTS) {
            let (enter, name) = match (ev.name.strip_prefix("sys_enter_"), ev.name.strip_prefix("sys_exit_")) {
                (Some(n), _) => (true, n),
                (_, Some(n)) => (false, n),
                _ => continue,
            };
            let fields = if enter { CALL_ENTER_FIELDS } else { CALL_EXIT_FIELDS };
            if let Ok(e) = Ev::of(ev, fields) {
                calls.insert(ev.id, CallEv { name: String::from(name), enter, ev: e });
            }
        }
        // raw_syscalls may be left out where the per-call events are.
        let optional = !calls.is_empty();
        Ok(Syscall {
            enter: find(events, ENTER, RAW_ENTER_FIELDS, optional)?,
            exit: find(events, EXIT, RAW_EXIT_FIELDS, optional)?,
            calls,
            open: VecMap::new(),
        })
    }

    /// Feed one record; `unpaired` counts the enters and exits without
    /// their other half.
    pub(super) fn record(&mut self, rows: &mut Rows, unpaired: &mut u64, r: &Rec) -> Option<Sample> {
        if let Some(c) = self.calls.get(&r.id) {
            let (nr, pid) = (r.int(&c.ev, NR)?, r.pid(&c.ev));
            if c.enter {
                return self.open_call(unpaired, pid, nr, r.ts);
            }
            // The call's name goes into its row once, not with every exit.
            let (ret, name) = (r.int(&c.ev, RET)?, (!rows.named(Table::Syscall, nr)).then(|| c.name.clone()));
            return self.close_call(rows, unpaired, pid, nr, ret, name.as_deref(), r);
        }
        if let Some(ev) = self.enter.as_ref().filter(|ev| ev.id == r.id) {
            let (nr, pid) = (r.int(ev, NR)?, r.pid(ev));
            self.open_call(unpaired, pid, nr, r.ts)
        } else if let Some(ev) = self.exit.as_ref().filter(|ev| ev.id == r.id) {
            let (nr, pid, ret) = (r.int(ev, NR)?, r.pid(ev), r.int(ev, RET)?);
            self.close_call(rows, unpaired, pid, nr, ret, None, r)
        } else {
            None
        }
    }

    fn open_call(&mut self, unpaired: &mut u64, pid: i64, nr: i64, ts: u64) -> Option<Sample> {
        if (self.open.len() < MAX_OPEN || self.open.contains_key(&pid)) && self.open.insert(pid, (nr, ts)).is_some() {
            *unpaired += 1;
        }
        None
    }

    /// A call's end: its duration, and a failure where it returned an
    /// error (a negative errno, as strace -c counts them).
    #[allow(clippy::too_many_arguments)]
    fn close_call(
        &mut self,
        rows: &mut Rows,
        unpaired: &mut u64,
        pid: i64,
        nr: i64,
        ret: i64,
        name: Option<&str>,
        r: &Rec,
    ) -> Option<Sample> {
        match self.open.remove(&pid) {
            Some((m, begin)) if m == nr => {
                let s = r.sample(Table::Syscall, nr, begin);
                let row = rows.add(Table::Syscall, nr, name, s.ns);
                // -MAX_ERRNO..0 is an error (include/linux/err.h IS_ERR_VALUE).
                if (-4095..0).contains(&ret) {
                    row.stat.errors += 1;
                }
                rows.add(Table::SyscallTask, pid, None, s.ns);
                Some(s)
            }
            _ => {
                *unpaired += 1;
                None
            }
        }
    }
}
