//! A JSON syntax check for the tests of `--json` (RFC 8259: one value,
//! nothing after it), so that a test can say "every line is JSON" without
//! a parser crate.

/// Whether `text` is one JSON value.
pub fn is_json(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    value(b, &mut i, 0) && {
        ws(b, &mut i);
        i == b.len()
    }
}

fn ws(b: &[u8], i: &mut usize) {
    while b.get(*i).is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r')) {
        *i += 1;
    }
}

fn eat(b: &[u8], i: &mut usize, c: u8) -> bool {
    ws(b, i);
    let ok = b.get(*i) == Some(&c);
    *i += usize::from(ok);
    ok
}

fn value(b: &[u8], i: &mut usize, depth: u32) -> bool {
    ws(b, i);
    if depth > 512 {
        return false;
    }
    match b.get(*i) {
        Some(b'{') => {
            *i += 1;
            if eat(b, i, b'}') {
                return true;
            }
            loop {
                ws(b, i);
                if !(string(b, i) && eat(b, i, b':') && value(b, i, depth + 1)) {
                    return false;
                }
                if eat(b, i, b'}') {
                    return true;
                }
                if !eat(b, i, b',') {
                    return false;
                }
            }
        }
        Some(b'[') => {
            *i += 1;
            if eat(b, i, b']') {
                return true;
            }
            loop {
                if !value(b, i, depth + 1) {
                    return false;
                }
                if eat(b, i, b']') {
                    return true;
                }
                if !eat(b, i, b',') {
                    return false;
                }
            }
        }
        Some(b'"') => string(b, i),
        Some(b't') => word(b, i, "true"),
        Some(b'f') => word(b, i, "false"),
        Some(b'n') => word(b, i, "null"),
        Some(_) => number(b, i),
        None => false,
    }
}

fn word(b: &[u8], i: &mut usize, w: &str) -> bool {
    let ok = b.get(*i..*i + w.len()) == Some(w.as_bytes());
    *i += if ok { w.len() } else { 0 };
    ok
}

fn string(b: &[u8], i: &mut usize) -> bool {
    if b.get(*i) != Some(&b'"') {
        return false;
    }
    *i += 1;
    while let Some(&c) = b.get(*i) {
        *i += 1;
        match c {
            b'"' => return true,
            b'\\' => match b.get(*i) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => *i += 1,
                Some(b'u') if b.get(*i + 1..*i + 5).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) => *i += 5,
                _ => return false,
            },
            // Control characters must be escaped.
            0..=0x1f => return false,
            _ => {}
        }
    }
    false
}

fn number(b: &[u8], i: &mut usize) -> bool {
    let start = *i;
    let digits = |i: &mut usize| {
        let s = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > s
    };
    if b.get(*i) == Some(&b'-') {
        *i += 1;
    }
    if b.get(*i) == Some(&b'0') {
        *i += 1;
    } else if !digits(i) {
        return false;
    }
    if b.get(*i) == Some(&b'.') {
        *i += 1;
        if !digits(i) {
            return false;
        }
    }
    if matches!(b.get(*i), Some(b'e' | b'E')) {
        *i += 1;
        if matches!(b.get(*i), Some(b'+' | b'-')) {
            *i += 1;
        }
        if !digits(i) {
            return false;
        }
    }
    *i > start
}
