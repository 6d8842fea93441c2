//! Decode and merge throughput on their own (part of `make bench`;
//! `TRBOX_BENCH=throughput make bench` runs only this): the page decoder
//! on ~256 MiB of real pages, and the per-CPU merge (scan against heap)
//! for 2 to 64 streams.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use trbox::abi::Endian;
use trbox::merge::merge_with_mode;
use trbox::page::{Page, PageItem, PageLayout};

/// CPU time of this thread in seconds (the box may be shared: wall-clock
/// rates then understate the decoder; both are printed).
fn cpu_now() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn fixture_pages() -> (PageLayout, Vec<u8>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pages/x86_64-6.18");
    let layout = trbox::sys::trace::open(&dir).unwrap().layout;
    let mut all = Vec::new();
    for cpu in 0.. {
        match std::fs::read(dir.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"))) {
            Ok(b) => all.extend_from_slice(&b),
            Err(_) => break,
        }
    }
    (layout, all)
}

pub fn decode_throughput() {
    let (layout, one) = fixture_pages();
    let sb = layout.subbuf_size();
    // About 256 MiB of real pages.
    let reps = (256 << 20) / one.len();
    let mut buf = Vec::with_capacity(one.len() * reps);
    for _ in 0..reps {
        buf.extend_from_slice(&one);
    }
    let mut best = f64::MAX;
    let mut best_cpu = f64::MAX;
    let mut events = 0u64;
    for _ in 0..5 {
        let t = Instant::now();
        let c0 = cpu_now();
        let (mut n, mut sum) = (0u64, 0u64);
        for page in buf.chunks_exact(sb) {
            let p = Page::parse(page, &layout, Endian::Little).unwrap();
            for it in p.items() {
                if let Ok(PageItem::Record(r)) = it {
                    n += 1;
                    sum = sum.wrapping_add(r.ts).wrapping_add(r.payload.len() as u64);
                }
            }
        }
        black_box(sum);
        events = n;
        best = best.min(t.elapsed().as_secs_f64());
        best_cpu = best_cpu.min(cpu_now() - c0);
    }
    println!(
        "decode:      {} MiB of pages, {} events: wall {:.3} s = {:.2} GB/s, {:.1} M events/s; cpu {:.3} s = {:.2} GB/s, {:.1} M events/s",
        buf.len() >> 20,
        events,
        best,
        buf.len() as f64 / best / 1e9,
        events as f64 / best / 1e6,
        best_cpu,
        buf.len() as f64 / best_cpu / 1e9,
        events as f64 / best_cpu / 1e6
    );
}

pub fn merge_throughput() {
    for k in [2usize, 4, 8, 16, 64] {
        let per = 4_000_000 / k;
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let streams: Vec<Vec<(u64, u32)>> = (0..k)
            .map(|c| {
                let mut t = 0u64;
                (0..per)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        t += x % 1000;
                        (t, c as u32)
                    })
                    .collect()
            })
            .collect();
        let mut line = format!("merge:       k={k:>2} (cpu time):");
        for heap in [false, true] {
            let c0 = cpu_now();
            let mut n = 0usize;
            for (c, x) in merge_with_mode(streams.iter().map(|s| s.iter()), heap) {
                black_box((c, x.0));
                n += 1;
            }
            let dt = cpu_now() - c0;
            assert_eq!(n, per * k);
            line.push_str(&format!("  {}: {:6.1} M/s", if heap { "heap" } else { "scan" }, n as f64 / dt / 1e6));
        }
        println!("{line}");
    }
}
