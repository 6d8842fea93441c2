//! The library's pull reader (issue 40, docs/library.md) on the real
//! capture: every event of the file through `Reader::next_entry`, two of
//! its fields read by name, against the text decode of the same file by
//! the shipped binary (`tr-cat -j 1 FILE`, one thread as the reader is):
//! CPU time, and the heap allocations the loop makes, counted by this
//! bench's allocator. The goal: no allocation per event, and no more CPU
//! than the text decode.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use trbox::format::Value;
use trbox::sys::read::{Entry, ReadOptions, Reader};

/// The system allocator, counting the calls that take memory.
struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is the system allocator's own, with its arguments.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        unsafe { System.realloc(p, l, size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// This process's CPU time (user + system), in seconds.
fn cpu_now() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    s(u.ru_utime) + s(u.ru_stime)
}

/// One pass: (events, the values read, CPU seconds, allocations in the
/// loop, allocations to open).
fn pass(file: &Path) -> (u64, u64, f64, u64, u64) {
    let a0 = ALLOCS.load(Relaxed);
    let mut r = Reader::trace_dat(file, &ReadOptions::default()).expect("the real capture opens");
    let (c0, a1) = (cpu_now(), ALLOCS.load(Relaxed));
    let (mut events, mut read) = (0u64, 0u64);
    while let Some(e) = r.next_entry() {
        let Entry::Event(ev) = e else { continue };
        events += 1;
        // The first two of the event's own fields, by name (as a tool
        // that knows its events asks for them).
        for (name, _) in ev.fields().take(2) {
            match ev.field(name) {
                Some(Value::Signed(v)) => read += v as u64 & 1,
                Some(Value::Unsigned(v)) => read += v & 1,
                Some(Value::Str(s) | Value::Bytes(s)) => read += s.len() as u64 & 1,
                Some(Value::Ints(a)) => read += a.len() as u64 & 1,
                _ => {}
            }
        }
    }
    (events, read, cpu_now() - c0, ALLOCS.load(Relaxed) - a1, a1 - a0)
}

/// The section of `make bench`: best of 3 each.
pub fn pull_bench(trbox: &Path, file: &Path, report: &Path) {
    let runs: Vec<_> = (0..3).map(|_| pass(file)).collect();
    let best = runs.iter().min_by(|a, b| a.2.total_cmp(&b.2)).expect("three runs");
    let (events, _, cpu, allocs, open) = *best;
    let text_cpu = (0..3)
        .map(|_| {
            let mut c = Command::new(trbox);
            c.args(["tr-cat", "-j", "1"]).arg(file);
            super::run_measured(&c, report).1
        })
        .fold(f64::MAX, f64::min);
    println!(
        "library pull (Reader::next_entry, 2 fields by name per event; best of 3, CPU): {events} events in {cpu:.2} s \
         = {:.2}x the CPU of `tr-cat -j 1 FILE` ({text_cpu:.2} s); {allocs} allocations in the loop ({:.4} per event), \
         {open} to open",
        cpu / text_cpu,
        allocs as f64 / events.max(1) as f64
    );
}
