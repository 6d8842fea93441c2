//! Files for [`crate::elf`]: found like a shell finds a command, mapped
//! read-only so that a big binary costs only the pages the symbol lookup
//! touches (read whole where a filesystem cannot map).

use super::error::Error;
use crate::elf::{Elf, Location};
use std::io;
use std::path::{Path, PathBuf};

/// A file's bytes: a read-only private mapping, or a copy.
pub struct FileBytes {
    map: Option<(*mut libc::c_void, usize)>,
    copy: Vec<u8>,
}

impl FileBytes {
    pub fn open(path: &Path) -> io::Result<Self> {
        use std::os::unix::io::AsRawFd;
        let f = std::fs::File::open(path)?;
        let meta = f.metadata()?;
        if meta.is_dir() {
            return Err(io::Error::from_raw_os_error(libc::EISDIR));
        }
        let len = usize::try_from(meta.len()).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
        if len > 0 && meta.is_file() {
            // SAFETY: a fresh mapping of an open file; the pointer is only
            // used within `len` and unmapped once, on drop.
            let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_PRIVATE, f.as_raw_fd(), 0) };
            if p != libc::MAP_FAILED {
                return Ok(FileBytes { map: Some((p, len)), copy: Vec::new() });
            }
        }
        // Not mappable: a copy, read by path (std::fs's reader is in the
        // binary anyway).
        Ok(FileBytes { map: None, copy: std::fs::read(path)? })
    }

    pub fn bytes(&self) -> &[u8] {
        match self.map {
            // SAFETY: the mapping is `len` bytes, readable, alive until drop.
            Some((p, len)) => unsafe { std::slice::from_raw_parts(p as *const u8, len) },
            None => &self.copy,
        }
    }
}

impl Drop for FileBytes {
    fn drop(&mut self) {
        if let Some((p, len)) = self.map.take() {
            // SAFETY: unmapping the mapping made in open(), once.
            unsafe { libc::munmap(p, len) };
        }
    }
}

/// A program named like on a command line: a path (made absolute, links
/// resolved: the kernel wants one), or a bare name looked up in `$PATH`.
pub fn locate(name: &str) -> Result<PathBuf, Error> {
    let cands: Vec<PathBuf> = if name.contains('/') {
        vec![PathBuf::from(name)]
    } else {
        let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
        let mut v: Vec<PathBuf> = path.split(':').filter(|d| !d.is_empty()).map(|d| Path::new(d).join(name)).collect();
        v.push(PathBuf::from(name));
        v
    };
    let mut first = None;
    for c in &cands {
        match std::fs::canonicalize(c) {
            Ok(p) if p.is_file() => return Ok(p),
            Ok(p) => {
                first.get_or_insert(Error::io(p, io::Error::from_raw_os_error(libc::EISDIR)));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                first.get_or_insert(Error::io(c, e));
            }
        }
    }
    Err(first.unwrap_or_else(|| Error::io(name, io::Error::from_raw_os_error(libc::ENOENT))))
}

/// `SYMBOL[+OFF]` (or a file offset) in the ELF file at `path` → where a
/// uprobe goes.
pub fn resolve(path: &Path, spec: &str) -> Result<Location, Error> {
    let f = FileBytes::open(path).map_err(|e| Error::io(path, e))?;
    let elf = Elf::parse(f.bytes()).map_err(|err| Error::Elf { path: path.into(), err })?;
    elf.resolve(spec).map_err(|err| Error::Elf { path: path.into(), err })
}
