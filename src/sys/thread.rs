//! Scoped worker threads on bare pthreads.
//!
//! std::thread (spawn or scope) brings in thread names, spawn hooks,
//! output capture, its own TLS and RUST_MIN_STACK handling: this module
//! written on std::thread::scope and Builder made the aarch64 `full` build
//! 19,960 bytes larger (571,208 -> 591,168, over its 576 KiB budget; issue
//! 43), where pthread_create and pthread_join cost little (musl links
//! them anyway). So the few places that fan work out to other CPUs use
//! this instead, and keep the `unsafe` to this file.

use alloc::boxed::Box;
use alloc::vec::Vec;

/// A job for one worker thread; it may borrow from the caller's frame.
pub(crate) type Job<'a> = Box<dyn FnOnce() + Send + 'a>;

/// Stack of each worker: virtual memory, touched only as deep as used.
/// The print-fmt evaluator recurses at most 128 levels.
const STACK: usize = 1 << 20;

/// How many CPUs this process may run on (its affinity mask), at least 1.
pub(crate) fn cpus_available() -> usize {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the kernel fills it
    // and CPU_COUNT only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = core::mem::zeroed();
        if libc::sched_getaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return 1;
        }
        (libc::CPU_COUNT(&set) as usize).max(1)
    }
}

/// This process's threads, by the ids records name them with (their
/// `common_pid`): /proc/self/task.
pub(crate) fn own_tids() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
    dir.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect()
}

/// Run every job on a thread of its own while `main` runs on this one, and
/// join them all before returning — also when `main` unwinds, which is what
/// makes lending them borrowed data sound. `main` gets the number of threads
/// that started: a job whose thread could not be created is dropped
/// unstarted, so `main` must be able to finish the work alone.
/// Jobs must not panic (the process aborts: an `extern "C"` frame stops
/// the unwind).
pub(crate) fn scope<'a, R>(jobs: Vec<Job<'a>>, main: impl FnOnce(usize) -> R) -> R {
    struct Joined(Vec<libc::pthread_t>);
    impl Drop for Joined {
        fn drop(&mut self) {
            for t in self.0.drain(..) {
                // SAFETY: each id came from a successful pthread_create and
                // is joined exactly once.
                unsafe { libc::pthread_join(t, core::ptr::null_mut()) };
            }
        }
    }
    let mut joined = Joined(Vec::new());
    for job in jobs {
        if let Some(t) = start(job) {
            joined.0.push(t);
        }
    }
    let started = joined.0.len();
    main(started)
    // `joined` drops here, after `main`'s locals: every thread has ended
    // before anything the jobs borrow goes away.
}

/// `f` of each of `items`, in their order, on up to `threads` threads (this
/// one among them): each thread takes the next item not yet taken.
#[cfg(feature = "slices")]
pub(crate) fn map<T: Send, R: Send>(items: Vec<T>, threads: usize, f: &(dyn Fn(T) -> R + Sync)) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Mutex, PoisonError};
    // Each slot: the item, then what `f` made of it.
    let slots: Vec<Mutex<(Option<T>, Option<R>)>> = items.into_iter().map(|t| Mutex::new((Some(t), None))).collect();
    let lock = |i: usize| slots.get(i).map(|s| s.lock().unwrap_or_else(PoisonError::into_inner));
    let next = AtomicUsize::new(0);
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(item) = lock(i).map(|mut s| s.0.take()) else { return };
        if let Some(item) = item {
            let r = f(item);
            if let Some(mut s) = lock(i) {
                s.1 = Some(r);
            }
        }
    };
    let jobs: Vec<Job<'_>> = (1..threads.min(slots.len())).map(|_| Box::new(work) as Job<'_>).collect();
    scope(jobs, |_| work());
    // Every item was taken: what a thread did not, this one did.
    slots.into_iter().filter_map(|s| s.into_inner().unwrap_or_else(PoisonError::into_inner).1).collect()
}

/// A thread that outlives the call that starts it (a live buffer's reader):
/// joined when dropped, so its owner decides how long it runs.
pub(crate) struct Worker(libc::pthread_t);

impl Worker {
    /// Start `job` on a thread of its own; `None` when no thread could be
    /// created (the caller then does the work itself).
    pub(crate) fn spawn(job: Job<'static>) -> Option<Worker> {
        start(job).map(Worker)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // SAFETY: the id came from a successful pthread_create and is
        // joined exactly once, here.
        unsafe { libc::pthread_join(self.0, core::ptr::null_mut()) };
    }
}

fn start(job: Job<'_>) -> Option<libc::pthread_t> {
    extern "C" fn entry(arg: *mut libc::c_void) -> *mut libc::c_void {
        // SAFETY: `arg` is the pointer `start` leaked for this thread alone;
        // the lifetime it carried is upheld by `scope`'s join.
        let job = unsafe { Box::from_raw(arg.cast::<Job<'static>>()) };
        job();
        core::ptr::null_mut()
    }
    let arg = Box::into_raw(Box::new(job)).cast::<libc::c_void>();
    // SAFETY: attr is initialised before use and destroyed after; `arg`
    // is reclaimed here when the thread did not start.
    unsafe {
        let mut attr: libc::pthread_attr_t = core::mem::zeroed();
        if libc::pthread_attr_init(&mut attr) != 0 {
            drop(Box::from_raw(arg.cast::<Job<'_>>()));
            return None;
        }
        libc::pthread_attr_setstacksize(&mut attr, STACK);
        let mut t: libc::pthread_t = core::mem::zeroed();
        let rc = libc::pthread_create(&mut t, &attr, entry, arg);
        libc::pthread_attr_destroy(&mut attr);
        if rc != 0 {
            drop(Box::from_raw(arg.cast::<Job<'_>>()));
            return None;
        }
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn jobs_see_borrowed_data_and_end_before_scope_returns() {
        let data: Vec<usize> = (1..=100).collect();
        let sum = AtomicUsize::new(0);
        let jobs: Vec<Job<'_>> = data
            .chunks(25)
            .map(|c| {
                let sum = &sum;
                Box::new(move || {
                    sum.fetch_add(c.iter().sum::<usize>(), Ordering::SeqCst);
                }) as Job<'_>
            })
            .collect();
        let started = scope(jobs, |n| n);
        assert_eq!(started, 4);
        assert_eq!(sum.load(Ordering::SeqCst), 5050);
        assert!(cpus_available() >= 1);
    }
}
