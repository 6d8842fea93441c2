//! tr-event with dynamic probes against the live tracefs: uprobes by symbol
//! (PIE and non-PIE, entry with an argument and return with the value),
//! by file offset with a group/name, in an instance; the bad-input table
//! (no kprobes here or a rejected kprobe, missing file, missing symbol,
//! stripped binary, malformed argument, malformed definition). Every case
//! leaves tracefs exactly as it found it.

use super::common;
use common::cprog::{self, Progs, FUNC};
use common::*;
use std::path::Path;

fn live() -> Option<common::Live> {
    if !live_tracefs()?.join("uprobe_events").exists() {
        common::skip_absent("this kernel has no uprobe_events");
        return None;
    }
    live_with_snapshot()
}

fn ev(args: &[&str]) -> std::process::Output {
    applet("tr-event", args)
}

fn progs(d: &TempDir) -> Option<Progs> {
    cprog::build(d.path())
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The probed function's file offset in the PIE build (objdump's, else
/// trbox's own ELF reader).
fn func_offset(p: &Progs) -> u64 {
    cprog::objdump_offset(&p.pie, FUNC).unwrap_or_else(|| trbox::sys::elf::resolve(&p.pie, FUNC).unwrap().offset)
}

/// Nothing of ours left: no trbox probes in the probe lists.
fn no_probes_left(root: &Path) {
    for f in ["dynamic_events", "uprobe_events", "kprobe_events"] {
        let t = std::fs::read_to_string(root.join(f)).unwrap_or_default();
        assert!(!t.contains("trbox") && !t.contains("mygrp"), "{f}: {t}");
    }
    assert!(!root.join("events/trbox").exists() && !root.join("events/mygrp").exists());
}

#[test]
fn uprobe_by_symbol_shows_the_argument_and_return_value() {
    let Some((_l, root, before)) = live() else { return };
    let d = TempDir::new("uprobe");
    let Some(p) = progs(&d) else { return };
    for bin in [&p.pie, &p.nopie] {
        let b = s(bin);
        let o = ev(&[
            "--uprobe",
            &format!("{b}:{FUNC} arg=%di:s32"),
            "--uretprobe",
            &format!("{b}:{FUNC} ret=$retval:s32"),
            "--",
            b,
            "42",
        ]);
        let out = stdout(&o);
        assert!(o.status.success(), "{}\n{out}", stderr(&o));
        // trbox_probe_me(trbox_local_helper(42) + 1) = 42 * 3 + 1
        assert!(out.contains("127\n"), "{out}");
        let hit = out.lines().find(|l| l.contains(&format!(" {FUNC}: ("))).unwrap_or_else(|| panic!("no hit:\n{out}"));
        assert!(hit.ends_with(" arg=42"), "{hit}");
        let ret =
            out.lines().find(|l| l.contains(&format!(" {FUNC}_ret: ("))).unwrap_or_else(|| panic!("no return:\n{out}"));
        assert!(ret.contains(" <- 0x") && ret.ends_with(" ret=127"), "{ret}");
        if bin == &p.nopie {
            // Not relocated: the kernel's `(0x%lx)` is the symbol's address.
            let bytes = std::fs::read(bin).unwrap();
            let vaddr = trbox::elf::Elf::parse(&bytes).unwrap().resolve(FUNC).unwrap().vaddr;
            assert!(hit.contains(&format!(": ({vaddr:#x}) arg=42")), "{hit}");
        }
        no_probes_left(&root);
        assert_same_state(&before, &snapshot(&root));
    }
}

#[test]
fn uprobe_by_offset_with_its_own_name_and_in_an_instance() {
    let Some((_l, root, before)) = live() else { return };
    let d = TempDir::new("uprobe-off");
    let Some(p) = progs(&d) else { return };
    let b = s(&p.pie);
    let off = func_offset(&p);
    let o = ev(&["--uprobe", &format!("p:mygrp/hit {b}:{off:#x} x=%di:u32"), "-B", "trbox_probe_test", "--", b, "5"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{}\n{out}", stderr(&o));
    assert!(out.lines().any(|l| l.contains(" hit: (0x") && l.ends_with(" x=5")), "{out}");
    no_probes_left(&root);
    assert_same_state(&before, &snapshot(&root));
}

/// A probe name that is already there (another tool's probe) is refused
/// before anything is written: 5.7+ would add ours to theirs, and
/// removing ours at the end would remove theirs with it.
#[test]
fn a_probe_name_already_there_is_refused_and_theirs_kept() {
    let Some((_l, root, before)) = live() else { return };
    let d = TempDir::new("uprobe-dup");
    let Some(p) = progs(&d) else { return };
    let b = s(&p.pie);
    let off = func_offset(&p);
    let add = |line: &str| {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(root.join("uprobe_events"))
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()))
    };
    // Theirs elsewhere in the file (an exact same probe the kernel refuses
    // by itself), never enabled.
    add(&format!("p:mygrp/hit {b}:0x0")).unwrap();
    let o = ev(&["--uprobe", &format!("p:mygrp/hit {b}:{off:#x}"), "--", b, "5"]);
    let kept = root.join("events/mygrp/hit").exists();
    let probes = std::fs::read_to_string(root.join("uprobe_events")).unwrap_or_default();
    let _ = add("-:mygrp/hit");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("already there"), "{}", stderr(&o));
    assert!(kept, "their probe went with the run");
    assert_eq!(probes.lines().filter(|l| l.contains("mygrp/hit")).count(), 1, "{probes}");
    no_probes_left(&root);
    assert_same_state(&before, &snapshot(&root));
}

#[test]
fn kprobe_absent_or_rejected() {
    let Some((_l, root, before)) = live() else { return };
    let o = ev(&["--kprobe", "do_sys_openat2 dfd=%nosuchreg", "-t", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    if root.join("kprobe_events").exists() {
        assert!(e.contains("the kernel rejected 'p:trbox/do_sys_openat2 do_sys_openat2 dfd=%nosuchreg'"), "{e}");
        assert!(e.contains("Command:") && e.contains('^'), "{e}");
    } else {
        assert!(e.contains("this kernel has no kprobes: tracefs has no kprobe_events"), "{e}");
        assert!(e.contains("trace events (tr-event --list) still work, and so do uprobes (--uprobe)"), "{e}");
    }
    let o = ev(&["--kretprobe", "p:x do_sys_openat2", "-t", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("a return probe cannot start with 'p'"), "{}", stderr(&o));
    no_probes_left(&root);
    assert_same_state(&before, &snapshot(&root));
}

#[test]
fn uprobe_bad_input() {
    let Some((_l, root, before)) = live() else { return };
    let d = TempDir::new("uprobe-bad");
    let Some(p) = progs(&d) else { return };
    let (pie, stripped) = (s(&p.pie), s(&p.stripped));
    let missing = d.path().join("no-such-binary");
    // (definition, exit code, what stderr must say)
    let cases: Vec<(String, i32, Vec<String>)> = vec![
        (format!("{}:{FUNC}", missing.display()), 2, vec![format!("{}: no such file (ENOENT)", missing.display())]),
        (
            format!("{pie}:trbox_probe_mee"),
            2,
            vec!["no function 'trbox_probe_mee' in its symbol table".into(), format!("did you mean: {FUNC}")],
        ),
        (
            format!("{stripped}:{FUNC}"),
            2,
            vec![
                "stripped binary: no symbol table (.symtab)".into(),
                "use an unstripped copy of the same build".into(),
            ],
        ),
        (
            format!("{pie}:{FUNC} arg=%nosuchreg"),
            2,
            vec![
                "the kernel rejected".into(),
                "Invalid register name".into(),
                "Command: p:trbox/trbox_probe_me".into(),
                "^".into(),
            ],
        ),
        (
            format!("{pie}:{FUNC}+zz"),
            2,
            vec!["bad probe place (the +OFFSET must be a decimal or 0x hex number)".into()],
        ),
        ("no-colon-here".into(), 1, vec!["a uprobe place is PATH:SYMBOL[+OFFSET]".into()]),
        ("/etc/hostname:main".into(), 2, vec!["/etc/hostname: not an ELF file".into()]),
    ];
    for (def, code, says) in cases {
        let o = ev(&["--uprobe", &def, "-t", "1", "--", "true"]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(code), "{def}: {e}");
        for want in says {
            if want.contains("Command:") && !root.join("error_log").exists() {
                continue;
            }
            assert!(e.contains(&want), "{def}: wanted '{want}' in:\n{e}");
        }
        assert!(stdout(&o).is_empty(), "{def}: {}", stdout(&o));
        no_probes_left(&root);
        assert_same_state(&before, &snapshot(&root));
    }
}

#[test]
fn probes_are_removed_after_ctrl_c() {
    let Some((_l, root, before)) = live() else { return };
    let d = TempDir::new("uprobe-int");
    let Some(p) = progs(&d) else { return };
    let (mut c, g) = start_in_window(
        &root,
        cmd(&trbox(), &["tr-event", "--uprobe", &format!("{}:{FUNC}", s(&p.pie)), "sched:sched_process_exec"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped()),
    );
    let enable = root.join(format!("events/trbox/{FUNC}/enable"));
    assert_eq!(
        std::fs::read_to_string(&enable).unwrap_or_default().trim(),
        "1",
        "the window is open, the probe not on"
    );
    c.signal(libc::SIGINT);
    let o = c.output();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    no_probes_left(&root);
    drop(g);
    assert_same_state(&before, &snapshot(&root));
}

/// With `-- CMD` the pid filter is in place before any event is enabled:
/// tr-event's own setup (opening control files) is not recorded — on a
/// board a kprobe on do_sys_openat2 showed it.
#[test]
fn own_setup_is_not_recorded_with_a_command() {
    let Some((_l, root, before)) = live_with_snapshot() else { return };
    if !root.join("events/syscalls/sys_enter_openat").exists() {
        common::skip_absent("no syscall events");
        return;
    }
    let o = ev(&["syscalls:sys_enter_openat", "--", "cat", "/etc/hostname"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let hits: Vec<&str> = out.lines().filter(|l| l.contains("sys_openat(")).collect();
    assert!(!hits.is_empty(), "{out}");
    assert!(hits.iter().all(|l| l.trim_start().starts_with("cat-")), "{out}");
    assert_same_state(&before, &snapshot(&root));
}

/// `-f` is written for the SYS:EVENT events it is given with: a filter on
/// sched_process_exec's `filename` is not put on a probe (which has no such
/// field and would be refused); with probes alone, it is theirs.
#[test]
fn filter_goes_to_the_named_events_or_to_probes_alone() {
    let Some((_l, root, before)) = live() else { return };
    let d = TempDir::new("uprobe-filter");
    let Some(p) = progs(&d) else { return };
    let b = s(&p.pie);
    let probe = format!("{b}:{FUNC} arg=%di:s32");
    let hit = |out: &str| out.lines().any(|l| l.contains(&format!(" {FUNC}: (")) && l.ends_with(" arg=42"));
    let o = ev(&["sched:sched_process_exec", "--uprobe", &probe, "-f", "filename ~ \"*no-such-name*\"", "--", b, "42"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{}\n{out}", stderr(&o));
    assert!(hit(&out), "the probe was filtered:\n{out}");
    assert!(!out.contains("sched_process_exec:"), "the event was not filtered:\n{out}");
    for (filter, hits) in [("arg == 7", false), ("arg == 42", true)] {
        let o = ev(&["--uprobe", &probe, "-f", filter, "--", b, "42"]);
        let out = stdout(&o);
        assert!(o.status.success(), "{filter}: {}\n{out}", stderr(&o));
        assert_eq!(hit(&out), hits, "{filter}:\n{out}");
    }
    no_probes_left(&root);
    assert_same_state(&before, &snapshot(&root));
}

/// `--uprobe libc.so.6:exit`: the bare library name is found like the
/// dynamic loader finds it, and the probe fires in the command.
#[test]
fn uprobe_on_a_library_by_its_bare_name() {
    let Some((_l, root, before)) = live() else { return };
    if !cprog::have("ldd") {
        common::skip_tool("ldd", "no ldd to name a program's libc");
        return;
    }
    // A program linked with a shared libc: /bin/true, or bash where
    // /bin/true is static (busybox's, on the qemu boards).
    let libc_of = |prog: &str| {
        let o = std::process::Command::new("sh")
            .args(["-c", &format!("ldd {prog} | awk '/libc.so/ {{print $1}}'")])
            .output()
            .unwrap();
        Some(String::from_utf8_lossy(&o.stdout).trim().to_string()).filter(|n| !n.is_empty())
    };
    let Some((prog, name)) = ["/bin/true", "/bin/bash"].into_iter().find_map(|p| Some((p, libc_of(p)?))) else {
        common::skip("neither /bin/true nor /bin/bash is linked with a shared libc");
        return;
    };
    let comm = prog.rsplit('/').next().unwrap_or(prog);
    let cmd: &[&str] = if comm == "bash" { &[prog, "-c", "true"] } else { &[prog] };
    let o = ev(&[&["--uprobe", &format!("{name}:exit"), "--"][..], cmd].concat());
    let out = stdout(&o);
    assert!(o.status.success(), "{}\n{out}", stderr(&o));
    // The task's name comes from saved_cmdlines, a table of
    // saved_cmdlines_size entries (128 by default) that every task switched
    // while events are on takes a slot of: under a load that starts many
    // processes, the command's slot can be taken before the read-out, and
    // the kernel prints `<...>` (trace_find_cmdline). Either way the line
    // is the command's: `-- CMD` traces its pid only (set_event_pid).
    let fired = |l: &str| {
        let task = l.trim_start();
        (task.starts_with(&format!("{comm}-")) || task.starts_with("<...>-")) && l.contains(" exit: (0x")
    };
    assert!(out.lines().any(fired), "{out}");
    no_probes_left(&root);
    assert_same_state(&before, &snapshot(&root));
}

/// A run killed outright (SIGKILL: no handler, no destructor runs) leaves
/// nothing behind either: its guard disables the events, takes back the
/// filter, the trigger and the pid filter, and then removes the probe (an
/// enabled probe cannot be removed).
#[test]
fn sigkill_mid_run_leaves_tracefs_as_found() {
    use std::process::Stdio;
    let Some((_l, root, before)) = live() else { return };
    let d = TempDir::new("uprobe-kill");
    let Some(p) = progs(&d) else { return };
    let b = s(&p.pie);
    let probe = format!("{b}:{FUNC}");
    let args = [
        "tr-event",
        "--uprobe",
        &probe,
        "sched:sched_switch",
        "-f",
        "prev_pid != 0",
        "-R",
        "stacktrace",
        "--",
        "sh",
        "-c",
        // Not holding stderr: its end is the guard's (below).
        "exec sleep 10 >/dev/null 2>&1",
    ];
    let (mut c, g) = start_in_window(&root, cmd(&trbox(), &args).stdout(Stdio::null()).stderr(Stdio::piped()));
    // Once the command runs (the window opens before it is released: a
    // command still held would keep the run's stderr open, and the output
    // below would wait for it).
    let t = std::time::Instant::now();
    let runs = || {
        let pids = std::fs::read_to_string(root.join("set_event_pid")).unwrap_or_default();
        pids.lines().any(|p| std::fs::read_to_string(format!("/proc/{}/comm", p.trim())).is_ok_and(|c| c == "sleep\n"))
    };
    while !runs() && t.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    c.signal(libc::SIGKILL);
    // stderr's end is the guard's too: it is done then.
    let o = c.output();
    drop(g);
    assert!(stderr(&o).contains("its guard put tracefs back"), "{}", stderr(&o));
    no_probes_left(&root);
    assert_same_state(&before, &snapshot(&root));
}
