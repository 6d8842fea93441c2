//! `tr-cat FILE -o OUT.pftrace`: every trace.dat of tests/data/tracedat
//! (and a stream) converted to Perfetto's protobuf format parses with
//! Perfetto's own schema (the `perfetto` wheel, through
//! tests/perfetto_check.py) with no unknown field, and holds the events
//! `tr-cat FILE --json` shows: the same (timestamp, CPU, pid, event) for
//! every event and the same sched_switch fields.

mod common;
use common::*;
use std::path::Path;
use std::process::Command;

fn checker() -> Option<()> {
    let ok = Command::new("python3").args(["-c", "import perfetto.protos.perfetto.trace.perfetto_trace_pb2"]).output().is_ok_and(|o| o.status.success());
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

/// tr-cat's view: `E ts cpu pid event` and `S ts prev next state` lines,
/// sorted.
fn trbox_view(f: &Path) -> Vec<String> {
    let o = run(&["tr-cat", f.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut v = Vec::new();
    for l in stdout(&o).lines().filter(|l| l.contains("\"ts_ns\"")) {
        let ts = num(l, "ts_ns").unwrap();
        let event = text(l, "event").unwrap();
        let name = event.split(':').nth(1).unwrap_or(event);
        v.push(format!("E {ts} {} {} {name}", num(l, "cpu").unwrap(), num(l, "pid").unwrap()));
        if name == "sched_switch" {
            let f = |k| num(l, k).map_or("?".to_string(), |n| n.to_string());
            v.push(format!("S {ts} {} {} {}", f("prev_pid"), f("next_pid"), f("prev_state")));
        }
    }
    v.sort();
    v
}

/// The schema's view, in the same form (comms dropped from S lines).
fn perfetto_view(pf: &Path) -> (Vec<String>, Vec<String>) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/perfetto_check.py");
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

fn convert(f: &Path, dir: &Path) -> std::path::PathBuf {
    let out = dir.join(format!("{}.pftrace", f.file_stem().unwrap().to_string_lossy()));
    let o = run(&["tr-cat", f.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(o.status.success() && !err.contains("panicked"), "{}: {err}", f.display());
    out
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
        let pf = convert(f, dir.path());
        let (got, rest) = perfetto_view(&pf);
        let want = trbox_view(f);
        assert_eq!(got.len(), want.len(), "{}: events", f.display());
        assert!(got == want, "{}: first difference: {:?}", f.display(), got.iter().zip(&want).find(|(a, b)| a != b));
        if !want.is_empty() {
            assert!(rest.iter().any(|l| l.starts_with("T ")), "{}: thread names", f.display());
        }
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} files converted");
}
