//! Time-sliced reading: every CPU decodes a part of the trace, start to
//! end. parallel.rs splits the work by stage (one thread merges and hands
//! out batches, the others render), and its merge thread is as slow as
//! the rendering it feeds: a second CPU added little. Here the trace is
//! cut by time instead, and each worker does everything for its slice —
//! the page walk, the merge, the event lookup, the filters and the text —
//! from the pages that overlap it. Only the writing is in order.
//!
//! First each CPU's pages are walked once (a thread per CPU, no record
//! decoded): that notes each page's first time and gives the counts
//! `--stats` and the problem lines report. A file that is not plain —
//! a damaged page, times out of order, a cut tail, a function_graph
//! record (the graph layout folds records in order) — is read the old
//! way, so its output keeps every rule of the one-thread read.
//!
//! A slice is `[lo, hi)` in trace time: all records of that time on any
//! CPU, so records with the same timestamp on two CPUs stay in one slice,
//! in the merge's order (time, then stream). A worker starts each CPU at
//! the page before the last one that begins before `lo` and reads past the
//! records before `lo` without printing them: a stack record takes the
//! verdict of the event before it, which may be in the page before.
//! A loss is the time of the page it precedes, so it falls in one slice.
//!
//! What a worker makes of its slices is its [`SliceSink`]'s: the text
//! ([`Plain`]) or Perfetto's packets (each slice a sequence of its own
//! state), written in slice order, or counts (`--stats`), summed at the
//! end, where the order does not matter.

use super::out::Out;
use super::text::Plain;
use crate::abi::Endian;
use crate::format::EventTable;
use crate::merge::{Merger, Pick};
use crate::page::{Cursor, Missed, Page, PageLayout};
use crate::sys::pages::{file_page_end, Counts, CpuItem, CpuPages, FileRange};
use crate::sys::thread;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// Slices per worker, at least: a slice that renders slower than the
/// others leaves the other workers something to do.
const SLICES_PER_THREAD: u64 = 4;
/// Records per slice, about: the smallest (each slice reopens every CPU's
/// pages) and the largest (a slice's text is held until its turn to be
/// written: ~1.3 MiB of a real capture's text).
const MIN_SLICE: u64 = 256;
const MAX_SLICE: u64 = 12 << 10;
/// Text a slice holds before it looks whether it may write it.
const FLUSH: usize = 256 << 10;
/// The text a slice holds before its turn, at most: past it the worker
/// waits for the turn (records that render into 45 KB lines must not
/// fill the memory: the workers hold about what one thread does).
const HOLD: usize = 2 << 20;
/// The text of finished slices waiting for their turn, at most: past it
/// no worker starts a slice.
const HELD: usize = 4 << 20;

/// What a worker does with the items of its slices, in merged order.
pub(super) trait SliceSink {
    /// A record before the slice, read for its verdict only: a stack
    /// record at the slice's start inherits it.
    fn read_past(&mut self, buffer: u32, cpu: u32, ts: u64, payload: &[u8]);
    /// A record of the slice; what it prints goes to `text`.
    fn record(&mut self, text: &mut Out, buffer: u32, cpu: u32, ts: u64, payload: &[u8]);
    /// A loss of `count` events (`None`: unknown) before the page at `ts`.
    fn lost(&mut self, text: &mut Out, buffer: u32, cpu: u32, ts: u64, count: Option<u64>);
    /// The slice's last item was handed over: what the sink holds of it
    /// goes to `text` (a Perfetto bundle per CPU).
    fn end(&mut self, _text: &mut Out) {}
}

impl SliceSink for Plain<'_> {
    fn read_past(&mut self, buffer: u32, cpu: u32, ts: u64, payload: &[u8]) {
        let _ = self.kept(buffer, cpu, ts, payload);
    }

    fn record(&mut self, text: &mut Out, buffer: u32, cpu: u32, ts: u64, payload: &[u8]) {
        Plain::record(self, text, buffer, cpu, ts, payload)
    }

    fn lost(&mut self, text: &mut Out, buffer: u32, cpu: u32, ts: u64, count: Option<u64>) {
        Plain::lost(self, text, buffer, cpu, ts, count)
    }
}

/// One page of a CPU that has items (records, a loss).
#[derive(Clone, Copy)]
struct Mark {
    /// Its number among the CPU's pages (from 0).
    page: u64,
    /// The time of its first item.
    first: u64,
    /// The time of the record before it (what a reader from this page
    /// checks its times against: [`CpuPages::resume_after`]).
    before: u64,
    /// How many items.
    items: u64,
}

/// One CPU's pages, as the first walk found them.
struct Scanned {
    range: FileRange,
    cpu: u32,
    buffer: u32,
    marks: Vec<Mark>,
    /// The time of its last item.
    last: u64,
}

/// The event ids that start the function_graph layout (funcgraph_entry
/// and _exit), looked up in every record the walk meets.
#[derive(Clone, Copy)]
pub(super) struct GraphIds<'g> {
    /// The session's formats (where `common_type` is).
    pub(super) events: &'g EventTable,
    /// The ids.
    pub(super) ids: &'g [u32],
}

impl GraphIds<'_> {
    #[inline]
    fn starts(&self, payload: &[u8], e: Endian) -> bool {
        self.events.record_id(payload, e).is_some_and(|id| self.ids.contains(&id))
    }
}

/// Read `streams` by time slices with `threads` workers, when every one
/// is a plain file ([`PageSource::file_range`]) and its walk finds
/// nothing the one-thread read treats specially. Then the streams end,
/// with the counts of what they held, and `true` is returned; else
/// nothing is read or written.
///
/// [`PageSource::file_range`]: crate::sys::pages::PageSource::file_range
/// Each worker makes its sink with `make`, and hands it to `done` when it
/// has no slice left.
#[allow(clippy::too_many_arguments)]
pub(super) fn run<S: SliceSink>(
    streams: &mut [CpuPages],
    layout: PageLayout,
    endian: Endian,
    graph: Option<GraphIds>,
    threads: usize,
    make: &(dyn Fn() -> S + Sync),
    done: &(dyn Fn(S) + Sync),
    stop: &dyn Fn() -> bool,
    out: &mut Out,
) -> bool {
    let Some(ranges) = streams.iter().map(|s| s.file_range()).collect::<Option<Vec<_>>>() else {
        log::debug!("time slices: not for a live buffer, compressed data or a stream");
        return false;
    };
    let ids: Vec<(u32, u32)> = streams.iter().map(|s| (s.cpu, s.buffer)).collect();
    let Some(walked) = walk_all(ranges, &ids, layout, endian, graph, threads) else {
        log::debug!("time slices: not for this file (a damaged or cut page, times out of order, or the graph layout)");
        return false;
    };
    let (counts, scanned): (Vec<Counts>, Vec<Scanned>) = walked.into_iter().unzip();
    let bounds = cut(&scanned, threads);
    log::debug!("time slices: {} over {} streams", bounds.len(), scanned.len());
    for (s, c) in streams.iter_mut().zip(counts) {
        s.read_elsewhere(c);
    }
    let slices = Slices { scanned: &scanned, bounds: &bounds, layout, endian };
    slices.render(threads, make, done, stop, out);
    true
}

/// Walk every stream once (a thread per stream, up to `threads` at a
/// time): what each holds, or `None` when one is not plain.
fn walk_all(
    ranges: Vec<FileRange>,
    ids: &[(u32, u32)],
    layout: PageLayout,
    endian: Endian,
    graph: Option<GraphIds>,
    threads: usize,
) -> Option<Vec<(Counts, Scanned)>> {
    let jobs: Vec<(FileRange, (u32, u32))> = ranges.into_iter().zip(ids.iter().copied()).collect();
    thread::map(jobs, threads, &|(range, id)| walk(range, id, layout, endian, graph)).into_iter().collect()
}

/// Pages read at a time by the walk.
const CHUNK_PAGES: u64 = 16;

/// One stream's walk: its counts and marks, or `None` when it meets
/// anything the one-thread read treats specially (see the module docs).
/// It reads the pages as a [`CpuPages`] does — the same range of times
/// for each ([`file_page_end`]), the same loss and records — reading
/// each chunk of pages once, decoding no record. A change to how
/// [`CpuPages`] reads a page is a change here too: what this walk passes,
/// the slices print as one thread would.
fn walk(
    range: FileRange,
    (cpu, buffer): (u32, u32),
    layout: PageLayout,
    endian: Endian,
    graph: Option<GraphIds>,
) -> Option<(Counts, Scanned)> {
    let ps = range.page_size as u64;
    let total = range.end.checked_sub(range.start)?;
    let npages = total.checked_add(ps.checked_sub(1)?)? / ps;
    let mut counts = Counts::default();
    let (mut marks, mut last, mut before) = (Vec::<Mark>::new(), 0u64, 0u64);
    let mut buf = Vec::new();
    let mut i = 0;
    while i < npages {
        let n = CHUNK_PAGES.min(npages - i);
        // One page more: its stamp ends the range of times of the last.
        let want = ((n + 1) * ps).min(total - i * ps) as usize;
        buf.resize(want, 0);
        range.file.read_exact_at(&mut buf, range.start + i * ps).ok()?;
        let page_at =
            |j: u64| buf.get((j * ps) as usize..(((j + 1) * ps) as usize).min(want)).filter(|p| !p.is_empty());
        for j in 0..n {
            let page = page_at(j)?;
            counts.pages += 1;
            let p = Page::parse(page, &layout, endian).ok()?;
            // A page without data has no time of its own to check.
            let end = if p.len == 0 { u64::MAX } else { file_page_end(before, &p, page_at(j + 1), &layout, endian)? };
            let mut mark = Mark { page: i + j, first: 0, before, items: 0 };
            let mut item = |ts: u64, mark: &mut Mark| {
                // The times of a CPU only go forward.
                if ts < last {
                    return None;
                }
                if mark.items == 0 {
                    mark.first = ts;
                }
                mark.items += 1;
                last = ts;
                Some(())
            };
            match p.missed {
                Missed::None => {}
                Missed::Unknown => counts.lost_unknown += 1,
                Missed::Count(c) => counts.lost += c,
            }
            if p.missed != Missed::None {
                item(p.timestamp, &mut mark)?;
            }
            let (w, data) = p.walk_at(Cursor { pos: 0, ts: p.timestamp, lost_done: true });
            let (mut w, data) = (w.until(end), page.get(data)?);
            while let Some(r) = w.next(data) {
                let r = r.ok()?;
                if graph.is_some_and(|g| g.starts(r.payload, endian)) {
                    return None;
                }
                item(r.ts, &mut mark)?;
                before = r.ts;
                counts.records += 1;
            }
            if mark.items > 0 {
                marks.push(mark);
            }
        }
        i += n;
    }
    Some((counts, Scanned { range, cpu, buffer, marks, last }))
}

/// The slices' lower bounds (the first is 0; each slice ends where the
/// next begins, the last at the end): about equal counts of items, cut
/// at pages' first times.
fn cut(scanned: &[Scanned], threads: usize) -> Vec<u64> {
    let total: u64 = scanned.iter().flat_map(|s| &s.marks).map(|m| m.items).sum();
    // Tests cut at (nearly) every page with TRBOX_SLICE_RECORDS=1: each
    // boundary is a case to get right.
    let min = std::env::var("TRBOX_SLICE_RECORDS").ok().and_then(|v| v.parse().ok()).unwrap_or(MIN_SLICE).max(1);
    let want = (total / (threads as u64 * SLICES_PER_THREAD).max(1)).clamp(min, MAX_SLICE.max(min));
    let mut bounds = vec![0];
    let mut acc = 0;
    // Every CPU's pages in the order of their first times (each CPU's are
    // in order already: a merge, not a sort).
    let mut next = vec![0usize; scanned.len()];
    while let Some((first, i)) =
        scanned.iter().zip(&next).enumerate().filter_map(|(i, (s, &j))| Some((s.marks.get(j)?.first, i))).min()
    {
        let (Some(s), Some(j)) = (scanned.get(i), next.get_mut(i)) else { break };
        if acc >= want && bounds.last().is_some_and(|&b| first > b) {
            bounds.push(first);
            acc = 0;
        }
        acc += s.marks.get(*j).map_or(0, |m| m.items);
        *j += 1;
    }
    bounds
}

/// The plan: the walked streams and where the slices begin.
struct Slices<'s> {
    scanned: &'s [Scanned],
    bounds: &'s [u64],
    layout: PageLayout,
    endian: Endian,
}

/// The output, in slice order.
struct Writer<'o> {
    out: &'o mut Out,
    /// The slice whose text goes next.
    next: usize,
    /// Slices done before their turn, with their text.
    done: Vec<(usize, Out)>,
    /// Bytes in `done`.
    held: usize,
    /// The reader went away, or a stop was asked: everyone stops.
    broken: bool,
}

impl Writer<'_> {
    /// A stop was asked: every worker ends.
    fn stop(&mut self, asked: bool, cv: &Condvar) {
        if asked && !self.broken {
            self.broken = true;
            cv.notify_all();
        }
    }
}

struct Shared<'o> {
    w: Mutex<Writer<'o>>,
    cv: Condvar,
    /// The next slice to take.
    take: AtomicUsize,
}

impl<'o> Shared<'o> {
    fn lock(&self) -> MutexGuard<'_, Writer<'o>> {
        // A poisoned lock means a worker panicked (it aborts first in the
        // release build); the writer itself is still consistent.
        self.w.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'g>(&self, g: MutexGuard<'g, Writer<'o>>) -> MutexGuard<'g, Writer<'o>> {
        self.cv.wait(g).unwrap_or_else(PoisonError::into_inner)
    }

    /// Slice `k` has `text` so far: written when it is its turn; when it
    /// is not and the text is large, wait for the turn. `false`: stop.
    fn part(&self, k: usize, text: &mut Out, stop: &dyn Fn() -> bool) -> bool {
        let mut g = self.lock();
        g.stop(stop(), &self.cv);
        if g.next != k && text.len() >= HOLD {
            while g.next != k && !g.broken {
                g = self.wait(g);
            }
        }
        if g.next == k {
            g.out.put_block(text);
            g.broken |= g.out.broken();
        }
        !g.broken
    }

    /// Slice `k` is done: its text is written now, or when its turn comes.
    fn finish(&self, k: usize, mut text: Out) {
        let mut g = self.lock();
        if g.next != k {
            g.held += text.len();
            g.done.push((k, text));
            return;
        }
        g.out.put_block(&mut text);
        g.next += 1;
        while let Some(i) = g.done.iter().position(|d| d.0 == g.next) {
            let (_, mut t) = g.done.swap_remove(i);
            g.held -= t.len();
            g.out.put_block(&mut t);
            g.next += 1;
        }
        g.broken |= g.out.broken();
        self.cv.notify_all();
    }

    /// The next slice to render; `None` at the end, or when the reader
    /// went away. Waits while much text is held for its turn.
    fn next_slice(&self, count: usize, stop: &dyn Fn() -> bool) -> Option<usize> {
        let mut g = self.lock();
        g.stop(stop(), &self.cv);
        while g.held >= HELD && !g.broken {
            g = self.wait(g);
        }
        if g.broken {
            return None;
        }
        drop(g);
        let k = self.take.fetch_add(1, Ordering::Relaxed);
        (k < count).then_some(k)
    }
}

impl Slices<'_> {
    /// `stop`: asked on this thread (the caller's stop need not be
    /// shared with others), it ends every worker.
    fn render<S: SliceSink>(
        &self,
        threads: usize,
        make: &(dyn Fn() -> S + Sync),
        done: &(dyn Fn(S) + Sync),
        stop: &dyn Fn() -> bool,
        out: &mut Out,
    ) {
        let sh = Shared {
            w: Mutex::new(Writer { out, next: 0, done: Vec::new(), held: 0, broken: false }),
            cv: Condvar::new(),
            take: AtomicUsize::new(0),
        };
        let work = |stop: &dyn Fn() -> bool| {
            let mut p = make();
            let mut spare = Vec::new();
            while let Some(k) = sh.next_slice(self.bounds.len(), stop) {
                let mut text = Out::memory();
                if !self.slice(k, &mut p, &sh, &mut text, &mut spare, stop) {
                    break;
                }
                sh.finish(k, text);
            }
            done(p);
        };
        let jobs: Vec<thread::Job<'_>> =
            (1..threads).map(|_| Box::new(move || work(&|| false)) as thread::Job<'_>).collect();
        thread::scope(jobs, |_| work(stop));
    }

    /// Render slice `k` into `text`, writing parts of it when its turn
    /// has come. `false`: the reader went away or `stop` said so. `spare`: the buffers of
    /// the readers of slices before (allocated once per worker).
    fn slice<S: SliceSink>(
        &self,
        k: usize,
        p: &mut S,
        sh: &Shared<'_>,
        text: &mut Out,
        spare: &mut Vec<[Vec<u8>; 3]>,
        stop: &dyn Fn() -> bool,
    ) -> bool {
        let lo = self.bounds.get(k).copied().unwrap_or(u64::MAX);
        let hi = self.bounds.get(k + 1).copied();
        let mut streams: Vec<CpuPages> = Vec::new();
        for sc in self.scanned {
            if sc.last < lo || !sc.marks.first().is_some_and(|m| hi.map_or(true, |hi| m.first < hi)) {
                continue;
            }
            // The last page that begins before `lo`, and the one before it
            // (whose last record a stack record at the start may follow).
            let at = sc.marks.partition_point(|m| m.first < lo).saturating_sub(2);
            let Some(m) = sc.marks.get(at) else { continue };
            // Up to the first page that begins at `hi` or later: its stamp
            // ends the range of times of the page before.
            let to = hi.and_then(|hi| sc.marks.get(sc.marks.partition_point(|m| m.first < hi))).map(|m| m.page + 1);
            let [page, ahead, buf] = spare.pop().unwrap_or_default();
            let src = sc.range.pages(m.page, to, self.endian, buf);
            let mut s = CpuPages::new(sc.cpu, Box::new(src), self.layout, self.endian).with_buffers(page, ahead);
            s.buffer = sc.buffer;
            s.resume_after(m.before);
            // What comes before the slice is not printed; the filters still
            // see each record (a stack record inherits their verdict).
            while let Ok(Some(ts)) = s.peek_ts() {
                if ts >= lo {
                    break;
                }
                if let Some(CpuItem::Record(r)) = s.take() {
                    p.read_past(sc.buffer, sc.cpu, r.ts, r.payload);
                }
            }
            s.end_at(hi);
            streams.push(s);
        }
        let mut merger = Merger::new(streams.len());
        // Past this much text the slice looks whether it may write.
        let mut look_at = FLUSH;
        while let Pick::Cpu(i) = merger.next(&mut streams) {
            let Some(s) = streams.get_mut(i) else { break };
            let (buffer, cpu) = (s.buffer, s.cpu);
            match s.take() {
                Some(CpuItem::Record(r)) => p.record(text, buffer, cpu, r.ts, r.payload),
                Some(CpuItem::Lost { ts, count }) => p.lost(text, buffer, cpu, ts, count),
                Some(CpuItem::Damaged(_)) | None => {}
            }
            if text.len() >= look_at {
                if !sh.part(k, text, stop) {
                    return false;
                }
                look_at = text.len() + FLUSH;
            }
        }
        p.end(text);
        spare.extend(streams.into_iter().map(CpuPages::into_buffers));
        true
    }
}
