//! The page decoder on the real trees recorded on the qemu boards
//! (tests/fixtures/ARCH/SCENARIO, see its README): arm64, armv7 (4-byte
//! commit word, data at 12) and x86_64 kernels, events, probes, function and
//! function_graph tracers, stacks.
//!
//! For every tree: every page decodes without error, every record's
//! `common_type` is a known event, the record count per CPU equals the
//! `entries` the kernel reported in `per_cpu/cpuN/stats`, timestamps never go
//! backwards on a CPU. Where the kernel prints one line per record (events,
//! kprobe, function), the (CPU, µs timestamp[, event name]) sequence equals
//! the kernel's `trace` text.

use super::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use trbox::abi::Endian;
use trbox::page::{Page, PageItem};

/// Does the kernel's text `rest` (after the timestamp) belong to event `ev`?
/// Syscall events print as `sys_NAME(args)` / `sys_NAME -> ret`; ftrace's
/// print/bprint/bputs as `SYMBOL: text`.
fn names_match(ev: &str, rest: &str) -> bool {
    if matches!(ev, "print" | "bprint" | "bputs") {
        return true;
    }
    if let Some(x) = ev.strip_prefix("sys_enter_") {
        return rest.starts_with(&format!("sys_{x}("));
    }
    if let Some(x) = ev.strip_prefix("sys_exit_") {
        return rest.starts_with(&format!("sys_{x} -> "));
    }
    rest.split(':').next() == Some(ev)
}

fn trees() -> Vec<PathBuf> {
    common::fixture_trees()
}

#[test]
fn qemu_fixture_pages_decode_exactly() {
    let trees = trees();
    if trees.is_empty() {
        common::skip("no tests/fixtures");
        return;
    }
    let mut report = String::new();
    for dir in &trees {
        let name = dir
            .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"))
            .unwrap()
            .display()
            .to_string();
        let trace = trbox::sys::trace::open(dir).unwrap_or_else(|err| panic!("{name}: {err}"));
        let (layout, table) = (trace.layout, &trace.events);
        let sb = layout.subbuf_size();
        let e = Endian::Little; // all three boards are little endian (README)
        let mut got: BTreeMap<u32, Vec<(u64, String)>> = BTreeMap::new();
        let (mut nrec, mut npages) = (0usize, 0usize);
        for c in std::fs::read_dir(dir.join("per_cpu")).unwrap().flatten() {
            let cpu: u32 = c.file_name().to_string_lossy().strip_prefix("cpu").unwrap().parse().unwrap();
            let raw = std::fs::read(c.path().join("trace_pipe_raw")).unwrap();
            assert_eq!(raw.len() % sb, 0, "{name}: cpu{cpu} not whole sub-buffers");
            let v = got.entry(cpu).or_default();
            let mut last = 0u64;
            for (pi, page) in raw.chunks(sb).enumerate() {
                npages += 1;
                let p = Page::parse(page, &layout, e).unwrap_or_else(|err| panic!("{name} cpu{cpu} page {pi}: {err}"));
                for it in p.items() {
                    match it.unwrap_or_else(|err| panic!("{name} cpu{cpu} page {pi}: {err}")) {
                        PageItem::Record(r) => {
                            let ev = table
                                .event_of(r.payload, e)
                                .unwrap_or_else(|| panic!("{name}: unknown id {:?}", table.record_id(r.payload, e)));
                            assert!(r.ts >= last, "{name} cpu{cpu}: time went backwards");
                            last = r.ts;
                            v.push(((r.ts + 500) / 1000, ev.name.clone()));
                        }
                        PageItem::Lost { .. } => panic!("{name}: lost events"),
                    }
                }
            }
            // The kernel's own count for this CPU.
            let stats = std::fs::read_to_string(c.path().join("stats")).unwrap_or_default();
            if let Some(n) = stats.lines().find_map(|l| l.strip_prefix("entries: ")) {
                assert_eq!(v.len(), n.trim().parse::<usize>().unwrap(), "{name} cpu{cpu}: records vs stats entries");
            }
            nrec += v.len();
        }
        // One line per record: compare with the kernel's text.
        let scenario = dir.file_name().unwrap().to_string_lossy().into_owned();
        let mut compared = "count";
        if matches!(scenario.as_str(), "events" | "kprobe" | "function") {
            let trace = std::fs::read_to_string(dir.join("trace")).unwrap();
            let mut want: BTreeMap<u32, Vec<(u64, String)>> = BTreeMap::new();
            for line in trace.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
                let (cpu, us, rest) = common::trace_text::parse(line).unwrap_or_else(|| panic!("{name}: {line}"));
                want.entry(cpu).or_default().push((us, rest.to_string()));
            }
            for (cpu, w) in &want {
                let g = &got[cpu];
                assert_eq!(g.len(), w.len(), "{name} cpu{cpu}: records vs trace lines");
                for (i, (a, b)) in g.iter().zip(w).enumerate() {
                    assert_eq!(a.0, b.0, "{name} cpu{cpu} line {i}: timestamp");
                    if scenario != "function" {
                        assert!(names_match(&a.1, &b.1), "{name} cpu{cpu} line {i}: {} vs {}", a.1, b.1);
                    }
                }
            }
            compared = "count+text";
        }
        report.push_str(&format!(
            "{name:30} long={} subbuf={} pages={npages:4} records={nrec:6} {compared}\n",
            trace.long_size(),
            sb
        ));
    }
    eprint!("{report}");
}
