//! The data area of a trace.dat being recorded: page-sized slots after the
//! header, handed out in arrival order (CPUs interleaved), at most
//! `max_slots` of them (`-m`: the globally oldest page makes room for a new
//! one). Version 6 wants each CPU's pages contiguous, so [`Pool::finish`]
//! permutes the slots in place — one page moved at a time, no second copy of
//! the data on disk (on a full disk there is no room for one) and no more
//! memory than two pages plus a few bytes per slot.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

pub(crate) struct Pool {
    pub(crate) data_start: u64,
    pub(crate) page_size: usize,
    /// Per CPU index: its slots, oldest first.
    queues: Vec<VecDeque<u32>>,
    /// Per CPU index: the page timestamp of the queue's first slot (for the
    /// eviction choice), read back from the file when it changes.
    front_ts: Vec<Option<u64>>,
    /// Slots ever handed out (slot numbers are below this).
    used: u32,
    /// Slots handed out but not written (a failed write); reused first.
    free: Vec<u32>,
    max_slots: Option<u32>,
    /// Pages dropped to stay within `max_slots`, per CPU index.
    pub(crate) evicted: Vec<u64>,
}

/// What the recording found in one CPU's pages (counted as
/// `Pool::finish` puts them in place), and where they ended up.
#[derive(Debug, Clone, Default)]
pub(crate) struct CpuData {
    /// File offset of the CPU's first page (its pages are contiguous).
    pub(crate) offset: u64,
    /// Pages written.
    pub(crate) pages: u64,
    /// Events in them.
    pub(crate) records: u64,
    /// Lost events the page headers counted.
    pub(crate) lost: u64,
    /// Pages flagged with a loss of unknown size.
    pub(crate) lost_unknown: u64,
    /// Pages that did not decode.
    pub(crate) damaged: u64,
}

impl Pool {
    pub(crate) fn new(data_start: u64, page_size: usize, cpus: usize, max_slots: Option<u32>) -> Pool {
        Pool {
            data_start,
            page_size,
            queues: vec![VecDeque::new(); cpus],
            front_ts: vec![None; cpus],
            used: 0,
            free: Vec::new(),
            max_slots: max_slots.map(|m| m.max(1)),
            evicted: vec![0; cpus],
        }
    }

    pub(crate) fn offset(&self, slot: u32) -> u64 {
        self.data_start + u64::from(slot) * self.page_size as u64
    }

    /// Pages kept so far.
    pub(crate) fn pages(&self) -> u64 {
        self.queues.iter().map(|q| q.len() as u64).sum()
    }

    /// A slot for the next page (not yet owned by any CPU: call
    /// [`Pool::commit`] once it is written, [`Pool::release`] if not).
    pub(crate) fn take(&mut self, file: &File) -> u32 {
        if let Some(s) = self.free.pop() {
            return s;
        }
        if self.max_slots.map_or(true, |m| self.used < m) {
            self.used += 1;
            return self.used - 1;
        }
        // Full: drop the oldest page of all CPUs.
        let mut victim = 0;
        let mut oldest = u64::MAX;
        for c in 0..self.queues.len() {
            if self.queues[c].is_empty() {
                continue;
            }
            let ts = self.front_ts(file, c).unwrap_or(0);
            if ts < oldest || oldest == u64::MAX {
                (victim, oldest) = (c, ts);
            }
        }
        self.evicted[victim] += 1;
        self.front_ts[victim] = None;
        self.queues[victim].pop_front().unwrap_or(0)
    }

    /// The page in `slot` now belongs, as its newest page, to CPU index `cpu`.
    pub(crate) fn commit(&mut self, cpu: usize, slot: u32) {
        if let Some(q) = self.queues.get_mut(cpu) {
            q.push_back(slot);
        }
    }

    /// A guard's copy: the run committed `slot` to CPU index `cpu` (its
    /// [`Pool::take`] may have evicted the page there: the oldest of the
    /// CPU it belonged to).
    pub(crate) fn adopt(&mut self, cpu: usize, slot: u32) {
        if slot >= self.used {
            self.used = slot.saturating_add(1);
        } else if let Some(c) = self.queues.iter().position(|q| q.front() == Some(&slot)) {
            self.queues[c].pop_front();
            self.evicted[c] += 1;
            self.front_ts[c] = None;
        }
        self.free.retain(|&s| s != slot);
        self.commit(cpu, slot);
    }

    /// `slot` was not written after all.
    pub(crate) fn release(&mut self, slot: u32) {
        self.free.push(slot);
    }

    fn front_ts(&mut self, file: &File, cpu: usize) -> Option<u64> {
        if self.front_ts[cpu].is_none() {
            let s = *self.queues[cpu].front()?;
            let mut b = [0u8; 8];
            file.read_exact_at(&mut b, self.offset(s)).ok()?;
            // Live pages are in this machine's byte order.
            self.front_ts[cpu] = Some(u64::from_ne_bytes(b));
        }
        self.front_ts[cpu]
    }

    /// Put each CPU's pages together, in CPU order, from `data_start` on;
    /// `page(cpu, bytes, data)` sees every kept page once (to count events).
    /// Returns each CPU's `(offset, size)` in the file and the end of the data.
    pub(crate) fn finish(
        self,
        file: &File,
        mut page: impl FnMut(usize, &[u8], &mut CpuData),
    ) -> io::Result<(Vec<CpuData>, u64)> {
        let ps = self.page_size;
        let n = self.used as usize;
        // dest[slot] = final position (u32::MAX: free slot).
        let mut dest = vec![u32::MAX; n];
        let mut owner = vec![0u32; n];
        let mut out: Vec<CpuData> = Vec::with_capacity(self.queues.len());
        let mut pos = 0u32;
        for (c, q) in self.queues.iter().enumerate() {
            out.push(CpuData { offset: self.offset(pos), pages: q.len() as u64, ..Default::default() });
            for &s in q {
                dest[s as usize] = pos;
                owner[s as usize] = c as u32;
                pos += 1;
            }
        }
        let end = self.offset(pos);
        let mut moved = vec![false; n];
        let mut carry = vec![0u8; ps];
        let mut tmp = vec![0u8; ps];
        for start in 0..n {
            if dest[start] == u32::MAX || moved[start] {
                continue;
            }
            // Follow the chain start → dest[start] → …: each slot's page is
            // picked up before its place is overwritten.
            file.read_exact_at(&mut carry, self.offset(start as u32))?;
            moved[start] = true;
            let c = owner[start] as usize;
            page(c, &carry, &mut out[c]);
            let mut d = dest[start] as usize;
            if d == start {
                continue; // already in place
            }
            loop {
                // A slot already picked up (the chain's start: a cycle
                // closes) or free takes the page and ends the chain.
                let live = dest.get(d).is_some_and(|&x| x != u32::MAX) && !moved[d];
                if live {
                    file.read_exact_at(&mut tmp, self.offset(d as u32))?;
                    moved[d] = true;
                    let c = owner[d] as usize;
                    page(c, &tmp, &mut out[c]);
                }
                file.write_all_at(&carry, self.offset(d as u32))?;
                if !live {
                    break;
                }
                std::mem::swap(&mut carry, &mut tmp);
                d = dest[d] as usize;
            }
        }
        Ok((out, end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(tag: u64, ps: usize) -> Vec<u8> {
        let mut p = vec![0u8; ps];
        p[..8].copy_from_slice(&tag.to_ne_bytes());
        p
    }

    /// Interleaved CPUs, evictions and a failed write: every CPU ends up
    /// contiguous, oldest first, with exactly the pages it kept.
    #[test]
    fn permutes_in_place() {
        let dir = std::env::temp_dir().join(format!("trbox-pool-{}", std::process::id()));
        let ps = 64;
        for max in [None, Some(5), Some(1), Some(3)] {
            let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&dir).unwrap();
            let mut pool = Pool::new(128, ps, 3, max);
            // (cpu, tag): tag doubles as the page timestamp.
            let arrivals = [(0, 10), (1, 11), (0, 12), (2, 13), (2, 14), (1, 15), (0, 16), (2, 17), (1, 18)];
            let mut kept: Vec<Vec<u64>> = vec![vec![]; 3];
            for (i, &(c, tag)) in arrivals.iter().enumerate() {
                let s = pool.take(&f);
                if i == 4 {
                    pool.release(s); // a write that failed
                    continue;
                }
                f.write_all_at(&page(tag, ps), pool.offset(s)).unwrap();
                pool.commit(c, s);
                kept[c].push(tag);
            }
            let evicted: u64 = pool.evicted.iter().sum();
            let mut seen = [0; 3];
            let (cpus, end) = pool
                .finish(&f, |c, _, d| {
                    seen[c] += 1;
                    d.records += 1;
                })
                .unwrap();
            let total: usize = kept.iter().map(Vec::len).sum();
            assert_eq!(total as u64 - evicted, cpus.iter().map(|c| c.pages).sum::<u64>(), "max {max:?}");
            assert_eq!(end, 128 + (total as u64 - evicted) * ps as u64);
            for (c, d) in cpus.iter().enumerate() {
                assert_eq!(seen[c] as u64, d.pages);
                let mut got = vec![];
                for k in 0..d.pages {
                    let mut b = [0u8; 8];
                    f.read_exact_at(&mut b, d.offset + k * ps as u64).unwrap();
                    got.push(u64::from_ne_bytes(b));
                }
                // The newest pages survive, in order.
                let want = &kept[c][kept[c].len() - d.pages as usize..];
                assert_eq!(got, want, "cpu {c} max {max:?}");
            }
            if max.is_none() {
                assert_eq!(evicted, 0);
            }
        }
        let _ = std::fs::remove_file(&dir);
    }
}
