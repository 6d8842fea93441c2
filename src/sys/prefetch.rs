//! A live CPU buffer read ahead by a thread of its own, so that a reader
//! that renders slower than the kernel writes does not lose events.
//!
//! Following a busy buffer, the decoder and the text output are slower than
//! the kernel's writers: a syscall storm writes ~80 MB/s, and the per-CPU
//! ring buffer (1.4 MB by default) overruns in tens of milliseconds. The
//! recorder (`tr-cat -o`) loses nothing because it only moves pages; this
//! does the same for the live readers: each CPU's reader thread takes every
//! sub-buffer the kernel hands out into memory, and the decoder takes them
//! from there in order, behind. Memory is bounded ([`BUDGET`] for all CPUs
//! together): past it the reader stops taking pages, the kernel overwrites
//! as before, and the loss is reported from the page headers as always.

use super::error::Error;
use super::pages::PageSource;
use super::raw::RawPages;
use super::thread::Worker;
use crate::abi::Endian;
use crate::page::{Page, PageLayout};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Bytes of pages held in memory for all CPUs together. A board with
/// 256 MiB has room for it; a burst larger than this is rarely read as
/// text anyway (`tr-cat -o` records it without holding it).
pub(crate) const BUDGET: usize = 64 << 20;

/// Pages held for every CPU, against [`BUDGET`].
static HELD: AtomicUsize = AtomicUsize::new(0);
/// The most ever held at once, for `-v`.
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// How long the reader sleeps between looks when poll() does not wake it
/// (readiness follows `buffer_percent`; a trickle below it still comes).
const TICK_MS: libc::c_int = 50;

/// The reader threads' nice value (see [`reader`]).
const READER_NICE: libc::c_int = -10;

struct Queue {
    src: RawPages,
    /// Each page cut to its committed data: a reader that keeps up takes
    /// many pages the kernel has barely begun, and a whole sub-buffer for
    /// each would spend the budget on empty space.
    pages: VecDeque<Vec<u8>>,
    layout: PageLayout,
    endian: Endian,
    /// The reader's read error: the decoder reports it after the pages
    /// taken before it.
    err: Option<Error>,
}

struct Shared {
    q: Mutex<Queue>,
    stop: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A reader that panicked aborts the process (panic=abort); a
        // poisoned lock cannot be seen here, but must not panic either.
        self.q.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One CPU's live pages, read ahead; see the module doc.
pub(crate) struct Prefetch {
    shared: Arc<Shared>,
    fd: i32,
    /// The page handed out last.
    cur: Vec<u8>,
    /// Joined on drop, after `stop` is set.
    worker: Option<Worker>,
}

/// `src` (a live trace_pipe_raw) with a reader thread of its own.
pub(crate) fn read_ahead(src: RawPages, layout: PageLayout, endian: Endian) -> Box<dyn PageSource> {
    let fd = src.fd();
    let shared = Arc::new(Shared {
        q: Mutex::new(Queue { src, pages: VecDeque::new(), layout, endian, err: None }),
        stop: AtomicBool::new(false),
    });
    let s = Arc::clone(&shared);
    // No thread (none could be created): the decoder reads `src` itself,
    // through the same queue, as it did before read-ahead.
    let worker = Worker::spawn(Box::new(move || reader(&s, fd)));
    if worker.is_none() {
        log::info!("no reader thread: the buffer is read as it is decoded");
    }
    Box::new(Prefetch { shared, fd, cur: Vec::new(), worker })
}

/// The reader thread: take every page the kernel has, sleep until there is
/// more (or the stop), within the budget.
fn reader(s: &Shared, fd: i32) {
    // Ahead of the rest of the machine when it is busy (root only; else
    // as it is): the thread only copies pages, and a late wakeup is a loss
    // (the rest of the buffer fills in ~10 ms in a syscall storm). On Linux
    // a thread has its own nice value; who = 0 is this thread.
    // SAFETY: plain syscall on this thread.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, READER_NICE) };
    while !s.stop.load(Ordering::Relaxed) {
        take_all(s);
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd for the call.
        unsafe { libc::poll(&mut p, 1, TICK_MS) };
    }
}

fn take_all(s: &Shared) {
    loop {
        if HELD.load(Ordering::Relaxed) >= BUDGET || s.stop.load(Ordering::Relaxed) {
            return;
        }
        let mut q = s.lock();
        if q.err.is_some() {
            return;
        }
        let (layout, endian) = (q.layout, q.endian);
        match q.src.next_page() {
            Ok(Some(page)) => {
                // The header, the committed data and the lost-events count
                // that may follow it; a page that does not parse is kept
                // whole, for the decoder to report.
                let keep = Page::parse(page, &layout, endian)
                    .map_or(page.len(), |p| layout.data_offset + p.len as usize + layout.commit_size)
                    .min(page.len());
                let buf = page.get(..keep).unwrap_or(page).to_vec();
                let held = HELD.fetch_add(buf.len(), Ordering::Relaxed) + buf.len();
                PEAK.fetch_max(held, Ordering::Relaxed);
                q.pages.push_back(buf);
            }
            Ok(None) => return,
            Err(e) => {
                q.err = Some(e);
                return;
            }
        }
    }
}

impl PageSource for Prefetch {
    fn next_page(&mut self) -> Result<Option<&[u8]>, Error> {
        let mut q = self.shared.lock();
        if let Some(page) = q.pages.pop_front() {
            HELD.fetch_sub(page.len(), Ordering::Relaxed);
            self.cur = page;
            return Ok(Some(&self.cur));
        }
        if let Some(e) = q.err.take() {
            return Err(e);
        }
        // Nothing read ahead: read here, under the same lock, so that pages
        // keep their order (the drain at the end of a window comes here).
        match q.src.next_page()? {
            Some(page) => {
                self.cur.clear();
                self.cur.extend_from_slice(page);
                Ok(Some(&self.cur))
            }
            None => Ok(None),
        }
    }
    fn is_live(&self) -> bool {
        true
    }
    fn poll_fd(&self) -> Option<i32> {
        Some(self.fd)
    }
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        drop(self.worker.take());
        let q = self.shared.lock();
        let held: usize = q.pages.iter().map(Vec::len).sum();
        HELD.fetch_sub(held, Ordering::Relaxed);
        static SAID: AtomicBool = AtomicBool::new(false);
        let peak = PEAK.load(Ordering::Relaxed);
        if peak > 0 && !SAID.swap(true, Ordering::Relaxed) {
            log::info!(
                "read ahead of the decoder: at most {} KiB of pages held (budget {} KiB)",
                peak >> 10,
                BUDGET >> 10
            );
        }
    }
}
