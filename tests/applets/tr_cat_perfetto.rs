//! `tr-cat FILE -o OUT.pftrace`: every trace.dat of tests/data/tracedat
//! and every board's fixture tree (`--raw -T DIR`) converted to Perfetto's protobuf format parses with
//! Perfetto's own schema (the `perfetto` wheel, through
//! tests/applets/perfetto_check.py) with no unknown field, and holds the events
//! `tr-cat FILE --json` shows: the same (timestamp, CPU, pid, event) for
//! every event and the same sched_switch fields.

use crate::common;
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

fn text<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(&format!("\"{key}\":\""))? + key.len() + 4;
    line[at..].split('"').next()
}

/// tr-cat's view (`args` then `--json`): `E ts cpu pid event` and `S ts
/// prev next state` lines, sorted; and `G ts depth` of funcgraph events.
fn trbox_view(args: &[&str]) -> (Vec<String>, Vec<String>) {
    let mut a = vec!["tr-cat"];
    a.extend_from_slice(args);
    a.push("--json");
    let o = run(&a);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut v = Vec::new();
    let mut g = Vec::new();
    for l in stdout(&o).lines().filter(|l| l.contains("\"ts_ns\"")) {
        let ts = num(l, "ts_ns").unwrap();
        let event = text(l, "event").unwrap();
        let name = event.split(':').nth(1).unwrap_or(event);
        if name.starts_with("funcgraph_") {
            g.push(format!("G {ts} {}", num(l, "depth").unwrap()));
        }
        v.push(format!("E {ts} {} {} {name}", num(l, "cpu").unwrap(), num(l, "pid").unwrap()));
        if name == "sched_switch" {
            let f = |k| num(l, k).map_or("?".to_string(), |n| n.to_string());
            v.push(format!("S {ts} {} {} {}", f("prev_pid"), f("next_pid"), f("prev_state")));
        }
    }
    v.sort();
    g.sort();
    (v, g)
}

/// The schema's view, in the same form (comms dropped from S lines), and
/// the other lines (G with names, T, U).
fn perfetto_view(pf: &Path) -> (Vec<String>, Vec<String>) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/applets/perfetto_check.py");
    let o = Command::new("python3").arg(script).arg(pf).output().unwrap();
    assert!(o.status.success(), "{}: {}", pf.display(), String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut ev = Vec::new();
    let mut rest = Vec::new();
    for l in out.lines() {
        if l.starts_with("E ") {
            ev.push(l.to_string());
        } else if l.starts_with("S ") {
            ev.push(l.split(' ').take(5).collect::<Vec<_>>().join(" "));
        } else {
            rest.push(l.to_string());
        }
    }
    ev.sort();
    (ev, rest)
}

fn convert(args: &[&str], out: &Path) {
    let mut a = vec!["tr-cat"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["-o", out.to_str().unwrap()]);
    let o = run(&a);
    let err = stderr(&o);
    assert!(o.status.success() && !err.contains("panicked"), "{args:?}: {err}");
}

/// Convert, parse with the schema, compare with `tr-cat --json`; the
/// funcgraph names must be the ones tr-cat's text shows.
fn check(args: &[&str], out: &Path) -> usize {
    convert(args, out);
    let (got, rest) = perfetto_view(out);
    let (want, graph) = trbox_view(args);
    assert_eq!(got.len(), want.len(), "{args:?}: events");
    assert!(got == want, "{args:?}: first difference: {:?}", got.iter().zip(&want).find(|(a, b)| a != b));
    let mut g: Vec<String> = rest
        .iter()
        .filter(|l| l.starts_with("G "))
        .map(|l| l.split(' ').take(3).collect::<Vec<_>>().join(" "))
        .collect();
    g.sort();
    assert_eq!(g, graph, "{args:?}: funcgraph timestamps and depths");
    if !graph.is_empty() {
        let mut a = vec!["tr-cat"];
        a.extend_from_slice(args);
        let text = stdout(&run(&a));
        for l in rest.iter().filter(|l| l.starts_with("G ")) {
            let name = l.split(' ').nth(3).unwrap();
            assert!(text.contains(name), "{args:?}: {name} is not in tr-cat's graph");
        }
    }
    if !want.is_empty() {
        assert!(rest.iter().any(|l| l.starts_with("T ")), "{args:?}: thread names");
    }
    want.len()
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
    let mut checked = 0;
    for f in &files {
        check(&[f.to_str().unwrap()], &dir.path().join("f.pftrace"));
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} files converted");
}

#[test]
fn every_board_fixture_converts_and_parses_with_the_official_schema() {
    if checker().is_none() {
        return;
    }
    let dir = TempDir::new("perfetto-fx");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let mut trees = 0;
    let mut graphs = 0;
    for board in std::fs::read_dir(root).unwrap().flatten().filter(|e| e.path().is_dir()) {
        for t in std::fs::read_dir(board.path()).unwrap().flatten().filter(|e| e.path().join("per_cpu").is_dir()) {
            let p = t.path();
            let n = check(&["--raw", "-T", p.to_str().unwrap()], &dir.path().join("t.pftrace"));
            trees += 1;
            if p.ends_with("function_graph") && n > 0 {
                graphs += 1;
            }
        }
    }
    assert!(trees >= 10 && graphs >= 2, "{trees} trees, {graphs} function_graph trees");
}
