//! print-fmt bodies against the kernel's own text on the qemu board
//! fixtures (tests/fixtures/ARCH/SCENARIO: tracefs copies with raw pages,
//! `trace`, kallsyms and printk_formats from arm64, armv7 and x86_64
//! guests). Events the line renderer prints itself (function, graph,
//! kernel_stack) are left out. Prints a per-event mismatch table.

use crate::common;
use crate::common::bodies::{self, Tally};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use trbox::abi::Endian;
use trbox::page::{decode, Item};
use trbox::printfmt::{Ctx, Program};
use trbox::trace::KernelProfile;

fn version(arch_dir: &Path) -> Option<(u32, u32)> {
    let info = std::fs::read_to_string(arch_dir.join("INFO")).ok()?;
    let k = info.lines().find_map(|l| l.strip_prefix("kernel: "))?;
    let mut it = k.split(['.', '-', ' ']);
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

fn compare(root: &Path, ver: Option<(u32, u32)>, per_event: &mut BTreeMap<String, Tally>) {
    let Ok(trace) = trbox::sys::trace::open_parsed(root) else { return };
    let (layout, fmts) = (trace.layout, &trace.events);
    let long = trace.long_size();
    let e = Endian::Little;
    let ctx = Ctx { abi: trbox::abi::Abi::new(e, long), syms: Some(&trace.symbols), strings: Some(&trace.printk) };
    let kernel = KernelProfile { version: ver, ..Default::default() };
    let mut progs: HashMap<u32, Program> = HashMap::new();
    let mut ours = bodies::Lines::new();
    for cpu in 0..64u32 {
        let Ok(raw) = std::fs::read(root.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"))) else { break };
        for page in raw.chunks(layout.subbuf_size()) {
            let Ok(items) = decode(page, &layout, e) else { continue };
            for it in items {
                let Ok(Item::Record(rec)) = it else { continue };
                let Some(id) = e.uint(rec.payload, 0, 2) else { continue };
                let Some(ev) = fmts.get(id as u32) else { continue };
                let p = progs.entry(id as u32).or_insert_with(|| Program::compile_with(ev, long, &kernel));
                let Some(s) = bodies::body(ev, p, rec.payload, &ctx) else { continue };
                ours.entry((cpu, format!("{}:{}", ev.system, ev.name))).or_default().push(s);
            }
        }
    }
    let text = std::fs::read_to_string(root.join("trace")).unwrap_or_default();
    // function / graph / stack lines belong to the line renderer.
    let kernel = bodies::kernel_lines(&text, fmts.iter(), None);
    bodies::tally(&kernel, &ours, &Default::default(), per_event);
}

#[test]
fn fixture_bodies_equal_kernel_text() {
    let base = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let Ok(arches) = std::fs::read_dir(&base) else {
        common::skip("no fixtures");
        return;
    };
    let mut grand = (0, 0);
    for arch in arches.flatten().filter(|a| a.path().is_dir()) {
        let ver = version(&arch.path());
        let mut per_event: BTreeMap<String, Tally> = BTreeMap::new();
        let Ok(scen) = std::fs::read_dir(arch.path()) else { continue };
        for s in scen.flatten().filter(|s| s.path().join("trace").is_file()) {
            compare(&s.path(), ver, &mut per_event);
        }
        let total: usize = per_event.values().map(|t| t.total).sum();
        let bad: usize = per_event.values().map(|t| t.bad).sum();
        // The x86_64 guest's kernel (Debian 6.1.176 amd64) prints every `%s`
        // argument of event print fmts as an empty string in its own
        // `trace` text (`prev_comm= `, `[action=]`): a kernel-side defect,
        // so that board is reported but not held to the bar.
        if arch.file_name() != "x86_64" {
            grand.0 += total;
            grand.1 += bad;
        }
        println!(
            "{} (kernel {:?}): {total} event lines, {bad} differ, {} event types",
            arch.file_name().to_string_lossy(),
            ver,
            per_event.len()
        );
        for (ev, t) in &per_event {
            if t.bad > 0 {
                println!("  {ev:<40} {:>6} {:>6}", t.total, t.bad);
                if let Some((k, o)) = &t.example {
                    println!("      kernel: {k}\n      ours:   {o}");
                }
            }
        }
    }
    println!("arm64 + armv7 fixtures: {} lines, {} differ", grand.0, grand.1);
    assert!(grand.1 * 1000 <= grand.0.max(1), "more than 0.1% of fixture bodies differ");
}
