//! `tr-cat -o FILE` against the live tracefs: a high-rate syscall load
//! recorded with every event accounted for (summary = `tr-cat FILE` =
//! `trace-cmd report`), losses with a tiny buffer reported as the kernel
//! counts them, Ctrl-C/SIGTERM mid-recording, a full disk, `-- CMD`, `-m`;
//! and tracefs left exactly as found every time.

use super::common;
use common::*;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn live() -> Option<common::Live> {
    let root = live_tracefs()?;
    let l = TracefsLock::take();
    let before = snapshot(&root);
    Some((l, root, before))
}

fn record(args: &[&str]) -> Output {
    let mut a = vec!["tr-cat"];
    a.extend_from_slice(args);
    let o = run(&a);
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    o
}

/// One CPU's summary line: (cpu, events, pages, lost from pages, lost
/// from pages had an unknown part, lost from stats).
#[derive(Debug)]
struct Line {
    events: u64,
    lost_pages: u64,
    lost_unknown: bool,
    lost_stats: u64,
}

/// The summary's per-CPU lines and its total of events.
fn summary(err: &str) -> (u64, Vec<Line>) {
    let head = err
        .lines()
        .find(|l| l.starts_with("tr-cat: ") && l.contains(" events, "))
        .unwrap_or_else(|| panic!("no summary in:\n{err}"));
    let total: u64 =
        head.split(": ").nth(2).and_then(|s| s.split_whitespace().next()).and_then(|n| n.parse().ok()).unwrap();
    let mut lines = Vec::new();
    let mut in_table = false;
    for l in err.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.first() == Some(&"cpu") {
            in_table = true;
            continue;
        }
        if in_table && w.len() >= 6 && w[0].parse::<u32>().is_ok() {
            lines.push(Line {
                events: w[1].parse().unwrap(),
                lost_pages: w[4].trim_end_matches("+?").parse().unwrap(),
                lost_unknown: w[4].ends_with("+?"),
                lost_stats: w[5].parse().unwrap_or(0),
            });
        }
    }
    (total, lines)
}

/// Events `tr-cat FILE` prints (loss markers apart).
fn trbox_count(f: &Path) -> u64 {
    let o = run(&["tr-cat", f.to_str().unwrap()]);
    assert!(o.status.success(), "tr-cat FILE: {}", stderr(&o));
    assert!(!stderr(&o).contains("WARN"), "tr-cat FILE warned: {}", stderr(&o));
    // A kernel_stack record (stacktrace trigger) prints as one line plus
    // one `=> func` line per frame.
    stdout(&o).lines().filter(|l| !l.contains("[LOST ") && !l.trim_start().starts_with("=>")).count() as u64
}

/// Events `trace-cmd report` shows (a stack's `=> func` lines are part of
/// its record); it must not warn.
fn trace_cmd_count(f: &Path) -> Option<u64> {
    let Some(lines) = trace_cmd_records(f) else {
        common::skip_tool("trace-cmd", "trace-cmd checks: not installed");
        return None;
    };
    Some(lines.iter().filter(|l| !l.trim_start().starts_with("=>")).count() as u64)
}

fn check_file(f: &Path, events: u64) {
    assert_eq!(trbox_count(f), events, "tr-cat FILE vs the summary");
    if let Some(n) = trace_cmd_count(f) {
        assert_eq!(n, events, "trace-cmd report vs the summary");
    }
    cmdlines_are_lines(f);
}

/// Whether `dir`'s filesystem inserts and collapses a page-sized range
/// (`FALLOC_FL_INSERT_RANGE`, `FALLOC_FL_COLLAPSE_RANGE`), as the recorder
/// asks before it lays out per-CPU regions.
fn moves_extents(dir: &Path) -> bool {
    use std::os::unix::io::AsRawFd;
    let p = dir.join("probe");
    let Ok(file) = std::fs::File::create(&p) else { return false };
    // SAFETY: sysconf has no preconditions.
    let ps = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as i64;
    let falloc = |mode| unsafe { libc::fallocate(file.as_raw_fd(), mode, 0, ps) } == 0;
    let ok = file.set_len(2 * ps as u64).is_ok()
        && falloc(libc::FALLOC_FL_COLLAPSE_RANGE)
        && falloc(libc::FALLOC_FL_INSERT_RANGE);
    let _ = std::fs::remove_file(&p);
    ok
}

/// The saved_cmdlines slot is lines to its end: what the tasks' lines
/// leave of it is empty lines, not NULs, which trace-cmd stops at but
/// LISA's parser refuses, and with them the whole file.
fn cmdlines_are_lines(f: &Path) {
    let td = trbox::tracedat::TraceDat::read(&mut std::fs::File::open(f).unwrap()).unwrap();
    assert!(!td.saved_cmdlines.is_empty(), "{}: no saved_cmdlines", f.display());
    assert!(!td.saved_cmdlines.contains(&0), "{}: a NUL in saved_cmdlines", f.display());
}

/// A burst of syscalls that ends by itself (about a second here).
const LOAD: &[&str] = &["dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=300000", "status=none"];

fn args<'a>(f: &'a str, pre: &[&'a str], cmd: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["-o", f];
    a.extend_from_slice(pre);
    a.push("--");
    a.extend_from_slice(cmd);
    a
}

#[test]
fn high_rate_load_every_event_accounted_for() {
    let Some((_l, root, before)) = live() else { return };
    let dir = TempDir::new("rec-rate");
    let f = dir.path().join("t.dat");
    let o = record(&args(f.to_str().unwrap(), &["-e", "raw_syscalls:sys_enter"], LOAD));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (total, lines) = summary(&stderr(&o));
    assert!(total > 300_000, "a read and a write per byte: {total}\n{}", stderr(&o));
    assert_eq!(lines.iter().map(|l| l.events).sum::<u64>(), total);
    check_file(&f, total);
    assert_same_state(&before, &snapshot(&root));
}

#[test]
fn tiny_buffer_losses_match_the_kernel_stats() {
    let Some((_l, root, before)) = live() else { return };
    let size = root.join("buffer_size_kb");
    let old = std::fs::read_to_string(&size).unwrap();
    // "7 (expanded: 1408)" on a buffer never used: 1408 is the size.
    let old = old.rsplit(' ').next().unwrap().trim_end_matches(['\n', ')']).to_string();
    std::fs::write(&size, "8").unwrap();
    let dir = TempDir::new("rec-tiny");
    let f = dir.path().join("t.dat");
    let o = record(&args(f.to_str().unwrap(), &["-e", "raw_syscalls:sys_enter,raw_syscalls:sys_exit"], LOAD));
    std::fs::write(&size, &old).unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    let (total, lines) = summary(&err);
    let lost: u64 = lines.iter().map(|l| l.lost_stats).sum();
    assert!(lost > 0, "an 8 KiB buffer cannot keep up:\n{err}");
    for l in &lines {
        // The page headers carry the count when there is room for it;
        // otherwise the summary says "+?" and the stats have the number.
        if l.lost_unknown {
            assert!(l.lost_pages <= l.lost_stats, "{l:?}\n{err}");
        } else {
            assert_eq!(l.lost_pages, l.lost_stats, "{l:?}\n{err}");
        }
    }
    check_file(&f, total);
    assert_same_state(&before, &snapshot(&root));
}

fn stop_with(sig: i32) {
    let Some((_l, root, before)) = live() else { return };
    let dir = TempDir::new("rec-sig");
    let f = dir.path().join("t.dat");
    // Mid-recording: once the window is open (the header written, the
    // buffer cleared, the events on), this very kill(2) is a
    // raw_syscalls:sys_enter record of the run.
    let (mut c, g) = start_in_window(
        &root,
        cmd(&trbox(), &["tr-cat", "-o", f.to_str().unwrap(), "-e", "sched:sched_switch,raw_syscalls:sys_enter"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    );
    c.signal(sig);
    let o = c.output();
    assert_eq!(o.status.code(), Some(0), "signal {sig}: {}", stderr(&o));
    let (total, _) = summary(&stderr(&o));
    assert!(total > 0, "{}", stderr(&o));
    check_file(&f, total);
    drop(g);
    assert_same_state(&before, &snapshot(&root));
}

#[test]
fn sigint_mid_recording_leaves_a_valid_file() {
    stop_with(libc::SIGINT);
}

#[test]
fn sigterm_mid_recording_leaves_a_valid_file() {
    stop_with(libc::SIGTERM);
}

/// A small tmpfs, unmounted on drop.
struct Tmpfs(TempDir);

impl Tmpfs {
    fn new(size: &str) -> Option<Tmpfs> {
        let d = TempDir::new("rec-tmpfs");
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "trbox-test"])
            .arg(d.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            common::skip("cannot mount a tmpfs");
            return None;
        }
        Some(Tmpfs(d))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn full_disk_stops_with_a_readable_file() {
    let Some((_l, root, before)) = live() else { return };
    // The header holds /proc/kallsyms: leave room for it and a little data.
    let kallsyms = std::fs::read("/proc/kallsyms").map(|k| k.len()).unwrap_or(0);
    let Some(fs) = Tmpfs::new(&format!("{}k", kallsyms / 1024 + 3 * 1024)) else { return };
    let f = fs.0.path().join("t.dat");
    let load = &["dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=3000000", "status=none"];
    let o = record(&args(f.to_str().unwrap(), &["-e", "raw_syscalls:sys_enter"], load));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("ENOSPC") && err.contains("readable"), "{err}");
    let (total, _) = summary(&err);
    assert!(total > 0, "{err}");
    check_file(&f, total);
    assert_same_state(&before, &snapshot(&root));
}

#[test]
fn command_is_recorded_and_its_status_returned() {
    let Some((_l, root, before)) = live() else { return };
    let dir = TempDir::new("rec-cmd");
    let f = dir.path().join("t.dat");
    let o = record(&args(
        f.to_str().unwrap(),
        &["-e", "sched:sched_process_exec,sched:sched_process_exit"],
        // By its path: busybox sh (the qemu boards') runs a bare `ls` by
        // exec'ing /proc/self/exe.
        &["sh", "-c", "/bin/ls / >/dev/null; exit 3"],
    ));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let text = stdout(&run(&["tr-cat", f.to_str().unwrap()]));
    assert!(text.lines().any(|l| l.contains("sched_process_exec:") && l.contains("/ls")), "{text}");
    assert_eq!(text.lines().filter(|l| l.contains("sched_process_exit:")).count(), 2, "sh and ls only:\n{text}");
    check_file(&f, summary(&stderr(&o)).0);
    check_trace_cmd_meta(&f);
    assert_same_state(&before, &snapshot(&root));
}

/// trace-cmd accepts the header: `dump --summary`, and the CPUSTAT options
/// (the final per-CPU stats) in `report --stat`.
fn check_trace_cmd_meta(f: &Path) {
    if !have_trace_cmd() {
        return;
    }
    let o = Command::new("trace-cmd").args(["dump", "--summary"]).arg(f).output().unwrap();
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success() && err.trim().is_empty(), "trace-cmd dump: {err}");
    assert!(out.contains("[Flyrecord tracing data]"), "{out}");
    let o = Command::new("trace-cmd").args(["report", "--stat"]).arg(f).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("CPU: 0") && out.contains("read events:"), "{out}");
}

#[test]
fn max_kb_keeps_the_newest_pages() {
    let Some((_l, root, before)) = live() else { return };
    let dir = TempDir::new("rec-max");
    let f = dir.path().join("t.dat");
    let o = record(&args(f.to_str().unwrap(), &["-e", "raw_syscalls:sys_enter", "-m", "256"], LOAD));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("dropped:-m"), "{err}");
    let (total, _) = summary(&err);
    let text = stdout(&run(&["tr-cat", f.to_str().unwrap()]));
    // The newest data: the command's last syscall (exit_group = 231 on
    // x86_64, 94 on arm64) is in the file.
    assert!(
        text.lines().rev().take(200).any(|l| l.contains("NR 231") || l.contains("NR 94")),
        "{}",
        &text[text.len().saturating_sub(3000)..]
    );
    let data = std::fs::metadata(&f).unwrap().len();
    let t = trbox::tracedat::TraceDat::read(&mut std::fs::File::open(&f).unwrap()).unwrap();
    let kept: u64 = t.instances[0].cpus.iter().map(|c| c.size).sum();
    assert!(kept <= 256 * 1024, "{kept} bytes of data kept, file {data}");
    check_file(&f, total);
    assert_same_state(&before, &snapshot(&root));
}

/// `--stats` on a recorded file: totals and per-event counts agree with the
/// decoded text, in 80 columns.
fn check_stats(f: &Path, total: u64) {
    let o = run(&["tr-cat", "--stats", f.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let st = stdout(&o);
    assert!(st.starts_with(&format!("{total} events, from ")), "{st}");
    assert!(st.lines().all(|l| l.len() <= 80), "{st}");
    let text = stdout(&run(&["tr-cat", f.to_str().unwrap()]));
    let mut seen = 0;
    for l in st.lines().skip_while(|l| !l.ends_with("  event")).skip(1).take_while(|l| !l.is_empty()) {
        let (n, name) = l.trim().split_once("  ").unwrap();
        let bare = name.rsplit(':').next().unwrap();
        let want = text.lines().filter(|t| t.contains(&format!(" {bare}: "))).count();
        if bare != "kernel_stack" {
            assert_eq!(n.parse::<usize>().unwrap(), want, "{name}\n{st}");
        }
        seen += 1;
    }
    assert!(seen > 0, "{st}");
}

/// `--stats` of a run with 40 short-lived tasks of one comm: one row for
/// them (it printed a row a task: 750 on a board), `--all` a row each
/// (issue 29).
#[test]
fn stats_group_the_tasks_of_one_comm() {
    let Some((_l, root, before)) = live() else { return };
    // A task is named from saved_cmdlines, a ring the kernel refills with
    // every task switched to after an event (trace_save_cmdline(),
    // tracing_record_taskinfo_sched_switch()): 128 entries before 6.9, so
    // under load other tasks pushed some of the 40 out (`<...>`). Room for
    // every task this run can name (two a traced event, and the 41 traced).
    let mut g = Guard::new(&root);
    assert!(g.set("saved_cmdlines_size", "8192"));
    let dir = TempDir::new("rec-group");
    let f = dir.path().join("t.dat");
    let o = record(&args(
        f.to_str().unwrap(),
        &["-e", "sched:sched_process_exec,sched:sched_process_exit"],
        &["sh", "-c", "i=0; while [ $i -lt 40 ]; do sleep 0; i=$((i+1)); done"],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let f = f.to_str().unwrap();
    let tasks = |st: &str| -> Vec<String> {
        st.lines().skip_while(|l| !l.ends_with("  task")).skip(1).map(|l| l.trim().to_string()).collect()
    };
    let grouped = tasks(&stdout(&run(&["tr-cat", "--stats", f])));
    assert!(grouped.iter().any(|l| l == "80  sleep (40 tasks)"), "{grouped:?}");
    assert!(grouped.len() < 10, "{grouped:?}");
    let all = tasks(&stdout(&run(&["tr-cat", "--stats", "--all", f])));
    assert_eq!(all.iter().filter(|l| l.starts_with("2  sleep-")).count(), 40, "{all:?}");
    drop(g);
    assert_same_state(&before, &snapshot(&root));
}

#[test]
fn stats_of_a_file_and_of_the_live_buffer() {
    let Some((_l, root, before)) = live() else { return };
    let dir = TempDir::new("rec-stats");
    let f = dir.path().join("t.dat");
    let o = record(&args(
        f.to_str().unwrap(),
        &["-e", "sched:sched_process_exec,sched:sched_process_exit"],
        &["sh", "-c", "ls / >/dev/null"],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    check_stats(&f, summary(&stderr(&o)).0);
    // Live: three markers in an emptied buffer.
    std::fs::write(root.join("trace"), "").unwrap();
    for i in 0..3 {
        std::fs::write(root.join("trace_marker"), format!("trbox-stats {i}")).unwrap();
    }
    let o = run(&["tr-cat", "--raw", "--stats"]);
    let st = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(st.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["3", "ftrace:print"]), "{st}");
    let me = format!("-{}", unsafe { libc::gettid() });
    // (Other events may be enabled: at least the markers are ours.)
    let mine = st.lines().find(|l| l.ends_with(&me)).and_then(|l| l.split_whitespace().next()?.parse::<u64>().ok());
    assert!(mine >= Some(3), "{me}:\n{st}");
    assert_same_state(&before, &snapshot(&root));
}

/// As root, -o never writes through a symlink nor truncates a file that is
/// not ours (issue 12): a symlink, a hard link, another user's file and a
/// fifo at the path are refused and left as they were; a new file is
/// created, and an earlier recording of ours is written over.
#[test]
fn output_follows_no_symlink_and_truncates_no_file_not_ours() {
    let Some((_l, root, before)) = live() else { return };
    let dir = TempDir::new("rec-out");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let out = |name: &str| dir.path().join(name);
    std::os::unix::fs::symlink(&victim, out("link.dat")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("nowhere"), out("dangling.dat")).unwrap();
    std::fs::hard_link(&victim, out("hard.dat")).unwrap();
    std::fs::write(out("theirs.dat"), "theirs\n").unwrap();
    std::os::unix::fs::chown(out("theirs.dat"), Some(65534), Some(65534)).unwrap();
    let fifo = std::ffi::CString::new(out("fifo.dat").to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    for (name, why) in [
        ("link.dat", "is a symlink"),
        ("dangling.dat", "is a symlink"),
        ("hard.dat", "has 2 links"),
        ("theirs.dat", "belongs to uid 65534"),
        ("fifo.dat", "is not a regular file"),
    ] {
        let o = record(&["-o", out(name).to_str().unwrap(), "-t", "0.1"]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("{}: exists and {why}: not overwritten", out(name).display())),
            "{name}: {}",
            stderr(&o)
        );
        assert!(stderr(&o).contains("hint: remove it first, or record to another name"), "{name}: {}", stderr(&o));
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(std::fs::read_to_string(out("theirs.dat")).unwrap(), "theirs\n");
    assert!(!dir.path().join("nowhere").exists(), "a file was created through the dangling symlink");
    assert!(out("link.dat").symlink_metadata().unwrap().file_type().is_symlink());
    // A new file, then the same name again: ours, written over.
    for _ in 0..2 {
        let o = record(&["-o", out("t.dat").to_str().unwrap(), "-t", "0.1"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let b = std::fs::read(out("t.dat")).unwrap();
        assert!(b.starts_with(b"\x17\x08\x44tracing"), "not a trace.dat");
    }
    assert_same_state(&before, &snapshot(&root));
}

/// Recording on a terminal (issue 29): one line on stderr drawn again in
/// place at most four times a second — events so far, KiB written, events
/// lost, the seconds left of -t — and cleared before the summary. Never
/// when stderr is a pipe (a log), nor with TERM=dumb.
#[test]
fn progress_shows_on_a_tty_and_nowhere_else() {
    let Some((_l, root, before)) = live() else { return };
    let dir = TempDir::new("rec-progress");
    let f = dir.path().join("t.dat");
    let f = f.to_str().unwrap();
    let mut bg = spawn(Command::new("dd").args(["if=/dev/zero", "of=/dev/null", "bs=512"]));
    let rec = ["tr-cat", "-o", f, "-e", "raw_syscalls:sys_enter", "-t", "2"];
    let (status, text) = on_pty(&rec, "xterm", false);
    assert!(status.success(), "{text}");
    let (lines, after) = progress_lines(&text).unwrap_or_else(|| panic!("no progress line: {text:?}"));
    // 2 s at most 4 a second (the first at once).
    assert!((3..=9).contains(&lines.len()), "{} redraws in 2 s: {lines:?}", lines.len());
    let mut last = 0;
    for l in &lines {
        // tr-cat: N events, N KiB written, N lost, N s left
        let w: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(
            (w.len(), w[0], w[2], w[4], w[5], w[7], w[9], w[10]),
            (11, "tr-cat:", "events,", "KiB", "written,", "lost,", "s", "left"),
            "{l}"
        );
        let events: u64 = w[1].parse().unwrap();
        assert!(events >= last, "{lines:?}");
        last = events;
        assert!(w[3].parse::<u64>().is_ok() && w[6].parse::<u64>().is_ok(), "{l}");
        assert!(w[8].parse::<u64>().unwrap() <= 2, "{l}");
    }
    assert!(last > 0, "events counted while recording: {lines:?}");
    assert!(after.starts_with("tr-cat: ") && after.contains(" events, "), "the summary after it: {after:?}");
    // A pipe (as in every other test) and TERM=dumb: no line.
    let o = record(&rec[1..]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains(['\r', '\x1b']), "{:?}", stderr(&o));
    let (status, text) = on_pty(&rec, "dumb", false);
    assert!(status.success() && progress_lines(&text).is_none() && !text.contains(" s left"), "{text:?}");
    bg.signal(libc::SIGKILL);
    assert_same_state(&before, &snapshot(&root));
}

/// A recorder killed by SIGKILL mid-run (no signal handler, no end of
/// file) leaves a trace.dat of the pages it had written: its length is
/// about the disk space the data takes (the regions' unwritten room is not
/// left as terabytes of holes, which `ls -l` shows and `scp` copies), and
/// `tr-cat FILE` and `trace-cmd report` read its pages, the same records.
/// Its guard puts tracefs back.
#[test]
fn sigkill_mid_recording_leaves_a_readable_file_of_its_size() {
    let dir = TempDir::new("rec-kill");
    if !moves_extents(dir.path()) {
        // tmpfs (a qemu board's initramfs), FAT, btrfs: the recorder keeps
        // the slot pool there (the next test).
        return skip_absent(
            "the temporary directory's filesystem cannot insert and collapse ranges: no per-CPU regions",
        );
    }
    killed_recording(dir.path(), false);
}

/// The same in the slot pool (tmpfs: /dev/shm), whose flyrecord table is
/// only written at the end: the run's guard takes what is left in the
/// buffer, puts the pages in order and writes the table, as the run's own
/// end would have; a reader meanwhile waits for it.
#[test]
fn sigkill_mid_recording_in_the_pool_is_finished_by_its_guard() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() || moves_extents(shm) {
        return skip_absent("no /dev/shm without per-CPU regions (tmpfs) for the slot pool");
    }
    let dir = TempDir(shm.join(format!("trbox-rec-kill-{}", std::process::id())));
    std::fs::create_dir_all(dir.path()).unwrap();
    killed_recording(dir.path(), true);
}

fn killed_recording(dir: &Path, pool: bool) {
    let Some((_l, root, before)) = live() else { return };
    let f = dir.join("t.dat");
    // The ring buffer's page: buffer_subbuf_size_kb (6.8+), else the
    // machine's page.
    // SAFETY: sysconf has no preconditions.
    let ps = std::fs::read_to_string(root.join("buffer_subbuf_size_kb"))
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map_or(unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64, |kb| kb * 1024);
    // A load on every CPU: each CPU's region gets pages, the last one's
    // too (whose end was the file's length, terabytes in).
    let loads: Vec<Running> = cpu_numbers(&root)
        .iter()
        .map(|c| {
            let sh = format!(
                "taskset -pc {c} $$ >/dev/null 2>&1; \
                 while :; do dd if=/dev/zero of=/dev/null bs=1 count=100000 status=none; done"
            );
            spawn(Command::new("sh").args(["-c", &sh]))
        })
        .collect();
    let (mut c, g) = start_in_window(
        &root,
        cmd(&trbox(), &["tr-cat", "-o", f.to_str().unwrap(), "-e", "raw_syscalls:sys_enter"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    );
    // The header is written before the window opens: what the file gains
    // on the disk from now on is pages. Kill once 64 pages are on their way.
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::process::ExitStatusExt;
    let used = || std::fs::metadata(&f).map_or(0, |m| m.blocks() * 512);
    let header = used();
    let t = std::time::Instant::now();
    while used() < header + 64 * ps && t.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(used() >= header + 64 * ps, "no pages written in 60 s: {} bytes, {header} at the start", used());
    c.signal(libc::SIGKILL);
    let o = c.output();
    assert_eq!(o.status.signal(), Some(libc::SIGKILL), "{}", stderr(&o));
    // The output's end is the guard's too (it shares stderr): it is done.
    drop(loads);
    drop(g);
    let err = stderr(&o);
    assert!(err.contains("its guard put tracefs back"), "{err}");
    assert_same_state(&before, &snapshot(&root));
    let m = std::fs::metadata(&f).unwrap();
    let cpus = cpu_numbers(&root).len() as u64;
    // Room left unwritten at the kill: at most each CPU's last step of
    // growth (its data so far, 8 MiB at most) besides the data.
    assert!(
        m.len() <= 2 * m.blocks() * 512 + cpus * (8 << 20),
        "a killed recording of {} bytes on disk is {} bytes long",
        m.blocks() * 512,
        m.len()
    );
    let events = trbox_count(&f);
    let pages = (m.blocks() * 512).saturating_sub(header) / ps;
    assert!(events >= pages / 2 && pages >= 32, "{events} events read back from {pages} pages written");
    if pool {
        // The guard's summary is the file's.
        assert!(err.contains("its guard finished the file"), "{err}");
        assert_eq!(summary(&err).0, events, "{err}");
    }
    if let Some(n) = trace_cmd_count(&f) {
        assert_eq!(n, events, "trace-cmd report vs tr-cat FILE");
    }
    cmdlines_are_lines(&f);
}

/// A pool file has no table until the recording ends: `tr-cat FILE`
/// meanwhile waits for it (the recorder's lock on the file), saying so,
/// and then reads it whole.
#[test]
fn reading_a_pool_recording_waits_for_its_end() {
    use std::process::Stdio;
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() || moves_extents(shm) {
        return skip_absent("no /dev/shm without per-CPU regions (tmpfs) for the slot pool");
    }
    let Some((_l, root, before)) = live() else { return };
    let dir = TempDir(shm.join(format!("trbox-rec-wait-{}", std::process::id())));
    std::fs::create_dir_all(dir.path()).unwrap();
    let f = dir.path().join("t.dat");
    let rec = ["tr-cat", "-o", f.to_str().unwrap(), "-e", "sched:sched_switch", "-t", "2"];
    let (c, g) = start_in_window(&root, cmd(&trbox(), &rec).stdout(Stdio::null()).stderr(Stdio::piped()));
    let o = run(&["tr-cat", f.to_str().unwrap()]);
    let r = c.output();
    drop(g);
    assert!(r.status.success(), "{}", stderr(&r));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("a recording is writing it; waiting for its end"), "{}", stderr(&o));
    let (events, _) = summary(&stderr(&r));
    assert!(events > 0, "{}", stderr(&r));
    assert_eq!(stdout(&o).lines().filter(|l| !l.contains("[LOST ")).count() as u64, events);
    assert_same_state(&before, &snapshot(&root));
}

/// The run puts tracing_on back last, as it found it (on, as a booted
/// kernel has it): switched on before the run's events are off and its
/// pid filter is gone, the buffer would hold after the run what they let
/// through (every task's context switches).
#[test]
fn nothing_is_recorded_while_the_run_puts_tracefs_back() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    // Put back as found when the test ends, also on a failed assertion.
    let mut g = Guard::new(&root);
    assert!(g.set("tracing_on", "1"));
    let before = snapshot(&root);
    let dir = TempDir::new("rec-last");
    let f = dir.path().join("t.dat");
    let o = record(&args(f.to_str().unwrap(), &["-e", "sched:sched_switch"], &["sh", "-c", "sleep 0.2"]));
    let left = std::fs::read_to_string(root.join("trace")).unwrap();
    let after = snapshot(&root);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let left: Vec<&str> = left.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(left.is_empty(), "recorded after the run:\n{}", left.join("\n"));
    assert_same_state(&before, &after);
}
