//! BTF and kernel variables on this machine: /sys/kernel/btf/vmlinux
//! resolves the identifiers the format files leave unexpanded, and
//! `vmemmap_base` + `sizeof(struct page)` reproduce the kernel's own
//! `mm_page_alloc` text.
//!
//! The second test holds the shared tracefs lock and restores what it changed
//! (Drop guard), also when an assertion fails.

use super::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use trbox::btf::{vmemmap_base_from_trace, Btf, KernelConsts};
use trbox::sys::kvars::{load_for_tree, LiveVars};

fn live_btf() -> Option<Vec<u8>> {
    match std::fs::read("/sys/kernel/btf/vmlinux") {
        Ok(b) => Some(b),
        Err(e) => {
            common::skip_absent(&format!("/sys/kernel/btf/vmlinux: {e}"));
            None
        }
    }
}

/// Upper-case identifiers in a print fmt outside string literals that are
/// not calls, casts to REC or macro names: enumerator candidates.
fn enum_candidates(pf: &str) -> Vec<String> {
    let b = pf.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => {
                let q = b[i];
                i += 1;
                while i < b.len() && b[i] != q {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            c if c.is_ascii_digit() => {
                // A number with its suffix (1UL, 0x1fULL).
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let s = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                let w = &pf[s..i];
                let prev_arrow = s >= 2 && &pf[s - 2..s] == "->";
                let call = pf[i..].trim_start().starts_with('(');
                let upper = w.bytes().any(|c| c.is_ascii_uppercase()) && !w.bytes().any(|c| c.is_ascii_lowercase());
                if upper && !prev_arrow && !call && w != "REC" && w.len() > 1 {
                    out.push(w.to_string());
                }
            }
            _ => i += 1,
        }
    }
    out
}

#[test]
fn live_btf_resolves_format_identifiers() {
    let Some(raw) = live_btf() else { return };
    let t = Instant::now();
    let btf = Btf::parse(&raw).expect("parse /sys/kernel/btf/vmlinux");
    let dt = t.elapsed();
    eprintln!("BTF: {} bytes parsed in {dt:?}; {} names, {} heap bytes", raw.len(), btf.len(), btf.heap_bytes());

    // Enumerators of every version (include/net/tcp_states.h,
    // include/linux/hrtimer.h). The inode state flags of writeback events
    // are enumerators only where the print fmts name them (an enum in 6.x;
    // 6.1's #defines reach the format files expanded): checked below.
    assert_eq!(btf.enum_value("TCP_ESTABLISHED"), Some(1));
    assert_eq!(btf.enum_value("HRTIMER_MODE_REL"), Some(1));
    // sizeof(struct page) depends on the configuration (64 on x86_64's
    // usual ones): live_vmemmap_base_matches_kernel_text checks it against
    // the kernel's own text.
    let page = btf.struct_size("page").expect("struct page");
    if cfg!(target_arch = "x86_64") {
        assert_eq!(btf.long_size(), Some(8));
    }
    assert!((32..=256).contains(&page), "sizeof(struct page) = {page}");
    assert_eq!(btf.struct_size("task_struct").map(|s| s > 1000), Some(true));
    let gfp = btf.typedef("gfp_t").expect("gfp_t");
    assert_eq!((gfp.size, gfp.signed), (4, false));
    let loff = btf.typedef("loff_t").expect("loff_t");
    assert_eq!((loff.size, loff.signed), (8, true));

    // Every upper-case identifier left in this machine's print fmts.
    let mut unresolved: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut resolved = 0usize;
    let Some(root) = common::live_tracefs() else { return };
    for sys in std::fs::read_dir(root.join("events")).unwrap().flatten() {
        let Ok(evs) = std::fs::read_dir(sys.path()) else { continue };
        for ev in evs.flatten() {
            let Ok(text) = std::fs::read_to_string(ev.path().join("format")) else { continue };
            let Some(pf) = text.lines().find_map(|l| l.strip_prefix("print fmt: ")) else { continue };
            for w in enum_candidates(pf) {
                if let Some(v) = btf.enum_value(&w) {
                    // The inode state flags are single bits.
                    assert!(!w.starts_with("I_") || (v > 0 && (v as u64).is_power_of_two()), "{w} = {v:#x}");
                    resolved += 1;
                } else {
                    let name = format!("{}/{}", sys.file_name().to_string_lossy(), ev.file_name().to_string_lossy());
                    let v = unresolved.entry(w).or_default();
                    if !v.contains(&name) {
                        v.push(name);
                    }
                }
            }
        }
    }
    eprintln!("enumerator uses in print fmts: {resolved} resolved, {} names unresolved", unresolved.len());
    for (w, evs) in &unresolved {
        eprintln!("  unresolved {w}: {}", evs.join(" "));
    }
    let bad: Vec<_> = unresolved.keys().filter(|w| w.starts_with("I_")).collect();
    assert!(bad.is_empty(), "unresolved inode flags: {bad:?}");

    // The loader takes this machine's BTF for the live tree.
    let k = load_for_tree(&root, true).expect("live BtfInfo");
    assert_eq!(k.sizeof_struct("page"), Some(page));
    assert!(k.reader.is_some());
}

/// Allocate and touch fresh memory so the kernel allocates pages.
fn page_load() {
    let mut v: Vec<Vec<u8>> = Vec::new();
    for _ in 0..16 {
        let mut b = vec![0u8; 1 << 20];
        for i in (0..b.len()).step_by(4096) {
            b[i] = 1;
        }
        v.push(b);
    }
    std::hint::black_box(&v);
}

fn read_trace(root: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(root.join("trace")).unwrap_or_default()).into_owned()
}

#[test]
fn live_vmemmap_base_matches_kernel_text() {
    let Some(raw) = live_btf() else { return };
    let Some(root) = common::live_tracefs() else { return };
    let btf = Btf::parse(&raw).unwrap();
    let Some(page) = btf.struct_size("page") else { return };
    let ev = "events/kmem/mm_page_alloc";
    if !root.join(ev).join("enable").exists() {
        common::skip_absent("no kmem:mm_page_alloc");
        return;
    }
    let pf = std::fs::read_to_string(root.join(ev).join("format")).unwrap_or_default();
    if !pf.contains("vmemmap_base") {
        common::skip_absent("this kernel's mm_page_alloc does not use vmemmap_base");
        return;
    }
    let _lock = common::TracefsLock::take();
    let before = common::snapshot(&root);
    let text = {
        let mut g = common::Guard::new(&root);
        let _ = std::fs::write(root.join("trace"), "");
        assert!(g.set("options/hash-ptr", "0"), "hash-ptr");
        assert!(g.set(&format!("{ev}/enable"), "1"));
        assert!(g.set("tracing_on", "1"));
        page_load();
        let _ = g.set("tracing_on", "0");
        read_trace(&root)
        // g drops here: events off, hash-ptr and tracing_on as found, buffer cleared.
    };
    common::assert_same_state(&before, &common::snapshot(&root));
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("mm_page_alloc: page=")).collect();
    eprintln!("{} mm_page_alloc lines, e.g. {:?}", lines.len(), lines.first());
    let pfns: std::collections::BTreeSet<&str> =
        lines.iter().filter_map(|l| l.split(" pfn=").nth(1)?.split(' ').next()).collect();
    assert!(pfns.len() >= 2, "need two distinct pfns to check sizeof(struct page)");
    let learned = vmemmap_base_from_trace(&text, page).expect("every line agrees on vmemmap_base");
    // A wrong struct size would not be consistent across pfns.
    assert_eq!(vmemmap_base_from_trace(&text, page + 8), None);
    eprintln!("vmemmap_base from the kernel's text: {learned:#x} (sizeof(struct page) = {page})");
    match LiveVars::new().read("vmemmap_base") {
        Some(v) => {
            eprintln!("vmemmap_base from /proc/kcore: {v:#x}");
            assert_eq!(v, learned);
        }
        None => eprintln!(
            "NOTE: vmemmap_base not readable here (needs CONFIG_KALLSYMS_ALL + CONFIG_PROC_KCORE; kallsyms has it: {}, /proc/kcore exists: {})",
            std::fs::read_to_string("/proc/kallsyms").map(|t| t.lines().any(|l| l.ends_with(" vmemmap_base"))).unwrap_or(false),
            Path::new("/proc/kcore").exists()
        ),
    }
}
