//! Reading trace.dat metadata (v6 and v7) and per-CPU page data.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use super::compress::{decompress, Compression};
use super::{opt, Endian, Error, ErrorKind, IoError, Source, MAGIC};
use crate::format::{FormatError, HeaderPage};
use crate::problems::{ProblemKind, Problems};

/// Longest NUL-terminated string accepted in metadata (names, clocks).
const MAX_CSTR: usize = 4096;
/// Largest single metadata blob accepted when the file length is unknown,
/// and largest decompressed metadata section.
const MAX_BLOB: u64 = 256 << 20;
/// Largest sub-buffer size accepted for cutting page data.
const MAX_PAGE: usize = 16 << 20;
/// Largest decompressed buffer chunk (trace-cmd writes 10 pages per chunk).
const MAX_CHUNK: u64 = 64 << 20;
/// Most v7 options sections followed (guards against offset loops).
const MAX_OPTION_SECTIONS: usize = 4096;

// ---------------------------------------------------------------------------
// Input cursors
// ---------------------------------------------------------------------------

/// The operations the metadata parsers need, over a file or over a
/// decompressed section.
trait MetaInput {
    fn endian(&self) -> Endian;
    /// File offset of the next byte (for compressed sections: the
    /// section's offset, as positions inside it do not map to the file).
    fn here(&self) -> u64;
    fn section(&mut self, s: &'static str);
    fn err(&self, k: ErrorKind) -> Error;
    fn take(&mut self, n: u64) -> Result<Vec<u8>, Error>;
    fn fill(&mut self, out: &mut [u8]) -> Result<(), Error>;
    fn cstr(&mut self) -> Result<String, Error>;

    fn u16(&mut self) -> Result<u16, Error> {
        let mut b = [0u8; 2];
        self.fill(&mut b)?;
        Ok(self.endian().u16_of(b))
    }
    fn u32(&mut self) -> Result<u32, Error> {
        let mut b = [0u8; 4];
        self.fill(&mut b)?;
        Ok(self.endian().u32_of(b))
    }
    fn u64(&mut self) -> Result<u64, Error> {
        let mut b = [0u8; 8];
        self.fill(&mut b)?;
        Ok(self.endian().u64_of(b))
    }
}

/// A cursor over bytes in memory (a decompressed section or an option).
struct ByteCursor<'b> {
    b: &'b [u8],
    pos: usize,
    e: Endian,
    /// File offset reported in errors.
    at: u64,
    /// Whether `at + pos` is a real file offset.
    mapped: bool,
    sec: &'static str,
}

impl<'b> ByteCursor<'b> {
    fn new(b: &'b [u8], e: Endian, at: u64, mapped: bool, sec: &'static str) -> Self {
        ByteCursor { b, pos: 0, e, at, mapped, sec }
    }
    fn rest(&self) -> &'b [u8] {
        self.b.get(self.pos..).unwrap_or(&[])
    }
}

impl MetaInput for ByteCursor<'_> {
    fn endian(&self) -> Endian {
        self.e
    }
    fn here(&self) -> u64 {
        if self.mapped {
            self.at + self.pos as u64
        } else {
            self.at
        }
    }
    fn section(&mut self, s: &'static str) {
        self.sec = s;
    }
    fn err(&self, k: ErrorKind) -> Error {
        Error::new(k, self.sec, self.here())
    }
    fn take(&mut self, n: u64) -> Result<Vec<u8>, Error> {
        let n = usize::try_from(n).map_err(|_| self.err(ErrorKind::TooLarge(n)))?;
        let end = self.pos.checked_add(n).ok_or_else(|| self.err(ErrorKind::Truncated))?;
        let s = self.b.get(self.pos..end).ok_or_else(|| self.err(ErrorKind::Truncated))?;
        self.pos = end;
        Ok(s.to_vec())
    }
    fn fill(&mut self, out: &mut [u8]) -> Result<(), Error> {
        let end = self.pos + out.len();
        let s = self.b.get(self.pos..end).ok_or_else(|| self.err(ErrorKind::Truncated))?;
        out.copy_from_slice(s);
        self.pos = end;
        Ok(())
    }
    fn cstr(&mut self) -> Result<String, Error> {
        let rest = self.rest();
        let Some(n) = rest.iter().position(|&c| c == 0) else {
            return Err(self.err(ErrorKind::Truncated));
        };
        if n > MAX_CSTR {
            return Err(self.err(ErrorKind::Invalid("string (too long)")));
        }
        let s = String::from_utf8_lossy(&rest[..n]).into_owned();
        self.pos += n + 1;
        Ok(s)
    }
}

/// A buffered sequential reader over a [`Source`].
struct Stream<'s, S: Source + ?Sized> {
    src: &'s mut S,
    pos: u64,
    len: Option<u64>,
    win: Vec<u8>,
    win_off: u64,
    e: Endian,
    sec: &'static str,
}

const WINDOW: usize = 64 * 1024;

impl<'s, S: Source + ?Sized> Stream<'s, S> {
    fn new(src: &'s mut S, pos: u64, e: Endian, sec: &'static str) -> Self {
        let len = src.size();
        Stream { src, pos, len, win: Vec::new(), win_off: 0, e, sec }
    }

    fn seek(&mut self, pos: u64) {
        self.pos = pos;
    }

    /// Read up to `buf.len()` bytes at `off` straight from the source.
    fn raw(&mut self, off: u64, buf: &mut [u8]) -> Result<usize, Error> {
        self.src.read_at(off, buf).map_err(|IoError(e)| Error::new(ErrorKind::Io(e), self.sec, off))
    }

    /// Make the window cover `pos` (at least `want` bytes if the file has them).
    fn refill(&mut self, want: usize) -> Result<(), Error> {
        let have = self.pos.checked_sub(self.win_off).and_then(|d| usize::try_from(d).ok());
        if let Some(d) = have {
            if d.saturating_add(want) <= self.win.len() {
                return Ok(());
            }
        }
        let size = want.max(WINDOW);
        let mut w = core::mem::take(&mut self.win);
        w.resize(size, 0);
        let n = self.raw(self.pos, &mut w)?;
        w.truncate(n);
        self.win = w;
        self.win_off = self.pos;
        Ok(())
    }

    /// Check that `n` more bytes can exist before allocating for them.
    fn check_len(&self, n: u64) -> Result<(), Error> {
        let limit = match self.len {
            Some(l) => l.saturating_sub(self.pos),
            None => MAX_BLOB,
        };
        if n > limit {
            return Err(if self.len.is_some() {
                self.err(ErrorKind::Truncated)
            } else {
                self.err(ErrorKind::TooLarge(n))
            });
        }
        Ok(())
    }
}

impl<S: Source + ?Sized> MetaInput for Stream<'_, S> {
    fn endian(&self) -> Endian {
        self.e
    }
    fn here(&self) -> u64 {
        self.pos
    }
    fn section(&mut self, s: &'static str) {
        self.sec = s;
    }
    fn err(&self, k: ErrorKind) -> Error {
        Error::new(k, self.sec, self.pos)
    }
    fn take(&mut self, n: u64) -> Result<Vec<u8>, Error> {
        self.check_len(n)?;
        let nu = usize::try_from(n).map_err(|_| self.err(ErrorKind::TooLarge(n)))?;
        let mut v = vec![0u8; nu];
        if nu <= WINDOW {
            self.fill(&mut v)?;
        } else {
            let got = self.raw(self.pos, &mut v)?;
            if got < nu {
                return Err(self.err(ErrorKind::Truncated));
            }
            self.pos += n;
        }
        Ok(v)
    }
    fn fill(&mut self, out: &mut [u8]) -> Result<(), Error> {
        self.refill(out.len())?;
        let d = (self.pos - self.win_off) as usize;
        let s = self.win.get(d..d + out.len()).ok_or_else(|| self.err(ErrorKind::Truncated))?;
        out.copy_from_slice(s);
        self.pos += out.len() as u64;
        Ok(())
    }
    fn cstr(&mut self) -> Result<String, Error> {
        self.refill(MAX_CSTR + 1)?;
        let d = (self.pos - self.win_off) as usize;
        let rest = self.win.get(d..).unwrap_or(&[]);
        let Some(n) = rest.iter().position(|&c| c == 0) else {
            return Err(if rest.len() > MAX_CSTR {
                self.err(ErrorKind::Invalid("string (too long)"))
            } else {
                self.err(ErrorKind::Truncated)
            });
        };
        let s = String::from_utf8_lossy(&rest[..n]).into_owned();
        self.pos += n as u64 + 1;
        Ok(s)
    }
}

// ---------------------------------------------------------------------------
// Public data model
// ---------------------------------------------------------------------------

/// One event system's format files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct EventSystem {
    /// The system's name (`sched`, `irq`).
    pub(crate) name: String,
    /// Each event's `format` file text, in file order.
    pub(crate) formats: Vec<Vec<u8>>,
}

/// Per-CPU page data of one instance: `size` bytes at file `offset`
/// (for compressed buffers: the chunk stream, `size` compressed bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuData {
    /// The CPU number.
    pub(crate) cpu: u32,
    /// File offset of the data.
    pub(crate) offset: u64,
    /// Bytes of data (0: the CPU recorded nothing).
    pub size: u64,
}

/// A ring buffer saved in the file: the top instance (name `""`) or one
/// made with `trace-cmd record -B NAME`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Instance {
    /// The instance's name, `""` for the top buffer.
    pub(crate) name: String,
    /// Trace clock of this buffer (`local`, `global`, `x86-tsc`…), if known.
    pub(crate) clock: Option<String>,
    /// Sub-buffer size of the pages (v7 BUFFER option; else the file's page size).
    pub(crate) page_size: u32,
    /// Data is stored as compressed chunks (v7).
    pub(crate) compressed: bool,
    /// Where each CPU's pages are, in CPU order.
    pub cpus: Vec<CpuData>,
    /// `latency` form: the text of the `trace` file at this (offset, size)
    /// instead of per-CPU pages.
    pub(crate) latency: Option<(u64, u64)>,
}

impl Instance {
    /// Total bytes of page data (compressed size for compressed buffers).
    pub(crate) fn data_bytes(&self) -> u64 {
        self.cpus.iter().map(|c| c.size).fold(0, u64::saturating_add)
    }
}

/// TSC2NSEC option: `ns = ((tsc * mult) >> shift) + offset`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tsc2Nsec {
    pub(crate) mult: u32,
    pub(crate) shift: u32,
    pub(crate) offset: u64,
}

/// The options of the file (stored, not applied to timestamps).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// Selected trace clock of the top buffer (`local`…): from the
    /// TRACECLOCK option's `[name]`, the v6 clock after the flyrecord
    /// table, or the v7 top BUFFER option.
    pub(crate) clock: Option<String>,
    /// The TRACECLOCK option as stored (the whole `trace_clock` file text).
    pub(crate) trace_clock_text: Option<String>,
    pub(crate) cpucount: Option<u32>,
    /// UNAME: `uname -a` of the recording machine.
    pub(crate) uname: Option<String>,
    /// DATE: offset of timestamps to wall-clock time (hex/decimal µs text).
    pub(crate) date: Option<String>,
    /// OFFSET: fixed offset added to timestamps (text).
    pub(crate) offset: Option<String>,
    /// VERSION: version of the recording tool.
    pub(crate) version: Option<String>,
    /// CPUSTAT texts in file order (trace-cmd writes one per CPU, and a
    /// `Buffer: NAME` separator before each instance's).
    pub cpustat: Vec<String>,
    pub(crate) trace_id: Option<u64>,
    pub(crate) tsc2nsec: Option<Tsc2Nsec>,
    /// TIME_SHIFT option bytes, as stored.
    pub(crate) time_shift: Option<Vec<u8>>,
    pub(crate) hooks: Vec<String>,
    pub(crate) procmaps: Option<String>,
    /// GUEST options, as stored.
    pub(crate) guests: Vec<Vec<u8>>,
    /// LAST_BOOT_INFO (24, trace-cmd 3.4): `INSTANCE:` then the text of
    /// that instance's `last_boot_info` file (a persistent buffer's
    /// previous boot: where its kernel and modules were loaded).
    pub(crate) last_boot: Option<String>,
    /// Options this reader does not interpret: (id, size).
    pub(crate) other: Vec<(u16, u32)>,
}

/// Where a v7 metadata section is (from the options that point at it).
#[derive(Debug, Clone, Copy, Default)]
struct Sections {
    header_info: Option<u64>,
    ftrace: Option<u64>,
    events: Option<u64>,
    kallsyms: Option<u64>,
    printk: Option<u64>,
    cmdlines: Option<u64>,
    btf: Option<u64>,
    modules: Option<u64>,
}

/// Everything in a trace.dat but the page data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceDat {
    /// File version (6 or 7).
    pub(crate) version: u32,
    /// Byte order of the recording machine (and of every number in the
    /// file and its pages).
    pub endian: Endian,
    /// Size of a `long` in the recording user space (the kernel's is in
    /// `header_page`).
    pub(crate) long_size: u32,
    /// Page size of the recording machine.
    pub(crate) page_size: u32,
    /// v7 compression algorithm (and its version string); `None` for v6.
    pub(crate) compression: Option<(Compression, String)>,
    /// `events/header_page` text: the sub-buffer header's layout.
    pub(crate) header_page: Vec<u8>,
    /// `events/header_event` text: the record header's layout.
    pub(crate) header_event: Vec<u8>,
    /// `events/ftrace/*/format` texts.
    pub(crate) ftrace_formats: Vec<Vec<u8>>,
    /// Every other event system's formats.
    pub(crate) systems: Vec<EventSystem>,
    /// `/proc/kallsyms` text, empty when not recorded.
    pub(crate) kallsyms: Vec<u8>,
    /// `printk_formats` text: the strings behind `%s` of kernel pointers.
    pub(crate) printk_formats: Vec<u8>,
    /// `saved_cmdlines` text: pid to task name.
    pub(crate) saved_cmdlines: Vec<u8>,
    /// BTF_FILE section (23, trace-cmd 3.4, v7 only): the recording
    /// machine's /sys/kernel/btf/vmlinux; empty when the file has none.
    pub(crate) btf: Vec<u8>,
    /// MODULES_FILE section (25, trace-cmd 3.4, v7 only): the recording
    /// machine's /proc/modules (written with LAST_BOOT_INFO).
    pub(crate) modules: Vec<u8>,
    /// CPU count from the header (v6) or the CPUCOUNT option (v7).
    pub(crate) cpus: u32,
    /// The options the file carries.
    pub options: Options,
    /// The top buffer first (when the file has one), then the instances.
    pub instances: Vec<Instance>,
    /// Where the metadata ends (v6: after the flyrecord table and clock).
    pub(crate) metadata_end: u64,
    /// Problems that did not stop reading: an instance or section that
    /// could not be read (left out, [`ProblemKind::BadSection`]), CPU data
    /// running past the end of the file (cut to what is there: the file
    /// was truncated, [`ProblemKind::CutOff`]); each told as its [`Error`].
    pub(crate) problems: Problems,
}

// ---------------------------------------------------------------------------
// Shared section parsers (the same payloads in v6 and v7)
// ---------------------------------------------------------------------------

fn expect_tag<I: MetaInput>(r: &mut I, tag: &[u8]) -> Result<(), Error> {
    let mut b = [0u8; 16];
    let b = b.get_mut(..tag.len()).ok_or_else(|| r.err(ErrorKind::Invalid("tag")))?;
    r.fill(b)?;
    if b != tag {
        return Err(r.err(ErrorKind::Invalid("section tag")));
    }
    Ok(())
}

fn header_info<I: MetaInput>(r: &mut I, td: &mut TraceDat) -> Result<(), Error> {
    r.section("header_page");
    expect_tag(r, b"header_page\0")?;
    let n = r.u64()?;
    td.header_page = r.take(n)?;
    r.section("header_event");
    expect_tag(r, b"header_event\0")?;
    let n = r.u64()?;
    td.header_event = r.take(n)?;
    Ok(())
}

fn ftrace_formats<I: MetaInput>(r: &mut I, td: &mut TraceDat) -> Result<(), Error> {
    r.section("ftrace formats");
    let count = r.u32()?;
    td.ftrace_formats.clear();
    for _ in 0..count {
        let n = r.u64()?;
        td.ftrace_formats.push(r.take(n)?);
    }
    Ok(())
}

fn event_formats<I: MetaInput>(r: &mut I, td: &mut TraceDat) -> Result<(), Error> {
    r.section("event formats");
    let systems = r.u32()?;
    td.systems.clear();
    for _ in 0..systems {
        let name = r.cstr()?;
        let count = r.u32()?;
        let mut sys = EventSystem { name, formats: Vec::new() };
        for _ in 0..count {
            let n = r.u64()?;
            sys.formats.push(r.take(n)?);
        }
        td.systems.push(sys);
    }
    Ok(())
}

fn kallsyms<I: MetaInput>(r: &mut I, td: &mut TraceDat) -> Result<(), Error> {
    r.section("kallsyms");
    let n = r.u32()?;
    td.kallsyms = r.take(n.into())?;
    Ok(())
}

fn printk<I: MetaInput>(r: &mut I, td: &mut TraceDat) -> Result<(), Error> {
    r.section("printk formats");
    let n = r.u32()?;
    td.printk_formats = r.take(n.into())?;
    Ok(())
}

fn cmdlines<I: MetaInput>(r: &mut I, td: &mut TraceDat) -> Result<(), Error> {
    r.section("saved cmdlines");
    let n = r.u64()?;
    td.saved_cmdlines = r.take(n)?;
    Ok(())
}

/// Text of a string option: up to the first NUL.
fn opt_text(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// The selected clock in a `trace_clock` text (`local [global] …` →
/// `global`); a text without brackets is taken as the clock name itself.
pub(crate) fn selected_clock(text: &str) -> Option<String> {
    for w in text.split_ascii_whitespace() {
        if let Some(inner) = w.strip_prefix('[') {
            let name = inner.split(']').next().unwrap_or("");
            if !name.is_empty() {
                return Some(name.to_string());
            }
        }
    }
    let t = text.trim();
    (!t.is_empty() && !t.contains(char::is_whitespace)).then(|| t.to_string())
}

/// State shared while walking options.
struct OptState {
    /// v6 BUFFER options: (offset, name).
    v6_buffers: Vec<(u64, String)>,
    /// v7 BUFFER options: offset of each instance's section.
    v7_sections: Vec<u64>,
    sections: Sections,
    has_traceclock: bool,
}

/// Interpret one option. `v7` selects the BUFFER layout.
fn handle_option(id: u16, data: &[u8], at: u64, v7: bool, td: &mut TraceDat, st: &mut OptState) -> Result<(), Error> {
    let e = td.endian;
    let o = &mut td.options;
    let u64_at = |off: usize| e.u64(data, off);
    match id {
        opt::DATE => o.date = Some(opt_text(data)),
        opt::OFFSET => o.offset = Some(opt_text(data)),
        opt::CPUSTAT => o.cpustat.push(opt_text(data)),
        opt::TRACECLOCK => {
            st.has_traceclock = true;
            if !data.is_empty() {
                let t = opt_text(data);
                if let Some(c) = selected_clock(&t) {
                    o.clock = Some(c);
                }
                o.trace_clock_text = Some(t);
            }
        }
        opt::UNAME => o.uname = Some(opt_text(data)),
        opt::VERSION => o.version = Some(opt_text(data)),
        opt::HOOK => o.hooks.push(opt_text(data)),
        opt::PROCMAPS => o.procmaps = Some(opt_text(data)),
        opt::CPUCOUNT => {
            if let Some(n) = e.u32(data, 0) {
                o.cpucount = Some(n);
            }
        }
        opt::TRACEID => o.trace_id = u64_at(0),
        opt::TIME_SHIFT => o.time_shift = Some(data.to_vec()),
        opt::GUEST => o.guests.push(data.to_vec()),
        opt::TSC2NSEC => {
            if let (Some(mult), Some(shift), Some(offset)) = (e.u32(data, 0), e.u32(data, 4), e.u64(data, 8)) {
                o.tsc2nsec = Some(Tsc2Nsec { mult, shift, offset });
            }
        }
        opt::HEADER_INFO => st.sections.header_info = u64_at(0),
        opt::FTRACE_EVENTS => st.sections.ftrace = u64_at(0),
        opt::EVENT_FORMATS => st.sections.events = u64_at(0),
        opt::KALLSYMS => st.sections.kallsyms = u64_at(0),
        opt::PRINTK => st.sections.printk = u64_at(0),
        opt::CMDLINES => st.sections.cmdlines = u64_at(0),
        opt::BTF_FILE => st.sections.btf = u64_at(0),
        opt::MODULES_FILE => st.sections.modules = u64_at(0),
        opt::LAST_BOOT_INFO => o.last_boot = Some(opt_text(data)),
        opt::BUFFER | opt::BUFFER_TEXT => {
            let mut c = ByteCursor::new(data, e, at, true, "BUFFER option");
            let offset = c.u64()?;
            let name = c.cstr()?;
            if !v7 {
                st.v6_buffers.push((offset, name));
                return Ok(());
            }
            let clock = c.cstr()?;
            let mut inst = Instance { name, clock: Some(clock).filter(|c| !c.is_empty()), ..Default::default() };
            if id == opt::BUFFER_TEXT {
                inst.latency = Some((offset, 0));
            } else {
                inst.page_size = c.u32()?;
                let n = c.u32()?;
                // Each CPU entry takes 20 bytes: bound the count by the data.
                if u64::from(n) * 20 > c.rest().len() as u64 {
                    return Err(c.err(ErrorKind::Truncated));
                }
                for _ in 0..n {
                    let cpu = c.u32()?;
                    let offset = c.u64()?;
                    let size = c.u64()?;
                    inst.cpus.push(CpuData { cpu, offset, size });
                }
            }
            // The section header at `offset` says whether it is compressed.
            st.v7_sections.push(offset);
            td.instances.push(inst);
        }
        opt::DONE => {}
        other => o.other.push((other, data.len() as u32)),
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The reader
// ---------------------------------------------------------------------------

impl TraceDat {
    /// Parse the metadata of a trace.dat through `src`. Page data is not
    /// read; see [`DatPages`].
    pub fn read<S: Source + ?Sized>(src: &mut S) -> Result<TraceDat, Error> {
        let mut r = Stream::new(src, 0, Endian::Little, "file header");
        let mut magic = [0u8; 10];
        r.fill(&mut magic)?;
        if magic != MAGIC {
            return Err(Error::new(ErrorKind::BadMagic, "file header", 0));
        }
        let version = r.cstr()?;
        let v: u32 = match version.as_str() {
            "6" => 6,
            "7" => 7,
            _ => return Err(Error::new(ErrorKind::UnsupportedVersion(version), "file header", 10)),
        };
        let mut b = [0u8; 2];
        r.fill(&mut b)?;
        let endian = match b[0] {
            0 => Endian::Little,
            1 => Endian::Big,
            _ => return Err(r.err(ErrorKind::Invalid("endian byte"))),
        };
        r.e = endian;
        let long_size = u32::from(b[1]);
        let page_size_at = r.here();
        let page_size = r.u32()?;
        let mut td = TraceDat { version: v, endian, long_size, page_size, ..Default::default() };
        if v == 6 {
            read_v6(&mut r, &mut td)?;
        } else {
            read_v7(&mut r, &mut td)?;
        }
        check_page_sizes(&td, page_size_at)?;
        if let Some(len) = r.len {
            for inst in &mut td.instances {
                for c in &mut inst.cpus {
                    // A CPU without data may point past the end (trace-cmd
                    // writes the next page-aligned offset): not a cut.
                    if c.size > 0 && c.offset.saturating_add(c.size) > len {
                        let e = Error::new(ErrorKind::Truncated, "cpu data", c.offset.saturating_add(c.size));
                        td.problems.add(ProblemKind::CutOff, e.to_string());
                        c.size = len.saturating_sub(c.offset);
                    }
                }
            }
        }
        Ok(td)
    }

    /// The top instance (named `""`), if the file has one.
    pub(crate) fn top(&self) -> Option<&Instance> {
        self.instances.iter().find(|i| i.name.is_empty())
    }

    /// All `events/*/*/format` texts with their system name, ftrace first.
    pub(crate) fn formats(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.ftrace_formats
            .iter()
            .map(|f| ("ftrace", f.as_slice()))
            .chain(self.systems.iter().flat_map(|s| s.formats.iter().map(move |f| (s.name.as_str(), f.as_slice()))))
    }

    /// The ring-buffer page header layout (from `header_page`).
    pub(crate) fn header_page(&self) -> Result<HeaderPage, FormatError> {
        HeaderPage::parse(&String::from_utf8_lossy(&self.header_page))
    }

    /// The v7 compression algorithm, `None` for uncompressed files.
    pub(crate) fn compression_algo(&self) -> Compression {
        self.compression.as_ref().map(|c| c.0.clone()).unwrap_or(Compression::None)
    }

    /// Iterate over the pages of CPU entry `idx` of `inst`.
    pub(crate) fn pages(&self, inst: &Instance, idx: usize) -> Option<DatPages> {
        let c = inst.cpus.get(idx)?;
        Some(DatPages::new(self, inst, c))
    }
}

/// Whether `size` is a sub-buffer size a kernel can have: a power of two
/// and at least 4096 (the smallest PAGE_SIZE Linux has; a sub-buffer is
/// 2^order pages, ring_buffer.c `ring_buffer_subbuf_order_set`).
fn kernel_page_size(size: u32) -> bool {
    size.is_power_of_two() && size >= 4096
}

/// The page sizes a file states agree with each other and with its data.
/// The file header's (trace-cmd: the top buffer's sub-buffer size, from
/// `events/header_page`, trace-output.c get_trace_page_size), the v7
/// BUFFER options' and header_page's (data offset + size) cut the same
/// pages; uncompressed CPU data is whole pages. A size that does not
/// agree cuts the data at the wrong places: every page after the first
/// would be garbage, read without a word.
fn check_page_sizes(td: &TraceDat, at: u64) -> Result<(), Error> {
    let bad = |size: u32, why: String, section: &'static str, offset: u64| {
        Err(Error::new(ErrorKind::PageSize(size, why), section, offset))
    };
    if !kernel_page_size(td.page_size) {
        let why = "is no kernel's (a power of two, 4096 or more): a damaged header";
        return bad(td.page_size, why.into(), "file header", at);
    }
    if let Ok(h) = td.header_page() {
        let says =
            |what: &str| format!("is not header_page's sub-buffer size ({} bytes): a damaged {what}", h.subbuf_size());
        if h.subbuf_size() != td.page_size {
            return bad(td.page_size, says("header"), "file header", at);
        }
        // v7 cuts the top buffer's pages by its BUFFER option.
        if let Some(t) = td.top().filter(|t| t.page_size != 0 && t.page_size != h.subbuf_size()) {
            return bad(t.page_size, says("BUFFER option"), "BUFFER option", 0);
        }
    }
    for inst in td.instances.iter().filter(|i| i.latency.is_none()) {
        let size = if inst.page_size != 0 { inst.page_size } else { td.page_size };
        if !kernel_page_size(size) {
            let why = format!("of buffer '{}' is no kernel's (a power of two, 4096 or more)", inst.name);
            return bad(size, why, "BUFFER option", 0);
        }
        // Compressed data is chunks of pages, of any size.
        if let Some(c) = inst.cpus.iter().find(|c| !inst.compressed && c.size % u64::from(size) != 0) {
            let why = format!(
                "does not divide cpu{}'s {} bytes of buffer '{}': a damaged page size or data table",
                c.cpu, c.size, inst.name
            );
            return bad(size, why, "cpu data", c.offset);
        }
    }
    Ok(())
}

fn read_v6<S: Source + ?Sized>(r: &mut Stream<'_, S>, td: &mut TraceDat) -> Result<(), Error> {
    header_info(r, td)?;
    ftrace_formats(r, td)?;
    event_formats(r, td)?;
    kallsyms(r, td)?;
    printk(r, td)?;
    cmdlines(r, td)?;
    r.section("cpu count");
    td.cpus = r.u32()?;
    let mut st = OptState {
        v6_buffers: Vec::new(),
        v7_sections: Vec::new(),
        sections: Sections::default(),
        has_traceclock: false,
    };
    r.section("options");
    let mut tag = [0u8; 10];
    r.fill(&mut tag)?;
    if tag.starts_with(b"options") {
        loop {
            let id = r.u16()?;
            if id == opt::DONE {
                break;
            }
            let size = r.u32()?;
            let at = r.here();
            let data = r.take(size.into())?;
            handle_option(id, &data, at, false, td, &mut st)?;
        }
        r.section("flyrecord");
        r.fill(&mut tag)?;
    }
    let ncpus = td.options.cpucount.unwrap_or(td.cpus);
    let mut top = Instance { page_size: td.page_size, ..Default::default() };
    v6_data(r, &tag, ncpus, &mut top, st.has_traceclock)?;
    td.metadata_end = r.here();
    if let Some(c) = top.clock.clone() {
        td.options.clock = Some(c);
    } else {
        top.clock = td.options.clock.clone();
    }
    td.instances.push(top);
    for (offset, name) in core::mem::take(&mut st.v6_buffers) {
        let mut inst = Instance { name, page_size: td.page_size, ..Default::default() };
        match v6_instance(r, offset, ncpus, &mut inst) {
            Ok(()) => {
                if inst.clock.is_none() {
                    inst.clock = td.options.clock.clone();
                }
                td.instances.push(inst);
            }
            Err(e) => td.problems.add(ProblemKind::BadSection, e.to_string()),
        }
    }
    Ok(())
}

/// A v6 extra instance at `offset`: optional options, then flyrecord.
fn v6_instance<S: Source + ?Sized>(
    r: &mut Stream<'_, S>,
    offset: u64,
    ncpus: u32,
    inst: &mut Instance,
) -> Result<(), Error> {
    r.seek(offset);
    r.section("instance");
    let mut tag = [0u8; 10];
    r.fill(&mut tag)?;
    if tag.starts_with(b"options") {
        // Options local to the instance: skip them.
        loop {
            let id = r.u16()?;
            if id == opt::DONE {
                break;
            }
            let size = r.u32()?;
            r.take(size.into())?;
        }
        r.fill(&mut tag)?;
    }
    // trace-cmd writes the clock after every flyrecord table.
    v6_data(r, &tag, ncpus, inst, true)
}

/// After "flyrecord\0" / "latency  \0": the per-CPU table and the clock.
fn v6_data<S: Source + ?Sized>(
    r: &mut Stream<'_, S>,
    tag: &[u8; 10],
    ncpus: u32,
    inst: &mut Instance,
    clock_follows: bool,
) -> Result<(), Error> {
    if tag.starts_with(b"latency") {
        let start = r.here();
        let end = r.len.unwrap_or(start);
        inst.latency = Some((start, end.saturating_sub(start)));
        return Ok(());
    }
    if !tag.starts_with(b"flyrecord") {
        return Err(Error::new(ErrorKind::Invalid("flyrecord/latency tag"), "flyrecord", r.here().saturating_sub(10)));
    }
    r.section("flyrecord table");
    r.check_len(u64::from(ncpus) * 16)?;
    for cpu in 0..ncpus {
        let offset = r.u64()?;
        let size = r.u64()?;
        inst.cpus.push(CpuData { cpu, offset, size });
    }
    if clock_follows {
        // "[clock]" with a u64 length; tolerate its absence.
        let save = r.here();
        r.section("trace clock");
        let ok = (|| -> Result<Option<String>, Error> {
            let n = r.u64()?;
            if n == 0 || n > MAX_CSTR as u64 {
                return Ok(None);
            }
            let t = r.take(n)?;
            Ok(selected_clock(&String::from_utf8_lossy(&t)))
        })();
        match ok {
            Ok(Some(c)) => inst.clock = Some(c),
            _ => r.seek(save),
        }
    }
    Ok(())
}

/// Read a v7 section header at `off`: (id, flags, size).
fn section_header<S: Source + ?Sized>(
    r: &mut Stream<'_, S>,
    off: u64,
    what: &'static str,
) -> Result<(u16, u16, u64), Error> {
    r.seek(off);
    r.section(what);
    let id = r.u16()?;
    let flags = r.u16()?;
    let _string_id = r.u32()?;
    let size = r.u64()?;
    Ok((id, flags, size))
}

/// The body of a v7 section: decompressed when flagged.
fn section_body<S: Source + ?Sized>(
    r: &mut Stream<'_, S>,
    td: &TraceDat,
    off: u64,
    want_id: u16,
    what: &'static str,
) -> Result<(Vec<u8>, bool), Error> {
    let (id, flags, size) = section_header(r, off, what)?;
    if id != want_id {
        return Err(Error::new(ErrorKind::Invalid("section id"), what, off));
    }
    if flags & 1 == 0 {
        return Ok((r.take(size)?, false));
    }
    let csize = r.u32()?;
    let usize_ = r.u32()?;
    if u64::from(usize_) > MAX_BLOB {
        return Err(r.err(ErrorKind::TooLarge(usize_.into())));
    }
    let at = r.here();
    let data = r.take(csize.into())?;
    let mut out = Vec::new();
    decompress(&td.compression_algo(), &data, usize_ as usize, &mut out, what, at)?;
    Ok((out, true))
}

fn read_v7<S: Source + ?Sized>(r: &mut Stream<'_, S>, td: &mut TraceDat) -> Result<(), Error> {
    r.section("compression header");
    let name = r.cstr()?;
    let ver = r.cstr()?;
    let algo = Compression::from_name(&name);
    td.compression = Some((algo, ver));
    r.section("options offset");
    let mut next = r.u64()?;
    let mut st = OptState {
        v6_buffers: Vec::new(),
        v7_sections: Vec::new(),
        sections: Sections::default(),
        has_traceclock: false,
    };
    let mut seen = 0usize;
    while next != 0 {
        seen += 1;
        if seen > MAX_OPTION_SECTIONS {
            return Err(Error::new(ErrorKind::Invalid("options chain (loop)"), "options", next));
        }
        let off = next;
        let (id, flags, _size) = section_header(r, off, "options")?;
        if id != opt::DONE {
            return Err(Error::new(ErrorKind::Invalid("options section id"), "options", off));
        }
        if flags & 1 != 0 {
            let csize = r.u32()?;
            let usize_ = r.u32()?;
            if u64::from(usize_) > MAX_BLOB {
                return Err(r.err(ErrorKind::TooLarge(usize_.into())));
            }
            let at = r.here();
            let data = r.take(csize.into())?;
            let mut out = Vec::new();
            decompress(&td.compression_algo(), &data, usize_ as usize, &mut out, "options", at)?;
            let mut c = ByteCursor::new(&out, td.endian, off, false, "options");
            next = options_v7(&mut c, td, &mut st)?;
        } else {
            next = options_v7(r, td, &mut st)?;
        }
    }
    td.metadata_end = r.here();
    let sec = st.sections;
    let parts: [(Option<u64>, u16, &'static str); 6] = [
        (sec.header_info, opt::HEADER_INFO, "header info section"),
        (sec.ftrace, opt::FTRACE_EVENTS, "ftrace events section"),
        (sec.events, opt::EVENT_FORMATS, "event formats section"),
        (sec.kallsyms, opt::KALLSYMS, "kallsyms section"),
        (sec.printk, opt::PRINTK, "printk section"),
        (sec.cmdlines, opt::CMDLINES, "cmdlines section"),
    ];
    for (off, id, what) in parts {
        let Some(off) = off else { continue };
        let (body, compressed) = section_body(r, td, off, id, what)?;
        let at = if compressed { off } else { r.here().saturating_sub(body.len() as u64) };
        let mut c = ByteCursor::new(&body, td.endian, at, !compressed, what);
        match id {
            opt::HEADER_INFO => header_info(&mut c, td)?,
            opt::FTRACE_EVENTS => ftrace_formats(&mut c, td)?,
            opt::EVENT_FORMATS => event_formats(&mut c, td)?,
            opt::KALLSYMS => kallsyms(&mut c, td)?,
            opt::PRINTK => printk(&mut c, td)?,
            _ => cmdlines(&mut c, td)?,
        }
    }
    // trace-cmd 3.4's files of the machine: raw bytes, no count before
    // them (trace-output.c tracecmd_append_btf_file, _modules_file). A bad
    // one is a warning: the trace reads without it.
    for (off, id, what) in
        [(sec.btf, opt::BTF_FILE, "BTF section"), (sec.modules, opt::MODULES_FILE, "modules section")]
    {
        let Some(off) = off else { continue };
        match section_body(r, td, off, id, what) {
            Ok((body, _)) if id == opt::BTF_FILE => td.btf = body,
            Ok((body, _)) => td.modules = body,
            Err(e) => td.problems.add(ProblemKind::BadSection, e.to_string()),
        }
    }
    td.cpus = td.options.cpucount.unwrap_or(0);
    // Which buffers are compressed: their section header says so.
    let mut keep = Vec::new();
    for (mut inst, off) in core::mem::take(&mut td.instances).into_iter().zip(st.v7_sections) {
        match section_header(r, off, "buffer section") {
            Ok((_id, flags, size)) => {
                inst.compressed = flags & 1 != 0;
                if let Some(l) = inst.latency.as_mut() {
                    *l = (r.here(), size);
                }
                if inst.page_size == 0 {
                    inst.page_size = td.page_size;
                }
                keep.push(inst);
            }
            Err(e) => td.problems.add(ProblemKind::BadSection, e.to_string()),
        }
    }
    td.instances = keep;
    if td.options.clock.is_none() {
        td.options.clock = td.top().and_then(|t| t.clock.clone());
    }
    Ok(())
}

/// Options of one v7 section, up to DONE; returns the next section offset.
fn options_v7<I: MetaInput>(r: &mut I, td: &mut TraceDat, st: &mut OptState) -> Result<u64, Error> {
    r.section("options");
    loop {
        let id = r.u16()?;
        let size = r.u32()?;
        let at = r.here();
        let data = r.take(size.into())?;
        if id == opt::DONE {
            return td.endian.u64(&data, 0).ok_or_else(|| Error::new(ErrorKind::Truncated, "DONE option", at));
        }
        handle_option(id, &data, at, true, td, st)?;
    }
}

// ---------------------------------------------------------------------------
// Page data
// ---------------------------------------------------------------------------

/// The header of one compressed chunk: `csize` bytes follow, which inflate
/// to `usize` bytes (whole pages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkHeader {
    pub(crate) csize: u32,
    pub(crate) usize: u32,
}

impl ChunkHeader {
    pub(crate) const LEN: usize = 8;
    pub(crate) fn parse(b: &[u8], e: Endian) -> Option<ChunkHeader> {
        Some(ChunkHeader { csize: e.u32(b, 0)?, usize: e.u32(b, 4)? })
    }
}

/// Bytes of a CPU's uncompressed data read at once (a page when larger).
const READ_AHEAD: usize = 64 * 1024;

/// Sequential access to one CPU's pages. Holds at most `READ_AHEAD`
/// bytes of pages (or one decompressed chunk, ~10 pages) at a time.
#[derive(Debug)]
pub struct DatPages {
    page_size: usize,
    endian: Endian,
    algo: Option<Compression>,
    /// Where this CPU's data starts in the file.
    start: u64,
    /// Next file offset to read.
    pos: u64,
    /// End of this CPU's data in the file.
    end: u64,
    /// Compressed: chunks left (after the count was read).
    chunks_left: Option<u32>,
    buf: Vec<u8>,
    cbuf: Vec<u8>,
    /// Offset of the next page inside `buf` (compressed).
    in_buf: usize,
    /// Label for errors.
    label: &'static str,
}

impl DatPages {
    /// Reads `c`'s pages of instance `inst`, decompressing where the file
    /// stores them compressed.
    pub fn new(td: &TraceDat, inst: &Instance, c: &CpuData) -> DatPages {
        let page_size = if inst.page_size != 0 { inst.page_size } else { td.page_size } as usize;
        DatPages {
            page_size,
            endian: td.endian,
            algo: inst.compressed.then(|| td.compression_algo()),
            start: c.offset,
            pos: c.offset,
            end: c.offset.saturating_add(c.size),
            chunks_left: None,
            buf: Vec::new(),
            cbuf: Vec::new(),
            in_buf: 0,
            label: "cpu data",
        }
    }

    /// Whole pages of `page_size` bytes at file offsets `start..end` (the
    /// last one may be short), in byte order `endian`: a CPU's data as an
    /// uncompressed trace.dat or a copied `trace_pipe_raw` holds it.
    /// `buf` is a buffer to read into (one a reader before had: see
    /// [`DatPages::into_buffer`]).
    pub(crate) fn plain(start: u64, end: u64, page_size: usize, endian: Endian, buf: Vec<u8>) -> DatPages {
        DatPages {
            page_size,
            endian,
            algo: None,
            start,
            pos: start,
            end,
            chunks_left: None,
            // What `buf` holds is not read: the first call reads (into it
            // as it is: only a longer read fills more of it with zeros).
            in_buf: buf.len(),
            buf,
            cbuf: Vec::new(),
            label: "cpu data",
        }
    }

    /// Where the pages are in the file, `start..end`, when each is at
    /// `start + n * page_size` (not compressed): a reader can start at
    /// any of them.
    pub(crate) fn plain_range(&self) -> Option<(u64, u64)> {
        self.algo.is_none().then_some((self.start, self.end))
    }

    /// The buffer it read into, for another reader: a reader of a few
    /// pages then allocates nothing (time-sliced reading makes one per
    /// slice and CPU).
    pub(crate) fn into_buffer(self) -> Vec<u8> {
        self.buf
    }

    /// Sub-buffer size used to cut the data.
    pub(crate) fn page_size(&self) -> usize {
        self.page_size
    }

    /// The next page, or `None` at the end of this CPU's data. A page cut
    /// short by the end of the data is returned as it is (the page decoder
    /// checks its commit word). After an error, the rest of this CPU's data
    /// is skipped.
    pub fn next_page<S: Source + ?Sized>(&mut self, src: &mut S) -> Result<Option<&[u8]>, Error> {
        if self.page_size == 0 || self.page_size > MAX_PAGE {
            return Err(Error::new(ErrorKind::Invalid("page size"), self.label, self.pos));
        }
        let r = match self.algo.clone() {
            None => self.next_plain(src),
            Some(a) => self.next_compressed(src, &a),
        };
        match r {
            Ok(Some((a, b))) => Ok(self.buf.get(a..b)),
            Ok(None) => Ok(None),
            Err(e) => {
                self.pos = self.end;
                self.chunks_left = Some(0);
                self.buf.clear();
                self.in_buf = 0;
                Err(e)
            }
        }
    }

    fn read_exact<S: Source + ?Sized>(
        src: &mut S,
        off: u64,
        buf: &mut [u8],
        label: &'static str,
    ) -> Result<usize, Error> {
        src.read_at(off, buf).map_err(|IoError(e)| Error::new(ErrorKind::Io(e), label, off))
    }

    fn next_plain<S: Source + ?Sized>(&mut self, src: &mut S) -> Result<Option<(usize, usize)>, Error> {
        if self.in_buf >= self.buf.len() {
            if self.pos >= self.end {
                return Ok(None);
            }
            // Several pages a read: a read per page was 8,594 system calls
            // for a 35 MB file.
            let want = self.page_size.max(READ_AHEAD) as u64;
            let n = (self.end - self.pos).min(want) as usize;
            self.buf.resize(n, 0);
            let got = Self::read_exact(src, self.pos, &mut self.buf, self.label)?;
            if got == 0 {
                return Err(Error::new(ErrorKind::Truncated, self.label, self.pos));
            }
            self.buf.truncate(got);
            self.pos += got as u64;
            self.in_buf = 0;
            if got < n {
                // The file ends inside the data: stop after a partial page.
                self.end = self.pos;
            }
        }
        Ok(self.page_in_buf())
    }

    /// The next page of what `buf` holds (the last one may be short).
    fn page_in_buf(&mut self) -> Option<(usize, usize)> {
        let start = self.in_buf;
        if start >= self.buf.len() {
            return None;
        }
        let end = (start + self.page_size).min(self.buf.len());
        self.in_buf = end;
        Some((start, end))
    }

    fn next_compressed<S: Source + ?Sized>(
        &mut self,
        src: &mut S,
        algo: &Compression,
    ) -> Result<Option<(usize, usize)>, Error> {
        loop {
            if let Some(page) = self.page_in_buf() {
                return Ok(Some(page));
            }
            let left = match self.chunks_left {
                Some(n) => n,
                None => {
                    if self.pos >= self.end {
                        return Ok(None);
                    }
                    let mut b = [0u8; 4];
                    if Self::read_exact(src, self.pos, &mut b, "chunk count")? < 4 {
                        return Err(Error::new(ErrorKind::Truncated, "chunk count", self.pos));
                    }
                    self.pos += 4;
                    self.endian.u32(&b, 0).unwrap_or(0)
                }
            };
            if left == 0 {
                self.chunks_left = Some(0);
                return Ok(None);
            }
            self.chunks_left = Some(left - 1);
            let mut h = [0u8; ChunkHeader::LEN];
            if Self::read_exact(src, self.pos, &mut h, "chunk header")? < ChunkHeader::LEN {
                return Err(Error::new(ErrorKind::Truncated, "chunk header", self.pos));
            }
            let ch = ChunkHeader::parse(&h, self.endian).unwrap_or(ChunkHeader { csize: 0, usize: 0 });
            let at = self.pos;
            self.pos += ChunkHeader::LEN as u64;
            if u64::from(ch.usize) > MAX_CHUNK || u64::from(ch.csize) > MAX_CHUNK {
                return Err(Error::new(ErrorKind::TooLarge(ch.usize.max(ch.csize).into()), "chunk header", at));
            }
            // (trace-cmd's recorded size leaves out the 4-byte chunk count,
            // so the chunks may run 4 bytes past `end`: not checked here.)
            self.cbuf.resize(ch.csize as usize, 0);
            if Self::read_exact(src, self.pos, &mut self.cbuf, "compressed chunk")? < ch.csize as usize {
                return Err(Error::new(ErrorKind::Truncated, "compressed chunk", self.pos));
            }
            self.pos += u64::from(ch.csize);
            decompress(algo, &self.cbuf, ch.usize as usize, &mut self.buf, "compressed chunk", at)?;
            self.in_buf = 0;
        }
    }
}
