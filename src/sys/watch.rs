//! Waiting for a tracefs file to change: inotify where the kernel notifies
//! the file (tracing_max_latency: 5.5+), with a time limit so that the
//! caller also polls it where it does not.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// A watch on one file (inotify, when there is one).
pub(crate) struct Watch {
    /// The inotify descriptor, or -1 when inotify is not available.
    fd: i32,
}

impl Watch {
    /// Watch `path` for writes.
    pub(crate) fn new(path: &Path) -> Watch {
        let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return Watch { fd: -1 } };
        // SAFETY: plain syscalls on a descriptor we own and a C string.
        unsafe {
            let mut fd = libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC);
            if fd >= 0 && libc::inotify_add_watch(fd, c.as_ptr(), libc::IN_MODIFY) < 0 {
                libc::close(fd);
                fd = -1;
            }
            Watch { fd }
        }
    }

    /// Wait up to `ms` milliseconds, or until `wake` is readable (a stop);
    /// whether the kernel said the file was modified.
    pub(crate) fn wait(&self, wake: i32, ms: i32) -> bool {
        let mut fds = [
            libc::pollfd { fd: self.fd, events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: wake, events: libc::POLLIN, revents: 0 },
        ];
        // SAFETY: a valid pollfd array (poll skips a negative fd); the read
        // drains the inotify events into a local buffer.
        unsafe {
            libc::poll(fds.as_mut_ptr(), 2, ms);
            if fds[0].revents & libc::POLLIN == 0 {
                return false;
            }
            let mut buf = [0u8; 256];
            while libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) > 0 {}
        }
        true
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if self.fd >= 0 {
            // SAFETY: our own descriptor, closed once.
            unsafe { libc::close(self.fd) };
        }
    }
}
