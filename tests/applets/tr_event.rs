//! tr-event against the live tracefs: enabling, filters, triggers, `-- CMD`
//! with forks, instances, bad input, and the state left exactly as found on
//! every way out (normal, error, SIGINT, SIGTERM, SIGHUP, closed pipe).

use super::common;
use common::*;
use std::process::{Command, Stdio};
use std::time::Duration;

fn live() -> Option<common::Live> {
    let root = live_tracefs()?;
    let l = TracefsLock::take();
    let before = snapshot(&root);
    Some((l, root, before))
}

fn ev(args: &[&str]) -> std::process::Output {
    let mut a = vec!["tr-event"];
    a.extend_from_slice(args);
    let o = run(&a);
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    o
}

#[test]
fn command_and_its_forks_are_traced_and_its_status_returned() {
    let Some((_l, root, before)) = live() else { return };
    let o = ev(&[
        "sched:sched_process_exec,sched:sched_process_exit",
        "--",
        "sh",
        "-c",
        // By their paths: busybox sh (the qemu boards') runs a bare `ls`
        // by exec'ing /proc/self/exe, and a bare `sleep` without a
        // process of its own.
        "/bin/ls / >/dev/null; /bin/sleep 0.1; exit 3",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("sched_process_exec: filename=/usr/bin/ls") || out.contains("filename=/bin/ls"), "{out}");
    assert!(out.contains("sched_process_exit: comm=sh"), "{out}");
    // Only the command's tasks: sh, ls, sleep.
    for l in out.lines().filter(|l| l.contains("sched_process_exec:")) {
        assert!(["sh", "ls", "sleep"].iter().any(|c| l.contains(&format!("/{c} "))), "{l}");
    }
    assert_same_state(&before, &snapshot(&root));
}

#[test]
fn triggers_and_filters_apply_and_are_removed() {
    let Some((_l, root, before)) = live() else { return };
    let o = ev(&["sched:sched_process_exec", "-f", "pid > 0", "-R", "stacktrace", "--", "true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("sched_process_exec:") && out.contains("<stack trace>"), "{out}");
    assert_same_state(&before, &snapshot(&root));
}

#[test]
fn rejected_filter_and_trigger_show_the_kernel_reason() {
    let Some((_l, root, before)) = live() else { return };
    let o = ev(&["sched:sched_switch", "-f", "prev_pid ==", "-t", "1"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("the kernel rejected 'prev_pid =='"), "{e}");
    if root.join("error_log").exists() {
        assert!(e.contains("Command: prev_pid ==") && e.contains('^'), "{e}");
    }
    let o = ev(&["sched:sched_switch", "-R", "nosuchtrigger", "-t", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("this kernel has no 'nosuchtrigger' trigger; its triggers: "), "{}", stderr(&o));
    assert_same_state(&before, &snapshot(&root));
}

#[test]
fn unknown_event_suggests_names() {
    let Some((_l, root, before)) = live() else { return };
    let o = ev(&["sched:sched_swich", "-t", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown event 'sched:sched_swich'"));
    assert!(stderr(&o).contains("did you mean: sched:sched_switch"), "{}", stderr(&o));
    let o = ev(&["-t", "1"]);
    assert_eq!(o.status.code(), Some(1));
    assert_same_state(&before, &snapshot(&root));
}

#[test]
fn list_and_format() {
    let Some(_root) = live_tracefs() else { return };
    let o = ev(&["--list", "sched:sched_sw*"]);
    assert!(stdout(&o).lines().any(|l| l == "sched:sched_switch"), "{}", stdout(&o));
    assert!(stdout(&o).lines().all(|l| l.starts_with("sched:sched_sw")));
    let o = ev(&["--format", "sched:sched_switch"]);
    assert!(stdout(&o).starts_with("name: sched_switch\n"));
    // -l takes what enabling takes: a system by its name, an event's name
    // or glob; a name nothing matches is said (it printed nothing, exit 0).
    let sched = stdout(&ev(&["--list", "sched"]));
    assert!(sched.lines().count() > 5 && sched.lines().all(|l| l.starts_with("sched:")), "{sched}");
    assert_eq!(stdout(&ev(&["--list", "sched_switch"])), "sched:sched_switch\n");
    assert!(stdout(&ev(&["--list", "sched_sw*"])).lines().any(|l| l == "sched:sched_switch"));
    let o = ev(&["--list", "sched_swich"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stdout(&o).is_empty());
    assert!(
        stderr(&o).contains("unknown event 'sched_swich'") && stderr(&o).contains("sched:sched_switch"),
        "{}",
        stderr(&o)
    );
    let o = ev(&["--list", "nosuch*"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown event 'nosuch*'"), "{}", stderr(&o));
}

/// `-l` finds the events by name, without a stat of each: it lists exactly
/// the event directories that have an `enable` file, as a stat of each
/// says.
#[test]
fn list_is_every_event_directory_with_an_enable_file() {
    let Some(root) = live_tracefs() else { return };
    let names = |d: &std::path::Path| -> Vec<String> {
        std::fs::read_dir(d).into_iter().flatten().flatten().map(|e| e.file_name().to_string_lossy().into()).collect()
    };
    let mut want = Vec::new();
    for sys in names(&root.join("events")) {
        for e in names(&root.join("events").join(&sys)) {
            let d = root.join("events").join(&sys).join(&e);
            if d.is_dir() && d.join("enable").exists() && !e.contains('.') {
                want.push(format!("{sys}:{e}"));
            }
        }
    }
    want.sort();
    let o = ev(&["--list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let got: Vec<&str> = out.lines().collect();
    assert!(want.len() > 100, "{} events", want.len());
    assert_eq!(got, want);
}

#[test]
fn instance_is_created_and_removed() {
    let Some((_l, root, before)) = live() else { return };
    let o = ev(&["-B", "trbox-test", "sched:sched_process_exec", "--", "true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("sched_process_exec: filename="), "{}", stdout(&o));
    assert!(!root.join("instances/trbox-test").exists());
    assert_same_state(&before, &snapshot(&root));
}

fn enabled(root: &std::path::Path, ev: &str) -> bool {
    std::fs::read_to_string(root.join(format!("events/{ev}/enable"))).is_ok_and(|s| s.trim() == "1")
}

/// Poll `f` for up to 30 s (tests run on loaded machines).
fn wait_until(f: impl Fn() -> bool) -> bool {
    let t = std::time::Instant::now();
    while t.elapsed() < Duration::from_secs(30) {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Stop a streaming run with `sig` once its window is open: status and
/// state.
fn stop_with(sig: i32) {
    let Some((_l, root, before)) = live() else { return };
    let (mut c, g) = start_in_window(
        &root,
        cmd(&trbox(), &["tr-event", "sched:sched_switch,sched:sched_wakeup", "-f", "common_pid >= 0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    );
    assert!(enabled(&root, "sched/sched_switch"), "the window is open, the event not on");
    c.signal(sig);
    let o = c.output();
    assert_eq!(o.status.code(), Some(0), "signal {sig}: {}", stderr(&o));
    drop(g);
    assert_same_state(&before, &snapshot(&root));
}

#[test]
fn sigint_restores() {
    stop_with(libc::SIGINT);
}

#[test]
fn sigterm_restores() {
    stop_with(libc::SIGTERM);
}

#[test]
fn sighup_restores() {
    stop_with(libc::SIGHUP);
}

#[test]
fn closed_pipe_restores() {
    let Some((_l, root, before)) = live() else { return };
    let sh = format!("{} tr-event sched:sched_switch | head -2 >/dev/null; echo ${{PIPESTATUS[0]}}", trbox().display());
    let o = Command::new("timeout").args(["30", "bash", "-c", &sh]).output().unwrap();
    assert_eq!(stdout(&o).trim(), "0", "{}", stderr(&o));
    assert_same_state(&before, &snapshot(&root));
}

#[test]
fn killed_command_returns_its_signal_status() {
    let Some((_l, root, before)) = live() else { return };
    let o = ev(&["sched:sched_process_exit", "--", "sh", "-c", "kill -9 $$"]);
    assert_eq!(o.status.code(), Some(137), "{}", stderr(&o));
    assert_same_state(&before, &snapshot(&root));
}

#[test]
fn second_run_is_refused_while_one_holds_the_buffer() {
    let Some((_l, root, before)) = live() else { return };
    let mut first = spawn(cmd(&trbox(), &["tr-event", "sched:sched_switch", "-t", "6"]).stdout(Stdio::null()));
    let pid = first.id();
    assert!(wait_until(|| holds_flock(pid) && enabled(&root, "sched/sched_switch")), "first run never started");
    let o = ev(&["sched:sched_wakeup", "-t", "1"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains(&format!("{} is in use by pid {pid} (tr-event)", root.display())), "{e}");
    assert!(e.contains("hint: wait for it with --wait"), "{e}");
    // --wait waits for the first run to end, then runs.
    let o = ev(&["sched:sched_wakeup", "-t", "0.2", "--wait"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(first.try_wait().unwrap().is_some_and(|s| s.success()), "--wait did not wait for the first run");
    assert_same_state(&before, &snapshot(&root));
}

/// The old lock was a file in /run/lock (else /run, else /tmp), opened
/// through symlinks and truncated: any local user could make root truncate
/// and overwrite any file (issue 12). A symlink planted at every path the
/// old lock used leaves its target alone, at the top level and with -B.
#[test]
fn lock_follows_no_symlink_planted_in_a_shared_directory() {
    let Some((_l, root, before)) = live() else { return };
    let d = TempDir::new("victim");
    let victim = d.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let inst = format!("trbox-lk{}", std::process::id());
    // At each of those directories this system has (a board may have /tmp
    // alone).
    let links = Planted::new(&victim, &["trbox.lock".to_string(), format!("trbox-{inst}.lock")]);
    assert!(!links.0.is_empty(), "nothing planted");
    for args in [&["sched:sched_switch", "-t", "0.2"][..], &["-B", &inst, "sched:sched_switch", "-t", "0.2"]] {
        let o = ev(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n", "{args:?} wrote through {:?}", links.0);
    }
    drop(links);
    assert_same_state(&before, &snapshot(&root));
}

/// Symlinks to `victim` at /run/lock, /run and /tmp under each name that
/// is free (one that is there may be another trbox's lock); removed on drop.
struct Planted(Vec<std::path::PathBuf>);

impl Planted {
    fn new(victim: &std::path::Path, names: &[String]) -> Planted {
        let mut v = Vec::new();
        for dir in ["/run/lock", "/run", "/tmp"] {
            for n in names {
                let p = std::path::Path::new(dir).join(n);
                if std::path::Path::new(dir).is_dir()
                    && p.symlink_metadata().is_err()
                    && std::os::unix::fs::symlink(victim, &p).is_ok()
                {
                    v.push(p);
                }
            }
        }
        Planted(v)
    }
}

impl Drop for Planted {
    fn drop(&mut self) {
        for p in &self.0 {
            if p.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink()) {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

#[test]
fn missing_command_and_empty_tracefs() {
    let Some((_l, root, before)) = live() else { return };
    let o = ev(&["sched:sched_switch", "--", "/nonexistent/cmd"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot run '/nonexistent/cmd'"), "{}", stderr(&o));
    assert_same_state(&before, &snapshot(&root));
    let d = TempDir::new("empty");
    let o = ev(&["-T", d.path().to_str().unwrap(), "sched:sched_switch"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not a tracefs tree"));
}

/// An event that the reader's own work makes (a read() of the raw pages is
/// a sys_enter_read) used to keep the decode loop busy for ever after -t:
/// what was ready grew as fast as it was read, and the stop was never
/// looked at. It must end, and leave tracefs as found.
#[test]
fn an_event_of_our_own_reads_still_stops() {
    let Some((_l, root, before)) = live() else { return };
    if !root.join("events/syscalls/sys_enter_read").is_dir() {
        skip_absent("this kernel has no syscall events");
        return;
    }
    let mut child = spawn(cmd(&trbox(), &["tr-event", "syscalls:sys_enter_read", "-t", "0.5"]).stdout(Stdio::null()));
    let ended = (0..300).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        matches!(child.try_wait(), Ok(Some(_)))
    });
    if !ended {
        drop(child);
        let _ = std::fs::write(root.join("events/syscalls/sys_enter_read/enable"), "0");
    }
    assert!(ended, "tr-event syscalls:sys_enter_read -t 0.5 still ran after 30 s");
    assert_same_state(&before, &snapshot(&root));
}

/// A shell that opens and reads a file itself, in a loop: openat and read
/// syscalls in its own pid (a -P target and a system-wide load).
fn reader_loop() -> Running {
    spawn(Command::new("sh").args(["-c", "while :; do read x </proc/version; sleep 0.02; done"]).stdout(Stdio::null()))
}

/// A window that recorded nothing says so on stderr (what, how long, what
/// to check); the output stays empty and the status 0.
#[test]
fn a_window_that_records_nothing_says_so() {
    let Some((_l, root, before)) = live() else { return };
    let o = ev(&["sched:sched_process_exec", "-f", "filename == \"/no/such/file\"", "-t", "0.3"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    let err = stderr(&o);
    assert!(err.contains("tr-event: no events were recorded in 0.3 s (sched:sched_process_exec)"), "{err}");
    assert!(err.contains("tr-event: hint: the filter (-f)"), "{err}");
    // Hints that fit the case (issue 29): a command's window is no -t to
    // lengthen; a system's dozens of events are counted, not listed.
    let o = ev(&["sched:sched_process_fork", "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("hint: did the command make them?"), "{}", stderr(&o));
    let o = ev(&["sched", "-f", "common_pid == 1 && common_pid == 2", "-t", "0.2"]);
    let first = stderr(&o).lines().next().unwrap_or_default().to_string();
    assert!(first.contains(" events of sched)") && first.len() <= 80, "{first}");
    let o = run(&["tr-on", "-t", "0.2"]);
    assert!(stderr(&o).contains("hint: nop records events only"), "{}", stderr(&o));
    assert_same_state(&before, &snapshot(&root));
}

/// System-wide (no -P, no command): the load's events are there, trbox's
/// own reads of the buffer are not (set_event_notrace_pid), which used to
/// fill the output with tr-event's own sys_enter_read lines.
#[test]
fn a_system_wide_run_leaves_its_own_work_out() {
    let Some((_l, root, before)) = live() else { return };
    if !root.join("events/syscalls/sys_enter_read").is_dir() || !root.join("set_event_notrace_pid").exists() {
        skip_absent("syscall events or set_event_notrace_pid");
        return;
    }
    let load = reader_loop();
    // This run's own tasks: the process and its threads (the buffers'
    // readers), all of them. Other tests may run a trbox at the same time;
    // their reads are rightly traced.
    let (o, mine) = with_threads(&["tr-event", "syscalls:sys_enter_read", "-t", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let load_tag = format!("-{} ", load.id());
    assert!(out.lines().any(|l| l.contains(&load_tag)), "no read of the load {load_tag}:\n{out}");
    let own: Vec<&str> =
        out.lines().filter(|l| mine.iter().any(|t| l.trim_start().starts_with(&format!("trbox-{t} ")))).collect();
    assert!(own.is_empty(), "trbox's own reads were traced (tasks {mine:?}):\n{}", own.join("\n"));
    drop(load);
    assert_same_state(&before, &snapshot(&root));
}

/// -P PID of another process: its events only, every line its own.
#[test]
fn dash_p_traces_another_process_only() {
    let Some((_l, root, before)) = live() else { return };
    if !root.join("events/syscalls/sys_enter_openat").is_dir() {
        skip_absent("syscall events");
        return;
    }
    let load = reader_loop();
    let other = reader_loop();
    let pid = load.id().to_string();
    let o = ev(&["syscalls:sys_enter_openat", "-P", &pid, "-t", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let tag = format!("-{pid} ");
    // Its loop opens /proc/version each turn: one turn in the second at
    // least (a loaded one-CPU TCG board made 3; how many is speed).
    assert!(out.lines().any(|l| l.contains("sys_openat(")), "{out}");
    assert!(out.lines().all(|l| l.contains(&tag)), "lines of other pids (want only {pid}):\n{out}");
    // tr-stack -e takes -P the same way.
    let s = applet("tr-stack", &["-e", "syscalls:sys_enter_openat", "-P", &pid, "-t", "1"]);
    assert_eq!(s.status.code(), Some(0), "{}", stderr(&s));
    assert!(stdout(&s).contains("syscalls:sys_enter_openat"), "{}", stdout(&s));
    // With a command too is a usage error.
    let both = ev(&["syscalls:sys_enter_openat", "-P", &pid, "--", "true"]);
    assert_eq!(both.status.code(), Some(1), "{}", stderr(&both));
    drop((load, other));
    assert_same_state(&before, &snapshot(&root));
}

/// A syscall storm followed as text: dd's 100k syscalls (two events each,
/// ~7 MB, over twice the default buffers) are written far faster than they
/// are rendered. The kernel's rule: every event written is either read or
/// counted in the page header that follows the loss, so each shows or is
/// in a `[LOST N EVENTS]` line. How many are lost depends on the machine's
/// speed (the live buffers are read ahead, sys::prefetch: none here, none
/// on a quiet board; a loaded qemu board loses some): `make bench`'s
/// streaming part measures it, this test what tr-event makes of it.
#[test]
fn a_syscall_storm_is_followed_every_event_shown_or_counted_lost() {
    let Some((_l, root, before)) = live() else { return };
    if !root.join("events/syscalls/sys_enter_read").is_dir() {
        skip_absent("syscall events");
        return;
    }
    let o = ev(&[
        "syscalls:sys_enter_read,syscalls:sys_exit_read,syscalls:sys_enter_write,syscalls:sys_exit_write",
        "--",
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=1",
        "count=50k",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let n = |what: &str| out.lines().filter(|l| l.contains(what)).count();
    let shown = [n("sys_read("), n("sys_write("), n("sys_read ->"), n("sys_write ->")];
    // "CPU:N [LOST 53072 EVENTS]", or "[LOST EVENTS]" where the kernel
    // could not count them.
    let losses: Vec<&str> = out.lines().filter(|l| l.contains("[LOST")).collect();
    let counted: Option<u64> = losses
        .iter()
        .map(|l| l.split("[LOST ").nth(1).and_then(|r| r.strip_suffix(" EVENTS]")).and_then(|n| n.parse::<u64>().ok()))
        .sum();
    let what = format!("shown {shown:?}, losses {} (e.g. {:?})", losses.len(), losses.first());
    if losses.is_empty() {
        // 50k one-byte reads and writes, plus dd's own few.
        assert!(shown.iter().all(|&k| k >= 50 * 1024), "{what}");
    } else if let Some(lost) = counted {
        // Every event of the four dd wrote for each byte: shown or counted.
        assert!(shown.iter().sum::<usize>() as u64 + lost >= 4 * 50 * 1024, "{what}");
    }
    assert_same_state(&before, &snapshot(&root));
}

/// The command's trace starts at its exec of the program (issue 26): the
/// program is found in PATH before the fork, so no failed `execve` per
/// directory searched comes first, and nothing of trbox's hold on the
/// child (a read's return) comes before the exec.
#[test]
fn a_command_is_traced_from_its_exec() {
    let Some((_l, root, before)) = live() else { return };
    if !root.join("events/syscalls/sys_enter_execve").exists() {
        return skip_absent("no syscalls:sys_enter_execve event");
    }
    // Four directories that do not hold `true` before one that does.
    let dirs = TempDir::new("path");
    let path = format!("{0}/a:{0}/b:/nonexistent:/usr/local/sbin:/usr/bin:/bin", dirs.path().display());
    let o = cmd(&trbox(), &["tr-event", "syscalls", "--", "true"]).env("PATH", &path).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().filter(|l| l.contains(": sys_")).collect();
    let execs: Vec<&&str> = lines.iter().filter(|l| l.contains("sys_execve(") || l.contains("sys_execve ->")).collect();
    assert_eq!(
        execs.len(),
        2,
        "one execve, entered and left:\n{}",
        execs.iter().map(|l| **l).collect::<Vec<_>>().join("\n")
    );
    assert!(
        lines.first().is_some_and(|l| l.contains(": sys_execve(")),
        "the first system call is not the exec: {:?}",
        lines.first()
    );
    assert!(execs[1].ends_with("-> 0x0"), "{}", execs[1]);
    assert_same_state(&before, &snapshot(&root));
}

/// System-wide, trbox's own threads (the main one, the per-CPU readers)
/// show up nowhere: no record they wrote, no switch to or from them, no
/// waking of them — although the kernel records a switch whose other side
/// is traced (issue 26).
#[test]
fn a_system_wide_run_leaves_out_its_own_threads() {
    let Some((_l, root, before)) = live() else { return };
    let (o, tids) =
        with_threads(&["tr-event", "sched:sched_switch,sched:sched_waking,sched:sched_wakeup", "-t", "1.5"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("sched_switch: "), "{}", stderr(&o));
    // Its threads as the writer (`trbox-TID [`) or as a task named in the
    // event (`pid=TID `, `prev_pid=TID `, `next_pid=TID `).
    let names = |l: &str, t: i64| {
        l.contains(&format!("-{t} ")) || l.contains(&format!("pid={t} ")) || l.ends_with(&format!("pid={t}"))
    };
    let me: Vec<&str> = out.lines().filter(|l| tids.iter().any(|&t| names(l, t))).take(5).collect();
    assert!(me.is_empty(), "trbox ({tids:?}) in its own trace:\n{}", me.join("\n"));
    assert_same_state(&before, &snapshot(&root));
}

/// A stack record goes with the event before it on its CPU: system-wide,
/// the switches of trbox's own threads are left out, and their stacks
/// (`-R stacktrace`) with them — the aarch64:6.12-16k board printed
/// `<stack trace>` blocks with no switch before them.
#[test]
fn a_left_out_event_takes_its_stack_with_it() {
    let Some((_l, root, before)) = live() else { return };
    // Switches of tasks other than trbox's: on an idle one-CPU board
    // trbox's own are all there are.
    let _load = reader_loop();
    let o = ev(&["sched:sched_switch", "-R", "stacktrace", "-t", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let heads: Vec<&str> = out.lines().filter(|l| !l.starts_with(" =>")).collect();
    assert!(heads.iter().any(|l| l.contains("<stack trace>")), "{out}");
    // The line before a stack on its CPU (`[001]`) is the switch it is of.
    let cpu = |l: &str| l.split_once(" [").and_then(|(_, r)| r.get(..3)).map(String::from);
    let mut last: std::collections::BTreeMap<String, &str> = Default::default();
    for l in &heads {
        let Some(c) = cpu(l) else { continue };
        if l.contains("<stack trace>") {
            let prev = last.get(&c).copied().unwrap_or_default();
            assert!(prev.contains(": sched_switch: "), "a stack without its event:\n{prev}\n{l}");
        }
        last.insert(c, l);
    }
    assert_same_state(&before, &snapshot(&root));
}

/// `tr-event --boot`: trace_event= (a bare system becomes SYS:* where the
/// tree tells), the trigger on the command line, the filter in bootconfig.
#[test]
fn boot_prints_the_event_command_line() {
    let tree = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tree-basic");
    let t = tree.to_str().unwrap();
    let o =
        run(&["tr-event", "-T", t, "--boot", "sched:sched_switch,sched", "-f", "prev_pid != 0", "-R", "stacktrace"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(
        out.lines().nth(1),
        Some("trace_event=sched:sched_switch,sched:* trace_trigger=sched_switch.stacktrace")
    );
    assert!(out.contains("\nftrace.event.sched.sched_switch.filter = \"prev_pid != 0\"\n"), "{out}");
    let o = run(&["tr-event", "--boot", "-B", "foo", "irq:irq_handler_entry"]);
    assert_eq!(stdout(&o).lines().nth(1), Some("trace_instance=foo,irq:irq_handler_entry"));
    // --persist: the instance on memory kept across a warm reboot (6.12+),
    // only with --boot and -B.
    let o = run(&["tr-event", "--boot", "-B", "boot_mapped", "--persist", "12", "sched:sched_switch"]);
    assert_eq!(
        stdout(&o).lines().nth(1),
        Some("reserve_mem=12M:4096:trbox trace_instance=boot_mapped@trbox,sched:sched_switch")
    );
    assert!(stdout(&o).contains("# a persistent instance (reserve_mem=, NAME@LABEL): 6.12+\n"), "{}", stdout(&o));
    for (args, why) in [
        (&["--boot", "--persist", "12", "sched:sched_switch"][..], "give -B NAME"),
        (&["-B", "b", "--persist", "12", "sched:sched_switch"][..], "--persist goes with --boot"),
        (&["--boot", "-B", "b", "--persist", "0", "sched:sched_switch"][..], "above 0"),
    ] {
        let o = run(&[&["tr-event"][..], args].concat());
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(why), "{args:?}: {}", stderr(&o));
    }
}

/// A run killed outright while its `-- CMD` is still held before its exec
/// (here while it enables the events) takes the command with it: left
/// stopped, the command would hold the run's stderr open and stay for good
/// in a process group that no job control ends (the test's own, as a
/// script's). The kernel kills it (PR_SET_PDEATHSIG), and the guard puts
/// back what the run had set, the command's pid filter too (noted before
/// it is written: the kill comes right after it).
#[test]
fn a_held_command_dies_with_its_killed_run() {
    let Some((_l, root, before)) = live() else { return };
    let events = if root.join("events/syscalls").is_dir() { "syscalls:*" } else { "sched:*" };
    let mut run =
        spawn(cmd(&trbox(), &["tr-event", events, "--", "true"]).stdout(Stdio::null()).stderr(Stdio::piped()));
    let me = run.id();
    // /proc/PID/stat past the comm: `STATE PPID …`.
    let stat = |pid: &str| {
        let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        Some(s.rsplit_once(") ")?.1.to_string())
    };
    // A child of the run that is stopped: the command, held (the guard
    // sleeps in a read).
    let stopped = |pid: &str| stat(pid).is_some_and(|s| s.starts_with(['T', 't']));
    // (Where the kernel has no `children` file, /proc searched by ppid.)
    let children = || {
        std::fs::read_to_string(format!("/proc/{me}/task/{me}/children")).unwrap_or_else(|_| {
            let ppid = |p: &str| stat(p)?.split(' ').nth(1)?.parse::<u32>().ok();
            let procs = std::fs::read_dir("/proc").into_iter().flatten().flatten();
            procs
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|p| ppid(p) == Some(me))
                .collect::<Vec<_>>()
                .join(" ")
        })
    };
    let t = std::time::Instant::now();
    let held = loop {
        if let Some(p) = children().split_whitespace().find(|p| stopped(p)) {
            break p.to_string();
        }
        assert!(
            t.elapsed() < Duration::from_secs(30) && matches!(run.try_wait(), Ok(None)),
            "no held command seen (/proc/PID/task/PID/children: {})",
            children()
        );
    };
    run.signal(libc::SIGKILL);
    // stderr ends when the guard and the command are gone; bounded, so
    // that a command left stopped fails the test rather than hanging it.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(run.output()));
    let o = rx.recv_timeout(Duration::from_secs(60)).expect("the run's stderr stayed open: its command is held still");
    assert!(stderr(&o).contains("its guard put tracefs back"), "{}", stderr(&o));
    // Its stderr closes in its exit, a moment before it is a zombie.
    let gone = || stat(&held).is_none_or(|s| s.starts_with(['Z', 'X']));
    let t = std::time::Instant::now();
    while !gone() && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(gone(), "the held command {held} is still there: {:?}", stat(&held));
    assert_same_state(&before, &snapshot(&root));
}
