//! `tr-cat FILE` against `trace-cmd report -N` on files trace-cmd wrote
//! (tests/data/tracedat: v6, v7 uncompressed, v7 zstd, v7 zlib, each with an
//! extra buffer `inst1`): the same events, with the same bodies.

mod common;
use common::*;
use std::process::Command;

/// (pid, cpu, timestamp, event, body with whitespace collapsed).
fn key(line: &str, ours: bool) -> Option<(String, String, String, String, String)> {
    let open = line.find(" [")?;
    let close = open + line[open..].find("] ")?;
    let pid = line[..open].trim().rsplit('-').next()?.to_string();
    let cpu = line[open + 2..close].to_string();
    let mut rest = line[close + 2..].trim_start();
    if ours {
        rest = rest.split_once(' ')?.1.trim_start(); // latency flags
    }
    let (ts, rest) = rest.split_once(": ")?;
    let (ev, body) = rest.split_once(": ").unwrap_or((rest, ""));
    let body = body.split_whitespace().collect::<Vec<_>>().join(" ");
    Some((pid, cpu, ts.trim().to_string(), ev.trim().to_string(), body))
}

/// `trace-cmd report -N` of a fixture. Debian's trace-cmd has no zlib, so for
/// the zlib file it falls back to the report stored next to it (made by a
/// zlib-capable build of the same trace-cmd, see make.sh).
fn report(path: &str, zlib: bool) -> String {
    let live_zlib = || {
        let o = Command::new("trace-cmd").args(["list", "-c"]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).split_whitespace().any(|w| w.trim_end_matches(',') == "zlib")
    };
    if zlib && !live_zlib() {
        let stored = path.replace(".dat", ".report");
        eprintln!("{path}: system trace-cmd has no zlib, comparing with {stored}");
        return std::fs::read_to_string(&stored).unwrap();
    }
    let rep = Command::new("trace-cmd").args(["report", "-N", path]).output().unwrap();
    assert!(rep.status.success(), "trace-cmd report {path}");
    String::from_utf8_lossy(&rep.stdout).into_owned()
}

#[test]
fn trace_cmd_files_read_like_trace_cmd_report() {
    if Command::new("trace-cmd").arg("--help").output().is_err() {
        common::skip("trace-cmd is not installed (bash cross/setup.sh installs it)");
        return;
    }
    let mut total = 0;
    let mut same = 0;
    let mut bad = Vec::new();
    for f in ["v6-inst", "v7-none-inst", "v7-zstd-inst", "v7-zlib-inst"] {
        let path = format!("tests/data/tracedat/{f}.dat");
        let rep = report(&path, f.contains("zlib"));
        let (mut file_total, mut file_same) = (0, 0);
        for buf in ["", "inst1"] {
            let theirs: Vec<_> = rep
                .lines()
                .filter(|l| l.contains(" [") && l.contains("]  "))
                .filter_map(|l| match l.split_once(": ") {
                    Some((p, rest)) if !p.contains(' ') && !p.contains('[') => (p == buf).then_some(rest),
                    _ => buf.is_empty().then_some(l),
                })
                .filter_map(|l| key(l, false))
                .collect();
            let mut args = vec!["tr-cat", path.as_str()];
            if !buf.is_empty() {
                args.extend(["-B", buf]);
            }
            let o = run(&args);
            assert!(o.status.success(), "{args:?}: {}", stderr(&o));
            let ours: Vec<_> = stdout(&o).lines().filter_map(|l| key(l, true)).collect();
            assert_eq!(theirs.len(), ours.len(), "{path} buffer '{buf}': event count");
            file_total += theirs.len();
            for (a, b) in theirs.iter().zip(&ours) {
                total += 1;
                if a == b {
                    same += 1;
                    file_same += 1;
                } else if bad.len() < 10 {
                    bad.push(format!("{path} '{buf}':\n  trace-cmd: {a:?}\n  trbox:     {b:?}"));
                }
            }
        }
        println!("{path}: {file_same}/{file_total} events identical");
        assert!(file_total > 0, "{path}: no events in trace-cmd's report");
    }
    println!("{same}/{total} events identical");
    assert!(total > 1000);
    assert!(same as f64 >= 0.999 * total as f64, "{}", bad.join("\n"));
}
