//! A small deflate compressor (RFC 1951) for the console form, sans-IO.
//!
//! Board builds carry only this writing side; any inflater reads it (the
//! host's `miniz_oxide`, zlib). What it does, and why it is enough:
//!
//! * LZ77, greedy: at each position the last earlier position with the same
//!   next three bytes (one slot per hash, no chains) is tried; a match of 3
//!   to 258 bytes within the 32 KiB window is taken, else a literal.
//! * one block with the fixed Huffman codes (BTYPE 01, RFC 1951 §3.2.6): no
//!   code tables to build or send.
//!
//! Ring-buffer pages are the input: zero-filled tails, and records of one
//! event repeating their common fields and most of their payload. Those are
//! long matches, which the fixed codes take as well as dynamic ones would.
//! What the dynamic codes and lazy matching of zlib's level 6 add is ~20%
//! on such data, for 10+ KiB of code (see the README's size table).

use alloc::vec;
use alloc::vec::Vec;

/// Matches reach back at most this far (deflate's window).
const WINDOW: usize = 32 * 1024;
const MIN_MATCH: usize = 3;
const MAX_MATCH: usize = 258;
const HASH_BITS: u32 = 14;
/// Earlier positions tried per match (zlib's level 6 tries up to 128).
const CHAIN: usize = 32;

/// Length codes 257..=285: the shortest length each stands for.
const LENGTH_BASE: [u16; 29] =
    [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
/// Distance codes 0..=29: the shortest distance each stands for.
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
    8193, 12289, 16385, 24577,
];

/// The deflate bit stream: values least significant bit first, Huffman
/// codes most significant bit first.
struct Bits {
    out: Vec<u8>,
    acc: u32,
    n: u32,
}

impl Bits {
    /// `n` bits of `v` (n <= 16), least significant first.
    fn put(&mut self, v: u32, n: u32) {
        self.acc |= v << self.n;
        self.n += n;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    /// A Huffman code of `len` bits, its first bit the most significant.
    fn code(&mut self, code: u32, len: u32) {
        self.put(code.reverse_bits() >> (32 - len), len);
    }

    /// A literal/length symbol (0..=287) in the fixed code.
    fn symbol(&mut self, s: u32) {
        match s {
            0..=143 => self.code(0x30 + s, 8),
            144..=255 => self.code(0x190 + s - 144, 9),
            256..=279 => self.code(s - 256, 7),
            _ => self.code(0xc0 + s - 280, 8),
        }
    }

    /// A match: its length code and extra bits, then its distance's.
    fn matched(&mut self, len: usize, dist: usize) {
        let i = LENGTH_BASE.iter().rposition(|&b| usize::from(b) <= len).unwrap_or(0);
        let extra = if i < 8 || i == 28 { 0 } else { (i as u32 - 4) / 4 };
        self.symbol(257 + i as u32);
        self.put((len - usize::from(LENGTH_BASE[i])) as u32, extra);
        let d = DIST_BASE.iter().rposition(|&b| usize::from(b) <= dist).unwrap_or(0);
        let extra = if d < 4 { 0 } else { d as u32 / 2 - 1 };
        self.code(d as u32, 5);
        self.put((dist - usize::from(DIST_BASE[d])) as u32, extra);
    }
}

fn hash(b: &[u8]) -> usize {
    match b {
        [a, b, c, ..] => {
            let v = u32::from(*a) | u32::from(*b) << 8 | u32::from(*c) << 16;
            (v.wrapping_mul(0x9e37_79b1) >> (32 - HASH_BITS)) as usize
        }
        _ => 0,
    }
}

/// The longest match for `data[i..]` among the earlier positions with the
/// same hash (newest first, at most [`CHAIN`] of them): (length, distance).
fn longest(data: &[u8], i: usize, head: &[u32], prev: &[u32]) -> (usize, usize) {
    let Some(rest) = data.get(i..).filter(|r| r.len() >= MIN_MATCH) else { return (0, 0) };
    let mut best = (0, 0);
    let mut cand = head.get(hash(rest)).copied().unwrap_or(0) as usize;
    for _ in 0..CHAIN {
        // Positions are stored + 1 (0: none); the window bounds the reach.
        if cand == 0 || i + 1 - cand > WINDOW {
            break;
        }
        let from = data.get(cand - 1..).unwrap_or_default();
        let len = from.iter().zip(rest).take(MAX_MATCH).take_while(|(a, b)| a == b).count();
        if len > best.0 {
            best = (len, i + 1 - cand);
            if len == MAX_MATCH {
                break;
            }
        }
        cand = prev.get((cand - 1) % WINDOW).copied().unwrap_or(0) as usize;
    }
    best
}

/// Positions seen so far, by the hash of their next three bytes.
struct Seen {
    /// Per hash: the last position + 1 that had it (0: none).
    head: Vec<u32>,
    /// Per position in the window: the one before it with the same hash.
    prev: Vec<u32>,
}

impl Seen {
    fn insert(&mut self, data: &[u8], j: usize) {
        if let Some(r) = data.get(j..).filter(|r| r.len() >= MIN_MATCH) {
            let h = hash(r);
            if let (Some(head), Some(prev)) = (self.head.get_mut(h), self.prev.get_mut(j % WINDOW)) {
                *prev = *head;
                *head = j as u32 + 1;
            }
        }
    }
}

/// `data` as one raw deflate block (no zlib or gzip wrapper).
pub(crate) fn compress(data: &[u8]) -> Vec<u8> {
    let mut bits = Bits { out: Vec::with_capacity(data.len() / 3 + 16), acc: 0, n: 0 };
    // BFINAL 1, BTYPE 01 (fixed codes).
    bits.put(0b011, 3);
    let mut seen = Seen { head: vec![0; 1 << HASH_BITS], prev: vec![0; WINDOW] };
    let mut i = 0;
    // A match found at i - 1, not yet written (lazy matching, as zlib's).
    let mut pending: Option<(usize, usize)> = None;
    while let Some(&byte) = data.get(i) {
        let here = Some(longest(data, i, &seen.head, &seen.prev)).filter(|m| m.0 >= MIN_MATCH);
        seen.insert(data, i);
        match (pending, here) {
            // The match one byte back is taken unless the one here is longer.
            (Some((len, dist)), h) if !h.is_some_and(|h| h.0 > len) => {
                bits.matched(len, dist);
                for j in i + 1..i - 1 + len {
                    seen.insert(data, j);
                }
                i += len - 1;
                pending = None;
                continue;
            }
            // Replaced by the longer one here: the byte before goes alone.
            (Some(_), h) => {
                bits.symbol(u32::from(data.get(i - 1).copied().unwrap_or(0)));
                pending = h;
            }
            (None, Some(h)) => pending = Some(h),
            (None, None) => bits.symbol(u32::from(byte)),
        }
        i += 1;
    }
    if let Some((len, dist)) = pending {
        bits.matched(len, dist);
    }
    bits.symbol(256);
    if bits.n > 0 {
        bits.out.push(bits.acc as u8);
    }
    bits.out
}

#[cfg(all(test, feature = "zlib"))]
mod tests {
    use super::*;

    fn round_trip(data: &[u8]) -> usize {
        let z = compress(data);
        let back = miniz_oxide::inflate::decompress_to_vec(&z).unwrap();
        assert_eq!(back, data);
        z.len()
    }

    /// TRBOX_DEFLATE_SAMPLE=FILE: the ratio on a real stream, against zlib.
    #[test]
    fn ratio_on_a_sample() {
        let Some(p) = std::env::var_os("TRBOX_DEFLATE_SAMPLE") else { return };
        let data = std::fs::read(p).unwrap();
        let mine: usize = data.chunks(32 * 1024).map(round_trip).sum();
        let z6: usize = data.chunks(32 * 1024).map(|c| miniz_oxide::deflate::compress_to_vec(c, 6).len()).sum();
        std::println!("{} bytes: this {mine}, miniz level 6 {z6}", data.len());
    }

    #[test]
    fn inflates_back() {
        round_trip(b"");
        round_trip(b"a");
        round_trip(b"abcabcabcabcabcabcabcabcabcabc");
        round_trip(&[0u8; 100_000]);
        let all: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
        assert!(round_trip(&all) < 2_000);
        // Pseudo-random bytes with repeats at every distance class.
        let mut x = 1u32;
        let mut v = Vec::new();
        for n in 0..60_000usize {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            if n % 97 == 0 && v.len() > 40_000 {
                let back = (x as usize >> 8) % 33_000 + 1;
                let from = v.len() - back.min(v.len());
                for k in 0..(x as usize % 300) {
                    let b = v[from + k % back];
                    v.push(b);
                }
            }
            v.push((x >> 24) as u8 & 0x0f);
        }
        round_trip(&v);
    }
}
