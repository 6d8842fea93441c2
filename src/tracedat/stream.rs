//! trbox's stream form of a recording (`tr-cat -o -`), sans-IO.
//!
//! A trace.dat cannot be written to a pipe: its flyrecord table needs each
//! CPU's data size before the data, and the data is grouped by CPU. The
//! stream carries the same parts in the order they become known, as
//! frames, so that a recording can go through ssh, a pipe or a serial
//! console and be turned back into a trace.dat on the host
//! (`to_tracedat`).
//!
//! ```text
//! magic    "trbox-stream\n" then a version byte (2; 1 is read too)
//! frame    kind: u8 | len: u32 little-endian | payload: len bytes
//! ```
//!
//! | kind | payload | when |
//! |------|---------|------|
//! | `S` start | endian u8 (0 little, 1 big), long size u8, page size u32 LE, CPU count u32 LE, each CPU's number u32 LE | first |
//! | `K` kallsyms | the next piece of `/proc/kallsyms` (the pieces concatenate; a lost piece loses symbol names only) | header; the console form: only the lines of the symbols its pages name, after the last `D` ([`crate::kallsyms::UsedSymbols`]) |
//! | `H` header | a trace.dat version 6 up to its options (header files, formats, an empty kallsyms, printk formats, saved_cmdlines of the start, options): what `tr-cat -N` sends to trace-cmd's listener, kallsyms apart; it ends the header | header |
//! | `D` data | CPU number u32 LE, one sub-buffer as `trace_pipe_raw` gave it (page size bytes, the board's byte order) | as pages arrive |
//! | `M` meta | name, NUL, bytes: `saved_cmdlines` | end |
//! | `T` stats | CPU number u32 LE, `per_cpu/cpuN/stats` text | end |
//! | `E` end | empty | last |
//!
//! Version 1 carried the header as `M` frames (`header_page`,
//! `header_event`, `printk_formats`, `trace_clock`, `uname`, `version`),
//! and `F` frames (system NUL format); they are still read. A reader skips frames of a kind it does not know. A stream cut off at
//! any byte reads up to the last whole frame, with a warning: the pages
//! that arrived are kept; saved_cmdlines and the stats come only at the
//! end, and so do the console form's symbols (then lost: said too).
//! `K` frames after the pages need no new version: a version-2 reader
//! gathers `K` frames wherever they come.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use super::write::{data_layout, encode_flyrecord_table, V6Writer, WriteError, WriteOptions};
use super::{cpustat_text, Endian, TraceDat};
use crate::problems::{ProblemKind, Problems};

/// The first bytes of a stream: a text line, then the version byte.
pub(crate) const MAGIC: &[u8; 13] = b"trbox-stream\n";
pub(crate) const VERSION: u8 = 2;
/// The largest sub-buffer size a stream may declare.
pub(crate) const MAX_PAGE_SIZE: u32 = 1 << 24;
/// Bytes of a frame header: kind and length.
pub(crate) const FRAME_HEADER: usize = 5;

pub(crate) mod kind {
    pub(crate) const START: u8 = b'S';
    pub(crate) const HEADER: u8 = b'H';
    pub(crate) const META: u8 = b'M';
    pub(crate) const FORMAT: u8 = b'F';
    pub(crate) const KALLSYMS: u8 = b'K';
    pub(crate) const DATA: u8 = b'D';
    pub(crate) const STATS: u8 = b'T';
    pub(crate) const END: u8 = b'E';
}

/// The stream's first bytes: magic and version.
pub(crate) fn preamble() -> [u8; 14] {
    let mut p = [0u8; 14];
    p[..13].copy_from_slice(MAGIC);
    p[13] = VERSION;
    p
}

/// Whether `bytes` (the start of a file) is a trbox stream.
pub(crate) fn is_stream(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// A frame header for a payload of `len` bytes.
pub(crate) fn frame_header(kind: u8, len: u32) -> [u8; FRAME_HEADER] {
    let l = len.to_le_bytes();
    [kind, l[0], l[1], l[2], l[3]]
}

/// A whole frame: header and payload (payloads over 4 GiB cannot be
/// framed; the recorder never makes one).
pub(crate) fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(FRAME_HEADER + payload.len());
    v.extend_from_slice(&frame_header(kind, payload.len() as u32));
    v.extend_from_slice(payload);
    v
}

/// A `name NUL bytes` frame (meta or format).
pub(crate) fn named_frame(kind: u8, name: &str, bytes: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(name.len() + 1 + bytes.len());
    p.extend_from_slice(name.as_bytes());
    p.push(0);
    p.extend_from_slice(bytes);
    frame(kind, &p)
}

/// The start frame.
pub(crate) fn start_frame(endian: Endian, long_size: u8, page_size: u32, cpus: &[u32]) -> Vec<u8> {
    let mut p = vec![
        match endian {
            Endian::Little => 0,
            Endian::Big => 1,
        },
        long_size,
    ];
    p.extend_from_slice(&page_size.to_le_bytes());
    p.extend_from_slice(&(cpus.len() as u32).to_le_bytes());
    for c in cpus {
        p.extend_from_slice(&c.to_le_bytes());
    }
    frame(kind::START, &p)
}

/// The header of a data frame for one page of `cpu` (the page follows).
pub(crate) fn data_header(cpu: u32, page_len: usize) -> [u8; FRAME_HEADER + 4] {
    let mut h = [0u8; FRAME_HEADER + 4];
    h[..FRAME_HEADER].copy_from_slice(&frame_header(kind::DATA, (page_len + 4) as u32));
    h[FRAME_HEADER..].copy_from_slice(&cpu.to_le_bytes());
    h
}

/// A stats frame.
pub(crate) fn stats_frame(cpu: u32, text: &str) -> Vec<u8> {
    let mut p = cpu.to_le_bytes().to_vec();
    p.extend_from_slice(text.as_bytes());
    frame(kind::STATS, &p)
}

/// Why a stream cannot be read at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StreamError {
    /// Not a trbox stream (the magic is missing).
    NotAStream,
    /// A version this reader does not know.
    Version(u8),
    /// The start frame is missing, cut off or malformed.
    NoStart,
}

impl core::fmt::Display for StreamError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            StreamError::NotAStream => write!(f, "not a trbox stream (no 'trbox-stream' line at its start)"),
            StreamError::Version(v) => write!(f, "trbox stream version {v}, this tr-cat reads version {VERSION}"),
            StreamError::NoStart => {
                write!(f, "the stream ends before its header is complete (nothing recorded in it)")
            }
        }
    }
}

/// A stream's contents, borrowed from its bytes.
#[derive(Debug, Default)]
pub(crate) struct Stream<'a> {
    pub(crate) endian: Endian,
    pub(crate) long_size: u8,
    pub(crate) page_size: u32,
    /// CPU numbers, in the order of the flyrecord table.
    pub(crate) cpus: Vec<u32>,
    /// The `H` frame: a trace.dat up to its options.
    pub(crate) header: Option<&'a [u8]>,
    /// `M` frames: (name, bytes), the last of a name wins.
    pub(crate) meta: Vec<(&'a str, &'a [u8])>,
    /// `F` frames grouped by system, in order of first appearance.
    pub(crate) systems: Vec<(&'a str, Vec<&'a [u8]>)>,
    pub(crate) kallsyms: Vec<u8>,
    /// Per CPU index: its pages, oldest first.
    pub(crate) pages: Vec<Vec<&'a [u8]>>,
    pub(crate) stats: Vec<(u32, &'a str)>,
    /// The end frame was seen.
    pub(crate) complete: bool,
    /// What a person should know (a cut, frames left out).
    pub(crate) problems: Problems,
}

impl<'a> Stream<'a> {
    /// The bytes of meta entry `name`, if the stream has it.
    pub(crate) fn meta(&self, name: &str) -> Option<&'a [u8]> {
        self.meta.iter().rev().find(|(n, _)| *n == name).map(|(_, b)| *b)
    }

    pub(crate) fn page_count(&self) -> usize {
        self.pages.iter().map(Vec::len).sum()
    }
}

fn le32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// `name NUL rest`.
fn split_name(p: &[u8]) -> Option<(&str, &[u8])> {
    let nul = p.iter().position(|&b| b == 0)?;
    let name = core::str::from_utf8(p.get(..nul)?).ok()?;
    Some((name, p.get(nul + 1..)?))
}

fn parse_start(p: &[u8]) -> Option<(Endian, u8, u32, Vec<u32>)> {
    let endian = match p.first()? {
        0 => Endian::Little,
        1 => Endian::Big,
        _ => return None,
    };
    let long_size = *p.get(1)?;
    let page_size = le32(p, 2)?;
    let n = le32(p, 6)? as usize;
    // Each CPU takes 4 bytes of the payload: the count cannot exceed that.
    // A sub-buffer is a few pages at most (the kernel allows orders up to
    // MAX_PAGE_ORDER): a bigger size is damage, not a recording.
    if n > p.len() / 4 || !(16..=MAX_PAGE_SIZE).contains(&page_size) {
        return None;
    }
    let cpus = (0..n).map(|i| le32(p, 10 + 4 * i)).collect::<Option<Vec<u32>>>()?;
    Some((endian, long_size, page_size, cpus))
}

/// Read a stream (whole or cut off anywhere).
pub(crate) fn parse(bytes: &[u8]) -> Result<Stream<'_>, StreamError> {
    if !bytes.starts_with(MAGIC) {
        return Err(StreamError::NotAStream);
    }
    match bytes.get(MAGIC.len()) {
        None => return Err(StreamError::NoStart),
        Some(1 | 2) => {}
        Some(&v) => return Err(StreamError::Version(v)),
    }
    let mut s = Stream::default();
    let mut at = MAGIC.len() + 1;
    let mut started = false;
    let mut skipped = 0u32;
    while at < bytes.len() {
        let Some(len) = le32(bytes, at + 1) else {
            s.problems.add(
                ProblemKind::CutOff,
                format!("the stream is cut off at byte {} inside a frame header: read up to there", bytes.len()),
            );
            break;
        };
        let k = bytes[at];
        let start = at + FRAME_HEADER;
        let Some(p) = start.checked_add(len as usize).and_then(|end| bytes.get(start..end)) else {
            let what = if k == kind::DATA { "a page" } else { "a frame" };
            s.problems.add(
                ProblemKind::CutOff,
                format!(
                    "the stream is cut off at byte {} inside {what} that began at byte {at}: read up to there",
                    bytes.len()
                ),
            );
            break;
        };
        at = start + p.len();
        if !started {
            if k != kind::START {
                return Err(StreamError::NoStart);
            }
            let (e, l, ps, cpus) = parse_start(p).ok_or(StreamError::NoStart)?;
            (s.endian, s.long_size, s.page_size) = (e, l, ps);
            s.pages = vec![Vec::new(); cpus.len()];
            s.cpus = cpus;
            started = true;
            continue;
        }
        match k {
            kind::META => match split_name(p) {
                Some(m) => s.meta.push(m),
                None => skipped += 1,
            },
            kind::FORMAT => match split_name(p) {
                Some((sys, text)) => match s.systems.iter_mut().find(|(n, _)| *n == sys) {
                    Some((_, v)) => v.push(text),
                    None => s.systems.push((sys, vec![text])),
                },
                None => skipped += 1,
            },
            kind::KALLSYMS => s.kallsyms.extend_from_slice(p),
            kind::HEADER => s.header = Some(p),
            kind::DATA => {
                let cpu = le32(p, 0);
                let idx = cpu.and_then(|c| s.cpus.iter().position(|&x| x == c));
                match (idx, p.get(4..)) {
                    (Some(i), Some(page)) if page.len() <= s.page_size as usize => s.pages[i].push(page),
                    _ => skipped += 1,
                }
            }
            kind::STATS => match (le32(p, 0), p.get(4..).and_then(|t| core::str::from_utf8(t).ok())) {
                (Some(c), Some(t)) => s.stats.push((c, t)),
                _ => skipped += 1,
            },
            kind::END => {
                s.complete = true;
                break;
            }
            // A later kind: skipped, by design.
            _ => {}
        }
    }
    // No trace.dat header (H, or version 1's header_page): nothing to read
    // the pages with, and none came yet.
    if !started || (s.header.is_none() && s.meta("header_page").is_none()) {
        return Err(StreamError::NoStart);
    }
    if skipped > 0 {
        s.problems.add_counted(
            ProblemKind::BadFrame,
            u64::from(skipped),
            format!("{skipped} malformed frames left out"),
        );
    }
    if !s.complete {
        if s.problems.is_empty() {
            s.problems.add(
                ProblemKind::CutOff,
                format!("the stream ends at byte {} without its end frame (cut off?): read up to there", bytes.len()),
            );
        }
        s.problems.add(
            ProblemKind::MissingEnd,
            format!("{} pages read; the saved comms and the CPU stats come at the end and are missing", s.page_count()),
        );
        if s.kallsyms.is_empty() && s.header.is_some() {
            // The console form sends the symbols the pages name at the end.
            s.problems.add(
                ProblemKind::MissingEnd,
                "no kernel symbols: the console form sends them at the end of the stream, lost with it (addresses print as numbers)",
            );
        }
    }
    Ok(s)
}

/// The stream as a version 6 trace.dat (each CPU's pages contiguous, in
/// arrival order). The header's parts come from the `H` frame (read back
/// through [`TraceDat::read`]) or the version 1 frames; the saved_cmdlines
/// of the end win over those of the start.
pub(crate) fn to_tracedat(s: &Stream<'_>) -> Result<Vec<u8>, WriteError> {
    let td = s.header.and_then(|h| {
        let whole = super::msg::assemble(h, s.page_size, &vec![Vec::new(); s.cpus.len()]);
        TraceDat::read(&mut whole.as_slice()).ok()
    });
    let from_td = |name: &str| -> Option<&[u8]> {
        let t = td.as_ref()?;
        Some(match name {
            "header_page" => &t.header_page,
            "header_event" => &t.header_event,
            "printk_formats" => &t.printk_formats,
            "saved_cmdlines" => &t.saved_cmdlines,
            "trace_clock" => t.options.trace_clock_text.as_deref()?.as_bytes(),
            "uname" => t.options.uname.as_deref()?.as_bytes(),
            "version" => t.options.version.as_deref()?.as_bytes(),
            _ => return None,
        })
    };
    let meta = |name: &str| s.meta(name).or_else(|| from_td(name)).unwrap_or_default();
    let meta_str = |name: &str| core::str::from_utf8(meta(name)).ok().filter(|t| !t.is_empty());
    let e = s.endian;
    let mut w = V6Writer::new(crate::abi::Abi::new(e, s.long_size.into()), s.page_size);
    w.header_files(meta("header_page"), meta("header_event"))?;
    let mut systems: Vec<(&str, Vec<&[u8]>)> = s.systems.iter().map(|(n, f)| (*n, f.clone())).collect();
    if let Some(t) = &td {
        systems.push(("ftrace", t.ftrace_formats.iter().map(Vec::as_slice).collect()));
        systems
            .extend(t.systems.iter().map(|sys| (sys.name.as_str(), sys.formats.iter().map(Vec::as_slice).collect())));
    }
    let ftrace: Vec<&[u8]> =
        systems.iter().filter(|(n, _)| *n == "ftrace").flat_map(|(_, v)| v.iter().copied()).collect();
    w.ftrace_formats(&ftrace)?;
    let others: Vec<&(&str, Vec<&[u8]>)> = systems.iter().filter(|(n, _)| *n != "ftrace").collect();
    w.event_systems_begin(others.len() as u32)?;
    for (name, formats) in others {
        w.event_system(name, formats.len() as u32)?;
        for f in formats {
            w.event_format(f)?;
        }
    }
    // Version 2 sends kallsyms apart (K frames), an H frame without them.
    let from_header = td.as_ref().map(|t| &t.kallsyms[..]).filter(|k| !k.is_empty());
    w.kallsyms(from_header.unwrap_or(&s.kallsyms))?;
    w.printk_formats(meta("printk_formats"))?;
    w.saved_cmdlines(meta("saved_cmdlines"))?;
    w.cpus(s.cpus.len() as u32)?;
    let stats: Vec<String> = s.stats.iter().map(|(c, t)| cpustat_text(*c, t)).collect();
    let clock = meta_str("trace_clock").map(ToString::to_string);
    let o = WriteOptions {
        trace_clock: clock.as_deref(),
        uname: meta_str("uname"),
        version: meta_str("version"),
        cpucount: Some(s.cpus.len() as u32),
        cpustat: &stats,
        ..Default::default()
    };
    w.options(&o, None)?;
    let fly = w.flyrecord()?;
    let mut out = w.take();
    let ps = s.page_size as usize;
    let sizes: Vec<u64> = s.pages.iter().map(|p| (p.len() * ps) as u64).collect();
    let table = data_layout(fly.data_start, s.page_size, &sizes);
    for pages in &s.pages {
        for p in pages {
            out.extend_from_slice(p);
            // A short page (the last one read(2) gave) is padded.
            out.resize(out.len() + (ps - p.len()), 0);
        }
    }
    let t = encode_flyrecord_table(e, &table);
    let pos = fly.table_pos as usize;
    if let Some(dst) = out.get_mut(pos..pos + t.len()) {
        dst.copy_from_slice(&t);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let mut v = preamble().to_vec();
        v.extend(start_frame(Endian::Little, 8, 4096, &[0, 1]));
        v.extend(named_frame(kind::META, "header_page", b"hp"));
        v.extend(named_frame(kind::FORMAT, "sched", b"name: a\n"));
        v.extend(frame(kind::KALLSYMS, b"ffff t f\n"));
        v.extend(data_header(1, 4096));
        v.extend([7u8; 4096]);
        v.extend(data_header(0, 10));
        v.extend([8u8; 10]);
        v.extend(named_frame(kind::META, "saved_cmdlines", b"1 init\n"));
        v.extend(stats_frame(0, "entries: 0\n"));
        v.extend(frame(b'Z', b"future"));
        v.extend(frame(kind::END, b""));
        v
    }

    #[test]
    fn whole_stream() {
        let b = sample();
        let s = parse(&b).unwrap();
        assert!(s.complete);
        assert!(s.problems.is_empty(), "{:?}", s.problems);
        assert_eq!(s.cpus, [0, 1]);
        assert_eq!(s.pages[1], [&[7u8; 4096][..]]);
        assert_eq!(s.pages[0].len(), 1);
        assert_eq!(s.meta("saved_cmdlines"), Some(&b"1 init\n"[..]));
        let td = to_tracedat(&s).unwrap();
        let r = crate::tracedat::TraceDat::read(&mut td.as_slice()).unwrap();
        assert_eq!(r.cpus, 2);
    }

    #[test]
    fn cut_anywhere() {
        let b = sample();
        for n in 0..b.len() {
            match parse(&b[..n]) {
                Ok(s) => {
                    assert!(!s.complete);
                    assert!(!s.problems.is_empty(), "cut at {n}");
                    let _ = to_tracedat(&s);
                }
                // Up to the end of the header_page frame (start 23 bytes,
                // header_page 19).
                Err(e) => assert!(n < MAGIC.len() + 1 + 23 + 19, "cut at {n}: {e}"),
            }
        }
    }
}
