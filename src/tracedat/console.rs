//! The console form of a stream (`tr-cat -o - --console`), sans-IO: the
//! stream's bytes as deflate-compressed, checksummed text lines between two
//! markers, so that a recording survives a serial console and its capture
//! (picocom, minicom, screen, `qemu -serial file:`).
//!
//! ```text
//! trbox-console-begin 1
//! trbox:1:b:<base64>:<crc32>
//! trbox:2:.:<base64>:<crc32>
//! trbox-console-end 2
//! ```
//!
//! The stream is cut into blocks of whole frames (see [`super::stream`]);
//! each block is compressed on its own (raw deflate) and written as lines
//! of at most `LINE_BYTES` compressed bytes in base64. A line is
//! `trbox:SEQ:FLAG:BASE64:CRC`: SEQ numbers the lines from 1, FLAG is `b`
//! on a block's first line, `+` on the next ones, `.` on its last (`=` for
//! a block of one line), CRC is the CRC-32
//! (IEEE) of the text from SEQ to the last base64 character, in 8 hex
//! digits. Anything before `trbox:` on a line (a console's time stamp) and
//! every other line (kernel messages, the shell, `\r`) is ignored.
//!
//! On reading, a line that fails its checksum is reported by its line
//! number in the log; the block it belonged to is left out and the blocks
//! around it are kept (blocks hold whole frames, so the stream reads on).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

#[cfg(feature = "zlib")]
use crate::problems::{ProblemKind, Problems};

/// The first line of a console stream; the digit is the form's version.
pub(crate) const BEGIN: &str = "trbox-console-begin 1";
pub(crate) const END: &str = "trbox-console-end";
const PREFIX: &str = "trbox:";
/// Compressed bytes per line (76 base64 characters).
pub(crate) const LINE_BYTES: usize = 57;
/// Stream bytes gathered before a block is compressed.
pub(crate) const BLOCK_BYTES: usize = 32 * 1024;
/// The largest block a reader inflates (a writer makes ~[`BLOCK_BYTES`],
/// plus one frame: a kallsyms piece or a page).
pub(crate) const MAX_BLOCK: usize = 1 << 25;
/// The most a block of trbox's writer inflates to per compressed byte:
/// its deflate (`deflate` below: miniz_oxide, fixed codes) spends at
/// least 13 bits on 258 bytes (length code 285: 8 bits, distance code 0:
/// 5 bits, no extra bits), 158.8 to 1. A block that inflates further is
/// not trbox's (a decompression bomb, issue 27) and is left out after that
/// many bytes.
pub(crate) const MAX_RATIO: usize = 159;

/// One block as raw deflate (RFC 1951), by miniz_oxide: level 6 (zlib's
/// default: lazy matching, up to 128 positions tried per match), with the
/// fixed Huffman codes only, which keep [`MAX_RATIO`] true of every block
/// (dynamic codes would make some 10-20% fewer lines, but a block of them
/// may inflate up to 1032 times its size, which trbox's readers of
/// before this compressor refuse as not trbox's). Any inflater reads it.
fn deflate(data: &[u8]) -> Vec<u8> {
    super::deflate::compress(data)
}

/// The most a whole recording may inflate to (the stream is then held
/// in memory and converted): past it, the log is refused.
pub(crate) const MAX_STREAM: usize = 1 << 30;

/// CRC-32 (IEEE 802.3, reflected), bit by bit: console speeds need no table.
pub(crate) fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0xEDB8_8320 } else { c >> 1 };
        }
    }
    !c
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64(data: &[u8], out: &mut String) {
    for c in data.chunks(3) {
        let n =
            (u32::from(c[0]) << 16) | (u32::from(*c.get(1).unwrap_or(&0)) << 8) | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(B64[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
}

#[cfg(feature = "zlib")]
fn unbase64(s: &[u8]) -> Option<Vec<u8>> {
    if s.len() % 4 != 0 {
        return None;
    }
    let val = |b: u8| -> Option<u32> {
        Some(match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for q in s.chunks(4) {
        let pad = q.iter().rev().take_while(|&&b| b == b'=').count();
        if pad > 2 {
            return None;
        }
        let mut n = 0u32;
        for (i, &b) in q.iter().enumerate() {
            n <<= 6;
            if i < 4 - pad {
                n |= val(b)?;
            }
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

/// Turns stream bytes (given whole frames at a time) into console lines.
#[derive(Debug, Default)]
pub(crate) struct Encoder {
    seq: u32,
    pending: Vec<u8>,
}

impl Encoder {
    /// An encoder at line 1 with nothing pending.
    pub(crate) fn new() -> Encoder {
        Encoder::default()
    }

    /// The begin marker line.
    pub(crate) fn begin(&self) -> String {
        String::from(BEGIN) + "\n"
    }

    /// Take whole frames; returns the lines of a block once enough is
    /// gathered (else an empty string).
    pub(crate) fn push(&mut self, frames: &[u8]) -> String {
        self.pending.extend_from_slice(frames);
        if self.pending.len() >= BLOCK_BYTES {
            self.flush()
        } else {
            String::new()
        }
    }

    /// The lines of what is gathered, as one block.
    pub(crate) fn flush(&mut self) -> String {
        if self.pending.is_empty() {
            return String::new();
        }
        let z = deflate(&self.pending);
        self.pending.clear();
        let mut out = String::with_capacity(z.len() * 4 / 3 + z.len() / LINE_BYTES * 24 + 32);
        let n = z.chunks(LINE_BYTES).len();
        for (i, part) in z.chunks(LINE_BYTES).enumerate() {
            self.seq += 1;
            let flag = match (i == 0, i + 1 == n) {
                (true, true) => '=',
                (true, false) => 'b',
                (false, false) => '+',
                (false, true) => '.',
            };
            let mut body = self.seq.to_string();
            body.push(':');
            body.push(flag);
            body.push(':');
            base64(part, &mut body);
            out.push_str(PREFIX);
            out.push_str(&body);
            out.push(':');
            let crc = crc32(body.as_bytes());
            for i in (0..8).rev() {
                out.push(char::from(b"0123456789abcdef"[(crc >> (4 * i)) as usize & 15]));
            }
            out.push('\n');
        }
        out
    }

    /// What is left, and the end marker with the number of lines.
    pub(crate) fn end(&mut self) -> String {
        let mut s = self.flush();
        s.push_str(&format!("{END} {}\n", self.seq));
        s
    }
}

#[cfg(feature = "zlib")]
/// Why no stream could be taken from a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ConsoleError {
    /// No begin marker.
    NoBegin,
    /// Markers, but no block could be read.
    NothingReadable,
    /// The first block read is not the start of a trbox stream.
    NotAStream,
    /// The blocks inflate past this many bytes in all.
    TooBig(usize),
}

#[cfg(feature = "zlib")]
impl core::fmt::Display for ConsoleError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ConsoleError::NoBegin => write!(f, "no '{BEGIN}' line: no recording of tr-cat -o - --console in it"),
            ConsoleError::NothingReadable => {
                write!(f, "no block of the recording could be read back")
            }
            ConsoleError::NotAStream => write!(f, "its first block is not the start of a trbox stream"),
            ConsoleError::TooBig(n) => {
                write!(f, "the recording inflates to more than {} MiB: refused", n >> 20)
            }
        }
    }
}

#[cfg(feature = "zlib")]
/// The stream taken back from a console log.
#[derive(Debug, Default)]
pub(crate) struct Decoded {
    pub(crate) stream: Vec<u8>,
    /// Lines of the recording found intact.
    pub(crate) lines: u32,
    /// Damaged lines ([`ProblemKind::DamagedLine`]), blocks left out
    /// ([`ProblemKind::LostBlock`]), a cut: each with what it lost.
    pub(crate) problems: Problems,
}

#[cfg(feature = "zlib")]
impl Decoded {
    /// Lines of the recording found damaged.
    pub(crate) fn damaged(&self) -> u64 {
        self.problems.count(ProblemKind::DamagedLine)
    }

    /// Blocks left out.
    pub(crate) fn blocks_lost(&self) -> u64 {
        self.problems.count(ProblemKind::LostBlock)
    }
}

#[cfg(feature = "zlib")]
struct Line<'a> {
    seq: u32,
    first: bool,
    last: bool,
    data: &'a [u8],
}

#[cfg(feature = "zlib")]
/// Parse `trbox:SEQ:FLAG:BASE64:CRC` (from `trbox:` on): None when it is
/// not such a line at all, Some(Err) when it is one but damaged.
fn parse_line(l: &[u8]) -> Option<Result<Line<'_>, ()>> {
    let start = find(l, PREFIX.as_bytes())?;
    let rest = l.get(start + PREFIX.len()..)?;
    let rest = trim_end(rest);
    Some((|| {
        let colon = rest.iter().rposition(|&b| b == b':').ok_or(())?;
        let (body, crc) = (rest.get(..colon).ok_or(())?, rest.get(colon + 1..).ok_or(())?);
        let crc = core::str::from_utf8(crc).ok().and_then(|c| u32::from_str_radix(c, 16).ok()).ok_or(())?;
        if crc32(body) != crc {
            return Err(());
        }
        let mut f = body.splitn(3, |&b| b == b':');
        let seq = f.next().and_then(|s| core::str::from_utf8(s).ok()).and_then(|s| s.parse().ok()).ok_or(())?;
        let (first, last) = match f.next() {
            Some(b"=") => (true, true),
            Some(b"b") => (true, false),
            Some(b"+") => (false, false),
            Some(b".") => (false, true),
            _ => return Err(()),
        };
        Ok(Line { seq, first, last, data: f.next().ok_or(())? })
    })())
}

#[cfg(feature = "zlib")]
fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

#[cfg(feature = "zlib")]
fn trim_end(mut s: &[u8]) -> &[u8] {
    while let [rest @ .., b' ' | b'\t' | b'\r' | b'\n' | 0] = s {
        s = rest;
    }
    s
}

#[cfg(feature = "zlib")]
/// Take the last recording out of a console log, inflated to at most
/// [`MAX_STREAM`] bytes.
pub(crate) fn decode(log: &[u8]) -> Result<Decoded, ConsoleError> {
    decode_within(log, MAX_STREAM)
}

#[cfg(feature = "zlib")]
/// [`decode`], the stream at most `total` bytes. Each block inflates to at
/// most [`MAX_RATIO`] times its compressed size, [`MAX_BLOCK`] bytes, and
/// what is left of `total`: what trbox's writer can have put there.
pub(crate) fn decode_within(log: &[u8], total: usize) -> Result<Decoded, ConsoleError> {
    let lines: Vec<&[u8]> = log.split(|&b| b == b'\n').collect();
    let begin = lines.iter().rposition(|l| find(l, BEGIN.as_bytes()).is_some()).ok_or(ConsoleError::NoBegin)?;
    let mut d = Decoded::default();
    // The block being gathered: its compressed bytes, the next SEQ it
    // needs, the log line it began on, and whether it is broken.
    let mut block: Vec<u8> = Vec::new();
    let mut next_seq = 1u32;
    let mut block_from = begin + 2;
    let mut broken = false;
    let mut ended = None;
    let give_up = |d: &mut Decoded, from: usize, to: usize| {
        d.problems.add(
            ProblemKind::LostBlock,
            format!("log lines {from}-{to}: a block of the recording is left out (a line of it is damaged or missing)"),
        );
    };
    for (i, l) in lines.iter().enumerate().skip(begin + 1) {
        let no = i + 1;
        if let Some(p) = find(l, END.as_bytes()) {
            let rest = l.get(p + END.len()..).unwrap_or_default();
            ended = core::str::from_utf8(trim_end(rest)).ok().and_then(|s| s.trim().parse::<u32>().ok());
            if ended.is_some() {
                break;
            }
        }
        let Some(parsed) = parse_line(l) else {
            continue;
        };
        match parsed {
            Err(()) => {
                d.problems
                    .add(ProblemKind::DamagedLine, format!("log line {no}: damaged (checksum or layout), left out"));
                broken = true;
            }
            Ok(line) => {
                d.lines += 1;
                if line.seq < next_seq {
                    // A repeat (the capture saw it twice): already had.
                    continue;
                }
                if line.first {
                    // A block begins: one still open lost its end.
                    if !block.is_empty() || broken {
                        give_up(&mut d, block_from, no - 1);
                    }
                    block.clear();
                    broken = false;
                    block_from = no;
                } else if line.seq != next_seq {
                    broken = true;
                }
                next_seq = line.seq.saturating_add(1);
                match unbase64(line.data) {
                    Some(b) if !broken => block.extend_from_slice(&b),
                    _ => broken = true,
                }
                if line.last {
                    if broken {
                        give_up(&mut d, block_from, no);
                    } else {
                        let room = total.saturating_sub(d.stream.len());
                        let most = block.len().saturating_mul(MAX_RATIO).saturating_add(258).min(MAX_BLOCK);
                        match miniz_oxide::inflate::decompress_to_vec_with_limit(&block, most.min(room)) {
                            // (A first block lost leaves the rest to the stream's reader.)
                            Ok(b)
                                if d.stream.is_empty()
                                    && d.blocks_lost() == 0
                                    && !b.starts_with(super::stream::MAGIC) =>
                            {
                                return Err(ConsoleError::NotAStream)
                            }
                            Ok(b) => d.stream.extend_from_slice(&b),
                            Err(e) if e.status == miniz_oxide::inflate::TINFLStatus::HasMoreOutput && room < most => {
                                return Err(ConsoleError::TooBig(total))
                            }
                            Err(e) => {
                                if e.status == miniz_oxide::inflate::TINFLStatus::HasMoreOutput {
                                    d.problems.add(
                                        ProblemKind::OversizedBlock,
                                        format!(
                                            "log lines {block_from}-{no}: the block inflates to more than {MAX_RATIO} times its size (not what trbox writes)"
                                        ),
                                    );
                                }
                                give_up(&mut d, block_from, no)
                            }
                        }
                    }
                    block.clear();
                    broken = false;
                    block_from = no + 1;
                }
            }
        }
    }
    match ended {
        None => d.problems.add(ProblemKind::CutOff, "no end marker: the recording is cut off; read up to there"),
        Some(n) if n + 1 != next_seq => d.problems.add(
            ProblemKind::CutOff,
            format!("the end marker counts {n} lines, the last one seen is {}", next_seq - 1),
        ),
        Some(_) => {}
    }
    if !block.is_empty() || broken {
        d.problems
            .add(ProblemKind::LostBlock, format!("log lines {block_from}-: the last block is incomplete, left out"));
    }
    if d.stream.is_empty() {
        return Err(ConsoleError::NothingReadable);
    }
    Ok(d)
}

#[cfg(all(test, feature = "zlib"))]
mod tests {
    use super::*;

    /// A stream's preamble, then `n` bytes.
    fn stream_bytes(n: usize) -> Vec<u8> {
        let mut v = super::super::stream::preamble().to_vec();
        v.extend((0..n).map(|i| (i * 7 % 251) as u8 ^ (i / 300) as u8));
        v
    }

    /// A log of one recording whose blocks are `blocks`, compressed by
    /// miniz (any deflate), lines as the encoder writes them.
    fn log_of(blocks: &[Vec<u8>]) -> String {
        let mut e = Encoder::new();
        let mut log = e.begin();
        for b in blocks {
            let z = miniz_oxide::deflate::compress_to_vec(b, 10);
            // The encoder's own lines, with miniz's bytes in place of its own.
            let n = z.chunks(LINE_BYTES).len();
            for (i, part) in z.chunks(LINE_BYTES).enumerate() {
                e.seq += 1;
                let flag = match (i == 0, i + 1 == n) {
                    (true, true) => "=",
                    (true, false) => "b",
                    (false, false) => "+",
                    (false, true) => ".",
                };
                let mut body = format!("{}:{flag}:", e.seq);
                base64(part, &mut body);
                log += &format!("{PREFIX}{body}:{:08x}\n", crc32(body.as_bytes()));
            }
        }
        log + &e.end()
    }

    #[test]
    fn a_bomb_is_left_out_and_capped() {
        let mut first = stream_bytes(1000);
        first.resize(BLOCK_BYTES, 0);
        // 1 MiB of zeros in a block: miniz makes it ~1 KiB, over MAX_RATIO.
        let bomb = alloc::vec![0u8; 1 << 20];
        let d = decode(log_of(&[first.clone(), bomb.clone(), first[14..].to_vec()]).as_bytes()).unwrap();
        assert_eq!(d.blocks_lost(), 1);
        assert_eq!(d.problems.count(ProblemKind::OversizedBlock), 1);
        assert!(d.problems.iter().any(|w| w.message.contains("times its size")), "{:?}", d.problems);
        assert_eq!(d.stream.len(), 2 * BLOCK_BYTES - 14);
        // Only bombs: nothing, having inflated little.
        assert_eq!(decode(log_of(&[bomb.clone(), bomb]).as_bytes()).unwrap_err(), ConsoleError::NothingReadable);
        // Past the total.
        let log = log_of(&[first.clone(), first.clone(), first.clone()]);
        assert_eq!(decode_within(log.as_bytes(), 2 * BLOCK_BYTES).unwrap_err(), ConsoleError::TooBig(2 * BLOCK_BYTES));
        assert_eq!(decode_within(log.as_bytes(), 3 * BLOCK_BYTES).unwrap().stream.len(), 3 * BLOCK_BYTES);
        // A first block that is not a stream's start.
        assert_eq!(decode(log_of(&[first[1..].to_vec()]).as_bytes()).unwrap_err(), ConsoleError::NotAStream);
    }

    #[test]
    fn base64_round_trip() {
        for n in 0..10 {
            let v: Vec<u8> = (0..n as u8).collect();
            let mut s = String::new();
            base64(&v, &mut s);
            assert_eq!(unbase64(s.as_bytes()).unwrap(), v);
        }
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn noise_crlf_and_a_damaged_line() {
        let data = stream_bytes(100_000);
        let mut e = Encoder::new();
        let mut log = String::from("U-Boot\r\n[    1.0] booting\r\n");
        log += &e.begin().replace('\n', "\r\n");
        let mut blocks = Vec::new();
        for c in data.chunks(20_000) {
            let l = e.push(c);
            if !l.is_empty() {
                blocks.push(c.len());
            }
            for line in l.lines() {
                log += "[  12.3] random: crng\r\n";
                log += line;
                log += "\r\n";
            }
        }
        log += &e.end();
        let d = decode(log.as_bytes()).unwrap();
        assert_eq!(d.stream, data, "{:?}", d.problems);
        assert!(d.problems.is_empty(), "{:?}", d.problems);
        // Damage one line in the middle: its block goes, the others stay.
        let target = log.lines().position(|l| l.starts_with("trbox:40:")).unwrap();
        let damaged: String = log
            .lines()
            .enumerate()
            .map(
                |(i, l)| {
                    if i == target {
                        l.replacen("A", "B", 1).replacen("a", "b", 1) + "\n"
                    } else {
                        format!("{l}\n")
                    }
                },
            )
            .collect();
        let d = decode(damaged.as_bytes()).unwrap();
        assert_eq!(d.damaged(), 1);
        assert_eq!(d.blocks_lost(), 1);
        assert!(d.problems.iter().any(|w| w.message.contains(&format!("log line {}", target + 1))), "{:?}", d.problems);
        assert!(d.stream.len() < data.len() && !d.stream.is_empty());
    }

    /// [`deflate`]'s blocks inflate back, and none goes past [`MAX_RATIO`]
    /// (zeros: the best case of the fixed codes).
    #[test]
    fn deflate_inflates_back_within_the_ratio() {
        let round_trip = |data: &[u8]| {
            let z = deflate(data);
            assert_eq!(miniz_oxide::inflate::decompress_to_vec(&z).unwrap(), data);
            assert!(data.len() <= z.len() * MAX_RATIO, "{} bytes from {}", data.len(), z.len());
            z.len()
        };
        round_trip(b"");
        round_trip(b"a");
        round_trip(b"abcabcabcabcabcabcabcabcabcabc");
        round_trip(&[0u8; BLOCK_BYTES]);
        round_trip(&[0u8; 100_000]);
        let all: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
        assert!(round_trip(&all) < 2_000);
        round_trip(&stream_bytes(40_000));
    }

    #[test]
    fn any_cut_decodes_or_says_why() {
        let mut e = Encoder::new();
        let mut log = e.begin();
        log += &e.push(&stream_bytes(40_000));
        log += &e.end();
        let whole = decode(log.as_bytes()).unwrap();
        assert!(whole.problems.is_empty(), "{:?}", whole.problems);
        let mut read = 0;
        for n in (0..log.len()).step_by(7) {
            let cut = &log.as_bytes()[..n];
            match decode(cut) {
                // What is read is whole blocks from the start; anything
                // short of the whole recording comes with a warning.
                Ok(d) => {
                    assert!(whole.stream.starts_with(&d.stream), "cut at {n}: not a prefix");
                    assert!(d.stream == whole.stream || !d.problems.is_empty(), "cut at {n}: short, no warning");
                    assert!(d.stream.len() >= read, "cut at {n}: less than a shorter cut");
                    read = d.stream.len();
                }
                // Before the begin line is whole: no recording; before the
                // first block is: none of it readable. Nothing else.
                Err(e) if n < BEGIN.len() => assert_eq!(e, ConsoleError::NoBegin, "cut at {n}"),
                Err(e) => {
                    assert_eq!(e, ConsoleError::NothingReadable, "cut at {n}");
                    assert_eq!(read, 0, "cut at {n}: nothing read after a shorter cut read some");
                }
            }
        }
        assert!(read > 0);
    }
}
