//! Finding the tracing root (through /proc/self/mountinfo, mounting tracefs
//! when nothing is mounted: README, "Putting it on a board") and reading
//! files below it.

use super::error::Error;
use crate::ctl::CpuStats;
use crate::mountinfo::{self, Kind};
use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};

const TRACEFS_DEFAULT: &str = "/sys/kernel/tracing";
const DEBUGFS_DEFAULT: &str = "/sys/kernel/debug";

/// How the root was found; reported by `tr-on` and used to undo a mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// Given with `-T` / TRBOX_TRACEFS.
    Given,
    /// A mounted tracefs (from mountinfo).
    Tracefs,
    /// `tracing/` below a mounted debugfs.
    Debugfs,
    /// trbox mounted it and will unmount this path when done.
    MountedByUs(PathBuf),
}

/// An open tracing root: the top level, or an instance below it.
#[derive(Debug)]
pub(crate) struct Tracefs {
    /// The top-level tracing directory.
    top: PathBuf,
    /// The directory applets work in: `top`, or `top/instances/NAME`.
    dir: PathBuf,
    /// How the tracing directory was found.
    pub(crate) found: Found,
    /// The instance applets work in (`-B NAME`); `None`: the top level.
    pub(crate) instance: Option<String>,
    /// Leave a mount we made in place (`-k`).
    pub(crate) keep_mount: bool,
    /// An instance directory this run created (removed again on drop).
    created_instance: Option<PathBuf>,
    /// Keep a created instance (`-k`).
    pub(crate) keep_instance: bool,
}

fn has_events(dir: &Path) -> io::Result<bool> {
    match std::fs::metadata(dir.join("events")) {
        Ok(m) => Ok(m.is_dir()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

impl Tracefs {
    /// A tracing root at `dir` (for `-T`): it must exist and hold `events/`.
    /// A debugfs root holding `tracing/` is accepted too.
    pub(crate) fn at(dir: impl Into<PathBuf>) -> Result<Self, Error> {
        let mut dir: PathBuf = dir.into();
        // A symlink given is resolved once here: the run lock opens the
        // directory without following one.
        if dir.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink()) {
            if let Ok(real) = std::fs::canonicalize(&dir) {
                dir = real;
            }
        }
        match std::fs::metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(Error::NotTracefs(dir)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(Error::NoSuchDir(dir)),
            Err(e) => return Err(Error::io(dir, e)),
        }
        let root = if has_events(&dir).map_err(|e| Error::io(&dir, e))? {
            dir
        } else if has_events(&dir.join("tracing")).unwrap_or(false) {
            dir.join("tracing")
        } else {
            return Err(Error::NotTracefs(dir));
        };
        Ok(Self::new(root, Found::Given))
    }

    fn new(top: PathBuf, found: Found) -> Self {
        Tracefs {
            dir: top.clone(),
            top,
            found,
            instance: None,
            keep_mount: false,
            created_instance: None,
            keep_instance: false,
        }
    }

    /// Find the live tracing root: mountinfo first, then the well-known
    /// paths; when nothing is mounted and we are root, mount tracefs (debugfs
    /// on kernels before 4.1).
    pub(crate) fn discover() -> Result<Self, Error> {
        match Self::find() {
            Err(Error::NotMounted) if super::is_root() => Self::mount(),
            r => r,
        }
    }

    /// The mounted tracing root, as [`discover`](Self::discover) finds it,
    /// without mounting one: [`Error::NotMounted`] when none is.
    pub(crate) fn find() -> Result<Self, Error> {
        let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let mut denied: Option<Error> = None;
        let cands = mountinfo::tracefs_candidates(&text);
        for c in &cands {
            let p = PathBuf::from(&c.path);
            match has_events(&p) {
                Ok(true) => {
                    let found = if c.kind == Kind::Tracefs { Found::Tracefs } else { Found::Debugfs };
                    return Ok(Self::new(p, found));
                }
                Ok(false) => {}
                Err(e) => {
                    denied.get_or_insert(Error::io(p, e));
                }
            }
        }
        if let Some(e) = denied {
            return Err(e);
        }
        // No /proc, or a mount table we could not read: try the usual places.
        if cands.is_empty() {
            for p in [TRACEFS_DEFAULT, "/sys/kernel/debug/tracing"] {
                if has_events(Path::new(p)).unwrap_or(false) {
                    return Ok(Self::new(p.into(), Found::Tracefs));
                }
            }
        }
        Err(Error::NotMounted)
    }

    /// Mount tracefs at /sys/kernel/tracing; on kernels without tracefs (the
    /// directory is missing before 4.1) mount debugfs and use its tracing/.
    fn mount() -> Result<Self, Error> {
        let (fstype, target, root) = if Path::new(TRACEFS_DEFAULT).is_dir() {
            ("tracefs", PathBuf::from(TRACEFS_DEFAULT), PathBuf::from(TRACEFS_DEFAULT))
        } else {
            ("debugfs", PathBuf::from(DEBUGFS_DEFAULT), Path::new(DEBUGFS_DEFAULT).join("tracing"))
        };
        log::info!("mounting {fstype} on {}", target.display());
        mount(fstype, &target).map_err(|err| Error::Mount { fstype, target: target.clone(), err })?;
        if !has_events(&root).unwrap_or(false) {
            let _ = unmount(&target);
            return Err(Error::NotTracefs(root));
        }
        Ok(Self::new(root, Found::MountedByUs(target)))
    }

    /// `-T` when given, else discovery.
    pub(crate) fn open(given: Option<&str>) -> Result<Self, Error> {
        match given {
            Some(d) => Self::at(d),
            None => Self::discover(),
        }
    }

    /// Switch to `instances/NAME`, which must exist (read-only use).
    pub(crate) fn enter_instance(&mut self, name: &str) -> Result<(), Error> {
        if name.is_empty() {
            // -B '': the top-level buffer, where we are.
            return Ok(());
        }
        let d = self.top.join("instances").join(name);
        if instance_name_problem(name).is_some() || !has_events(&d).unwrap_or(false) {
            return Err(Error::NoInstance { name: name.into(), existing: self.instances().unwrap_or_default() });
        }
        self.dir = d;
        self.instance = Some(name.into());
        Ok(())
    }

    /// Is this the kernel's own tracefs/debugfs (not a copy on disk)?
    pub(crate) fn is_live(&self) -> bool {
        const TRACEFS_MAGIC: i64 = 0x7472_6163;
        const DEBUGFS_MAGIC: i64 = 0x6462_6720;
        let Ok(p) = cstr(&self.top) else { return false };
        // SAFETY: valid path and a zeroed statfs buffer for the call.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statfs(p.as_ptr(), &mut st) } != 0 {
            return false;
        }
        matches!(st.f_type as i64, TRACEFS_MAGIC | DEBUGFS_MAGIC)
    }

    /// Switch to `instances/NAME`, creating it if missing; an instance this
    /// run created is removed again when the Tracefs is dropped.
    pub(crate) fn enter_or_create_instance(&mut self, name: &str) -> Result<(), Error> {
        if name.is_empty() {
            return Ok(());
        }
        let d = self.top.join("instances").join(name);
        if instance_name_problem(name).is_some() {
            return Err(Error::NoInstance { name: name.into(), existing: self.instances().unwrap_or_default() });
        }
        if !d.exists() {
            std::fs::create_dir(&d).map_err(|e| Error::io(&d, e))?;
            self.created_instance = Some(d.clone());
        }
        self.enter_instance(name)
    }

    /// The top level as a Tracefs of its own, for the global files
    /// (`dynamic_events`) while working in an instance. Dropping it neither
    /// unmounts nor removes anything.
    pub(crate) fn top_level(&self) -> Tracefs {
        let found = match &self.found {
            Found::MountedByUs(_) => Found::Tracefs,
            f => f.clone(),
        };
        Self::new(self.top.clone(), found)
    }

    /// The same directory (top level or instance) as a Tracefs of its own,
    /// for a reader that follows it: dropping it neither unmounts nor
    /// removes anything.
    pub(crate) fn view(&self) -> Tracefs {
        let mut t = self.top_level();
        t.dir.clone_from(&self.dir);
        t.instance.clone_from(&self.instance);
        t
    }

    /// The top-level tracing directory.
    pub(crate) fn top(&self) -> &Path {
        &self.top
    }

    /// The directory this run works in (top or instance).
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// `rel` in the directory applets work in.
    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    /// Read a file below the working directory.
    pub(crate) fn read(&self, rel: &str) -> Result<String, Error> {
        let p = self.path(rel);
        read_text(&p).map_err(|e| Error::io(p, e))
    }

    /// Read a global file that lives only at the top level (saved_cmdlines,
    /// printk_formats…) even while working in an instance; `None` if absent.
    pub(crate) fn read_top_opt(&self, rel: &str) -> Result<Option<String>, Error> {
        let p = self.top.join(rel);
        match read_text(&p) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(p, e)),
        }
    }

    /// Read a file that a kernel may not have: `Ok(None)` when it is absent.
    pub(crate) fn read_opt(&self, rel: &str) -> Result<Option<String>, Error> {
        match self.read(rel) {
            Ok(s) => Ok(Some(s)),
            Err(Error::Io { err, .. }) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Does the file or directory exist below the working directory?
    pub(crate) fn exists(&self, rel: &str) -> bool {
        self.path(rel).symlink_metadata().is_ok()
    }

    /// Sorted names of the entries of a directory below the working
    /// directory (empty when it is absent).
    pub(crate) fn list_dir(&self, rel: &str) -> Result<Vec<String>, Error> {
        list(&self.path(rel))
    }

    /// Names of the instances (below the top level), sorted.
    pub(crate) fn instances(&self) -> Result<Vec<String>, Error> {
        list(&self.top.join("instances"))
    }

    /// Online CPU numbers that have a per_cpu directory, ascending.
    pub(crate) fn cpus(&self) -> Result<Vec<u32>, Error> {
        let mut v: Vec<u32> = self
            .list_dir("per_cpu")?
            .iter()
            .filter_map(|n| n.strip_prefix("cpu").and_then(|n| n.parse().ok()))
            .collect();
        v.sort_unstable();
        Ok(v)
    }

    /// `sys:event` for every event directory, sorted.
    pub(crate) fn list_events(&self) -> Result<Vec<String>, Error> {
        let mut v = Vec::new();
        // Live, the kernel lists them in one file: the events with an
        // `enable` (trace_events.c `t_next`: a `reg` and no
        // TRACE_EVENT_FL_IGNORE_ENABLE, the test `event_create_dir` makes
        // that file by), the same in every instance. One file instead of
        // a walk of ~100 directories (~700 system calls: 40 ms of a
        // board's start under TCG).
        let listed = if self.is_live() { read_text(&self.top.join("available_events")).ok() } else { None };
        if let Some(text) = listed {
            for l in text.lines() {
                v.push(l.to_string());
            }
        } else {
            // No stat of each of ~2,500 events (`tr-event -l` 16.8 → 3.0
            // ms): a system's own files are `enable` and `filter` (the top
            // level's files list as no events), and only the ftrace
            // system's records (function, print…) have no `enable` of
            // their own. A copy of a tree lists the events it has formats
            // for.
            for sys in self.list_dir("events")? {
                for ev in self.list_dir(&format!("events/{sys}")).unwrap_or_default() {
                    if !ev.contains('.')
                        && ev != "enable"
                        && ev != "filter"
                        && (sys != "ftrace" || self.exists(&format!("events/{sys}/{ev}/enable")))
                    {
                        v.push(format!("{sys}:{ev}"));
                    }
                }
            }
        }
        v.sort_unstable();
        Ok(v)
    }

    /// The event systems with an enabled event ([`set_events`]), ftrace
    /// left out; every system when that cannot be told. What a recording or a
    /// window can hold records of, besides ftrace's own.
    ///
    /// [`set_events`]: Self::set_events
    pub(crate) fn enabled_systems(&self) -> Vec<String> {
        // A persistent instance may hold a previous boot's events, which
        // nothing enables now: every system. Otherwise only the systems
        // named are looked at (no stat of ~100 systems).
        let set = if self.exists("last_boot_info") { None } else { self.set_events() };
        let names = match set {
            Some(set) => set.into_iter().map(|(s, _)| s).collect(),
            None => self.list_dir("events").unwrap_or_default(),
        };
        let mut on: Vec<String> =
            names.into_iter().filter(|s| s != "ftrace" && self.dir.join("events").join(s).is_dir()).collect();
        on.sort_unstable();
        on.dedup();
        on
    }

    /// The events `set_event` lists, as (system, event): those with
    /// EVENT_FILE_FL_ENABLED (kernel/trace/trace_events.c `s_next`), which
    /// an event with a trigger has too (the trigger soft-enables it:
    /// trace_events_trigger.c `trace_event_trigger_enable_disable`), and an
    /// enable_event trigger's target. None when it cannot be read.
    pub(crate) fn set_events(&self) -> Option<Vec<(String, String)>> {
        let set = self.read_opt("set_event").ok()??;
        let pair = |(s, e): (&str, &str)| (s.trim().to_string(), e.trim().to_string());
        Some(set.lines().filter_map(|l| l.split_once(':')).map(pair).collect())
    }

    /// `tracing_on`, or `tracing_enabled` on kernels before 2.6.37-ish.
    pub(crate) fn tracing_on_file(&self) -> &'static str {
        if self.exists("tracing_on") {
            "tracing_on"
        } else {
            "tracing_enabled"
        }
    }

    /// The trace clock now (the oldest CPU's view), so that what was already in
    /// the buffer is not shown as if this run had caused it.
    pub(crate) fn now(&self) -> Option<u64> {
        self.cpus()
            .ok()?
            .iter()
            .filter_map(|c| self.read(&format!("per_cpu/cpu{c}/stats")).ok())
            .filter_map(|s| CpuStats::parse(&s).now)
            .min()
    }

    /// What the buffer holds now and what consuming reads took out of it
    /// since it was reset (a new tracer, `echo > trace`): the sums of the
    /// CPUs' `entries` and `read events` (`per_cpu/cpuN/stats`). Reading
    /// the raw pages (`trace_pipe_raw`) consumes them: the kernel has no
    /// raw read that leaves them, only the `trace` text does.
    pub(crate) fn held(&self) -> Held {
        let mut h = Held::default();
        for c in self.cpus().unwrap_or_default() {
            let s = CpuStats::parse(&self.read(&format!("per_cpu/cpu{c}/stats")).unwrap_or_default());
            h.entries = h.entries.saturating_add(s.entries.unwrap_or(0));
            h.read = h.read.saturating_add(s.read.unwrap_or(0));
        }
        h
    }
}

/// `Tracefs::held`: the events a buffer holds, and those read out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Held {
    /// Events in the buffer now.
    pub(crate) entries: u64,
    /// Events consuming reads took out of it.
    pub(crate) read: u64,
}

/// `sys:event` → `events/sys/event`.
pub(crate) fn event_dir(e: &str) -> String {
    format!("events/{}", e.replacen(':', "/", 1))
}

/// Why `name` is not a plain instance name (`-B NAME`), or `None` when it
/// is one. The kernel takes any name mkdir takes, but `..` would be the top
/// level seen as an instance, a `/` a path below or beside it; a leading `-`
/// is an option given where the name was expected, a leading `.` a hidden
/// name, and control characters break every listing they are printed in.
pub(crate) fn instance_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("it is empty")
    } else if name.contains('/') {
        Some("it contains '/'")
    } else if name.starts_with('.') {
        Some("it starts with '.'")
    } else if name.starts_with('-') {
        Some("it starts with '-'")
    } else if name.chars().any(char::is_control) {
        Some("it contains a control character")
    } else {
        None
    }
}

/// Read a whole tracefs file. Some generated files (events/header_page on
/// 6.x) answer a small first read with a cut-off text and then EOF, so the
/// first read must be large — std::fs::read starts with a 32-byte probe
/// because tracefs reports size 0. A page on the stack takes such a text
/// (the kernel builds it in a trace_seq of at most a page) and most control
/// files in one read: a status reads every event's enable, filter and
/// trigger, and a 64 KiB heap buffer for each was an mmap and a munmap
/// apiece with musl's malloc (seconds under qemu's TCG).
pub(crate) fn read_text(p: &Path) -> io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(p)?;
    let mut page = [0u8; 4096];
    let mut buf = Vec::new();
    loop {
        match f.read(&mut page) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&page[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(match String::from_utf8(buf) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

fn list(dir: &Path) -> Result<Vec<String>, Error> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut v: Vec<String> = rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    v.sort_unstable();
    Ok(v)
}

impl Tracefs {
    /// Remove the instance this run created (unless kept): at the drop,
    /// or by a killed run's guard ([`super::state::State::guard`]).
    pub(crate) fn remove_own_instance(&self) {
        if let Some(d) = self.created_instance.as_ref().filter(|_| !self.keep_instance) {
            if let Err(e) = std::fs::remove_dir(d) {
                log::warn!("could not remove {}: {e}", d.display());
            }
        }
    }

    /// Undo the mount this run made (not under `keep_mount`): at the end
    /// of the run, or in its guard when the run was killed (the guard
    /// leaves with `_exit`: no second time).
    pub(crate) fn unmount_own(&self) {
        if let Found::MountedByUs(target) = &self.found {
            if !self.keep_mount {
                if let Err(e) = unmount(target) {
                    log::warn!("could not unmount {}: {e}", target.display());
                }
            }
        }
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        self.remove_own_instance();
        self.unmount_own();
    }
}

fn cstr(p: &Path) -> io::Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn mount(fstype: &str, target: &Path) -> io::Result<()> {
    let t = cstr(target)?;
    let fs = CString::new(fstype).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let src = CString::new("nodev").map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    // SAFETY: all pointers are valid NUL-terminated strings for the call.
    let r = unsafe { libc::mount(src.as_ptr(), t.as_ptr(), fs.as_ptr(), flags, std::ptr::null()) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn unmount(target: &Path) -> io::Result<()> {
    let t = cstr(target)?;
    // Lazy: a child of ours may still hold a file open below it.
    // SAFETY: valid NUL-terminated path.
    let r = unsafe { libc::umount2(t.as_ptr(), libc::MNT_DETACH) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
