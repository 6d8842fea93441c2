//! Reading `per_cpu/cpuN/trace_pipe_raw`: live (non-blocking, one whole
//! sub-buffer per read, EAGAIN = empty) or from a copied tree (a regular file
//! read to EOF in sub-buffer steps).

use super::error::Error;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// One CPU's page source.
pub(crate) struct RawPages {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    /// A copy on disk (not tracefs — whose files also look regular): read to
    /// EOF; a short tail is returned as a page of its own so the decoder can
    /// report it as truncated.
    regular: bool,
    done: bool,
    /// Pages [`RawPages::guess_endian`] read, handed out again first.
    held: Vec<Vec<u8>>,
}

impl RawPages {
    /// Open `path` for sub-buffers of `subbuf_size` bytes; `live` when it is
    /// the kernel's own trace_pipe_raw (see [`Tracefs::is_live`]).
    ///
    /// [`Tracefs::is_live`]: super::Tracefs::is_live
    pub(crate) fn open(path: &Path, subbuf_size: usize, live: bool) -> Result<Self, Error> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        let regular = !live;
        Ok(RawPages {
            file,
            path: path.into(),
            buf: vec![0; subbuf_size.max(1)],
            regular,
            done: false,
            held: Default::default(),
        })
    }

    /// The next page, or `None` when the buffer (or file) is empty for now.
    pub(crate) fn next_page(&mut self) -> Result<Option<&[u8]>, Error> {
        if !self.held.is_empty() {
            let page = self.held.remove(0);
            let n = page.len().min(self.buf.len());
            self.buf[..n].copy_from_slice(&page[..n]);
            return Ok(Some(&self.buf[..n]));
        }
        self.read_page()
    }

    /// The byte order of a copy's pages (which may come from a big-endian
    /// board): the one under which its first telling page makes sense;
    /// `None` when no page tells. The pages read to find it are handed out
    /// again by [`next_page`](Self::next_page): the file is read once.
    pub(crate) fn guess_endian(
        &mut self,
        layout: &crate::page::PageLayout,
    ) -> Result<Option<crate::abi::Endian>, Error> {
        while let Some(page) = self.read_page()? {
            let e = crate::page::guess_endian(layout, page);
            let page = page.to_vec();
            self.held.push(page);
            if e.is_some() {
                return Ok(e);
            }
        }
        Ok(None)
    }

    /// Whether the kernel has pages for this CPU of a live buffer. Not
    /// for a CPU that was offline when the buffer (an instance) was made:
    /// ring_buffer_alloc gives pages to the online CPUs only, and then a
    /// read of its trace_pipe_raw says ENODEV (kernel/trace/ring_buffer.c,
    /// ring_buffer_alloc_read_page, from tracing_buffers_read) and poll()
    /// EPOLLERR, every time. A page read to tell is handed out again by
    /// [`next_page`](Self::next_page).
    pub(crate) fn has_buffer(&mut self) -> Result<bool, Error> {
        match self.read_page() {
            Ok(Some(page)) => {
                let page = page.to_vec();
                self.held.push(page);
                Ok(true)
            }
            Ok(None) => Ok(true),
            Err(e) if e.errno() == Some(libc::ENODEV) => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn read_page(&mut self) -> Result<Option<&[u8]>, Error> {
        if self.done {
            return Ok(None);
        }
        let mut filled = 0;
        while filled < self.buf.len() {
            match self.file.read(&mut self.buf[filled..]) {
                Ok(0) => break,
                Ok(n) => {
                    filled += n;
                    // The kernel hands out a whole sub-buffer per read.
                    if !self.regular {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io(&self.path, e)),
            }
        }
        if filled == 0 {
            if self.regular {
                self.done = true;
            }
            return Ok(None);
        }
        if self.regular && filled < self.buf.len() {
            self.done = true;
        }
        Ok(Some(&self.buf[..filled]))
    }

    /// A copy's file (a descriptor of its own), its name and page size;
    /// `None` for the live pipe (a read consumes it).
    pub(crate) fn copy_file(&self) -> Option<(std::fs::File, &Path, usize)> {
        let file = self.file.try_clone().ok().filter(|_| self.regular)?;
        Some((file, &self.path, self.buf.len()))
    }

    /// Is this a copy on disk rather than the live pipe?
    pub(crate) fn is_regular(&self) -> bool {
        self.regular
    }

    /// The file's descriptor, for poll().
    pub(crate) fn fd(&self) -> std::os::unix::io::RawFd {
        use std::os::unix::io::AsRawFd;
        self.file.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::Endian;
    use crate::format::HeaderPage;
    use crate::page::PageLayout;

    /// Guessing a copy's byte order reads its first pages once and hands
    /// them out again: the pages come out as a fresh read gives them.
    #[test]
    fn the_pages_read_to_guess_the_byte_order_are_handed_out_again() {
        let tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/aarch64/events");
        let text = std::fs::read_to_string(tree.join("events/header_page")).unwrap();
        let layout = PageLayout::from(&HeaderPage::parse(&text).unwrap());
        let raw = tree.join("per_cpu/cpu0/trace_pipe_raw");
        let pages = |src: &mut RawPages| {
            let mut all = Vec::new();
            while let Some(p) = src.next_page().unwrap() {
                all.push(p.to_vec());
            }
            all
        };
        let fresh = pages(&mut RawPages::open(&raw, layout.subbuf_size(), false).unwrap());
        assert!(fresh.len() > 1);
        let mut src = RawPages::open(&raw, layout.subbuf_size(), false).unwrap();
        assert_eq!(src.guess_endian(&layout).unwrap(), Some(Endian::Little));
        assert_eq!(pages(&mut src), fresh);
    }
}
