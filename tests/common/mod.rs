//! Helpers shared by the crate's tests (tests/core, tests/live, tests/applets): the live-tracefs lock, running
//! the real binary, and snapshots of tracefs state.
#![allow(dead_code)]

pub mod bodies;
pub mod cprog;
pub mod dat;
pub mod json;
pub mod ksym;
pub mod strace;
pub mod strverify;
pub mod trace_text;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

pub const LIVE: &str = "/sys/kernel/tracing";

/// Serialises every test that touches the live tracefs (test binaries run in
/// parallel). Held until dropped.
pub struct TracefsLock(File);

impl TracefsLock {
    pub fn take() -> Self {
        // Neither truncated nor opened through a symlink: /tmp is anyone's.
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW)
            .open("/tmp/trbox-tracefs.lock")
            .expect("lock file /tmp/trbox-tracefs.lock (a symlink is refused)");
        use std::os::unix::io::AsRawFd;
        // SAFETY: valid fd for the call.
        let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
        assert_eq!(r, 0, "flock");
        TracefsLock(f)
    }
}

/// A test (or part) that cannot run here says why on stderr. Under
/// `TRBOX_REQUIRE_LIVE=1` (CI, `.ci/run`) that is a failure instead: there
/// the machine is set up for every live test, so a skip would hide a broken
/// set-up. Only a kernel that genuinely lacks a feature may skip there
/// (`skip_absent`).
pub fn skip(why: &str) {
    if std::env::var_os("TRBOX_REQUIRE_LIVE").is_some_and(|v| v == "1") {
        panic!("TRBOX_REQUIRE_LIVE=1 and this test cannot run: {why}");
    }
    eprintln!("SKIP: {why}");
}

/// A kernel feature this machine's kernel does not have: a skip even in CI.
pub fn skip_absent(why: &str) {
    eprintln!("SKIP (absent here): {why}");
}

/// A host program the test compares with or builds with (trace-cmd,
/// python3, gcc, strace) is missing. On a development machine that is a
/// set-up to fix (`make setup` installs them: [`skip`]); on a qemu board
/// (`TRBOX_BOARD`, set by cross/qemu/guest/live-test), whose initramfs
/// holds busybox and the test binaries only, a skip that names the tool.
pub fn skip_tool(tool: &str, why: &str) {
    match std::env::var("TRBOX_BOARD") {
        Ok(board) if !board.is_empty() => eprintln!("SKIP (no {tool} on the board {board}): {why}"),
        _ => skip(why),
    }
}

/// The tracefs trees the qemu boards recorded (tests/fixtures/BOARD/SCENARIO,
/// each with its events/header_page), in name order.
pub fn fixture_trees() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut v = Vec::new();
    for arch in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        for sc in std::fs::read_dir(arch.path()).into_iter().flatten().flatten() {
            if sc.path().join("events/header_page").is_file() {
                v.push(sc.path());
            }
        }
    }
    v.sort();
    v
}

/// Is trace-cmd installed (the reader the tests compare with)?
/// The binary of examples/NAME.rs, next to the test's (`cargo test` builds
/// the examples); built here, into the same place, when the test was built
/// alone.
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    // TARGET_DIR/[TRIPLE/]PROFILE/deps/TEST
    let profile_dir = exe.parent().and_then(|d| d.parent()).expect("target/PROFILE");
    let bin = profile_dir.join("examples").join(name);
    if !bin.exists() {
        let profile = profile_dir.file_name().and_then(|p| p.to_str()).unwrap_or("debug");
        let profile = if profile == "debug" { "dev" } else { profile };
        let mut cargo = Command::new(env!("CARGO"));
        cargo.args(["build", "--quiet", "--example", name, "--profile", profile]);
        let up = profile_dir.parent().expect("TARGET_DIR");
        // A test built with --target: the triple's directory, under the
        // target directory.
        match up.file_name().and_then(|t| t.to_str()).filter(|t| t.matches('-').count() >= 2) {
            Some(triple) => cargo.args(["--target", triple]).env("CARGO_TARGET_DIR", up.parent().expect("TARGET_DIR")),
            None => cargo.env("CARGO_TARGET_DIR", up),
        };
        let st = cargo.status().unwrap_or_else(|e| panic!("cargo build --example {name}: {e}"));
        assert!(st.success(), "cargo build --example {name}");
    }
    bin
}

pub fn have_trace_cmd() -> bool {
    Command::new("trace-cmd").arg("--help").output().is_ok()
}

/// The record lines of `trace-cmd report FILE` (None when trace-cmd is not
/// installed), which must succeed without a word on stderr. Left out: its
/// `cpus=N` header, blank lines, and the mark of pages the kernel overwrote
/// before they were read, which trace-cmd writes `CPU:N [M EVENTS DROPPED]`
/// where tr-cat writes the kernel's `CPU:N [LOST M EVENTS]`
/// (trace_output.c): neither is a record.
pub fn trace_cmd_records(f: &Path) -> Option<Vec<String>> {
    if !have_trace_cmd() {
        return None;
    }
    let (records, bytes) = trace_cmd_report(f);
    if !records.is_empty() {
        return Some(records);
    }
    // Once (stop 53's CI), trace-cmd 3.1.6 printed no record of a file it
    // reads every other time, exiting 0 with nothing on stderr, under the
    // load of make test's parallel builds: an empty report is asked again.
    eprintln!("trace-cmd report {}: no record in {bytes} bytes; asking again", f.display());
    Some(trace_cmd_report(f).0)
}

/// `trace-cmd report FILE`'s record lines (no header, no lost markers)
/// and the bytes it printed.
fn trace_cmd_report(f: &Path) -> (Vec<String>, usize) {
    let o = Command::new("trace-cmd").arg("report").arg(f).output().expect("trace-cmd report");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.trim().is_empty(), "trace-cmd report {}: {err}", f.display());
    let records = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| {
            !l.starts_with("cpus=") && !l.trim().is_empty() && !l.contains("[LOST") && !l.contains("EVENTS DROPPED]")
        })
        .map(String::from)
        .collect();
    (records, o.stdout.len())
}

/// Is the live tracefs usable here (root, mounted or mountable)? Tests that
/// need it call this and print why they skip.
pub fn live_tracefs() -> Option<PathBuf> {
    let p = Path::new(LIVE);
    if p.join("events").is_dir() {
        return Some(p.into());
    }
    if unsafe { libc::geteuid() } != 0 {
        skip("not root, no live tracefs");
        return None;
    }
    let ok =
        Command::new("mount").args(["-t", "tracefs", "nodev", LIVE]).status().map(|s| s.success()).unwrap_or(false);
    if ok && p.join("events").is_dir() {
        Some(p.into())
    } else {
        skip(&format!("this kernel has no tracefs at {LIVE}"));
        None
    }
}

/// What a test that changes the live tracefs holds: the lock, the root and
/// the state before (compare it with [`snapshot`] afterwards).
pub type Live = (TracefsLock, PathBuf, Vec<(String, String)>);

/// For a test that changes the live tracefs: see [`Live`].
pub fn live_with_snapshot() -> Option<Live> {
    let root = live_tracefs()?;
    let l = TracefsLock::take();
    let before = snapshot(&root);
    Some((l, root, before))
}

/// Run `trbox ARGS…` in a mount namespace of its own in which each `(file,
/// over)` is bind-mounted over `over`: how a test shows trbox a kernel that
/// lacks a feature this one has (an `available_tracers` without a tracer, no
/// stack tracer sysctl) while all else is the live kernel's. `None` (with a
/// skip) where no mount namespace can be made here.
pub fn with_mounts_over(mounts: &[(&Path, &Path)], args: &[&str]) -> Option<Output> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::process::CommandExt;
    let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).unwrap();
    let pairs: Vec<(CString, CString)> = mounts.iter().map(|(f, o)| (c(f), c(o))).collect();
    let mut command = cmd(&trbox(), args);
    // SAFETY: between fork and exec only unshare(2) and mount(2) on
    // strings made before the fork.
    unsafe {
        command.pre_exec(move || {
            let (none, data) = (std::ptr::null(), std::ptr::null());
            if libc::unshare(libc::CLONE_NEWNS) != 0
                || libc::mount(c"none".as_ptr(), c"/".as_ptr(), none, libc::MS_REC | libc::MS_PRIVATE, data) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            for (f, o) in &pairs {
                if libc::mount(f.as_ptr(), o.as_ptr(), none, libc::MS_BIND, data) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    match command.output() {
        Ok(o) => {
            assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
            Some(o)
        }
        Err(e) => {
            skip(&format!("no mount namespace of its own for trbox: {e}"));
            None
        }
    }
}

/// Run `trbox ARGS…` as on a kernel without the tracers `absent`
/// ([`with_mounts_over`]): the tracers it was shown, as `available_tracers`
/// lists them, and its output.
pub fn without_tracers(root: &Path, absent: &[&str], args: &[&str]) -> Option<(String, Output)> {
    let have = std::fs::read_to_string(root.join("available_tracers")).unwrap();
    let shown = have.split_whitespace().filter(|t| !absent.contains(t)).collect::<Vec<_>>().join(" ");
    let dir = TempDir::new("tracers");
    let file = dir.path().join("available_tracers");
    std::fs::write(&file, format!("{shown}\n")).unwrap();
    let o = with_mounts_over(&[(&file, &root.join("available_tracers"))], args)?;
    Some((shown, o))
}

/// Run `trbox APPLET ARGS…`; a panic message fails the test whatever the
/// exit status.
pub fn applet(name: &str, args: &[&str]) -> Output {
    let mut a = vec![name];
    a.extend_from_slice(args);
    let o = run(&a);
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    o
}

/// The trbox binary cargo built for these tests; `TRBOX_TEST_BIN`, when
/// set, names another (a qemu board runs these test binaries far from the
/// target directory they were built in: cross/qemu/live.sh).
pub fn trbox() -> PathBuf {
    if let Some(p) = std::env::var_os("TRBOX_TEST_BIN") {
        return p.into();
    }
    // The tests are the library's unit tests: cargo gives them no
    // CARGO_BIN_EXE_trbox. Their trbox is the one built in the same
    // profile, beside their deps/ (make test builds it first).
    let exe = std::env::current_exe().expect("the test's own path");
    let bin = exe.parent().and_then(Path::parent).map(|d| d.join("trbox"));
    match bin {
        Some(b) if b.is_file() => b,
        _ => panic!(
            "no trbox binary beside {}: build it in the same profile first (cargo build), or set TRBOX_TEST_BIN",
            exe.display()
        ),
    }
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
/// sorted list of (path, content) for every readable top-level control file
/// (set_event_pid, set_ftrace_pid, dynamic_events, uprobe_events,
/// buffer_size_kb…), options/, every event's and system's
/// enable/filter/trigger, the instance list and each instance's own files,
/// and the stack tracer switch. Unreadable files are recorded by their
/// error (EPERM stays EPERM). Statistics, buffers and logs are left out.
pub fn snapshot(root: &Path) -> Vec<(String, String)> {
    let mut v = Vec::new();
    snapshot_dir(root, "", &mut v);
    let mut inst: Vec<String> = std::fs::read_dir(root.join("instances"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    inst.sort();
    for i in &inst {
        snapshot_dir(&root.join("instances").join(i), &format!("instances/{i}/"), &mut v);
    }
    v.push(("instances/".into(), inst.join(",")));
    for f in ["/proc/sys/kernel/stack_tracer_enabled", "/proc/sys/kernel/ftrace_enabled"] {
        if let Ok(s) = std::fs::read_to_string(f) {
            v.push((f.into(), s));
        }
    }
    v.sort();
    v
}

/// Files whose content changes by itself (statistics, buffers, logs) or that
/// are directories handled apart.
const VOLATILE: &[&str] = &[
    "trace",
    "trace_pipe",
    "per_cpu",
    "events",
    "instances",
    "options",
    "free_buffer",
    "trace_marker",
    "trace_marker_raw",
    "saved_cmdlines",
    "saved_tgids",
    "error_log",
    "available_filter_functions",
    "available_filter_functions_addrs",
    "touched_functions",
    "enabled_functions",
    "dyn_ftrace_total_info",
    "printk_formats",
    "snapshot",
    "trace_stat",
    "uprobe_profile",
    "kprobe_profile",
    "hwlat_detector",
    "osnoise",
    "stack_trace",
    "stack_max_size",
    "README",
];

fn read_state(p: &Path) -> String {
    match std::fs::read(p) {
        Ok(b) => {
            let s = String::from_utf8_lossy(&b).into_owned();
            // The kernel's own one-way change on a buffer's first use (any
            // tracing makes it): compared as what it reads after it.
            if p.file_name().is_some_and(|n| n == "buffer_size_kb") {
                if let Some(kb) = trbox::ctl::buffer_kb_in_use(&s, subbuf_data(p)) {
                    return format!("{kb}\n");
                }
            }
            s
        }
        Err(e) => format!("<{}>", e.kind()),
    }
}

/// The data bytes of a sub-buffer of the buffer whose `buffer_size_kb` is
/// `p` (the tracefs root's events/header_page; 4 KiB pages if unreadable).
fn subbuf_data(p: &Path) -> u64 {
    let header = p.parent().and_then(|dir| {
        let root = dir.ancestors().find(|a| a.join("events/header_page").exists())?;
        std::fs::read_to_string(root.join("events/header_page")).ok()
    });
    header.and_then(|h| trbox::format::HeaderPage::parse(&h).ok()).map_or(4080, |h| u64::from(h.data_size))
}

fn snapshot_dir(dir: &Path, prefix: &str, v: &mut Vec<(String, String)>) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if VOLATILE.contains(&name.as_str())
                || trbox::ctl::DERIVED.contains(&name.as_str())
                || e.file_type().map(|t| t.is_dir()).unwrap_or(true)
            {
                continue;
            }
            v.push((format!("{prefix}{name}"), read_state(&e.path())));
        }
    }
    if let Ok(rd) = std::fs::read_dir(dir.join("options")) {
        for e in rd.flatten() {
            v.push((format!("{prefix}options/{}", e.file_name().to_string_lossy()), read_state(&e.path())));
        }
    }
    let Ok(systems) = std::fs::read_dir(dir.join("events")) else { return };
    for s in systems.flatten() {
        let sys = s.file_name().to_string_lossy().into_owned();
        // The type getdents gave (no stat of each entry: a snapshot visits
        // every event, and each lookup costs on a TCG board).
        let is_dir = |e: &std::fs::DirEntry| e.file_type().is_ok_and(|t| t.is_dir());
        if !is_dir(&s) {
            // events/enable, header_page…
            if sys == "enable" {
                v.push((format!("{prefix}events/enable"), read_state(&s.path())));
            }
            continue;
        }
        for f in ["enable", "filter"] {
            v.push((format!("{prefix}events/{sys}/{f}"), read_state(&s.path().join(f))));
        }
        for ev in std::fs::read_dir(s.path()).into_iter().flatten().flatten() {
            if !is_dir(&ev) {
                continue;
            }
            for f in ["enable", "filter", "trigger"] {
                let rel = format!("{prefix}events/{sys}/{}/{f}", ev.file_name().to_string_lossy());
                v.push((rel, read_state(&ev.path().join(f))));
            }
        }
    }
}

/// Assert two snapshots are equal, naming every file that differs (or
/// appeared, or went away).
pub fn assert_same_state(before: &[(String, String)], after: &[(String, String)]) {
    use std::collections::BTreeMap;
    let b: BTreeMap<&str, &str> = before.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let a: BTreeMap<&str, &str> = after.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut diffs = Vec::new();
    for k in b.keys().chain(a.keys().filter(|k| !b.contains_key(*k))) {
        let (x, y) = (b.get(k), a.get(k));
        if x != y {
            diffs.push(format!("{k}: {x:?} -> {y:?}"));
        }
    }
    assert!(diffs.is_empty(), "tracefs changed:\n{}", diffs.join("\n"));
}

/// Sets tracefs files for a live test and puts them back on drop, also when
/// an assertion fails: tracing off, the old values in reverse order, the
/// buffer emptied, `tracing_on` as it was found.
pub struct Guard {
    root: PathBuf,
    restore: Vec<(String, String)>,
    tracing_on: Option<String>,
}

impl Guard {
    pub fn new(root: &Path) -> Self {
        let tracing_on = std::fs::read_to_string(root.join("tracing_on")).ok().map(|v| v.trim().to_string());
        Guard { root: root.into(), restore: Vec::new(), tracing_on }
    }

    /// Write `v` unless the file already holds it; false when the file is
    /// missing or the kernel refuses the value.
    pub fn set(&mut self, rel: &str, v: &str) -> bool {
        let p = self.root.join(rel);
        let Ok(old) = std::fs::read_to_string(&p) else { return false };
        let old = trbox::ctl::writable_value(&old).to_string();
        if old == v {
            return true;
        }
        if std::fs::write(&p, v).is_ok() {
            self.restore.push((rel.to_string(), old));
            return true;
        }
        false
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = std::fs::write(self.root.join("tracing_on"), "0");
        for (rel, v) in self.restore.drain(..).rev() {
            let _ = std::fs::write(self.root.join(&rel), v);
        }
        let _ = std::fs::write(self.root.join("trace"), "");
        if let Some(v) = &self.tracing_on {
            let _ = std::fs::write(self.root.join("tracing_on"), v);
        }
    }
}

/// A spawned run that is ended and reaped when dropped — also when an
/// assertion fails first, so that it does not go on holding the trbox lock
/// with tracefs changed for the tests after it: SIGTERM (trbox restores on
/// it), then SIGKILL after 10 s. Derefs to the [`Child`].
pub struct Running(Option<Child>);

/// Start `c` as a [`Running`].
pub fn spawn(c: &mut Command) -> Running {
    Running(Some(c.spawn().expect("spawn")))
}

impl Running {
    /// Wait for it and collect its output (as `Child::wait_with_output`).
    pub fn output(mut self) -> Output {
        self.0.take().expect("child").wait_with_output().expect("wait")
    }

    /// Send `sig` (unless it was reaped already: its pid may be reused).
    pub fn signal(&mut self, sig: i32) {
        if let Ok(None) = self.try_wait() {
            // SAFETY: a pid of our own unreaped child.
            unsafe { libc::kill(self.id() as i32, sig) };
        }
    }
}

impl std::ops::Deref for Running {
    type Target = Child;
    fn deref(&self) -> &Child {
        self.0.as_ref().expect("child")
    }
}

impl std::ops::DerefMut for Running {
    fn deref_mut(&mut self) -> &mut Child {
        self.0.as_mut().expect("child")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(c) = self.0.as_mut() else { return };
        if let Ok(None) = c.try_wait() {
            // SAFETY: a pid of our own unreaped child.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let t = std::time::Instant::now();
            while matches!(c.try_wait(), Ok(None)) && t.elapsed() < std::time::Duration::from_secs(10) {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Does `pid` hold a flock(2)? (/proc/locks: `1: FLOCK  ADVISORY  WRITE PID
/// MAJ:MIN:INODE 0 EOF`; waiters are listed as `1: -> FLOCK …`.)
pub fn holds_flock(pid: u32) -> bool {
    let pid = pid.to_string();
    std::fs::read_to_string("/proc/locks").unwrap_or_default().lines().any(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        w.get(1) == Some(&"FLOCK") && w.get(4) == Some(&pid.as_str())
    })
}

/// Is `pid` waiting for a flock(2) (/proc/locks: `1: -> FLOCK  ADVISORY
/// WRITE PID …`)?
pub fn waits_for_flock(pid: u32) -> bool {
    let pid = pid.to_string();
    std::fs::read_to_string("/proc/locks").unwrap_or_default().lines().any(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        w.get(1) == Some(&"->") && w.get(2) == Some(&"FLOCK") && w.get(5) == Some(&pid.as_str())
    })
}

/// Read a tracefs file with big reads: on this kernel events/header_page
/// and header_event answer only the first read() (so `fs::read`, which
/// starts with a 32-byte probe read, gets 32 bytes).
pub fn read_whole(p: &Path) -> Vec<u8> {
    use std::io::Read;
    let mut f = std::fs::File::open(p).unwrap();
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    out
}

/// The `format` file of every event directory below `dir` (an `events/SYS`
/// directory), in name order.
pub fn formats(dir: &Path) -> Vec<Vec<u8>> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("format").is_file())
        .collect();
    names.sort();
    names.iter().map(|p| read_whole(&p.join("format"))).collect()
}

/// The CPU numbers of a tracefs buffer directory's `per_cpu/cpuN`, ascending.
pub fn cpu_numbers(dir: &Path) -> Vec<u32> {
    let mut v: Vec<u32> = std::fs::read_dir(dir.join("per_cpu"))
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok())
        .collect();
    v.sort();
    v
}

/// Busy work that fires many kinds of events: processes, files, pipes,
/// sockets, timers, signals.
pub fn load() {
    use std::io::{Read, Write};
    let dir = std::env::temp_dir().join(format!("trbox-load-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    for i in 0..20 {
        let f = dir.join(format!("f{i}"));
        let _ = std::fs::write(&f, vec![i as u8; 8192]);
        let _ = std::fs::read(&f);
    }
    let _ = Command::new("sh")
        .args(["-c", "ls -l /proc/self/ >/dev/null; echo x | cat >/dev/null; sleep 0.02; kill -0 $$"])
        .status();
    if let Ok(l) = std::net::TcpListener::bind("127.0.0.1:0") {
        if let Ok(mut c) = l.local_addr().and_then(std::net::TcpStream::connect) {
            let _ = c.write_all(b"hello");
            if let Ok((mut s, _)) = l.accept() {
                let _ = s.read(&mut [0u8; 5]);
            }
        }
    }
    let _ = Command::new("sync").status();
    // not synchronisation: a timer and a wake-up to trace.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The total of events in a `tr-cat -o` summary on stderr.
pub fn recorded_total(err: &str) -> u64 {
    let head = err
        .lines()
        .find(|l| l.starts_with("tr-cat: ") && l.contains(" events, "))
        .unwrap_or_else(|| panic!("no summary in:\n{err}"));
    head.split(": ").nth(2).and_then(|s| s.split_whitespace().next()).and_then(|n| n.parse().ok()).unwrap()
}

/// Run trbox with `args`; its output and the ids of every thread it had
/// at any time of its run (/proc/PID/task, read every 10 ms until it
/// exits: its readers start whenever the run gets there, and live until
/// its end). Other tests' trbox processes may run meanwhile: these ids
/// tell this one apart.
pub fn with_threads(args: &[&str]) -> (Output, Vec<i64>) {
    use std::io::Read;
    use std::process::Stdio;
    let mut me = cmd(&trbox(), args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pipe = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = pipe(Box::new(me.stdout.take().unwrap()));
    let err = pipe(Box::new(me.stderr.take().unwrap()));
    let mut mine = std::collections::BTreeSet::new();
    let status = loop {
        if let Ok(d) = std::fs::read_dir(format!("/proc/{}/task", me.id())) {
            mine.extend(d.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i64>().ok()));
        }
        if let Some(s) = me.try_wait().unwrap() {
            break s;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let o = Output { status, stdout: out.join().unwrap(), stderr: err.join().unwrap() };
    (o, mine.into_iter().collect())
}

/// Start `c` (a trbox run on the live tracefs at `root`) and wait until
/// its traced window is open, whatever the load: `tracing_on` is switched
/// off for it first (the guard returned puts it back), so the run turning
/// it on is its window opening, after every setting is in place. 30 s at
/// most.
pub fn start_in_window(root: &Path, c: &mut Command) -> (Running, Guard) {
    let mut g = Guard::new(root);
    assert!(g.set("tracing_on", "0"), "tracing_on");
    let mut r = spawn(c);
    let t = std::time::Instant::now();
    while std::fs::read_to_string(root.join("tracing_on")).unwrap_or_default().trim() != "1" {
        if t.elapsed() > std::time::Duration::from_secs(30) || !matches!(r.try_wait(), Ok(None)) {
            r.signal(libc::SIGKILL);
            panic!("the run never opened its window: {}", stderr(&r.output()));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    (r, g)
}

/// Run trbox with `args` on a pseudo-terminal: stderr (and stdout too with
/// `stdout_too`, else /dev/null) is the pty's slave, `TERM` as given. Its
/// status and what the terminal received (the pty's onlcr makes each `\n` a
/// `\r\n`).
pub fn on_pty(args: &[&str], term: &str, stdout_too: bool) -> (std::process::ExitStatus, String) {
    use std::os::fd::FromRawFd;
    use std::process::Stdio;
    // SAFETY: posix_openpt/grantpt/unlockpt/ptsname on a new descriptor.
    let (master, slave) = unsafe {
        let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(m >= 0 && libc::grantpt(m) == 0 && libc::unlockpt(m) == 0, "no pty here");
        let name = std::ffi::CStr::from_ptr(libc::ptsname(m)).to_string_lossy().into_owned();
        (File::from(std::os::fd::OwnedFd::from_raw_fd(m)), File::options().write(true).open(name).unwrap())
    };
    let mut c = cmd(&trbox(), args);
    c.env("TERM", term);
    c.stdout(if stdout_too { Stdio::from(slave.try_clone().unwrap()) } else { Stdio::null() });
    c.stderr(slave);
    let mut child = spawn(&mut c);
    // The Command holds the slave too: the reader's EOF (EIO) needs it closed.
    drop(c);
    // The pty's reader: the child blocks once its buffer is full otherwise.
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        let _ = std::io::Read::read_to_end(&mut { master }, &mut all);
        all
    });
    let status = child.wait().unwrap();
    (status, String::from_utf8_lossy(&reader.join().unwrap()).into_owned())
}

/// The progress lines a run drew on its terminal ([`on_pty`]), each
/// `\rTEXT\x1b[K`, until the line was cleared (`\r\x1b[K`); and what came
/// after. None when the terminal got no progress line at all.
pub fn progress_lines(text: &str) -> Option<(Vec<&str>, &str)> {
    let (lines, rest) = text.split_once("\r\x1b[K")?;
    let lines: Vec<&str> = lines.split('\r').filter(|l| !l.is_empty()).collect();
    assert!(lines.iter().all(|l| l.ends_with("\x1b[K")), "not drawn in place: {text:?}");
    Some((lines.iter().map(|l| l.trim_end_matches("\x1b[K")).collect(), rest))
}
