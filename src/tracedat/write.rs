//! Writing a version 6, uncompressed trace.dat, sans-IO.
//!
//! [`V6Writer`] emits the header in file order into an internal buffer that
//! the caller drains with [`V6Writer::take`] and writes out. The flyrecord
//! table is written as zeros; once the per-CPU data is on disk the caller
//! writes [`encode_flyrecord_table`] at [`FlyrecordSlot::table_pos`].
//!
//! ```text
//! let mut w = V6Writer::new(trbox::abi::Abi::new(Endian::Little, 8), 4096);
//! w.header_files(hp, he)?; w.ftrace_formats(&ftrace)?; w.event_systems(&systems)?;
//! w.kallsyms(ksyms)?; w.printk_formats(pf)?; w.saved_cmdlines(cl)?;
//! w.cpus(ncpu)?; let opts = w.options(&o, None)?; let fly = w.flyrecord()?;
//! file.write_all(&w.take());           // ends page-aligned at fly.data_start
//! // append each CPU's pages, padded to the page size (see data_layout)
//! file.write_at(&encode_flyrecord_table(e, &layout), fly.table_pos);
//! ```
//!
//! For a recorder that writes the header first and learns the final CPU
//! statistics only at the end, [`V6Writer::options`] can reserve a fixed
//! size: [`encode_options`] with the same size then produces a block to
//! write over it at [`OptionsSlot::pos`].

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use super::{opt, Endian, MAGIC};
use crate::abi::Abi;

/// Why a write step was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WriteError {
    /// Steps called out of file order (named: the step attempted).
    Order(&'static str),
    /// A blob does not fit its size field (kallsyms/printk are u32-sized).
    TooLarge(&'static str),
    /// The options do not fit the reserved size.
    NoRoom {
        /// Bytes the options take.
        need: usize,
        /// Bytes reserved for them.
        reserved: usize,
    },
    /// A raw blob was announced with one length and written with another.
    Length {
        /// The length announced.
        expected: u64,
        /// The bytes written.
        written: u64,
    },
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::Order(s) => write!(f, "trace.dat writer: {s} out of order"),
            WriteError::TooLarge(s) => write!(f, "trace.dat writer: {s} too large"),
            WriteError::NoRoom { need, reserved } => {
                write!(f, "trace.dat writer: options need {need} bytes, {reserved} reserved")
            }
            WriteError::Length { expected, written } => {
                write!(f, "trace.dat writer: blob announced {expected} bytes, got {written}")
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for WriteError {}

/// The options to store (all optional). trace-cmd writes TRACECLOCK, UNAME,
/// VERSION, one CPUSTAT per CPU, and a BUFFER option per extra instance.
#[derive(Debug, Clone, Default)]
pub(crate) struct WriteOptions<'a> {
    /// The `trace_clock` file text (`local [global] …`) or just the clock
    /// name. Stored as TRACECLOCK; the selected name is also written after
    /// the flyrecord table (`[global]`), where trace-cmd reads it.
    pub(crate) trace_clock: Option<&'a str>,
    /// `uname -srm`-like text ("Linux HOST RELEASE MACHINE" in trace-cmd).
    pub(crate) uname: Option<&'a str>,
    /// Version of the writing tool.
    pub(crate) version: Option<&'a str>,
    /// DATE: offset of timestamps to wall-clock time (trace-cmd: "0x…" µs).
    pub(crate) date: Option<&'a str>,
    /// CPUCOUNT option. In v6, readers (trace-cmd and this crate) take the
    /// flyrecord table length from it: leave it `None`, or equal to
    /// [`V6Writer::cpus`].
    pub(crate) cpucount: Option<u32>,
    /// TRACEID: the recording's id (trace-cmd writes a random one).
    pub(crate) trace_id: Option<u64>,
    /// CPUSTAT texts, one per CPU: `"CPU: N\n"` + `per_cpu/cpuN/stats`
    /// (see [`cpustat_text`]).
    pub(crate) cpustat: &'a [String],
    /// Extra instances (v6 BUFFER options); their flyrecord offsets are
    /// patched later at [`OptionsSlot::buffer_offsets`].
    pub(crate) instances: &'a [&'a str],
    /// LAST_BOOT_INFO (24): `INSTANCE:` and the text of its
    /// `last_boot_info`, as trace-cmd 3.4 writes it (trace-record.c).
    pub(crate) last_boot: Option<&'a str>,
}

/// saved_cmdlines text for a slot of `room` bytes reserved in a header:
/// the whole lines that fit, padded with empty lines ([`CMDLINES_PAD`]).
pub(crate) fn fit_cmdlines(text: &[u8], room: usize) -> Vec<u8> {
    let cut = if text.len() > room {
        text[..room].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)
    } else {
        text.len()
    };
    let mut v = text[..cut].to_vec();
    v.resize(room, CMDLINES_PAD);
    v
}

/// What fills the rest of a saved_cmdlines slot: empty lines, which every
/// reader skips (trace-cmd splits the text at each newline, as trbox
/// does); NULs, which trace-cmd stops at, make LISA's parser refuse the
/// whole file ("Could not parse header").
pub(crate) const CMDLINES_PAD: u8 = b'\n';

/// The CPUSTAT text trace-cmd stores for one CPU.
pub(crate) fn cpustat_text(cpu: u32, stats: &str) -> String {
    format!("CPU: {cpu}\n{stats}")
}

/// Where the options block is, to rewrite it later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OptionsSlot {
    /// File offset of the block (its `"options  \0"` tag).
    pub(crate) pos: u64,
    /// Its length; [`encode_options`] with `fixed_len = Some(len)` produces
    /// a replacement of the same length.
    pub(crate) len: usize,
    /// File offsets of each extra instance's u64 flyrecord offset.
    pub(crate) buffer_offsets: Vec<u64>,
}

/// Where the flyrecord table is and where the page data starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FlyrecordSlot {
    /// File offset of the per-CPU `{u64 offset, u64 size}` table.
    pub(crate) table_pos: u64,
    pub(crate) cpus: u32,
    /// First page-aligned offset after the header (the header bytes are
    /// padded with zeros up to here).
    pub(crate) data_start: u64,
}

fn put16(out: &mut Vec<u8>, e: Endian, v: u16) {
    out.extend_from_slice(&match e {
        Endian::Little => v.to_le_bytes(),
        Endian::Big => v.to_be_bytes(),
    });
}
fn put32(out: &mut Vec<u8>, e: Endian, v: u32) {
    out.extend_from_slice(&match e {
        Endian::Little => v.to_le_bytes(),
        Endian::Big => v.to_be_bytes(),
    });
}
fn put64(out: &mut Vec<u8>, e: Endian, v: u64) {
    out.extend_from_slice(&match e {
        Endian::Little => v.to_le_bytes(),
        Endian::Big => v.to_be_bytes(),
    });
}

/// A u64 in the file's byte order (for patching).
pub(crate) fn encode_u64(e: Endian, v: u64) -> [u8; 8] {
    match e {
        Endian::Little => v.to_le_bytes(),
        Endian::Big => v.to_be_bytes(),
    }
}

/// A u32 in the file's byte order (for patching).
pub(crate) fn encode_u32(e: Endian, v: u32) -> [u8; 4] {
    match e {
        Endian::Little => v.to_le_bytes(),
        Endian::Big => v.to_be_bytes(),
    }
}

/// The flyrecord table for `(offset, size)` per CPU.
pub(crate) fn encode_flyrecord_table(e: Endian, cpus: &[(u64, u64)]) -> Vec<u8> {
    let mut v = Vec::with_capacity(cpus.len() * 16);
    for &(off, size) in cpus {
        put64(&mut v, e, off);
        put64(&mut v, e, size);
    }
    v
}

/// Offsets for per-CPU data of the given sizes laid out one after the
/// other from `start`, each starting page-aligned: `(offset, size)` per CPU.
pub(crate) fn data_layout(start: u64, page_size: u32, sizes: &[u64]) -> Vec<(u64, u64)> {
    let mut pos = start;
    sizes
        .iter()
        .map(|&s| {
            pos = align_up(pos, page_size);
            let e = (pos, s);
            pos = pos.saturating_add(s);
            e
        })
        .collect()
}

fn align_up(v: u64, page: u32) -> u64 {
    let p = u64::from(page.max(1));
    v.div_ceil(p).saturating_mul(p)
}

/// The selected clock name in a `trace_clock` text, or the text itself.
fn clock_name(t: &str) -> String {
    super::read::selected_clock(t).unwrap_or_else(|| String::from("local"))
}

/// One option as trace-cmd stores it: u16 id, u32 size, data.
fn put_opt(out: &mut Vec<u8>, e: Endian, id: u16, data: &[u8]) {
    put16(out, e, id);
    put32(out, e, data.len() as u32);
    out.extend_from_slice(data);
}

fn put_str_opt(out: &mut Vec<u8>, e: Endian, id: u16, s: &str, pad: usize) {
    put16(out, e, id);
    put32(out, e, (s.len() + 1 + pad) as u32);
    out.extend_from_slice(s.as_bytes());
    out.resize(out.len() + 1 + pad, 0);
}

/// The v6 options block: `"options  \0"`, the options, u16 0. With
/// `fixed_len`, the block is padded to exactly that size (zeros after the
/// text of the last CPUSTAT option, or of a VERSION option); an error if
/// it does not fit. Also returns the offsets, relative to the block, of
/// each BUFFER option's u64 flyrecord offset.
pub(crate) fn encode_options(
    e: Endian,
    o: &WriteOptions<'_>,
    fixed_len: Option<usize>,
) -> Result<(Vec<u8>, Vec<u64>), WriteError> {
    let build = |pad: usize, fixed: bool| {
        let mut v = Vec::new();
        let mut bufs = Vec::new();
        v.extend_from_slice(b"options  \0");
        if let Some(d) = o.date {
            put_str_opt(&mut v, e, opt::DATE, d, 0);
        }
        if let Some(c) = o.trace_clock {
            put_str_opt(&mut v, e, opt::TRACECLOCK, c, 0);
        }
        if let Some(u) = o.uname {
            put_str_opt(&mut v, e, opt::UNAME, u, 0);
        }
        let pad_in_version = o.cpustat.is_empty();
        if o.version.is_some() || (pad_in_version && fixed) {
            put_str_opt(&mut v, e, opt::VERSION, o.version.unwrap_or(""), if pad_in_version { pad } else { 0 });
        }
        if let Some(n) = o.cpucount {
            let mut d = Vec::new();
            put32(&mut d, e, n);
            put_opt(&mut v, e, opt::CPUCOUNT, &d);
        }
        if let Some(id) = o.trace_id {
            put_opt(&mut v, e, opt::TRACEID, &encode_u64(e, id));
        }
        if let Some(l) = o.last_boot {
            put_str_opt(&mut v, e, opt::LAST_BOOT_INFO, l, 0);
        }
        let last = o.cpustat.len().saturating_sub(1);
        for (i, s) in o.cpustat.iter().enumerate() {
            put_str_opt(&mut v, e, opt::CPUSTAT, s, if i == last { pad } else { 0 });
        }
        for name in o.instances {
            put16(&mut v, e, opt::BUFFER);
            put32(&mut v, e, (8 + name.len() + 1) as u32);
            bufs.push(v.len() as u64);
            put64(&mut v, e, 0);
            v.extend_from_slice(name.as_bytes());
            v.push(0);
        }
        put16(&mut v, e, opt::DONE);
        (v, bufs)
    };
    match fixed_len {
        None => Ok(build(0, false)),
        Some(want) => {
            let need = build(0, true).0.len();
            if want < need {
                return Err(WriteError::NoRoom { need, reserved: want });
            }
            let (v, bufs) = build(want - need, true);
            if v.len() != want {
                return Err(WriteError::NoRoom { need: v.len(), reserved: want });
            }
            Ok((v, bufs))
        }
    }
}

/// Stages of the v6 header, in file order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    Start,
    Headers,
    Ftrace,
    Events,
    Kallsyms,
    Printk,
    Cmdlines,
    Cpus,
    Options,
    Flyrecord,
}

/// Produces the header of a version 6 trace.dat in order (see the module
/// documentation). Bytes accumulate in an internal buffer: write out
/// [`V6Writer::take`] as often as convenient.
#[derive(Debug)]
pub(crate) struct V6Writer {
    e: Endian,
    page_size: u32,
    out: Vec<u8>,
    /// Bytes handed out by `take` so far.
    flushed: u64,
    stage: Stage,
    cpus: u32,
    clock: Option<String>,
    /// A raw blob in progress: (expected, written); expected `None` for a
    /// blob whose length the caller patches in afterwards.
    blob: Option<(Option<u64>, u64)>,
    /// Event systems announced and not yet given, formats of the current
    /// system not yet given (streamed event systems).
    systems_left: (u32, u32),
}

impl V6Writer {
    /// Start a file: `abi` is the recording user space's byte order and
    /// long (4 or 8), `page_size` the sub-buffer size the data will be cut in.
    pub(crate) fn new(abi: Abi, page_size: u32) -> V6Writer {
        let e = abi.endian;
        let mut out = Vec::with_capacity(4096);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(b"6\0");
        out.push(match e {
            Endian::Little => 0,
            Endian::Big => 1,
        });
        out.push(abi.long_size as u8);
        put32(&mut out, e, page_size);
        V6Writer {
            e,
            page_size,
            out,
            flushed: 0,
            stage: Stage::Start,
            cpus: 0,
            clock: None,
            blob: None,
            systems_left: (0, 0),
        }
    }

    /// File offset of the next byte this writer produces.
    pub(crate) fn pos(&self) -> u64 {
        self.flushed + self.out.len() as u64
    }

    /// The bytes produced since the last call.
    pub(crate) fn take(&mut self) -> Vec<u8> {
        self.flushed += self.out.len() as u64;
        core::mem::take(&mut self.out)
    }

    fn step(&mut self, from: Stage, to: Stage, what: &'static str) -> Result<(), WriteError> {
        if let Some((Some(expected), written)) = self.blob {
            if expected != written {
                return Err(WriteError::Length { expected, written });
            }
        }
        self.blob = None;
        if self.systems_left != (0, 0) {
            return Err(WriteError::Order("event systems (fewer given than announced)"));
        }
        if self.stage != from {
            return Err(WriteError::Order(what));
        }
        self.stage = to;
        Ok(())
    }

    /// `events/header_page` and `events/header_event`.
    pub(crate) fn header_files(&mut self, header_page: &[u8], header_event: &[u8]) -> Result<(), WriteError> {
        self.step(Stage::Start, Stage::Headers, "header files")?;
        let e = self.e;
        self.out.extend_from_slice(b"header_page\0");
        put64(&mut self.out, e, header_page.len() as u64);
        self.out.extend_from_slice(header_page);
        self.out.extend_from_slice(b"header_event\0");
        put64(&mut self.out, e, header_event.len() as u64);
        self.out.extend_from_slice(header_event);
        Ok(())
    }

    /// The `events/ftrace/*/format` texts.
    pub(crate) fn ftrace_formats<T: AsRef<[u8]>>(&mut self, formats: &[T]) -> Result<(), WriteError> {
        self.step(Stage::Headers, Stage::Ftrace, "ftrace formats")?;
        let e = self.e;
        put32(&mut self.out, e, formats.len() as u32);
        for f in formats {
            let f = f.as_ref();
            put64(&mut self.out, e, f.len() as u64);
            self.out.extend_from_slice(f);
        }
        Ok(())
    }

    /// Event systems other than `ftrace`: (name, format texts).
    #[cfg(test)]
    pub(crate) fn event_systems<N: AsRef<str>, T: AsRef<[u8]>>(
        &mut self,
        systems: &[(N, Vec<T>)],
    ) -> Result<(), WriteError> {
        self.step(Stage::Ftrace, Stage::Events, "event systems")?;
        let e = self.e;
        put32(&mut self.out, e, systems.len() as u32);
        for (name, formats) in systems {
            self.out.extend_from_slice(name.as_ref().as_bytes());
            self.out.push(0);
            put32(&mut self.out, e, formats.len() as u32);
            for f in formats {
                let f = f.as_ref();
                put64(&mut self.out, e, f.len() as u64);
                self.out.extend_from_slice(f);
            }
        }
        Ok(())
    }

    /// Start the event systems for `n` systems given one at a time (so
    /// their formats need not all be in memory): for each,
    /// [`V6Writer::event_system`] then that many [`V6Writer::event_format`].
    pub(crate) fn event_systems_begin(&mut self, n: u32) -> Result<(), WriteError> {
        self.step(Stage::Ftrace, Stage::Events, "event systems")?;
        put32(&mut self.out, self.e, n);
        self.systems_left = (n, 0);
        Ok(())
    }

    /// The next system's name and how many formats follow.
    pub(crate) fn event_system(&mut self, name: &str, formats: u32) -> Result<(), WriteError> {
        if self.stage != Stage::Events || self.systems_left.0 == 0 || self.systems_left.1 != 0 {
            return Err(WriteError::Order("event system"));
        }
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(0);
        put32(&mut self.out, self.e, formats);
        self.systems_left = (self.systems_left.0 - 1, formats);
        Ok(())
    }

    /// One format text of the current system.
    pub(crate) fn event_format(&mut self, text: &[u8]) -> Result<(), WriteError> {
        if self.stage != Stage::Events || self.systems_left.1 == 0 {
            return Err(WriteError::Order("event format"));
        }
        put64(&mut self.out, self.e, text.len() as u64);
        self.out.extend_from_slice(text);
        self.systems_left.1 -= 1;
        Ok(())
    }

    /// `/proc/kallsyms` text (may be empty).
    pub(crate) fn kallsyms(&mut self, text: &[u8]) -> Result<(), WriteError> {
        self.kallsyms_header(text.len() as u64)?;
        self.raw(text);
        Ok(())
    }

    /// Announce a kallsyms text of `len` bytes that the caller passes in
    /// pieces with [`V6Writer::raw`] (to avoid holding it in memory).
    pub(crate) fn kallsyms_header(&mut self, len: u64) -> Result<(), WriteError> {
        self.step(Stage::Events, Stage::Kallsyms, "kallsyms")?;
        let n = u32::try_from(len).map_err(|_| WriteError::TooLarge("kallsyms"))?;
        put32(&mut self.out, self.e, n);
        self.blob = Some((Some(len), 0));
        Ok(())
    }

    /// Start a kallsyms text whose length is not known in advance (the
    /// kernel's /proc/kallsyms reports size 0): pass it with
    /// [`V6Writer::raw`], then write [`encode_u32`] of
    /// [`V6Writer::blob_len`] at the returned file offset.
    pub(crate) fn kallsyms_unsized(&mut self) -> Result<u64, WriteError> {
        self.step(Stage::Events, Stage::Kallsyms, "kallsyms")?;
        let pos = self.pos();
        put32(&mut self.out, self.e, 0);
        self.blob = Some((None, 0));
        Ok(pos)
    }

    /// Bytes given so far to the blob in progress.
    pub(crate) fn blob_len(&self) -> u64 {
        self.blob.map_or(0, |b| b.1)
    }

    /// Bytes of a blob announced with a `*_header` call.
    pub(crate) fn raw(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
        if let Some((_, w)) = self.blob.as_mut() {
            *w += bytes.len() as u64;
        }
    }

    /// The `printk_formats` text.
    pub(crate) fn printk_formats(&mut self, text: &[u8]) -> Result<(), WriteError> {
        self.step(Stage::Kallsyms, Stage::Printk, "printk formats")?;
        let n = u32::try_from(text.len()).map_err(|_| WriteError::TooLarge("printk formats"))?;
        put32(&mut self.out, self.e, n);
        self.out.extend_from_slice(text);
        Ok(())
    }

    /// The `saved_cmdlines` text.
    pub(crate) fn saved_cmdlines(&mut self, text: &[u8]) -> Result<(), WriteError> {
        self.step(Stage::Printk, Stage::Cmdlines, "saved cmdlines")?;
        put64(&mut self.out, self.e, text.len() as u64);
        self.out.extend_from_slice(text);
        Ok(())
    }

    /// Number of CPUs in the flyrecord table.
    pub(crate) fn cpus(&mut self, n: u32) -> Result<(), WriteError> {
        self.step(Stage::Cmdlines, Stage::Cpus, "cpu count")?;
        self.cpus = n;
        put32(&mut self.out, self.e, n);
        Ok(())
    }

    /// The options block, optionally padded to `reserve` bytes so that it
    /// can be rewritten later (see [`encode_options`]).
    pub(crate) fn options(&mut self, o: &WriteOptions<'_>, reserve: Option<usize>) -> Result<OptionsSlot, WriteError> {
        self.step(Stage::Cpus, Stage::Options, "options")?;
        let (block, bufs) = encode_options(self.e, o, reserve)?;
        let pos = self.pos();
        self.clock = o.trace_clock.map(clock_name);
        let len = block.len();
        self.out.extend_from_slice(&block);
        Ok(OptionsSlot { pos, len, buffer_offsets: bufs.into_iter().map(|b| pos + b).collect() })
    }

    /// `"flyrecord\0"`, a zeroed table for [`V6Writer::cpus`] CPUs, the
    /// clock, and zeros up to the next page boundary.
    pub(crate) fn flyrecord(&mut self) -> Result<FlyrecordSlot, WriteError> {
        self.step(Stage::Options, Stage::Flyrecord, "flyrecord")?;
        let (bytes, table_rel) = encode_flyrecord_header(self.e, self.cpus, self.clock.as_deref());
        let table_pos = self.pos() + table_rel as u64;
        self.out.extend_from_slice(&bytes);
        let data_start = align_up(self.pos(), self.page_size);
        let pad = (data_start - self.pos()) as usize;
        self.out.resize(self.out.len() + pad, 0);
        Ok(FlyrecordSlot { table_pos, cpus: self.cpus, data_start })
    }
}

/// `"flyrecord\0"` + a zeroed table of `cpus` entries + (when a clock is
/// given) its `[name]` with a u64 length, as trace-cmd writes before each
/// buffer's data. Returns the bytes and the table's offset in them. Used
/// for extra instances, written after the top buffer's data at the offset
/// patched into their BUFFER option.
pub(crate) fn encode_flyrecord_header(e: Endian, cpus: u32, clock: Option<&str>) -> (Vec<u8>, usize) {
    let mut v = Vec::new();
    v.extend_from_slice(b"flyrecord\0");
    let table = v.len();
    v.resize(v.len() + cpus as usize * 16, 0);
    if let Some(c) = clock {
        let s = format!("[{c}]");
        put64(&mut v, e, s.len() as u64);
        v.extend_from_slice(s.as_bytes());
    }
    (v, table)
}
