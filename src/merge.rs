//! Streaming k-way merge of per-CPU record streams by timestamp.
//!
//! Order: by timestamp; ties go to the lower stream index (the CPU; for
//! several buffers of a trace.dat, the streams are ordered by buffer, then
//! CPU); each stream's own order is kept. The merge is a scheduler over `CpuStream`s — it only peeks at
//! timestamps and says which CPU goes next — so streams can hand out records
//! that borrow their own page buffers (zero-copy), and can say
//! `Peek::Pending` ("no data right now", e.g. EAGAIN on a live
//! `trace_pipe_raw`). A pending CPU holds back every record that might sort
//! after its next one; `Merger::next_ready` ignores pending CPUs instead
//! (for follow mode after a poll timeout).
//!
//! For owned items from plain iterators, `merge` gives an `Iterator` of
//! `(cpu, item)`.
//!
//! Selection is a linear scan for up to `SCAN_MAX` CPUs (fastest for the
//! small counts of embedded boards) and a binary heap above that.

use crate::page::{PageItem, Record};
use alloc::collections::BinaryHeap;
use alloc::vec::Vec;
use core::cmp::Reverse;

/// Up to this many CPUs the merge scans; above, it uses a heap.
pub(crate) const SCAN_MAX: usize = 16;

/// Something with a timestamp to merge by.
pub trait Timestamped {
    /// The time to merge by.
    fn timestamp(&self) -> u64;
}

impl Timestamped for Record<'_> {
    #[inline]
    fn timestamp(&self) -> u64 {
        self.ts
    }
}

impl Timestamped for PageItem<'_> {
    #[inline]
    fn timestamp(&self) -> u64 {
        match self {
            PageItem::Lost { ts, .. } => *ts,
            PageItem::Record(r) => r.ts,
        }
    }
}

impl<T> Timestamped for (u64, T) {
    #[inline]
    fn timestamp(&self) -> u64 {
        self.0
    }
}

impl<T: Timestamped> Timestamped for &T {
    #[inline]
    fn timestamp(&self) -> u64 {
        (**self).timestamp()
    }
}

/// What a stream's head looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Peek {
    /// The next item has this timestamp.
    Ready(u64),
    /// No item available now; more may come.
    Pending,
    /// The stream is finished.
    End,
}

/// One CPU's stream, as the merge sees it.
pub(crate) trait CpuStream {
    /// The timestamp of the next item, without consuming it. Called again
    /// after the caller consumed the item the merge pointed at, and on every
    /// [`Merger::next`] while the stream is pending.
    fn peek(&mut self) -> Peek;
}

/// The merge's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pick {
    /// Consume exactly one item from this CPU's stream, then ask again.
    Cpu(usize),
    /// This CPU is pending and might have an earlier item: feed it (or use
    /// [`Merger::next_ready`]) and ask again.
    Pending(usize),
    /// Every stream has ended.
    End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    /// Must be peeked (start, or its head was just consumed).
    Unknown,
    Ready,
    Pending,
    End,
}

/// The merge state for a fixed number of CPU streams.
#[derive(Debug, Clone)]
pub(crate) struct Merger {
    st: Vec<St>,
    /// Scan mode: the head timestamp of each Ready CPU, `u64::MAX` for the
    /// others (a Ready head at `u64::MAX` is found by a slow path).
    keys: Vec<u64>,
    /// Timestamp of the last head seen per CPU (a lower bound for the next).
    last: Vec<u64>,
    /// The CPU whose head was handed out last: peek it again first.
    taken: Option<u32>,
    /// CPUs never peeked yet.
    unknown: Vec<u32>,
    /// CPUs that said Pending: peeked again on every step.
    pending: Vec<u32>,
    scratch: Vec<u32>,
    /// Heap mode (more than SCAN_MAX CPUs): ready heads.
    heap: Option<BinaryHeap<Reverse<(u64, u32)>>>,
}

impl Merger {
    /// A merge over `ncpu` streams (the slice passed to [`Merger::next`] is
    /// indexed by CPU; it must have this length).
    pub(crate) fn new(ncpu: usize) -> Merger {
        Merger::with_mode(ncpu, ncpu > SCAN_MAX)
    }

    /// Choose the heap (`true`) or the linear scan explicitly (benchmarks).
    pub(crate) fn with_mode(ncpu: usize, heap: bool) -> Merger {
        let ncpu = ncpu.min(u32::MAX as usize);
        Merger {
            st: alloc::vec![St::Unknown; ncpu],
            keys: alloc::vec![u64::MAX; ncpu],
            last: alloc::vec![0; ncpu],
            taken: None,
            unknown: (0..ncpu as u32).rev().collect(),
            pending: Vec::new(),
            scratch: Vec::new(),
            heap: heap.then(|| BinaryHeap::with_capacity(ncpu)),
        }
    }

    /// Which CPU's item comes next; strict: waits on pending CPUs.
    #[inline]
    pub(crate) fn next<S: CpuStream>(&mut self, streams: &mut [S]) -> Pick {
        self.step(streams, true)
    }

    /// Like [`Merger::next`] but pending CPUs are skipped: the smallest
    /// available head goes next. `End` only when every stream ended;
    /// `Pending(c)` when nothing is available at all.
    #[inline]
    pub(crate) fn next_ready<S: CpuStream>(&mut self, streams: &mut [S]) -> Pick {
        self.step(streams, false)
    }

    /// Forget a CPU (its stream is gone): it no longer holds back others.
    #[cfg(test)]
    pub(crate) fn close(&mut self, cpu: usize) {
        let Some(s) = self.st.get_mut(cpu) else { return };
        *s = St::End;
        if let Some(k) = self.keys.get_mut(cpu) {
            *k = u64::MAX;
        }
        let c = cpu as u32;
        if self.taken == Some(c) {
            self.taken = None;
        }
        self.pending.retain(|&p| p != c);
        self.unknown.retain(|&p| p != c);
        if let Some(h) = self.heap.as_mut() {
            h.retain(|&Reverse((_, x))| x != c);
        }
    }

    #[inline]
    fn peek_one<S: CpuStream>(&mut self, streams: &mut [S], c: u32) {
        let cu = c as usize;
        let Some(st) = self.st.get_mut(cu) else { return };
        if *st == St::End {
            return;
        }
        let peek = match streams.get_mut(cu) {
            Some(s) => s.peek(),
            None => Peek::End,
        };
        match peek {
            Peek::Ready(t) => {
                *st = St::Ready;
                set(&mut self.last, cu, t);
                set(&mut self.keys, cu, t);
                if let Some(h) = self.heap.as_mut() {
                    h.push(Reverse((t, c)));
                }
            }
            Peek::Pending => {
                *st = St::Pending;
                set(&mut self.keys, cu, u64::MAX);
                self.pending.push(c);
            }
            Peek::End => {
                *st = St::End;
                set(&mut self.keys, cu, u64::MAX);
            }
        }
    }

    #[inline]
    fn best(&self) -> Option<(u64, usize)> {
        if let Some(h) = self.heap.as_ref() {
            return h.peek().map(|&Reverse((t, c))| (t, c as usize));
        }
        let (mut bt, mut bi) = (u64::MAX, usize::MAX);
        for (i, &k) in self.keys.iter().enumerate() {
            if k < bt {
                bt = k;
                bi = i;
            }
        }
        if bi != usize::MAX {
            return Some((bt, bi));
        }
        // Only heads at u64::MAX (or none) are left.
        self.st.iter().position(|&s| s == St::Ready).map(|i| (u64::MAX, i))
    }

    #[inline]
    fn step<S: CpuStream>(&mut self, streams: &mut [S], strict: bool) -> Pick {
        if let Some(c) = self.taken.take() {
            self.peek_one(streams, c);
        }
        while let Some(c) = self.unknown.pop() {
            self.peek_one(streams, c);
        }
        if !self.pending.is_empty() {
            let mut p = core::mem::take(&mut self.scratch);
            core::mem::swap(&mut p, &mut self.pending);
            for &c in &p {
                self.peek_one(streams, c);
            }
            p.clear();
            self.scratch = p;
        }
        let best = self.best();
        if strict {
            // A pending CPU's next item is at or after its last head: it
            // holds back everything that would sort after that.
            for &p in &self.pending {
                let bound = (self.last.get(p as usize).copied().unwrap_or(0), p as usize);
                match best {
                    Some(b) if b < bound => {}
                    _ => return Pick::Pending(p as usize),
                }
            }
        }
        match best {
            Some((_, c)) => {
                if let Some(h) = self.heap.as_mut() {
                    h.pop();
                }
                set(&mut self.st, c, St::Unknown);
                set(&mut self.keys, c, u64::MAX);
                self.taken = Some(c as u32);
                Pick::Cpu(c)
            }
            None => match self.pending.first() {
                Some(&p) => Pick::Pending(p as usize),
                None => Pick::End,
            },
        }
    }
}

/// `v[i] = x` (indexes are CPUs the merge was made for).
#[inline(always)]
fn set<T>(v: &mut [T], i: usize, x: T) {
    if let Some(e) = v.get_mut(i) {
        *e = x;
    }
}

/// An iterator as a [`CpuStream`], holding its head item.
pub(crate) struct IterStream<I: Iterator> {
    it: I,
    head: Option<I::Item>,
}

impl<I: Iterator> IterStream<I>
where
    I::Item: Timestamped,
{
    /// The items of `it`, in their order (already by time).
    pub(crate) fn new(it: I) -> Self {
        IterStream { it, head: None }
    }

    /// The head item (the one the merge pointed at).
    pub(crate) fn take(&mut self) -> Option<I::Item> {
        self.head.take().or_else(|| self.it.next())
    }
}

impl<I: Iterator> CpuStream for IterStream<I>
where
    I::Item: Timestamped,
{
    #[inline]
    fn peek(&mut self) -> Peek {
        if self.head.is_none() {
            self.head = self.it.next();
        }
        match &self.head {
            Some(x) => Peek::Ready(x.timestamp()),
            None => Peek::End,
        }
    }
}

/// Merged `(cpu, item)` pairs from per-CPU iterators (index = CPU).
pub struct MergeIter<I: Iterator> {
    streams: Vec<IterStream<I>>,
    m: Merger,
}

impl<I: Iterator> Iterator for MergeIter<I>
where
    I::Item: Timestamped,
{
    type Item = (usize, I::Item);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self.m.next(&mut self.streams) {
            Pick::Cpu(c) => Some((c, self.streams.get_mut(c)?.take()?)),
            Pick::Pending(_) | Pick::End => None,
        }
    }
}

/// Merge per-CPU iterators (the n-th is CPU n) by timestamp.
#[cfg(test)]
pub(crate) fn merge<I>(per_cpu: impl IntoIterator<Item = I>) -> MergeIter<I>
where
    I: Iterator,
    I::Item: Timestamped,
{
    let streams: Vec<_> = per_cpu.into_iter().map(IterStream::new).collect();
    let m = Merger::new(streams.len());
    MergeIter { streams, m }
}

/// `merge` with the selection mode forced (for benchmarks).
pub fn merge_with_mode<I>(per_cpu: impl IntoIterator<Item = I>, heap: bool) -> MergeIter<I>
where
    I: Iterator,
    I::Item: Timestamped,
{
    let streams: Vec<_> = per_cpu.into_iter().map(IterStream::new).collect();
    let m = Merger::with_mode(streams.len(), heap);
    MergeIter { streams, m }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn check(inputs: &[Vec<u64>], heap: bool) {
        let iters: Vec<_> =
            inputs.iter().map(|v| v.iter().enumerate().map(|(i, &t)| (t, i)).collect::<Vec<_>>().into_iter()).collect();
        let out: Vec<(usize, (u64, usize))> = merge_with_mode(iters, heap).collect();
        // Reference: a stable sort by (ts, cpu) of all items in per-CPU order.
        let mut want: Vec<(u64, usize, usize)> = Vec::new();
        for (c, v) in inputs.iter().enumerate() {
            for (i, &t) in v.iter().enumerate() {
                want.push((t, c, i));
            }
        }
        want.sort();
        let got: Vec<(u64, usize, usize)> = out.iter().map(|&(c, (t, i))| (t, c, i)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn merges_sorted_streams_both_modes() {
        let cases: Vec<Vec<Vec<u64>>> = vec![
            vec![],
            vec![vec![]],
            vec![vec![1, 2, 3]],
            vec![vec![1, 4, 9], vec![2, 3, 10], vec![], vec![0, 100]],
            vec![vec![5, 5, 5], vec![5, 5], vec![5]],
            vec![vec![u64::MAX], vec![0, u64::MAX]],
        ];
        for c in &cases {
            check(c, false);
            check(c, true);
        }
        // Many CPUs, pseudo-random timestamps.
        let mut x = 0x1234_5678u64;
        let mut many = Vec::new();
        for _ in 0..40 {
            let mut v = Vec::new();
            let mut t = 0;
            for _ in 0..(x % 50) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                t += x % 4;
                v.push(t);
            }
            many.push(v);
        }
        check(&many, false);
        check(&many, true);
        check(&many[..5], false);
        check(&many[..5], true);
    }

    /// A stream fed by hand, to test Pending.
    struct Manual {
        q: Vec<u64>,
        ended: bool,
    }

    impl CpuStream for Manual {
        fn peek(&mut self) -> Peek {
            match self.q.first() {
                Some(&t) => Peek::Ready(t),
                None if self.ended => Peek::End,
                None => Peek::Pending,
            }
        }
    }

    #[test]
    fn pending_holds_back_later_items() {
        for heap in [false, true] {
            let mut s = vec![Manual { q: vec![10, 20], ended: false }, Manual { q: vec![], ended: false }];
            let mut m = Merger::with_mode(2, heap);
            // CPU 1 has never produced anything: it may have anything.
            assert_eq!(m.next(&mut s), Pick::Pending(1));
            // next_ready ignores it.
            assert_eq!(m.next_ready(&mut s), Pick::Cpu(0));
            s[0].q.remove(0);
            s[1].q.push(15);
            assert_eq!(m.next(&mut s), Pick::Cpu(1));
            s[1].q.remove(0);
            // CPU 1 pending with last head 15: 20 might follow something
            // before it, so wait.
            assert_eq!(m.next(&mut s), Pick::Pending(1));
            s[1].q.push(17);
            assert_eq!(m.next(&mut s), Pick::Cpu(1));
            s[1].q.remove(0);
            s[1].ended = true;
            assert_eq!(m.next(&mut s), Pick::Cpu(0));
            s[0].q.remove(0);
            s[0].q.push(12); // (as a bound test: below CPU 0's own last, still fine)
            assert_eq!(m.next(&mut s), Pick::Cpu(0));
            s[0].q.remove(0);
            assert_eq!(m.next(&mut s), Pick::Pending(0));
            s[0].ended = true;
            assert_eq!(m.next(&mut s), Pick::End);
        }
    }

    #[test]
    fn pending_does_not_block_earlier_items() {
        let mut s = vec![Manual { q: vec![5], ended: false }, Manual { q: vec![30], ended: false }];
        let mut m = Merger::new(2);
        assert_eq!(m.next(&mut s), Pick::Cpu(0));
        s[0].q.clear();
        // CPU 0 pending with last head 5; CPU 1's 30 must wait.
        assert_eq!(m.next(&mut s), Pick::Pending(0));
        m.close(0);
        assert_eq!(m.next(&mut s), Pick::Cpu(1));
        s[1].q.clear();
        s[1].ended = true;
        assert_eq!(m.next(&mut s), Pick::End);
    }

    #[test]
    fn page_items_merge() {
        use crate::abi::Endian;
        use crate::page::build::{Ev, PageBuilder};
        use crate::page::{Missed, Page, PageLayout};
        let l = PageLayout::new(8, 4096);
        let mut a = PageBuilder::new(l, Endian::Little, 100);
        a.push(Ev::Data { delta: 1, payload: b"a1__", force_long: false });
        a.push(Ev::Data { delta: 10, payload: b"a2__", force_long: false });
        let mut b = PageBuilder::new(l, Endian::Little, 105);
        b.push(Ev::Data { delta: 0, payload: b"b1__", force_long: false });
        let (pa, pb) = (a.finish(Missed::None, None), b.finish(Missed::Count(3), None));
        let (pa, pb) = (Page::parse(&pa, &l, Endian::Little).unwrap(), Page::parse(&pb, &l, Endian::Little).unwrap());
        let out: Vec<(usize, u64)> = merge([pa.items().map(Result::unwrap), pb.items().map(Result::unwrap)])
            .map(|(c, i)| (c, i.timestamp()))
            .collect();
        assert_eq!(out, [(0, 101), (1, 105), (1, 105), (0, 111)]);
    }
}
