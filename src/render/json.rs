//! The JSON writers: one event as a JSON object on one line (`--json`).

use core::fmt::{self, Write};

use super::cmdlines::Cmdlines;
use crate::abi::Endian;
use crate::format::EventFormat;

/// Write `s` as a JSON string literal.
pub fn json_str(w: &mut dyn Write, s: &str) -> fmt::Result {
    w.write_str("\"")?;
    json_text(w, s)?;
    w.write_str("\"")
}

/// The inside of a JSON string: runs that need no escape are written
/// whole (a line holds a few dozen characters; one write each was most of
/// `--json`'s time).
fn json_text(w: &mut dyn Write, s: &str) -> fmt::Result {
    let mut from = 0;
    for (i, b) in s.bytes().enumerate() {
        if b >= 0x20 && b != b'"' && b != b'\\' {
            continue;
        }
        // An ASCII byte: `i` and `i + 1` are character boundaries.
        w.write_str(s.get(from..i).unwrap_or(""))?;
        from = i + 1;
        match b {
            b'"' => w.write_str("\\\"")?,
            b'\\' => w.write_str("\\\\")?,
            b'\n' => w.write_str("\\n")?,
            b'\t' => w.write_str("\\t")?,
            _ => write!(w, "\\u{:04x}", b)?,
        }
    }
    w.write_str(s.get(from..).unwrap_or(""))
}

/// A JSON number: the digits by hand (core's integer `Display` goes
/// through its padding code for every field).
fn json_uint(w: &mut dyn Write, v: u64) -> fmt::Result {
    w.write_str(crate::printfmt::digits::Digits::new(v, 10, false).as_str())
}

fn json_int(w: &mut dyn Write, v: i64) -> fmt::Result {
    if v < 0 {
        w.write_str("-")?;
    }
    json_uint(w, v.unsigned_abs())
}

/// One event as a JSON object on one line: `{"ts_ns":…,"cpu":…,"pid":…,
/// "comm":"…","event":"sys:name","fields":{…}}`. Integers stay numbers,
/// char arrays and `__data_loc char[]` become strings, other arrays lists.
/// `buffer`: the name of the buffer it comes from (`""` for the top one),
/// given when the input holds several; it follows `cpu`. `pid`: its
/// `common_pid`.
#[allow(clippy::too_many_arguments)]
pub fn write_json(
    w: &mut dyn Write,
    ev: &EventFormat,
    cmdlines: &Cmdlines,
    e: Endian,
    cpu: u32,
    buffer: Option<&str>,
    ts: u64,
    pid: i32,
    payload: &[u8],
) -> fmt::Result {
    use crate::format::FieldKind;
    w.write_str("{\"ts_ns\":")?;
    json_uint(w, ts)?;
    w.write_str(",\"cpu\":")?;
    json_uint(w, u64::from(cpu))?;
    // Literal pieces joined: each write is a call.
    if let Some(b) = buffer {
        w.write_str(",\"buffer\":")?;
        json_str(w, b)?;
    }
    w.write_str(",\"pid\":")?;
    json_int(w, i64::from(pid))?;
    w.write_str(",\"comm\":")?;
    json_str(w, cmdlines.comm(pid))?;
    w.write_str(",\"event\":\"")?;
    json_text(w, &ev.system)?;
    w.write_str(":")?;
    json_text(w, &ev.name)?;
    w.write_str("\",\"fields\":{")?;
    for (i, f) in ev.fields.iter().enumerate() {
        w.write_str(if i > 0 { ",\"" } else { "\"" })?;
        json_text(w, &f.name)?;
        w.write_str("\":")?;
        match (f.kind, f.bytes(payload, e)) {
            (_, None) => w.write_str("null")?,
            (FieldKind::Scalar, Some(_)) => match f.int(payload, e) {
                Some(v) if f.signed => json_int(w, v)?,
                Some(v) => json_uint(w, v as u64 & mask(f.size))?,
                None => w.write_str("null")?,
            },
            (FieldKind::Array { .. } | FieldKind::DataLoc { .. } | FieldKind::RelLoc { .. }, Some(b))
                if f.type_name.contains("char") =>
            {
                let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
                json_str(w, &alloc::string::String::from_utf8_lossy(b.get(..end).unwrap_or(b)))?;
            }
            (k, Some(b)) => {
                let es = match k {
                    FieldKind::Array { elem_size, .. }
                    | FieldKind::DataLoc { elem_size }
                    | FieldKind::RelLoc { elem_size } => elem_size as usize,
                    FieldKind::Scalar => 1,
                };
                let es = if matches!(es, 1 | 2 | 4 | 8) { es } else { 1 };
                w.write_str("[")?;
                for (j, c) in b.chunks_exact(es).enumerate() {
                    if j > 0 {
                        w.write_str(",")?;
                    }
                    json_uint(w, e.uint(c, 0, es).unwrap_or(0))?;
                }
                w.write_str("]")?;
            }
        }
    }
    w.write_str("}}\n")
}

fn mask(size: u32) -> u64 {
    if size >= 8 {
        u64::MAX
    } else {
        (1u64 << (size * 8)) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;

    #[test]
    fn json_strings_escape_quotes_backslashes_and_controls() {
        let mut s = String::new();
        json_str(&mut s, "a\"b\\c\nd\te\u{1}\u{1f}f\u{7f}é€😀").unwrap();
        assert_eq!(s, "\"a\\\"b\\\\c\\nd\\te\\u0001\\u001ff\u{7f}é€😀\"");
        for (t, want) in [("", "\"\""), ("\"", "\"\\\"\""), ("plain", "\"plain\""), ("\n\n", "\"\\n\\n\"")] {
            let mut s = String::new();
            json_str(&mut s, t).unwrap();
            assert_eq!(s, want, "{t:?}");
        }
    }
}
