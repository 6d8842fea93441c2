//! Integers to ASCII without `core::fmt`, and a stack buffer to assemble a
//! piece of a line in: every line goes through here (prefix columns, `%d`,
//! `%lx`, `%p`), and one `write_str` per piece is much cheaper than the
//! formatting machinery's per-argument dispatch.
//!
//! Both types here only ever hold ASCII or whole `&str`s — their methods
//! admit nothing else — so they hand out their text without validating it
//! again (that re-check was a tenth of the time of a `tr-cat` line).

/// "00".."99": two decimal digits per division.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Room for any u64 in any base we print (22 octal digits), plus a little
/// for a sign and padding.
pub(crate) const DIGITS: usize = 24;

/// Text from bytes that are known to be ASCII or whole UTF-8 pieces.
#[inline(always)]
fn text(b: &[u8]) -> &str {
    debug_assert!(core::str::from_utf8(b).is_ok());
    // SAFETY: only called on the contents of a `Digits` or a `StackBuf`,
    // whose methods admit nothing but ASCII bytes (`push`, `fill` and
    // `prepend` replace any other byte by '?'; digits are ASCII) and whole
    // `&str`s (`push_str`, `push_buf` of another such buffer). Nothing is
    // ever cut: a piece that does not fit is dropped whole.
    unsafe { core::str::from_utf8_unchecked(b) }
}

/// An ASCII byte as it is, anything else as '?' (keeps the buffers' text
/// valid whatever a caller passes).
#[inline(always)]
fn ascii(c: u8) -> u8 {
    if c.is_ascii() {
        c
    } else {
        b'?'
    }
}

/// The digits of a number, right-aligned, with room to prepend a sign and
/// padding.
pub(crate) struct Digits {
    b: [u8; DIGITS],
    /// Where the text starts.
    i: usize,
}

impl Digits {
    /// The digits of `v` in `base` (8, 16, else 10); `upper` picks `A-F`.
    pub(crate) fn new(mut v: u64, base: u8, upper: bool) -> Self {
        let mut b = [0u8; DIGITS];
        let mut i = DIGITS;
        // Power-of-two bases: the digit count is known from the top bit,
        // so the digits fill their slots without a test per digit.
        let bits = 64 - (v | 1).leading_zeros();
        let hex: &[u8; 16] = if upper { b"0123456789ABCDEF" } else { b"0123456789abcdef" };
        if base == 16 {
            // A byte (two digits) per step.
            let bytes = bits.div_ceil(8) as usize;
            for c in b.get_mut(DIGITS - 2 * bytes..).unwrap_or(&mut []).rchunks_exact_mut(2) {
                c[0] = hex[usize::from(v as u8 >> 4)];
                c[1] = hex[usize::from(v as u8 & 15)];
                v >>= 8;
            }
            i = DIGITS - bits.div_ceil(4) as usize;
        } else if base == 8 {
            i = DIGITS - bits.div_ceil(3) as usize;
            for c in b.get_mut(i..).unwrap_or(&mut []).iter_mut().rev() {
                *c = b'0' + (v & 7) as u8;
                v >>= 3;
            }
        } else {
            while v >= 100 {
                i -= 2;
                pair(&mut b, i, v);
                v /= 100;
            }
            if v >= 10 {
                i -= 2;
                pair(&mut b, i, v);
            } else {
                i -= 1;
                b[i] = b'0' + v as u8;
            }
        }
        Digits { b, i }
    }

    /// Length of the text.
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        DIGITS - self.i
    }

    /// Room left in front.
    #[inline(always)]
    pub(crate) fn room(&self) -> usize {
        self.i
    }

    /// Put an ASCII byte in front (dropped when there is no room).
    #[inline(always)]
    pub(crate) fn prepend(&mut self, c: u8) {
        if self.i > 0 {
            self.i -= 1;
            self.b[self.i] = ascii(c);
        }
    }

    #[inline(always)]
    pub(crate) fn as_str(&self) -> &str {
        text(self.b.get(self.i..).unwrap_or(&[]))
    }
}

#[inline(always)]
fn pair(b: &mut [u8; DIGITS], i: usize, d: u64) {
    // The remainder first: `d as usize` would cut a u64 to 32 bits on armv7.
    let d = (d % 100) as usize * 2;
    if let (Some(s), Some(t)) = (b.get_mut(i..i + 2), PAIRS.get(d..d + 2)) {
        s.copy_from_slice(t);
    }
}

/// The eight hex digits of `v` as the bytes of a u64, the most significant
/// digit in its top byte: each nibble spread into a byte of its own, then
/// all eight made ASCII at once.
#[cfg(feature = "host")]
#[inline(always)]
fn hex8(v: u32, upper: bool) -> u64 {
    let x = u64::from(v);
    let x = (x | x << 16) & 0x0000_ffff_0000_ffff;
    let x = (x | x << 8) & 0x00ff_00ff_00ff_00ff;
    let n = (x | x << 4) & 0x0f0f_0f0f_0f0f_0f0f;
    // Nibble i of the value in byte i; a nibble of 10 or more gets the
    // distance from '9' + 1 to 'a' (or 'A') on top of '0'.
    let letters = if upper { 7 } else { 39 };
    let ten = ((n + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
    n + 0x3030_3030_3030_3030 + ten * letters
}

/// `v / 100` as the compiler would do it at full speed: a multiplication
/// by the reciprocal (exact for every u64).
#[cfg(feature = "host")]
#[inline(always)]
fn div100(v: u64) -> u64 {
    ((u128::from(v >> 2) * 0x28f5_c28f_5c28_f5c3) >> 66) as u64
}

/// The number of decimal digits of `v`: the bit length gives the power of
/// ten within one, one comparison settles it.
#[cfg(feature = "host")]
#[inline(always)]
fn dec_len(v: u64) -> usize {
    const POW10: [u64; 20] = {
        let mut p = [1u64; 20];
        let mut i = 1;
        while i < 20 {
            p[i] = p[i - 1] * 10;
            i += 1;
        }
        p
    };
    let t = (((64 - (v | 1).leading_zeros()) * 1233) >> 12) as usize;
    t + 1 - usize::from((v | 1) < POW10.get(t).copied().unwrap_or(0))
}

/// `K` bytes of `s` at `at` (zeros when out of range: never for callers).
#[inline(always)]
fn load<const K: usize>(s: &[u8], at: usize) -> [u8; K] {
    s.get(at..at + K).and_then(|x| <[u8; K]>::try_from(x).ok()).unwrap_or([0; K])
}

/// Put `v` into `d` at `at` (nothing when out of range: never for callers).
#[inline(always)]
fn store<const K: usize>(d: &mut [u8], at: usize, v: [u8; K]) {
    if let Some(x) = d.get_mut(at..at + K).and_then(|x| <&mut [u8; K]>::try_from(x).ok()) {
        *x = v;
    }
}

/// `d.copy_from_slice(s)` with the short pieces lines are made of copied
/// in place: two overlapping fixed-size moves instead of a call to memcpy,
/// which costs more than such a copy.
#[inline(always)]
fn copy_short(d: &mut [u8], s: &[u8]) {
    let n = s.len();
    match n {
        0 => {}
        1..=3 => {
            // First, middle and last byte cover all of 1 to 3.
            store::<1>(d, 0, load::<1>(s, 0));
            store::<1>(d, n / 2, load::<1>(s, n / 2));
            store::<1>(d, n - 1, load::<1>(s, n - 1));
        }
        4..=7 => {
            store::<4>(d, 0, load::<4>(s, 0));
            store::<4>(d, n - 4, load::<4>(s, n - 4));
        }
        8..=16 => {
            store::<8>(d, 0, load::<8>(s, 0));
            store::<8>(d, n - 8, load::<8>(s, n - 8));
        }
        _ => d.copy_from_slice(s),
    }
}

/// A fixed-size stack buffer of UTF-8 text. What does not fit is dropped
/// (never a panic); callers size it for what they put in.
#[derive(Clone, Copy)]
pub(crate) struct StackBuf<const N: usize> {
    b: [u8; N],
    len: usize,
}

impl<const N: usize> core::fmt::Debug for StackBuf<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl<const N: usize> StackBuf<N> {
    #[inline(always)]
    pub(crate) fn new() -> Self {
        StackBuf { b: [0; N], len: 0 }
    }

    #[inline(always)]
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }

    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Room left.
    #[inline(always)]
    pub(crate) fn room(&self) -> usize {
        N - self.len
    }

    /// One ASCII byte (anything else becomes '?').
    #[inline(always)]
    pub(crate) fn push(&mut self, c: u8) {
        if let Some(slot) = self.b.get_mut(self.len) {
            *slot = ascii(c);
            self.len += 1;
        }
    }

    /// `n` copies of the ASCII byte `c` (a few: padding).
    #[inline(always)]
    pub(crate) fn fill(&mut self, c: u8, n: usize) {
        for _ in 0..n.min(self.room()) {
            self.push(c);
        }
    }

    /// The hex digits of `v` (lowercase unless `upper`), as
    /// [`Digits::new`] writes them, straight into the buffer (dropped
    /// whole when they do not fit): all sixteen made at once
    /// ([`hex16`]) and written over the room, the first `n` kept.
    #[cfg(feature = "host")]
    #[inline(always)]
    pub(crate) fn push_hex(&mut self, v: u64, upper: bool) {
        let n = (64 - (v | 1).leading_zeros()).div_ceil(4) as usize;
        if n <= 8 {
            if let Some(s) = self.b.get_mut(self.len..self.len + 8) {
                // Hex digits are ASCII; the bytes after the first n are
                // not part of the text.
                s.copy_from_slice(&hex8((v as u32) << (32 - 4 * n), upper).to_be_bytes());
                self.len += n;
                return;
            }
        } else if let Some(s) = self.b.get_mut(self.len..self.len + 16) {
            let v = v << (64 - 4 * n);
            let d = u128::from(hex8((v >> 32) as u32, upper)) << 64 | u128::from(hex8(v as u32, upper));
            s.copy_from_slice(&d.to_be_bytes());
            self.len += n;
            return;
        }
        // Near the end of the buffer.
        let v = v << (64 - 4 * n);
        let d = (u128::from(hex8((v >> 32) as u32, upper)) << 64 | u128::from(hex8(v as u32, upper))).to_be_bytes();
        if let (Some(s), Some(d)) = (self.b.get_mut(self.len..self.len + n), d.get(..n)) {
            s.copy_from_slice(d);
            self.len += n;
        }
    }

    /// `-` when `neg`, then the decimal digits of `v`, as
    /// [`Digits::new`] writes them, straight into the buffer (dropped whole
    /// when they do not fit); two digits a step, with the division by 100
    /// done as a multiplication (the size-tuned build keeps a `div`, tens
    /// of cycles each).
    #[cfg(feature = "host")]
    #[inline(always)]
    pub(crate) fn push_dec(&mut self, neg: bool, mut v: u64) {
        let n = dec_len(v) + usize::from(neg);
        let Some(s) = self.b.get_mut(self.len..self.len + n) else { return };
        let mut i = n;
        while v >= 100 {
            let q = div100(v);
            let d = (v - q * 100) as usize * 2;
            i -= 2;
            if let (Some(o), Some(p)) = (s.get_mut(i..i + 2), PAIRS.get(d..d + 2)) {
                o.copy_from_slice(p);
            }
            v = q;
        }
        if v >= 10 {
            let d = v as usize * 2;
            i -= 2;
            if let (Some(o), Some(p)) = (s.get_mut(i..i + 2), PAIRS.get(d..d + 2)) {
                o.copy_from_slice(p);
            }
        } else if let Some(o) = s.get_mut(i.wrapping_sub(1)) {
            *o = b'0' + v as u8;
        }
        if neg {
            if let Some(o) = s.first_mut() {
                *o = b'-';
            }
        }
        // Digits, '-' and PAIRS are ASCII.
        self.len += n;
    }

    /// Two decimal digits of `v` (below 100).
    #[inline(always)]
    pub(crate) fn push_pair(&mut self, v: u32) {
        let d = (v as usize % 100) * 2;
        if let (Some(s), Some(t)) = (self.b.get_mut(self.len..self.len + 2), PAIRS.get(d..d + 2)) {
            // PAIRS is ASCII.
            s.copy_from_slice(t);
            self.len += 2;
        }
    }

    /// Whole pieces only, so the buffer stays valid.
    #[inline(always)]
    fn push_bytes(&mut self, s: &[u8]) {
        if let Some(d) = self.b.get_mut(self.len..self.len + s.len()) {
            copy_short(d, s);
            self.len += s.len();
        }
    }

    pub(crate) fn push_str(&mut self, s: &str) {
        self.push_bytes(s.as_bytes());
    }

    /// [`push_str`](Self::push_str) in place, for the hot paths.
    #[inline(always)]
    fn push_str_here(&mut self, s: &str) {
        self.push_bytes(s.as_bytes());
    }

    #[inline(always)]
    pub(crate) fn push_digits(&mut self, d: &Digits) {
        self.push_str(d.as_str());
    }

    /// The text of another buffer. A small one is copied whole (a copy of
    /// a known size, no call), then only its text counts.
    #[inline(always)]
    pub(crate) fn push_buf<const M: usize>(&mut self, o: &StackBuf<M>) {
        match self.b.get_mut(self.len..self.len + M).and_then(|d| <&mut [u8; M]>::try_from(d).ok()) {
            Some(d) if M <= 32 => {
                *d = o.b;
                self.len += o.len;
            }
            _ => self.push_str(o.as_str()),
        }
    }

    /// `v` right-aligned in `width`, padded with `pad`.
    pub(crate) fn push_padded(&mut self, v: u64, width: usize, pad: u8) {
        let d = Digits::new(v, 10, false);
        self.fill(pad, width.saturating_sub(d.len()));
        self.push_digits(&d);
    }

    /// Signed decimal.
    pub(crate) fn push_int(&mut self, v: i64) {
        if v < 0 {
            self.push(b'-');
        }
        self.push_padded(v.unsigned_abs(), 0, b' ');
    }

    #[inline(always)]
    pub(crate) fn bytes(&self) -> &[u8] {
        self.b.get(..self.len).unwrap_or(&[])
    }

    #[inline(always)]
    pub(crate) fn as_str(&self) -> &str {
        text(self.bytes())
    }
}

/// Room for one line being assembled (longer lines go out in pieces).
pub(crate) const LINE: usize = 256;

/// A line being assembled in a buffer and written out in one piece: what
/// is added goes into `buf` while it fits, and `buf` goes to `out` when it
/// is full or [`flush`](Self::flush)ed. Pieces pushed directly (literal
/// text, plain numbers) cost a copy, not a call through the writer.
pub(crate) struct Stage<'a> {
    buf: &'a mut StackBuf<LINE>,
    out: &'a mut dyn core::fmt::Write,
    /// The last byte written out (0: none yet).
    sent: u8,
    /// Something was written out: `buf` no longer holds all of the text.
    spilled: bool,
}

impl<'a> Stage<'a> {
    /// A line continuing what `buf` holds.
    pub(crate) fn new(buf: &'a mut StackBuf<LINE>, out: &'a mut dyn core::fmt::Write) -> Self {
        Stage { buf, out, sent: 0, spilled: false }
    }

    /// Whether everything added since [`new`](Self::new) is still in the
    /// buffer.
    pub(crate) fn whole(&self) -> bool {
        !self.spilled
    }

    /// The buffer (for a caller that keeps a piece of it).
    pub(crate) fn buf(&self) -> &StackBuf<LINE> {
        self.buf
    }

    /// The last byte of the line so far (0 when there is none).
    pub(crate) fn last_byte(&self) -> u8 {
        self.buf.bytes().last().copied().unwrap_or(self.sent)
    }

    #[inline(always)]
    pub(crate) fn push(&mut self, s: &str) -> core::fmt::Result {
        if s.len() <= self.buf.room() {
            self.buf.push_str_here(s);
            return Ok(());
        }
        self.spill(s)
    }

    /// `pre` (a literal) and [`StackBuf::push_hex`] on the line, spilling
    /// when it is full.
    #[cfg(feature = "host")]
    #[inline(always)]
    pub(crate) fn push_hex(&mut self, pre: &StackBuf<8>, v: u64, upper: bool) -> core::fmt::Result {
        if self.buf.room() >= 8 + 16 {
            self.buf.push_buf(pre);
            self.buf.push_hex(v, upper);
            return Ok(());
        }
        self.push_buf(pre)?;
        self.spill(Digits::new(v, 16, upper).as_str())
    }

    /// `pre` (a literal) and [`StackBuf::push_dec`] on the line, spilling
    /// when it is full.
    #[cfg(feature = "host")]
    #[inline(always)]
    pub(crate) fn push_dec(&mut self, pre: &StackBuf<8>, neg: bool, v: u64) -> core::fmt::Result {
        if self.buf.room() >= 8 + 21 {
            self.buf.push_buf(pre);
            self.buf.push_dec(neg, v);
            return Ok(());
        }
        self.push_buf(pre)?;
        let mut d = Digits::new(v, 10, false);
        if neg {
            d.prepend(b'-');
        }
        self.spill(d.as_str())
    }

    /// The text of a small buffer (a fixed-size copy when there is room).
    #[inline(always)]
    pub(crate) fn push_buf<const M: usize>(&mut self, b: &StackBuf<M>) -> core::fmt::Result {
        if M <= self.buf.room() {
            self.buf.push_buf(b);
            return Ok(());
        }
        self.spill(b.as_str())
    }

    fn spill(&mut self, s: &str) -> core::fmt::Result {
        self.flush()?;
        if s.len() <= self.buf.room() {
            self.buf.push_str(s);
            return Ok(());
        }
        self.sent = s.as_bytes().last().copied().unwrap_or(self.sent);
        self.spilled = true;
        self.out.write_str(s)
    }

    /// Write out what is buffered.
    pub(crate) fn flush(&mut self) -> core::fmt::Result {
        self.spilled = true;
        self.sent = self.buf.bytes().last().copied().unwrap_or(self.sent);
        self.out.write_str(self.buf.as_str())?;
        self.buf.clear();
        Ok(())
    }
}

impl core::fmt::Write for Stage<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.push(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: u64, base: u8, upper: bool) -> alloc::string::String {
        alloc::string::String::from(Digits::new(v, base, upper).as_str())
    }

    #[test]
    fn all_bases() {
        for v in [
            0u64,
            1,
            7,
            8,
            9,
            10,
            15,
            16,
            99,
            100,
            101,
            255,
            256,
            999,
            1000,
            0xfff,
            0x1000,
            12345,
            u32::MAX as u64,
            u64::MAX,
            1 << 63,
        ] {
            assert_eq!(s(v, 10, false), alloc::format!("{v}"));
            assert_eq!(s(v, 16, false), alloc::format!("{v:x}"));
            assert_eq!(s(v, 16, true), alloc::format!("{v:X}"));
            assert_eq!(s(v, 8, false), alloc::format!("{v:o}"));
        }
    }

    #[cfg(feature = "host")]
    #[test]
    fn host_digits_as_digits_new() {
        let mut vals = alloc::vec::Vec::new();
        let mut p = 1u64;
        for _ in 0..20 {
            vals.extend([p.wrapping_sub(1), p, p.wrapping_add(1)]);
            p = p.wrapping_mul(10);
        }
        for s in 0..64 {
            vals.extend([1u64 << s, (1u64 << s) - 1, (1u64 << s) + 1]);
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            vals.push(x >> (x % 64));
        }
        vals.push(u64::MAX);
        for v in vals {
            assert_eq!(div100(v), v / 100);
            assert_eq!(dec_len(v), alloc::format!("{v}").len(), "{v}");
            for neg in [false, true] {
                let mut b = StackBuf::<64>::new();
                b.push_str("<");
                b.push_dec(neg, v);
                b.push_hex(v, false);
                b.push_hex(v, true);
                b.push_str(">");
                let sign = if neg { "-" } else { "" };
                assert_eq!(b.as_str(), alloc::format!("<{sign}{v}{v:x}{v:X}>"));
            }
            // Near the end of the buffer: only what fits, whole.
            let mut b = StackBuf::<8>::new();
            b.push_hex(v, false);
            let h = alloc::format!("{v:x}");
            assert_eq!(b.as_str(), if h.len() <= 8 { h.as_str() } else { "" });
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

    #[test]
    fn pieces_of_every_length() {
        let text = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ";
        for n in 0..text.len() {
            let mut b = StackBuf::<64>::new();
            b.push_str("<");
            b.push_str(&text[..n]);
            b.push_str(">");
            assert_eq!(b.as_str(), alloc::format!("<{}>", &text[..n]));
        }
    }

    #[test]
    fn stage_spills_whole_pieces_in_order() {
        let mut out = alloc::string::String::new();
        let mut buf = StackBuf::<LINE>::new();
        let mut st = Stage::new(&mut buf, &mut out);
        let long = "x".repeat(LINE + 10);
        for piece in ["a", &"b".repeat(LINE - 2), "cd", &long] {
            st.push(piece).unwrap();
        }
        // The long piece went straight out: the last byte is known anyway.
        assert_eq!(st.last_byte(), b'x');
        st.push("e").unwrap();
        assert_eq!(st.last_byte(), b'e');
        st.flush().unwrap();
        assert_eq!(st.last_byte(), b'e');
        assert_eq!(out, alloc::format!("a{}cd{long}e", "b".repeat(LINE - 2)));
    }

    #[test]
    fn only_ascii_gets_in() {
        let mut b = StackBuf::<8>::new();
        b.push(0xc3);
        b.fill(0xa9, 2);
        b.push_str("é");
        let mut d = Digits::new(5, 10, false);
        d.prepend(0xff);
        b.push_digits(&d);
        assert_eq!(b.as_str(), "???é?5");
        let mut c = StackBuf::<4>::new();
        c.push_str("ab");
        let mut e = StackBuf::<16>::new();
        e.push_str("x");
        e.push_buf(&c);
        e.push_buf(&b);
        assert_eq!(e.as_str(), "xab???é?5");
    }
}
