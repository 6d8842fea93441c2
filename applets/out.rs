//! Buffered stdout that survives `| head` and a stuck reader: a closed pipe
//! (EPIPE; SIGPIPE is ignored) turns into "stop quietly" so the applet still
//! restores tracefs, instead of a panic from `print!`; and a write blocked on
//! a full pipe gives up once Ctrl-C/SIGTERM asked us to stop (std's writers
//! retry EINTR for ever).
//!
//! Lines are formatted straight into the buffer (it is a `fmt::Write`): a
//! fixed block with a fill mark, so each piece of a line is one copy.

use crate::cli::Error;
use std::io::{self, Write};

pub struct Out {
    buf: Box<[u8]>,
    len: usize,
    err: Option<io::Error>,
}

const CAP: usize = 64 * 1024;
/// [`Out::line_done`] writes out once this much is buffered, so writes
/// usually end on a line boundary.
const HIGH: usize = CAP - 8 * 1024;

impl Out {
    pub fn stdout() -> Self {
        Out { buf: vec![0; CAP].into_boxed_slice(), len: 0, err: None }
    }

    /// The reader went away (or writing failed): stop producing output.
    pub fn broken(&self) -> bool {
        self.err.is_some()
    }

    fn drain(&mut self) {
        let n = self.len;
        self.len = 0;
        write_fd(&mut self.err, self.buf.get(..n).unwrap_or(&[]));
    }

    /// Write out what is buffered once it is big enough: call between
    /// lines.
    pub fn line_done(&mut self) {
        if self.len >= HIGH {
            self.drain();
        }
    }

    fn put(&mut self, b: &[u8]) {
        if self.err.is_some() {
            return;
        }
        let end = self.len + b.len();
        if let Some(d) = self.buf.get_mut(self.len..end) {
            d.copy_from_slice(b);
            self.len = end;
            return;
        }
        self.drain();
        match self.buf.get_mut(..b.len()) {
            Some(d) => {
                d.copy_from_slice(b);
                self.len = b.len();
            }
            None => write_fd(&mut self.err, b),
        }
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

/// Write all of `b` to fd 1 unless an error was seen; record the first.
fn write_fd(err: &mut Option<io::Error>, b: &[u8]) {
    let mut off = 0;
    while off < b.len() && err.is_none() {
        let rest = b.get(off..).unwrap_or(&[]);
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
        *err = Some(e);
    }
}

impl std::fmt::Write for Out {
    #[inline]
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.put(s.as_bytes());
        Ok(())
    }
}

impl Write for Out {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.put(b);
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
