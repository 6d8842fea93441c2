//! Integers to ASCII without `core::fmt`, and a stack buffer to assemble a
//! piece of a line in: every line goes through here (prefix columns, `%d`,
//! `%lx`, `%p`), and one `write_str` per piece is much cheaper than the
//! formatting machinery's per-argument dispatch.

/// "00".."99": two decimal digits per division.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Room for any u64 in any base we print (22 octal digits).
pub(crate) const DIGITS: usize = 24;

#[inline(always)]
fn pair(b: &mut [u8; DIGITS], i: usize, d: u64) {
    let d = (d as usize % 100) * 2;
    if let (Some(s), Some(t)) = (b.get_mut(i..i + 2), PAIRS.get(d..d + 2)) {
        s.copy_from_slice(t);
    }
}

/// The digits of `v` in `base` (8, 16, else 10), right-aligned in `b`;
/// returns where they start. `upper` picks `A-F`.
pub(crate) fn digits(b: &mut [u8; DIGITS], mut v: u64, base: u8, upper: bool) -> usize {
    let mut i = DIGITS;
    match base {
        16 => {
            let set: &[u8; 16] = if upper { b"0123456789ABCDEF" } else { b"0123456789abcdef" };
            loop {
                i -= 1;
                b[i] = set[(v & 15) as usize];
                v >>= 4;
                if v == 0 || i == 0 {
                    break;
                }
            }
        }
        8 => loop {
            i -= 1;
            b[i] = b'0' + (v & 7) as u8;
            v >>= 3;
            if v == 0 || i == 0 {
                break;
            }
        },
        _ => {
            while v >= 100 {
                i -= 2;
                pair(b, i, v);
                v /= 100;
            }
            if v >= 10 {
                i -= 2;
                pair(b, i, v);
            } else {
                i -= 1;
                b[i] = b'0' + v as u8;
            }
        }
    }
    i
}

/// A fixed-size stack buffer of UTF-8 text. What does not fit is dropped
/// (never a panic); callers size it for what they put in.
pub(crate) struct StackBuf<const N: usize> {
    b: [u8; N],
    len: usize,
}

impl<const N: usize> StackBuf<N> {
    #[inline(always)]
    pub fn new() -> Self {
        StackBuf { b: [0; N], len: 0 }
    }

    #[inline(always)]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Room left.
    #[inline(always)]
    pub fn room(&self) -> usize {
        N - self.len
    }

    /// One ASCII byte.
    #[inline(always)]
    pub fn push(&mut self, c: u8) {
        if let Some(slot) = self.b.get_mut(self.len) {
            *slot = c;
            self.len += 1;
        }
    }

    /// `n` copies of the ASCII byte `c` (a few: padding).
    #[inline(always)]
    pub fn fill(&mut self, c: u8, n: usize) {
        for _ in 0..n.min(self.room()) {
            self.push(c);
        }
    }

    /// Two decimal digits of `v` (below 100).
    #[inline(always)]
    pub fn push_pair(&mut self, v: u32) {
        let d = (v as usize % 100) * 2;
        self.push(PAIRS.get(d).copied().unwrap_or(b'0'));
        self.push(PAIRS.get(d + 1).copied().unwrap_or(b'0'));
    }

    /// Whole pieces of ASCII or UTF-8 only, so the buffer stays valid.
    #[inline(always)]
    pub fn push_bytes(&mut self, s: &[u8]) {
        if let Some(d) = self.b.get_mut(self.len..self.len + s.len()) {
            d.copy_from_slice(s);
            self.len += s.len();
        }
    }

    #[inline(always)]
    pub fn push_str(&mut self, s: &str) {
        self.push_bytes(s.as_bytes());
    }

    /// `v` right-aligned in `width`, padded with `pad`.
    pub fn push_padded(&mut self, v: u64, width: usize, pad: u8) {
        let mut d = [0u8; DIGITS];
        let i = digits(&mut d, v, 10, false);
        self.fill(pad, width.saturating_sub(DIGITS - i));
        self.push_bytes(d.get(i..).unwrap_or(&[]));
    }

    /// Signed decimal.
    pub fn push_int(&mut self, v: i64) {
        if v < 0 {
            self.push(b'-');
        }
        self.push_padded(v.unsigned_abs(), 0, b' ');
    }

    #[inline(always)]
    pub fn bytes(&self) -> &[u8] {
        self.b.get(..self.len).unwrap_or(&[])
    }

    pub fn as_str(&self) -> &str {
        core::str::from_utf8(self.b.get(..self.len).unwrap_or(&[])).unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: u64, base: u8, upper: bool) -> alloc::string::String {
        let mut b = [0u8; DIGITS];
        let i = digits(&mut b, v, base, upper);
        alloc::string::String::from_utf8(b[i..].to_vec()).unwrap()
    }

    #[test]
    fn all_bases() {
        for v in [0u64, 1, 9, 10, 99, 100, 101, 999, 1000, 12345, u32::MAX as u64, u64::MAX, 1 << 63] {
            assert_eq!(s(v, 10, false), alloc::format!("{v}"));
            assert_eq!(s(v, 16, false), alloc::format!("{v:x}"));
            assert_eq!(s(v, 16, true), alloc::format!("{v:X}"));
            assert_eq!(s(v, 8, false), alloc::format!("{v:o}"));
        }
    }

    #[test]
    fn buffer_drops_what_does_not_fit() {
        let mut b = StackBuf::<4>::new();
        b.push_str("abc");
        b.push_str("de");
        b.push_padded(7, 3, b'0');
        assert_eq!(b.as_str(), "abc0");
    }
}
