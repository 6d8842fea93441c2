//! `tr-on` status against the live tracefs and synthetic trees (README: the
//! applet table and "tr-on: switch or run").

use super::common;
use common::*;
use std::path::Path;
use std::process::Command;

fn field<'a>(out: &'a str, label: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(label).filter(|r| r.starts_with(' ')).map(str::trim))
        .unwrap_or_else(|| panic!("no '{label}' line in:\n{out}"))
}

/// The report must agree with the files it read, and leave tracefs as found.
#[test]
fn live_status_matches_the_kernel_and_changes_nothing() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let d = TempDir::new("live");
    let link = d.path().join("tr-on");
    std::os::unix::fs::symlink(trbox(), &link).unwrap();
    let a = cmd(&link, &[]).output().unwrap();
    let b = run(&["tr-on"]);
    assert_eq!(a.status.code(), Some(0), "{}", stderr(&a));
    assert_eq!(b.status.code(), Some(0), "{}", stderr(&b));
    let out = stdout(&a);
    let rd = |f: &str| std::fs::read_to_string(root.join(f));
    assert!(field(&out, "tracer").starts_with(rd("current_tracer").unwrap().trim()), "{out}");
    let on = if rd("tracing_on").unwrap().trim() == "1" { "on" } else { "off" };
    assert_eq!(field(&out, "tracing"), on);
    let clock = rd("trace_clock").unwrap();
    assert_eq!(field(&out, "clock"), trbox::ctl::selected(&clock).unwrap());
    // Files this kernel refuses are marked, the rest still shown.
    match rd("set_ftrace_filter") {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            assert_eq!(field(&out, "functions"), "not permitted (EPERM)", "{out}")
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            assert_eq!(field(&out, "functions"), "not available on this kernel")
        }
        _ => {}
    }
    // One row per CPU directory, with the entries the kernel reports.
    let cpus = std::fs::read_dir(root.join("per_cpu")).unwrap().count();
    let rows: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("CPU"))
        .skip(1)
        .filter(|l| l.split_whitespace().next().is_some_and(|c| c.parse::<u32>().is_ok()))
        .collect();
    assert_eq!(rows.len(), cpus, "{out}");
    assert!(out.lines().all(|l| l.len() <= 80 || l.starts_with("  ")), "wider than 80 columns:\n{out}");
    assert_same_state(&before, &snapshot(&root));
}

/// Each kind of event state the kernel has, as the status shows it: an
/// event on, a disabled event with a filter, an event a trigger put in soft
/// mode. The status reads an event's enable and trigger files only when
/// set_event lists it (a trigger soft-enables its event: the kernel's
/// trace_event_trigger_enable_disable), so this holds only if the kernel
/// lists each of them as the status expects.
#[test]
fn live_status_shows_each_event_state() {
    let Some(root) = live_tracefs() else { return };
    let ev = |e: &str| root.join("events").join(e);
    let (on, filtered, triggered) = ("irq/irq_handler_entry", "sched/sched_switch", "sched/sched_wakeup");
    if [on, filtered, triggered].iter().any(|e| !ev(e).is_dir()) {
        return skip_absent("irq_handler_entry, sched_switch or sched_wakeup");
    }
    let triggers = ev(triggered).join("trigger").exists();
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let w = |e: &str, f: &str, v: &str| std::fs::write(ev(e).join(f), v).unwrap();
    w(on, "enable", "1");
    w(filtered, "filter", "prev_pid == 0");
    if triggers {
        // A filter no wakeup passes: a traceoff that fired would turn
        // tracing off for the tests after this one.
        w(triggered, "trigger", "traceoff if pid < 0");
    }
    let o = run(&["tr-on"]);
    w(on, "enable", "0");
    w(filtered, "filter", "0");
    if triggers {
        w(triggered, "trigger", "!traceoff");
    }
    assert_same_state(&before, &snapshot(&root));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("  irq:irq_handler_entry\n"), "{out}");
    assert!(out.contains("  sched:sched_switch (disabled)\n    filter: prev_pid == 0\n"), "{out}");
    if triggers {
        assert!(
            out.contains("  sched:sched_wakeup (soft mode)\n    trigger: traceoff:unlimited if pid < 0\n"),
            "{out}"
        );
    }
}

#[test]
fn synthetic_tree_full_report() {
    let o = run(&["tr-on", "-T", "tests/data/tree-basic"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(field(&out, "tracer"), "nop  (available: blk function nop)");
    assert_eq!(field(&out, "events"), "1 enabled");
    // A never-used buffer: what it will be once in use, as the kernel
    // allocates it (354 pages of 4080 bytes for 1408 KiB asked).
    assert!(field(&out, "buffer").starts_with("7 KiB per CPU (1410 once in use)"), "{out}");
    assert!(
        out.contains("  sched:sched_switch\n    filter: prev_pid == 0\n    trigger: stacktrace:unlimited\n"),
        "{out}"
    );
    assert!(out.contains("dynamic\n  p:kprobes/myprobe do_sys_openat2 dfd=%di\n"), "{out}");
    assert!(out.contains("   1        101          7          0          3  1408 KiB\n"), "{out}");
    assert!(out.contains("LOST EVENTS: 10 (overrun 7, commit overrun 0, dropped 3)"), "{out}");
}

#[test]
fn debugfs_layout_is_accepted() {
    let d = TempDir::new("dbgfs");
    copy_tree(Path::new("tests/data/tree-basic"), &d.path().join("tracing"));
    let o = run(&["tr-on", "-T", d.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(field(&stdout(&o), "tracefs").starts_with(d.path().join("tracing").to_str().unwrap()));
}

#[test]
fn old_kernel_with_tracing_enabled() {
    let d = TempDir::new("old");
    copy_tree(Path::new("tests/data/tree-basic"), d.path());
    std::fs::remove_file(d.path().join("tracing_on")).unwrap();
    std::fs::write(d.path().join("tracing_enabled"), "0\n").unwrap();
    // Old kernels: no dynamic_events, but kprobe_events.
    std::fs::remove_file(d.path().join("dynamic_events")).unwrap();
    std::fs::write(d.path().join("kprobe_events"), "p:kprobes/old do_fork\n").unwrap();
    std::fs::write(d.path().join("set_ftrace_pid"), "no pid\n").unwrap();
    let o = run(&["tr-on", "-T", d.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(field(&out, "tracing"), "off (tracing_enabled)");
    assert!(out.contains("dynamic\n  p:kprobes/old do_fork\n"), "{out}");
    assert_eq!(field(&out, "ftrace pid"), "all");
}

#[test]
fn minimal_tree_marks_everything_missing() {
    let d = TempDir::new("min");
    std::fs::create_dir(d.path().join("events")).unwrap();
    let o = run(&["tr-on", "-T", d.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for label in ["tracer", "tracing", "clock", "buffer", "functions", "dynamic"] {
        assert_eq!(field(&out, label), "not available on this kernel", "{label}:\n{out}");
    }
    assert_eq!(field(&out, "events"), "none");
    assert_eq!(field(&out, "per-CPU"), "no per_cpu directories");
}

/// Run `trbox ARGS` as the unprivileged user 65534 (nobody).
fn as_nobody(args: &[&str]) -> Option<std::process::Output> {
    if unsafe { libc::geteuid() } != 0 {
        common::skip("needs root to switch to an unprivileged user");
        return None;
    }
    // The test binary may sit below a root-only directory: run a copy.
    let d = TempDir::new("nobody");
    let exe = d.path().join("trbox");
    std::fs::copy(trbox(), &exe).unwrap();
    Command::new("chmod").args(["-R", "a+rX", d.path().to_str().unwrap()]).status().unwrap();
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", exe.to_str().unwrap()])
        .args(args)
        .env_remove("TRBOX_TRACEFS")
        .output()
        .expect("setpriv");
    Some(o)
}

#[test]
fn unprivileged_user_gets_one_clear_line() {
    let Some(_root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let Some(o) = as_nobody(&["tr-on"]) else { return };
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(!e.contains("panicked"), "{e}");
    assert!(e.starts_with("tr-on: /sys/kernel/tracing"), "{e}");
    assert!(e.contains("permission denied (EACCES)") && e.contains("hint: tracefs is readable by root only"), "{e}");
    assert_eq!(e.lines().count(), 2, "{e}");
}

#[test]
fn unreadable_files_in_a_tree_are_marked_not_permitted() {
    let d = TempDir::new("eacces");
    copy_tree(Path::new("tests/data/tree-basic"), d.path());
    Command::new("chmod").args(["-R", "a+rX", d.path().to_str().unwrap()]).status().unwrap();
    std::fs::write(d.path().join("set_ftrace_filter"), "").unwrap();
    for f in ["set_ftrace_filter", "trace_clock", "per_cpu/cpu1/stats"] {
        Command::new("chmod").args(["000", d.path().join(f).to_str().unwrap()]).status().unwrap();
    }
    let Some(o) = as_nobody(&["tr-on", "-T", d.path().to_str().unwrap()]) else { return };
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(field(&out, "functions"), "not permitted (EACCES)");
    assert_eq!(field(&out, "clock"), "not permitted (EACCES)");
    assert!(out.contains("   1 not permitted (EACCES)"), "{out}");
    assert_eq!(field(&out, "tracer"), "nop  (available: blk function nop)");
}

/// With nothing mounted, root's trbox mounts tracefs for the run and
/// unmounts it afterwards. Done in a private mount namespace so the rest of
/// the machine keeps its mounts.
#[test]
fn mounts_tracefs_when_nothing_is_mounted_and_cleans_up() {
    let Some(_root) = live_tracefs() else { return };
    if Command::new("unshare").arg("--help").output().is_err() {
        common::skip("no unshare(1)");
        return;
    }
    let script = format!(
        "umount -l /sys/kernel/tracing 2>/dev/null; umount -l /sys/kernel/debug 2>/dev/null; \
         grep -c -E ' - (tracefs|debugfs) ' /proc/self/mountinfo; {} tr-on; echo rc=$?; \
         grep -c -E ' - (tracefs|debugfs) ' /proc/self/mountinfo; true",
        trbox().display()
    );
    let o = Command::new("unshare").args(["-m", "--propagation", "private", "sh", "-c", &script]).output().unwrap();
    let out = stdout(&o);
    assert!(out.starts_with("0\n"), "could not clear mounts: {out} {}", stderr(&o));
    assert!(out.contains("(mounted by trbox for this run)"), "{out}\n{}", stderr(&o));
    assert!(out.contains("rc=0\n0\n"), "tracefs left mounted: {out}");
}

#[test]
fn missing_instance_names_the_existing_ones() {
    let d = TempDir::new("inst");
    copy_tree(Path::new("tests/data/tree-basic"), d.path());
    copy_tree(Path::new("tests/data/tree-basic"), &d.path().join("instances/foo"));
    let o = run(&["tr-on", "-T", d.path().to_str().unwrap(), "-B", "bar"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no instance 'bar' (existing: foo)"), "{}", stderr(&o));
    let o = run(&["tr-on", "-T", d.path().to_str().unwrap(), "-B", "foo"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(field(&stdout(&o), "tracefs").contains("instances/foo"));
    let o = run(&["tr-on", "-T", d.path().to_str().unwrap()]);
    assert_eq!(field(&stdout(&o), "instances"), "foo");
}

/// `-B ..` used to show the top level as if it were an instance (and a
/// writing applet would have worked on it); `-B` takes plain names only,
/// on every applet, as a usage error.
#[test]
fn instance_names_must_be_plain() {
    let d = TempDir::new("inst-name");
    copy_tree(Path::new("tests/data/tree-basic"), d.path());
    std::fs::create_dir_all(d.path().join("instances")).unwrap();
    let t = d.path().to_str().unwrap();
    // ('' is the top-level buffer, as for a trace.dat's unnamed one.)
    for name in ["..", ".", "../instances", "-k"] {
        for argv in [
            &["tr-on", "-T", t, "-B", name][..],
            &["tr-event", "-T", t, "-B", name, "sched:sched_switch"],
            &["tr-cat", "-T", t, "-B", name],
        ] {
            let o = run(argv);
            assert_eq!(o.status.code(), Some(1), "{argv:?}: {}", stderr(&o));
            assert!(
                stderr(&o).contains(&format!("'--instance' with value '{name}': not a plain instance name")),
                "{argv:?}: {}",
                stderr(&o)
            );
            assert!(o.stdout.is_empty(), "{argv:?}: {}", stdout(&o));
        }
    }
}

/// A copy of a tracefs tree (-T) is only read: a run or a switch on it
/// wrote its files as root, through any symlink in it, and changed nothing
/// the kernel does. Reading it (status, -l, --format) still works.
#[test]
fn a_copied_tree_is_only_read() {
    let d = TempDir::new("copy-ro");
    copy_tree(Path::new("tests/data/tree-basic"), &d.path().join("t"));
    let victim = d.path().join("victim");
    std::fs::write(&victim, "[local] global\n").unwrap();
    for f in ["trace_clock", "events/sched/sched_switch/enable"] {
        std::fs::remove_file(d.path().join("t").join(f)).unwrap();
        std::os::unix::fs::symlink(&victim, d.path().join("t").join(f)).unwrap();
    }
    let t = d.path().join("t");
    let t = t.to_str().unwrap();
    for argv in [
        &["tr-on", "-T", t, "-C", "global"][..],
        &["tr-on", "-T", t, "-C", "global", "-t", "0.1"],
        &["tr-on", "-T", t, "--reset"],
        &["tr-event", "-T", t, "sched:sched_switch", "-t", "0.1"],
        &["tr-event", "-T", t, "-B", "x", "sched:sched_switch", "-t", "0.1"],
    ] {
        let o = run(argv);
        assert_eq!(o.status.code(), Some(1), "{argv:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("{t}: a copy of a tracefs tree, not the kernel's: it is only read")),
            "{argv:?}: {}",
            stderr(&o)
        );
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "[local] global\n");
    assert!(!d.path().join("t/instances/x").exists());
    assert!(run(&["tr-on", "-T", t]).status.success());
    assert_eq!(stdout(&run(&["tr-event", "-T", t, "--list", "sched:*"])), "sched:sched_switch\nsched:sched_wakeup\n");
    assert!(stdout(&run(&["tr-event", "-T", t, "--format", "sched:sched_switch"])).starts_with("name: sched_switch"));
}

// ---- switching, running, resetting (live) ----

fn on(args: &[&str]) -> std::process::Output {
    let mut a = vec!["tr-on"];
    a.extend_from_slice(args);
    let o = run(&a);
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    o
}

fn rd(root: &Path, f: &str) -> String {
    std::fs::read_to_string(root.join(f)).unwrap_or_default().trim().to_string()
}

/// Put back files a switch left changed (a test must leave tracefs as found).
fn put_back(root: &Path, before: &[(String, String)], files: &[&str]) {
    for f in files {
        if let Some((_, v)) = before.iter().find(|(k, _)| k == f) {
            let v = trbox::ctl::writable_value(v).to_string();
            let _ = std::fs::write(root.join(f), if v.is_empty() { "\n".to_string() } else { v });
        }
    }
}

/// A switch leaves its settings; a failing step in it leaves nothing.
#[test]
fn switch_keeps_settings_and_a_failed_switch_keeps_none() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let o = on(&["-O", "sym-offset", "-O", "noirq-info", "-C", "global", "-P", "1", "-c", "--off"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let changed = [
        "options/sym-offset",
        "options/irq-info",
        "trace_clock",
        "set_event_pid",
        "set_ftrace_pid",
        "options/event-fork",
        "options/function-fork",
        "tracing_on",
    ];
    let got: Vec<String> =
        ["options/sym-offset", "options/irq-info", "set_event_pid", "options/event-fork", "tracing_on"]
            .iter()
            .map(|f| rd(&root, f))
            .collect();
    let clock = rd(&root, "trace_clock");
    let ftrace_pid = std::fs::read_to_string(root.join("set_ftrace_pid")).map(|v| v.trim().to_string());
    put_back(&root, &before, &changed);
    assert_eq!(got, ["1", "0", "1", "1", "0"]);
    assert_eq!(trbox::ctl::selected(&clock), Some("global"));
    // -P is the function tracers' pid too, where the kernel takes a write
    // to set_ftrace_pid (a kernel that refuses dynamic ftrace says EPERM
    // to the write, the list stays as it was, "no pid"; or to the read too,
    // and there is nothing to see).
    let was = before.iter().find(|(k, _)| k == "set_ftrace_pid").map(|(_, v)| v.trim());
    if let Ok(pid) = &ftrace_pid {
        assert!(pid == "1" || Some(pid.as_str()) == was, "set_ftrace_pid: {pid:?}, before {was:?}");
    }
    assert_same_state(&before, &snapshot(&root));

    // The unknown option comes after two good settings: both are undone.
    let o = on(&["-O", "sym-offset", "-C", "global", "-O", "nosuchoption"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown trace option 'nosuchoption'"), "{}", stderr(&o));
    // With nothing close, the hint lists the options by their names, not
    // as noOPT (issue 29).
    let e = stderr(&o);
    // (Words, wherever the list wraps: a kernel with more options puts
    // sym-offset at a line's end.)
    let words: Vec<&str> = e.split_whitespace().collect();
    assert!(
        e.contains("hint: options are: ") && words.contains(&"sym-offset") && !words.contains(&"nosym-offset"),
        "{e}"
    );
    assert!(e.lines().all(|l| l.len() <= 80), "{e}");
    // Function filters: EPERM here (a clear reason, what still works), or a
    // glob that matches nothing rejected elsewhere.
    let o = on(&["-O", "sym-offset", "-l", "no_such_function_xyz"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    if rd(&root, "set_ftrace_filter").is_empty() && std::fs::read(root.join("set_ftrace_filter")).is_err() {
        assert!(
            e.contains("the kernel refuses dynamic ftrace (writing set_ftrace_filter: operation not permitted)"),
            "{e}"
        );
        assert!(
            e.contains("hint: function tracers and function filters are unavailable")
                && e.contains("events (tr-event)"),
            "{e}"
        );
    } else {
        assert!(e.contains("rejected 'no_such_function_xyz'"), "{e}");
    }
    assert_same_state(&before, &snapshot(&root));
}

#[test]
fn unknown_names_get_the_closest() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let o = on(&["nopp"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    let avail = rd(&root, "available_tracers");
    assert!(e.contains(&format!("this kernel has no 'nopp' tracer; its tracers: {avail}")), "{e}");
    assert!(e.contains("hint: did you mean: nop"), "{e}");
    assert_eq!(e.lines().count(), 2, "{e}");
    let o = on(&["-C", "globl"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown clock 'globl'") && stderr(&o).contains("did you mean: global"),
        "{}",
        stderr(&o)
    );
    let o = on(&["-O", "nosym-ofset"]);
    assert!(stderr(&o).contains("did you mean: nosym-offset"), "{}", stderr(&o));
    // A kernel without function_graph: shown one (a mount namespace of
    // trbox's own), and this one where it really lacks it.
    let Some((_, o)) = without_tracers(&root, &["function_graph"], &["tr-on", "function_graph", "--", "true"]) else {
        return;
    };
    let mut runs = vec![o];
    if !avail.split_whitespace().any(|t| t == "function_graph") {
        runs.push(on(&["function_graph", "--", "true"]));
    }
    for o in runs {
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains("CONFIG_FUNCTION_GRAPH_TRACER"), "{}", stderr(&o));
    }
    assert_same_state(&before, &snapshot(&root));
}

#[test]
fn usage_errors() {
    for (args, msg) in [
        (&["-P", "1", "--", "true"][..], "-P and -- CMD"),
        (&["--reset", "--", "true"][..], "not with -- CMD or -t"),
        (&["--off", "-t", "1"][..], "not with -- CMD or -t"),
        (&["-b", "0"][..], "-b needs a size"),
        (&["-t", "0"][..], "-t needs"),
        (&["-k"][..], "nothing to switch or run"),
        (&["-b", "lots"][..], "-b"),
    ] {
        let o = on(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(msg), "{args:?}: {}", stderr(&o));
    }
}

/// `-- CMD`: the settings hold while it runs, the trace is printed, its
/// status is ours, everything is restored; with -k the settings stay.
#[test]
fn run_traces_the_command_then_restores() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let marker = root.join("trace_marker");
    let script = format!(
        "cat {0}/options/sym-offset {0}/set_event_pid; echo trbox-run-marker > {1}; exit 3",
        root.display(),
        marker.display()
    );
    let o = on(&["-O", "sym-offset", "-C", "global", "--", "sh", "-c", &script]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let out = stdout(&o);
    let mut l = out.lines();
    assert_eq!(l.next(), Some("1"), "{out}");
    assert!(l.next().is_some_and(|pid| pid.parse::<u32>().is_ok()), "{out}");
    assert!(out.contains("tracing_mark_write: trbox-run-marker"), "{out}");
    assert_same_state(&before, &snapshot(&root));

    // -k keeps what was asked (-O), never the command's pid filter: the
    // kernel takes the exited pid out of set_event_pid but keeps the empty
    // list filtering, which dropped every later event (issue 26).
    let o = on(&["-k", "-O", "sym-offset", "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let kept = rd(&root, "options/sym-offset");
    let later = applet("tr-event", &["sched:sched_switch", "-t", "0.5"]);
    put_back(&root, &before, &["options/sym-offset"]);
    assert_eq!(kept, "1");
    assert_same_state(&before, &snapshot(&root));
    assert!(stdout(&later).contains("sched_switch: "), "a run after -k -- CMD recorded nothing: {}", stderr(&later));
}

/// A pid list emptied by the kernel (its last pid exited, event-fork on)
/// reads empty but still filters out every task: --reset clears it all the
/// same, and so events are recorded again.
#[test]
fn reset_clears_a_pid_list_emptied_by_exits() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    // --reset also puts options at their defaults: compared when they were.
    let clean = rd(&root, "current_tracer") == "nop" && rd(&root, "events/enable") == "0";
    let mut g = Guard::new(&root);
    assert!(g.set("options/event-fork", "1"));
    let mut child = std::process::Command::new("sleep").arg("0.3").spawn().unwrap();
    std::fs::write(root.join("set_event_pid"), child.id().to_string()).unwrap();
    child.wait().unwrap();
    // Taken out when the task is freed (sched_process_free), after an RCU
    // grace period.
    let t = std::time::Instant::now();
    while !rd(&root, "set_event_pid").is_empty() && t.elapsed().as_secs() < 30 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(rd(&root, "set_event_pid"), "", "the kernel took the exited pid out");
    // The status cannot tell an emptied list from none: it says both.
    let status = stdout(&on(&[]));
    assert_eq!(field(&status, "event pid"), "all, or none if its pids exited (fork on): --reset", "{status}");
    let o = on(&["--reset"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let later = applet("tr-event", &["sched:sched_switch", "-t", "0.5"]);
    let _ = std::fs::write(root.join("set_event_pid"), "");
    drop(g);
    put_back(&root, &before, &["options/event-fork"]);
    assert!(stdout(&later).contains("sched_switch: "), "after --reset nothing was recorded: {}", stderr(&later));
    if clean {
        assert_same_state(&before, &snapshot(&root));
    }
}

/// --reset clears what other runs (or people) left: tracer, events,
/// filters, triggers, pid lists, probes, options, clock; tracing back on.
#[test]
fn reset_returns_to_a_clean_default() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let clean = rd(&root, "current_tracer") == "nop"
        && rd(&root, "events/enable") == "0"
        && rd(&root, "dynamic_events").is_empty();
    let w = |f: &str, v: &str| std::fs::write(root.join(f), v).map_err(|e| format!("{f}: {e}"));
    let mut dirt = vec![
        w("events/sched/sched_switch/enable", "1"),
        w("events/sched/sched_switch/filter", "prev_pid > 0"),
        w("events/sched/sched_wakeup/trigger", "stacktrace"),
        w("events/sched/sched_wakeup/trigger", "enable_event:sched:sched_waking"),
        w("set_event_pid", "1"),
        w("options/sym-offset", "1"),
        w("options/event-fork", "1"),
        w("trace_clock", "global"),
        w("tracing_on", "0"),
    ];
    if rd(&root, "available_tracers").split_whitespace().any(|t| t == "blk") {
        dirt.push(w("current_tracer", "blk"));
    }
    if root.join("uprobe_events").exists() {
        let f = std::fs::OpenOptions::new().append(true).open(root.join("uprobe_events"));
        dirt.push(
            f.and_then(|mut f| std::io::Write::write_all(&mut f, b"p:trbox_reset/probe /bin/true:0x10\n"))
                .map_err(|e| e.to_string()),
        );
    }
    let o = on(&["--reset"]);
    let after = snapshot(&root);
    assert!(dirt.iter().all(Result::is_ok), "{dirt:?}");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // EPERM files are named as skipped, on one line.
    if std::fs::read(root.join("set_ftrace_filter")).is_err() {
        assert!(
            stderr(&o).contains("--reset skipped what this kernel refuses (EPERM): ")
                && stderr(&o).contains("set_ftrace_filter"),
            "{}",
            stderr(&o)
        );
    }
    for (f, v) in [
        ("current_tracer", "nop"),
        ("tracing_on", "1"),
        ("events/enable", "0"),
        ("set_event_pid", ""),
        ("options/sym-offset", "0"),
        ("events/sched/sched_switch/filter", "none"),
        ("dynamic_events", ""),
    ] {
        assert_eq!(rd(&root, f), v, "{f}");
    }
    assert!(!rd(&root, "events/sched/sched_wakeup/trigger").lines().any(|l| !l.starts_with('#')));
    assert_eq!(trbox::ctl::selected(&rd(&root, "trace_clock")), Some("local"));
    if clean {
        assert_same_state(&before, &after);
    }
}

/// -B: a run creates the instance and removes it; a switch keeps it.
#[test]
fn instances_for_runs_and_switches() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let o = on(&[
        "-B",
        "trbox-tron",
        "-O",
        "sym-offset",
        "--",
        "sh",
        "-c",
        &format!("cat {}/instances/trbox-tron/options/sym-offset", root.display()),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("1\n"), "{}", stdout(&o));
    assert!(!root.join("instances/trbox-tron").exists());
    assert_same_state(&before, &snapshot(&root));
    let o = on(&["-B", "trbox-tron", "-C", "global"]);
    let clock = rd(&root, "instances/trbox-tron/trace_clock");
    let _ = std::fs::remove_dir(root.join("instances/trbox-tron"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(trbox::ctl::selected(&clock), Some("global"));
    assert_same_state(&before, &snapshot(&root));
}

/// `-O NAME` was looked up as the path options/NAME: `-O ../tracing_on`
/// or `-O no../../../../../tmp/x` wrote "1"/"0" (and truncated) whatever
/// file the path led to, and a switch left it so. Only the names listed in
/// options/ are options.
#[test]
fn option_names_are_not_paths() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let d = TempDir::new("opt-victim");
    let victim = d.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let up = format!("../../../../../../../..{}", victim.display());
    for o in [up.clone(), format!("no{up}"), "no../tracing_on".into(), "../options/sym-offset".into()] {
        let r = on(&["-O", &o]);
        assert_eq!(r.status.code(), Some(2), "-O {o}: {}", stderr(&r));
        assert!(stderr(&r).contains(&format!("unknown trace option '{o}'")), "{}", stderr(&r));
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_same_state(&before, &snapshot(&root));
}

/// A second run is refused naming the holder; --wait waits for it.
#[test]
fn second_run_names_the_holder_or_waits() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let mut first =
        spawn(cmd(&trbox(), &["tr-on", "-O", "sym-offset", "-t", "300"]).stdout(std::process::Stdio::null()));
    let t0 = std::time::Instant::now();
    while rd(&root, "options/sym-offset") != "1" && t0.elapsed().as_secs() < 30 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = on(&["-C", "global"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("in use by pid {} (tr-on)", first.id())), "{}", stderr(&o));
    assert!(stderr(&o).contains("hint: wait for it with --wait"), "{}", stderr(&o));
    let mut second = spawn(&mut cmd(&trbox(), &["tr-on", "--wait", "-O", "sym-addr", "--", "true"]));
    // Waiting for the lock (/proc/locks lists it as a waiter), and still
    // there while the first holds it.
    let t0 = std::time::Instant::now();
    while !waits_for_flock(second.id()) {
        assert!(t0.elapsed().as_secs() < 30, "the second run never waited for the lock");
        assert!(matches!(second.try_wait(), Ok(None)), "the second run did not wait: {}", stderr(&second.output()));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    first.signal(libc::SIGINT);
    let o = second.output();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(first.wait().unwrap().success());
    assert_same_state(&before, &snapshot(&root));
}

#[test]
fn unprivileged_switch_and_absent_tracefs() {
    let Some(_root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    if let Some(o) = as_nobody(&["tr-on", "-O", "sym-offset", "--", "true"]) {
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("permission denied (EACCES)") && e.contains("hint: tracefs is readable by root only"),
            "{e}"
        );
    }
    let d = TempDir::new("empty");
    let o = on(&["-T", d.path().to_str().unwrap(), "nop"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not a tracefs tree (no events/ directory)"), "{}", stderr(&o));
}

/// [`live_with_snapshot`] on a kernel with buffer_subbuf_size_kb (6.8+);
/// `None` (a skip) before.
fn live_with_subbuf() -> Option<common::Live> {
    let root = live_tracefs()?;
    if !root.join("buffer_subbuf_size_kb").exists() {
        skip_absent("no buffer_subbuf_size_kb (kernel before 6.8)");
        return None;
    }
    live_with_snapshot()
}

/// `-S KB` sets buffer_subbuf_size_kb (6.8+) for the command and puts it
/// back; `tr-on` shows it; a kernel without the file gets a usage error.
#[test]
fn subbuf_size_is_set_for_the_command_and_restored() {
    let Some((_l, root, before)) = live_with_subbuf() else { return };
    let was = rd(&root, "buffer_subbuf_size_kb");
    let want = if was == "8" { "16" } else { "8" };
    let f = root.join("buffer_subbuf_size_kb");
    let o = on(&["-S", want, "--", "cat", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), want);
    let exe = trbox();
    let o = on(&["-S", want, "--", exe.to_str().unwrap(), "tr-on"]);
    assert!(stdout(&o).contains(&format!(", {want} KiB sub-buffers")), "{}", stdout(&o));
    assert_eq!(rd(&root, "buffer_subbuf_size_kb"), was);
    assert_same_state(&before, &snapshot(&root));
}

/// `--boot` prints the command line and bootconfig for the options and
/// touches nothing (it does not even open tracefs); what has no boot-time
/// form is said in a line of its own.
#[test]
fn boot_prints_the_command_line_for_the_options() {
    let o = run(&["tr-on", "--boot", "function", "-l", "vfs_*", "-b", "1408", "-P", "1", "--dump-on-oops", "cpu"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "# kernel command line:");
    assert_eq!(lines[1], "ftrace=function trace_buf_size=1408K ftrace_filter=vfs_* ftrace_dump_on_oops=2");
    assert!(out.contains("\nftrace.tracer = \"function\"\n"), "{out}");
    assert!(out.contains("\nkernel.ftrace_dump_on_oops = \"2\"\n"), "{out}");
    assert!(out.contains("# -P: no boot-time form"), "{out}");
    assert!(out.lines().all(|l| l.len() <= 80), "{out}");
    let o = run(&["tr-on", "--boot", "-B", "foo", "--dump-on-oops", "all"]);
    assert_eq!(stdout(&o).lines().nth(1), Some("trace_instance=foo ftrace_dump_on_oops=0,foo"));
    // --persist: the instance's buffer on memory kept across a warm reboot.
    let o = run(&["tr-on", "--boot", "-B", "boot_mapped", "--persist", "12", "function"]);
    let out = stdout(&o);
    assert!(out.contains("reserve_mem=12M:4096:trbox trace_instance=boot_mapped@trbox"), "{out}");
    let o = run(&["tr-on", "--boot", "-t", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = run(&["tr-on", "--dump-on-oops", "some"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("all or cpu"), "{}", stderr(&o));
}

/// The sub-buffer size KiB that `-S kb` gives on this machine (the
/// kernel rounds up to a power-of-two number of pages: trace.c
/// `buffer_subbuf_size_write()`), found by writing it; and the data bytes
/// such a sub-buffer holds (less the header of events/header_page).
fn subbuf_data(root: &Path, kb: &str) -> (String, u64) {
    std::fs::write(root.join("buffer_subbuf_size_kb"), kb).unwrap();
    let sub = rd(root, "buffer_subbuf_size_kb");
    let header = String::from_utf8(read_whole(&root.join("events/header_page"))).unwrap();
    let h = trbox::format::HeaderPage::parse(&header).unwrap();
    (sub.clone(), sub.parse::<u64>().unwrap() * 1024 - u64::from(h.data_offset))
}

/// Put the sub-buffer size and the buffer size back as `before` had them
/// (the size after the sub-buffer: see `subbuf_goes_before_the_buffer_size`).
fn put_back_sizes(root: &Path, before: &[(String, String)]) {
    put_back(root, before, &["buffer_subbuf_size_kb", "buffer_size_kb"]);
}

/// `-S KB` alone is a switch like any other option: it was parsed and
/// ignored (the status was printed instead; issue 39).
#[test]
fn subbuf_alone_is_a_switch() {
    let Some((_l, root, before)) = live_with_subbuf() else { return };
    let was = rd(&root, "buffer_subbuf_size_kb");
    let want = (2 * was.parse::<u64>().unwrap()).to_string();
    let o = on(&["-S", &want]);
    let now = rd(&root, "buffer_subbuf_size_kb");
    put_back_sizes(&root, &before);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "a switch prints no status: {}", stdout(&o));
    assert_eq!(now, want);
    assert_same_state(&before, &snapshot(&root));
}

/// `-S` with `-b`: the kernel sizes a buffer in sub-buffers of the size in
/// place when buffer_size_kb is written (ring_buffer.c
/// `ring_buffer_resize()`: `DIV_ROUND_UP(size, data)` of them, at least 2,
/// read back as their data bytes in KiB), and a later sub-buffer change
/// keeps the data bytes but not the reading (`ring_buffer_subbuf_order_set()`;
/// trace.c updates no entries). So from a sub-buffer of two pages,
/// `-S <one page> -b 1410` left 1413 (8 KiB to 4 KiB; issue 39): the
/// sub-buffer goes first, and on restore first too.
#[test]
fn subbuf_goes_before_the_buffer_size() {
    let Some((_l, root, before)) = live_with_subbuf() else { return };
    let (small, data_small) = subbuf_data(&root, "1");
    let (big, data_big) = subbuf_data(&root, &(2 * small.parse::<u64>().unwrap()).to_string());
    // The start: big sub-buffers, 1410 KiB asked (it reads what they hold).
    std::fs::write(root.join("buffer_size_kb"), "1410").unwrap();
    let start = rd(&root, "buffer_size_kb");
    let f = |n: &str| root.join(n).display().to_string();
    let o = on(&["-S", &small, "-b", "1410", "--", "cat", &f("buffer_size_kb"), &f("buffer_subbuf_size_kb")]);
    let after = (rd(&root, "buffer_subbuf_size_kb"), rd(&root, "buffer_size_kb"));
    put_back_sizes(&root, &before);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(start, trbox::ctl::buffer_kb_for(1410, data_big).to_string());
    let want = trbox::ctl::buffer_kb_for(1410, data_small);
    assert_eq!(stdout(&o), format!("{want}\n{small}\n"), "with {small} KiB sub-buffers ({data_small} bytes of data)");
    // Restored: the big sub-buffers, and the size they had.
    assert_eq!(after, (big, start));
    assert_same_state(&before, &snapshot(&root));
}

/// The status names each trace option that differs from the kernel's
/// default (trace.c `TRACE_DEFAULT_FLAGS`, the tracers' own flags), the
/// fork options first: after `-O sym-offset` or `-c -k` nothing showed
/// (issue 39). A copy of a tree first, then the live one.
#[test]
fn status_shows_the_options_that_differ_from_the_defaults() {
    let d = TempDir::new("opts");
    copy_tree(Path::new("tests/data/tree-basic"), d.path());
    let inst = d.path().join("instances/i");
    copy_tree(Path::new("tests/data/tree-basic"), &inst);
    let set = |dir: &Path, opts: &[(&str, &str)]| {
        std::fs::create_dir_all(dir.join("options")).unwrap();
        for (name, v) in opts {
            std::fs::write(dir.join("options").join(name), format!("{v}\n")).unwrap();
        }
    };
    set(d.path(), &[("print-parent", "1"), ("sym-offset", "0"), ("overwrite", "1"), ("event-fork", "0")]);
    let t = d.path().to_str().unwrap();
    assert_eq!(field(&stdout(&on(&["-T", t])), "options"), "the kernel's defaults");
    set(d.path(), &[("print-parent", "0"), ("sym-offset", "1"), ("event-fork", "1")]);
    // An option trbox has no default for (a newer kernel's) is not shown.
    set(d.path(), &[("some-new-option", "1")]);
    assert_eq!(field(&stdout(&on(&["-T", t])), "options"), "event-fork noprint-parent sym-offset");
    // trace_printk_dest is on in the top buffer and off in a new instance
    // (trace.c ZEROED_TRACE_FLAGS).
    set(d.path(), &[("trace_printk_dest", "0")]);
    set(&inst, &[("trace_printk_dest", "0"), ("function-fork", "1"), ("hash-ptr", "0")]);
    let top = stdout(&on(&["-T", t]));
    assert_eq!(field(&top, "options"), "event-fork noprint-parent sym-offset notrace_printk_dest");
    assert_eq!(field(&stdout(&on(&["-T", t, "-B", "i"])), "options"), "function-fork nohash-ptr");

    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let o = on(&["-O", "sym-offset", "-c", "-k"]);
    let status = stdout(&on(&[]));
    put_back(&root, &before, &["options/sym-offset", "options/event-fork", "options/function-fork"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let shown = field(&status, "options");
    let words: Vec<&str> = shown.split_whitespace().collect();
    assert_eq!(words.first(), Some(&"event-fork"), "{status}");
    assert!(words.contains(&"sym-offset"), "{status}");
    assert_same_state(&before, &snapshot(&root));
}

/// `-n GLOB` fills set_ftrace_notrace for the run (or, where the kernel
/// refuses dynamic ftrace, says that it was refused writing it).
#[test]
fn notrace_sets_set_ftrace_notrace() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let f = root.join("set_ftrace_notrace");
    let o = on(&["-n", "vfs_read", "--", "cat", f.to_str().unwrap()]);
    if std::fs::read(&f).is_err_and(|e| e.raw_os_error() == Some(libc::EPERM)) {
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains("writing set_ftrace_notrace: operation not permitted"), "{}", stderr(&o));
    } else {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert_eq!(stdout(&o).lines().next(), Some("vfs_read"), "{}", stdout(&o));
    }
    assert_same_state(&before, &snapshot(&root));
}

/// `--json` with `-- CMD`: one JSON object per event.
#[test]
fn json_run_prints_one_object_per_event() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let m = root.join("trace_marker");
    let o = on(&["--json", "--", "sh", "-c", &format!("echo trbox-json-marker > {}", m.display())]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    // ftrace:print's buf[] (size 0) runs to the record's end: the text.
    let marker = |l: &str| l.contains(r#""event":"ftrace:print""#) && l.contains("trbox-json-marker");
    assert!(out.lines().any(marker), "{out}");
    assert!(out.lines().all(|l| l.starts_with('{') && l.ends_with('}')), "{out}");
    assert_same_state(&before, &snapshot(&root));
}

/// `-P PID` of no process: said at once, not after the run as "nothing
/// recorded, try a longer -t" (issue 39). pid_max itself is never a pid.
#[test]
fn a_pid_of_no_process_is_named() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let none = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap().trim().to_string();
    for argv in [
        &["tr-on", "-P", &none, "-t", "0.2"][..],
        &["tr-on", "-P", &none],
        &["tr-event", "sched:sched_switch", "-P", &none, "-t", "0.2"],
        &["tr-lat", "wakeup", "-P", &none, "-t", "0.2"],
    ] {
        let o = run(argv);
        assert_eq!(o.status.code(), Some(2), "{argv:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.starts_with(&format!("{}: -P {none}: no such process\n", argv[0])), "{argv:?}: {e}");
        assert!(!e.contains("longer -t"), "{e}");
    }
    assert_same_state(&before, &snapshot(&root));
}
