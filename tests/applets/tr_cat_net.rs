//! `tr-cat -N HOST:PORT` against the live tracefs, over loopback: to
//! Debian's `trace-cmd listen` and to `tr-cat --listen`, each file read
//! back (by tr-cat and trace-cmd report) with every event the sender's
//! summary counted and the traced command's own events; a listener that is
//! not there (exit 2, a clear error, tracefs as found); a connection that
//! drops mid-run (the sender stops with exit 2, tracefs as found, the
//! listener's file holds what arrived and reads).

use super::common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const EVENTS: &str = "sched:sched_switch,sched:sched_process_exec,sched:sched_process_exit";

/// A port nobody listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Wait until something accepts on `port`.
fn wait_listening(port: u16) {
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t.elapsed() < Duration::from_secs(10), "nothing listens on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The one `trace.*.dat` in `dir` (a listener writes it when the sender is
/// done; trace-cmd's after a pause of 2 s), once `done` holds of it.
fn received(dir: &Path, done: impl Fn(&Path) -> bool) -> PathBuf {
    let t = Instant::now();
    loop {
        let f = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).find(|p| {
            p.file_name().unwrap().to_string_lossy().starts_with("trace.") && p.extension().is_some_and(|x| x == "dat")
        });
        if let Some(f) = f.filter(|f| done(f)) {
            return f;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "no whole file from the listener in {}", dir.display());
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The event lines `tr-cat FILE` reads (None while it cannot read it).
fn events_in(f: &Path) -> Option<usize> {
    let o = run(&["tr-cat", f.to_str().unwrap()]);
    o.status.success().then(|| stdout(&o).lines().filter(|l| !l.contains("[LOST ")).count())
}

/// Event lines of `tr-cat FILE` and of `trace-cmd report FILE` (None when
/// trace-cmd is not installed).
fn read_back(f: &Path) -> (Vec<String>, Option<Vec<String>>) {
    let o = run(&["tr-cat", f.to_str().unwrap()]);
    assert!(o.status.success(), "tr-cat {}: {}", f.display(), stderr(&o));
    let ours: Vec<String> = stdout(&o).lines().filter(|l| !l.contains("[LOST ")).map(String::from).collect();
    (ours, trace_cmd_records(f))
}

/// The sched_process_exit lines whose task (`COMM-PID` before the CPU) is
/// not the one the event names (`comm=COMM pid=PID`): a task the run
/// started and the listener has no name for (`<...>-PID`).
fn unnamed_exits(lines: &[String]) -> Vec<&String> {
    lines
        .iter()
        .filter(|l| {
            let Some((task, body)) = l.split_once(" [").zip(l.split_once("sched_process_exit: ").map(|x| x.1)) else {
                return false;
            };
            let field = |k: &str| body.split_whitespace().find_map(|w| w.strip_prefix(k)).unwrap_or("?");
            task.0.trim() != format!("{}-{}", field("comm="), field("pid="))
        })
        .collect()
}

/// Send a recording of `sh -c '/bin/ls /; /bin/sleep S; exit 3'` to the
/// listener on `port`, then check what `dir` received: every event the sender counted,
/// and the tasks started during the run named as on the board (they were
/// not in saved_cmdlines when the header left).
fn send_and_check(root: &Path, before: &[(String, String)], port: u16, dir: &Path, sleep: &str) {
    let to = format!("127.0.0.1:{port}");
    // By their paths: busybox sh, the qemu boards', runs a bare `ls` by
    // exec'ing /proc/self/exe, and a bare `sleep` without a process.
    let sh = format!("/bin/ls / >/dev/null; /bin/sleep {sleep}; exit 3");
    let o = run(&["tr-cat", "-N", &to, "-e", EVENTS, "--", "sh", "-c", &sh]);
    let err = stderr(&o);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(o.status.code(), Some(3), "the command's status: {err}");
    assert_same_state(before, &snapshot(root));
    let events = common::recorded_total(&err);
    assert!(events > 0, "{err}");
    // Whole once it reads with every event the sender counted.
    let f = received(dir, |f| events_in(f) == Some(events as usize));
    let (ours, tc) = read_back(&f);
    assert_eq!(ours.len() as u64, events, "tr-cat {} vs the sender's summary", f.display());
    assert!(ours.iter().any(|l| l.contains("sched_process_exec:") && l.contains("/ls")), "{ours:?}");
    assert_eq!(ours.iter().filter(|l| l.contains("sched_process_exit:")).count(), 3, "sh, ls, sleep: {ours:?}");
    assert_eq!(unnamed_exits(&ours), Vec::<&String>::new(), "tr-cat {}", f.display());
    if let Some(tc) = tc {
        assert_eq!(tc.len() as u64, events, "trace-cmd report {}", f.display());
        // trace-cmd names a task by the file's saved_cmdlines alone (seen
        // once under load, tr-cat --listen's file: the name of the fork
        // before its exec, `trbox-PID`, comm=sh). What tr-cat names from
        // the file, trace-cmd must name too. Both leave a task `<...>` whose
        // name the kernel's saved_cmdlines (128 slots by default) gave to
        // another task before the end of the run, as a load that starts
        // many processes does (the kernel's `trace` prints it so).
        let unnamed = |lines: &[String]| -> Vec<String> {
            let mut v: Vec<String> = lines
                .iter()
                .filter_map(|l| l.trim_start().strip_prefix("<...>-"))
                .filter_map(|r| r.split_whitespace().next().map(String::from))
                .collect();
            v.sort();
            v.dedup();
            v
        };
        let ours_unnamed = unnamed(&ours);
        let tc_only: Vec<String> = unnamed(&tc).into_iter().filter(|p| !ours_unnamed.contains(p)).collect();
        assert_eq!(
            tc_only,
            Vec::<String>::new(),
            "tasks tr-cat names and trace-cmd does not: trace-cmd report {}",
            f.display()
        );
    }
}

#[test]
fn to_trace_cmd_listen() {
    let Some((_l, root, before)) = live_with_snapshot() else {
        return;
    };
    if Command::new("trace-cmd").arg("-h").output().is_err() {
        skip_absent("trace-cmd listen: trace-cmd is not installed");
        return;
    }
    let dir = TempDir::new("net-tc");
    let port = free_port();
    let mut l = spawn(
        Command::new("trace-cmd")
            .args(["listen", "-p", &port.to_string(), "-d"])
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_listening(port);
    // Longer than the 5 s trace-cmd's listener waits between two messages
    // of the header, which the sender holds back until the end.
    send_and_check(&root, &before, port, dir.path(), "7");
    l.signal(libc::SIGINT);
}

#[test]
fn to_tr_cat_listen() {
    let Some((_l, root, before)) = live_with_snapshot() else {
        return;
    };
    let dir = TempDir::new("net-trbox");
    let port = free_port();
    let mut l = spawn(
        cmd(&trbox(), &["tr-cat", "--listen", &port.to_string(), "-o", dir.path().to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_listening(port);
    send_and_check(&root, &before, port, dir.path(), "0.2");
    l.signal(libc::SIGTERM);
}

#[test]
fn listener_absent() {
    let Some((_l, root, before)) = live_with_snapshot() else {
        return;
    };
    let to = format!("127.0.0.1:{}", free_port());
    let o = run(&["tr-cat", "-N", &to, "-e", EVENTS, "--", "true"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&to) && err.contains("cannot connect") && err.contains("trace-cmd listen -p"), "{err}");
    assert_same_state(&before, &snapshot(&root));
    let o = run(&["tr-cat", "-N", "board:1234", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("A.B.C.D:PORT"), "{}", stderr(&o));
}

#[test]
fn connection_dropped_mid_run() {
    let Some((_l, root, before)) = live_with_snapshot() else {
        return;
    };
    // A small buffer (64 KiB a CPU, put back after): the recorder sends a
    // CPU's pages once its buffer is half full, which must happen before
    // the link drops however few events a second this machine makes (a
    // qemu board's 1.4 MiB took longer than the 1.5 s).
    let mut g = Guard::new(&root);
    assert!(g.set("buffer_size_kb", "64"), "buffer_size_kb");
    let small = snapshot(&root);
    let dir = TempDir::new("net-drop");
    let log = dir.path().join("listener.log");
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let port = free_port();
    // The link drops half a second after the first page came (however
    // long the header and the load took to get there).
    let mut l = spawn(
        cmd(&trbox(), &["tr-cat", "--listen", &port.to_string(), "-o", out.to_str().unwrap()])
            .env("TRBOX_LISTEN_DROP_MS", "500")
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&log).unwrap())),
    );
    wait_listening(port);
    let to = format!("127.0.0.1:{port}");
    // Events all along, pages full well before the link drops (the
    // recorder reads a CPU's buffer once it is half full), and a command
    // that lasts far longer than the link.
    let load = "i=0; while [ $i -lt 300 ]; do ls / >/dev/null; i=$((i+1)); done; exec sleep 600";
    let mut sender = spawn(
        cmd(
            &trbox(),
            &["tr-cat", "-N", &to, "-e", "raw_syscalls:sys_enter,raw_syscalls:sys_exit", "--", "sh", "-c", load],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped()),
    );
    // The listener ends the session once the link is down (its line on
    // stderr); the sender then stops instead of waiting for its command.
    let text = || std::fs::read_to_string(&log).unwrap_or_default();
    let t = Instant::now();
    while !text().contains("pages from") {
        assert!(t.elapsed() < Duration::from_secs(120), "the listener never ended the session: {}", text());
        assert!(matches!(sender.try_wait(), Ok(None)), "the sender ended first: {}", stderr(&sender.output()));
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(text().contains("connections dropped"), "{}", text());
    let t = Instant::now();
    while matches!(sender.try_wait(), Ok(None)) {
        assert!(t.elapsed() < Duration::from_secs(120), "the sender went on after the drop");
        std::thread::sleep(Duration::from_millis(100));
    }
    let o = sender.output();
    let err = stderr(&o);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("sending stopped"), "{err}");
    assert_same_state(&small, &snapshot(&root));
    let f = received(&out, |_| true);
    let (ours, tc) = read_back(&f);
    assert!(!ours.is_empty(), "nothing readable arrived");
    if let Some(tc) = tc {
        assert_eq!(tc.len(), ours.len(), "trace-cmd report vs tr-cat of {}", f.display());
    }
    l.signal(libc::SIGTERM);
    drop(g);
    assert_same_state(&before, &snapshot(&root));
}
