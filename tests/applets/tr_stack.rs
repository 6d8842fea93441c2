//! tr-stack: offline on the kernel_stack records recorded in the arm64,
//! armv7 and x86_64 boards (tests/fixtures/ARCH/stack: the stacktrace
//! trigger on sched_switch; ARCH/function_stack: func_stack_trace), compared
//! with the kernel's own `<stack trace>` text; live on this machine: the
//! stacks behind sched_switch counted and symbolized, and one-line reasons
//! for what this kernel lacks (stack tracer, dynamic ftrace), with the
//! tracefs state restored every time.

use super::common;
use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn stack(args: &[&str]) -> std::process::Output {
    let mut a = vec!["tr-stack"];
    a.extend_from_slice(args);
    let o = run(&a);
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    o
}

fn fixture(arch: &str, s: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(arch).join(s)
}

/// One block of the table: (count, origin, frames).
type Block = (u64, String, Vec<String>);

/// The table parsed back: the blocks, and the summary's (stacks, distinct).
fn parse_table(out: &str) -> (Vec<Block>, (u64, usize)) {
    let mut rows: Vec<Block> = Vec::new();
    let mut summary = None;
    for l in out.lines() {
        if let Some(f) = l.strip_prefix("          => ") {
            rows.last_mut().expect("frame before a count").2.push(f.to_string());
        } else if let Some((n, rest)) = l.split_once(" stacks, ") {
            summary = Some((n.parse().unwrap(), rest.trim_end_matches(" distinct").parse().unwrap()));
        } else if !l.is_empty() {
            let (n, origin) = l.trim_start().split_once("  ").unwrap_or_else(|| panic!("bad line {l:?}"));
            rows.push((n.parse().unwrap(), origin.to_string(), Vec::new()));
        }
    }
    (rows, summary.expect("summary line"))
}

/// The kernel's text: each `<stack trace>` block's frames, counted.
fn kernel_stacks(trace: &str) -> BTreeMap<Vec<String>, u64> {
    let mut m = BTreeMap::new();
    let mut cur: Option<Vec<String>> = None;
    for l in trace.lines() {
        if let Some(f) = l.strip_prefix(" => ") {
            if let Some(c) = cur.as_mut() {
                c.push(f.to_string());
            }
            continue;
        }
        if let Some(c) = cur.take() {
            *m.entry(c).or_insert(0) += 1;
        }
        if l.ends_with("<stack trace>") {
            cur = Some(Vec::new());
        }
    }
    if let Some(c) = cur {
        *m.entry(c).or_insert(0) += 1;
    }
    m
}

/// The stacks behind sched_switch on every board: the same distinct stacks
/// and counts as the kernel's text shows, most frequent first, counts
/// summing to the number of stack records; --folded gives the same total.
#[test]
fn event_stacks_of_every_board_match_the_kernels_text() {
    for arch in ["aarch64", "armv7", "x86_64"] {
        let d = fixture(arch, "stack");
        let o = stack(&["-T", d.to_str().unwrap(), "-e", "sched:sched_switch"]);
        assert!(o.status.success(), "{arch}: {}", stderr(&o));
        let out = stdout(&o);
        let (rows, (total, distinct)) = parse_table(&out);
        let kernel = kernel_stacks(&std::fs::read_to_string(d.join("trace")).unwrap());
        let nk: u64 = kernel.values().sum();
        assert_eq!(total, nk, "{arch}: stacks");
        assert_eq!(rows.iter().map(|r| r.0).sum::<u64>(), total);
        assert_eq!(distinct, rows.len());
        assert!(rows.windows(2).all(|w| w[0].0 >= w[1].0), "{arch}: not most frequent first");
        assert!(rows.iter().all(|r| r.1 == "sched:sched_switch"));
        let ours: BTreeMap<Vec<String>, u64> = rows.iter().map(|r| (r.2.clone(), r.0)).collect();
        // x86_64: the kernel's stacks show an ftrace trampoline the cut-down
        // kallsyms cannot place (tests/core/decode_fixtures.rs): compare counts only.
        if arch != "x86_64" {
            assert_eq!(ours, kernel, "{arch}");
        } else {
            assert_eq!(ours.len(), kernel.len(), "{arch}");
        }
        // The ARM unwinder stops early (shallow stacks, tests/fixtures/README).
        let deep = arch != "armv7";
        assert!(!deep || rows.iter().all(|r| r.2.iter().any(|f| f == "__schedule")), "{arch}");
        let f = stdout(&stack(&["-T", d.to_str().unwrap(), "-e", "sched_switch", "--folded"]));
        let mut sum = 0;
        for l in f.lines() {
            let (path, n) = l.rsplit_once(' ').unwrap();
            assert!(path.ends_with(";sched:sched_switch") && (!deep || path.contains(";__schedule;")), "{l}");
            sum += n.parse::<u64>().unwrap();
        }
        assert_eq!(sum, total, "{arch}: folded total");
        // An event that has no stacks in the data.
        let o = stack(&["-T", d.to_str().unwrap(), "-e", "sched:sched_wakeup"]);
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains("no kernel stacks"), "{}", stderr(&o));
    }
}

/// func_stack_trace records (function_stack): the callers of
/// do_sys_openat2, counted.
#[test]
fn function_callers_from_func_stack_trace() {
    for arch in ["aarch64", "armv7", "x86_64"] {
        let d = fixture(arch, "function_stack");
        let o = stack(&["-T", d.to_str().unwrap(), "--func", "do_sys_openat2"]);
        assert!(o.status.success(), "{arch}: {}", stderr(&o));
        let (rows, (total, _)) = parse_table(&stdout(&o));
        let kernel = kernel_stacks(&std::fs::read_to_string(d.join("trace")).unwrap());
        assert_eq!(total, kernel.values().sum::<u64>(), "{arch}");
        assert_eq!(total, 10, "{arch}");
        assert!(rows.iter().all(|r| r.1 == "do_sys_openat2"), "{arch}");
        if arch == "aarch64" {
            assert_eq!(rows.len(), 1);
            assert_eq!(rows[0].2[..2], ["do_sys_openat2".to_string(), "__arm64_sys_openat".to_string()]);
        }
    }
}

/// No stack tracer, and dynamic ftrace refused (--func): one-line reasons,
/// exit 2, nothing changed. The stack tracer's absence on any kernel:
/// trbox shown /proc/sys/kernel without stack_tracer_enabled (an empty
/// directory over it, in a mount namespace of its own), and this one where
/// it really lacks it. The refusal where this kernel refuses.
#[test]
fn what_this_kernel_lacks_is_named() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let empty = TempDir::new("no-sysctl");
    for args in [&["-t", "1"][..], &["--reset", "--limit", "vfs_*", "-t", "1"]] {
        let argv: Vec<&str> = ["tr-stack"].iter().chain(args).copied().collect();
        let Some(o) = with_mounts_over(&[(empty.path(), Path::new("/proc/sys/kernel"))], &argv) else { return };
        let mut runs = vec![o];
        if !Path::new("/proc/sys/kernel/stack_tracer_enabled").exists() {
            runs.push(stack(args));
        }
        for o in runs {
            assert_eq!(o.status.code(), Some(2));
            let e = stderr(&o);
            assert!(e.starts_with("tr-stack: this kernel has no stack tracer (CONFIG_STACK_TRACER"), "{e}");
            assert_eq!(e.lines().filter(|l| !l.starts_with("tr-stack: hint:")).count(), 1, "{e}");
        }
    }
    let refused = std::fs::OpenOptions::new()
        .write(true)
        .open(root.join("set_ftrace_filter"))
        .is_err_and(|e| e.raw_os_error() == Some(libc::EPERM));
    if refused {
        let o = stack(&["--func", "do_sys_openat2", "-t", "1"]);
        assert_eq!(o.status.code(), Some(2));
        let e = stderr(&o);
        assert!(
            e.starts_with(
                "tr-stack: the kernel refuses dynamic ftrace (writing set_ftrace_filter: operation not permitted)"
            ),
            "{e}"
        );
    }
    assert_same_state(&before, &snapshot(&root));
}

/// `tr-stack -e sched:sched_switch -t 2` here: aggregated, symbolized
/// stacks, counts summing to the stacks seen, state restored.
#[test]
fn sched_switch_stacks_live() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let t0 = std::time::Instant::now();
    let o = stack(&["-e", "sched:sched_switch", "-t", "2", "--wait"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The run ends at its window, not at some later event; the bound is
    // generous, for a loaded board under TCG (20 s seen on one).
    assert!(t0.elapsed().as_secs_f64() < 60.0, "{:?} for a 2 s window", t0.elapsed());
    let (rows, (total, distinct)) = parse_table(&stdout(&o));
    assert!(total > 0 && distinct == rows.len() && distinct > 0);
    assert_eq!(rows.iter().map(|r| r.0).sum::<u64>(), total);
    assert!(rows.windows(2).all(|w| w[0].0 >= w[1].0));
    for r in &rows {
        assert_eq!(r.1, "sched:sched_switch");
        assert!(!r.2.is_empty());
        // Symbolized: the kernel's own functions by name.
        assert!(r.2.iter().any(|f| f == "__schedule"), "{r:?}");
    }
    let frames: Vec<&String> = rows.iter().flat_map(|r| &r.2).collect();
    assert!(frames.iter().filter(|f| f.starts_with("0x")).count() * 10 < frames.len(), "{frames:?}");
    // Distinct means distinct.
    let keys: std::collections::BTreeSet<&Vec<String>> = rows.iter().map(|r| &r.2).collect();
    assert_eq!(keys.len(), rows.len());
    assert_same_state(&before, &snapshot(&root));

    // Folded, with a filter and a command (the kernel keeps one stacktrace
    // trigger per event: not while another run's is there).
    if std::fs::read_to_string(root.join("events/sched/sched_switch/trigger"))
        .unwrap()
        .lines()
        .any(|l| l.starts_with("stacktrace"))
    {
        common::skip("sched_switch has a stacktrace trigger already");
        return;
    }
    let o = stack(&[
        "-e",
        "sched:sched_switch",
        "-f",
        "prev_pid > 0",
        "--folded",
        "--wait",
        "--",
        "sh",
        "-c",
        "sleep 0.2; exit 4",
    ]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.lines().count() > 0
            && out.lines().all(|l| l.contains(";__schedule;") && l.rsplit_once(' ').unwrap().1.parse::<u64>().is_ok()),
        "{out}"
    );
    assert_same_state(&before, &snapshot(&root));
}

/// The order of a run's tracefs writes, as strace sees them (the same
/// command::stream / Window path as tr-graph's, which this machine cannot
/// run): tracing idle before the set-up, then one traced window — switched
/// on after every setting and off by the stop (-t, Ctrl-C, the command's
/// end) before anything else — then the buffer read out of the closed
/// window, then the restore.
#[test]
fn set_up_idle_one_window_closed_before_the_read_out() {
    let Some((_l, root, before)) = live_with_snapshot() else { return };
    // Idling comes first where tracing is on (otherwise nothing is written
    // before the set-up): on for this test, put back after.
    let mut g = Guard::new(&root);
    assert!(g.set("tracing_on", "1"));
    let on = snapshot(&root);
    let r = root.to_str().unwrap();
    let ev = ["tr-stack", "-e", "sched:sched_switch"];
    let runs: [(&str, &[&str], Vec<&str>); 3] = [
        ("-t", &[], [&ev[..], &["-t", "0.5"]].concat()),
        ("SIGINT", &["timeout", "-s", "INT", "2"], ev.to_vec()),
        ("-- CMD", &[], [&ev[..], &["--", "sleep", "0.3"]].concat()),
    ];
    for (name, prefix, args) in runs {
        let Some((o, io)) = common::strace::run_io(prefix, &args, &[r]) else { return };
        assert!(stdout(&o).contains("stacks, "), "{name}: {}", stderr(&o));
        let rel = |p: &str| p.strip_prefix(r).unwrap_or(p).trim_start_matches('/').to_string();
        let writes: Vec<(usize, String, &str)> =
            io.iter().enumerate().filter(|(_, x)| x.write).map(|(i, x)| (i, rel(&x.path), x.data.as_str())).collect();
        let is = |w: &(usize, String, &str), f: &str, v: &str| w.1 == f && w.2 == format!("{v}\\n");
        let seq = || writes.iter().map(|w| format!("{} {}", w.1, w.2)).collect::<Vec<_>>().join("\n");
        assert!(is(&writes[0], "tracing_on", "0"), "{name}: not idle first:\n{}", seq());
        let open = writes
            .iter()
            .position(|w| is(w, "tracing_on", "1"))
            .unwrap_or_else(|| panic!("{name}: no window:\n{}", seq()));
        assert!(
            writes[1..open].iter().any(|w| w.1.ends_with("/trigger")),
            "{name}: set-up not before the window:\n{}",
            seq()
        );
        assert!(writes[1..open].iter().all(|w| w.1 != "tracing_on"), "{name}:\n{}", seq());
        let close = &writes[open + 1];
        assert!(is(close, "tracing_on", "0"), "{name}: the stop did not close the window first:\n{}", seq());
        let read_out = io
            .iter()
            .enumerate()
            .filter(|(_, x)| !x.write && x.path.ends_with("/trace_pipe_raw"))
            .map(|(i, _)| i)
            .max();
        assert!(read_out.is_some_and(|i| i > close.0), "{name}: no read-out after the window closed");
        let last = writes.len() - 1;
        assert!(writes[open + 2..last].iter().all(|w| !is(w, "tracing_on", "1")), "{name}: opened again:\n{}", seq());
        assert!(is(&writes[last], "tracing_on", "1"), "{name}: tracing_on not restored last:\n{}", seq());
        assert_same_state(&on, &snapshot(&root));
    }
    drop(g);
    assert_same_state(&before, &snapshot(&root));
}

/// A long -t on a terminal (issue 29): while the window is open, one line on
/// stderr with the seconds left, drawn in place and cleared before the
/// table (stdout is the same terminal); none with stderr a pipe.
#[test]
fn progress_of_a_window_on_a_tty_only() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    // The line is drawn once the buffer is being read, which may take
    // seconds to set up on a slow board: a window longer than that. It is
    // redrawn as the reader goes through records: switches of a task
    // other than trbox's (an idle one-CPU board has two in 4 s).
    let _load = spawn(
        std::process::Command::new("sh")
            .args(["-c", "while :; do sleep 0.02; done"])
            .stdout(std::process::Stdio::null()),
    );
    let (status, text) = on_pty(&["tr-stack", "-e", "sched:sched_switch", "-t", "4"], "xterm", true);
    assert!(status.success(), "{text}");
    let (lines, after) = progress_lines(&text).unwrap_or_else(|| panic!("no progress line: {text:?}"));
    // At most four redraws a second.
    assert!((1..=17).contains(&lines.len()), "{} redraws in 4 s: {lines:?}", lines.len());
    for l in &lines {
        assert!((1..=4).any(|s| *l == format!("tr-stack: tracing, {s} s left")), "{l:?}");
    }
    assert!(after.contains("sched:sched_switch\r\n"), "the table after it: {after:?}");
    let o = stack(&["-e", "sched:sched_switch", "-t", "1"]);
    assert!(o.status.success() && !stderr(&o).contains(" s left"), "{}", stderr(&o));
    assert_same_state(&before, &snapshot(&root));
}

/// `-k` leaves the stacktrace trigger and the event on; a recording of
/// that (tr-cat -o) read with `-i FILE` gives the stacks behind the event;
/// then everything is put back by hand.
#[test]
fn keep_then_read_the_recording() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let dir = root.join("events/sched/sched_process_exec");
    let rd = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    if trbox::ctl::triggers(&rd("trigger")).next().is_some() || rd("enable").trim() != "0" {
        common::skip("sched_process_exec is in use already");
        return;
    }
    let o = stack(&["-e", "sched:sched_process_exec", "-k", "--", "true"]);
    // (A trigger puts its event in soft mode: `1*`.)
    let on = trbox::ctl::writable_value(&rd("enable")).to_string();
    let kept = (on, trbox::ctl::triggers(&rd("trigger")).map(String::from).collect::<Vec<_>>());
    let d = TempDir::new("stack-keep");
    let f = d.path().join("t.dat");
    let rec = run(&["tr-cat", "-o", f.to_str().unwrap(), "--", "true"]);
    let _ = std::fs::write(dir.join("trigger"), "!stacktrace");
    let _ = std::fs::write(dir.join("enable"), "0");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(kept, ("1".to_string(), vec!["stacktrace:unlimited".to_string()]));
    assert_eq!(rec.status.code(), Some(0), "{}", stderr(&rec));
    let o = stack(&["-i", f.to_str().unwrap(), "-e", "sched:sched_process_exec"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (rows, (total, _)) = parse_table(&stdout(&o));
    assert!(total > 0 && rows.iter().all(|r| r.1 == "sched:sched_process_exec"), "{}", stdout(&o));
    assert_same_state(&before, &snapshot(&root));
}

/// `--limit GLOB` fills stack_trace_filter for the run (the stack tracer's
/// functions), where the kernel has the stack tracer.
#[test]
fn limit_sets_stack_trace_filter() {
    let Some(root) = live_tracefs() else { return };
    if !root.join("stack_trace_filter").exists() {
        common::skip_absent("no stack tracer here (what_this_kernel_lacks_is_named checks the message)");
        return;
    }
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let f = root.join("stack_trace_filter");
    // The stack tracer takes no command: the filter is read while it runs.
    let mut r =
        spawn(cmd(&trbox(), &["tr-stack", "--limit", "vfs_read", "-t", "3"]).stdout(std::process::Stdio::null()));
    let t0 = std::time::Instant::now();
    let mut seen = String::new();
    while t0.elapsed() < std::time::Duration::from_secs(30) && r.try_wait().unwrap().is_none() {
        seen = std::fs::read_to_string(&f).unwrap_or_default();
        if seen.lines().any(|l| l == "vfs_read") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(r.wait().unwrap().success());
    assert!(seen.lines().any(|l| l == "vfs_read"), "{seen}");
    assert_same_state(&before, &snapshot(&root));
}
