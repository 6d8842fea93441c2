//! `tr-on` status against the live tracefs and synthetic trees (SPEC §3, §4).

mod common;
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

#[test]
fn synthetic_tree_full_report() {
    let o = run(&["tr-on", "-T", "tests/data/tree-basic"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(field(&out, "tracer"), "nop  (available: blk function nop)");
    assert_eq!(field(&out, "events"), "1 enabled");
    assert!(out.contains("  sched:sched_switch\n    filter: prev_pid == 0\n    trigger: stacktrace:unlimited\n"), "{out}");
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
        eprintln!("SKIP: needs root to switch to an unprivileged user");
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
        eprintln!("SKIP: no unshare(1)");
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
