//! tr-lat's tracer modes, where the kernel measured and each entry is one
//! sample (nothing to pair):
//! - `timerlat`: the timerlat tracer's `ftrace/timerlat` entries
//!   (`seqnum`, `context` 0 IRQ, 1 thread, 2 user return (6.5+),
//!   `timer_latency` in ns), per CPU and context;
//! - `osnoise`: the osnoise tracer's `ftrace/osnoise` entries, one per
//!   period and CPU: `runtime`, `noise` and `max_sample` in µs
//!   (kernel/trace/trace_osnoise.c stores them with `time_to_us`), and the
//!   HW / NMI / IRQ / softirq / thread interference counts; with the
//!   `osnoise:sample_threshold` event, each single noise over the
//!   threshold;
//! - `hwlat`: the hwlat tracer's `ftrace/hwlat` samples, per CPU: the
//!   inner and outer `duration` (µs, as the entries give them).

use super::{find, require, Ev, Missing, Noise, Rec, Rows, Sample, Table, VecMap, MAX_OPEN};
use crate::format::EventTable;

pub(super) const TIMERLAT: &str = "ftrace:timerlat";
pub(super) const OSNOISE: &str = "ftrace:osnoise";
pub(super) const SAMPLE_THRESHOLD: &str = "?osnoise:sample_threshold";
pub(super) const HWLAT: &str = "ftrace:hwlat";

/// The fields read of each entry, and their indexes in [`Ev`].
const TIMERLAT_FIELDS: &[&str] = &["seqnum", "context", "timer_latency"];
const SEQNUM: usize = 0;
const CONTEXT: usize = 1;
const TIMER_LATENCY: usize = 2;
/// ftrace/osnoise's fields, in the order [`Osnoise::record`] takes them.
const OSNOISE_FIELDS: &[&str] =
    &["runtime", "noise", "max_sample", "hw_count", "nmi_count", "irq_count", "softirq_count", "thread_count"];
const THRESHOLD_FIELDS: &[&str] = &["duration"];
const DURATION: usize = 0;
const HWLAT_FIELDS: &[&str] = &["duration", "outer_duration"];
const INNER: usize = 0;
const OUTER: usize = 1;

/// timerlat's `context` of the IRQ's entry (kernel/trace/trace_osnoise.c
/// `IRQ_CONTEXT`; the thread's is 1, a user-space task's return 2).
const IRQ_CONTEXT: i64 = 0;
const THREAD_CONTEXT: i64 = 1;

/// The timerlat mode's event and the seqnums seen.
pub(super) struct Timerlat {
    ev: Ev,
    /// The last IRQ seqnum per CPU.
    seq: VecMap<u32, u32>,
}

impl Timerlat {
    pub(super) fn new(events: &EventTable) -> Result<Timerlat, Missing> {
        Ok(Timerlat { ev: require(events, TIMERLAT, TIMERLAT_FIELDS)?, seq: VecMap::new() })
    }

    /// Feed one record; `taken` counts the samples the kernel took while
    /// we read, by their seqnums (every timer IRQ takes the next one,
    /// recorded or not).
    pub(super) fn record(&mut self, rows: &mut Rows, taken: &mut u64, r: &Rec) -> Option<Sample> {
        let ev = Some(&self.ev).filter(|ev| ev.id == r.id)?;
        let seq = r.int(ev, SEQNUM)? as u32;
        let ctx = r.int(ev, CONTEXT)?;
        let ns = r.int(ev, TIMER_LATENCY)? as u64;
        let table = match ctx {
            IRQ_CONTEXT => Table::TimerIrq,
            THREAD_CONTEXT => Table::TimerThread,
            _ => Table::TimerUser,
        };
        if ctx == IRQ_CONTEXT && (self.seq.len() < MAX_OPEN || self.seq.contains_key(&r.cpu)) {
            // A seqnum that does not go forward: the tracer started
            // again (it counts from 1 per start).
            *taken += match self.seq.insert(r.cpu, seq).map(|prev| seq.wrapping_sub(prev)) {
                Some(d) if d > 0 && d < 1 << 31 => u64::from(d),
                _ => 1,
            };
        }
        rows.add(table, i64::from(r.cpu), None, ns);
        Some(r.entry(table, ns))
    }
}

/// The osnoise mode's events and per-CPU totals.
pub(super) struct Osnoise {
    ev: Ev,
    threshold: Option<Ev>,
    pub(super) noise: VecMap<u32, Noise>,
}

impl Osnoise {
    pub(super) fn new(events: &EventTable) -> Result<Osnoise, Missing> {
        Ok(Osnoise {
            ev: require(events, OSNOISE, OSNOISE_FIELDS)?,
            threshold: find(events, SAMPLE_THRESHOLD, THRESHOLD_FIELDS, false)?,
            noise: VecMap::new(),
        })
    }

    /// Feed one record: a period's entry, or a single noise over the
    /// threshold.
    pub(super) fn record(&mut self, rows: &mut Rows, r: &Rec) -> Option<Sample> {
        if r.id == self.ev.id {
            let ev = &self.ev;
            let mut v = [0u64; 8];
            for (i, v) in v.iter_mut().enumerate() {
                *v = r.int(ev, i).unwrap_or(0) as u64;
            }
            let [runtime, noise, max_sample, hw, nmi, irq, softirq, thread] = v;
            if !self.noise.contains_key(&r.cpu) && self.noise.len() >= MAX_OPEN {
                return None;
            }
            let n = self.noise.entry(r.cpu, Noise::default);
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
            rows.add(Table::Noise, i64::from(r.cpu), None, ns);
            Some(r.entry(Table::Noise, ns))
        } else {
            let ev = self.threshold.as_ref().filter(|ev| ev.id == r.id)?;
            let ns = r.int(ev, DURATION)? as u64;
            rows.add(Table::Single, i64::from(r.cpu), None, ns);
            Some(r.entry(Table::Single, ns))
        }
    }
}

/// The hwlat mode's event.
pub(super) struct Hwlat {
    ev: Ev,
}

impl Hwlat {
    pub(super) fn new(events: &EventTable) -> Result<Hwlat, Missing> {
        Ok(Hwlat { ev: require(events, HWLAT, HWLAT_FIELDS)? })
    }

    /// Feed one record: both samples go in, the inner one is returned.
    pub(super) fn record(&mut self, rows: &mut Rows, r: &Rec) -> Option<Sample> {
        let ev = Some(&self.ev).filter(|ev| ev.id == r.id)?;
        let inner = (r.int(ev, INNER)? as u64).saturating_mul(1000);
        let outer = (r.int(ev, OUTER)? as u64).saturating_mul(1000);
        rows.add(Table::HwOuter, i64::from(r.cpu), None, outer);
        rows.add(Table::HwInner, i64::from(r.cpu), None, inner);
        Some(r.entry(Table::HwInner, inner))
    }
}
