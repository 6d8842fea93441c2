//! Latency statistics (sans-IO), for `tr-lat`: records in merged order go
//! in, per-key accumulators (count, min, avg, max, sum, and a histogram
//! with an overflow row) come out; printing is a separate pass (table,
//! histogram or JSON), as rtla keeps its measurement apart from its display.
//!
//! What is measured, by mode:
//! - `wakeup`: `sched_waking` (else `sched_wakeup`) of a task → the
//!   `sched_switch` whose `next_pid` is that task: per task and per
//!   priority class (the kernel's `prio`: -1 deadline, 0..99 real-time,
//!   100..139 normal).
//! - `irq`: `irq_handler_entry` → `irq_handler_exit` of the same IRQ on the
//!   same CPU (hard IRQs do not nest), per IRQ; `softirq_entry` →
//!   `softirq_exit` per vector.
//! - `syscall`: `raw_syscalls:sys_enter` → `sys_exit` of the same task, per
//!   system call number (`id`) and per task.
//! - `timerlat`: the timerlat tracer's `ftrace/timerlat` entries (`seqnum`,
//!   `context` 0 IRQ, 1 thread, 2 user return (6.5+), `timer_latency` in
//!   ns), per CPU and context.
//! - `osnoise`: the osnoise tracer's `ftrace/osnoise` entries, one per
//!   period and CPU: `runtime`, `noise` and `max_sample` in µs
//!   (kernel/trace/trace_osnoise.c stores them with `time_to_us`), and the
//!   HW / NMI / IRQ / softirq / thread interference counts; with the
//!   `osnoise:sample_threshold` event, each single noise over the threshold.
//! - `hwlat`: the hwlat tracer's `ftrace/hwlat` samples, per CPU: the
//!   inner and outer `duration` (µs, as the entries give them).
//!
//! Every field is read through the event's format file, never at a fixed
//! offset. A begin whose end is lost (or an end without a begin) is counted
//! as unpaired, never guessed; a loss on the ring buffer forgets every open
//! begin, since its end may be among the lost records.

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use crate::abi::Endian;
use crate::format::{EventFormat, EventTable, Field, FieldKind};
use crate::json;
use crate::problems::Problems;
use crate::render::{Cmdlines, CommonFields};

pub mod aa;

/// Most histogram entries per key (`-E`).
pub const MAX_ENTRIES: usize = 1 << 16;

/// Tasks, syscalls or CPUs with an open begin that are tracked at most
/// (a damaged stream cannot grow the maps without bound).
const MAX_OPEN: usize = 1 << 16;

/// A map on a sorted Vec: far less code in the binary than a BTreeMap
/// (tr-lat keeps a few hundred keys at most in practice).
#[derive(Debug, Clone)]
pub struct VecMap<K, V>(Vec<(K, V)>);

impl<K: Ord + Copy, V> VecMap<K, V> {
    pub(crate) const fn new() -> Self {
        VecMap(Vec::new())
    }

    fn find(&self, k: &K) -> Result<usize, usize> {
        self.0.binary_search_by(|e| e.0.cmp(k))
    }

    pub(crate) fn get(&self, k: &K) -> Option<&V> {
        self.find(k).ok().and_then(|i| self.0.get(i)).map(|e| &e.1)
    }

    pub(crate) fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        let i = self.find(k).ok()?;
        self.0.get_mut(i).map(|e| &mut e.1)
    }

    pub(crate) fn contains_key(&self, k: &K) -> bool {
        self.find(k).is_ok()
    }

    /// The value of `k`, made by `f` when absent.
    pub fn entry(&mut self, k: K, f: impl FnOnce() -> V) -> &mut V {
        let i = match self.find(&k) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (k, f()));
                i
            }
        };
        &mut self.0[i].1
    }

    /// Set `k`; the old value, if any.
    pub fn insert(&mut self, k: K, v: V) -> Option<V> {
        match self.find(&k) {
            Ok(i) => Some(core::mem::replace(&mut self.0[i].1, v)),
            Err(i) => {
                self.0.insert(i, (k, v));
                None
            }
        }
    }

    pub(crate) fn remove(&mut self, k: &K) -> Option<V> {
        self.find(k).ok().map(|i| self.0.remove(i).1)
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn clear(&mut self) {
        self.0.clear()
    }

    /// By key.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.0.iter().map(|e| (&e.0, &e.1))
    }
}

impl<K: Ord + Copy, V> Default for VecMap<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

/// count, min, avg, max, sum (and the last value: rtla's `cur`), in ns;
/// system calls: how many failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stat {
    pub(crate) count: u64,
    pub(crate) min: u64,
    pub(crate) max: u64,
    pub(crate) sum: u64,
    pub(crate) last: u64,
    pub(crate) errors: u64,
}

impl Stat {
    pub(crate) fn add(&mut self, v: u64) {
        if self.count == 0 || v < self.min {
            self.min = v;
        }
        self.max = self.max.max(v);
        self.sum = self.sum.saturating_add(v);
        self.count += 1;
        self.last = v;
    }

    pub(crate) fn avg(&self) -> u64 {
        self.sum.checked_div(self.count).unwrap_or(0)
    }

    /// Fold `o` in (rows of one group: the tasks of one comm).
    pub fn merge(&mut self, o: &Stat) {
        if o.count > 0 && (self.count == 0 || o.min < self.min) {
            self.min = o.min;
        }
        self.max = self.max.max(o.max);
        self.sum = self.sum.saturating_add(o.sum);
        self.count += o.count;
        self.errors += o.errors;
    }
}

/// A histogram: `buckets[i]` counts values in `[i*width, (i+1)*width)`
/// ns; `over` those at or past the last bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hist {
    pub(crate) width: u64,
    pub(crate) buckets: Vec<u64>,
    pub(crate) over: u64,
}

impl Hist {
    /// `width` ns per bucket (at least 1), `entries` buckets (at most
    /// [`MAX_ENTRIES`], at least 1).
    pub fn new(width: u64, entries: usize) -> Self {
        Hist { width: width.max(1), buckets: alloc::vec![0; entries.clamp(1, MAX_ENTRIES)], over: 0 }
    }

    pub(crate) fn add(&mut self, v: u64) {
        let i = v / self.width;
        match usize::try_from(i).ok().and_then(|i| self.buckets.get_mut(i)) {
            Some(b) => *b += 1,
            None => self.over += 1,
        }
    }

    /// Values counted, the overflow row included.
    pub fn total(&self) -> u64 {
        self.buckets.iter().sum::<u64>() + self.over
    }
}

/// What a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
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
    pub fn parse(s: &str) -> Option<Mode> {
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
    pub fn events(self) -> &'static [&'static str] {
        match self {
            Mode::Wakeup => {
                &["sched:sched_waking|sched:sched_wakeup", "sched:sched_switch", "?sched:sched_process_fork"]
            }
            Mode::Irq => &["irq:irq_handler_entry", "irq:irq_handler_exit", "?irq:softirq_entry", "?irq:softirq_exit"],
            Mode::Syscall => &["raw_syscalls:sys_enter", "raw_syscalls:sys_exit"],
            Mode::Timerlat => &["ftrace:timerlat"],
            Mode::Osnoise => &["ftrace:osnoise", "?osnoise:sample_threshold"],
            Mode::Hwlat => &["ftrace:hwlat"],
        }
    }

    /// The event systems a run reads: those of [`events`](Self::events)
    /// (ftrace's always), and osnoise's noise events that a stop threshold
    /// enables for its report.
    pub fn systems(self) -> &'static [&'static str] {
        match self {
            Mode::Wakeup => &["sched"],
            Mode::Irq => &["irq"],
            Mode::Syscall => &["raw_syscalls", SYSCALL_EVENTS],
            Mode::Timerlat | Mode::Osnoise => &["osnoise"],
            Mode::Hwlat => &[],
        }
    }
}

/// The system of the per-call syscall events (`syscalls:sys_enter_openat`,
/// CONFIG_FTRACE_SYSCALLS): where the kernel has them, `syscall` reads them
/// instead of `raw_syscalls`, for the same numbers and the calls' names.
pub const SYSCALL_EVENTS: &str = "syscalls";

/// A per-call syscall event: its call's name (`openat`), whether it is the
/// enter or the exit, and its `__syscall_nr` (and exit's `ret`) field.
struct SyscallEv {
    name: String,
    enter: bool,
    ev: Ev,
}

/// Which table a row is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Table {
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
    pub fn name(self) -> &'static str {
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
    fn title(self) -> (&'static str, &'static str) {
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
pub fn class(prio: i64) -> i64 {
    match prio {
        i64::MIN..=-1 => 0,
        0..=99 => 1,
        _ => 2,
    }
}

const CLASSES: [&str; 3] = ["deadline", "rt", "normal"];

/// The kernel's softirq vector names (include/linux/interrupt.h; IRQ_POLL
/// was BLOCK_IOPOLL before 4.5).
const SOFTIRQS: [&str; 10] =
    ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"];

/// One row: the name seen in the records (a comm, an IRQ's name), the
/// statistics and the histogram.
#[derive(Debug, Clone)]
pub struct Row {
    pub(crate) name: String,
    pub(crate) stat: Stat,
    pub(crate) hist: Option<Hist>,
}

/// One measured latency, for `--samples`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// What was measured (the table its row is in).
    pub table: Table,
    pub(crate) key: i64,
    pub(crate) cpu: u32,
    /// Trace-clock time of the begin (the timerlat/osnoise entry itself
    /// for those modes) and the end.
    pub begin: u64,
    /// Trace-clock time of the end.
    pub end: u64,
    /// The latency, in nanoseconds.
    pub ns: u64,
}

/// The osnoise tracer's totals for one CPU (µs, as the entries give them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Noise {
    pub(crate) periods: u64,
    pub(crate) runtime: u64,
    pub(crate) noise: u64,
    pub(crate) max_single: u64,
    pub(crate) hw: u64,
    pub(crate) nmi: u64,
    pub(crate) irq: u64,
    pub(crate) softirq: u64,
    pub(crate) thread: u64,
}

impl Noise {
    /// % of CPU time available, in thousandths of a percent.
    pub fn available_mpct(&self) -> u64 {
        if self.runtime == 0 {
            return 0;
        }
        let free = self.runtime.saturating_sub(self.noise) as u128;
        (free * 100_000 / self.runtime as u128) as u64
    }
}

/// One event the mode reads: its id and the fields it needs, in order.
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
pub enum Missing {
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

use alloc::string::ToString;

/// An open begin: (IRQ or vector, entry time).
type Open = Option<(i64, u64)>;

/// Indexes into `Lat::evs`.
const BEGIN: usize = 0;
const END: usize = 1;
const SOFT_BEGIN: usize = 2;
const SOFT_END: usize = 3;
/// wakeup: sched_process_fork, to follow the children of the pids given.
const FORK: usize = 2;

/// The accumulators of one run.
pub struct Lat {
    pub(crate) mode: Mode,
    endian: Endian,
    /// wakeup: real-time (and deadline) tasks only.
    rt_only: bool,
    hist: Option<(u64, usize)>,
    /// The mode's events, in the order of [`Mode::events`] (absent optional
    /// ones are `None`).
    evs: [Option<Ev>; 4],
    rows: VecMap<(Table, i64), Row>,
    /// wakeup: only wakeups of these tasks (and their children), when set.
    only: Option<VecMap<i64, ()>>,
    /// wakeup: never wakeups of these tasks (the measuring tool's own).
    left_out: VecMap<i64, ()>,
    /// wakeup: pid → waking time; syscall: pid → (id, enter time).
    open: VecMap<i64, (i64, u64)>,
    /// irq: per CPU (IRQ, entry time) and (vector, entry time).
    irq_open: Vec<(Open, Open)>,
    pub(crate) noise: VecMap<u32, Noise>,
    /// Ends without their begin, and begins forgotten at a loss.
    pub unpaired: u64,
    /// wakeup: wakings that no switch to their task followed (the task ran
    /// before one was seen, or was woken again): not latencies.
    pub no_switch: u64,
    /// Lost-events marks met ([`Lat::lose`]): the counts may miss
    /// latencies around each.
    pub lost: u64,
    /// timerlat: the last IRQ seqnum per CPU.
    seq: VecMap<u32, u32>,
    /// timerlat: the samples the kernel took while we read, by their
    /// seqnums (every timer IRQ takes the next one, recorded or not).
    pub taken: u64,
    /// syscall: the per-call events by ID, where the kernel has them.
    syscalls: VecMap<u32, SyscallEv>,
}

impl Lat {
    /// Map the mode's events of `events` once. `hist`: (bucket width in ns,
    /// entries) to keep histograms.
    pub fn new(
        mode: Mode,
        events: &EventTable,
        endian: Endian,
        rt_only: bool,
        hist: Option<(u64, usize)>,
    ) -> Result<Lat, Missing> {
        let fields: &[&[&str]] = match mode {
            Mode::Wakeup => &[
                &["pid", "prio", "comm"],
                &["next_pid", "next_prio", "next_comm", "prev_pid"],
                &["parent_pid", "child_pid"],
            ],
            Mode::Irq => &[&["irq", "name"], &["irq"], &["vec"], &["vec"]],
            Mode::Syscall => &[&["id"], &["id", "ret"]],
            Mode::Timerlat => &[&["seqnum", "context", "timer_latency"]],
            Mode::Osnoise => &[
                &[
                    "runtime",
                    "noise",
                    "max_sample",
                    "hw_count",
                    "nmi_count",
                    "irq_count",
                    "softirq_count",
                    "thread_count",
                ],
                &["duration"],
            ],
            Mode::Hwlat => &[&["duration", "outer_duration"]],
        };
        let mut syscalls = VecMap::new();
        if mode == Mode::Syscall {
            for ev in events.iter().filter(|e| e.system == SYSCALL_EVENTS) {
                let (enter, name) = match (ev.name.strip_prefix("sys_enter_"), ev.name.strip_prefix("sys_exit_")) {
                    (Some(n), _) => (true, n),
                    (_, Some(n)) => (false, n),
                    _ => continue,
                };
                let fields: &[&str] = if enter { &["__syscall_nr"] } else { &["__syscall_nr", "ret"] };
                if let Ok(e) = Ev::of(ev, fields) {
                    syscalls.insert(ev.id, SyscallEv { name: String::from(name), enter, ev: e });
                }
            }
        }
        let mut evs: [Option<Ev>; 4] = [None, None, None, None];
        for (i, spec) in mode.events().iter().enumerate() {
            let (optional, spec) = match spec.strip_prefix('?') {
                Some(s) => (true, s),
                // raw_syscalls may be left out where the per-call events are.
                None => (!syscalls.is_empty(), *spec),
            };
            let found = spec.split('|').find_map(|n| events.by_name(n));
            match found {
                Some(ev) => evs[i] = Some(Ev::of(ev, fields.get(i).copied().unwrap_or(&[]))?),
                None if optional => {}
                None => return Err(Missing::Event(spec.to_string())),
            }
        }
        Ok(Lat {
            mode,
            endian,
            rt_only,
            hist,
            evs,
            rows: VecMap::new(),
            only: None,
            left_out: VecMap::new(),
            open: VecMap::new(),
            irq_open: Vec::new(),
            noise: VecMap::new(),
            unpaired: 0,
            no_switch: 0,
            lost: 0,
            seq: VecMap::new(),
            taken: 0,
            syscalls,
        })
    }

    /// wakeup: measure only these tasks and the children they fork. (The
    /// kernel's pid filter lets through what a filtered task does, and a
    /// filtered task wakes others: `sched_waking` is written when either
    /// the waker or the wakee is in `set_event_pid`.)
    pub fn only(&mut self, pids: &[i64]) {
        let mut o = VecMap::new();
        for &p in pids {
            o.insert(p, ());
        }
        self.only = Some(o);
    }

    /// wakeup: never measure these tasks (trbox's own threads: the
    /// kernel records their wakings when the waker is traced).
    pub fn leave_out(&mut self, pids: &[i64]) {
        for &p in pids {
            self.left_out.insert(p, ());
        }
    }

    fn which(&self, id: u32) -> Option<usize> {
        self.evs.iter().position(|e| e.as_ref().is_some_and(|e| e.id == id))
    }

    /// Count `ns` in the row of (`table`, `key`), made if new, named
    /// `name` when one is given; the row, for what else the caller counts.
    fn add(&mut self, table: Table, key: i64, name: Option<&str>, ns: u64) -> &mut Row {
        let hist = self.hist;
        let row = self.rows.entry((table, key), || Row {
            name: String::new(),
            stat: Stat::default(),
            hist: hist.map(|(w, n)| Hist::new(w, n)),
        });
        if let Some(n) = name.filter(|n| !n.is_empty()) {
            set(&mut row.name, n);
        }
        row.stat.add(ns);
        if let Some(h) = row.hist.as_mut() {
            h.add(ns);
        }
        row
    }

    /// wakeup: the wakings that no switch to their task followed, those
    /// still waiting at the end included.
    pub fn wakings_without_switch(&self) -> u64 {
        match self.mode {
            Mode::Wakeup => self.no_switch + self.open.len() as u64,
            _ => 0,
        }
    }

    /// Events were lost on a CPU: forget every open begin (its end may be
    /// among them).
    pub fn lose(&mut self) {
        self.lost += 1;
        self.unpaired += self.open.len() as u64;
        self.open.clear();
        for s in self.irq_open.iter_mut() {
            self.unpaired += u64::from(s.0.is_some()) + u64::from(s.1.is_some());
            *s = (None, None);
        }
    }

    /// Feed one record (any event) of `cpu` at trace-clock time `ts`;
    /// returns the latency it completed, if any.
    pub fn record(&mut self, cpu: u32, ts: u64, p: &[u8]) -> Option<Sample> {
        let e = self.endian;
        let id = u32::from(e.uint(p, 0, 2)? as u16);
        if let Some(s) = self.syscalls.get(&id) {
            let (nr, pid) = (s.ev.int(0, p, e)?, i64::from(s.ev.common.read(e, p).2));
            if s.enter {
                return self.syscall_enter(pid, nr, ts);
            }
            // The call's name goes into its row once, not with every exit.
            let named = self.rows.get(&(Table::Syscall, nr)).is_some_and(|r| !r.name.is_empty());
            let (ret, name) = (s.ev.int(1, p, e)?, (!named).then(|| s.name.clone()));
            return self.syscall_exit(pid, nr, ret, name.as_deref(), cpu, ts);
        }
        let which = self.which(id)?;
        let ev = self.evs.get(which)?.as_ref()?;
        let sample = |table, key, begin: u64| Sample { table, key, cpu, begin, end: ts, ns: ts.saturating_sub(begin) };
        match (self.mode, which) {
            (Mode::Wakeup, BEGIN) => {
                let pid = ev.int(0, p, e)?;
                let prio = ev.int(1, p, e)?;
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
                    && self.open.insert(pid, (prio, ts)).is_some()
                {
                    self.no_switch += 1;
                }
                None
            }
            (Mode::Wakeup, END) => {
                // A switch away from a task with an open waking: it ran, so
                // the switch to it was not seen (or none was needed).
                if let Some(prev) = ev.int(3, p, e).filter(|&prev| prev != 0) {
                    if self.open.remove(&prev).is_some() {
                        self.no_switch += 1;
                    }
                }
                let pid = ev.int(0, p, e)?;
                let (_, begin) = self.open.remove(&pid)?;
                let prio = ev.int(1, p, e)?;
                let name = ev.text(2, p, e);
                let s = sample(Table::Task, pid, begin);
                self.add(Table::Task, pid, Some(&name), s.ns);
                self.add(Table::Class, class(prio), None, s.ns);
                Some(s)
            }
            (Mode::Wakeup, FORK) => {
                let (parent, child) = (ev.int(0, p, e)?, ev.int(1, p, e)?);
                if let Some(o) = self.only.as_mut().filter(|o| o.contains_key(&parent) && o.len() < MAX_OPEN) {
                    o.insert(child, ());
                }
                None
            }
            (Mode::Irq, BEGIN | SOFT_BEGIN) => {
                let n = ev.int(0, p, e)?;
                if which == BEGIN {
                    let name = ev.text(1, p, e);
                    if let Some(r) = self.rows.get_mut(&(Table::HardIrq, n)) {
                        if r.name.is_empty() {
                            r.name = name.into_owned();
                        }
                    } else if self.rows.len() < MAX_OPEN && !name.is_empty() {
                        // Name it now: the exit carries no name.
                        let hist = self.hist.map(|(w, n)| Hist::new(w, n));
                        self.rows
                            .insert((Table::HardIrq, n), Row { name: name.into_owned(), stat: Stat::default(), hist });
                    }
                }
                let slot = self.cpu_slot(cpu)?;
                let open = if which == BEGIN { &mut slot.0 } else { &mut slot.1 };
                if open.replace((n, ts)).is_some() {
                    self.unpaired += 1;
                }
                None
            }
            (Mode::Irq, END | SOFT_END) => {
                let n = ev.int(0, p, e)?;
                let slot = self.cpu_slot(cpu)?;
                let open = if which == END { &mut slot.0 } else { &mut slot.1 };
                match open.take() {
                    Some((m, begin)) if m == n => {
                        let table = if which == END { Table::HardIrq } else { Table::SoftIrq };
                        let s = sample(table, n, begin);
                        self.add(table, n, None, s.ns);
                        Some(s)
                    }
                    _ => {
                        self.unpaired += 1;
                        None
                    }
                }
            }
            (Mode::Syscall, BEGIN) => {
                let (nr, pid) = (ev.int(0, p, e)?, i64::from(ev.common.read(e, p).2));
                self.syscall_enter(pid, nr, ts)
            }
            (Mode::Syscall, END) => {
                let (nr, pid, ret) = (ev.int(0, p, e)?, i64::from(ev.common.read(e, p).2), ev.int(1, p, e)?);
                self.syscall_exit(pid, nr, ret, None, cpu, ts)
            }
            (Mode::Timerlat, BEGIN) => {
                let seq = ev.int(0, p, e)? as u32;
                let ctx = ev.int(1, p, e)?;
                let ns = ev.int(2, p, e)? as u64;
                let table = match ctx {
                    0 => Table::TimerIrq,
                    1 => Table::TimerThread,
                    _ => Table::TimerUser,
                };
                if ctx == 0 && (self.seq.len() < MAX_OPEN || self.seq.contains_key(&cpu)) {
                    // A seqnum that does not go forward: the tracer started
                    // again (it counts from 1 per start).
                    self.taken += match self.seq.insert(cpu, seq).map(|prev| seq.wrapping_sub(prev)) {
                        Some(d) if d > 0 && d < 1 << 31 => u64::from(d),
                        _ => 1,
                    };
                }
                self.add(table, i64::from(cpu), None, ns);
                Some(Sample { table, key: i64::from(cpu), cpu, begin: ts, end: ts, ns })
            }
            (Mode::Osnoise, BEGIN) => {
                let v: Vec<u64> = (0..8).map(|i| ev.int(i, p, e).unwrap_or(0) as u64).collect();
                let &[runtime, noise, max_sample, hw, nmi, irq, softirq, thread] = v.as_slice() else {
                    return None;
                };
                if !self.noise.contains_key(&cpu) && self.noise.len() >= MAX_OPEN {
                    return None;
                }
                let n = self.noise.entry(cpu, Noise::default);
                n.periods += 1;
                n.runtime = n.runtime.saturating_add(runtime);
                n.noise = n.noise.saturating_add(noise);
                n.max_single = n.max_single.max(max_sample);
                for (t, v) in [
                    (&mut n.hw, hw),
                    (&mut n.nmi, nmi),
                    (&mut n.irq, irq),
                    (&mut n.softirq, softirq),
                    (&mut n.thread, thread),
                ] {
                    *t = t.saturating_add(v);
                }
                let ns = noise.saturating_mul(1000);
                self.add(Table::Noise, i64::from(cpu), None, ns);
                Some(Sample { table: Table::Noise, key: i64::from(cpu), cpu, begin: ts, end: ts, ns })
            }
            (Mode::Hwlat, BEGIN) => {
                let inner = (ev.int(0, p, e)? as u64).saturating_mul(1000);
                let outer = (ev.int(1, p, e)? as u64).saturating_mul(1000);
                self.add(Table::HwOuter, i64::from(cpu), None, outer);
                self.add(Table::HwInner, i64::from(cpu), None, inner);
                Some(Sample { table: Table::HwInner, key: i64::from(cpu), cpu, begin: ts, end: ts, ns: inner })
            }
            (Mode::Osnoise, END) => {
                let ns = ev.int(0, p, e)? as u64;
                self.add(Table::Single, i64::from(cpu), None, ns);
                Some(Sample { table: Table::Single, key: i64::from(cpu), cpu, begin: ts, end: ts, ns })
            }
            _ => None,
        }
    }

    fn syscall_enter(&mut self, pid: i64, nr: i64, ts: u64) -> Option<Sample> {
        if (self.open.len() < MAX_OPEN || self.open.contains_key(&pid)) && self.open.insert(pid, (nr, ts)).is_some() {
            self.unpaired += 1;
        }
        None
    }

    /// A call's end: its duration, and a failure where it returned an
    /// error (a negative errno, as strace -c counts them).
    fn syscall_exit(&mut self, pid: i64, nr: i64, ret: i64, name: Option<&str>, cpu: u32, ts: u64) -> Option<Sample> {
        match self.open.remove(&pid) {
            Some((m, begin)) if m == nr => {
                let ns = ts.saturating_sub(begin);
                let row = self.add(Table::Syscall, nr, name, ns);
                // -MAX_ERRNO..0 is an error (include/linux/err.h IS_ERR_VALUE).
                if (-4095..0).contains(&ret) {
                    row.stat.errors += 1;
                }
                self.add(Table::SyscallTask, pid, None, ns);
                Some(Sample { table: Table::Syscall, key: nr, cpu, begin, end: ts, ns })
            }
            _ => {
                self.unpaired += 1;
                None
            }
        }
    }

    fn cpu_slot(&mut self, cpu: u32) -> Option<&mut (Open, Open)> {
        let i = usize::try_from(cpu).ok().filter(|&i| i < MAX_OPEN)?;
        if self.irq_open.len() <= i {
            self.irq_open.resize(i + 1, (None, None));
        }
        self.irq_open.get_mut(i)
    }

    /// The rows, by table then key.
    pub fn rows(&self) -> impl Iterator<Item = (Table, i64, &Row)> {
        self.rows.iter().filter(|(_, r)| r.stat.count > 0).map(|(&(t, k), r)| (t, k, r))
    }

    /// timerlat: the IRQ entries read, against [`Lat::taken`].
    pub fn timer_irqs(&self) -> u64 {
        self.rows().filter(|(t, _, _)| *t == Table::TimerIrq).map(|(_, _, r)| r.stat.count).sum()
    }

    /// Latencies measured (rows of the first table of the mode).
    pub fn measured(&self) -> u64 {
        let first = match self.mode {
            Mode::Wakeup => Table::Task,
            Mode::Irq => Table::HardIrq,
            Mode::Syscall => Table::Syscall,
            Mode::Timerlat => Table::TimerIrq,
            Mode::Osnoise => Table::Noise,
            Mode::Hwlat => Table::HwInner,
        };
        let also = if self.mode == Mode::Irq {
            Table::SoftIrq
        } else if self.mode == Mode::Timerlat {
            Table::TimerThread
        } else {
            first
        };
        self.rows()
            .filter(|(t, _, _)| *t == first || *t == also || (self.mode == Mode::Timerlat && *t == Table::TimerUser))
            .map(|(_, _, r)| r.stat.count)
            .sum()
    }

    /// The row with the largest maximum of `table`, if any.
    pub fn worst(&self, table: Table) -> Option<(i64, &Row)> {
        self.rows().filter(|(t, _, _)| *t == table).max_by_key(|(_, _, r)| r.stat.max).map(|(_, k, r)| (k, r))
    }
}

/// How values are printed: µs with three decimals (default) or ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    /// Print nanoseconds (`--ns`), not microseconds.
    pub ns: bool,
}

impl Unit {
    /// The unit's name for column headers and JSON (`us` or `ns`).
    pub fn name(self) -> &'static str {
        if self.ns {
            "ns"
        } else {
            "us"
        }
    }

    /// Writes `v` nanoseconds in this unit: `12.345` (µs) or `12345`.
    pub fn write<W: Write + ?Sized>(self, w: &mut W, v: u64) -> fmt::Result {
        if self.ns {
            write!(w, "{v}")
        } else {
            write!(w, "{}.{:03}", v / 1000, v % 1000)
        }
    }

    fn cell<W: Write + ?Sized>(self, w: &mut W, v: u64, width: usize) -> fmt::Result {
        let mut s = String::new();
        self.write(&mut s, v)?;
        write!(w, " {s:>width$}")
    }
}

/// The name of a row's key as a person reads it.
pub fn key_name(table: Table, key: i64, row: &Row, cmdlines: &Cmdlines) -> String {
    let comm = |pid: i64| {
        if row.name.is_empty() {
            String::from(cmdlines.comm(pid as i32))
        } else {
            row.name.clone()
        }
    };
    match table {
        Table::Task | Table::SyscallTask => alloc::format!("{}-{key}", comm(key)),
        Table::Class => String::from(usize::try_from(key).ok().and_then(|i| CLASSES.get(i)).copied().unwrap_or("?")),
        Table::HardIrq if !row.name.is_empty() => alloc::format!("{key} {}", row.name),
        Table::SoftIrq => match usize::try_from(key).ok().and_then(|i| SOFTIRQS.get(i)) {
            Some(n) => alloc::format!("{key} {n}"),
            None => alloc::format!("{key}"),
        },
        Table::Syscall if !row.name.is_empty() => row.name.clone(),
        Table::Syscall => alloc::format!("NR {key}"),
        _ => alloc::format!("{key}"),
    }
}

const KEY_WIDTH: usize = 24;

/// Every table of `lat`: a title with the unit, then one line per key
/// (sorted by key; tasks by their maximum, worst first).
/// Task rows a table shows unless every task is asked for: a board's
/// short-lived tasks (`sleep-PID` by the hundred) would not fit a screen.
pub const TOP: usize = 20;

/// The rows of a task table to show: every task when they fit in `top`
/// rows (or without `top`); else the tasks of one comm in one row
/// (`sleep (750 tasks)`), the `top` with the highest maximum, and how many
/// were left out.
fn task_rows(
    rows: &[(i64, &Row)],
    table: Table,
    cmdlines: &Cmdlines,
    top: Option<usize>,
) -> (Vec<(String, Stat)>, usize) {
    let Some(top) = top.filter(|&top| rows.len() > top) else {
        return (rows.iter().map(|(k, r)| (key_name(table, *k, r, cmdlines), r.stat)).collect(), 0);
    };
    // (comm, tasks, stat, the one pid's name)
    let mut groups: Vec<(String, usize, Stat, String)> = Vec::new();
    for (k, r) in rows {
        let name = key_name(table, *k, r, cmdlines);
        let comm = name.rsplit_once('-').map_or(name.as_str(), |(c, _)| c).to_string();
        match groups.iter_mut().find(|g| g.0 == comm) {
            Some(g) => {
                g.1 += 1;
                g.2.merge(&r.stat);
            }
            None => groups.push((comm, 1, r.stat, name)),
        }
    }
    // Unstable: no two groups have one comm, so no ties.
    groups.sort_unstable_by(|a, b| b.2.max.cmp(&a.2.max).then_with(|| a.0.cmp(&b.0)));
    let more = groups.len().saturating_sub(top);
    groups.truncate(top);
    let shown = groups
        .into_iter()
        .map(|(comm, n, stat, one)| (if n == 1 { one } else { alloc::format!("{comm} ({n} tasks)") }, stat))
        .collect();
    (shown, more)
}

/// The tables: one per kind of key, task tables sorted by maximum (and,
/// with `top`, grouped by comm and cut: `task_rows`); with `top`, a
/// longer table of another kind shows its `top` worst rows.
pub fn write_tables<W: Write + ?Sized>(
    w: &mut W,
    lat: &Lat,
    unit: Unit,
    cmdlines: &Cmdlines,
    top: Option<usize>,
) -> fmt::Result {
    let mut tables: Vec<Table> = lat.rows().map(|(t, _, _)| t).collect();
    tables.dedup();
    for (i, t) in tables.iter().enumerate() {
        let (title, key) = t.title();
        if i > 0 {
            w.write_char('\n')?;
        }
        writeln!(w, "# {title}, {}", unit.name())?;
        // Per call, failures too (as strace -c): a narrower key keeps the
        // line in 80 columns; the longest call names are 22 bytes.
        let errors = *t == Table::Syscall;
        let width = if errors { KEY_WIDTH - 6 } else { KEY_WIDTH };
        write!(w, "{key:<width$} {:>8} {:>10} {:>10} {:>10} {:>12}", "COUNT", "MIN", "AVG", "MAX", "TOTAL")?;
        w.write_str(if errors { " ERRORS\n" } else { "\n" })?;
        let mut rows: Vec<(i64, &Row)> = lat.rows().filter(|(u, _, _)| u == t).map(|(_, k, r)| (k, r)).collect();
        let tasks = matches!(t, Table::Task | Table::SyscallTask);
        // Tasks, and any table longer than `top` (system calls, IRQs of a
        // big board): the worst first.
        let cut = top.filter(|&n| rows.len() > n);
        if tasks || cut.is_some() {
            // Unstable: a table's keys are unique, so no ties.
            rows.sort_unstable_by(|a, b| b.1.stat.max.cmp(&a.1.stat.max).then(a.0.cmp(&b.0)));
        }
        let (shown, more) = if tasks {
            task_rows(&rows, *t, cmdlines, top)
        } else {
            let more = cut.map_or(0, |n| rows.len() - n);
            rows.truncate(rows.len() - more);
            (rows.iter().map(|(k, r)| (key_name(*t, *k, r, cmdlines), r.stat)).collect(), more)
        };
        for (mut name, stat) in shown {
            if name.len() > width {
                let mut cut = width;
                while !name.is_char_boundary(cut) {
                    cut -= 1;
                }
                name.truncate(cut);
            }
            write!(w, "{name:<width$} {:>8}", stat.count)?;
            unit.cell(w, stat.min, 10)?;
            unit.cell(w, stat.avg(), 10)?;
            unit.cell(w, stat.max, 10)?;
            unit.cell(w, stat.sum, 12)?;
            if errors {
                write!(w, " {:>6}", stat.errors)?;
            }
            w.write_char('\n')?;
        }
        if more > 0 {
            writeln!(w, "# and {more} more (--all: every {})", if tasks { "task" } else { "row" })?;
        }
    }
    if lat.mode == Mode::Osnoise && !lat.noise.is_empty() {
        write_noise(w, lat)?;
    }
    Ok(())
}

/// The osnoise tracer's per-CPU table, as `rtla osnoise top` shows it
/// (runtime and noise in µs, as the tracer reports them).
fn write_noise<W: Write + ?Sized>(w: &mut W, lat: &Lat) -> fmt::Result {
    writeln!(w, "\n# osnoise per CPU: runtime, noise and max single noise in us")?;
    writeln!(w, "CPU   PERIODS      RUNTIME      NOISE  %AVAIL  MAXSINGLE      HW     NMI     IRQ SOFTIRQ  THREAD")?;
    for (cpu, n) in lat.noise.iter() {
        let a = n.available_mpct();
        writeln!(
            w,
            "{cpu:<3} {:>9} {:>12} {:>10} {:>3}.{:03} {:>10} {:>7} {:>7} {:>7} {:>7} {:>7}",
            n.periods,
            n.runtime,
            n.noise,
            a / 1000,
            a % 1000,
            n.max_single,
            n.hw,
            n.nmi,
            n.irq,
            n.softirq,
            n.thread
        )?;
    }
    Ok(())
}

/// Every histogram: per key, the non-empty buckets (`FROM-TO COUNT`) and
/// the overflow row.
pub fn write_hists<W: Write + ?Sized>(w: &mut W, lat: &Lat, unit: Unit, cmdlines: &Cmdlines) -> fmt::Result {
    let mut first = true;
    for (t, k, r) in lat.rows() {
        let Some(h) = &r.hist else { continue };
        if !first {
            w.write_char('\n')?;
        }
        first = false;
        let (title, _) = t.title();
        writeln!(w, "# {title}: {} ({} samples), {}", key_name(t, k, r, cmdlines), r.stat.count, unit.name())?;
        for (i, n) in h.buckets.iter().enumerate().filter(|(_, n)| **n > 0) {
            let from = (i as u64).saturating_mul(h.width);
            let mut s = String::new();
            unit.write(&mut s, from)?;
            s.push_str(" - ");
            unit.write(&mut s, from.saturating_add(h.width))?;
            writeln!(w, "{s:>27} {n:>10}")?;
        }
        let mut s = String::from(">= ");
        unit.write(&mut s, (h.buckets.len() as u64).saturating_mul(h.width))?;
        writeln!(w, "{s:>27} {:>10}", h.over)?;
    }
    Ok(())
}

/// One JSON object per row (and per osnoise CPU), one a line; values in
/// `unit`, with `"unit"` saying which. The members of fixed names are one
/// format string a line (no name needs escaping); names go through
/// [`json::string`], the histogram through [`json::uint_array`]. (Written
/// member by member with [`json::Object`], these lines cost 672 bytes more on
/// aarch64.)
pub fn write_json<W: Write>(w: &mut W, lat: &Lat, unit: Unit, cmdlines: &Cmdlines) -> fmt::Result {
    for (t, k, r) in lat.rows() {
        write!(w, "{{\"table\":\"{}\",\"key\":{k},\"name\":", t.name())?;
        json::string(w, &key_name(t, k, r, cmdlines))?;
        write!(w, ",\"unit\":\"{}\",\"count\":{}", unit.name(), r.stat.count)?;
        for (n, v) in [("min", r.stat.min), ("avg", r.stat.avg()), ("max", r.stat.max), ("sum", r.stat.sum)] {
            write!(w, ",\"{n}\":")?;
            unit.write(w, v)?;
        }
        if t == Table::Syscall {
            write!(w, ",\"errors\":{}", r.stat.errors)?;
        }
        if let Some(h) = &r.hist {
            w.write_str(",\"hist\":{\"width\":")?;
            unit.write(w, h.width)?;
            w.write_str(",\"buckets\":")?;
            json::uint_array(w, h.buckets.iter().copied())?;
            write!(w, ",\"over\":{}}}", h.over)?;
        }
        w.write_str("}\n")?;
    }
    for (cpu, n) in lat.noise.iter() {
        writeln!(
            w,
            "{{\"table\":\"osnoise_cpu\",\"key\":{cpu},\"unit\":\"us\",\"periods\":{},\"runtime\":{},\"noise\":{},\"available_pct\":{}.{:03},\"max_single\":{},\"hw\":{},\"nmi\":{},\"irq\":{},\"softirq\":{},\"thread\":{}}}",
            n.periods,
            n.runtime,
            n.noise,
            n.available_mpct() / 1000,
            n.available_mpct() % 1000,
            n.max_single,
            n.hw,
            n.nmi,
            n.irq,
            n.softirq,
            n.thread
        )?;
    }
    if lat.mode == Mode::Timerlat {
        // The kernel's own count beside ours: what a reader missed shows.
        writeln!(w, "{{\"table\":\"timerlat_samples\",\"taken\":{},\"read\":{}}}", lat.taken, lat.timer_irqs())?;
    }
    if lat.mode == Mode::Wakeup {
        // What was not counted, and why: wakings no switch to their task
        // followed, and begins or ends the window or a loss cut.
        writeln!(
            w,
            "{{\"table\":\"uncounted\",\"wakings_without_switch\":{},\"unpaired\":{},\"losses\":{}}}",
            lat.wakings_without_switch(),
            lat.unpaired,
            lat.lost
        )?;
    }
    Ok(())
}

/// A max-latency tracer's new maximum (`tr-lat wakeup_rt --json` …) as a
/// JSON object on one line: the tracer, its sequence number `n`, the
/// latency in us, and the saved file's name (`file`) or else the kernel's
/// trace text of it (`trace`).
pub fn write_max_json<W: Write>(
    w: &mut W,
    tracer: &str,
    n: u32,
    latency_us: u64,
    file: Option<&str>,
    trace: &str,
) -> fmt::Result {
    let (k, body) = file.map_or(("trace", trace), |f| ("file", f));
    write!(w, "{{\"tracer\":\"{tracer}\",\"n\":{n},\"unit\":\"us\",\"latency\":{latency_us},\"{k}\":")?;
    json::string(w, body)?;
    writeln!(w, "}}")
}

/// One sample as a JSON line: times in trace-clock ns, the latency in ns.
pub fn write_sample<W: Write + ?Sized>(w: &mut W, s: &Sample) -> fmt::Result {
    writeln!(
        w,
        "{{\"table\":\"{}\",\"key\":{},\"cpu\":{},\"begin\":{},\"end\":{},\"ns\":{}}}",
        s.table.name(),
        s.key,
        s.cpu,
        s.begin,
        s.end,
        s.ns
    )
}

/// What the input's readers read past ([`Problems`]) as one line in the
/// style of [`write_json`]'s: `{"table":"problems","cut_off":1}`, a
/// member per kind met; nothing when there were none.
pub fn write_problems_json(w: &mut dyn Write, p: &Problems) -> fmt::Result {
    if p.is_empty() {
        return Ok(());
    }
    w.write_str("{\"table\":\"problems\",")?;
    json::problem_counts(w, p)?;
    w.write_str("}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_are_one_json_line_in_the_tables_style() {
        use crate::problems::ProblemKind;
        let mut w = String::new();
        let mut p = Problems::new();
        write_problems_json(&mut w, &p).unwrap();
        assert_eq!(w, "");
        p.add(ProblemKind::BadFormat, "sched:sched_switch: the format does not parse");
        p.add(ProblemKind::BadFormat, "irq:irq_handler_entry: the format does not parse");
        write_problems_json(&mut w, &p).unwrap();
        assert_eq!(w, "{\"table\":\"problems\",\"bad_format\":2}\n");
    }

    #[test]
    fn a_new_maximum_is_one_json_line_with_its_file_or_its_text() {
        let mut w = String::new();
        write_max_json(&mut w, "wakeup_rt", 2, 17, Some("out/2.txt"), "ignored").unwrap();
        assert_eq!(w, "{\"tracer\":\"wakeup_rt\",\"n\":2,\"unit\":\"us\",\"latency\":17,\"file\":\"out/2.txt\"}\n");
        w.clear();
        write_max_json(&mut w, "irqsoff", 1, 5, None, "# tracer: irqsoff\n\"x\"\n").unwrap();
        assert_eq!(
            w,
            "{\"tracer\":\"irqsoff\",\"n\":1,\"unit\":\"us\",\"latency\":5,\"trace\":\"# tracer: irqsoff\\n\\\"x\\\"\\n\"}\n"
        );
    }
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

    #[test]
    fn stat_and_hist() {
        let mut s = Stat::default();
        let mut h = Hist::new(10, 3);
        for v in [5, 15, 25, 35, 0] {
            s.add(v);
            h.add(v);
        }
        assert_eq!((s.count, s.min, s.max, s.sum, s.avg(), s.last), (5, 0, 35, 80, 16, 0));
        assert_eq!((h.buckets.clone(), h.over, h.total()), (alloc::vec![2, 1, 1], 1, 5));
        let mut h = Hist::new(0, 0);
        h.add(u64::MAX);
        assert_eq!((h.width, h.buckets.len(), h.over), (1, 1, 1));
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
