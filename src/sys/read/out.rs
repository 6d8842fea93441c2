//! Buffered stdout that survives `| head` and a stuck reader: a closed pipe
//! (EPIPE; SIGPIPE is ignored) turns into "stop quietly" so the applet still
//! restores tracefs, instead of a panic from `print!`; and a write blocked on
//! a full pipe gives up once Ctrl-C/SIGTERM asked us to stop (std's writers
//! retry EINTR for ever).
//!
//! Lines are formatted straight into the buffer (it is a `fmt::Write`): a
//! block of fixed capacity, so each piece of a line is one copy.

use crate::sys::error::Error;
use std::io::{self, Write};

/// Standard output, buffered (or a block of text in memory).
pub struct Out {
    buf: Vec<u8>,
    err: Option<io::Error>,
    /// A block of text in memory (a worker's batch, see parallel.rs): it only
    /// grows and is never written out by itself.
    mem: bool,
    /// Anything was put: an applet whose window showed nothing says so.
    wrote: bool,
}

const CAP: usize = 64 * 1024;
/// [`Out::line_done`] writes out once this much is buffered, so writes
/// usually end on a line boundary.
const HIGH: usize = CAP - 8 * 1024;

impl Out {
    /// Standard output (fd 1).
    pub fn stdout() -> Self {
        Out { buf: Vec::with_capacity(CAP), err: None, mem: false, wrote: false }
    }

    /// Text kept in memory, to be written later with [`Out::put_block`].
    pub fn memory() -> Self {
        Out { buf: Vec::new(), err: None, mem: true, wrote: false }
    }

    /// Nothing is buffered (for a block in memory: nothing was written).
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// What is buffered (a block in memory: all of it).
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The reader went away (or writing failed): stop producing output.
    pub fn broken(&self) -> bool {
        self.err.is_some()
    }

    fn drain(&mut self) {
        if !self.mem {
            write_fd(&mut self.err, &self.buf);
            self.buf.clear();
        }
    }

    /// Write out what is buffered once it is big enough: call between
    /// lines.
    pub fn line_done(&mut self) {
        if self.buf.len() >= HIGH {
            self.drain();
        }
    }

    /// Was anything put (a line, a block)?
    pub fn wrote(&self) -> bool {
        self.wrote
    }

    fn put(&mut self, b: &[u8]) {
        if self.err.is_some() {
            return;
        }
        self.wrote |= !b.is_empty();
        if !self.mem && self.buf.len() + b.len() > CAP {
            self.drain();
            if b.len() > CAP {
                // Big blocks go out as they are, not through the buffer.
                return write_fd(&mut self.err, b);
            }
        }
        self.buf.extend_from_slice(b);
    }

    /// Append a block of text made in memory, and empty it for reuse.
    pub fn put_block(&mut self, block: &mut Out) {
        self.put(&block.buf);
        block.buf.clear();
    }

    /// Flush; a closed pipe or an interrupted write at a stop is a normal
    /// end, any other error a failure.
    pub fn finish(mut self) -> Result<(), Error> {
        self.drain();
        match self.err.take() {
            None => Ok(()),
            Some(e) if matches!(e.kind(), io::ErrorKind::BrokenPipe | io::ErrorKind::Interrupted) => Ok(()),
            Some(e) => Err(Error::Output(e)),
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
        if e.kind() == io::ErrorKind::Interrupted && crate::sys::signals::stop_requested().is_none() {
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
