//! Whatever way a run ends, tracefs is exactly as before (issue 6): every
//! readable control file, options, each event's enable/filter/trigger,
//! dynamic events, pid lists, instances (tests/common snapshot) — for tr-on
//! running a command or a time, and tr-event; ended normally, by an error,
//! SIGINT, SIGTERM, SIGHUP, a closed pipe (`| head -1`), or the traced
//! command being killed.

use super::common;
use common::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How a scenario ends.
enum End {
    /// Runs to its end by itself.
    Exit,
    /// Sent this signal once its settings are visible.
    Signal(i32),
    /// Its output goes to `head -1` while something writes trace_marker.
    Pipe,
}

/// tr-on settings that show up in files (checked to know it is running).
const ON: &[&str] = &["tr-on", "-O", "sym-offset", "-O", "noirq-info", "-C", "global", "-b", "2000", "-c"];
/// tr-event settings: enable, filter, trigger.
const EV: &[&str] =
    &["tr-event", "sched:sched_switch,sched:sched_process_exit", "-f", "common_pid >= 0", "-R", "stacktrace"];

fn args<'a>(base: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(more).copied().collect()
}

/// Is the run's set-up in place yet?
fn set_up(root: &Path, applet: &str) -> bool {
    let rd = |f: &str| std::fs::read_to_string(root.join(f)).unwrap_or_default();
    match applet {
        "tr-on" => rd("options/sym-offset").trim() == "1",
        _ => rd("events/sched/sched_switch/enable").starts_with('1'),
    }
}

/// Run one scenario and compare tracefs after it with `before`, the state
/// before the first: each one that passed put everything back, so one
/// snapshot serves them all (a snapshot reads three files of every event:
/// seconds on a TCG board).
fn scenario(root: &Path, before: &[(String, String)], name: &str, argv: &[&str], end: End, rc: Option<i32>) {
    let code = match end {
        End::Exit => {
            let o = run(argv);
            assert!(!stderr(&o).contains("panicked"), "{name}: {}", stderr(&o));
            o.status.code()
        }
        End::Signal(sig) => {
            let mut c = spawn(cmd(&trbox(), argv).stdout(Stdio::null()).stderr(Stdio::piped()));
            let t = Instant::now();
            while !set_up(root, argv[0]) && t.elapsed() < Duration::from_secs(30) {
                std::thread::sleep(Duration::from_millis(20));
            }
            if !set_up(root, argv[0]) {
                c.signal(libc::SIGKILL);
                panic!("{name}: never set up: {}", stderr(&c.output()));
            }
            // Its settings are in place: whenever the signal comes now
            // (set-up, window, read-out), it puts them back.
            c.signal(sig);
            let o = c.output();
            assert!(!stderr(&o).contains("panicked"), "{name}: {}", stderr(&o));
            o.status.code()
        }
        End::Pipe => {
            let line: Vec<String> = argv.iter().map(|a| format!("'{a}'")).collect();
            let sh = format!(
                "(for i in $(seq 400); do echo trbox-pipe > {m} 2>/dev/null; sleep 0.05; done) & W=$!; \
                 {exe} {line} | head -1 >/dev/null; echo ${{PIPESTATUS[0]}}; kill $W",
                m = root.join("trace_marker").display(),
                exe = trbox().display(),
                line = line.join(" ")
            );
            let o =
                Command::new("timeout").args(["60", "bash", "-c", &sh]).env_remove("TRBOX_TRACEFS").output().unwrap();
            stdout(&o).trim().parse().ok()
        }
    };
    assert_eq!(code, rc, "{name}: exit status");
    let after = snapshot(root);
    let diff = std::panic::catch_unwind(|| assert_same_state(before, &after));
    assert!(diff.is_ok(), "{name}: tracefs not restored (see above)");
}

#[test]
fn every_way_out_restores_everything() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let root = root.as_path();
    let kill_self: &[&str] = &["--", "sh", "-c", "kill -9 $$"];
    let t30: &[&str] = &["-t", "30"];
    let before = &snapshot(root);
    // tr-on running a command / a time
    scenario(root, before, "tr-on -- CMD", &args(ON, &["--", "sh", "-c", "exit 5"]), End::Exit, Some(5));
    scenario(
        root,
        before,
        "tr-on bad option late",
        &args(ON, &["-O", "nosuchoption", "--", "true"]),
        End::Exit,
        Some(2),
    );
    scenario(root, before, "tr-on bad tracer", &args(ON, &["no_such_tracer", "--", "true"]), End::Exit, Some(2));
    scenario(root, before, "tr-on missing command", &args(ON, &["--", "/nonexistent/cmd"]), End::Exit, Some(2));
    scenario(root, before, "tr-on SIGINT", &args(ON, t30), End::Signal(libc::SIGINT), Some(0));
    scenario(root, before, "tr-on SIGTERM", &args(ON, t30), End::Signal(libc::SIGTERM), Some(0));
    scenario(root, before, "tr-on SIGHUP", &args(ON, t30), End::Signal(libc::SIGHUP), Some(0));
    scenario(
        root,
        before,
        "tr-on SIGTERM with CMD",
        &args(ON, &["--", "sleep", "30"]),
        End::Signal(libc::SIGTERM),
        Some(143),
    );
    scenario(root, before, "tr-on | head -1", &args(ON, t30), End::Pipe, Some(0));
    scenario(root, before, "tr-on killed CMD", &args(ON, kill_self), End::Exit, Some(137));
    // tr-event
    scenario(root, before, "tr-event -- CMD", &args(EV, &["--", "sh", "-c", "exit 4"]), End::Exit, Some(4));
    scenario(
        root,
        before,
        "tr-event bad filter",
        &["tr-event", "sched:sched_switch,sched:sched_wakeup", "-R", "stacktrace", "-f", "prev_pid ==", "-t", "1"],
        End::Exit,
        Some(2),
    );
    scenario(root, before, "tr-event bad trigger", &args(EV, &["-R", "nosuchtrigger", "-t", "1"]), End::Exit, Some(2));
    scenario(root, before, "tr-event SIGINT", &args(EV, t30), End::Signal(libc::SIGINT), Some(0));
    scenario(root, before, "tr-event SIGTERM", &args(EV, t30), End::Signal(libc::SIGTERM), Some(0));
    scenario(root, before, "tr-event SIGHUP", &args(EV, t30), End::Signal(libc::SIGHUP), Some(0));
    scenario(root, before, "tr-event | head -1", &args(EV, t30), End::Pipe, Some(0));
    scenario(root, before, "tr-event killed CMD", &args(EV, kill_self), End::Exit, Some(137));
    // In an instance trbox creates: gone again afterwards.
    scenario(
        root,
        before,
        "tr-on -B -- CMD",
        &args(&["tr-on", "-B", "trbox-restore", "-O", "sym-offset"], &["--", "true"]),
        End::Exit,
        Some(0),
    );
    scenario(
        root,
        before,
        "tr-event -B -t",
        &["tr-event", "-B", "trbox-restore", "sched:sched_switch", "-t", "1"],
        End::Exit,
        Some(0),
    );
}
