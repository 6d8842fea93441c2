//! `tr-cat FILE` against `trace-cmd report -N` on files trace-cmd wrote
//! (tests/data/tracedat: v6, v7 uncompressed, v7 zstd, each with an extra
//! buffer `inst1`): the same events, with the same bodies.

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

#[test]
fn trace_cmd_files_read_like_trace_cmd_report() {
    if Command::new("trace-cmd").arg("--help").output().is_err() {
        eprintln!("SKIP: trace-cmd is not installed (bash cross/setup.sh installs it)");
        return;
    }
    let mut total = 0;
    let mut same = 0;
    let mut bad = Vec::new();
    for f in ["v6-inst", "v7-none-inst", "v7-zstd-inst"] {
        let path = format!("tests/data/tracedat/{f}.dat");
        let rep = Command::new("trace-cmd").args(["report", "-N", &path]).output().unwrap();
        assert!(rep.status.success(), "trace-cmd report {path}");
        let rep = String::from_utf8_lossy(&rep.stdout).into_owned();
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
            for (a, b) in theirs.iter().zip(&ours) {
                total += 1;
                if a == b {
                    same += 1;
                } else if bad.len() < 10 {
                    bad.push(format!("{path} '{buf}':\n  trace-cmd: {a:?}\n  trbox:     {b:?}"));
                }
            }
        }
    }
    println!("{same}/{total} events identical");
    assert!(total > 1000);
    assert!(same as f64 >= 0.999 * total as f64, "{}", bad.join("\n"));
}
