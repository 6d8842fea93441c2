//! `tr-cat --raw -T <fixture>` and `tr-cat FILE` (a trace.dat of the same
//! pages) against the kernel's own `trace` text, for the trees recorded in
//! the qemu boards (tests/fixtures/BOARD/SCENARIO, see
//! tests/fixtures/README.md): Debian 12's 6.1 on arm64, armv7 (32-bit) and
//! x86_64, and arm64 boards with 5.10, 6.1 PREEMPT_RT, 6.12 and 6.12 with
//! 16 KiB pages, and Debian sid's 7.2 (arm64, armmp, arm64 PREEMPT_RT). Second renderings (`trace.OPT`: the same buffer printed
//! with one option changed, `trace_options.OPT` the options then) are
//! compared too.

use super::common;
use common::strverify;
use common::*;
use std::path::{Path, PathBuf};

/// The boards with fixture trees: tests/fixtures/BOARD, named as
/// cross/qemu/common.sh names boards (ARCH for Debian 12's 6.1 kernels,
/// ARCH-KERNEL for the others).
pub const BOARDS: &[&str] = &[
    "aarch64",
    "armv7",
    "x86_64",
    "aarch64-5.10",
    "armv7-5.10",
    "aarch64-6.1-rt",
    "armv7-6.1-rt",
    "aarch64-6.12",
    "aarch64-6.12-16k",
    "x86_64-6.12",
    "aarch64-7.2",
    "armv7-7.2",
    "aarch64-7.2-rt",
];

/// Line-by-line differences of our text from the kernel's (its `#` header
/// lines left out).
/// A line of DIR's text whose event's first `%s` its kernel printed
/// empty (common::strverify: x86_64 6.1) also matches ours with that
/// string left out.
fn compare(what: &str, dir: &Path, kernel: &str, ours: &str) -> (usize, Vec<String>) {
    let first = strverify::fixture_events(dir);
    let kernel = strverify::unglue(kernel, &first);
    let k: Vec<&str> = kernel.lines().filter(|l| !l.starts_with('#')).collect();
    let t: Vec<&str> = ours.lines().collect();
    let mut bad = Vec::new();
    for i in 0..k.len().max(t.len()) {
        let (a, b) = (k.get(i).copied().unwrap_or("<none>"), t.get(i).copied().unwrap_or("<none>"));
        let verifier = || {
            strverify::event_name(a).and_then(|e| first.get(e)).is_some_and(|f| strverify::as_kernel_prints(a, b, f))
        };
        if a != b && !verifier() {
            bad.push(format!("{what}:{}:\n  kernel: {a}\n  trbox:  {b}", i + 1));
        }
    }
    (k.len(), bad)
}

/// `tr-cat --raw -T DIR` against DIR/trace.
/// A comparison: lines compared, and the differences as text.
type Diff = (usize, Vec<String>);

fn check(dir: &Path) -> Diff {
    let kernel = std::fs::read_to_string(dir.join("trace")).unwrap();
    let o = run(&["tr-cat", "--raw", "-T", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}: {}", dir.display(), stderr(&o));
    assert!(stderr(&o).is_empty(), "{}: warnings: {}", dir.display(), stderr(&o));
    compare(&dir.display().to_string(), dir, &kernel, &stdout(&o))
}

/// `tr-cat FILE` of a trace.dat holding DIR's pages and metadata
/// (common::dat, one copy, timestamps as recorded) against DIR/trace; and
/// `trace-cmd report` of that file where it applies ([`check_trace_cmd`]).
fn check_file(dir: &Path) -> (Diff, Option<Diff>) {
    let kernel = std::fs::read_to_string(dir.join("trace")).unwrap();
    let tmp = TempDir::new("fxdat");
    let f = tmp.path().join("trace.dat");
    common::dat::build(dir, &[common::dat::Part { dir, min_events: 1, lost_every: None }], &f);
    let o = run(&["tr-cat", f.to_str().unwrap()]);
    assert!(o.status.success(), "{}: {}", dir.display(), stderr(&o));
    let graph = std::fs::read_to_string(dir.join("current_tracer")).is_ok_and(|t| t.trim() == "function_graph");
    let tc = if graph { None } else { check_trace_cmd(dir, &f) };
    (compare(&format!("{} (trace.dat)", dir.display()), dir, &kernel, &stdout(&o)), tc)
}

/// `tr-cat` of trace-cmd's own rewrite of that trace.dat (`trace-cmd
/// convert --file-version 7`, compressed when trace-cmd can) against
/// DIR/trace; `None` without trace-cmd.
fn check_converted(dir: &Path) -> Option<(usize, Vec<String>)> {
    let kernel = std::fs::read_to_string(dir.join("trace")).unwrap();
    let tmp = TempDir::new("fxv7");
    let (f, v7) = (tmp.path().join("trace.dat"), tmp.path().join("v7.dat"));
    common::dat::build(dir, &[common::dat::Part { dir, min_events: 1, lost_every: None }], &f);
    let c = std::process::Command::new("trace-cmd")
        .args(["convert", "--file-version", "7", "-i"])
        .arg(&f)
        .arg("-o")
        .arg(&v7)
        .output()
        .ok()?;
    assert!(c.status.success(), "{}: trace-cmd convert: {}", dir.display(), String::from_utf8_lossy(&c.stderr));
    let o = run(&["tr-cat", v7.to_str().unwrap()]);
    assert!(o.status.success(), "{}: {}", dir.display(), stderr(&o));
    Some(compare(&format!("{} (trace-cmd's v7)", dir.display()), dir, &kernel, &stdout(&o)))
}

/// Per CPU, the (µs timestamp, pid) of every line with a `[CPU]` column
/// and a `S.US:` time after it: the kernel's text, tr-cat's and `trace-cmd
/// report`'s (which has no flags column) alike.
fn stamps(text: &str) -> std::collections::BTreeMap<u32, Vec<(String, String)>> {
    let mut m = std::collections::BTreeMap::<u32, Vec<(String, String)>>::new();
    for line in text.lines() {
        let t: Vec<&str> = line.split_whitespace().collect();
        let Some(c) = t.iter().position(|w| w.len() > 2 && w.starts_with('[') && w.ends_with(']')) else { continue };
        let Ok(cpu) = t[c][1..t[c].len() - 1].parse::<u32>() else { continue };
        let Some(ts) = t[c + 1..].iter().take(2).find(|w| w.ends_with(':') && w.contains('.')) else { continue };
        let pid = t.get(c.wrapping_sub(1)).and_then(|w| w.rsplit('-').next()).unwrap_or("");
        m.entry(cpu).or_default().push((ts.to_string(), pid.to_string()));
    }
    m
}

/// `trace-cmd report` of the same trace.dat (when trace-cmd is installed):
/// per CPU the same records (timestamp, pid) as the kernel's text. Only for
/// the scenarios whose text has one prefixed line per record (not the
/// function_graph layout).
fn check_trace_cmd(dir: &Path, dat: &Path) -> Option<(usize, Vec<String>)> {
    let o = std::process::Command::new("trace-cmd").args(["report", "-i"]).arg(dat).output().ok()?;
    let kernel = std::fs::read_to_string(dir.join("trace")).unwrap();
    if !o.status.success() {
        return Some((
            0,
            vec![format!("{}: trace-cmd report failed: {}", dir.display(), String::from_utf8_lossy(&o.stderr))],
        ));
    }
    let (k, t) = (stamps(&kernel), stamps(&String::from_utf8_lossy(&o.stdout)));
    let n = k.values().map(Vec::len).sum();
    let bad = if k == t {
        Vec::new()
    } else {
        let first = k.iter().find_map(|(cpu, v)| {
            let w = t.get(cpu).cloned().unwrap_or_default();
            let i = v.iter().zip(&w).position(|(a, b)| a != b).unwrap_or(v.len().min(w.len()));
            (v != &w).then(|| format!("cpu{cpu} record {i}: kernel {:?}, trace-cmd {:?}", v.get(i), w.get(i)))
        });
        vec![format!("{} (trace-cmd report): {}", dir.display(), first.unwrap_or_default())]
    };
    Some((n, bad))
}

/// The second renderings of DIR: (OPT, a copy of DIR whose `trace` and
/// `trace_options` are those of `trace.OPT` and `trace_options.OPT`).
fn renderings(dir: &Path, tmp: &TempDir) -> Vec<(String, PathBuf)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(opt) = name.strip_prefix("trace.") else { continue };
        let d = tmp.path().join(opt);
        copy_tree(dir, &d);
        std::fs::copy(e.path(), d.join("trace")).unwrap();
        std::fs::copy(dir.join(format!("trace_options.{opt}")), d.join("trace_options")).unwrap();
        v.push((opt.to_string(), d));
    }
    v.sort();
    v
}

/// Outside function_graph, `latency-format` prints each record's time since
/// the buffer was last cleared (`lat_print_timestamp()`: `iter->ts -
/// time_start`) and the time to the next record; `time_start` is in no
/// file of a copy or trace.dat, so that rendering cannot be reproduced.
const FLAT_LATENCY_FORMAT: &str = "times are relative to the buffer's last reset (time_start), which no file holds";

/// Compare the scenarios on every board that has them: `tr-cat --raw`,
/// `tr-cat FILE` and the second renderings (`--raw`).
fn scenarios(names: &[&str]) {
    scenarios_on(BOARDS, names)
}

/// [`scenarios`] on `boards` only.
fn scenarios_on(boards: &[&str], names: &[&str]) {
    let root = Path::new("tests/fixtures");
    let mut failures = Vec::new();
    let mut total = 0;
    for board in boards {
        for s in names {
            let d = root.join(board).join(s);
            if !d.join("trace").exists() {
                panic!("fixture missing: {}", d.display());
            }
            let tmp = TempDir::new("fxopt");
            let (file, tc) = check_file(&d);
            let mut runs = vec![("raw".to_string(), check(&d)), ("file".to_string(), file)];
            if let Some(tc) = tc {
                runs.push(("trace-cmd report".to_string(), tc));
            }
            if let Some(v7) = check_converted(&d) {
                runs.push(("trace-cmd's v7".to_string(), v7));
            }
            let graph = std::fs::read_to_string(d.join("current_tracer")).is_ok_and(|t| t.trim() == "function_graph");
            for (opt, copy) in renderings(&d, &tmp) {
                if opt == "latency-format" && !graph {
                    println!("{board:<17} {s:<22} raw {opt:<20} not compared: {FLAT_LATENCY_FORMAT}");
                    continue;
                }
                runs.push((format!("raw {opt}"), check(&copy)));
            }
            for (how, (n, bad)) in runs {
                println!("{board:<17} {s:<22} {how:<24} {n:>6} lines, {} differ", bad.len());
                total += n;
                failures.extend(bad.into_iter().take(5));
            }
        }
    }
    assert!(total > 0);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The latency tracers' own entries (timerlat, osnoise, hwlat), which the
/// kernel prints with trace_output.c's functions rather than their print
/// fmts: on the PREEMPT_RT boards, the only ones with these tracers.
#[test]
fn latency_tracer_entries_match_the_kernel() {
    scenarios_on(&["aarch64-6.1-rt", "armv7-6.1-rt", "aarch64-7.2-rt"], &["timerlat", "osnoise", "hwlat"]);
}

#[test]
fn events_match_the_kernel() {
    scenarios(&["events"]);
}

#[test]
fn function_and_stacks_match_the_kernel() {
    // 6.12 x86_64 stores INT_MAX for a return address in an ftrace
    // trampoline and prints `[FTRACE TRAMPOLINE]` (trace_stack_print()).
    let text = std::fs::read_to_string("tests/fixtures/x86_64-6.12/function_stack/trace").unwrap();
    assert!(text.contains("\n => [FTRACE TRAMPOLINE]\n"), "the fixture lacks the case it is for");
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

/// A kretprobe on functions the function tracer also traces, with
/// func_stack_trace: their return address is the kretprobe trampoline,
/// which the kernel prints as `[unknown/kretprobe'd]` (trace_output.c,
/// `kretprobed()`). arm64 and armv7 show it on the function lines, armv7
/// also in `<stack trace>`s (arm64 and x86_64 unwinders put the real
/// return address back); x86_64 (kprobes on ftrace) reads the parent before
/// the probe replaces it, so its text has none.
#[test]
fn kretprobe_trampoline_matches_the_kernel() {
    let text = |a: &str| std::fs::read_to_string(format!("tests/fixtures/{a}/kretprobe_function/trace")).unwrap();
    assert!(text("aarch64").contains(" <-[unknown/kretprobe'd]"), "the fixture lacks the case it is for");
    assert!(text("armv7").contains(" <-[unknown/kretprobe'd]"), "the fixture lacks the case it is for");
    assert!(text("armv7").contains("\n => [unknown/kretprobe'd]\n"), "the fixture lacks the case it is for");
    scenarios(&["kretprobe_function"]);
}

/// trace_marker_raw records (`ftrace/raw_data`) of 0..20 data bytes:
/// `# ID buf:` and every byte of the record after the id.
#[test]
fn raw_markers_match_the_kernel() {
    let text = std::fs::read_to_string("tests/fixtures/aarch64/marker_raw/trace").unwrap();
    assert!(text.contains(": # 1001 buf: 01 00"), "the fixture lacks the case it is for");
    scenarios(&["marker_raw"]);
}

/// Syscall events inside the function_graph layout (`/* sys_openat(…) */`)
/// in the style of the kernel's version (6.1: `dfd: ffffffffffffff9c`).
#[test]
fn syscalls_in_the_graph_match_the_kernel() {
    let text = std::fs::read_to_string("tests/fixtures/aarch64/graph_syscalls/trace").unwrap();
    assert!(text.contains("/* sys_openat(dfd: ffffffffffffff9c"), "the fixture lacks the case it is for");
    scenarios(&["graph_syscalls"]);
}

/// A copied tree without `uname` (or `version`): the version is inferred
/// from its formats, the syscall layout is that of the kernels boards run
/// today (before 6.17), and `-v` says so and why.
#[test]
fn unknown_version_means_the_layout_before_6_17() {
    for s in ["graph_syscalls", "events"] {
        let tmp = TempDir::new("noversion");
        let d = tmp.path().join(s);
        copy_tree(&Path::new("tests/fixtures/aarch64").join(s), &d);
        std::fs::remove_file(d.join("uname")).unwrap();
        let (n, bad) = check(&d);
        assert!(n > 0 && bad.is_empty(), "{}", bad.join("\n"));
        let o = run(&["tr-cat", "--raw", "-v", "-T", d.to_str().unwrap()]);
        // The version is inferred from the formats (crate::kernel::infer).
        let err = stderr(&o);
        let want = format!("(inferred from the formats in {} (no uname or version file)", d.display());
        assert!(err.contains(&want), "{err}");
        assert!(err.contains("syscall events in the style of kernels before 6.17"), "{err}");
    }
    let o = run(&["tr-cat", "--raw", "-v", "-T", "tests/fixtures/aarch64/graph_syscalls"]);
    assert!(stderr(&o).contains("kernel version 6.1 (from tests/fixtures/aarch64/graph_syscalls/uname): latency columns of kernels since 5.13 (`d.h2.`), syscall events in the style of kernels before 6.17"), "{}", stderr(&o));
}

/// A kernel newer than the newest whose text trbox's rules were checked
/// against (kernel::NEWEST_RULES, 7.2) gets 7.2's rules and `-v` says so,
/// once. Without a uname, the `__ARG_val` fields prove 6.19 or later
/// (kernel::records_user_data): every syscall event then prints the 6.19+
/// way, sys_read's too, which has none, and `-v` says where that came from.
#[test]
fn a_newer_kernel_is_said_under_v() {
    for s in ["graph_syscalls", "events"] {
        let tmp = TempDir::new("newer");
        let d = tmp.path().join(s);
        copy_tree(&Path::new("tests/fixtures/aarch64-7.2").join(s), &d);
        std::fs::write(
            d.join("uname"),
            "Linux trbox-board 7.3.0-1-arm64 #1 SMP PREEMPT Debian 7.3.0-1 aarch64 GNU/Linux\n",
        )
        .unwrap();
        let (n, bad) = check(&d);
        assert!(n > 0 && bad.is_empty(), "{}", bad.join("\n"));
        let o = run(&["tr-cat", "--raw", "-v", "-T", d.to_str().unwrap()]);
        let err = stderr(&o);
        let want = "7.3 is newer than the newest kernel trbox knows the text of (7.2): its rules are used, and lines may differ from the kernel's own";
        assert_eq!(err.matches(want).count(), 1, "{err}");
        std::fs::remove_file(d.join("uname")).unwrap();
        let (n, bad) = check(&d);
        assert!(n > 0 && bad.is_empty(), "{}", bad.join("\n"));
        let o = run(&["tr-cat", "--raw", "-v", "-T", d.to_str().unwrap()]);
        assert!(
            stderr(&o).contains("kernel version 6.19 or later (inferred from")
                && stderr(&o).contains("syscall events record user data (6.19 on)"),
            "{}",
            stderr(&o)
        );
    }
    let o = run(&["tr-cat", "--raw", "-v", "-T", "tests/fixtures/aarch64-7.2/events"]);
    assert!(!stderr(&o).contains("newer"), "{}", stderr(&o));
}
