//! Files for [`crate::elf`]: found like a shell finds a command, mapped
//! read-only so that a big binary costs only the pages the symbol lookup
//! touches (read whole where a filesystem cannot map).

use super::error::Error;
use crate::elf::{Elf, Location};
use std::io;
use std::path::{Path, PathBuf};

/// Debian's multiarch tuple (`/lib/<tuple>`) for the architecture trbox
/// was built for.
#[cfg(target_arch = "x86_64")]
macro_rules! multiarch {
    () => {
        "x86_64-linux-gnu"
    };
}
#[cfg(target_arch = "aarch64")]
macro_rules! multiarch {
    () => {
        "aarch64-linux-gnu"
    };
}
#[cfg(target_arch = "arm")]
macro_rules! multiarch {
    () => {
        "arm-linux-gnueabihf"
    };
}
#[cfg(target_arch = "x86")]
macro_rules! multiarch {
    () => {
        "i386-linux-gnu"
    };
}
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "arm", target_arch = "x86")))]
macro_rules! multiarch {
    () => {
        "riscv64-linux-gnu"
    };
}

/// A file's bytes: a read-only private mapping, or a copy.
pub(crate) struct FileBytes {
    map: Option<(*mut libc::c_void, usize)>,
    copy: Vec<u8>,
}

impl FileBytes {
    /// The bytes of the file at `path`: mapped, or read where mapping fails.
    pub(crate) fn open(path: &Path) -> io::Result<Self> {
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
            let p =
                unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_PRIVATE, f.as_raw_fd(), 0) };
            if p != libc::MAP_FAILED {
                return Ok(FileBytes { map: Some((p, len)), copy: Vec::new() });
            }
        }
        // Not mappable: a copy, read by path (std::fs's reader is in the
        // binary anyway).
        Ok(FileBytes { map: None, copy: std::fs::read(path)? })
    }

    /// The file's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
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

/// A file named like on a command line: a path (made absolute, links
/// resolved: the kernel wants one); a bare library name (`libc.so.6`,
/// `libfoo.so`) in `$LD_LIBRARY_PATH` and then the directories the dynamic
/// loader searches by default (`LIB_DIRS`); any other bare name in
/// `$PATH`. Last, relative to the current directory. (The libraries a
/// `-- CMD` maps are not known yet: its probes are in place before it runs.)
pub(crate) fn locate(name: &str) -> Result<PathBuf, Error> {
    let cands: Vec<PathBuf> = if name.contains('/') {
        vec![PathBuf::from(name)]
    } else {
        let var = |v| std::env::var(v).unwrap_or_default();
        let path = if name.ends_with(".so") || name.contains(".so.") {
            format!("{}:{LIB_DIRS}", var("LD_LIBRARY_PATH"))
        } else {
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())
        };
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

/// Where a bare library name is looked for after `$LD_LIBRARY_PATH`: the
/// Debian/Ubuntu multiarch directories of this architecture, the 64-bit
/// ones of other distributions, then the plain ones (musl, Buildroot,
/// Yocto). /etc/ld.so.conf is not read: boards rarely add to it.
pub(crate) const LIB_DIRS: &str =
    concat!("/lib/", multiarch!(), ":/usr/lib/", multiarch!(), ":/lib64:/usr/lib64:/lib:/usr/lib");

/// `SYMBOL[+OFF]` (or a file offset) in the ELF file at `path` → where a
/// uprobe goes.
pub(crate) fn resolve(path: &Path, spec: &str) -> Result<Location, Error> {
    let f = FileBytes::open(path).map_err(|e| Error::io(path, e))?;
    let elf = Elf::parse(f.bytes()).map_err(|err| Error::Elf { path: path.into(), err })?;
    elf.resolve(spec).map_err(|err| Error::Elf { path: path.into(), err })
}
