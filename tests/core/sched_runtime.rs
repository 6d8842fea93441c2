//! `examples/sched_runtime.rs` (an analysis on the library's pull reader)
//! against the same sums made from `trace-cmd report -t`'s text of the
//! same trace.dat: each task's run time between the sched_switch that puts
//! it on a CPU and the one that takes it off, to the nanosecond.

use super::common;
use std::collections::HashMap;
use std::process::Command;

const FILE: &str = "tests/data/tracedat/lisa-arm64-sched-load.dat";

/// One sched_switch line of the report: CPU, time in ns, prev
/// (comm, pid), next pid. Its body is `PREV_COMM:PREV_PID [PRIO] STATE ==>
/// NEXT_COMM:NEXT_PID [PRIO]`.
fn switch(line: &str) -> Option<(u32, u64, (String, i64), i64)> {
    let (head, body) = line.split_once(": sched_switch: ")?;
    let (_, cpu_ts) = head.rsplit_once(" [")?;
    let (cpu, ts) = cpu_ts.split_once(']')?;
    let (sec, ns) = ts.trim().split_once('.')?;
    assert_eq!(ns.len(), 9, "report -t prints nanoseconds: {line:?}");
    let ts = sec.parse::<u64>().ok()? * 1_000_000_000 + ns.parse::<u64>().ok()?;
    let (prev, next) = body.trim_start().split_once(" ==> ")?;
    let task = |s: &str| -> Option<(String, i64)> {
        let (task, _) = s.rsplit_once(" [")?;
        let (comm, pid) = task.rsplit_once(':')?;
        Some((comm.to_string(), pid.parse().ok()?))
    };
    Some((cpu.parse().ok()?, ts, task(prev)?, task(next)?.1))
}

#[test]
fn run_times_match_trace_cmd_report() {
    if !common::have_trace_cmd() {
        common::skip("trace-cmd is not installed (make setup installs it)");
        return;
    }
    let o = Command::new("trace-cmd").args(["report", "-t", FILE]).output().expect("trace-cmd report");
    assert!(o.status.success(), "trace-cmd report -t {FILE}");
    let text = String::from_utf8_lossy(&o.stdout);
    let mut on_cpu: HashMap<u32, (u64, i64)> = HashMap::new();
    let mut want: HashMap<i64, (String, u64, u64)> = HashMap::new();
    let mut n = 0;
    for (cpu, ts, (comm, prev), next) in text.lines().filter_map(switch) {
        n += 1;
        if let Some(&(since, pid)) = on_cpu.get(&cpu) {
            if pid == prev && prev != 0 {
                let t = want.entry(prev).or_default();
                t.0 = comm;
                t.1 += ts - since;
                t.2 += 1;
            }
        }
        on_cpu.insert(cpu, (ts, next));
    }
    assert!(n > 100, "{FILE}: {n} sched_switch lines in the report");
    let mut want: Vec<String> = want.into_iter().map(|(p, (c, ns, runs))| format!("{p}\t{c}\t{ns}\t{runs}")).collect();
    let o = Command::new(common::example("sched_runtime")).arg(FILE).output().expect("run sched_runtime");
    assert!(o.status.success() && o.stderr.is_empty(), "sched_runtime: {}", String::from_utf8_lossy(&o.stderr));
    let got = String::from_utf8(o.stdout).expect("UTF-8");
    let got: Vec<&str> = got.lines().collect();
    // Its order: the longest first, ties by pid.
    let key = |l: &str| -> (std::cmp::Reverse<u64>, i64) {
        let f: Vec<&str> = l.split('\t').collect();
        (std::cmp::Reverse(f[2].parse().expect("ns")), f[0].parse().expect("pid"))
    };
    want.sort_by_key(|l| key(l));
    assert_eq!(got, want);
}

#[test]
fn sched_runtime_says_what_is_missing() {
    let o = Command::new(common::example("sched_runtime")).output().expect("run sched_runtime");
    assert_eq!(o.status.code(), Some(1), "usage");
    // A trace with sched_switch's format but none of its records: said,
    // not silently nothing.
    let o = Command::new(common::example("sched_runtime"))
        .arg("tests/data/tracedat/v6-only-fx.dat")
        .output()
        .expect("run sched_runtime");
    assert!(o.status.success() && o.stdout.is_empty());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no sched:sched_switch record"));
    // A buffer the file does not have.
    let o = Command::new(common::example("sched_runtime")).args([FILE, "nosuch"]).output().expect("run");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no buffer 'nosuch'"));
}
