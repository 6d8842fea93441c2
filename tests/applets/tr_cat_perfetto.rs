//! `tr-cat FILE -o OUT.pftrace`: every trace.dat of tests/data/tracedat
//! and every board's fixture tree (`--raw -T DIR`) converted to Perfetto's protobuf format parses with
//! Perfetto's own schema (the `perfetto` wheel, through
//! tests/applets/perfetto_check.py) with no unknown field, and holds the events
//! `tr-cat FILE --json` shows: the same (timestamp, CPU, pid, event) for
//! every event and the same sched_switch fields, converted on one thread
//! and by time slices.

use super::common;
use common::*;
use std::path::Path;
use std::process::Command;

fn checker() -> Option<()> {
    let ok = Command::new("python3")
        .args(["-c", "import perfetto.protos.perfetto.trace.perfetto_trace_pb2"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip("Perfetto checks: python3 with the perfetto and protobuf wheels is missing (make setup installs them)");
        return None;
    }
    Some(())
}

fn num(line: &str, key: &str) -> Option<u64> {
    let at = line.find(&format!("\"{key}\":"))? + key.len() + 3;
    let digits: String = line[at..].chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// A signed number (a deadline task's prio is -1).
fn snum(line: &str, key: &str) -> Option<i64> {
    let at = line.find(&format!("\"{key}\":"))? + key.len() + 3;
    let rest = &line[at..];
    let neg = rest.starts_with('-');
    let digits: String = rest[usize::from(neg)..].chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse::<i64>().ok().map(|n| if neg { -n } else { n })
}

fn text<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(&format!("\"{key}\":\""))? + key.len() + 4;
    line[at..].split('"').next()
}

/// tr-cat's view (`args` then `--json`): `E ts cpu pid event`, `S ts
/// prev_pid next_pid prev_state next_prio next_comm` (sched_switch) and
/// `W ts pid target_cpu prio comm` (sched_waking) lines, sorted; `G ts depth` of funcgraph events; and
/// `T pid comm` of the tasks whose name the trace knows (not `<...>`).
fn trbox_view(args: &[&str]) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut a = vec!["tr-cat"];
    a.extend_from_slice(args);
    a.push("--json");
    let o = run(&a);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut v = Vec::new();
    let mut g = Vec::new();
    let mut t = Vec::new();
    for l in stdout(&o).lines().filter(|l| l.contains("\"ts_ns\"")) {
        let ts = num(l, "ts_ns").unwrap();
        let pid = num(l, "pid").unwrap();
        match text(l, "comm") {
            Some(c) if pid != 0 && c != "<...>" => t.push(format!("T {pid} {c}")),
            _ => {}
        }
        let event = text(l, "event").unwrap();
        let name = event.split(':').nth(1).unwrap_or(event);
        if name.starts_with("funcgraph_") {
            g.push(format!("G {ts} {}", num(l, "depth").unwrap()));
        }
        v.push(format!("E {ts} {} {} {name}", num(l, "cpu").unwrap(), num(l, "pid").unwrap()));
        // The event's own fields (after the common ones, whose names
        // they may repeat: sched_waking's pid).
        let fl = l.split_once("\"fields\":").map_or("", |x| x.1);
        let f = |k| snum(fl, k).map_or("?".to_string(), |n| n.to_string());
        let t = |k| text(fl, k).unwrap_or("?");
        if name == "sched_switch" {
            let (p, n, s, r, c) = (f("prev_pid"), f("next_pid"), f("prev_state"), f("next_prio"), t("next_comm"));
            v.push(format!("S {ts} {p} {n} {s} {r} {c}"));
        }
        if name == "sched_waking" {
            v.push(format!("W {ts} {} {} {} {}", f("pid"), f("target_cpu"), f("prio"), t("comm")));
        }
    }
    v.sort();
    g.sort();
    t.sort();
    t.dedup();
    (v, g, t)
}

/// The schema's view, in the same form (E, S, W lines), and the other
/// lines (G with names, T, U, K: the events in compact_sched form).
fn perfetto_view(pf: &Path) -> (Vec<String>, Vec<String>) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/applets/perfetto_check.py");
    let o = Command::new("python3").arg(script).arg(pf).output().unwrap();
    assert!(o.status.success(), "{}: {}", pf.display(), String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut ev = Vec::new();
    let mut rest = Vec::new();
    for l in out.lines() {
        if l.starts_with("E ") || l.starts_with("S ") || l.starts_with("W ") {
            ev.push(l.to_string());
        } else {
            rest.push(l.to_string());
        }
    }
    ev.sort();
    (ev, rest)
}

/// Convert with `-j JOBS`, slices of about `slice` records (`None`: as the
/// reader chooses); how many time slices it read by (0: none).
fn convert(args: &[&str], jobs: &str, slice: Option<&str>, out: &Path) -> usize {
    let mut c = cmd(&trbox(), &[&["tr-cat", "-j", jobs], args, &["-o", out.to_str().unwrap()]].concat());
    c.env("RUST_LOG", "trbox::sys::read::slices=debug");
    if let Some(n) = slice {
        c.env("TRBOX_SLICE_RECORDS", n);
    }
    let o = c.output().expect("run trbox");
    let err = stderr(&o);
    assert!(o.status.success() && !err.contains("panicked"), "{args:?} -j {jobs}: {err}");
    err.lines().find_map(|l| l.strip_prefix("DEBUG: time slices: ")?.split(' ').next()?.parse().ok()).unwrap_or(0)
}

/// Convert, parse with the schema, compare with `tr-cat --json`; the
/// funcgraph names must be the ones tr-cat's text shows. Twice: with one
/// thread, and by time slices cut at nearly every page (three workers,
/// each slice its own packets and interned names; a slice's first switch
/// on a CPU is written whole). Returns the events, those of them in
/// compact_sched form (one thread), and how many slices the sliced
/// conversion had.
fn check(args: &[&str], out: &Path) -> (usize, usize, usize) {
    let (want, graph, names) = trbox_view(args);
    let (mut compact, mut slices) = (0, 0);
    for (jobs, slice) in [("1", None), ("3", Some("1"))] {
        let n = convert(args, jobs, slice, out);
        let (got, rest) = perfetto_view(out);
        assert_eq!(got.len(), want.len(), "{args:?} -j {jobs}: events");
        assert!(got == want, "{args:?} -j {jobs}: first difference: {:?}", got.iter().zip(&want).find(|(a, b)| a != b));
        let mut g: Vec<String> = rest
            .iter()
            .filter(|l| l.starts_with("G "))
            .map(|l| l.split(' ').take(3).collect::<Vec<_>>().join(" "))
            .collect();
        g.sort();
        assert_eq!(g, graph, "{args:?} -j {jobs}: funcgraph timestamps and depths");
        if !graph.is_empty() {
            let mut a = vec!["tr-cat"];
            a.extend_from_slice(args);
            let text = stdout(&run(&a));
            for l in rest.iter().filter(|l| l.starts_with("G ")) {
                let name = l.split(' ').nth(3).unwrap();
                assert!(text.contains(name), "{args:?} -j {jobs}: {name} is not in tr-cat's graph");
            }
        }
        // A trace without saved cmdlines (the kernel printed `<...>` too) has
        // no names to give; every name the text shows must be in the tree.
        for n in &names {
            assert!(rest.contains(n), "{args:?} -j {jobs}: {n} is not in the process tree");
        }
        let k = rest.iter().find_map(|l| l.strip_prefix("K ")).expect("the K line");
        if jobs == "1" {
            compact = k.split(' ').map(|n| n.parse::<usize>().unwrap()).sum();
        } else {
            slices = n;
        }
    }
    (want.len(), compact, slices)
}

#[test]
fn every_trace_dat_converts_and_parses_with_the_official_schema() {
    if checker().is_none() {
        return;
    }
    let dir = TempDir::new("perfetto");
    let mut files: Vec<_> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tracedat"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "dat"))
        .collect();
    files.sort();
    let (mut checked, mut compact, mut sliced) = (0, 0, 0);
    for f in &files {
        let (_, c, slices) = check(&[f.to_str().unwrap()], &dir.path().join("f.pftrace"));
        compact += c;
        sliced += usize::from(slices > 1);
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} files converted");
    assert!(sliced >= 5, "only {sliced} files converted by several time slices");
    // The sched_switch/sched_waking columns are used, and read back as
    // the text's events (checked above).
    assert!(compact > 1000, "only {compact} events in compact_sched form");
}

#[test]
fn every_board_fixture_converts_and_parses_with_the_official_schema() {
    if checker().is_none() {
        return;
    }
    let dir = TempDir::new("perfetto-fx");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let (mut trees, mut graphs, mut compact, mut sliced) = (0, 0, 0, 0);
    for board in std::fs::read_dir(root).unwrap().flatten().filter(|e| e.path().is_dir()) {
        let before = trees;
        for t in std::fs::read_dir(board.path()).unwrap().flatten().filter(|e| e.path().join("per_cpu").is_dir()) {
            let p = t.path();
            let (n, c, slices) = check(&["--raw", "-T", p.to_str().unwrap()], &dir.path().join("t.pftrace"));
            compact += c;
            sliced += usize::from(slices > 1);
            trees += 1;
            if p.ends_with("function_graph") && n > 0 {
                graphs += 1;
            }
        }
        // Every board's fixtures, not only some.
        assert!(trees > before, "{}: no fixture tree converted", board.path().display());
    }
    assert!(trees >= 10 && graphs >= 2, "{trees} trees, {graphs} function_graph trees");
    assert!(sliced >= 10, "only {sliced} trees converted by several time slices");
    assert!(compact > 0, "no event in compact_sched form");
}

/// Perfetto's text importer on `tr-cat` text (tests/applets/systrace_check.py
/// applies its sniff and its line pattern): it recognises the text, takes
/// from each board fixture's tr-cat text the same lines as from the
/// kernel's own `trace` file, and every tracepoint event's line with its
/// time, CPU, pid and name. (The function and syscall tracers' own
/// layouts, `f <-parent` and `sys_x -> 0x0`, are the kernel's and not
/// the importer's: it skips those lines in both.)
#[test]
fn text_output_suits_perfettos_text_importer() {
    if checker().is_none() {
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/applets/systrace_check.py");
    let view = |text: &Path| {
        let o = Command::new("python3").arg(script).arg(text).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let dir = TempDir::new("systrace");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let mut checked = 0;
    let mut all_read = 0;
    for board in std::fs::read_dir(root).unwrap().flatten().filter(|e| e.path().is_dir()) {
        for t in std::fs::read_dir(board.path()).unwrap().flatten().filter(|e| e.path().join("per_cpu").is_dir()) {
            let p = t.path();
            let tree = p.to_str().unwrap();
            let o = run(&["tr-cat", "--raw", "-T", tree]);
            assert!(o.status.success(), "{tree}: {}", stderr(&o));
            let txt = dir.path().join("t.txt");
            std::fs::write(&txt, &o.stdout).unwrap();
            let ours = view(&txt);
            if stdout(&o).trim().is_empty() {
                continue;
            }
            assert!(ours.starts_with("SNIFF ok"), "{tree}: the importer does not take tr-cat's text");
            let lines: Vec<&str> = ours.lines().filter(|l| l.starts_with("E ")).collect();
            // The kernel's own text of the same buffer, as the importer reads it.
            if p.join("trace").is_file() {
                let kernel = view(&p.join("trace"));
                let theirs: Vec<&str> = kernel.lines().filter(|l| l.starts_with("E ")).collect();
                assert!(lines == theirs, "{tree}: tr-cat's text and the kernel's read differently by the importer");
            }
            // Every tracepoint's line (not the ftrace entries', nor the
            // syscall tracer's): its time (µs), CPU, pid and name.
            let mut got = lines.clone();
            got.sort_unstable();
            let json = run(&["tr-cat", "--raw", "-T", tree, "--json"]);
            let mut missed = Vec::new();
            for l in stdout(&json).lines().filter(|l| l.contains("\"ts_ns\"")) {
                let event = text(l, "event").unwrap();
                let (system, name) = event.split_once(':').unwrap_or(("", event));
                if system == "ftrace" || system == "syscalls" {
                    continue;
                }
                let line = format!(
                    "E {} {} {} {name}",
                    // Rounded to µs, as the kernel's text prints it.
                    (num(l, "ts_ns").unwrap() + 500) / 1000,
                    num(l, "cpu").unwrap(),
                    num(l, "pid").unwrap()
                );
                if got.binary_search(&line.as_str()).is_err() {
                    missed.push(line);
                }
            }
            // PREEMPT_RT kernels print 7 flag characters (d......), wider
            // than the importer's pattern: it then skips the kernel's own
            // lines as it skips tr-cat's (the same, checked above).
            assert!(
                missed.is_empty() || (p.join("trace").is_file() && board.file_name().to_string_lossy().contains("-rt")),
                "{tree}: the importer does not read {} events, first {}",
                missed.len(),
                missed[0]
            );
            all_read += usize::from(missed.is_empty());
            checked += 1;
        }
    }
    assert!(checked >= 10 && all_read >= 10, "{checked} fixture trees, {all_read} with every event read");
}

/// Converting on a terminal (issue 29): a line on stderr with the MiB
/// written so far, drawn in place and cleared before the result's line; none
/// when stderr is a pipe.
#[test]
fn conversion_progress_on_a_tty_only() {
    let dir = TempDir::new("perfetto-progress");
    let out = dir.path().join("p.pftrace");
    let f = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tracedat/lisa-arm64-sched-load.dat");
    let args = ["tr-cat", f, "-o", out.to_str().unwrap()];
    let (status, text) = on_pty(&args, "xterm", false);
    assert!(status.success(), "{text}");
    let (lines, after) = progress_lines(&text).unwrap_or_else(|| panic!("no progress line: {text:?}"));
    for l in &lines {
        let w: Vec<&str> = l.split_whitespace().collect();
        assert_eq!((w.len(), w[0], w[2], w[3], w[5], w[6]), (8, "tr-cat:", "MiB", "written,", "s", "so"), "{l}");
    }
    assert!(after.starts_with("tr-cat: ") && after.contains("(Perfetto trace)"), "{after:?}");
    let o = run(&args[..]);
    assert!(o.status.success() && !stderr(&o).contains(['\r', '\x1b']), "{:?}", stderr(&o));
}
