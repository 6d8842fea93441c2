//! trace.dat files for [`crate::tracedat`]: a [`Source`] over a file,
//! read with `pread` (no shared file position).

use crate::tracedat::{IoError, Source};

impl Source for std::fs::File {
    fn read_at(&mut self, off: u64, buf: &mut [u8]) -> Result<usize, IoError> {
        Source::read_at(&mut &*self, off, buf)
    }
    fn size(&mut self) -> Option<u64> {
        Source::size(&mut &*self)
    }
}

/// A shared handle reads at given offsets too (positional reads: several
/// readers of one file do not move each other).
impl Source for &std::fs::File {
    fn read_at(&mut self, off: u64, buf: &mut [u8]) -> Result<usize, IoError> {
        use std::os::unix::fs::FileExt;
        let mut done = 0;
        while done < buf.len() {
            match FileExt::read_at(*self, &mut buf[done..], off + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(IoError(e.raw_os_error().unwrap_or(0))),
            }
        }
        Ok(done)
    }
    fn size(&mut self) -> Option<u64> {
        self.metadata().ok().map(|m| m.len())
    }
}
