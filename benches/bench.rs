//! `make bench`: trbox against trace-cmd on the same data, in one run.
//!
//! Data: the raw pages recorded in the x86_64 qemu board
//! (tests/fixtures/x86_64/events), replicated with shifted page timestamps
//! until the file holds at least 1 million events, written as a v6
//! trace.dat with trbox's writer. Then:
//! - raw decode: pages → records in memory (MB/s of pages, events/s);
//! - text output: `tr-cat FILE` vs `trace-cmd report FILE`, both to
//!   /dev/null (events/s, ratio), with each one's peak RSS.

use std::fs;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;
use trbox::format::{Endian, HeaderPage};
use trbox::page::{Page, PageLayout};
use trbox::tracedat::{data_layout, encode_flyrecord_table, V6Writer, WriteOptions};

const FIXTURE: &str = "tests/fixtures/x86_64/events";
const MIN_EVENTS: u64 = 1_000_000;

fn read(p: &Path) -> Vec<u8> {
    fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Per-CPU pages of the fixture.
fn fixture_pages(dir: &Path, layout: &PageLayout) -> Vec<Vec<Vec<u8>>> {
    let mut cpus = Vec::new();
    for c in 0.. {
        let p = dir.join(format!("per_cpu/cpu{c}/trace_pipe_raw"));
        if !p.exists() {
            break;
        }
        let raw = read(&p);
        cpus.push(raw.chunks(layout.subbuf_size()).filter(|c| c.len() == layout.subbuf_size()).map(<[u8]>::to_vec).collect());
    }
    cpus
}

fn count_events(pages: &[Vec<u8>], layout: &PageLayout) -> u64 {
    pages
        .iter()
        .filter_map(|p| Page::parse(p, layout, Endian::Little).ok())
        .map(|p| p.records().filter(|r| r.is_ok()).count() as u64)
        .sum()
}

/// Write the big file; returns (path, events, page bytes per CPU).
fn build(dir: &Path, out: &Path) -> (u64, Vec<Vec<u8>>) {
    let hp_text = read(&dir.join("events/header_page"));
    let hp = HeaderPage::parse(&String::from_utf8_lossy(&hp_text)).unwrap();
    let layout = PageLayout::from(&hp);
    let cpus = fixture_pages(dir, &layout);
    let per_copy: u64 = cpus.iter().map(|p| count_events(p, &layout)).sum();
    let copies = MIN_EVENTS.div_ceil(per_copy.max(1));
    // Time span of one copy, to shift the next one after it.
    let span = cpus
        .iter()
        .flat_map(|p| p.iter())
        .filter_map(|p| Page::parse(p, &layout, Endian::Little).ok())
        .flat_map(|p| p.records().filter_map(Result::ok).map(|r| r.ts).collect::<Vec<_>>())
        .fold((u64::MAX, 0), |(lo, hi), t| (lo.min(t), hi.max(t)));
    let shift = span.1.saturating_sub(span.0) + 1_000;
    let data: Vec<Vec<u8>> = cpus
        .iter()
        .map(|pages| {
            let mut d = Vec::new();
            for k in 0..copies {
                for p in pages {
                    let mut p = p.clone();
                    let ts = u64::from_le_bytes(p[0..8].try_into().unwrap()) + k * shift;
                    p[0..8].copy_from_slice(&ts.to_le_bytes());
                    d.extend_from_slice(&p);
                }
            }
            d
        })
        .collect();

    let mut systems: Vec<(String, Vec<Vec<u8>>)> = Vec::new();
    let mut ftrace = Vec::new();
    for s in fs::read_dir(dir.join("events")).unwrap().flatten().filter(|s| s.path().is_dir()) {
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
    let mut w = V6Writer::new(e, hp.long_size() as u8, page);
    w.header_files(&hp_text, &read(&dir.join("events/header_event"))).unwrap();
    w.ftrace_formats(&ftrace).unwrap();
    w.event_systems(&systems).unwrap();
    w.kallsyms(&fs::read(dir.join("kallsyms")).unwrap_or_default()).unwrap();
    w.printk_formats(&fs::read(dir.join("printk_formats")).unwrap_or_default()).unwrap();
    w.saved_cmdlines(&read(&dir.join("saved_cmdlines"))).unwrap();
    w.cpus(data.len() as u32).unwrap();
    let clock = String::from_utf8_lossy(&read(&dir.join("trace_clock"))).trim().to_string();
    w.options(&WriteOptions { trace_clock: Some(&clock), uname: Some("Linux bench 6.1 x86_64"), version: Some("trbox-bench"), ..Default::default() }, None)
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
    (per_copy * copies, data)
}

/// Run a command with stdout to /dev/null: (seconds, peak RSS in KiB).
fn time_cmd(cmd: &mut Command) -> (f64, i64) {
    let t = Instant::now();
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawn");
    let pid = child.id() as i32;
    let mut status = 0;
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child with valid out-pointers.
    unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    let secs = t.elapsed().as_secs_f64();
    let _ = child.try_wait();
    (secs, ru.ru_maxrss)
}

fn main() {
    // cargo bench passes --bench; nothing else to parse.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join(FIXTURE);
    let out = std::env::temp_dir().join("trbox-bench.dat");
    let (events, data) = build(&dir, &out);
    let bytes: u64 = data.iter().map(|d| d.len() as u64).sum();
    println!("data: {events} events, {:.1} MB of pages, {}", bytes as f64 / 1e6, out.display());

    // Raw decode in memory, best of 5.
    let hp = HeaderPage::parse(&String::from_utf8_lossy(&read(&dir.join("events/header_page")))).unwrap();
    let layout = PageLayout::from(&hp);
    let mut best = f64::MAX;
    let mut n = 0u64;
    for _ in 0..5 {
        let t = Instant::now();
        n = 0;
        for d in &data {
            for p in d.chunks(layout.subbuf_size()) {
                if let Ok(pg) = Page::parse(p, &layout, Endian::Little) {
                    for r in pg.records().flatten() {
                        n += r.payload.len() as u64 & 1 | 1;
                    }
                }
            }
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "raw decode:  {:>8.0} MB/s of pages, {:>6.1} M events/s ({n} records)",
        bytes as f64 / 1e6 / best,
        n as f64 / 1e6 / best
    );

    let trbox = root.join("target/release/trbox");
    assert!(trbox.exists(), "build the release binary first (make bench does)");
    let (ts, trss) = time_cmd(Command::new(&trbox).args(["tr-cat", out.to_str().unwrap()]));
    let have_tc = Command::new("trace-cmd").arg("--help").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    println!("text output: tr-cat            {:>6.2} s  {:>6.2} M events/s  peak RSS {:>6} KiB", ts, events as f64 / 1e6 / ts, trss);
    if have_tc {
        let (cs, crss) = time_cmd(Command::new("trace-cmd").args(["report", "-N", out.to_str().unwrap()]));
        println!("             trace-cmd report {:>6.2} s  {:>6.2} M events/s  peak RSS {:>6} KiB", cs, events as f64 / 1e6 / cs, crss);
        println!("ratio:       tr-cat is {:.1}x trace-cmd report's events/s", cs / ts);
    } else {
        println!("trace-cmd not installed: no comparison (bash cross/setup.sh installs it)");
    }
    if std::env::var_os("TRBOX_BENCH_KEEP").is_none() {
        let _ = fs::remove_file(&out);
    }
}
