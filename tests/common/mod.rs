//! Helpers shared by the integration tests: the live-tracefs lock, running
//! the real binary, and snapshots of tracefs state.
#![allow(dead_code)]

pub mod cprog;
pub mod trace_text;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const LIVE: &str = "/sys/kernel/tracing";

/// Serialises every test that touches the live tracefs (test binaries run in
/// parallel). Held until dropped.
pub struct TracefsLock(File);

impl TracefsLock {
    pub fn take() -> Self {
        let f = File::create("/tmp/trbox-tracefs.lock").expect("lock file");
        use std::os::unix::io::AsRawFd;
        // SAFETY: valid fd for the call.
        let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
        assert_eq!(r, 0, "flock");
        TracefsLock(f)
    }
}

/// Is the live tracefs usable here (root, mounted or mountable)? Tests that
/// need it call this and print why they skip.
pub fn live_tracefs() -> Option<PathBuf> {
    let p = Path::new(LIVE);
    if p.join("events").is_dir() {
        return Some(p.into());
    }
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIP: not root, no live tracefs");
        return None;
    }
    let ok = Command::new("mount").args(["-t", "tracefs", "nodev", LIVE]).status().map(|s| s.success()).unwrap_or(false);
    if ok && p.join("events").is_dir() {
        Some(p.into())
    } else {
        eprintln!("SKIP: this kernel has no tracefs at {LIVE}");
        None
    }
}

/// The trbox binary cargo built for these tests.
pub fn trbox() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_trbox"))
}

/// Run `trbox ARGS…` with a clean environment (no TRBOX_TRACEFS, no RUST_LOG).
pub fn run(args: &[&str]) -> Output {
    cmd(&trbox(), args).output().expect("run trbox")
}

pub fn cmd(exe: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(exe);
    c.args(args).env_remove("TRBOX_TRACEFS").env_remove("RUST_LOG");
    c
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A scratch directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("trbox-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Copy a directory tree (regular files and directories only).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

/// The control-file state that must be identical before and after a run: a
/// sorted list of (path, content) for the top-level control files, every
/// event's enable/filter/trigger, options/, and the instance list.
pub fn snapshot(root: &Path) -> Vec<(String, String)> {
    let mut v = Vec::new();
    let read = |p: &Path| match std::fs::read(p) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => format!("<{}>", e.kind()),
    };
    // Files whose content changes by itself (statistics, buffers) are left out.
    const VOLATILE: &[&str] = &["trace", "trace_pipe", "per_cpu", "events", "instances", "options",
        "free_buffer", "trace_marker", "trace_marker_raw", "saved_cmdlines", "saved_tgids",
        "error_log", "available_filter_functions", "available_filter_functions_addrs",
        "touched_functions", "enabled_functions", "dyn_ftrace_total_info", "printk_formats",
        "snapshot", "trace_stat", "uprobe_profile", "kprobe_profile", "hwlat_detector", "osnoise"];
    if let Ok(rd) = std::fs::read_dir(root) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if VOLATILE.contains(&name.as_str()) || e.file_type().map(|t| t.is_dir()).unwrap_or(true) {
                continue;
            }
            v.push((name, read(&e.path())));
        }
    }
    if let Ok(rd) = std::fs::read_dir(root.join("options")) {
        for e in rd.flatten() {
            v.push((format!("options/{}", e.file_name().to_string_lossy()), read(&e.path())));
        }
    }
    if let Ok(systems) = std::fs::read_dir(root.join("events")) {
        for s in systems.flatten().filter(|s| s.path().is_dir()) {
            for ev in std::fs::read_dir(s.path()).into_iter().flatten().flatten() {
                if !ev.path().is_dir() {
                    continue;
                }
                for f in ["enable", "filter", "trigger"] {
                    let p = ev.path().join(f);
                    let rel = format!("events/{}/{}/{f}", s.file_name().to_string_lossy(), ev.file_name().to_string_lossy());
                    v.push((rel, read(&p)));
                }
            }
        }
    }
    let mut inst: Vec<String> = std::fs::read_dir(root.join("instances"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    inst.sort();
    v.push(("instances/".into(), inst.join(",")));
    v.sort();
    v
}

/// Assert two snapshots are equal, naming every file that differs.
pub fn assert_same_state(before: &[(String, String)], after: &[(String, String)]) {
    let diffs: Vec<String> = before
        .iter()
        .zip(after.iter())
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("{}: {:?} -> {:?}", a.0, a.1, b.1))
        .collect();
    assert!(before.len() == after.len() && diffs.is_empty(), "tracefs changed:\n{}", diffs.join("\n"));
}
