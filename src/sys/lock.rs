//! One trbox run per buffer: an exclusive flock(2) on the tracing directory
//! itself — the top level, or `instances/NAME`. Nothing is created or
//! written for it: a lock file in a shared directory (/run/lock, /tmp) may be
//! a symlink any local user planted, and root would truncate and write
//! whatever it points to (issue 12). flock is taken on the inode, so it works
//! on tracefs directories, and every mount of tracefs (/sys/kernel/tracing,
//! debugfs' tracing/) is the one superblock: the same lock whichever path a
//! run came by. Who holds it is read from /proc/locks.

use super::error::Error;
use std::fs::File;
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// Held for the run; released when dropped (or when the process dies). The
/// descriptor is close-on-exec: a traced command does not inherit it.
pub(crate) struct Lock {
    _dir: File,
}

impl Lock {
    /// Lock `dir` (the Tracefs' [`dir`](super::Tracefs::dir): the top level
    /// or the instance). With `wait`, block until the other run ends
    /// (Ctrl-C still works).
    pub(crate) fn take(dir: &Path, wait: bool) -> Result<Lock, Error> {
        // Only read, never created; O_DIRECTORY so that no device or fifo is
        // ever opened, O_NOFOLLOW for good measure (std adds O_CLOEXEC).
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(dir)
            .map_err(|e| Error::io(dir, e))?;
        let fd = file.as_raw_fd();
        // SAFETY: valid fd.
        if unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(Lock { _dir: file });
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(Error::io(dir, e));
        }
        let holder = holder(&file).unwrap_or_default();
        if !wait {
            return Err(Error::Busy { holder, path: dir.into() });
        }
        log::warn!("waiting for {} to finish", if holder.is_empty() { "another trbox run" } else { &holder });
        loop {
            // SAFETY: valid fd.
            if unsafe { libc::flock(fd, libc::LOCK_EX) } == 0 {
                break;
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted || super::signals::stop_requested().is_some() {
                return Err(Error::io(dir, e));
            }
        }
        // The run waited for may have removed the directory (an instance it
        // created): its files are gone, say so rather than fail on each.
        let same = |m: std::fs::Metadata| file.metadata().is_ok_and(|f| f.dev() == m.dev() && f.ino() == m.ino());
        if !std::fs::symlink_metadata(dir).is_ok_and(same) {
            return Err(Error::io(dir, io::Error::from_raw_os_error(libc::ENOENT)));
        }
        Ok(Lock { _dir: file })
    }
}

/// "pid N (tr-event)" for the process holding the flock on `f`, if
/// /proc/locks shows it.
fn holder(f: &File) -> Option<String> {
    let m = f.metadata().ok()?;
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    let pid = holder_pid(&locks, dev_major(m.dev()), dev_minor(m.dev()), m.ino())?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    Some(match applet_name(&cmdline).or(Some(comm.trim()).filter(|c| !c.is_empty())) {
        Some(name) => format!("pid {pid} ({name})"),
        None => format!("pid {pid}"),
    })
}

/// The pid of the flock on device `maj:min`, inode `ino` in /proc/locks
/// (fs/locks.c lock_get_status): `1: FLOCK  ADVISORY  WRITE 5227 00:0d:1 0
/// EOF`, device numbers in hex; waiters are `1: -> FLOCK …` and are skipped.
fn holder_pid(locks: &str, maj: u64, min: u64, ino: u64) -> Option<u32> {
    locks.lines().find_map(|l| {
        let mut w = l.split_whitespace().skip(1);
        if w.next()? != "FLOCK" {
            return None;
        }
        let pid: u32 = w.nth(2)?.parse().ok()?;
        let mut id = w.next()?.split(':');
        let a = u64::from_str_radix(id.next()?, 16).ok()?;
        let b = u64::from_str_radix(id.next()?, 16).ok()?;
        let i: u64 = id.next()?.parse().ok()?;
        (pid > 0 && (a, b, i) == (maj, min, ino)).then_some(pid)
    })
}

/// The applet a command line runs: `tr-on …` (a link) or `trbox tr-on …`.
fn applet_name(cmdline: &[u8]) -> Option<&str> {
    let mut args = cmdline.split(|&b| b == 0).filter_map(|a| std::str::from_utf8(a).ok());
    let argv0 = args.next()?.rsplit('/').next()?;
    if argv0.starts_with("tr-") {
        return Some(argv0);
    }
    args.next().filter(|a| argv0 == "trbox" && a.starts_with("tr-"))
}

// The kernel's dev_t as stat(2) gives it (glibc's gnu_dev_major/minor).
fn dev_major(dev: u64) -> u64 {
    ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff)
}

fn dev_minor(dev: u64) -> u64 {
    (dev & 0xff) | ((dev >> 12) & !0xff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holder_from_proc_locks() {
        let locks = "1: POSIX  ADVISORY  WRITE 77 00:0d:1 0 EOF\n\
                     2: FLOCK  ADVISORY  WRITE 5227 00:0d:1 0 EOF\n\
                     2: -> FLOCK  ADVISORY  WRITE 5300 00:0d:1 0 EOF\n\
                     3: FLOCK  ADVISORY  WRITE 12 fd:1a:4711 0 EOF\n\
                     4: FLOCK  ADVISORY  WRITE 13 <none>:0 0 EOF\n";
        assert_eq!(holder_pid(locks, 0, 0xd, 1), Some(5227));
        assert_eq!(holder_pid(locks, 0xfd, 0x1a, 4711), Some(12));
        assert_eq!(holder_pid(locks, 0, 0xd, 2), None);
        assert_eq!(holder_pid("", 0, 0xd, 1), None);
        assert_eq!(holder_pid("1: FLOCK\n2: FLOCK ADVISORY WRITE x 0:0:1\n", 0, 0, 1), None);
    }

    #[test]
    fn applet_names() {
        assert_eq!(applet_name(b"/usr/bin/trbox\0tr-on\0-t\x003\0"), Some("tr-on"));
        assert_eq!(applet_name(b"/bin/tr-event\0sched:sched_switch\0"), Some("tr-event"));
        assert_eq!(applet_name(b"tr-cat\0"), Some("tr-cat"));
        assert_eq!(applet_name(b"flock\0/sys/kernel/tracing\0sleep\0"), None);
        assert_eq!(applet_name(b"trbox\0--list\0"), None);
        assert_eq!(applet_name(b""), None);
    }

    #[test]
    fn device_numbers() {
        let dev = libc::makedev(0xfd, 0x12345);
        assert_eq!((dev_major(dev), dev_minor(dev)), (0xfd, 0x12345));
    }
}
