//! Latency statistics (sans-IO), for `tr-lat`: records in merged order go
//! in, per-key accumulators (count, min, avg, max, sum, and a histogram
//! with an overflow row) come out; printing is a separate pass (table,
//! histogram or JSON), as rtla keeps its measurement apart from its display.
//!
//! What is measured is one file per mode (or family of modes):
//! `wakeup` (sched_waking → sched_switch), `irq` (hard IRQ and softirq
//! handlers), `syscall` (sys_enter → sys_exit), and `tracers` (the
//! timerlat, osnoise and hwlat tracers' own entries). `stat` holds the
//! accumulators they fill, `report` prints them, and `aa` is
//! timerlat's auto-analysis. This file maps a mode's events and hands each
//! record to its mode.
//!
//! Every field is read through the event's format file, never at a fixed
//! offset. A begin whose end is lost (or an end without a begin) is counted
//! as unpaired, never guessed; a loss on the ring buffer forgets every open
//! begin, since its end may be among the lost records.

use alloc::borrow::Cow;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use crate::abi::Endian;
use crate::format::{EventFormat, EventTable, Field, FieldKind};
use crate::render::CommonFields;

pub(crate) mod aa;
mod irq;
mod report;
mod stat;
mod syscall;
mod tracers;
mod wakeup;

pub(crate) use crate::vecmap::VecMap;
pub(crate) use report::{
    write_hists, write_json, write_max_json, write_problems_json, write_sample, write_tables, Unit, TOP,
};
pub(crate) use stat::{Noise, Row, Stat, MAX_ENTRIES};
pub(crate) use stat::{Rows, MAX_OPEN};
pub(crate) use syscall::SYSCALL_EVENTS;

/// What a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// From a task's wakeup (`sched_waking`) to the switch to it.
    Wakeup,
    /// Hard and soft interrupt handler durations.
    Irq,
    /// System call durations (`raw_syscalls` or per-call events).
    Syscall,
    /// The timerlat tracer's IRQ and thread latencies.
    Timerlat,
    /// The osnoise tracer's noise per period.
    Osnoise,
    /// The hwlat tracer's samples (time the CPU was away, seen from a
    /// busy loop with interrupts off).
    Hwlat,
}

impl Mode {
    /// The mode a `tr-lat` argument names (`wakeup`, `irq`, `syscall`,
    /// `timerlat`, `osnoise`, `hwlat`).
    pub(crate) fn parse(s: &str) -> Option<Mode> {
        Some(match s {
            "wakeup" => Mode::Wakeup,
            "irq" => Mode::Irq,
            "syscall" => Mode::Syscall,
            "timerlat" => Mode::Timerlat,
            "osnoise" => Mode::Osnoise,
            "hwlat" => Mode::Hwlat,
            _ => return None,
        })
    }

    /// The events a mode reads (`sys:event`); the first of a `|` pair is
    /// preferred. Optional ones (softirqs) start with `?`.
    pub(crate) fn events(self) -> &'static [&'static str] {
        match self {
            Mode::Wakeup => &[wakeup::WAKING, wakeup::SWITCH, wakeup::FORK],
            Mode::Irq => &[irq::ENTRY, irq::EXIT, irq::SOFT_ENTRY, irq::SOFT_EXIT],
            Mode::Syscall => &[syscall::ENTER, syscall::EXIT],
            Mode::Timerlat => &[tracers::TIMERLAT],
            Mode::Osnoise => &[tracers::OSNOISE, tracers::SAMPLE_THRESHOLD],
            Mode::Hwlat => &[tracers::HWLAT],
        }
    }

    /// The event systems a run reads: those of [`events`](Self::events)
    /// (ftrace's always), and osnoise's noise events that a stop threshold
    /// enables for its report.
    pub(crate) fn systems(self) -> &'static [&'static str] {
        match self {
            Mode::Wakeup => &["sched"],
            Mode::Irq => &["irq"],
            Mode::Syscall => &["raw_syscalls", SYSCALL_EVENTS],
            Mode::Timerlat | Mode::Osnoise => &["osnoise"],
            Mode::Hwlat => &[],
        }
    }
}
/// Which table a row is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Table {
    /// Wakeup latency per task (key: pid).
    Task,
    /// Wakeup latency per priority class (key: [`class`]).
    Class,
    /// Hard IRQ handler duration (key: IRQ number).
    HardIrq,
    /// Softirq duration (key: vector).
    SoftIrq,
    /// System call duration (key: number).
    Syscall,
    /// System call duration per task (key: pid).
    SyscallTask,
    /// timerlat, per CPU: IRQ, thread and user-return latency.
    TimerIrq,
    /// timerlat, per CPU: the latency seen by the timerlat thread.
    TimerThread,
    /// timerlat, per CPU: the latency seen by a user-space timerlat task
    /// on its return to user space.
    TimerUser,
    /// osnoise, per CPU: the noise of each period.
    Noise,
    /// osnoise, per CPU: single noises over the threshold (the
    /// `osnoise:sample_threshold` event, when enabled).
    Single,
    /// hwlat, per CPU: the inner sample, the gap between two consecutive
    /// clock reads (kernel/trace/trace_hwlat.c `get_sample()`).
    HwInner,
    /// hwlat, per CPU: the outer sample, from one pair of reads to the
    /// next.
    HwOuter,
}

impl Table {
    /// A short name (JSON `table`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Table::Task => "task",
            Table::Class => "class",
            Table::HardIrq => "irq",
            Table::SoftIrq => "softirq",
            Table::Syscall => "syscall",
            Table::SyscallTask => "syscall_task",
            Table::TimerIrq => "timerlat_irq",
            Table::TimerThread => "timerlat_thread",
            Table::TimerUser => "timerlat_user",
            Table::Noise => "osnoise",
            Table::Single => "osnoise_single",
            Table::HwInner => "hwlat_inner",
            Table::HwOuter => "hwlat_outer",
        }
    }

    /// The table's title line (without the unit) and its key column.
    pub(crate) fn title(self) -> (&'static str, &'static str) {
        match self {
            Table::Task => ("wakeup latency per task (sched_waking -> sched_switch)", "TASK-PID"),
            Table::Class => ("wakeup latency per priority class", "CLASS"),
            Table::HardIrq => ("hard IRQ handler duration (irq_handler_entry -> exit)", "IRQ"),
            Table::SoftIrq => ("softirq duration (softirq_entry -> exit)", "SOFTIRQ"),
            Table::Syscall => ("system call duration (sys_enter -> sys_exit)", "SYSCALL"),
            Table::SyscallTask => ("system call duration per task", "TASK-PID"),
            Table::TimerIrq => ("timerlat IRQ latency per CPU", "CPU"),
            Table::TimerThread => ("timerlat thread latency per CPU", "CPU"),
            Table::TimerUser => ("timerlat user-return latency per CPU", "CPU"),
            Table::Noise => ("osnoise: noise per period, per CPU", "CPU"),
            Table::Single => ("osnoise: single noise over the threshold (sample_threshold), per CPU", "CPU"),
            Table::HwInner => ("hwlat: inner-loop samples per CPU", "CPU"),
            Table::HwOuter => ("hwlat: outer-loop samples per CPU", "CPU"),
        }
    }
}

/// The priority class of a kernel `prio`: 0 deadline, 1 real-time, 2 normal.
pub(crate) fn class(prio: i64) -> i64 {
    match prio {
        i64::MIN..=-1 => 0,
        0..=99 => 1,
        _ => 2,
    }
}

pub(crate) const CLASSES: [&str; 3] = ["deadline", "rt", "normal"];

/// The kernel's softirq vector names (include/linux/interrupt.h; IRQ_POLL
/// was BLOCK_IOPOLL before 4.5).
pub(crate) const SOFTIRQS: [&str; 10] =
    ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"];
/// One measured latency, for `--samples`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sample {
    /// What was measured (the table its row is in).
    pub(crate) table: Table,
    pub(crate) key: i64,
    pub(crate) cpu: u32,
    /// Trace-clock time of the begin (the timerlat/osnoise entry itself
    /// for those modes) and the end.
    pub(crate) begin: u64,
    /// Trace-clock time of the end.
    pub(crate) end: u64,
    /// The latency, in nanoseconds.
    pub(crate) ns: u64,
}

/// One event a mode reads: its id and the fields it needs, in the order of
/// the mode's `*_FIELDS` list (read by the named indexes beside it).
#[derive(Debug, Clone)]
struct Ev {
    id: u32,
    fields: Vec<Field>,
    common: CommonFields,
}

impl Ev {
    fn of(ev: &EventFormat, names: &[&str]) -> Result<Ev, Missing> {
        let mut fields = Vec::new();
        for n in names {
            let f = ev
                .field(n)
                .ok_or_else(|| Missing::Field(alloc::format!("{}:{}", ev.system, ev.name), n.to_string()))?;
            fields.push(f.clone());
        }
        Ok(Ev { id: ev.id, fields, common: CommonFields::of(ev) })
    }

    fn int(&self, i: usize, p: &[u8], e: Endian) -> Option<i64> {
        self.fields.get(i)?.int(p, e)
    }

    /// Field `i` as text, borrowed from the record where it is UTF-8 (a
    /// name per record must not cost an allocation).
    fn text<'p>(&self, i: usize, p: &'p [u8], e: Endian) -> Cow<'p, str> {
        let b = match self.fields.get(i) {
            Some(f) if !matches!(f.kind, FieldKind::Scalar) => f.bytes(p, e).unwrap_or(&[]),
            _ => &[],
        };
        String::from_utf8_lossy(b.split(|&c| c == 0).next().unwrap_or(&[]))
    }
}

/// `s = v`, in `s`'s own buffer when it differs.
pub(crate) fn set(s: &mut String, v: &str) {
    if s != v {
        s.clear();
        s.push_str(v);
    }
}

/// What the event table lacks for a mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Missing {
    /// None of these events (`sys:event`, `|`-separated alternatives).
    Event(String),
    /// This event has no field of this name.
    Field(String, String),
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Missing::Event(e) => write!(f, "no {} event", e.replace('|', " or ")),
            Missing::Field(e, n) => write!(f, "{e} has no field '{n}'"),
        }
    }
}

/// One record as a mode reads it: its event's id, its CPU, its
/// trace-clock time and its bytes.
struct Rec<'p> {
    id: u32,
    cpu: u32,
    ts: u64,
    p: &'p [u8],
    e: Endian,
}

impl<'p> Rec<'p> {
    /// Field `i` of `ev` as a number.
    fn int(&self, ev: &Ev, i: usize) -> Option<i64> {
        ev.int(i, self.p, self.e)
    }

    /// Field `i` of `ev` as text.
    fn text(&self, ev: &Ev, i: usize) -> Cow<'p, str> {
        ev.text(i, self.p, self.e)
    }

    /// The task that wrote the record (`common_pid`).
    fn pid(&self, ev: &Ev) -> i64 {
        i64::from(ev.common.read(self.e, self.p).2)
    }

    /// The latency from `begin` to this record.
    fn sample(&self, table: Table, key: i64, begin: u64) -> Sample {
        Sample { table, key, cpu: self.cpu, begin, end: self.ts, ns: self.ts.saturating_sub(begin) }
    }

    /// A latency a tracer measured, reported in this entry, kept per CPU.
    fn entry(&self, table: Table, ns: u64) -> Sample {
        Sample { table, key: i64::from(self.cpu), cpu: self.cpu, begin: self.ts, end: self.ts, ns }
    }
}

/// The first event of `spec` (`sys:event`, `|`-separated alternatives, the
/// first preferred) that `events` has, with `fields` mapped. An event
/// absent is `None` when it is `optional` or `spec` starts with `?`, else
/// an error.
fn find(events: &EventTable, spec: &str, fields: &[&str], optional: bool) -> Result<Option<Ev>, Missing> {
    let (optional, spec) = match spec.strip_prefix('?') {
        Some(s) => (true, s),
        None => (optional, spec),
    };
    match spec.split('|').find_map(|n| events.by_name(n)) {
        Some(ev) => Ev::of(ev, fields).map(Some),
        None if optional => Ok(None),
        None => Err(Missing::Event(spec.to_string())),
    }
}

/// [`find`] for an event the mode cannot do without.
fn require(events: &EventTable, spec: &str, fields: &[&str]) -> Result<Ev, Missing> {
    find(events, spec, fields, false)?.ok_or_else(|| Missing::Event(spec.to_string()))
}

/// A mode's events and what it keeps open between records.
enum State {
    Wakeup(wakeup::Wakeup),
    Irq(irq::Irq),
    Syscall(syscall::Syscall),
    Timerlat(tracers::Timerlat),
    Osnoise(tracers::Osnoise),
    Hwlat(tracers::Hwlat),
}

/// The accumulators of one run.
pub(crate) struct Lat {
    pub(crate) mode: Mode,
    endian: Endian,
    state: State,
    pub(crate) rows: Rows,
    /// Ends without their begin, and begins forgotten at a loss.
    pub(crate) unpaired: u64,
    /// wakeup: wakings that no switch to their task followed (the task ran
    /// before one was seen, or was woken again): not latencies.
    pub(crate) no_switch: u64,
    /// Lost-events marks met ([`Lat::lose`]): the counts may miss
    /// latencies around each.
    pub(crate) lost: u64,
    /// timerlat: the samples the kernel took while we read, by their
    /// seqnums (every timer IRQ takes the next one, recorded or not).
    pub(crate) taken: u64,
}

impl Lat {
    /// Map the mode's events of `events` once. `hist`: (bucket width in ns,
    /// entries) to keep histograms.
    pub(crate) fn new(
        mode: Mode,
        events: &EventTable,
        endian: Endian,
        rt_only: bool,
        hist: Option<(u64, usize)>,
    ) -> Result<Lat, Missing> {
        let state = match mode {
            Mode::Wakeup => State::Wakeup(wakeup::Wakeup::new(events, rt_only)?),
            Mode::Irq => State::Irq(irq::Irq::new(events)?),
            Mode::Syscall => State::Syscall(syscall::Syscall::new(events)?),
            Mode::Timerlat => State::Timerlat(tracers::Timerlat::new(events)?),
            Mode::Osnoise => State::Osnoise(tracers::Osnoise::new(events)?),
            Mode::Hwlat => State::Hwlat(tracers::Hwlat::new(events)?),
        };
        Ok(Lat { mode, endian, state, rows: Rows::new(hist), unpaired: 0, no_switch: 0, lost: 0, taken: 0 })
    }

    /// wakeup: measure only these tasks and the children they fork. (The
    /// kernel's pid filter lets through what a filtered task does, and a
    /// filtered task wakes others: `sched_waking` is written when either
    /// the waker or the wakee is in `set_event_pid`.)
    pub(crate) fn only(&mut self, pids: &[i64]) {
        if let State::Wakeup(w) = &mut self.state {
            let mut o = VecMap::new();
            for &p in pids {
                o.insert(p, ());
            }
            w.only = Some(o);
        }
    }

    /// wakeup: never measure these tasks (trbox's own threads: the
    /// kernel records their wakings when the waker is traced).
    pub(crate) fn leave_out(&mut self, pids: &[i64]) {
        if let State::Wakeup(w) = &mut self.state {
            for &p in pids {
                w.left_out.insert(p, ());
            }
        }
    }

    /// wakeup: the wakings that no switch to their task followed, those
    /// still waiting at the end included.
    pub(crate) fn wakings_without_switch(&self) -> u64 {
        match &self.state {
            State::Wakeup(w) => self.no_switch + w.open.len() as u64,
            _ => 0,
        }
    }

    /// Events were lost on a CPU: forget every open begin (its end may be
    /// among them).
    pub(crate) fn lose(&mut self) {
        self.lost += 1;
        self.unpaired += match &mut self.state {
            State::Wakeup(w) => w.open.take_all(),
            State::Syscall(s) => s.open.take_all(),
            State::Irq(i) => i.forget(),
            State::Timerlat(_) | State::Osnoise(_) | State::Hwlat(_) => 0,
        };
    }

    /// Feed one record (any event) of `cpu` at trace-clock time `ts`;
    /// returns the latency it completed, if any.
    pub(crate) fn record(&mut self, cpu: u32, ts: u64, p: &[u8]) -> Option<Sample> {
        let e = self.endian;
        let r = Rec { id: u32::from(e.uint(p, 0, 2)? as u16), cpu, ts, p, e };
        let rows = &mut self.rows;
        match &mut self.state {
            State::Wakeup(w) => w.record(rows, &mut self.no_switch, &r),
            State::Irq(i) => i.record(rows, &mut self.unpaired, &r),
            State::Syscall(s) => s.record(rows, &mut self.unpaired, &r),
            State::Timerlat(t) => t.record(rows, &mut self.taken, &r),
            State::Osnoise(o) => o.record(rows, &r),
            State::Hwlat(h) => h.record(rows, &r),
        }
    }

    /// osnoise: the tracer's totals per CPU.
    pub(crate) fn noise(&self) -> Option<&VecMap<u32, Noise>> {
        match &self.state {
            State::Osnoise(o) => Some(&o.noise),
            _ => None,
        }
    }

    /// The rows, by table then key.
    pub(crate) fn rows(&self) -> impl Iterator<Item = (Table, i64, &Row)> {
        self.rows.iter()
    }

    /// timerlat: the IRQ entries read, against [`Lat::taken`].
    pub(crate) fn timer_irqs(&self) -> u64 {
        self.rows().filter(|(t, _, _)| *t == Table::TimerIrq).map(|(_, _, r)| r.stat.count).sum()
    }

    /// Latencies measured: the rows of the mode's own tables (for irq both
    /// hard and soft, for timerlat every context; not wakeup's per class or
    /// syscall's per task, which count the same latencies again).
    pub(crate) fn measured(&self) -> u64 {
        let tables: &[Table] = match self.mode {
            Mode::Wakeup => &[Table::Task],
            Mode::Irq => &[Table::HardIrq, Table::SoftIrq],
            Mode::Syscall => &[Table::Syscall],
            Mode::Timerlat => &[Table::TimerIrq, Table::TimerThread, Table::TimerUser],
            Mode::Osnoise => &[Table::Noise],
            Mode::Hwlat => &[Table::HwInner],
        };
        self.rows().filter(|(t, _, _)| tables.contains(t)).map(|(_, _, r)| r.stat.count).sum()
    }

    /// The row with the largest maximum of `table`, if any.
    #[cfg(test)]
    pub(crate) fn worst(&self, table: Table) -> Option<(i64, &Row)> {
        self.rows().filter(|(t, _, _)| *t == table).max_by_key(|(_, _, r)| r.stat.max).map(|(_, k, r)| (k, r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::Cmdlines;

    use crate::format::EventFormat;

    const WAKING: &str = concat!("name: sched_waking\nID: 5\nformat:\n", crate::format::common_fields!(), "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n\nprint fmt: \"x\"\n");
    const SWITCH: &str = concat!("name: sched_switch\nID: 6\nformat:\n", crate::format::common_fields!(), "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\nprint fmt: \"x\"\n");
    const TIMERLAT: &str = concat!("name: timerlat\nID: 18\nformat:\n", crate::format::common_fields!(), "\tfield:unsigned int seqnum;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:int context;\toffset:12;\tsize:4;\tsigned:1;\n\tfield:u64 timer_latency;\toffset:16;\tsize:8;\tsigned:0;\n\nprint fmt: \"x\"\n");

    fn table(texts: &[(&str, &str)]) -> EventTable {
        let mut t = EventTable::new();
        for (sys, text) in texts {
            t.insert(EventFormat::parse(text, sys, 8).unwrap());
        }
        t
    }

    fn rec(id: u16, fields: &[(usize, &[u8])], len: usize) -> Vec<u8> {
        let mut v = alloc::vec![0u8; len];
        v[..2].copy_from_slice(&id.to_le_bytes());
        for (off, b) in fields {
            v[*off..*off + b.len()].copy_from_slice(b);
        }
        v
    }

    /// Issue 26: a task woken again before a switch to it was seen, or
    /// seen running (as a switch's prev_pid) after its waking, gave
    /// second-long false maxima on an idle system: the newest waking
    /// counts, and one the task ran after is no latency.
    #[test]
    fn wakeup_pairs_the_newest_waking_and_drops_those_the_task_ran_after() {
        let t = table(&[("sched", WAKING), ("sched", SWITCH)]);
        let mut l = Lat::new(Mode::Wakeup, &t, Endian::Little, false, None).unwrap();
        let wake = |pid: i32| rec(5, &[(24, &pid.to_le_bytes()), (28, &120i32.to_le_bytes())], 36);
        let sw = |prev: i32, next: i32| {
            rec(6, &[(24, &prev.to_le_bytes()), (56, &next.to_le_bytes()), (60, &120i32.to_le_bytes())], 64)
        };
        // Woken, its switch-in missed, woken again a second later.
        l.record(0, 1_000, &wake(42));
        l.record(0, 1_000_001_000, &wake(42));
        let s = l.record(1, 1_000_003_000, &sw(0, 42)).unwrap();
        assert_eq!(s.ns, 2_000);
        // Woken while still on its CPU (no switch-in needed), then switched
        // away: that waking pairs with nothing later.
        l.record(1, 1_100_000_000, &wake(42));
        assert_eq!(l.record(1, 1_100_001_000, &sw(42, 0)), None);
        assert_eq!(l.record(0, 2_000_000_000, &sw(0, 42)), None, "no waking open");
        // Still waiting at the end.
        l.record(0, 2_100_000_000, &wake(7));
        // The measuring tool's own threads are never measured.
        l.leave_out(&[99]);
        l.record(0, 2_200_000_000, &wake(99));
        assert_eq!(l.record(0, 2_200_001_000, &sw(0, 99)), None);
        assert_eq!(l.worst(Table::Task).map(|(k, r)| (k, r.stat.max)), Some((42, 2_000)));
        assert_eq!((l.no_switch, l.wakings_without_switch()), (2, 3));
        let mut json = String::new();
        write_json(&mut json, &l, Unit { ns: true }, &Cmdlines::default()).unwrap();
        assert!(
            json.contains("{\"table\":\"uncounted\",\"wakings_without_switch\":3,\"unpaired\":0,\"losses\":0}"),
            "{json}"
        );
    }

    #[test]
    fn wakeup_pairs_a_waking_with_the_switch_in() {
        let t = table(&[("sched", WAKING), ("sched", SWITCH)]);
        let mut l = Lat::new(Mode::Wakeup, &t, Endian::Little, false, Some((1000, 4))).unwrap();
        let wake =
            |pid: i32, prio: i32| rec(5, &[(8, b"sleeper\0"), (24, &pid.to_le_bytes()), (28, &prio.to_le_bytes())], 36);
        let sw = |pid: i32, prio: i32| {
            rec(6, &[(40, b"sleeper\0"), (56, &pid.to_le_bytes()), (60, &prio.to_le_bytes())], 64)
        };
        assert_eq!(l.record(1, 1000, &wake(42, 120)), None);
        let s = l.record(1, 4500, &sw(42, 120)).unwrap();
        assert_eq!((s.ns, s.begin, s.end, s.key), (3500, 1000, 4500, 42));
        assert_eq!(l.record(1, 5000, &sw(42, 120)), None, "no second latency without a wakeup");
        l.record(0, 6000, &wake(7, 10));
        l.record(0, 6100, &sw(7, 10));
        let rows: Vec<_> = l.rows().map(|(t, k, r)| (t, k, r.stat.count, r.stat.max)).collect();
        assert_eq!(
            rows,
            alloc::vec![
                (Table::Task, 7, 1, 100),
                (Table::Task, 42, 1, 3500),
                (Table::Class, 1, 1, 100),
                (Table::Class, 2, 1, 3500)
            ]
        );
        // 30 tasks of one comm (woken once each) are one row of the table,
        // every task with --all.
        let mut many = Lat::new(Mode::Wakeup, &t, Endian::Little, false, None).unwrap();
        for pid in 100..130 {
            many.record(0, 0, &wake(pid, 120));
            many.record(0, 10, &sw(pid, 120));
        }
        let mut out = String::new();
        write_tables(&mut out, &many, Unit { ns: true }, &Cmdlines::default(), Some(TOP)).unwrap();
        assert!(
            out.contains("sleeper (30 tasks)") && out.lines().filter(|l| l.starts_with("sleeper")).count() == 1,
            "{out}"
        );
        let mut out = String::new();
        write_tables(&mut out, &many, Unit { ns: true }, &Cmdlines::default(), None).unwrap();
        assert_eq!(out.lines().filter(|l| l.starts_with("sleeper-")).count(), 30, "{out}");
        let mut out = String::new();
        write_tables(&mut out, &l, Unit { ns: false }, &Cmdlines::default(), Some(TOP)).unwrap();
        assert!(out.contains("sleeper-42"), "{out}");
        assert!(out.contains("3.500"), "{out}");
        let mut only = Lat::new(Mode::Wakeup, &t, Endian::Little, false, None).unwrap();
        only.only(&[42]);
        only.record(0, 0, &wake(7, 120));
        assert_eq!(only.record(0, 10, &sw(7, 120)), None, "a task the pid filter does not name");
        only.record(0, 20, &wake(42, 120));
        assert!(only.record(0, 30, &sw(42, 120)).is_some());
        let mut rt = Lat::new(Mode::Wakeup, &t, Endian::Little, true, None).unwrap();
        rt.record(0, 0, &wake(42, 120));
        assert_eq!(rt.record(0, 10, &sw(42, 120)), None, "--rt skips normal tasks");
    }

    #[test]
    fn timerlat_entries_per_cpu_and_context() {
        let t = table(&[("ftrace", TIMERLAT)]);
        let mut l = Lat::new(Mode::Timerlat, &t, Endian::Little, false, None).unwrap();
        let e = |seq: u32, ctx: i32, lat: u64| {
            rec(18, &[(8, &seq.to_le_bytes()), (12, &ctx.to_le_bytes()), (16, &lat.to_le_bytes())], 24)
        };
        l.record(0, 1, &e(1, 0, 900));
        l.record(0, 2, &e(1, 1, 4000));
        l.record(0, 3, &e(2, 0, 1100));
        l.record(0, 4, &e(4, 0, 100));
        l.record(1, 5, &e(u32::MAX, 0, 100));
        l.record(1, 6, &e(0, 0, 100));
        assert_eq!(l.taken, 4 + 2, "seqnums 1..4 on CPU 0 (3 missed), a wrap on CPU 1");
        let w = l.worst(Table::TimerIrq).unwrap();
        assert_eq!((w.0, w.1.stat.count, w.1.stat.min, w.1.stat.max, w.1.stat.last), (0, 3, 100, 1100, 100));
        assert_eq!((l.measured(), l.timer_irqs()), (6, 5));
        assert!(l.record(0, 5, &e(1, 0, 1)[..10]).is_none(), "a short record is skipped");
    }

    /// The 6.1-rt arm64 board's format: common_preempt_lazy_count shifts
    /// the fields (read by name, never at a fixed offset).
    const HWLAT: &str = "name: hwlat\nID: 14\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\tfield:unsigned char common_preempt_lazy_count;\toffset:8;\tsize:1;\tsigned:0;\n\n\tfield:u64 duration;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:u64 outer_duration;\toffset:24;\tsize:8;\tsigned:0;\n\tfield:unsigned int count;\toffset:64;\tsize:4;\tsigned:0;\n\nprint fmt: \"x\"\n";

    #[test]
    fn hwlat_samples_per_cpu_inner_and_outer() {
        let t = table(&[("ftrace", HWLAT)]);
        let mut l = Lat::new(Mode::Hwlat, &t, Endian::Little, false, None).unwrap();
        let e = |inner: u64, outer: u64| rec(14, &[(16, &inner.to_le_bytes()), (24, &outer.to_le_bytes())], 68);
        let s = l.record(1, 10, &e(12, 30)).unwrap();
        assert_eq!((s.table, s.key, s.ns), (Table::HwInner, 1, 12_000));
        l.record(1, 20, &e(8, 5));
        l.record(0, 30, &e(100, 0));
        let rows: Vec<_> = l.rows().map(|(t, k, r)| (t, k, r.stat.count, r.stat.min, r.stat.max)).collect();
        assert_eq!(
            rows,
            alloc::vec![
                (Table::HwInner, 0, 1, 100_000, 100_000),
                (Table::HwInner, 1, 2, 8_000, 12_000),
                (Table::HwOuter, 0, 1, 0, 0),
                (Table::HwOuter, 1, 2, 5_000, 30_000)
            ]
        );
        assert_eq!(l.measured(), 3);
        assert!(l.record(0, 40, &e(1, 1)[..20]).is_none(), "a short record is skipped");
    }

    #[test]
    fn a_mode_without_its_events_says_which() {
        let t = table(&[("sched", SWITCH)]);
        let e = Lat::new(Mode::Wakeup, &t, Endian::Little, false, None).err().unwrap();
        assert_eq!(e.to_string(), "no sched:sched_waking or sched:sched_wakeup event");
    }
}
