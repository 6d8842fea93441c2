//! JSON writing, sans-IO: the one home of escaping, numbers, objects and
//! arrays for every `--json` of trbox. `render::json` writes an event with
//! them (`tr-cat --json`), `lat` its tables and samples (`tr-lat --json`),
//! the applets a console dump's lines; the counts of [`Problems`] are
//! written here too, so that each of those says what it read past in the
//! same words.
//!
//! Output is one object per line (JSON Lines): numbers stay numbers, and
//! text is escaped as RFC 8259 asks (`"`, `\`, and the control characters
//! below 0x20), everything else, non-ASCII included, written as it is.

use core::fmt::{self, Write};

use crate::problems::Problems;

/// `s` as a JSON string literal, quotes included.
pub(crate) fn string(w: &mut dyn Write, s: &str) -> fmt::Result {
    w.write_str("\"")?;
    text(w, s)?;
    w.write_str("\"")
}

/// The inside of a JSON string: runs that need no escape are written
/// whole (a line holds a few dozen characters; one write each was most of
/// `--json`'s time).
pub(crate) fn text(w: &mut dyn Write, s: &str) -> fmt::Result {
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
pub(crate) fn uint(w: &mut dyn Write, v: u64) -> fmt::Result {
    w.write_str(crate::printfmt::digits::Digits::new(v, 10, false).as_str())
}

/// A signed JSON number.
pub(crate) fn int(w: &mut dyn Write, v: i64) -> fmt::Result {
    if v < 0 {
        w.write_str("-")?;
    }
    uint(w, v.unsigned_abs())
}

/// `[1,2,3]`.
pub(crate) fn uint_array(w: &mut dyn Write, values: impl IntoIterator<Item = u64>) -> fmt::Result {
    w.write_str("[")?;
    for (i, v) in values.into_iter().enumerate() {
        if i > 0 {
            w.write_str(",")?;
        }
        uint(w, v)?;
    }
    w.write_str("]")
}

/// The members `"bad_format":2,"cut_off":1`: a member per kind of
/// problem met, its name and count, in
/// [`crate::problems::ProblemKind::ALL`]'s order; nothing when there were
/// none. The caller writes the braces (and a comma before, when other
/// members come first).
pub(crate) fn problem_counts(w: &mut dyn Write, p: &Problems) -> fmt::Result {
    for (i, (kind, n)) in p.counts().enumerate() {
        w.write_str(if i > 0 { ",\"" } else { "\"" })?;
        w.write_str(kind.name())?;
        w.write_str("\":")?;
        uint(w, n)?;
    }
    Ok(())
}

/// What a reading read past as one line, the same in every `--json`
/// (tr-cat's, tr-lat's): `{"problems":{"cut_off":1}}` and a newline;
/// nothing when there was none.
pub(crate) fn problems_line(w: &mut dyn Write, p: &Problems) -> fmt::Result {
    if p.is_empty() {
        return Ok(());
    }
    w.write_str("{\"problems\":{")?;
    problem_counts(w, p)?;
    w.write_str("}}\n")
}

/// An object written member by member, in the order given: `{` when
/// begun, `,` between members, `}` at [`Object::end`].
pub(crate) struct Object<'w> {
    w: &'w mut dyn Write,
    first: bool,
}

impl<'w> Object<'w> {
    /// Writes the `{`.
    pub(crate) fn begin(w: &'w mut dyn Write) -> Result<Self, fmt::Error> {
        w.write_str("{")?;
        Ok(Object { w, first: true })
    }

    /// Writes the member's name (`"k":`, after a `,` but for the first);
    /// the value is the caller's to write on what is returned.
    pub(crate) fn key(&mut self, k: &str) -> Result<&mut dyn Write, fmt::Error> {
        self.w.write_str(if self.first { "\"" } else { ",\"" })?;
        self.first = false;
        text(self.w, k)?;
        self.w.write_str("\":")?;
        Ok(&mut *self.w)
    }

    /// A member whose value is a string.
    pub(crate) fn string(&mut self, k: &str, v: &str) -> fmt::Result {
        string(self.key(k)?, v)
    }

    /// A member whose value is an unsigned number.
    pub(crate) fn uint(&mut self, k: &str, v: u64) -> fmt::Result {
        uint(self.key(k)?, v)
    }

    /// A member whose value is a signed number.
    pub(crate) fn int(&mut self, k: &str, v: i64) -> fmt::Result {
        int(self.key(k)?, v)
    }

    /// Writes the `}`.
    pub(crate) fn end(self) -> fmt::Result {
        self.w.write_str("}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problems::ProblemKind;
    use alloc::string::String;

    #[test]
    fn strings_escape_quotes_backslashes_and_controls() {
        let mut s = String::new();
        string(&mut s, "a\"b\\c\nd\te\u{1}\u{1f}f\u{7f}é€😀").unwrap();
        assert_eq!(s, "\"a\\\"b\\\\c\\nd\\te\\u0001\\u001ff\u{7f}é€😀\"");
        for (t, want) in [("", "\"\""), ("\"", "\"\\\"\""), ("plain", "\"plain\""), ("\n\n", "\"\\n\\n\"")] {
            let mut s = String::new();
            string(&mut s, t).unwrap();
            assert_eq!(s, want, "{t:?}");
        }
    }

    #[test]
    fn objects_separate_members_and_nest() {
        let mut s = String::new();
        let mut o = Object::begin(&mut s).unwrap();
        o.string("a\"", "x").unwrap();
        o.int("n", -3).unwrap();
        let mut inner = Object::begin(o.key("in").unwrap()).unwrap();
        inner.uint("u", u64::MAX).unwrap();
        inner.end().unwrap();
        uint_array(o.key("l").unwrap(), [1, 0, 2]).unwrap();
        uint_array(o.key("e").unwrap(), []).unwrap();
        o.end().unwrap();
        assert_eq!(s, r#"{"a\"":"x","n":-3,"in":{"u":18446744073709551615},"l":[1,0,2],"e":[]}"#);
        let mut s = String::new();
        Object::begin(&mut s).unwrap().end().unwrap();
        assert_eq!(s, "{}");
    }

    #[test]
    fn problem_counts_are_members_in_the_kinds_order() {
        let mut p = Problems::new();
        p.add(ProblemKind::CutOff, "the stream ends inside a frame");
        p.add_counted(ProblemKind::BadFormat, 2, "2 formats do not parse");
        let mut s = String::new();
        problem_counts(&mut s, &p).unwrap();
        assert_eq!(s, r#""bad_format":2,"cut_off":1"#);
        let mut s = String::new();
        problem_counts(&mut s, &Problems::new()).unwrap();
        assert_eq!(s, "");
    }
}
