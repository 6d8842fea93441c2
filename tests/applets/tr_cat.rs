//! tr-cat: options, filters, JSON, follow mode and clean exits.

use super::common;
use common::*;
use std::process::{Command, Stdio};

const FIX: &str = "tests/fixtures/aarch64/events";

fn lines(args: &[&str]) -> Vec<String> {
    let o = run(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    stdout(&o).lines().map(String::from).collect()
}

#[test]
fn filters_select_by_event_cpu_pid_and_comm() {
    let all = lines(&["tr-cat", "--raw", "-T", FIX]);
    assert!(all.len() > 100);
    let sw = lines(&["tr-cat", "--raw", "-T", FIX, "-e", "sched:sched_switch"]);
    assert_eq!(sw.len(), all.iter().filter(|l| l.contains(": sched_switch: ")).count());
    assert!(!sw.is_empty());
    let globbed = lines(&["tr-cat", "--raw", "-T", FIX, "-e", "sched:*", "-e", "irq_handler_entry"]);
    assert!(globbed.iter().all(|l| l.contains(": sched_") || l.contains(": irq_handler_entry: ")));
    assert!(globbed.len() > sw.len());
    let cpu1 = lines(&["tr-cat", "--raw", "-T", FIX, "--cpus", "1"]);
    assert!(!cpu1.is_empty() && cpu1.iter().all(|l| l.contains("[001]")), "{cpu1:?}");
    let pid = lines(&["tr-cat", "--raw", "-T", FIX, "--pid", "0"]);
    assert!(!pid.is_empty() && pid.iter().all(|l| l.contains("<idle>-0 ")));
    let comm = lines(&["tr-cat", "--raw", "-T", FIX, "--comm", "<idle>"]);
    assert_eq!(comm, pid);
    // --comm takes a glob (issue 29): every line of a task whose comm
    // starts with "kworker/" (`kworker/0:1-42 ` before the pid).
    let kw = lines(&["tr-cat", "--raw", "-T", FIX, "--comm", "kworker/*"]);
    let want: Vec<&String> = all.iter().filter(|l| l.trim_start().starts_with("kworker/")).collect();
    assert!(!want.is_empty() && kw.iter().collect::<Vec<_>>() == want, "{kw:?}");
    let o = run(&["tr-cat", "--raw", "-T", FIX, "--cpus", "x"]);
    assert_eq!(o.status.code(), Some(1));
}

/// `-e` on a trace.dat (two buffers) keeps exactly the lines of the events
/// its globs name, by SYS:NAME or by name, with --comm too and on any
/// number of threads; a filter that keeps nothing says so.
#[test]
fn event_filters_on_a_file_keep_exactly_the_named_events() {
    let f = "tests/data/tracedat/v6-inst.dat";
    let all = lines(&["tr-cat", f]);
    let of = |ev: &str| -> Vec<String> { all.iter().filter(|l| l.contains(&format!(": {ev}: "))).cloned().collect() };
    let (wakeups, switches) = (of("sched_wakeup"), of("sched_switch"));
    assert!(!wakeups.is_empty() && !switches.is_empty() && wakeups.len() + switches.len() == all.len());
    assert_eq!(lines(&["tr-cat", "-e", "sched:sched_wakeup", f]), wakeups);
    assert_eq!(lines(&["tr-cat", "-e", "sched_sw*", "-j", "1", f]), switches);
    assert_eq!(lines(&["tr-cat", "-e", "sched_sw*", "-j", "4", f]), switches);
    // An -e naming no event of the file is said (issue 39), the others act.
    let o = run(&["tr-cat", "-e", "sch?d:*", "-e", "nosuch", f]);
    assert_eq!(stdout(&o).lines().collect::<Vec<_>>(), all);
    assert!(stderr(&o).starts_with(&format!("tr-cat: -e nosuch: {f} has no such event\n")), "{}", stderr(&o));
    let ls: Vec<String> =
        wakeups.iter().filter(|l| l.trim_start_matches("inst1:").trim_start().starts_with("ls-")).cloned().collect();
    assert!(!ls.is_empty());
    assert_eq!(lines(&["tr-cat", "-e", "sched:sched_wakeup", "--comm", "ls", f]), ls);
    // Filters that keep nothing: said. (An -e of no event of the file is
    // an error: an_event_a_file_lacks_gets_the_closest_names.)
    let o = run(&["tr-cat", "-e", "sched_wakeup", "--comm", "nobody", f]);
    assert!(o.status.success() && stdout(&o).is_empty(), "{}", stderr(&o));
    assert!(stderr(&o).contains("no event in tests/data/tracedat/v6-inst.dat passes the filters"), "{}", stderr(&o));
}

#[test]
fn json_has_one_object_per_event() {
    let text = lines(&["tr-cat", "--raw", "-T", FIX, "-e", "sched:*"]);
    let json = lines(&["tr-cat", "--raw", "-T", FIX, "-e", "sched:*", "--json"]);
    assert_eq!(text.len(), json.len());
    for j in &json {
        assert!(j.starts_with("{\"ts_ns\":") && j.ends_with("}}"), "{j}");
        assert!(j.contains("\"event\":\"sched:"), "{j}");
    }
    let sw = json.iter().find(|j| j.contains("\"event\":\"sched:sched_switch\"")).unwrap();
    assert!(sw.contains("\"prev_comm\":\"") && sw.contains("\"next_pid\":"), "{sw}");
}

#[test]
fn follow_without_raw_is_a_usage_error() {
    let o = run(&["tr-cat", "--follow"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--follow works with --raw"));
}

/// Live: stream with -f for a bounded time, end on SIGINT, end on a closed
/// pipe; tracefs is left as found.
#[test]
fn follow_streams_and_stops_cleanly() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let t = trbox::sys::Tracefs::at(&root).unwrap();
    {
        let mut st = trbox::sys::state::State::new(&t);
        st.set("events/sched/sched_switch/enable", "1").unwrap();
        let r = root.to_str().unwrap();
        let o = run(&["tr-cat", "--raw", "--follow", "-t", "1", "-T", r]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stdout(&o).contains(": sched_switch: "));
        // SIGINT ends the stream with status 0.
        let mut c = spawn(cmd(&trbox(), &["tr-cat", "--raw", "--follow", "-T", r]).stdout(Stdio::piped()));
        // Once a line came out it is streaming (and its handlers are in);
        // keep reading so it never blocks on a full pipe.
        let out = c.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            let mut r = std::io::BufReader::new(out);
            let mut first = String::new();
            let _ = r.read_line(&mut first);
            let _ = tx.send(());
            let _ = std::io::copy(&mut r, &mut std::io::sink());
        });
        rx.recv_timeout(std::time::Duration::from_secs(60)).expect("no output from tr-cat -f");
        c.signal(libc::SIGINT);
        assert_eq!(c.wait().unwrap().code(), Some(0));
        // `| head -1` ends it too (EPIPE), without a panic.
        let sh =
            format!("{} tr-cat --raw --follow -T {r} | head -1 >/dev/null; echo ${{PIPESTATUS[0]}}", trbox().display());
        let o = Command::new("timeout").args(["20", "bash", "-c", &sh]).output().unwrap();
        assert_eq!(stdout(&o).trim(), "0", "{}", stderr(&o));
        let _ = std::fs::write(root.join("trace"), "");
    }
    assert_same_state(&before, &snapshot(&root));
}

#[test]
fn plain_tr_cat_prints_the_trace_file() {
    let o = run(&["tr-cat", "-T", FIX]);
    assert!(o.status.success());
    assert_eq!(stdout(&o), std::fs::read_to_string(format!("{FIX}/trace")).unwrap());
}

/// `tr-cat --from-console` on a console log with the kernel's own
/// ftrace_dump_on_oops dump and no trbox recording (captured on the
/// aarch64 6.1 board: tests/data/console/README.md): the dump's lines
/// without the console prefix, the panic's report before it and the lines
/// after it, --json, --stats; a log
/// with neither is an error (exit 2).
#[test]
fn from_console_reads_the_kernels_oops_dump() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/console");
    let log = dir.join("oops-aarch64-6.1.log");
    let log = log.to_str().unwrap();
    let o = run(&["tr-cat", "--from-console", log]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].ends_with("oops-aarch64-6.1.log:62: the kernel's ftrace dump"), "{}", lines[0]);
    // The panic's report, printed before the kernel dumped: from the sysrq
    // key to the other CPUs' stop, then the dump.
    assert_eq!(
        lines[1..4],
        ["# before the dump:", "sysrq: Trigger a crash", "Kernel panic - not syncing: sysrq triggered crash"]
    );
    let at = lines.iter().position(|l| *l == "# the dump:").unwrap();
    assert_eq!((at, lines[at - 1]), (26, "SMP: stopping secondary CPUs"));
    let lines = &lines[at..];
    assert_eq!(lines[1], "CPU:0 [LOST 727 EVENTS]");
    assert_eq!(
        lines[2],
        "  <idle>-0         0dNs.. 1579698us : sched_wakeup: comm=rcu_sched pid=14 prio=120 target_cpu=000"
    );
    assert!(out.contains("\n   tr-on-122       1..... 1719985us : vfs_read <-ksys_read\n"), "{out}");
    assert!(out.ends_with(
        "# after the dump:\nKernel Offset: disabled\nCPU features: 0x044000,2023c080,0000421b\nMemory Limit: none\n"
    ));
    // Every line between the dashes, in order, and nothing else.
    let text = std::fs::read_to_string(log).unwrap();
    let dump: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.ends_with("Dumping ftrace buffer:"))
        .skip(2)
        .take_while(|l| !l.ends_with("---------------------------------"))
        .map(|l| &l[l.find("] ").unwrap() + 2..])
        .collect();
    assert_eq!(dump.len(), 980);
    assert_eq!(lines[1..981], dump[..]);

    let o = run(&["tr-cat", "--from-console", log, "--json"]);
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 978);
    assert_eq!(
        out.lines().next(),
        Some(
            "{\"ts_us\":1579698,\"cpu\":0,\"pid\":0,\"comm\":\"<idle>\",\"flags\":\"dNs..\",\
\"event\":\"sched_wakeup\",\"body\":\"comm=rcu_sched pid=14 prio=120 target_cpu=000\"}"
        )
    );
    let o = run(&["tr-cat", "--from-console", log, "--stats"]);
    let out = stdout(&o);
    assert!(out.contains("dumped at: Kernel panic - not syncing: sysrq triggered crash\n978 events, 0 other lines, 1579698us to 2043506us\n"), "{out}");
    assert!(out.contains("   1        578      13997\n"), "{out}");
    assert!(out.contains("       774  function\n       137  sched_switch\n        67  sched_wakeup\n"), "{out}");

    let d = TempDir::new("noconsole");
    let empty = d.path().join("plain.log");
    std::fs::write(&empty, "[    1.0] Booting Linux\nlogin:\n").unwrap();
    let o = run(&["tr-cat", "--from-console", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("neither a trbox recording"), "{}", stderr(&o));
}

/// The 7.2 board's dump (sid's 7.2.13 arm64, the same session as the 6.1
/// log): the same layout, both CPUs' LOST lines.
#[test]
fn from_console_reads_a_7_2_oops_dump() {
    let log = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/console/oops-aarch64-7.2.log");
    let o = run(&["tr-cat", "--from-console", log.to_str().unwrap(), "--stats"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("921 events, 0 other lines, 10679577us to 11951515us\n"), "{out}");
    assert!(out.contains("   0        640      17039\n   1        281       2549\n"), "{out}");
}

/// `-e` of no event in the file offers the closest names, as tr-event
/// does; it used to say only that no event passed the filter (issue 39).
#[test]
fn an_event_a_file_lacks_gets_the_closest_names() {
    let f = "tests/data/tracedat/v6-inst.dat";
    let o = run(&["tr-cat", f, "-e", "sched:sched_swtich"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "tr-cat: -e sched:sched_swtich: {f} has no such event\ntr-cat: hint: did you mean: sched:sched_switch\n"
        )
    );
    assert!(o.stdout.is_empty());
    // The same in a tracefs tree.
    let o = run(&["tr-cat", "--raw", "-T", FIX, "-e", "irq:irq_handler_entri"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("did you mean: irq:irq_handler_entry"), "{}", stderr(&o));
}

/// `--cpus` takes the kernel's CPU lists (`0-1,3`, as tr-lat's does: one
/// parser), and a CPU the file or tree has no buffer for is named with the
/// ones it has; it used to say only that no event was found (issue 39).
#[test]
fn cpus_take_a_cpu_list_and_name_a_cpu_not_there() {
    let f = "tests/data/tracedat/v6-inst.dat";
    let all = lines(&["tr-cat", f]);
    assert_eq!(lines(&["tr-cat", f, "--cpus", "0-1"]), all);
    assert_eq!(lines(&["tr-cat", f, "--cpus", "1,0"]), all);
    let one = lines(&["tr-cat", f, "--cpus", "0-1:1/2"]);
    assert!(!one.is_empty() && one.len() < all.len() && one.iter().all(|l| l.contains("[000]")), "{one:?}");
    for (cpus, missing) in [("5", 5), ("0-5", 2)] {
        let o = run(&["tr-cat", f, "--cpus", cpus]);
        assert_eq!(o.status.code(), Some(2), "{cpus}: {}", stderr(&o));
        let want = format!("tr-cat: {f}: no CPU {missing} (its CPUs: 0-1)\n");
        assert!(stderr(&o).starts_with(&want), "{cpus}: {}", stderr(&o));
    }
    let o = run(&["tr-cat", "--raw", "-T", FIX, "--cpus", "7"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(": no CPU 7 (its CPUs: 0-"), "{}", stderr(&o));
    for bad in ["x", "1-0", "", "0,,x"] {
        let o = run(&["tr-cat", f, "--cpus", bad]);
        assert_eq!(o.status.code(), Some(1), "{bad:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("--cpus"), "{}", stderr(&o));
    }
}
