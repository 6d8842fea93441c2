//! The library's pull reader of the live tracefs (`Reader::live`), in an
//! instance of the test's own: it reads what the buffer holds (the
//! kernel's own `trace` text of it, record for record), consumes it, ends
//! at the end of what was there even while tracing goes on, or follows
//! it until a stop, and leaves every tracefs setting as it was.

use super::common::{self, TracefsLock};
use std::path::{Path, PathBuf};
use std::process::Command;
use trbox::format::Value;
use trbox::sys::read::{Entry, ReadOptions, Reader};
use trbox::sys::stop::Stop;
use trbox::sys::Error;

/// An instance of the test's own, removed when dropped (also when an
/// assertion fails first).
struct Instance(PathBuf);

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// An instance of a test's own that records `sched_process_exec`, with
/// the tracefs lock held and tracefs's state before it.
struct ExecInstance {
    root: PathBuf,
    name: String,
    dir: PathBuf,
    before: Vec<(String, String)>,
    guard: Instance,
    _lock: TracefsLock,
}

impl ExecInstance {
    /// `trbox-test-TAG<pid>`; `None` (skipped) without the live tracefs
    /// or the event.
    fn make(tag: &str) -> Option<ExecInstance> {
        let root = common::live_tracefs()?;
        let lock = TracefsLock::take();
        if !root.join("events/sched/sched_process_exec/enable").exists() {
            common::skip_absent("no sched:sched_process_exec event here");
            return None;
        }
        let before = common::snapshot(&root);
        let name = format!("trbox-test-{tag}{}", std::process::id());
        let dir = root.join("instances").join(&name);
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
        let guard = Instance(dir.clone());
        std::fs::write(dir.join("events/sched/sched_process_exec/enable"), "1").expect("enable sched_process_exec");
        Some(ExecInstance { root, name, dir, before, guard, _lock: lock })
    }

    /// The instance removed: tracefs is as it was.
    fn end(self) {
        let ExecInstance { root, before, guard, _lock, .. } = self;
        drop(guard);
        common::assert_same_state(&before, &common::snapshot(&root));
    }
}

/// Run `true` (an exec) `n` times; their pids.
fn execs(n: usize) -> Vec<i32> {
    (0..n)
        .map(|_| {
            let mut c = Command::new("true").spawn().expect("spawn true");
            assert!(c.wait().expect("wait").success());
            c.id() as i32
        })
        .collect()
}

/// Every entry of a live read of `name`: each event's line and its
/// (name, pid, `pid` field).
fn read_live(name: &str) -> (String, Vec<(String, i32, Option<i64>)>) {
    let o = ReadOptions { buffer: Some(name.into()), ..Default::default() };
    let mut r = Reader::live(&o).unwrap_or_else(|e| panic!("Reader::live: {e}"));
    let (session, mut entries) = r.split();
    let mut text = session.text();
    let (mut lines, mut seen) = (String::new(), Vec::new());
    while let Some(e) = entries.next_entry() {
        match e {
            Entry::Event(ev) => {
                text.line(&ev, &mut lines);
                let pid = match ev.field("pid") {
                    Some(Value::Signed(v)) => Some(v),
                    other => panic!("sched_process_exec's pid: {other:?}"),
                };
                seen.push((format!("{}:{}", ev.system(), ev.name()), ev.pid(), pid));
            }
            other => panic!("{other:?}"),
        }
    }
    (lines, seen)
}

fn kernel_lines(inst: &Path) -> String {
    let text = std::fs::read_to_string(inst.join("trace")).expect("the instance's trace");
    text.lines().filter(|l| !l.starts_with('#')).map(|l| format!("{l}\n")).collect()
}

/// The execs of an instance's `sched_process_exec`: the reader's text of
/// each record is the kernel's `trace` line of it (read before), its
/// name, task and `pid` field are the command's; the read consumed them
/// (the `trace` file is empty after); a read while tracing goes on ends
/// and holds the exec done before it; tracefs is as it was.
#[test]
fn reader_live_instance_is_the_kernels_and_drains() {
    let Some(x) = ExecInstance::make("") else { return };
    let (name, inst) = (x.name.clone(), x.dir.clone());
    let ours = execs(3);
    // Tracing off in the instance: the buffer holds what the `trace` text
    // shows, and no other task's exec comes in between.
    std::fs::write(inst.join("tracing_on"), "0").expect("tracing_on");
    let kernel = kernel_lines(&inst);
    let (lines, seen) = read_live(&name);
    assert!(!seen.is_empty(), "no event read");
    assert_eq!(lines.lines().count(), seen.len());
    assert!(lines == kernel, "the reader's text is not the kernel's:\n{lines}\n---\n{kernel}");
    for (ev, pid, field) in &seen {
        assert_eq!(ev, "sched:sched_process_exec");
        assert_eq!(Some(i64::from(*pid)), *field, "an exec's task is its pid field");
    }
    for p in &ours {
        assert!(seen.iter().any(|(_, pid, _)| pid == p), "the exec of {p} was not read: {seen:?}");
    }
    assert_eq!(kernel_lines(&inst), "", "the read did not consume the records");
    assert!(read_live(&name).1.is_empty(), "a second read found records again");

    // Tracing on: the read still ends, and holds what was written before.
    std::fs::write(inst.join("tracing_on"), "1").expect("tracing_on");
    let ours = execs(1);
    let (_, seen) = read_live(&name);
    assert!(seen.iter().any(|(_, pid, _)| *pid == ours[0]), "the exec of {} was not read: {seen:?}", ours[0]);

    // An instance that is not there is named as such.
    let o = ReadOptions { buffer: Some(format!("{name}-absent")), ..Default::default() };
    assert!(matches!(Reader::live(&o), Err(Error::NoInstance { .. })), "an absent instance");

    x.end();
}

/// A reader that follows an instance (`ReadOptions::follow`) gets the
/// execs done after it was opened, each one once, and ends at its stop
/// (asked between records and after each wait); tracefs is as it was.
#[test]
fn reader_live_follow_reads_what_comes_until_the_stop() {
    let Some(x) = ExecInstance::make("follow-") else { return };
    let name = x.name.clone();
    let o = ReadOptions { buffer: Some(name.clone()), follow: true, ..Default::default() };
    let mut r = Reader::live(&o).unwrap_or_else(|e| panic!("Reader::live: {e}"));
    // The execs come while the reader reads (it waits for them, the
    // buffer being empty at first): in a thread of their own.
    // (Other tests' execs may come too: the instance sees every task.)
    let ours = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let theirs = std::sync::Arc::clone(&ours);
    let execs = std::thread::spawn(move || {
        for p in execs(3) {
            theirs.lock().expect("pids").push(p);
        }
    });
    let seen = std::cell::RefCell::new(Vec::new());
    let start = std::time::Instant::now();
    // Stop once the three came (or, failing, after a long while).
    let came = || {
        let ours = ours.lock().expect("pids");
        ours.len() == 3 && ours.iter().all(|p| seen.borrow().contains(p))
    };
    let done = || came() || start.elapsed() > std::time::Duration::from_secs(60);
    let stop = Stop::when(&done);
    while let Some(e) = r.next_entry_until(&stop) {
        match e {
            Entry::Event(ev) => seen.borrow_mut().push(ev.pid()),
            other => panic!("{other:?}"),
        }
    }
    execs.join().expect("the execs' thread");
    let (ours, seen) = (ours.lock().expect("pids").clone(), seen.into_inner());
    for p in &ours {
        assert_eq!(seen.iter().filter(|s| *s == p).count(), 1, "the exec of {p}, once: {seen:?}");
    }
    drop(r);
    x.end();
}
