//! `tr-cat --raw -T <fixture>` against the kernel's own `trace` text, for the
//! trees recorded in the qemu boards (tests/fixtures/ARCH/SCENARIO, see
//! tests/fixtures/README.md): arm64, armv7 (32-bit) and x86_64 kernels.

mod common;
use common::*;
use std::path::Path;

/// Compare every event line; on mismatch print the first differences.
fn check(dir: &Path) -> (usize, Vec<String>) {
    let kernel = std::fs::read_to_string(dir.join("trace")).unwrap();
    let o = run(&["tr-cat", "--raw", "-T", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}: {}", dir.display(), stderr(&o));
    assert!(stderr(&o).is_empty(), "{}: warnings: {}", dir.display(), stderr(&o));
    let ours = stdout(&o);
    let k: Vec<&str> = kernel.lines().filter(|l| !l.starts_with('#')).collect();
    let t: Vec<&str> = ours.lines().collect();
    let mut bad = Vec::new();
    for i in 0..k.len().max(t.len()) {
        let (a, b) = (k.get(i).copied().unwrap_or("<none>"), t.get(i).copied().unwrap_or("<none>"));
        if a != b {
            bad.push(format!("{}:{}:\n  kernel: {a}\n  trbox:  {b}", dir.display(), i + 1));
        }
    }
    (k.len(), bad)
}

/// The x86_64 board's kernel (Debian 6.1.176 amd64 under TCG) prints every
/// string argument empty in its own `trace` text (`prev_comm= `,
/// `[action=]`, `gfp_flags=`), although the raw records hold them. Its
/// text is no reference for those scenarios (`stack` differs only in the
/// `prev_comm= ` of its sched_switch lines).
const X86_64_BROKEN_TEXT: &[&str] = &["events", "stack"];

fn scenarios(names: &[&str]) {
    let root = Path::new("tests/fixtures");
    let mut failures = Vec::new();
    let mut total = 0;
    for arch in ["aarch64", "armv7", "x86_64"] {
        for s in names {
            if arch == "x86_64" && X86_64_BROKEN_TEXT.contains(s) {
                println!("{arch:<8} {s:<22} not compared: the kernel's own text is defective (see X86_64_BROKEN_TEXT)");
                continue;
            }
            let d = root.join(arch).join(s);
            if !d.join("trace").exists() {
                panic!("fixture missing: {}", d.display());
            }
            let (n, bad) = check(&d);
            println!("{arch:<8} {s:<22} {n:>6} lines, {} differ", bad.len());
            total += n;
            failures.extend(bad.into_iter().take(5));
        }
    }
    assert!(total > 0);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn events_match_the_kernel() {
    scenarios(&["events"]);
}

#[test]
fn function_and_stacks_match_the_kernel() {
    scenarios(&["function", "function_stack", "stack"]);
}

#[test]
fn kprobes_match_the_kernel() {
    scenarios(&["kprobe"]);
}

#[test]
fn function_graph_matches_the_kernel() {
    scenarios(&["function_graph", "function_graph_depth"]);
}
