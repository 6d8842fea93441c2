//! The kernel's own text of a live buffer, from `trace_pipe`: what a build
//! without trbox's decoder (Cargo feature `decode`, left out of the
//! `minimal` configuration) shows while tracing. A read consumes what it
//! returns, as a read of `trace_pipe_raw` does; the lines are the
//! kernel's, the text trbox's decoder reproduces.

use super::error::Error;
use super::read::Out;
use super::stop::Stop;
use super::Tracefs;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::time::Duration;

/// How long a wait for text lasts before `stop` is asked again: the
/// kernel wakes a trace_pipe reader at every write, but `stop` (a
/// command's end) has no descriptor to wait on.
const TICK: Duration = Duration::from_millis(100);

/// A buffer's `trace_pipe`, open for reading.
pub(crate) struct TracePipe {
    f: std::fs::File,
    path: std::path::PathBuf,
}

impl TracePipe {
    /// Open the buffer's `trace_pipe` (before the traced command runs, as
    /// the decoder's readers are).
    pub(crate) fn open(t: &Tracefs) -> Result<Self, Error> {
        let path = t.path("trace_pipe");
        // Non-blocking: an empty buffer is EAGAIN, not a read that waits
        // for the next event after the window closed (tracing_wait_pipe()).
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        Ok(TracePipe { f, path })
    }

    /// Copy the text to `out` until `stop` says so (a command's end,
    /// Ctrl-C, SIGTERM, -t), then what is left (the caller has closed the
    /// window by then); stop early when `out`'s reader went away. Whether
    /// any text came.
    pub(crate) fn follow(self, out: &mut Out, stop: &Stop<'_>) -> Result<bool, Error> {
        let TracePipe { mut f, path } = self;
        let mut buf = vec![0u8; 64 * 1024];
        let mut stopping = false;
        while !out.broken() {
            stopping = stopping || stop.asked();
            match f.read(&mut buf) {
                Ok(n) if n > 0 => {
                    let _ = out.write_all(buf.get(..n).unwrap_or_default());
                    let _ = out.flush();
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => return Err(Error::io(&path, e)),
                // Empty (EAGAIN), or the end a reader gets once tracing is
                // off after it read something (0).
                _ if stopping => break,
                _ => wait(f.as_raw_fd(), stop.wake()),
            }
        }
        Ok(out.wrote())
    }
}

/// Sleep until `fd` has text, a stop was requested (`wake`), or a tick.
fn wait(fd: i32, wake: Option<i32>) {
    let mut fds = [libc::pollfd { fd, events: libc::POLLIN, revents: 0 }; 2];
    let n = match wake {
        Some(w) => {
            fds[1].fd = w;
            2
        }
        None => 1,
    };
    // SAFETY: fds holds n valid pollfd entries for the call.
    unsafe { libc::poll(fds.as_mut_ptr(), n, TICK.as_millis() as libc::c_int) };
}
