//! Buffered stdout that survives `| head` and a stuck reader: a closed pipe
//! (EPIPE; SIGPIPE is ignored) turns into "stop quietly" so the applet still
//! restores tracefs, instead of a panic from `print!`; and a write blocked on
//! a full pipe gives up once Ctrl-C/SIGTERM asked us to stop (std's writers
//! retry EINTR for ever).

use crate::cli::Error;
use std::io::{self, Write};

pub struct Out {
    buf: Vec<u8>,
    err: Option<io::Error>,
}

const CAP: usize = 64 * 1024;

impl Out {
    pub fn stdout() -> Self {
        Out { buf: Vec::with_capacity(CAP), err: None }
    }

    /// The reader went away (or writing failed): stop producing output.
    pub fn broken(&self) -> bool {
        self.err.is_some()
    }

    fn drain(&mut self) {
        let mut off = 0;
        while off < self.buf.len() && self.err.is_none() {
            let rest = &self.buf[off..];
            // SAFETY: writing an initialised buffer to fd 1.
            let n = unsafe { libc::write(1, rest.as_ptr().cast(), rest.len()) };
            if n >= 0 {
                off += n as usize;
                continue;
            }
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted && trbox::sys::signals::stop_requested().is_none() {
                continue;
            }
            self.err = Some(e);
        }
        self.buf.clear();
    }

    /// Flush; a closed pipe or an interrupted write at a stop is a normal
    /// end, any other error a failure.
    pub fn finish(mut self) -> Result<(), Error> {
        self.drain();
        match self.err.take() {
            None => Ok(()),
            Some(e) if matches!(e.kind(), io::ErrorKind::BrokenPipe | io::ErrorKind::Interrupted) => Ok(()),
            Some(e) => Err(Error::runtime(format!("cannot write output: {e}"))),
        }
    }
}

impl Out {
    /// Write out what is buffered once it is big enough: call between
    /// lines (lines are formatted straight into the buffer).
    pub fn line_done(&mut self) {
        if self.buf.len() >= CAP {
            self.drain();
        }
    }
}

/// Text goes straight into the buffer; [`Out::line_done`] writes it out.
impl std::fmt::Write for Out {
    #[inline]
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.err.is_none() {
            self.buf.extend_from_slice(s.as_bytes());
        }
        Ok(())
    }
}

impl Write for Out {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        if self.err.is_none() {
            self.buf.extend_from_slice(b);
            if self.buf.len() >= CAP {
                self.drain();
            }
        }
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.drain();
        Ok(())
    }
}

impl Drop for Out {
    fn drop(&mut self) {
        self.drain();
    }
}
