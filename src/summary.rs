//! `tr-cat --stats`: what a buffer or a trace.dat holds, in 80 columns —
//! the time span, events and losses per CPU, events per type and per task.
//! Counted from the records as a reader hands them over
//! (`TraceSummary::record`, `TraceSummary::lost`), and formatted with
//! the trace's names (`Summarized`); no I/O.

use crate::format::EventTable;
use crate::problems::Problems;
use crate::render::{write_timestamp, Cmdlines};
use crate::vecmap::VecMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt::Write as _;

/// Counts by key, sorted by key.
type Counts = VecMap<i64, u64>;

impl Counts {
    /// Add `n` to the count of `k` (made 0 when new: a key seen with
    /// nothing to count is still a row).
    fn add(&mut self, k: i64, n: u64) {
        *self.entry(k, || 0) += n;
    }

    /// The count of `k`, 0 when absent.
    fn count(&self, k: i64) -> u64 {
        self.get(&k).copied().unwrap_or(0)
    }

    /// Most first, then by key.
    fn ranked(&self) -> Vec<(i64, u64)> {
        let mut v: Vec<(i64, u64)> = self.iter().map(|(k, n)| (*k, *n)).collect();
        v.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }
}

/// What `tr-cat --stats` shows of a buffer or a trace.dat: records and
/// losses counted by CPU, event and task, and the time span.
#[derive(Default)]
pub(crate) struct TraceSummary {
    /// Per CPU (keyed by [`cpu_key`]): events, lost events counted, losses
    /// of unknown size.
    cpus: Counts,
    lost: Counts,
    unknown: Counts,
    by_event: Counts,
    by_pid: Counts,
    span: Option<(u64, u64)>,
}

/// The trace a [`TraceSummary`] counted: what its report names things
/// with, and what was read past.
pub(crate) struct Summarized<'a> {
    /// The events' formats: the names of the event ids.
    pub(crate) events: &'a EventTable,
    /// The comms of the pids.
    pub(crate) cmdlines: &'a Cmdlines,
    /// The buffers' names, when the records came from several (the
    /// `buffer` of [`TraceSummary::record`] indexes them; `""` is the top
    /// one).
    pub(crate) buffers: &'a [String],
    /// The trace clock counts nanoseconds (times print as seconds).
    pub(crate) in_ns: bool,
    /// What the reader read past.
    pub(crate) problems: &'a Problems,
}

impl TraceSummary {
    /// Count a record of CPU `cpu` of buffer `buffer` at `ts`: an event of
    /// id `event` (`common_type`) written by `pid`.
    pub(crate) fn record(&mut self, buffer: u32, cpu: u32, ts: u64, event: u32, pid: i32) {
        self.cpus.add(cpu_key(buffer, cpu), 1);
        self.by_event.add(event.into(), 1);
        self.by_pid.add(pid.into(), 1);
        self.span(ts);
    }

    /// Count a loss on CPU `cpu` of buffer `buffer`, before the page at
    /// `ts`: `count` events, or an unknown number.
    pub(crate) fn lost(&mut self, buffer: u32, cpu: u32, ts: u64, count: Option<u64>) {
        let k = cpu_key(buffer, cpu);
        self.cpus.add(k, 0);
        match count {
            Some(n) => self.lost.add(k, n),
            None => self.unknown.add(k, 1),
        }
        self.span(ts);
    }

    /// Count what `part` counted too (another part of the same trace,
    /// such as a time slice): the counts add up, the span widens.
    pub(crate) fn merge(&mut self, part: TraceSummary) {
        let pairs = [
            (&mut self.cpus, &part.cpus),
            (&mut self.lost, &part.lost),
            (&mut self.unknown, &part.unknown),
            (&mut self.by_event, &part.by_event),
            (&mut self.by_pid, &part.by_pid),
        ];
        for (mine, theirs) in pairs {
            for (k, n) in theirs.iter() {
                mine.add(*k, *n);
            }
        }
        if let Some((first, last)) = part.span {
            self.span(first);
            self.span(last);
        }
    }

    fn span(&mut self, ts: u64) {
        self.span = Some(self.span.map_or((ts, ts), |(a, b)| (a.min(ts), b.max(ts))));
    }

    /// The report; `all_tasks`: a row per task, not per comm and cut.
    /// Then what was read past, if anything: a count per kind of problem
    /// (`trbox::problems`), with the first message of each.
    pub(crate) fn render(&self, m: &Summarized<'_>, all_tasks: bool) -> String {
        let mut o = self.render_counts(m, all_tasks);
        if !m.problems.is_empty() {
            o += "\n    problems  kind: the first of them\n";
            for (kind, n) in m.problems.counts() {
                let first = m.problems.first(kind).unwrap_or("");
                let _ = writeln!(o, "{n:>12}  {}", clip(&format!("{kind}: {first}"), 66));
            }
        }
        o
    }

    fn render_counts(&self, m: &Summarized<'_>, all_tasks: bool) -> String {
        let mut o = String::new();
        let total: u64 = self.cpus.iter().map(|c| *c.1).sum();
        let _ = write!(o, "{total} events");
        if let Some((a, b)) = self.span {
            let in_ns = m.in_ns;
            o += ", from";
            let _ = write_timestamp(&mut o, a, in_ns);
            o += " to";
            let _ = write_timestamp(&mut o, b, in_ns);
            if in_ns {
                let _ = write!(o, " ({}.{:06} s)", (b - a) / 1_000_000_000, (b - a) % 1_000_000_000 / 1000);
            }
        }
        // Several buffers: which one each CPU row is of.
        let several = m.buffers.len() > 1;
        o += if several {
            "\n\n  buffer            cpu       events         lost\n"
        } else {
            "\n\n  cpu       events         lost\n"
        };
        for (&k, &n) in self.cpus.iter() {
            let lost = self.lost.count(k);
            let l = if self.unknown.count(k) > 0 { format!("{lost}+?") } else { lost.to_string() };
            let (buffer, cpu) = (k >> 32, k & 0xffff_ffff);
            if several {
                let name = m.buffers.get(buffer as usize).map_or("?", |b| if b.is_empty() { "(top)" } else { b });
                let _ = write!(o, "  {:<16}", clip(name, 16));
            }
            let _ = writeln!(o, "{cpu:>5} {n:>12} {l:>12}");
        }
        o += "\n      events  event\n";
        for (id, n) in self.by_event.ranked() {
            let name = u32::try_from(id)
                .ok()
                .and_then(|i| m.events.get(i))
                .map_or(format!("id {id}"), |e| format!("{}:{}", e.system, e.name));
            let _ = writeln!(o, "{n:>12}  {}", clip(&name, 66));
        }
        o += "\n      events  task\n";
        if all_tasks || self.by_pid.len() <= crate::lat::TOP {
            for (pid, n) in self.by_pid.ranked() {
                let comm = m.cmdlines.comm(pid as i32);
                let _ = writeln!(o, "{n:>12}  {}", clip(&format!("{comm}-{pid}"), 66));
            }
            return o;
        }
        // More than fit: the tasks of one comm in one row (a board's
        // `sleep-PID` by the hundred), the most events first, TOP rows.
        let mut groups: Vec<(&str, u64, usize, i64)> = Vec::new();
        for (&pid, &n) in self.by_pid.iter() {
            let comm = m.cmdlines.comm(pid as i32);
            match groups.iter_mut().find(|g| g.0 == comm) {
                Some(g) => {
                    g.1 += n;
                    g.2 += 1;
                }
                None => groups.push((comm, n, 1, pid)),
            }
        }
        // Unstable: no two groups have one comm, so no ties.
        groups.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        for (comm, n, tasks, pid) in groups.iter().take(crate::lat::TOP) {
            let name = if *tasks == 1 { format!("{comm}-{pid}") } else { format!("{comm} ({tasks} tasks)") };
            let _ = writeln!(o, "{n:>12}  {}", clip(&name, 66));
        }
        if groups.len() > crate::lat::TOP {
            let _ = writeln!(o, "  and {} more (--all: every task)", groups.len() - crate::lat::TOP);
        }
        o
    }
}

/// The key of a CPU row: its buffer, then the CPU (rows sort that way).
fn cpu_key(buffer: u32, cpu: u32) -> i64 {
    (i64::from(buffer) << 32) | i64::from(cpu)
}

/// At most `n` characters (names stay within 80 columns).
fn clip(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}
