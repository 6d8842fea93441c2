//! Tokens of the C expressions in a `print fmt:` line.

use alloc::vec::Vec;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tok<'a> {
    /// Integer literal: value, has a `u` suffix, number of `l`s, written
    /// in hex/octal (which lets it take an unsigned type).
    Num {
        v: u64,
        unsigned: bool,
        longs: u8,
        radix: bool,
    },
    /// The raw text between double quotes (escapes not yet decoded).
    Str(&'a str),
    /// A character literal's value.
    Char(u64),
    Ident(&'a str),
    Punct(&'static str),
}

const PUNCTS: [&str; 32] = [
    "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "(", ")", "{", "}", "[", "]", ",", ";", "?", ":", "+", "-",
    "*", "/", "%", "&", "|", "^", "~", "!", "<", ">", "=",
];

/// Decode one escape sequence after a backslash; returns the byte and how
/// many input bytes it used.
pub(crate) fn escape(s: &[u8]) -> (u8, usize) {
    match s.first() {
        Some(b'n') => (b'\n', 1),
        Some(b't') => (b'\t', 1),
        Some(b'r') => (b'\r', 1),
        Some(b'a') => (7, 1),
        Some(b'b') => (8, 1),
        Some(b'f') => (12, 1),
        Some(b'v') => (11, 1),
        Some(b'e') => (27, 1),
        Some(b'x') => {
            let mut v = 0u32;
            let mut n = 1;
            while let Some(d) = s.get(n).and_then(|c| (*c as char).to_digit(16)) {
                v = (v << 4 | d) & 0xff;
                n += 1;
            }
            (v as u8, n)
        }
        Some(c) if (b'0'..=b'7').contains(c) => {
            let mut v = 0u32;
            let mut n = 0;
            while n < 3 {
                match s.get(n) {
                    Some(c) if (b'0'..=b'7').contains(c) => v = v * 8 + u32::from(c - b'0'),
                    _ => break,
                }
                n += 1;
            }
            (v as u8, n)
        }
        Some(&c) => (c, 1),
        None => (b'\\', 0),
    }
}

/// Split `src` into tokens; `None` on anything unexpected.
pub(crate) fn lex(src: &str) -> Option<Vec<Tok<'_>>> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'"' {
            let start = i + 1;
            let mut j = start;
            loop {
                match b.get(j)? {
                    b'\\' => j += 2,
                    b'"' => break,
                    _ => j += 1,
                }
            }
            out.push(Tok::Str(src.get(start..j)?));
            i = j + 1;
            continue;
        }
        if c == b'\'' {
            let (v, n) = match b.get(i + 1)? {
                b'\\' => {
                    let (v, n) = escape(b.get(i + 2..)?);
                    (v, n + 1)
                }
                &v => (v, 1),
            };
            if b.get(i + 1 + n) != Some(&b'\'') {
                return None;
            }
            // A plain `char` is signed on the kernels we care about.
            out.push(Tok::Char(v as i8 as i64 as u64));
            i += n + 2;
            continue;
        }
        if c.is_ascii_digit() {
            let mut j = i;
            let (radix, start) = if c == b'0' && matches!(b.get(i + 1), Some(b'x' | b'X')) {
                (16, i + 2)
            } else if c == b'0' {
                (8, i)
            } else {
                (10, i)
            };
            j = j.max(start);
            while j < b.len() && (b[j] as char).is_digit(radix) {
                j += 1;
            }
            let digits = &src[start..j];
            let v = if digits.is_empty() { 0 } else { u64::from_str_radix(digits, radix).ok()? };
            let (mut unsigned, mut longs) = (false, 0u8);
            while let Some(&s) = b.get(j) {
                match s {
                    b'u' | b'U' => unsigned = true,
                    b'l' | b'L' => longs = longs.saturating_add(1),
                    _ => break,
                }
                j += 1;
            }
            if b.get(j).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'.') {
                return None;
            }
            out.push(Tok::Num { v, unsigned, longs: longs.min(2), radix: radix != 10 });
            i = j;
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let mut j = i;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            out.push(Tok::Ident(&src[i..j]));
            i = j;
            continue;
        }
        let p = PUNCTS.iter().find(|p| b[i..].starts_with(p.as_bytes()))?;
        out.push(Tok::Punct(p));
        i += p.len();
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fuzz crash (printfmt target): a number with hundreds of `L`
    /// suffixes overflowed the u8 count.
    #[test]
    fn many_suffixes_do_not_overflow() {
        let src = alloc::format!("1*1;1{}", "L".repeat(300));
        let toks = lex(&src);
        assert!(matches!(toks.as_deref().and_then(|t| t.last()), Some(Tok::Num { longs: 2, .. }) | None));
    }
}
