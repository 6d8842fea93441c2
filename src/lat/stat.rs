//! tr-lat's accumulators: the per-key statistics (count, min, avg, max,
//! sum, as rtla's top shows them), the histogram with its overflow row,
//! the osnoise tracer's per-CPU totals (kept in [`VecMap`]s). The modes
//! fill them ([`super::Lat::record`]); the report
//! prints them.

use alloc::string::String;
use alloc::vec::Vec;

use super::{Table, VecMap};

/// Most histogram entries per key (`-E`).
pub(crate) const MAX_ENTRIES: usize = 1 << 16;

/// Tasks, syscalls or CPUs with an open begin that are tracked at most
/// (a damaged stream cannot grow the maps without bound).
pub(crate) const MAX_OPEN: usize = 1 << 16;

/// count, min, avg, max, sum (and the last value: rtla's `cur`), in ns;
/// system calls: how many failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Stat {
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
    pub(crate) fn merge(&mut self, o: &Stat) {
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
pub(crate) struct Hist {
    pub(crate) width: u64,
    pub(crate) buckets: Vec<u64>,
    pub(crate) over: u64,
}

impl Hist {
    /// `width` ns per bucket (at least 1), `entries` buckets (at most
    /// [`MAX_ENTRIES`], at least 1).
    pub(crate) fn new(width: u64, entries: usize) -> Self {
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
    #[cfg(test)]
    pub(crate) fn total(&self) -> u64 {
        self.buckets.iter().sum::<u64>() + self.over
    }
}

/// One row: the name seen in the records (a comm, an IRQ's name), the
/// statistics and the histogram.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub(crate) name: String,
    pub(crate) stat: Stat,
    pub(crate) hist: Option<Hist>,
}

/// Every row of a run, by (table, key), and the histogram shape each new
/// row gets.
pub(crate) struct Rows {
    /// (bucket width in ns, entries), when histograms are kept.
    hist: Option<(u64, usize)>,
    map: VecMap<(Table, i64), Row>,
}

impl Rows {
    pub(crate) fn new(hist: Option<(u64, usize)>) -> Rows {
        Rows { hist, map: VecMap::new() }
    }

    /// Count `ns` in the row of (`table`, `key`), made if new, named
    /// `name` when one is given; the row, for what else the caller counts.
    pub(crate) fn add(&mut self, table: Table, key: i64, name: Option<&str>, ns: u64) -> &mut Row {
        let hist = self.hist;
        let row = self.map.entry((table, key), || Row {
            name: String::new(),
            stat: Stat::default(),
            hist: hist.map(|(w, n)| Hist::new(w, n)),
        });
        if let Some(n) = name.filter(|n| !n.is_empty()) {
            super::set(&mut row.name, n);
        }
        row.stat.add(ns);
        if let Some(h) = row.hist.as_mut() {
            h.add(ns);
        }
        row
    }

    /// Name the row of (`table`, `key`) before anything is counted in it
    /// (an IRQ's name comes with its entry, its exit has none): a row
    /// already named keeps its name.
    pub(crate) fn name(&mut self, table: Table, key: i64, name: &str) {
        if let Some(r) = self.map.get_mut(&(table, key)) {
            if r.name.is_empty() {
                r.name = String::from(name);
            }
        } else if self.map.len() < MAX_OPEN && !name.is_empty() {
            let hist = self.hist.map(|(w, n)| Hist::new(w, n));
            self.map.insert((table, key), Row { name: String::from(name), stat: Stat::default(), hist });
        }
    }

    /// Whether the row of (`table`, `key`) has a name.
    pub(crate) fn named(&self, table: Table, key: i64) -> bool {
        self.map.get(&(table, key)).is_some_and(|r| !r.name.is_empty())
    }

    /// The rows with a count, by table then key.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Table, i64, &Row)> {
        self.map.iter().filter(|(_, r)| r.stat.count > 0).map(|(&(t, k), r)| (t, k, r))
    }
}

/// The osnoise tracer's totals for one CPU (µs, as the entries give them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Noise {
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
    pub(crate) fn available_mpct(&self) -> u64 {
        if self.runtime == 0 {
            return 0;
        }
        let free = self.runtime.saturating_sub(self.noise) as u128;
        (free * 100_000 / self.runtime as u128) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
