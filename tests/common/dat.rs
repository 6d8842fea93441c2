//! Big trace.dat files made of a board fixture's raw pages, copied with
//! shifted timestamps: the benchmark's data (benches/bench.rs includes this
//! file) and the multi-threaded rendering tests.

use std::fs;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use trbox::abi::Endian;
use trbox::page::{Page, PageLayout, RB_MISSED_EVENTS};
use trbox::tracedat::{data_layout, encode_flyrecord_table, V6Writer, WriteOptions};

fn read(p: &Path) -> Vec<u8> {
    fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Per-CPU pages of a fixture tree.
fn fixture_pages(dir: &Path, layout: &PageLayout) -> Vec<Vec<Vec<u8>>> {
    let mut cpus = Vec::new();
    for c in 0.. {
        let p = dir.join(format!("per_cpu/cpu{c}/trace_pipe_raw"));
        if !p.exists() {
            break;
        }
        let raw = read(&p);
        cpus.push(
            raw.chunks(layout.subbuf_size()).filter(|c| c.len() == layout.subbuf_size()).map(<[u8]>::to_vec).collect(),
        );
    }
    cpus
}

fn records(page: &[u8], layout: &PageLayout) -> Vec<u64> {
    Page::parse(page, layout, Endian::Little)
        .map(|p| p.records().filter_map(Result::ok).map(|r| r.ts).collect())
        .unwrap_or_default()
}

/// One run of copies of a fixture's pages.
pub struct Part<'p> {
    pub dir: &'p Path,
    /// At least this many events (whole copies).
    pub min_events: u64,
    /// Flag every n-th copy's first page per CPU as following lost events
    /// (RB_MISSED_EVENTS without a count).
    pub lost_every: Option<u64>,
}

/// Write a v6 trace.dat at `out`: the metadata (formats, kallsyms,
/// cmdlines, clock) of `meta`, then each part's copies in turn, every copy
/// later than the one before. Little-endian fixtures only. Returns the
/// number of events and the page bytes per CPU.
pub fn build(meta: &Path, parts: &[Part<'_>], out: &Path) -> (u64, Vec<Vec<u8>>) {
    let hp_text = read(&meta.join("events/header_page"));
    let trace = trbox::sys::trace::open(meta).unwrap();
    let layout = trace.layout;
    let mut data: Vec<Vec<u8>> = Vec::new();
    let mut events = 0;
    let mut base = 0u64;
    for part in parts {
        let cpus = fixture_pages(part.dir, &layout);
        let stamps: Vec<u64> = cpus.iter().flatten().flat_map(|p| records(p, &layout)).collect();
        let per_copy = stamps.len() as u64;
        let (lo, hi) = stamps.iter().fold((u64::MAX, 0), |(lo, hi), &t| (lo.min(t), hi.max(t)));
        let span = hi.saturating_sub(lo) + 1_000;
        // Shift this part after everything before it.
        let start = base.saturating_sub(lo.min(base));
        let copies = part.min_events.div_ceil(per_copy.max(1));
        data.resize(data.len().max(cpus.len()), Vec::new());
        for (d, pages) in data.iter_mut().zip(&cpus) {
            for k in 0..copies {
                for (i, p) in pages.iter().enumerate() {
                    let mut p = p.clone();
                    let ts = u64::from_le_bytes(p[0..8].try_into().unwrap()) + start + k * span;
                    p[0..8].copy_from_slice(&ts.to_le_bytes());
                    if i == 0 && part.lost_every.is_some_and(|n| k % n == n - 1) {
                        let w = u32::from_le_bytes(p[8..12].try_into().unwrap()) | RB_MISSED_EVENTS;
                        p[8..12].copy_from_slice(&w.to_le_bytes());
                    }
                    d.extend_from_slice(&p);
                }
            }
        }
        events += per_copy * copies;
        base = hi + start + copies * span;
    }

    let mut systems: Vec<(String, Vec<Vec<u8>>)> = Vec::new();
    let mut ftrace = Vec::new();
    for s in fs::read_dir(meta.join("events")).unwrap().flatten().filter(|s| s.path().is_dir()) {
        let name = s.file_name().to_string_lossy().into_owned();
        let mut fmts = Vec::new();
        for e in fs::read_dir(s.path()).unwrap().flatten() {
            let f = e.path().join("format");
            if f.exists() {
                fmts.push(read(&f));
            }
        }
        if name == "ftrace" {
            ftrace = fmts;
        } else {
            systems.push((name, fmts));
        }
    }
    let page = layout.subbuf_size() as u32;
    let e = Endian::Little;
    let mut w = V6Writer::new(trbox::abi::Abi::new(e, trace.long_size()), page);
    w.header_files(&hp_text, &read(&meta.join("events/header_event"))).unwrap();
    w.ftrace_formats(&ftrace).unwrap();
    w.event_systems(&systems).unwrap();
    w.kallsyms(&fs::read(meta.join("kallsyms")).unwrap_or_default()).unwrap();
    w.printk_formats(&fs::read(meta.join("printk_formats")).unwrap_or_default()).unwrap();
    w.saved_cmdlines(&read(&meta.join("saved_cmdlines"))).unwrap();
    w.cpus(data.len() as u32).unwrap();
    let clock = String::from_utf8_lossy(&read(&meta.join("trace_clock"))).trim().to_string();
    // The kernel's `uname -a` where the tree has it (readers take the
    // kernel version from it).
    let uname = fs::read_to_string(meta.join("uname")).ok().and_then(|u| u.lines().next().map(String::from));
    w.options(
        &WriteOptions {
            trace_clock: Some(&clock),
            uname: Some(uname.as_deref().unwrap_or("Linux bench 6.1 x86_64")),
            version: Some("trbox-bench"),
            ..Default::default()
        },
        None,
    )
    .unwrap();
    let fly = w.flyrecord().unwrap();
    let mut f = fs::File::create(out).unwrap();
    f.write_all(&w.take()).unwrap();
    let sizes: Vec<u64> = data.iter().map(|d| d.len() as u64).collect();
    let table = data_layout(fly.data_start, page, &sizes);
    for (d, &(off, _)) in data.iter().zip(&table) {
        f.write_all_at(d, off).unwrap();
    }
    f.write_all_at(&encode_flyrecord_table(e, &table), fly.table_pos).unwrap();
    (events, data)
}
