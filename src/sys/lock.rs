//! One trbox run per buffer: an exclusive flock on a lock file named after
//! the instance. The holder writes its pid and applet into the file so a
//! second run can say who is in the way.

use super::error::Error;
use std::fs::File;
use std::io::{Seek, Write};
use std::os::unix::io::AsRawFd;
use std::path::PathBuf;

/// Held for the run; released when dropped (or when the process dies).
pub struct Lock {
    _file: File,
}

fn lock_path(instance: Option<&str>) -> PathBuf {
    let name = match instance {
        Some(i) => format!("trbox-{i}.lock"),
        None => "trbox.lock".to_string(),
    };
    ["/run/lock", "/run", "/tmp"]
        .iter()
        .map(PathBuf::from)
        .find(|d| d.is_dir())
        .unwrap_or_else(|| PathBuf::from("/tmp"))
        .join(name)
}

impl Lock {
    /// Take the lock for `instance` (None = top level). With `wait`, block
    /// until the other run ends (Ctrl-C still works).
    pub fn take(instance: Option<&str>, wait: bool, who: &str) -> Result<Lock, Error> {
        let path = lock_path(instance);
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        let fd = file.as_raw_fd();
        // SAFETY: valid fd.
        if unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            // Read by path: std::fs's reader is in the binary anyway.
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            if !wait {
                return Err(Error::Busy { holder: holder.trim().to_string(), path });
            }
            log::warn!("waiting for {} to finish", holder.trim());
            loop {
                // SAFETY: valid fd.
                if unsafe { libc::flock(fd, libc::LOCK_EX) } == 0 {
                    break;
                }
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted || super::signals::stop_requested().is_some() {
                    return Err(Error::io(&path, e));
                }
            }
        }
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = write!(file, "pid {} ({who})", std::process::id());
        Ok(Lock { _file: file })
    }
}
