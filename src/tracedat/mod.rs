//! trace-cmd's `trace.dat` container, versions 6 and 7, sans-IO.
//!
//! * `read`: [`TraceDat::read`] parses the metadata (header files, event
//!   formats, kallsyms, printk formats, saved cmdlines, options, instances)
//!   through a [`Source`] — anything that can fill a buffer from a file
//!   offset (a byte slice, or a file with `pread` in the std layer). The page
//!   data is not loaded: every `Instance` lists per-CPU `(offset, size)`
//!   ranges, and [`DatPages`] hands out one sub-buffer at a time (for
//!   compressed v7 data, one decompressed chunk of a few pages is held), so
//!   memory stays flat however large the file is.
//! * `write`: `V6Writer` produces the bytes of a version 6 header in
//!   order; the caller appends the page-aligned per-CPU data and patches the
//!   flyrecord table (and, if reserved, the options) at the positions the
//!   writer returned.
//!
//! Malformed input never panics: every failure is an [`Error`] that names the
//! section and the byte offset where reading stopped.

use alloc::string::String;
use core::fmt;

mod compress;
pub(crate) mod console;
pub(crate) mod deflate;
pub(crate) mod msg;
pub(crate) mod read;
pub(crate) mod stream;
pub(crate) mod write;

#[cfg(test)]
pub(crate) use compress::{decompress, Compression};
pub(crate) use read::{selected_clock, Instance};
pub use read::{DatPages, TraceDat};
pub(crate) use write::{
    cpustat_text, encode_flyrecord_table, encode_options, encode_u32, fit_cmdlines, FlyrecordSlot, OptionsSlot,
    V6Writer, WriteError, WriteOptions, CMDLINES_PAD,
};
// What the tests name of the writer.
#[cfg(test)]
pub(crate) use write::{data_layout, encode_flyrecord_header, encode_u64};

pub(crate) use crate::abi::Endian;

/// The first ten bytes of every trace.dat.
pub(crate) const MAGIC: [u8; 10] = [0x17, 0x08, 0x44, b't', b'r', b'a', b'c', b'i', b'n', b'g'];

/// Option (and v7 section) ids, as trace-cmd numbers them (`enum
/// tracecmd_file_options`, trace-cmd's include/private/trace-cmd-private.h,
/// 3.x). trbox reads the ones its output needs and steps over the rest.
pub(crate) mod opt {
    /// Ends the option list.
    pub(crate) const DONE: u16 = 0;
    /// Time offset of the trace clock to wall-clock time (`--date`).
    pub(crate) const DATE: u16 = 1;
    /// One CPU's `per_cpu/cpuN/stats` text at the end of the recording.
    pub(crate) const CPUSTAT: u16 = 2;
    /// An instance's buffer: its data offset and name (v7: also its clock, page size and CPU table).
    pub(crate) const BUFFER: u16 = 3;
    /// The `trace_clock` file's text, the selected clock in brackets.
    pub(crate) const TRACECLOCK: u16 = 4;
    /// `uname -a` of the traced machine, as text.
    pub(crate) const UNAME: u16 = 5;
    /// A `--hook` definition (trace-cmd's event hooks).
    pub(crate) const HOOK: u16 = 6;
    /// A time stamp offset to add to every event.
    pub(crate) const OFFSET: u16 = 7;
    /// The number of CPUs (a u32).
    pub(crate) const CPUCOUNT: u16 = 8;
    /// The trace-cmd version that wrote the file, as text.
    pub(crate) const VERSION: u16 = 9;
    /// `/proc/PID/maps` of the traced processes (`--proc-map`).
    pub(crate) const PROCMAPS: u16 = 10;
    /// The recording's 64-bit id, shared by host and guest files.
    pub(crate) const TRACEID: u16 = 11;
    /// Host-guest clock offsets and scaling (`trace-cmd agent`).
    pub(crate) const TIME_SHIFT: u16 = 12;
    /// A guest's name, id and CPU-to-host-task table.
    pub(crate) const GUEST: u16 = 13;
    /// The multiplier, shift and offset to turn TSC ticks into ns.
    pub(crate) const TSC2NSEC: u16 = 14;
    /// v7: the section with `header_page` and `header_event`.
    pub(crate) const HEADER_INFO: u16 = 16;
    /// v7: the section with the `ftrace` system's formats.
    pub(crate) const FTRACE_EVENTS: u16 = 17;
    /// v7: the section with every other system's formats.
    pub(crate) const EVENT_FORMATS: u16 = 18;
    /// v7: the section with `/proc/kallsyms`.
    pub(crate) const KALLSYMS: u16 = 19;
    /// v7: the section with `printk_formats`.
    pub(crate) const PRINTK: u16 = 20;
    /// v7: the section with `saved_cmdlines`.
    pub(crate) const CMDLINES: u16 = 21;
    /// v7: an instance recorded as text (latency tracers), not pages.
    pub(crate) const BUFFER_TEXT: u16 = 22;
    /// The kernel's BTF (`/sys/kernel/btf/vmlinux`).
    pub(crate) const BTF_FILE: u16 = 23;
    /// The previous boot's persistent buffer: its module and text addresses (`last_boot_info`).
    pub(crate) const LAST_BOOT_INFO: u16 = 24;
    /// `/proc/modules` of the traced machine.
    pub(crate) const MODULES_FILE: u16 = 25;
}

/// A failed read from a [`Source`]: the OS error number (0 when unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoError(pub i32);

/// Random access to the bytes of a trace.dat. The core never does I/O
/// itself; the caller implements this (slices and, with `std`, files do).
pub trait Source {
    /// Fill `buf` from offset `off`. Returns the number of bytes read; fewer
    /// than `buf.len()` only at the end of the file.
    fn read_at(&mut self, off: u64, buf: &mut [u8]) -> Result<usize, IoError>;
    /// Total length, when known (used to reject sizes larger than the file
    /// before allocating for them).
    fn size(&mut self) -> Option<u64>;
}

impl Source for &[u8] {
    fn read_at(&mut self, off: u64, buf: &mut [u8]) -> Result<usize, IoError> {
        let Ok(off) = usize::try_from(off) else { return Ok(0) };
        let Some(rest) = self.get(off..) else { return Ok(0) };
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        Ok(n)
    }
    fn size(&mut self) -> Option<u64> {
        Some(<[u8]>::len(self) as u64)
    }
}

impl Source for alloc::vec::Vec<u8> {
    fn read_at(&mut self, off: u64, buf: &mut [u8]) -> Result<usize, IoError> {
        self.as_slice().read_at(off, buf)
    }
    fn size(&mut self) -> Option<u64> {
        Some(alloc::vec::Vec::len(self) as u64)
    }
}

impl<S: Source + ?Sized> Source for &mut S {
    fn read_at(&mut self, off: u64, buf: &mut [u8]) -> Result<usize, IoError> {
        (**self).read_at(off, buf)
    }
    fn size(&mut self) -> Option<u64> {
        (**self).size()
    }
}

/// Why reading stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    /// The file ends (or the section ends) before the data it announces.
    Truncated,
    /// Not a trace.dat: the first bytes are not the magic.
    BadMagic,
    /// A version other than 6 or 7.
    UnsupportedVersion(String),
    /// A value that cannot be right (named), e.g. an endian byte of 5.
    Invalid(&'static str),
    /// A size larger than the file or than the sanity limit.
    TooLarge(u64),
    /// The compression algorithm is unknown or not built in.
    UnsupportedCompression(String),
    /// The decompressor rejected the data.
    Decompress(&'static str),
    /// The source failed (errno).
    Io(i32),
    /// A page (sub-buffer) size no kernel uses, or one the rest of the
    /// file contradicts: the size, and why it cannot be right.
    PageSize(u32, String),
}

/// A read error: what, in which part of the file, at which byte offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What was wrong.
    pub(crate) kind: ErrorKind,
    /// The part of the file being read ("header_page", "options", "cpu 3 data"…).
    pub(crate) section: &'static str,
    /// File offset where the problem was found. For data inside a
    /// compressed section it is the section's offset.
    pub(crate) offset: u64,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, section: &'static str, offset: u64) -> Error {
        Error { kind, section, offset }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Truncated => write!(f, "truncated")?,
            ErrorKind::BadMagic => write!(f, "not a trace.dat file (bad magic)")?,
            ErrorKind::UnsupportedVersion(v) => write!(f, "unsupported trace.dat version '{}'", v.escape_default())?,
            ErrorKind::Invalid(what) => write!(f, "invalid {what}")?,
            ErrorKind::TooLarge(n) => write!(f, "size {n} too large")?,
            ErrorKind::UnsupportedCompression(c) => write!(
                f,
                "compression '{}' not supported by this build (board builds leave zstd and zlib out; \
                 read the file with a desktop trbox, or convert it: trace-cmd convert --compression none)",
                c.escape_default()
            )?,
            ErrorKind::Decompress(why) => write!(f, "decompression failed ({why})")?,
            ErrorKind::Io(e) => write!(f, "read error (errno {e})")?,
            ErrorKind::PageSize(n, why) => write!(f, "page size {n} {why}")?,
        }
        write!(f, " in {} at byte {}", self.section, self.offset)
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Error {}
