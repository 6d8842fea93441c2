//! Rendering a drained buffer on every CPU, where time slices cannot
//! (slices.rs: a live buffer, compressed data, a stream, a file whose
//! pages are not plain). This thread merges and hands out batches of
//! records, in order; worker threads (and this one, while it would wait)
//! render them; the texts are written in the order the batches were
//! handed out, so the output is the same as one thread's. The merge
//! thread is as slow as the rendering it feeds (~600 instructions a line
//! against ~1,400), so a second CPU adds little.
//!
//! A batch's text is held until it is written, so batches are bounded in
//! bytes, not only in records: the text a record of each event makes is
//! learnt as batches are rendered (the largest so far), and a batch ends
//! once what its records will make reaches [`BATCH_BYTES`]. A record of an
//! event not measured yet ends its batch: a format whose records render
//! into 800 KB lines (60,000 fields) made batches of 800 MB.

use super::out::Out;
use super::text::Plain;
use crate::merge::{self, Merger};
use crate::sys::pages::{CpuItem, CpuPages};
use crate::sys::thread;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// Records per batch: enough that locking is rare (a batch of text is
/// ~100 KiB).
const BATCH: usize = 1024;
/// Text per batch, about: the batches in flight (two per thread) stay
/// this small whatever the records make.
const BATCH_BYTES: usize = 256 << 10;
/// Event ids whose text size is learnt (`common_type` is an unsigned
/// short; a larger id counts as not measured).
const IDS: usize = 1 << 16;

#[derive(Clone, Copy)]
enum Piece {
    /// Payload at `arena[start..end]`, of event `id`.
    Record {
        buffer: u32,
        cpu: u32,
        ts: u64,
        start: u32,
        end: u32,
        id: u32,
    },
    Lost {
        buffer: u32,
        cpu: u32,
        ts: u64,
        count: Option<u64>,
    },
}

/// Records copied out of their pages, and the text made of them.
struct Batch {
    pieces: Vec<Piece>,
    arena: Vec<u8>,
    /// What its records will make, as far as known (see the module docs).
    bytes: usize,
    text: Out,
    /// The most text a record of each event made, indexed by event id (as
    /// far as the largest id met: ids are a kernel's few thousand events).
    sizes: Vec<usize>,
}

impl Batch {
    fn new() -> Self {
        Batch { pieces: Vec::with_capacity(BATCH), arena: Vec::new(), bytes: 0, text: Out::memory(), sizes: Vec::new() }
    }

    fn render(&mut self, p: &mut Plain<'_>) {
        for &piece in &self.pieces {
            match piece {
                Piece::Record { buffer, cpu, ts, start, end, id } => {
                    let payload = self.arena.get(start as usize..end as usize).unwrap_or(&[]);
                    let at = self.text.len();
                    p.record(&mut self.text, buffer, cpu, ts, payload);
                    let made = self.text.len() - at;
                    let i = id as usize;
                    if i < IDS && self.sizes.len() <= i {
                        self.sizes.resize(i + 1, 0);
                    }
                    if let Some(s) = self.sizes.get_mut(i) {
                        *s = (*s).max(made);
                    }
                }
                Piece::Lost { buffer, cpu, ts, count } => p.lost(&mut self.text, buffer, cpu, ts, count),
            }
        }
        self.pieces.clear();
        self.arena.clear();
        self.bytes = 0;
    }
}

#[derive(Default)]
struct Queue {
    /// Batches to render, oldest first, with their sequence numbers.
    todo: Vec<(u64, Batch)>,
    /// Rendered batches, in any order.
    done: Vec<(u64, Batch)>,
    /// No more batches will come: workers end.
    closed: bool,
}

#[derive(Default)]
struct Shared {
    q: Mutex<Queue>,
    cv: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A poisoned lock means a worker panicked (it aborts first in the
        // release build); the queue itself is still consistent.
        self.q.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'g>(&self, g: MutexGuard<'g, Queue>) -> MutexGuard<'g, Queue> {
        self.cv.wait(g).unwrap_or_else(PoisonError::into_inner)
    }

    /// A worker's life: render batches until the queue closes.
    fn work(&self, p: &mut Plain<'_>) {
        let mut q = self.lock();
        loop {
            if !q.todo.is_empty() {
                let (seq, mut b) = q.todo.remove(0);
                drop(q);
                b.render(p);
                q = self.lock();
                q.done.push((seq, b));
                self.cv.notify_all();
            } else if q.closed {
                return;
            } else {
                q = self.wait(q);
            }
        }
    }

    fn close(&self) {
        self.lock().closed = true;
        self.cv.notify_all();
    }
}

/// Closes the queue however the producer ends (workers must not wait for
/// ever while their threads are joined).
struct Closer<'s>(&'s Shared);

impl Drop for Closer<'_> {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// This thread's side: the merge, the batches in flight and the output.
struct Producer<'s, 'p, 'a> {
    sh: &'s Shared,
    /// This thread's renderer, made when it first helps.
    mine: Option<Plain<'a>>,
    make: &'p (dyn Fn() -> Plain<'a> + Sync),
    /// Sequence number of the next batch handed out, and of the next one
    /// to write.
    next_in: u64,
    next_out: u64,
    /// Batches handed out and not written yet may be this many.
    max_in_flight: u64,
    free: Vec<Batch>,
    /// The most text a record of each event id made, learnt from the
    /// batches written (0: not measured yet).
    sizes: Vec<usize>,
}

impl<'a> Producer<'_, '_, 'a> {
    fn submit(&mut self, b: Batch) {
        self.sh.lock().todo.push((self.next_in, b));
        self.next_in += 1;
        self.sh.cv.notify_all();
    }

    /// Write the next batch in order once it is rendered, rendering
    /// waiting batches on this thread meanwhile.
    fn write_next(&mut self, out: &mut Out) {
        let mut q = self.sh.lock();
        loop {
            if let Some(i) = q.done.iter().position(|d| d.0 == self.next_out) {
                let (_, mut b) = q.done.swap_remove(i);
                drop(q);
                out.put_block(&mut b.text);
                for (s, &n) in self.sizes.iter_mut().zip(&b.sizes) {
                    *s = (*s).max(n);
                }
                b.sizes.clear();
                // One huge record must not keep its batch's memory.
                b.text.shrink_to(2 * BATCH_BYTES);
                b.arena.shrink_to(2 * BATCH_BYTES);
                self.free.push(b);
                self.next_out += 1;
                return;
            }
            if !q.todo.is_empty() {
                let (seq, mut b) = q.todo.remove(0);
                drop(q);
                b.render(self.mine.get_or_insert_with(self.make));
                q = self.sh.lock();
                q.done.push((seq, b));
                continue;
            }
            q = self.sh.wait(q);
        }
    }

    fn batch(&mut self) -> Batch {
        self.free.pop().unwrap_or_else(Batch::new)
    }

    /// What a record of event `id` with `payload_len` bytes will make, as
    /// far as known: a record not measured yet counts as a whole batch.
    fn cost(&self, id: Option<u32>, payload_len: usize) -> usize {
        match id.and_then(|id| self.sizes.get(id as usize)) {
            Some(&n) if n > 0 => n.max(payload_len),
            _ => BATCH_BYTES,
        }
    }
}

/// Does this record start a function_graph layout (the predicate the merge
/// loop stops at)?
type GraphStart<'g> = &'g dyn Fn(&[u8]) -> bool;

/// A record's event id (its `common_type`).
type EventId<'g> = &'g dyn Fn(&[u8]) -> Option<u32>;

/// Merge `streams` and print them with `threads` renderers (this thread
/// among them) until they end, the reader goes away, or — with `graph` —
/// a record that may start the graph layout comes up: everything before it
/// is written then, and it is still in its stream for the one-thread loop.
pub(super) fn run<'a>(
    streams: &mut [CpuPages],
    merger: &mut Merger,
    graph: Option<GraphStart>,
    id_of: EventId,
    threads: usize,
    make: &(dyn Fn() -> Plain<'a> + Sync),
    out: &mut Out,
) {
    let sh = Shared::default();
    let jobs: Vec<thread::Job<'_>> = (1..threads)
        .map(|_| {
            let sh = &sh;
            Box::new(move || sh.work(&mut make())) as thread::Job<'_>
        })
        .collect();
    thread::scope(jobs, |started| {
        let _closer = Closer(&sh);
        let mut p = Producer {
            sh: &sh,
            mine: None,
            make,
            next_in: 0,
            next_out: 0,
            max_in_flight: 2 * (started as u64 + 1),
            free: Vec::new(),
            sizes: vec![0; IDS],
        };
        produce(&mut p, streams, merger, graph, id_of, out);
        while p.next_out < p.next_in && !out.broken() {
            p.write_next(out);
        }
    })
}

fn produce(
    p: &mut Producer<'_, '_, '_>,
    streams: &mut [CpuPages],
    merger: &mut Merger,
    graph: Option<GraphStart>,
    id_of: EventId,
    out: &mut Out,
) {
    let mut cur = p.batch();
    while !out.broken() {
        let merge::Pick::Cpu(i) = merger.next(streams) else { break };
        let Some(s) = streams.get_mut(i) else { break };
        let (buffer, cpu) = (s.buffer, s.cpu);
        match s.take() {
            Some(CpuItem::Record(rec)) => {
                // Looked at once taken (a peek first cost as much as the
                // test): a graph record goes back for the one-thread loop.
                if graph.is_some_and(|is_graph| is_graph(rec.payload)) {
                    s.untake();
                    break;
                }
                let id = id_of(rec.payload);
                cur.bytes += p.cost(id, rec.payload.len());
                let start = cur.arena.len() as u32;
                cur.arena.extend_from_slice(rec.payload);
                let end = cur.arena.len() as u32;
                cur.pieces.push(Piece::Record { buffer, cpu, ts: rec.ts, start, end, id: id.unwrap_or(u32::MAX) });
            }
            Some(CpuItem::Lost { ts, count }) => cur.pieces.push(Piece::Lost { buffer, cpu, ts, count }),
            // A damaged page is told and counted by the stream.
            Some(CpuItem::Damaged(_)) | None => {}
        }
        if cur.pieces.len() >= BATCH || cur.bytes >= BATCH_BYTES {
            let next = p.batch();
            p.submit(std::mem::replace(&mut cur, next));
            while p.next_in - p.next_out >= p.max_in_flight && !out.broken() {
                p.write_next(out);
            }
        }
    }
    if !cur.pieces.is_empty() {
        p.submit(cur);
    }
}
