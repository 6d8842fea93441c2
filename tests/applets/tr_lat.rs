//! tr-lat, live on this machine: the wakeup, IRQ/softirq and syscall
//! latencies of a buffer equal the differences of the timestamps in the
//! kernel's own text (`trace`) of the same records, paired by the test
//! from that text; `-- CMD`, `-P PID` of another process and a system-wide
//! `-t` run under load measure what they should; the timerlat/osnoise
//! tracers this kernel lacks are named in one line with what works; the
//! tracefs state is the same before and after every run.

use super::common;
use common::*;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

fn lat(args: &[&str]) -> std::process::Output {
    applet("tr-lat", args)
}

/// `"key":VALUE` of a JSON line (numbers and plain strings).
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("\"{key}\":");
    let rest = &line[line.find(&pat)? + pat.len()..];
    if let Some(s) = rest.strip_prefix('"') {
        return s.split('"').next();
    }
    rest.split([',', '}']).next()
}

fn num(line: &str, key: &str) -> i64 {
    field(line, key).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("no {key} in {line}"))
}

/// One sample: (table, key, CPU of the end, begin µs, end µs) with the
/// kernel's rounding (`ns2usecs`), and the latency in ns.
type Pair = (String, i64, u32, u64, u64);

/// Every `--samples` line: its pair and ns (two short syscalls in the same
/// microsecond make the same pair: a list, not a map).
fn samples(out: &str) -> Vec<(Pair, u64)> {
    let us = |ns: i64| (ns as u64 + 500) / 1000;
    out.lines()
        .filter(|l| l.contains("\"begin\":"))
        .map(|l| {
            let p = (
                field(l, "table").unwrap().to_string(),
                num(l, "key"),
                num(l, "cpu") as u32,
                us(num(l, "begin")),
                us(num(l, "end")),
            );
            (p, num(l, "ns") as u64)
        })
        .collect()
}

/// (pid, cpu, µs, event, text after "event: ") of one line of `trace`.
fn parse_line(line: &str) -> Option<(i64, u32, u64, &str, &str)> {
    let (cpu, us, after) = trace_text::parse(line)?;
    let at = line.find(&format!("[{cpu:03}]"))?;
    let pid = line[..at].trim_end().rsplit('-').next()?.parse().ok()?;
    let (ev, rest) = after.split_once(": ")?;
    Some((pid, cpu, us, ev, rest))
}

/// `name=VALUE` (up to a space) in an event's text.
fn kv(text: &str, name: &str) -> Option<i64> {
    let pat = format!("{name}=");
    text.split(' ').find_map(|w| w.strip_prefix(&pat)).and_then(|v| v.parse().ok())
}

/// The pairs the kernel's text shows, by the rules of trbox::lat: a
/// syscall's enter and exit of the same task and number; an IRQ's entry and
/// exit on the same CPU; a task's newest sched_waking and the sched_switch
/// to it, unless the task was seen running in between (a switch away from
/// it). Each pair with how often it occurs (see [`samples`]); and how many
/// wakings no switch to their task followed.
fn text_pairs(trace: &str) -> (BTreeMap<Pair, usize>, u64) {
    let mut out = BTreeMap::new();
    let mut sys: BTreeMap<i64, (i64, u64)> = BTreeMap::new();
    let mut irq: BTreeMap<(u32, bool), (i64, u64)> = BTreeMap::new();
    let mut waking: BTreeMap<i64, u64> = BTreeMap::new();
    let mut no_switch = 0;
    for l in trace.lines().filter(|l| !l.starts_with('#')) {
        assert!(!l.contains("LOST EVENTS"), "the buffer lost events: {l}");
        let Some((pid, cpu, us, ev, rest)) = parse_line(l) else { continue };
        let nr = || rest.strip_prefix("NR ").and_then(|r| r.split(' ').next()).and_then(|n| n.parse::<i64>().ok());
        match ev {
            "sys_enter" => {
                sys.insert(pid, (nr().unwrap(), us));
            }
            "sys_exit" => {
                if let Some((n, b)) = sys.remove(&pid).filter(|o| Some(o.0) == nr()) {
                    *out.entry(("syscall".into(), n, cpu, b, us)).or_insert(0) += 1;
                }
            }
            "irq_handler_entry" | "softirq_entry" => {
                let n = kv(rest, "irq").or_else(|| kv(rest, "vec")).unwrap();
                irq.insert((cpu, ev == "softirq_entry"), (n, us));
            }
            "irq_handler_exit" | "softirq_exit" => {
                let n = kv(rest, "irq").or_else(|| kv(rest, "vec")).unwrap();
                let soft = ev == "softirq_exit";
                if let Some((m, b)) = irq.remove(&(cpu, soft)).filter(|o| o.0 == n) {
                    *out.entry((if soft { "softirq" } else { "irq" }.into(), m, cpu, b, us)).or_insert(0) += 1;
                }
            }
            "sched_waking" => {
                let p = kv(rest, "pid").unwrap();
                if p != 0 && waking.insert(p, us).is_some() {
                    no_switch += 1;
                }
            }
            "sched_switch" => {
                let pid_after = |key: &str| -> i64 {
                    rest.rsplit(key).next().and_then(|r| r.split(' ').next()).and_then(|p| p.parse().ok()).unwrap()
                };
                let (prev, next) = (pid_after(" prev_pid="), pid_after(" next_pid="));
                if prev != 0 && waking.remove(&prev).is_some() {
                    no_switch += 1;
                }
                if let Some(b) = waking.remove(&next) {
                    *out.entry(("task".into(), next, cpu, b, us)).or_insert(0) += 1;
                }
            }
            _ => {}
        }
    }
    (out, no_switch + waking.len() as u64)
}

/// Record `events` system-wide while `work` runs (plain tracefs writes,
/// put back by the guard), read the kernel's text, then `tr-lat MODE -r`
/// on the same buffer: every latency equals the text's difference.
fn same_as_text(mode: &str, events: &[&str], work: &str) {
    let Some((_l, root, before)) = live_with_snapshot() else { return };
    for e in events {
        if !root.join("events").join(e).is_dir() {
            skip_absent(&format!("no {e} event"));
            return;
        }
    }
    {
        let mut g = Guard::new(&root);
        assert!(g.set("tracing_on", "0"));
        std::fs::write(root.join("trace"), "").unwrap();
        for e in events {
            assert!(g.set(&format!("events/{e}/enable"), "1"), "{e}");
        }
        assert!(g.set("tracing_on", "1"));
        let st = Command::new("sh").args(["-c", work]).status().unwrap();
        assert!(st.success());
        std::fs::write(root.join("tracing_on"), "0").unwrap();
        let trace = std::fs::read_to_string(root.join("trace")).unwrap();
        let n = compare_with_text(mode, &trace, &[mode, "-r", "--json", "--samples", "--ns"]);
        eprintln!("{mode}: {n} latencies equal the kernel's text");
    }
    assert_same_state(&before, &snapshot(&root));
}

/// `tr-lat ARGS` (a `-r --json --samples -n` read) against the pairs of
/// the kernel's text `trace` of the same buffer: every latency equal, each
/// table row counting its samples. How many there were.
fn compare_with_text(mode: &str, trace: &str, args: &[&str]) -> usize {
    // The text may hold the events of other modes too: this mode's tables.
    let tables: &[&str] = match args.iter().find(|a| ["wakeup", "irq", "syscall"].contains(a)) {
        Some(&"wakeup") => &["task"],
        Some(&"irq") => &["irq", "softirq"],
        _ => &["syscall"],
    };
    let (mut want, no_switch) = text_pairs(trace);
    want.retain(|p, _| tables.contains(&p.0.as_str()));
    let o = lat(args);
    assert!(o.status.success(), "{}", stderr(&o));
    let got = samples(&stdout(&o));
    let mut got_pairs: BTreeMap<Pair, usize> = BTreeMap::new();
    for (p, _) in &got {
        *got_pairs.entry(p.clone()).or_insert(0) += 1;
    }
    let missing: Vec<_> = want.iter().filter(|(p, n)| got_pairs.get(*p) != Some(n)).take(5).collect();
    let extra: Vec<_> = got_pairs.iter().filter(|(p, n)| want.get(*p) != Some(n)).take(5).collect();
    assert!(missing.is_empty() && extra.is_empty(), "{mode}: not in tr-lat: {missing:?}; not in the text: {extra:?}");
    assert!(want.len() >= 10, "{mode}: only {} pairs in the text", want.len());
    if tables == ["task"] {
        // Wakings that no switch followed are said, and are no latency.
        let says = stdout(&o).lines().find(|l| l.contains("\"uncounted\"")).map(|l| num(l, "wakings_without_switch"));
        assert_eq!(says, Some(no_switch as i64), "{mode}: wakings without a switch");
    }
    for ((t, k, _, b, e), ns) in &got {
        let text_ns = (e - b) * 1000;
        assert!(ns.abs_diff(text_ns) <= 1000, "{t} {k}: {ns} ns, the text says {b}..{e} us");
    }
    // The tables (from the same kind of buffer) count what the samples
    // did: every table row's count is the number of its samples.
    let out = stdout(&o);
    for r in out.lines().filter(|l| l.contains("\"count\":")) {
        let (t, k) = (field(r, "table").unwrap(), num(r, "key"));
        if t == "class" || t == "syscall_task" {
            continue;
        }
        let n = got.iter().filter(|(p, _)| p.0 == t && p.1 == k).count() as i64;
        assert_eq!(num(r, "count"), n, "{t} {k}: {r}");
    }
    got.len()
}

#[test]
fn syscall_durations_equal_the_kernels_text() {
    same_as_text(
        "syscall",
        &["raw_syscalls/sys_enter", "raw_syscalls/sys_exit"],
        "for i in 1 2 3 4 5; do cat /proc/version > /dev/null; sleep 0.01; done",
    );
}

#[test]
fn irq_durations_equal_the_kernels_text() {
    same_as_text(
        "irq",
        &["irq/irq_handler_entry", "irq/irq_handler_exit", "irq/softirq_entry", "irq/softirq_exit"],
        "for i in $(seq 20); do sleep 0.02; sync; done",
    );
}

#[test]
fn wakeup_latencies_equal_the_kernels_text() {
    // A task woken at a known period: the shell and each sleep, 20 times.
    same_as_text("wakeup", &["sched/sched_waking", "sched/sched_switch"], "for i in $(seq 20); do sleep 0.01; done");
}

/// Rows of `--json` output: (table, key, name, count).
fn rows(out: &str) -> Vec<(String, i64, String, i64)> {
    out.lines()
        .filter(|l| l.contains("\"count\":"))
        .map(|l| (field(l, "table").unwrap().into(), num(l, "key"), field(l, "name").unwrap().into(), num(l, "count")))
        .collect()
}

/// `-- CMD`: the command's wakeups (the shell woken as each child ends,
/// each sleep by its timer) and its syscalls, its exit status.
#[test]
fn a_command_is_measured_and_its_status_returned() {
    let Some((_l, root, before)) = live_with_snapshot() else { return };
    let o = lat(&["wakeup", "--json", "--", "sh", "-c", "for i in $(seq 10); do sleep 0.02; done; exit 3"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let r = rows(&stdout(&o));
    let task =
        |n: &str| r.iter().filter(|x| x.0 == "task" && x.2.starts_with(&format!("{n}-"))).map(|x| x.3).sum::<i64>();
    // The shell woke as each sleep ended: 10 at least. Each sleep woke by
    // its timer too, but with a reader following the buffer this machine's
    // kernel (6.18) at times records the waking of a sleep on an idle CPU
    // and not the switch from idle to it: `cat trace_pipe` during the same
    // loop misses those switches as well (0 to 5 of 10), the kernel's
    // `trace` of the loop with no reader has all 10. Such a wakeup has no
    // end to measure; the sleeps' rows are not counted here.
    assert!(task("sh") >= 10, "the shell woke 10 times: {r:?}");
    // Only the command's tasks (the shell, its `seq` and sleeps): the kernel's pid filter also lets through
    // the wakeups the command causes in others. (The command's process is
    // still trbox's fork when it is released: its wakeup may come first.)
    let ours = |n: &str| ["sh-", "seq-", "sleep-", "trbox-"].iter().any(|p| n.starts_with(p));
    assert!(r.iter().filter(|x| x.0 == "task").all(|x| ours(&x.2)), "{r:?}");
    // Not the shell's last command: busybox sh (the qemu boards') execs
    // that one in place of forking.
    let o = lat(&["syscall", "--", "sh", "-c", "cat /proc/version > /dev/null; exit 0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("# system call duration (sys_enter -> sys_exit), us"), "{out}");
    // Two tasks: the shell and the child it forks for cat (named cat or,
    // when the kernel saved its comm before the exec only, sh).
    let tasks = out
        .split("per task")
        .nth(1)
        .unwrap_or("")
        .lines()
        .filter(|l| l.contains('-') && !l.starts_with("TASK"))
        .count();
    assert!(tasks >= 2, "the command's child is followed: {out}");
    assert_same_state(&before, &snapshot(&root));
}

/// `-P PID` of another process: only its wakeups (not its children's,
/// not anyone else's).
#[test]
fn a_pid_of_another_process_is_measured_alone() {
    let Some((_l, root, before)) = live_with_snapshot() else { return };
    let mut bg = spawn(Command::new("sh").args(["-c", "while :; do sleep 0.05; done"]));
    let pid = bg.id().to_string();
    let o = lat(&["wakeup", "-P", &pid, "-t", "1", "--json"]);
    bg.signal(libc::SIGKILL);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = rows(&stdout(&o));
    let tasks: Vec<_> = r.iter().filter(|x| x.0 == "task").collect();
    assert_eq!(tasks.len(), 1, "{r:?}");
    assert_eq!(tasks[0].1.to_string(), pid);
    // About 20 wakeups in 1 s on an idle machine; a loaded one forks
    // slower, so only that it was measured is the rule.
    assert!(tasks[0].3 >= 1, "woken as each sleep ends: {r:?}");
    assert_same_state(&before, &snapshot(&root));
}

/// System-wide with `-t` under a background load: the load's syscalls are
/// there, trbox's own are not.
#[test]
fn a_system_wide_run_sees_the_load_and_not_itself() {
    let Some((_l, root, before)) = live_with_snapshot() else { return };
    // System calls at a pace, not as fast as dd makes them: on a one-CPU
    // board under TCG, tracing each of dd's took the reader 30 s for the
    // 3.5 s window.
    let mut bg = spawn(Command::new("sh").args(["-c", "while :; do read x </proc/version; sleep 0.01; done"]));
    let dd = bg.id() as i64;
    // Other tests' trbox processes may run meanwhile: only this one and
    // its threads must be absent.
    let (o, mine) = with_threads(&["tr-lat", "syscall", "-t", "1", "--json"]);
    bg.signal(libc::SIGKILL);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = rows(&stdout(&o));
    let of = |pid: i64| r.iter().find(|x| x.0 == "syscall_task" && x.1 == pid).map_or(0, |x| x.3);
    // Seen: at least one turn of its loop (openat, read and close of
    // /proc/version) in the window. How many turns a second is the
    // machine's speed and load (about 100 on a quiet one), not a rule.
    assert!(of(dd) >= 3, "the load's syscalls: {r:?}");
    let own = |x: &(String, i64, String, i64)| mine.contains(&x.1);
    let seen: Vec<_> = r.iter().filter(|x| x.0 == "syscall_task" && own(x)).collect();
    assert!(seen.is_empty(), "trbox ({mine:?}) measured itself: {seen:?}");
    // The per-syscall rows count what the per-task rows do.
    let sum = |t: &str| r.iter().filter(|x| x.0 == t).map(|x| x.3).sum::<i64>();
    assert_eq!(sum("syscall"), sum("syscall_task"));
    assert_same_state(&before, &snapshot(&root));
}

/// `tr-lat wakeup` system-wide: its own threads (woken by the kernel as
/// pages fill) are no rows of its table, while the load's are (issue 26).
#[test]
fn a_system_wide_wakeup_run_leaves_out_its_own_threads() {
    let Some((_l, root, before)) = live_with_snapshot() else { return };
    let mut bg = spawn(Command::new("sh").args(["-c", "while :; do sleep 0.01; done"]));
    let (o, mine) = with_threads(&["tr-lat", "wakeup", "-t", "1.5", "--json"]);
    bg.signal(libc::SIGKILL);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = rows(&stdout(&o));
    assert!(r.iter().filter(|x| x.0 == "task").count() >= 2, "{r:?}");
    let seen: Vec<_> = r.iter().filter(|x| x.0 == "task" && mine.contains(&x.1)).collect();
    assert!(seen.is_empty(), "trbox ({mine:?}) measured itself: {seen:?}");
    assert!(stdout(&o).contains("\"wakings_without_switch\":"), "{}", stdout(&o));
    assert_same_state(&before, &snapshot(&root));
}

/// A tracer the kernel lacks: one line naming the tracers it has, the
/// tracepoint modes as the hint; nothing changed. Each tracer mode on a
/// kernel shown without that tracer (its `available_tracers` replaced in a
/// mount namespace of trbox's own), and those this kernel really lacks.
#[test]
fn missing_tracers_are_named_with_what_works() {
    let Some((_l, root, before)) = live_with_snapshot() else { return };
    let have = std::fs::read_to_string(root.join("available_tracers")).unwrap();
    // The tracer modes, then the max-latency tracers: each hint names the
    // tracepoint mode that works instead.
    for (m, instead) in [
        ("timerlat", "hint: tr-lat wakeup, irq and syscall"),
        ("osnoise", "hint: tr-lat wakeup, irq and syscall"),
        ("hwlat", "hint: tr-lat wakeup, irq and syscall"),
        ("wakeup_rt", "hint: tr-lat wakeup [--rt] measures wakeup latency from the sched tracepoints"),
        ("wakeup", "hint: tr-lat wakeup [--rt]"),
        ("wakeup_dl", "hint: tr-lat wakeup [--rt]"),
        ("irqsoff", "hint: tr-lat irq measures IRQ and softirq handler times"),
        ("preemptoff", "hint: tr-lat irq"),
        ("preemptirqsoff", "hint: tr-lat irq"),
    ] {
        // `wakeup` is the tracepoint mode; the kernel's wakeup tracer is
        // `wakeup --max`.
        let args: &[&str] = if m == "wakeup" { &["tr-lat", m, "--max", "-t", "1"] } else { &["tr-lat", m, "-t", "1"] };
        let Some((shown, o)) = without_tracers(&root, &[m], args) else { return };
        let mut runs = vec![(shown, o)];
        if !have.split_whitespace().any(|t| t == m) {
            runs.push((have.split_whitespace().collect::<Vec<_>>().join(" "), run(args)));
        }
        for (shown, o) in runs {
            assert_eq!(o.status.code(), Some(2), "{m}: {}", stderr(&o));
            let e = stderr(&o);
            let first = e.lines().next().unwrap();
            assert!(first.starts_with(&format!("tr-lat: this kernel has no {m} tracer")), "{e}");
            assert!(first.ends_with(&format!("its tracers: {shown}")), "{e}");
            assert!(e.contains(instead), "{e}");
            assert_eq!(e.lines().count(), 2, "{e}");
        }
    }
    assert_same_state(&before, &snapshot(&root));
}

#[test]
fn usage_errors() {
    for (args, want) in [
        (&["nosuch"][..], "unknown mode 'nosuch'"),
        (&["irq", "--rt"][..], "--rt is for wakeup, not for irq"),
        (&["wakeup", "-p", "100"][..], "--period is for timerlat, osnoise and hwlat, not for wakeup"),
        (&["timerlat", "-P", "1"][..], "--pid is for wakeup, irq and syscall, not for timerlat"),
        (&["timerlat", "--", "true"][..], "timerlat measures CPUs, not processes: no -- CMD"),
        (&["syscall", "--samples"][..], "--samples goes with --json"),
        (&["timerlat", "-o", "/tmp/x"][..], "--output is for the max-latency tracers, not for timerlat"),
        (&["osnoise", "--width", "10"][..], "--width is for hwlat, not for osnoise"),
        (&["hwlat", "--total-us", "10"][..], "--total-us is for timerlat and osnoise, not for hwlat"),
        (&["wakeup_rt", "-P", "1"][..], "--pid is for wakeup, irq and syscall, not for wakeup_rt"),
        (&["wakeup_rt", "--", "true"][..], "tr-lat wakeup_rt traces the whole system: no -- CMD"),
        // Issue 43: the max-latency tracers took these and ignored them.
        (&["irqsoff", "--warm-up", "1"][..], "--warm-up is for timerlat, osnoise and hwlat, not for irqsoff"),
        (&["wakeup", "--max", "--cgroup"][..], "--cgroup is for timerlat and osnoise, not for wakeup --max"),
        (&["preemptoff", "-u"][..], "--user-threads is for timerlat, not for preemptoff"),
        (&["hwlat", "--cgroup"][..], "--cgroup is for timerlat and osnoise, not for hwlat"),
        (&["irq", "--max"][..], "--max is for wakeup, not for irq"),
        (&["wakeup", "--priority", "f:10"][..], "--priority is for timerlat and osnoise, not for wakeup"),
        // Issue 31's analysis and set-up options (rtla's names).
        (&["timerlat", "--no-aa", "--aa-only", "10"][..], "--no-aa goes with neither"),
        (&["timerlat", "--dump-tasks"][..], "--dump-tasks need a stop threshold"),
        (&["osnoise", "--irq-us", "10", "--no-aa"][..], "--no-aa is for timerlat, not for osnoise"),
        (&["hwlat", "--aa-only", "10"][..], "--aa-only is for timerlat, not for hwlat"),
        (&["wakeup", "--cgroup"][..], "--cgroup is for timerlat and osnoise, not for wakeup"),
        (&["wakeup", "--cgroup=rt"][..], "--cgroup is for timerlat and osnoise, not for wakeup"),
        (
            &["irq", "--deepest-idle-state", "0"][..],
            "--deepest-idle-state is for timerlat, osnoise and hwlat, not for irq",
        ),
        (&["hwlat", "--cpus", "0"][..], "--cpus is for timerlat and osnoise, not for hwlat"),
        // One CPU list grammar, the kernel's (issue 39).
        (&["timerlat", "--cpus", "1-0"][..], "'1-0' is not part of a CPU list"),
        (&["timerlat", "-H", "x"][..], "'x' is not part of a CPU list"),
        (&["timerlat", "--deepest-idle-state", "-2"][..], "a state's number, or -1"),
    ] {
        let o = lat(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
    }
    let o = lat(&["--help"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("Usage: tr-lat"));
}

/// The modes, each as tr-lat is given it and as the help and the
/// messages name it ("max": the max-latency tracers; hwnoise takes
/// osnoise's options).
const MODES: &[(&[&str], &str)] = &[
    (&["wakeup"], "wakeup"),
    (&["irq"], "irq"),
    (&["syscall"], "syscall"),
    (&["timerlat"], "timerlat"),
    (&["osnoise"], "osnoise"),
    (&["hwnoise"], "osnoise"),
    (&["hwlat"], "hwlat"),
    (&["wakeup_rt"], "max"),
    (&["wakeup", "--max"], "max"),
    (&["wakeup_dl"], "max"),
    (&["irqsoff"], "max"),
    (&["preemptoff"], "max"),
    (&["preemptirqsoff"], "max"),
];

/// A mode's name in the help or a message, as [`MODES`] names it.
fn mode_kind(name: &str) -> Option<&'static str> {
    let name = name.trim().trim_start_matches("the ");
    if name == "max-latency tracers" {
        return Some("max");
    }
    MODES.iter().map(|m| m.1).find(|k| *k == name)
}

/// One row of `tr-lat --help`'s own options: the long name, the value's
/// name (None for a switch) and the text.
struct HelpRow {
    long: String,
    value: Option<String>,
    text: String,
}

fn help_rows(help: &str) -> Vec<HelpRow> {
    let mut rows: Vec<HelpRow> = Vec::new();
    let mut inside = false;
    for l in help.lines() {
        if !l.starts_with(' ') {
            inside = l == "Options:";
            continue;
        }
        if !inside {
            continue;
        }
        let Some(row) = l.strip_prefix("  -") else {
            if let Some(r) = rows.last_mut() {
                r.text = format!("{} {}", r.text, l.trim()).trim().to_string();
            }
            continue;
        };
        // "-P, --pid PID   text" or "--on-threshold ACTION" (text below).
        let row = match row.split_once(", ") {
            Some((c, rest)) if c.len() == 1 => rest,
            _ => &l[2..],
        };
        let (flags, text) = row.split_once("  ").unwrap_or((row, ""));
        let mut w = flags.split_whitespace();
        let long = w.next().unwrap_or_default().to_string();
        let value = w.next().map(String::from);
        rows.push(HelpRow { long, value, text: text.trim().to_string() });
    }
    rows.retain(|r| r.long.len() > 2 && r.long != "--help");
    rows
}

/// The modes an option's help text starts a clause with: "wakeup: ...",
/// "timerlat/osnoise: ...", "timerlat: ...; hwlat/max-latency tracers: ...".
fn help_modes(text: &str) -> BTreeSet<&'static str> {
    let mut out = BTreeSet::new();
    for clause in text.split("; ") {
        let Some((label, _)) = clause.split_once(':') else { continue };
        let kinds: Option<Vec<_>> = label.split('/').map(mode_kind).collect();
        out.extend(kinds.unwrap_or_default());
    }
    out
}

/// Which mode takes which option, as `tr-lat --help` says it (an option
/// that names modes is for those only; the others for every mode, the
/// max-latency tracers taking only those the note lists) and as tr-lat
/// does it: for every option and every mode, a mode that does not take it
/// refuses it (exit 1) in a message naming it and the modes that do; a
/// mode that does gets past every check, to the tracefs directory that
/// does not exist (exit 2). No tracefs is touched. (Issue 43: the
/// max-latency tracers took --warm-up, --cgroup and -u, and ignored them.)
#[test]
fn each_option_is_refused_by_the_modes_that_do_not_take_it() {
    let help = stdout(&lat(&["--help"]));
    let rows = help_rows(&help);
    assert!(rows.len() > 30 && rows.iter().any(|r| r.long == "--rt"), "{help}");
    let long_of = |w: &str| -> String {
        if w.starts_with("--") {
            return w.to_string();
        }
        let (own, _) = super::options::parse_help(&help);
        own.iter().find(|o| o.short.map(|c| format!("-{c}")).as_deref() == Some(w)).map_or(w.into(), |o| o.long.clone())
    };
    // "...the max-latency tracers take only -t, --json, -k and the options
    // that name them."
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    let note = flat.split("the max-latency tracers take only ").nth(1).expect("the note on the max-latency tracers");
    let max_takes: BTreeSet<String> = note
        .split(" and the options that name them")
        .next()
        .unwrap()
        .split([',', ' '])
        .filter(|w| w.starts_with('-'))
        .map(long_of)
        .collect();
    assert_eq!(max_takes.len(), 3, "{note}");
    let missing = "/nonexistent/trbox-h43d";
    for r in &rows {
        let value: &[&str] = match r.value.as_deref() {
            // tr-lat's --cgroup alone, or --cgroup=NAME.
            _ if r.long == "--cgroup" => &[],
            None => &[],
            Some("PID" | "S" | "N" | "WIDTH") => &["1"],
            Some("US") => &["10"],
            Some("CPUS") => &["0"],
            Some("KB") => &["1024"],
            Some("POLICY") => &["f:10"],
            Some("ACTION") => &["continue"],
            Some("DIR") => &["/tmp"],
            Some(v) => panic!("{}: which value for {v}?", r.long),
        };
        // What else a mode that takes it needs (checked later than the
        // modes: "--samples goes with --json").
        let with: &[&str] = match r.long.as_str() {
            "--samples" => &["--json"],
            "--on-threshold" | "--dump-tasks" => &["--irq-us", "10"],
            _ => &[],
        };
        let (mut taken, mut refused) = (BTreeSet::new(), Vec::new());
        for (words, kind) in MODES {
            let base: Vec<&str> = words.iter().copied().chain([r.long.as_str()]).chain(value.iter().copied()).collect();
            let tail = ["-T", missing];
            let o = lat(&[&base[..], &tail].concat());
            let e = stderr(&o);
            let shown = words.join(" ");
            let refusal = format!("tr-lat: {} is for ", r.long);
            let first = e.lines().next().unwrap_or_default();
            if let Some(list) = first.strip_prefix(&refusal) {
                assert_eq!(o.status.code(), Some(1), "{base:?}: {e}");
                let list = list.strip_suffix(&format!(", not for {shown}")).unwrap_or_else(|| panic!("{base:?}: {e}"));
                let kinds: BTreeSet<&str> =
                    list.split(", ").flat_map(|p| p.split(" and ")).map(|m| mode_kind(m).expect(list)).collect();
                assert!(!kinds.contains(kind), "{base:?}: {e}");
                refused.push((base, kinds));
                continue;
            }
            let o = lat(&[&base[..], with, &tail].concat());
            let e = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{base:?} {with:?}: {e}");
            assert!(e.starts_with(&format!("tr-lat: {missing}: ")), "{base:?} {with:?}: {e}");
            taken.insert(*kind);
        }
        // Every refusal names the modes that take it; hwnoise and each
        // max-latency tracer as osnoise and the others. (--max makes a
        // max-latency tracer of wakeup: the others have it already.)
        let named_in_refusals: BTreeSet<&str> =
            taken.iter().copied().filter(|k| r.long != "--max" || *k != "max").collect();
        for (base, kinds) in &refused {
            assert_eq!(kinds, &named_in_refusals, "{base:?}");
        }
        let named = help_modes(&r.text);
        if r.long == "--max" {
            // wakeup --max is a max-latency tracer; irqsoff --max one too.
            assert_eq!(named, BTreeSet::from(["wakeup"]), "{}", r.text);
            assert_eq!(taken, BTreeSet::from(["wakeup", "max"]));
        } else if named.is_empty() {
            let every: BTreeSet<&str> =
                MODES.iter().map(|m| m.1).filter(|k| *k != "max" || max_takes.contains(&r.long)).collect();
            assert_eq!(taken, every, "{}: {}", r.long, r.text);
        } else {
            assert_eq!(taken, named, "{}: {}", r.long, r.text);
        }
    }
}

/// On a terminal the table is drawn again about once a second (cleared,
/// in place: ESC [H ESC [2J before each), under a load that keeps records
/// coming; the last one drawn is the final table. Stdout is a pty here.
#[test]
fn on_a_tty_the_table_refreshes_about_once_a_second() {
    let Some((_l, root, before)) = live_with_snapshot() else { return };
    // SAFETY: posix_openpt/grantpt/unlockpt/ptsname on a new descriptor.
    let (master, slave) = unsafe {
        let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(m >= 0 && libc::grantpt(m) == 0 && libc::unlockpt(m) == 0, "no pty here");
        let name = std::ffi::CStr::from_ptr(libc::ptsname(m)).to_string_lossy().into_owned();
        (
            std::fs::File::from(std::os::fd::OwnedFd::from_raw_fd(m)),
            std::fs::File::options().write(true).open(name).unwrap(),
        )
    };
    use std::os::fd::{AsRawFd, FromRawFd};
    // A small terminal: 15 rows of 80 columns.
    let ws = libc::winsize { ws_row: 15, ws_col: 80, ws_xpixel: 0, ws_ypixel: 0 };
    // SAFETY: TIOCSWINSZ reads the winsize; the descriptor is the pty's.
    assert_eq!(unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &ws) }, 0);
    // System calls at a pace, not as fast as dd makes them: on a one-CPU
    // board under TCG, tracing each of dd's took the reader 30 s for the
    // 3.5 s window.
    let mut bg = spawn(Command::new("sh").args(["-c", "while :; do read x </proc/version; sleep 0.01; done"]));
    let mut c = cmd(&trbox(), &["tr-lat", "syscall", "-t", "3.5"]);
    c.env("TERM", "xterm").stdout(slave).stderr(std::process::Stdio::piped());
    let started = std::time::Instant::now();
    let child = c.spawn().unwrap();
    // The Command holds the slave too: the reader's EOF (EIO) needs it closed.
    drop(c);
    // The pty's reader: the child blocks once its buffer is full otherwise.
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        let _ = std::io::Read::read_to_end(&mut { master }, &mut all);
        all
    });
    let o = child.wait_with_output().unwrap();
    let ran = started.elapsed();
    bg.signal(libc::SIGKILL);
    assert!(o.status.success(), "{}", stderr(&o));
    // The slave is closed (the child's end): the reader sees EIO and ends.
    let text = String::from_utf8_lossy(&reader.join().unwrap()).into_owned();
    // Redraws in place (issue 31): the cursor home, the changed lines, the
    // rest cleared (ESC[J); none taller than the terminal (the last row
    // left empty). Then the whole table, once, on a cleared screen.
    let (refreshes, last) = text.split_once("\x1b[H\x1b[2J").expect("the final table");
    let frames: Vec<&str> = refreshes.split("\x1b[H").filter(|f| f.ends_with("\x1b[J")).collect();
    // The rule: a record read a second or more after the last drawing (or
    // the start) draws again. So at most one per whole second the run
    // took, and at least one: the load's records of the window's last 2.5 s
    // are read after its first second, however slowly (a board under TCG
    // reads them in a few late batches).
    let most = ran.as_secs() as usize;
    assert!(
        (1..=most).contains(&frames.len()),
        "1 to {most} redraws in a run of {ran:?}, got {}: {text}",
        frames.len()
    );
    for f in &frames {
        assert!(f.matches("\r\n").count() <= 14, "a redraw taller than 15 rows: {f}");
        // (The pty's onlcr makes each \r\n a \r\r\n.)
        assert!(
            f.split('\n').all(|l| l.trim_end_matches('\r').trim_end_matches("\x1b[K").chars().count() <= 80),
            "{f}"
        );
    }
    assert!(
        frames.len() < 2 || frames.iter().skip(1).any(|f| f.starts_with('\r')),
        "an unchanged title is not sent again"
    );
    assert!(last.contains("# system call duration (sys_enter -> sys_exit), us"), "{last}");
    assert_same_state(&before, &snapshot(&root));
}

/// The tracepoint modes on every board's kernel (5.10, 6.1, 6.1-rt, 6.12,
/// 16 KiB pages; aarch64, armv7, x86_64): `tr-lat MODE -T COPY -r` of the
/// `lat_tracepoints` fixture (cross/qemu/guest/record-fixtures: sleeps
/// woken by their timers, forks, system calls) equals the kernel's text of
/// the same buffer, pair by pair.
#[test]
fn tracepoint_modes_of_every_board_equal_the_kernels_text() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut boards = 0;
    for b in std::fs::read_dir(&root).unwrap().flatten() {
        let dir = b.path().join("lat_tracepoints");
        let Ok(trace) = std::fs::read_to_string(dir.join("trace")) else { continue };
        let d = dir.to_str().unwrap();
        for mode in ["wakeup", "irq", "syscall"] {
            let n = compare_with_text(
                &format!("{}: {mode}", b.file_name().to_string_lossy()),
                &trace,
                &["-T", d, mode, "-r", "--json", "--samples", "--ns"],
            );
            eprintln!("{d}: {mode}: {n} latencies equal the kernel's text");
        }
        // irq's two tables: one the kernel's text has no pair for is left
        // out of the output, and stderr says so; the other is there.
        let (pairs, _) = text_pairs(&trace);
        let o = lat(&["-T", d, "irq", "-r"]);
        assert!(o.status.success(), "{d}: {}", stderr(&o));
        for (table, title, says) in [
            (
                "irq",
                "# hard IRQ handler duration",
                "no hard IRQ handler (irq_handler_entry -> exit) ended in the window",
            ),
            ("softirq", "# softirq duration", "no softirq (softirq_entry -> exit) ended in the window"),
        ] {
            let has = pairs.keys().any(|p| p.0 == table);
            assert_eq!(stdout(&o).contains(title), has, "{d}: {table} table\n{}", stdout(&o));
            assert_eq!(stderr(&o).contains(says), !has, "{d}: {table} note\n{}", stderr(&o));
        }
        boards += 1;
    }
    assert!(boards >= 10, "only {boards} boards have a lat_tracepoints fixture (make qemu-fixtures)");
}

/// `syscall` names its rows and counts failures, where the kernel has the
/// per-call events: the same calls and errors as `strace -f -c` of the same
/// command (issue 31).
#[test]
fn syscalls_are_named_and_failures_counted_as_strace_does() {
    let Some((_l, root, before)) = live_with_snapshot() else { return };
    if !root.join("events/syscalls/enable").exists() {
        return skip_absent("no syscalls:* events (CONFIG_FTRACE_SYSCALLS)");
    }
    let work = "ls /nonexistent 2>/dev/null; cat /proc/version >/dev/null; ls / >/dev/null; exit 0";
    let o = lat(&["syscall", "--json", "--", "sh", "-c", work]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let ours: Vec<(String, i64, i64)> = out
        .lines()
        .filter(|l| l.starts_with("{\"table\":\"syscall\""))
        .map(|l| (field(l, "name").unwrap().into(), num(l, "count"), num(l, "errors")))
        .collect();
    let sc = std::env::temp_dir().join(format!("trbox-strace-{}", std::process::id()));
    let st = Command::new("strace").args(["-f", "-c", "-o"]).arg(&sc).args(["sh", "-c", work]).status();
    let Ok(st) = st else { return skip_absent("no strace") };
    assert!(st.success());
    let text = std::fs::read_to_string(&sc).unwrap();
    let _ = std::fs::remove_file(&sc);
    // strace -c: `% time seconds usecs/call calls [errors] syscall`.
    let theirs: Vec<(String, i64, i64)> = text
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let calls = w.get(3)?.parse().ok()?;
            let (errors, name) = if w.len() == 6 { (w[4].parse().ok()?, w[5]) } else { (0, *w.get(4)?) };
            (name != "total").then(|| (name.to_string(), calls, errors))
        })
        .collect();
    // Calls whose number does not vary between two runs of the command.
    for name in ["access", "statfs", "ioctl", "openat", "newfstatat", "execve", "getdents64"] {
        let (a, b) = (ours.iter().find(|r| r.0 == name), theirs.iter().find(|r| r.0 == name));
        if b.is_none() {
            continue; // this libc does not make it
        }
        assert_eq!(a.map(|r| (r.1, r.2)), b.map(|r| (r.1, r.2)), "{name}: ours {ours:?}\nstrace's {text}");
    }
    assert!(ours.iter().any(|r| r.0 == "openat" && r.2 > 0), "failed opens counted: {ours:?}");
    assert_same_state(&before, &snapshot(&root));
}

/// `-r` reads the buffer out: the kernel has no read of the raw pages
/// that leaves them (trace_pipe_raw consumes; only the `trace` text does
/// not). --help says so, the run says so, and a second -r says that an
/// earlier read took the events, not "try a longer -t" (issue 39).
#[test]
fn read_says_it_consumes_the_buffer() {
    for (applet, what) in [("tr-lat", "the events out"), ("tr-graph", "the records out")] {
        let help = stdout(&run(&[applet, "--help"]));
        assert!(help.contains(what) && !help.contains("changing nothing"), "{applet}: {help}");
    }
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let mut g = Guard::new(&root);
    assert!(g.set("tracing_on", "0"));
    std::fs::write(root.join("trace"), "").unwrap();
    for ev in ["sched/sched_waking", "sched/sched_wakeup", "sched/sched_switch"] {
        g.set(&format!("events/{ev}/enable"), "1");
    }
    assert!(g.set("tracing_on", "1"));
    // Wakeups to measure: a shell's sleeps, woken by their timers.
    assert!(Command::new("sh").args(["-c", "sleep 0.01; sleep 0.01"]).status().unwrap().success());
    assert!(g.set("tracing_on", "0"));
    let first = run(&["tr-lat", "wakeup", "-r"]);
    let second = run(&["tr-lat", "wakeup", "-r"]);
    let graph = run(&["tr-graph", "-r"]);
    let tracer = std::fs::read_to_string(root.join("current_tracer")).unwrap().trim().to_string();
    drop(g);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert!(stdout(&first).contains("wakeup latency per task"), "{}", stdout(&first));
    let e = stderr(&first);
    assert!(
        e.starts_with("tr-lat: -r took the buffer's ") && e.contains(" events out of it (a raw read consumes)"),
        "{e}"
    );
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    let e = stderr(&second);
    assert!(
        e.starts_with("tr-lat: no wakeup was measured in the buffer: it is empty, an earlier read took its "),
        "{e}"
    );
    assert!(!e.contains("longer -t"), "{e}");
    // tr-graph -r of another tracer's buffer: why there is no graph, no
    // lone header.
    if tracer != "function_graph" {
        assert_eq!(graph.status.code(), Some(2), "{}", stderr(&graph));
        assert!(graph.stdout.is_empty(), "{}", stdout(&graph));
        assert!(
            stderr(&graph)
                .starts_with(&format!("tr-graph: the buffer's tracer is {tracer}: it holds no function_graph calls\n")),
            "{}",
            stderr(&graph)
        );
    }
    assert_same_state(&before, &snapshot(&root));
}

/// `--all`: every task in the tables; without it, over 20 tasks are
/// grouped by comm (30 sleeps: one `sleep (N tasks)` row).
#[test]
fn all_lists_every_task() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let work = "for i in $(seq 30); do sleep 0.01 & done; wait";
    let rows = |all: bool| {
        let mut a = vec!["wakeup", "--", "sh", "-c", work];
        if all {
            a.insert(1, "--all");
        }
        let o = lat(&a);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let out = stdout(&o);
        let table = out.split("\n\n").next().unwrap_or_default().to_string();
        table.lines().filter(|l| l.starts_with("sleep")).map(String::from).collect::<Vec<_>>()
    };
    let grouped = rows(false);
    let each = rows(true);
    // Over 20 task rows are grouped by comm: one `sleep (N tasks)` row.
    // A loaded machine measures fewer of the short sleeps' wakeups, and
    // 20 rows or fewer are each shown.
    match grouped.as_slice() {
        [one] if one.starts_with("sleep (") => {}
        rows => assert!(rows.len() <= 20 && rows.iter().all(|l| l.starts_with("sleep-")), "{grouped:?}"),
    }
    // A row per task (30 on an idle machine; a loaded one measures fewer of
    // the short sleeps' wakeups, 19 seen).
    assert!(each.len() > 1 && each.iter().all(|l| l.starts_with("sleep-")), "{each:?}");
    assert_same_state(&before, &snapshot(&root));
}
