//! `examples/field_counts.rs` (the library's pull reader) against an
//! independent count: `trace-cmd report`'s text of the same trace.dat (or,
//! without trace-cmd, tr-cat's), for an integer field and a string field
//! of sched_switch, over both buffers of the file.

use super::common;
use std::collections::BTreeMap;
use std::process::Command;

const FILE: &str = "tests/data/tracedat/v6-inst.dat";

/// `field_counts FILE sched:sched_switch FIELD`, as (value, count) rows in
/// its order.
fn field_counts(field: &str) -> Vec<(String, u64)> {
    let o = Command::new(common::example("field_counts"))
        .args([FILE, "sched:sched_switch", field])
        .output()
        .expect("run field_counts");
    assert!(o.status.success(), "field_counts {field}: {}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stderr.is_empty(), "field_counts {field} said: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| {
            let (v, n) = l.split_once('\t').unwrap_or_else(|| panic!("not VALUE<TAB>COUNT: {l:?}"));
            (v.to_string(), n.parse().unwrap_or_else(|_| panic!("count of {l:?}")))
        })
        .collect()
}

/// The text of the same file by another reader: `trace-cmd report`, else
/// `tr-cat`.
fn report() -> String {
    match Command::new("trace-cmd").args(["report", FILE]).output() {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        _ => {
            common::skip("trace-cmd is not installed (make setup installs it): counting tr-cat's text instead");
            let o = common::run(&["tr-cat", FILE]);
            assert!(o.status.success(), "tr-cat {FILE}");
            String::from_utf8_lossy(&o.stdout).into_owned()
        }
    }
}

/// The `prev_comm` and `prev_pid` of each sched_switch line: its body
/// is `PREV_COMM:PREV_PID [PRIO] STATE ==> NEXT_COMM:NEXT_PID [PRIO]`.
fn switches(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.split_once(" sched_switch: "))
        .map(|(_, body)| {
            let prev = body.trim_start().split(" ==> ").next().unwrap_or("");
            let (task, _) = prev.rsplit_once(" [").unwrap_or_else(|| panic!("a sched_switch body: {body:?}"));
            let (comm, pid) = task.rsplit_once(':').unwrap_or_else(|| panic!("COMM:PID: {task:?}"));
            (comm.to_string(), pid.to_string())
        })
        .collect()
}

/// Counts in field_counts' order: the most first, ties by value (`num`:
/// integers compare as numbers).
fn ranked(values: impl Iterator<Item = String>, num: bool) -> Vec<(String, u64)> {
    let mut m: BTreeMap<String, u64> = BTreeMap::new();
    for v in values {
        *m.entry(v).or_default() += 1;
    }
    let mut rows: Vec<_> = m.into_iter().collect();
    let key = |s: &str| if num { s.parse::<i64>().expect("an integer") } else { 0 };
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| key(&a.0).cmp(&key(&b.0))).then_with(|| a.0.cmp(&b.0)));
    rows
}

#[test]
fn field_counts_match_trace_cmd_report() {
    let sw = switches(&report());
    assert!(sw.len() > 500, "{FILE}: {} sched_switch lines in the report", sw.len());
    let comms = ranked(sw.iter().map(|s| s.0.clone()), false);
    let pids = ranked(sw.iter().map(|s| s.1.clone()), true);
    assert_eq!(field_counts("prev_comm"), comms, "a string field");
    assert_eq!(field_counts("prev_pid"), pids, "an integer field");
}

#[test]
fn field_counts_says_what_is_missing() {
    let o = Command::new(common::example("field_counts"))
        .args([FILE, "sched:no_such_event", "pid"])
        .output()
        .expect("run field_counts");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no event sched:no_such_event"));
    let o = Command::new(common::example("field_counts")).args([FILE, "sched"]).output().expect("run field_counts");
    assert_eq!(o.status.code(), Some(1), "usage");
}
