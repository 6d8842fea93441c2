//! Buffered stdout that survives `| head`: a closed pipe (EPIPE; SIGPIPE is
//! ignored) turns into "stop quietly" so the applet still restores tracefs,
//! instead of a panic from `print!`.

use crate::cli::Error;
use std::io::{self, BufWriter, Stdout, Write};

pub struct Out {
    w: BufWriter<Stdout>,
    err: Option<io::Error>,
}

impl Out {
    pub fn stdout() -> Self {
        Out { w: BufWriter::with_capacity(64 * 1024, io::stdout()), err: None }
    }

    /// The reader went away (or writing failed): stop producing output.
    pub fn broken(&self) -> bool {
        self.err.is_some()
    }

    /// Flush; a closed pipe is a normal end, any other error a failure.
    pub fn finish(mut self) -> Result<(), Error> {
        if self.err.is_none() {
            if let Err(e) = self.w.flush() {
                self.err = Some(e);
            }
        }
        match self.err.take() {
            None => Ok(()),
            Some(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
            Some(e) => Err(Error::runtime(format!("cannot write output: {e}"))),
        }
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.err.is_some() {
            return Ok(buf.len());
        }
        match self.w.write_all(buf) {
            Ok(()) => Ok(buf.len()),
            Err(e) => {
                self.err = Some(e);
                Ok(buf.len())
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.err.is_none() {
            if let Err(e) = self.w.flush() {
                self.err = Some(e);
            }
        }
        Ok(())
    }
}

impl Drop for Out {
    fn drop(&mut self) {
        let _ = self.w.flush();
    }
}
