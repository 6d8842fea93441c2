//! `events/header_page`, `events/header_event` and `events/SYS/EVENT/format`
//! parsing into an event table keyed by ID.
//!
//! Parsers never panic: every malformed input is a typed [`FormatError`].

use alloc::string::String;
use alloc::vec::Vec;

use crate::abi::Endian;

/// How a field's bytes are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldKind {
    /// A plain integer (or pointer) of `size` bytes.
    Scalar,
    /// A fixed array: `count` elements of `elem_size` bytes (`char comm[16]`).
    Array {
        /// Bytes per element.
        elem_size: u32,
        /// Elements (the `[N]`; 0 for a trailing `buf[]` that runs to the
        /// record's end).
        count: u32,
    },
    /// `__data_loc`: a u32 `(len << 16) | offset`, offset from record start.
    DataLoc {
        /// Bytes per element of the array it points at.
        elem_size: u32,
    },
    /// `__rel_loc`: like DataLoc, offset from the end of this field.
    RelLoc {
        /// Bytes per element of the array it points at.
        elem_size: u32,
    },
}

/// One `field:` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The field's name (`common_pid`, `prev_comm`).
    pub name: String,
    /// The C type as written, without the name and brackets
    /// (`unsigned long`, `char`, `__data_loc char`, `const char *`).
    pub(crate) type_name: String,
    /// Bytes from the start of the record's payload.
    pub(crate) offset: u32,
    /// Bytes the field takes in the record (the whole array for one).
    pub(crate) size: u32,
    /// `signed:1`: read the bytes as a signed integer.
    pub(crate) signed: bool,
    /// Scalar, array, or a pointer to variable-length data.
    pub(crate) kind: FieldKind,
}

/// One event's format file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    /// `ID:`, the number each record carries in `common_type`.
    pub id: u32,
    /// The event's system (its directory under `events/`).
    pub(crate) system: String,
    /// `name:`.
    pub(crate) name: String,
    /// `common_*` fields (the part before the blank line).
    pub(crate) common: Vec<Field>,
    /// The event's own fields.
    pub(crate) fields: Vec<Field>,
    /// The text after `print fmt: `, unparsed.
    pub(crate) print_fmt: String,
}

/// Where a field is in a record and how it reads: what every reader of a
/// field needs (the format's [`Field`] without its names). The one field
/// locator of the decoder: the print-fmt programs, the graph records and
/// the renderers all read fields through it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FieldLoc {
    pub(crate) offset: u32,
    pub(crate) size: u32,
    pub(crate) signed: bool,
    pub(crate) kind: FieldKind,
}

impl FieldLoc {
    /// The field's bytes inside record `rec` (the payload that starts with
    /// `common_type`): fixed fields and arrays in place, `__data_loc` /
    /// `__rel_loc` through their locator word. `None` when out of bounds.
    #[inline]
    pub(crate) fn bytes<'a>(&self, rec: &'a [u8], e: Endian) -> Option<&'a [u8]> {
        let off = self.offset as usize;
        match self.kind {
            FieldKind::Scalar | FieldKind::Array { .. } => rec.get(off..off.checked_add(self.size as usize)?),
            FieldKind::DataLoc { .. } | FieldKind::RelLoc { .. } => {
                let w = e.u32(rec, off)?;
                let (len, mut start) = ((w >> 16) as usize, (w & 0xffff) as usize);
                if let FieldKind::RelLoc { .. } = self.kind {
                    start = start.checked_add(off + self.size as usize)?;
                }
                rec.get(start..start.checked_add(len)?)
            }
        }
    }

    /// A scalar field's value, zero-extended.
    #[inline]
    pub(crate) fn uint(&self, rec: &[u8], e: Endian) -> Option<u64> {
        e.uint(rec, self.offset as usize, self.size as usize)
    }

    /// A scalar field as an integer, sign-extended when the field is signed.
    #[inline]
    pub(crate) fn int(&self, rec: &[u8], e: Endian) -> Option<i64> {
        Some(extend(self.uint(rec, e)?, self.size, self.signed))
    }
}

/// `v`, an integer of `size` bytes, as `i64`: sign-extended when `signed`.
#[inline]
fn extend(v: u64, size: u32, signed: bool) -> i64 {
    if signed && size < 8 {
        let shift = 64 - 8 * size;
        ((v << shift) as i64) >> shift
    } else {
        v as i64
    }
}

impl Field {
    /// Where the field is: [`FieldLoc`].
    #[inline]
    pub(crate) fn loc(&self) -> FieldLoc {
        FieldLoc { offset: self.offset, size: self.size, signed: self.signed, kind: self.kind }
    }

    /// `FieldLoc::bytes` of this field.
    #[inline]
    pub(crate) fn bytes<'a>(&self, rec: &'a [u8], e: Endian) -> Option<&'a [u8]> {
        self.loc().bytes(rec, e)
    }

    /// `FieldLoc::int` of this field.
    #[inline]
    pub(crate) fn int(&self, rec: &[u8], e: Endian) -> Option<i64> {
        self.loc().int(rec, e)
    }

    /// Its value's bytes in `rec`, where a trailing `buf[]` (an array of
    /// size 0: ftrace's `print`, `raw_data`) runs to the record's end;
    /// empty when the record is too short.
    pub(crate) fn value<'a>(&self, rec: &'a [u8], e: Endian) -> &'a [u8] {
        match self.kind {
            FieldKind::Array { .. } if self.size == 0 => rec.get(self.offset as usize..),
            _ => self.bytes(rec, e),
        }
        .unwrap_or_default()
    }
}

/// A field's value with its type, as a reader of records takes it
/// (`Field::typed`): integers signed or not as the format says, strings
/// (`char` arrays and `__data_loc char[]`) up to their NUL, arrays of 2, 4
/// or 8-byte integers as [`Ints`], other arrays as their bytes.
///
/// `#[non_exhaustive]`: a kind of field the kernel adds (a new array or
/// string layout) can get its variant without breaking a caller's `match`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Value<'a> {
    /// A signed integer (`signed:1`), sign-extended.
    Signed(i64),
    /// An unsigned integer or a pointer, zero-extended.
    Unsigned(u64),
    /// A string: the bytes before the first NUL. The kernel's strings are
    /// not always UTF-8: [`Value::as_str`] says when they are.
    Str(&'a [u8]),
    /// An array (fixed `T x[N]`, a trailing `T x[]`, or `__data_loc T[]`)
    /// of 2, 4 or 8-byte integers: `sys_enter`'s `args`, a stack's
    /// `caller`, `bprint`'s `buf`. A variant of its own, not a reading of
    /// [`Value::Bytes`] that takes the field: the element size and the
    /// signedness are the format's, which a caller holding only the value
    /// (from `Field::typed`, or an `Event`'s field by name) no longer has.
    Ints(Ints<'a>),
    /// Any other array (fixed or `__data_loc`): bytes (`u8 x[N]`, whose
    /// elements are single bytes that are not `char`), or elements of a
    /// size no integer has (the field's `FieldKind` gives it).
    Bytes(&'a [u8]),
}

/// An array of integers of 2, 4 or 8 bytes each, in a record
/// ([`Value::Ints`]): read in place, in the record's byte order, with no
/// copy. Elements past the last whole one (a cut record) are left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ints<'a> {
    bytes: &'a [u8],
    /// 2, 4 or 8.
    size: u32,
    signed: bool,
    endian: Endian,
}

impl<'a> Ints<'a> {
    /// The array in `bytes`, of elements of `size` bytes (2, 4 or 8; `None`
    /// for another size), signed or not, in byte order `endian`.
    pub(crate) fn new(bytes: &'a [u8], size: u32, signed: bool, endian: Endian) -> Option<Self> {
        matches!(size, 2 | 4 | 8).then_some(Ints { bytes, size, signed, endian })
    }

    /// Bytes per element: 2, 4 or 8.
    pub fn elem_size(&self) -> u32 {
        self.size
    }

    /// Whether the elements are signed (the format's `signed:`).
    pub fn signed(&self) -> bool {
        self.signed
    }

    /// The byte order of the record (of the traced kernel).
    pub fn endian(&self) -> Endian {
        self.endian
    }

    /// How many elements.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.size as usize
    }

    /// Whether there is no element (an empty `__data_loc` array).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of the array as the record holds them.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Element `i`, sign-extended when signed (an unsigned 8-byte one above
    /// `i64::MAX` wraps: `as u64` gives it back); `None` past the end.
    pub fn get(&self, i: usize) -> Option<i64> {
        let size = self.size as usize;
        Some(extend(self.endian.uint(self.bytes, i.checked_mul(size)?, size)?, self.size, self.signed))
    }

    /// Each element as [`Ints::get`] reads it, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = i64> + 'a {
        let (size, signed) = (self.size, self.signed);
        self.uints().map(move |v| extend(v, size, signed))
    }

    /// Each element's bits, zero-extended whatever its sign (an address,
    /// or the value as `--json` writes it).
    pub fn uints(&self) -> impl ExactSizeIterator<Item = u64> + 'a {
        let (size, e) = (self.size as usize, self.endian);
        // Each chunk is `size` bytes, a size `uint` reads.
        self.bytes.chunks_exact(size).map(move |c| e.uint(c, 0, size).unwrap_or(0))
    }
}

impl<'a> Value<'a> {
    /// A string's text, when it is UTF-8.
    pub fn as_str(&self) -> Option<&'a str> {
        match self {
            Value::Str(b) => core::str::from_utf8(b).ok(),
            _ => None,
        }
    }

    /// An integer as `i64` (an unsigned one above `i64::MAX` wraps).
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Signed(v) => Some(v),
            Value::Unsigned(v) => Some(v as i64),
            _ => None,
        }
    }

    /// An integer as `u64` (a negative one wraps).
    pub fn as_u64(&self) -> Option<u64> {
        self.as_i64().map(|v| v as u64)
    }
}

/// Integers in decimal, strings as they are (bytes that are not UTF-8 as
/// U+FFFD), arrays of integers in decimal between brackets (`[1,-2,3]`),
/// other arrays as hex bytes.
impl core::fmt::Display for Value<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Value::Signed(v) => write!(f, "{v}"),
            Value::Unsigned(v) => write!(f, "{v}"),
            Value::Str(b) => {
                for chunk in b.utf8_chunks() {
                    f.write_str(chunk.valid())?;
                    if !chunk.invalid().is_empty() {
                        f.write_str("\u{fffd}")?;
                    }
                }
                Ok(())
            }
            Value::Ints(a) => {
                f.write_str("[")?;
                for (i, v) in a.iter().enumerate() {
                    let sep = if i > 0 { "," } else { "" };
                    if a.signed {
                        write!(f, "{sep}{v}")?;
                    } else {
                        write!(f, "{sep}{}", v as u64)?;
                    }
                }
                f.write_str("]")
            }
            Value::Bytes(b) => b.iter().try_for_each(|x| write!(f, "{x:02x}")),
        }
    }
}

impl Field {
    /// This field's value in record `rec`, with its type ([`Value`]);
    /// `None` when the record is too short for it. A `char` array or
    /// `__data_loc char[]` is a string, a scalar of 1, 2, 4 or 8 bytes an
    /// integer, any other array of 2, 4 or 8-byte elements [`Ints`] (the
    /// rule `--json` and the Parquet columns write fields by, too).
    pub(crate) fn typed<'a>(&self, rec: &'a [u8], e: Endian) -> Option<Value<'a>> {
        let bytes = if self.size == 0 { Some(self.value(rec, e)) } else { self.bytes(rec, e) }?;
        match self.kind {
            FieldKind::Scalar if matches!(self.size, 1 | 2 | 4 | 8) => Some(if self.signed {
                Value::Signed(self.int(rec, e)?)
            } else {
                Value::Unsigned(self.loc().uint(rec, e)?)
            }),
            FieldKind::Array { .. } | FieldKind::DataLoc { .. } | FieldKind::RelLoc { .. }
                if self.type_name.contains("char") =>
            {
                let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
                Some(Value::Str(bytes.get(..end).unwrap_or(bytes)))
            }
            FieldKind::Array { elem_size, .. } | FieldKind::DataLoc { elem_size } | FieldKind::RelLoc { elem_size } => {
                Some(Ints::new(bytes, elem_size, self.signed, e).map_or(Value::Bytes(bytes), Value::Ints))
            }
            FieldKind::Scalar => Some(Value::Bytes(bytes)),
        }
    }
}

// ---------------------------------------------------------------------------
// Parsers
// ---------------------------------------------------------------------------

/// Most fields an event's format may have: twice what a kernel makes. A
/// kprobe, uprobe, fprobe or eprobe has at most MAX_TRACE_ARGS (128,
/// kernel/trace/trace_probe.h) arguments besides its probe and common
/// fields; a synthetic event SYNTH_FIELDS_MAX (64, trace_synth.h); a
/// user_event what MAX_EVENT_DESC (512 bytes, trace_events_user.c)
/// declares; a static tracepoint under 30. More is not a kernel's format,
/// and each record of it would render into a line as long (a format of
/// 60,000 fields made 830 KB lines).
pub(crate) const MAX_FIELDS: usize = 256;

/// Why a format text could not be parsed. `line` is 1-based (0 = not tied
/// to a line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormatError {
    pub(crate) line: u32,
    pub(crate) kind: FormatErrorKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FormatErrorKind {
    /// No `name:` line.
    MissingName,
    /// No `ID:` line.
    MissingId,
    /// `ID:` is not a number.
    BadId,
    /// A `field:` line without a `;`-terminated declaration.
    BadField,
    /// A field declaration without a name.
    MissingFieldName,
    /// A field without `offset:` or `size:`.
    MissingOffsetOrSize,
    /// A number that does not parse or does not fit in u32.
    BadNumber,
    /// header_page: no `timestamp`, `commit` or `data` field.
    MissingHeaderField,
    /// header_page: a field with an impossible size (commit not 4 or 8,
    /// timestamp not 8, data overflowing).
    BadHeaderLayout,
    /// More fields than any kernel gives an event ([`MAX_FIELDS`]).
    TooManyFields,
}

impl core::fmt::Display for FormatError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let what = match self.kind {
            FormatErrorKind::MissingName => "no `name:` line",
            FormatErrorKind::MissingId => "no `ID:` line",
            FormatErrorKind::BadId => "`ID:` is not a number",
            FormatErrorKind::BadField => "malformed `field:` line",
            FormatErrorKind::MissingFieldName => "field without a name",
            FormatErrorKind::MissingOffsetOrSize => "field without offset or size",
            FormatErrorKind::BadNumber => "bad number",
            FormatErrorKind::MissingHeaderField => "header_page lacks timestamp, commit or data",
            FormatErrorKind::BadHeaderLayout => "impossible header_page layout",
            FormatErrorKind::TooManyFields => "more fields than any kernel's event has",
        };
        if self.line > 0 {
            write!(f, "line {}: {}", self.line, what)?;
        } else {
            f.write_str(what)?;
        }
        if self.kind == FormatErrorKind::TooManyFields {
            write!(f, " ({MAX_FIELDS})")?;
        }
        Ok(())
    }
}

#[cfg(feature = "std")]
impl std::error::Error for FormatError {}

fn err(line: usize, kind: FormatErrorKind) -> FormatError {
    FormatError { line: u32::try_from(line).unwrap_or(u32::MAX), kind }
}

/// Lines of a text, with their 1-based numbers, `\r` trimmed.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split('\n').enumerate().map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
}

fn parse_u32(s: &str) -> Option<u32> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u32::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

/// A `field:` line split into declaration and attributes, before any
/// interpretation of the type.
struct RawField<'a> {
    decl: &'a str,
    offset: Option<u32>,
    size: Option<u32>,
    signed: Option<bool>,
}

/// `field:DECL;\toffset:N;\tsize:N;\tsigned:N;` (also `field special:`).
/// Returns `Ok(None)` when the line is not a field line.
fn split_field_line(line: &str, no: usize) -> Result<Option<RawField<'_>>, FormatError> {
    let t = line.trim_start();
    let rest = if let Some(r) = t.strip_prefix("field:") {
        r
    } else if let Some(r) = t.strip_prefix("field special:") {
        r
    } else {
        return Ok(None);
    };
    let (decl, attrs) = rest.split_once(';').ok_or_else(|| err(no, FormatErrorKind::BadField))?;
    let mut f = RawField { decl: decl.trim(), offset: None, size: None, signed: None };
    for a in attrs.split(';') {
        let Some((k, v)) = a.split_once(':') else { continue };
        let k = k.trim();
        let num = || parse_u32(v).ok_or_else(|| err(no, FormatErrorKind::BadNumber));
        match k {
            "offset" => f.offset = Some(num()?),
            "size" => f.size = Some(num()?),
            "signed" => f.signed = Some(num()? != 0),
            _ => {}
        }
    }
    Ok(Some(f))
}

/// Collapse runs of whitespace to one space and trim (type names only, so
/// short strings).
fn normalize_ws(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for w in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

/// The size in bytes of one element of C type `ty` (no name, no brackets,
/// no `__data_loc`), or `None` when the type is not one we know.
pub(crate) fn c_type_size(ty: &str, long_size: u32) -> Option<u32> {
    if ty.contains('*') {
        return Some(long_size);
    }
    let mut words: Vec<&str> = ty
        .split_whitespace()
        .filter(|w| !matches!(*w, "const" | "volatile" | "signed" | "unsigned" | "__user" | "__rcu"))
        .collect();
    // `unsigned` / `signed` alone mean int.
    if words.is_empty() {
        return if ty.split_whitespace().any(|w| w == "unsigned" || w == "signed") { Some(4) } else { None };
    }
    // `short int`, `long int`, `long long int` -> drop the trailing int.
    if words.len() > 1 && words.last() == Some(&"int") {
        words.pop();
    }
    let size = match words.as_slice() {
        ["char"] | ["bool"] | ["_Bool"] => 1,
        ["short"] => 2,
        ["int"] => 4,
        ["long"] => long_size,
        ["long", "long"] => 8,
        ["enum", ..] => 4,
        [one] => match *one {
            "u8" | "s8" | "__u8" | "__s8" | "uint8_t" | "int8_t" => 1,
            "u16" | "s16" | "__u16" | "__s16" | "__le16" | "__be16" | "uint16_t" | "int16_t" => 2,
            "u32" | "s32" | "__u32" | "__s32" | "__le32" | "__be32" | "uint32_t" | "int32_t" | "pid_t" | "uid_t"
            | "gid_t" | "gfp_t" | "dev_t" | "umode_t" | "__wsum" | "fmode_t" => 4,
            "u64" | "s64" | "__u64" | "__s64" | "__le64" | "__be64" | "uint64_t" | "int64_t" | "loff_t"
            | "sector_t" | "ktime_t" | "blkcnt_t" | "u_int64_t" => 8,
            "size_t" | "ssize_t" | "uintptr_t" | "intptr_t" | "off_t" | "ptrdiff_t" | "phys_addr_t" | "time_t"
            | "clock_t" | "ino_t" => long_size,
            _ => return None,
        },
        _ => return None,
    };
    Some(size)
}

/// Whether C type `ty` is signed, for old kernels without `signed:`.
fn infer_signed(ty: &str) -> bool {
    if ty.contains('*') || ty.contains("unsigned") {
        return false;
    }
    let base = ty.split_whitespace().rfind(|w| !matches!(*w, "const" | "volatile")).unwrap_or("");
    matches!(
        base,
        "int"
            | "long"
            | "short"
            | "signed"
            | "s8"
            | "s16"
            | "s32"
            | "s64"
            | "__s8"
            | "__s16"
            | "__s32"
            | "__s64"
            | "int8_t"
            | "int16_t"
            | "int32_t"
            | "int64_t"
            | "pid_t"
            | "ssize_t"
            | "loff_t"
            | "ktime_t"
            | "off_t"
    )
}

/// Interpret a field declaration (`unsigned long caller[8]`,
/// `__data_loc char[] name`, `const char * fmt`) given its size.
fn build_field(raw: RawField<'_>, no: usize, long_size: u32) -> Result<Field, FormatError> {
    let (Some(offset), Some(size)) = (raw.offset, raw.size) else {
        return Err(err(no, FormatErrorKind::MissingOffsetOrSize));
    };
    let mut decl = raw.decl;
    if let Some(i) = decl.find("__attribute__") {
        decl = decl[..i].trim_end();
    }
    // Brackets after the name: `comm[16]`, `comm [TASK_COMM_LEN]`, `a[2][3]`.
    let mut bracket: Option<&str> = None;
    let mut has_brackets = false;
    while let Some(d) = decl.strip_suffix(']') {
        let Some(open) = d.rfind('[') else { return Err(err(no, FormatErrorKind::BadField)) };
        // Keep the outermost (first) bracket's text for the fallback.
        bracket = Some(d[open + 1..].trim());
        has_brackets = true;
        decl = d[..open].trim_end();
    }
    // The name: the trailing identifier.
    let name_start =
        decl.char_indices().rev().take_while(|&(_, c)| c.is_ascii_alphanumeric() || c == '_').last().map(|(i, _)| i);
    let Some(ns) = name_start else { return Err(err(no, FormatErrorKind::MissingFieldName)) };
    let name = &decl[ns..];
    let mut ty = decl[..ns].trim();
    if ty.is_empty() {
        return Err(err(no, FormatErrorKind::BadField));
    }
    // Brackets on the type (`__data_loc char[]`).
    let mut type_brackets = false;
    while let Some(t) = ty.strip_suffix(']') {
        let Some(open) = t.rfind('[') else { return Err(err(no, FormatErrorKind::BadField)) };
        type_brackets = true;
        ty = t[..open].trim_end();
    }
    let (loc, base) = if let Some(r) = ty.strip_prefix("__data_loc") {
        (1, r.trim_start())
    } else if let Some(r) = ty.strip_prefix("__rel_loc") {
        (2, r.trim_start())
    } else {
        (0, ty)
    };
    let elem = c_type_size(base, long_size);
    let kind = match loc {
        1 => FieldKind::DataLoc { elem_size: elem.unwrap_or(1).max(1) },
        2 => FieldKind::RelLoc { elem_size: elem.unwrap_or(1).max(1) },
        _ if has_brackets || type_brackets => {
            let num = bracket.and_then(parse_u32);
            match elem {
                Some(e) if e > 0 && size % e == 0 => FieldKind::Array { elem_size: e, count: size / e },
                _ => match num {
                    Some(n) if n > 0 && size % n == 0 => FieldKind::Array { elem_size: size / n, count: n },
                    _ => FieldKind::Array { elem_size: size, count: 1 },
                },
            }
        }
        _ => FieldKind::Scalar,
    };
    let type_name = normalize_ws(ty);
    let signed = raw.signed.unwrap_or_else(|| infer_signed(base));
    Ok(Field { name: String::from(name), type_name, offset, size, signed, kind })
}

/// Parse one field line on its own (`\tfield:int irq;\toffset:8;...`).
/// `Ok(None)` when the line is not a field line.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn parse_field_line(line: &str, long_size: u32) -> Result<Option<Field>, FormatError> {
    match split_field_line(line, 1)? {
        Some(raw) => build_field(raw, 1, long_size).map(Some),
        None => Ok(None),
    }
}

impl Field {
    /// Whether this is a `common_*` field.
    pub(crate) fn is_common(&self) -> bool {
        self.name.starts_with("common_")
    }

    /// The end of the fixed part of the field (offset + size), saturating.
    pub(crate) fn end(&self) -> u32 {
        self.offset.saturating_add(self.size)
    }
}

impl EventFormat {
    /// Parse an `events/SYS/EVENT/format` text. `system` is the directory
    /// name (the file does not contain it); `long_size` is the kernel's
    /// `long` size in bytes (`HeaderPage::long_size`), used for array
    /// element sizes.
    pub fn parse(text: &str, system: &str, long_size: u32) -> Result<EventFormat, FormatError> {
        let mut name: Option<&str> = None;
        let mut id: Option<u32> = None;
        let mut common = Vec::new();
        let mut fields = Vec::new();
        let mut print_fmt = String::new();
        // 0: before `format:`; 1: common fields; 2: event fields.
        let mut section = 0u8;
        let mut it = lines(text);
        while let Some((no, line)) = it.next() {
            let t = line.trim();
            if let Some(fmt) = line.trim_start().strip_prefix("print fmt:") {
                print_fmt.push_str(fmt.strip_prefix(' ').unwrap_or(fmt));
                for (_, more) in it.by_ref() {
                    print_fmt.push('\n');
                    print_fmt.push_str(more);
                }
                let keep = print_fmt.trim_end().len();
                print_fmt.truncate(keep);
                break;
            }
            if t.is_empty() {
                if section == 1 && !common.is_empty() {
                    section = 2;
                }
                continue;
            }
            if let Some(raw) = split_field_line(line, no)? {
                if common.len() + fields.len() >= MAX_FIELDS {
                    return Err(err(no, FormatErrorKind::TooManyFields));
                }
                let f = build_field(raw, no, long_size)?;
                if section == 2 {
                    fields.push(f);
                } else {
                    section = section.max(1);
                    common.push(f);
                }
                continue;
            }
            if let Some(v) = t.strip_prefix("name:") {
                name = Some(v.trim());
            } else if let Some(v) = t.strip_prefix("ID:") {
                id = Some(parse_u32(v).ok_or_else(|| err(no, FormatErrorKind::BadId))?);
            } else if t == "format:" {
                section = 1;
            }
            // Anything else is ignored (unknown lines from other kernels).
        }
        if fields.is_empty() {
            // No blank line between common and event fields: split by name.
            let all = core::mem::take(&mut common);
            for f in all {
                if f.is_common() {
                    common.push(f);
                } else {
                    fields.push(f);
                }
            }
        }
        let name = name.filter(|n| !n.is_empty()).ok_or_else(|| err(0, FormatErrorKind::MissingName))?;
        let id = id.ok_or_else(|| err(0, FormatErrorKind::MissingId))?;
        Ok(EventFormat { id, system: String::from(system), name: String::from(name), common, fields, print_fmt })
    }

    /// A field by name, event fields first, then common fields.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().chain(self.common.iter()).find(|f| f.name == name)
    }

    /// All fields, common first, in file order.
    pub fn all_fields(&self) -> impl Iterator<Item = &Field> {
        self.common.iter().chain(self.fields.iter())
    }

    /// The smallest record that holds every fixed field.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn min_record_size(&self) -> u32 {
        self.all_fields().map(Field::end).max().unwrap_or(0)
    }
}

/// `events/header_page`: where the page header's fields live. Offsets and
/// sizes in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeaderPage {
    pub(crate) timestamp_offset: u32,
    pub(crate) timestamp_size: u32,
    pub(crate) commit_offset: u32,
    /// 8 on 64-bit kernels, 4 on 32-bit ones: the kernel's `long` size.
    pub(crate) commit_size: u32,
    /// `int overwrite` (a view of the commit word's flag bits), if listed.
    pub(crate) overwrite: Option<(u32, u32)>,
    /// Where the records start on a page (after the header).
    pub(crate) data_offset: u32,
    /// Bytes of records a page can hold: the sub-buffer size less the
    /// header.
    pub(crate) data_size: u32,
}

impl HeaderPage {
    /// The layout a kernel with `long_size`-byte longs (4 or 8) and
    /// `subbuf_size`-byte sub-buffers uses.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn new(long_size: u32, subbuf_size: u32) -> HeaderPage {
        let data_offset = 8 + long_size;
        HeaderPage {
            timestamp_offset: 0,
            timestamp_size: 8,
            commit_offset: 8,
            commit_size: long_size,
            overwrite: Some((8, 1)),
            data_offset,
            data_size: subbuf_size.saturating_sub(data_offset),
        }
    }

    /// Parse the text of `events/header_page`.
    pub(crate) fn parse(text: &str) -> Result<HeaderPage, FormatError> {
        let (mut ts, mut commit, mut ow, mut data) = (None, None, None, None);
        let mut last = 0;
        for (no, line) in lines(text) {
            last = no;
            let Some(raw) = split_field_line(line, no)? else { continue };
            let (Some(off), Some(size)) = (raw.offset, raw.size) else {
                return Err(err(no, FormatErrorKind::MissingOffsetOrSize));
            };
            let nm = raw
                .decl
                .rsplit(|c: char| c.is_whitespace() || c == '*')
                .next()
                .unwrap_or("")
                .split('[')
                .next()
                .unwrap_or("");
            match nm {
                "timestamp" => ts = Some((off, size, no)),
                "commit" => commit = Some((off, size, no)),
                "overwrite" => ow = Some((off, size)),
                "data" => data = Some((off, size, no)),
                _ => {}
            }
        }
        let (Some(ts), Some(commit), Some(data)) = (ts, commit, data) else {
            return Err(err(last, FormatErrorKind::MissingHeaderField));
        };
        if ts.1 != 8 || ts.0.checked_add(8).is_none() {
            return Err(err(ts.2, FormatErrorKind::BadHeaderLayout));
        }
        if !matches!(commit.1, 4 | 8) || commit.0.checked_add(commit.1).is_none() {
            return Err(err(commit.2, FormatErrorKind::BadHeaderLayout));
        }
        // The sub-buffer must be addressable and the data must not start
        // inside the timestamp or commit word.
        let end = data.0.checked_add(data.1);
        if end.map_or(true, |e| e > 1 << 30) || data.0 < ts.0 + 8 || data.0 < commit.0 + commit.1 {
            return Err(err(data.2, FormatErrorKind::BadHeaderLayout));
        }
        Ok(HeaderPage {
            timestamp_offset: ts.0,
            timestamp_size: ts.1,
            commit_offset: commit.0,
            commit_size: commit.1,
            overwrite: ow,
            data_offset: data.0,
            data_size: data.1,
        })
    }

    /// The sub-buffer ("page") size: data offset + data size.
    pub(crate) fn subbuf_size(&self) -> u32 {
        self.data_offset.saturating_add(self.data_size)
    }

    /// The kernel's `long` size, which is the commit word's size.
    pub(crate) fn long_size(&self) -> u32 {
        self.commit_size
    }
}

/// `events/header_event`: the event header layout. Every kernel since 2.6.31
/// prints the same values; they are kept to detect the pre-2.6.31 format
/// (which the page decoder does not support).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) struct HeaderEvent {
    pub(crate) type_len_bits: u32,
    pub(crate) time_delta_bits: u32,
    pub(crate) array_bits: u32,
    pub(crate) padding_type: u32,
    pub(crate) time_extend_type: u32,
    /// Absent before 4.17 kernels printed it.
    pub(crate) time_stamp_type: Option<u32>,
    pub(crate) data_max_type_len: u32,
    /// The header describes the old (2.6.30) `type`/`len` layout.
    pub(crate) old_format: bool,
}

#[cfg(any(test, feature = "fuzzing"))]
impl Default for HeaderEvent {
    fn default() -> Self {
        HeaderEvent {
            type_len_bits: 5,
            time_delta_bits: 27,
            array_bits: 32,
            padding_type: 29,
            time_extend_type: 30,
            time_stamp_type: Some(31),
            data_max_type_len: 28,
            old_format: false,
        }
    }
}

#[cfg(any(test, feature = "fuzzing"))]
impl HeaderEvent {
    /// Parse the text of `events/header_event`. Unknown lines are ignored
    /// and missing values take the (universal) defaults; this never fails.
    pub(crate) fn parse(text: &str) -> HeaderEvent {
        let mut h = HeaderEvent { time_stamp_type: None, ..HeaderEvent::default() };
        let num = |s: &str| parse_u32(s.trim().trim_end_matches("bits").trim());
        for (_, line) in lines(text) {
            let t = line.trim();
            if t.starts_with('#') {
                continue;
            }
            if let Some(v) = t.strip_prefix("data max type_len") {
                if let Some(n) = v.trim().strip_prefix("==").and_then(num) {
                    h.data_max_type_len = n;
                }
                continue;
            }
            let Some((k, v)) = t.split_once(':') else { continue };
            let v = v.trim();
            let ty = v.strip_prefix("type").and_then(|x| x.trim().strip_prefix("==")).and_then(num);
            match k.trim() {
                "type_len" => h.type_len_bits = num(v).unwrap_or(h.type_len_bits),
                "time_delta" => h.time_delta_bits = num(v).unwrap_or(h.time_delta_bits),
                "array" => h.array_bits = num(v).unwrap_or(h.array_bits),
                "type" | "len" => h.old_format = true,
                "padding" => h.padding_type = ty.unwrap_or(h.padding_type),
                "time_extend" => h.time_extend_type = ty.unwrap_or(h.time_extend_type),
                "time_stamp" => h.time_stamp_type = ty.or(h.time_stamp_type),
                _ => {}
            }
        }
        h
    }
}

/// All known events, keyed by ID and by `system:name`.
#[derive(Debug, Clone, Default)]
pub struct EventTable {
    events: Vec<EventFormat>,
    /// Direct index: ID -> position in `events` + 1 (0 = none). IDs are
    /// `common_type` values, so below 65536.
    by_id: Vec<u32>,
    /// `system:name` -> position in `events`, or [`GONE`]: replaced entries
    /// are marked rather than removed.
    by_name: crate::strmap::StrMap,
    /// Where `common_type` lives (offset, size), from the first event.
    common_type: Option<(u32, u32)>,
}

const MAX_DIRECT_ID: u32 = 1 << 16;
/// A `by_name` entry whose event was replaced.
const GONE: u64 = u64::MAX;

impl EventTable {
    /// An empty table; [`EventTable::insert`] adds the formats.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Add an event; an event with the same ID (or the same system:name)
    /// is replaced and returned.
    pub(crate) fn insert(&mut self, ev: EventFormat) -> Option<EventFormat> {
        if self.common_type.is_none() {
            if let Some(f) = ev.common.iter().find(|f| f.name == "common_type") {
                self.common_type = Some((f.offset, f.size));
            }
        }
        let key = alloc::format!("{}:{}", ev.system, ev.name);
        let slot = self.index_of(ev.id).or_else(|| self.name_index(&key));
        if let Some(i) = slot {
            let old = core::mem::replace(&mut self.events[i], ev);
            self.unlink(&old);
            self.link(i);
            return Some(old);
        }
        let i = self.events.len();
        self.events.push(ev);
        self.link(i);
        None
    }

    fn link(&mut self, i: usize) {
        let Some(ev) = self.events.get(i) else { return };
        let (id, key) = (ev.id, alloc::format!("{}:{}", ev.system, ev.name));
        let pos = u32::try_from(i).unwrap_or(u32::MAX);
        if id < MAX_DIRECT_ID {
            let id = id as usize;
            if self.by_id.len() <= id {
                self.by_id.resize(id + 1, 0);
            }
            if let Some(s) = self.by_id.get_mut(id) {
                *s = pos.saturating_add(1);
            }
        }
        *self.by_name.entry(&key, 0) = u64::from(pos);
    }

    fn unlink(&mut self, old: &EventFormat) {
        if let Some(s) = self.by_id.get_mut(old.id as usize) {
            *s = 0;
        }
        if let Some(i) = self.by_name.get_mut(&alloc::format!("{}:{}", old.system, old.name)) {
            *i = GONE;
        }
    }

    fn name_index(&self, key: &str) -> Option<usize> {
        self.by_name.get(key).filter(|&i| i != GONE).and_then(|i| usize::try_from(i).ok())
    }

    #[cfg_attr(feature = "host", inline(always))]
    fn index_of(&self, id: u32) -> Option<usize> {
        if id < MAX_DIRECT_ID {
            match self.by_id.get(id as usize) {
                Some(&p) if p > 0 => Some(p as usize - 1),
                _ => None,
            }
        } else {
            self.events.iter().position(|e| e.id == id)
        }
    }

    /// The event with this ID.
    #[cfg_attr(feature = "host", inline(always))]
    #[cfg_attr(not(feature = "host"), inline)]
    pub(crate) fn get(&self, id: u32) -> Option<&EventFormat> {
        self.events.get(self.index_of(id)?)
    }

    /// The event `sys:name` (also `sys/name`).
    pub(crate) fn by_name(&self, full: &str) -> Option<&EventFormat> {
        if let Some(i) = self.name_index(full) {
            return self.events.get(i);
        }
        let (s, n) = full.split_once('/')?;
        self.get_by_name(s, n)
    }

    /// The event `name` in system `system`.
    pub fn get_by_name(&self, system: &str, name: &str) -> Option<&EventFormat> {
        self.events.iter().find(|e| e.system == system && e.name == name)
    }

    /// The `common_type` of a record payload.
    #[cfg_attr(feature = "host", inline(always))]
    #[cfg_attr(not(feature = "host"), inline)]
    pub(crate) fn record_id(&self, payload: &[u8], e: Endian) -> Option<u32> {
        let (off, size) = self.common_type.unwrap_or((0, 2));
        e.uint(payload, off as usize, size as usize).and_then(|v| u32::try_from(v).ok())
    }

    /// The event a record payload belongs to (by its `common_type`).
    #[cfg_attr(feature = "host", inline(always))]
    #[cfg_attr(not(feature = "host"), inline)]
    pub(crate) fn event_of(&self, payload: &[u8], e: Endian) -> Option<&EventFormat> {
        self.get(self.record_id(payload, e)?)
    }

    /// Every event, in the order first inserted (a replaced one keeps its
    /// place).
    pub(crate) fn iter(&self) -> impl Iterator<Item = &EventFormat> {
        self.events.iter()
    }
}

/// The four common fields every event's format file starts with on the
/// kernels trbox's fixtures come from (`common_type`, `common_flags`,
/// `common_preempt_count`, `common_pid`; kernel/trace/trace_events.c
/// `trace_define_common_fields()`), and the blank line after them: for
/// tests that write a format file, `concat!(HEAD, common_fields!(), FIELDS)`.
#[cfg(test)]
macro_rules! common_fields {
    () => {
        "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
    };
}
#[cfg(test)]
pub(crate) use common_fields;

#[cfg(test)]
mod tests {
    use super::*;

    const IRQ: &str = concat!(
        "name: irq_handler_entry\nID: 105\nformat:\n",
        common_fields!(),
        "\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;\n\
\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;\n\
\n\
print fmt: \"irq=%d name=%s\", REC->irq, __get_str(name)\n"
    );

    #[test]
    fn irq_handler_entry() {
        let e = EventFormat::parse(IRQ, "irq", 8).unwrap();
        assert_eq!((e.id, e.system.as_str(), e.name.as_str()), (105, "irq", "irq_handler_entry"));
        assert_eq!(e.common.len(), 4);
        assert_eq!(e.fields.len(), 2);
        assert_eq!(e.fields[0].name, "irq");
        assert!(e.fields[0].signed);
        assert_eq!(e.fields[1].name, "name");
        assert_eq!(e.fields[1].type_name, "__data_loc char");
        assert_eq!(e.fields[1].kind, FieldKind::DataLoc { elem_size: 1 });
        assert_eq!(e.print_fmt, "\"irq=%d name=%s\", REC->irq, __get_str(name)");
        let mut rec = [0u8; 24];
        rec[8..12].copy_from_slice(&(-3i32).to_le_bytes());
        rec[12..16].copy_from_slice(&((4u32 << 16) | 16).to_le_bytes());
        rec[16..20].copy_from_slice(b"eth\0");
        assert_eq!(e.field("irq").unwrap().int(&rec, Endian::Little), Some(-3));
        assert_eq!(e.field("name").unwrap().bytes(&rec, Endian::Little), Some(&b"eth\0"[..]));
        assert_eq!(e.min_record_size(), 16);
    }

    /// Each kind of field as a [`Value`]: --json's rule.
    #[test]
    fn typed_values() {
        let e = EventFormat::parse(IRQ, "irq", 8).unwrap();
        let mut rec = [0u8; 24];
        rec[4..8].copy_from_slice(&7i32.to_le_bytes());
        rec[8..12].copy_from_slice(&(-3i32).to_le_bytes());
        rec[12..16].copy_from_slice(&((4u32 << 16) | 16).to_le_bytes());
        rec[16..20].copy_from_slice(b"eth\0");
        fn typed<'a>(e: &EventFormat, name: &str, rec: &'a [u8]) -> Option<Value<'a>> {
            e.field(name).or_else(|| e.common.iter().find(|f| f.name == name))?.typed(rec, Endian::Little)
        }
        assert_eq!(typed(&e, "irq", &rec), Some(Value::Signed(-3)));
        assert_eq!(typed(&e, "common_type", &rec), Some(Value::Unsigned(0)));
        assert_eq!(typed(&e, "common_pid", &rec), Some(Value::Signed(7)));
        assert_eq!(typed(&e, "name", &rec), Some(Value::Str(b"eth")));
        assert_eq!(typed(&e, "name", &rec).unwrap().as_str(), Some("eth"));
        assert_eq!(typed(&e, "name", &rec).unwrap().to_string(), "eth");
        // Too short for the field, or for what its locator points at.
        assert_eq!(typed(&e, "irq", &rec[..10]), None);
        assert_eq!(typed(&e, "name", &rec[..18]), None);
        let bytes = field("\tfield:u8 addr[4];\toffset:8;\tsize:4;\tsigned:0;", 8);
        assert_eq!(bytes.typed(&rec, Endian::Little), Some(Value::Bytes(&[0xfd, 0xff, 0xff, 0xff])));
        assert_eq!(Value::Bytes(&[0xfd, 1]).to_string(), "fd01");
        let comm = field("\tfield:char comm[4];\toffset:16;\tsize:4;\tsigned:0;", 8);
        assert_eq!(comm.typed(&rec, Endian::Little), Some(Value::Str(b"eth")));
        assert_eq!(Value::Str(b"a\xffb").to_string(), "a\u{fffd}b");
    }

    /// Arrays of 2, 4 or 8-byte integers are [`Ints`]: each element in the
    /// record's byte order, sign-extended when the format says `signed:1`;
    /// 1-byte ones stay bytes, and a cut array has its whole elements only.
    #[test]
    fn integer_arrays() {
        let rec = [0u8, 0, 0, 0, 0, 0, 0, 0, 0xfe, 0xff, 0x01, 0x00, 0x02, 0x00, 0x00, 0x80];
        let s16 = field("\tfield:short v[4];\toffset:8;\tsize:8;\tsigned:1;", 8);
        let Some(Value::Ints(a)) = s16.typed(&rec, Endian::Little) else {
            panic!("{:?}", s16.typed(&rec, Endian::Little))
        };
        assert_eq!((a.elem_size(), a.signed(), a.endian(), a.len()), (2, true, Endian::Little, 4));
        assert_eq!(a.iter().collect::<Vec<_>>(), [-2, 1, 2, -32768]);
        assert_eq!(a.uints().collect::<Vec<_>>(), [0xfffe, 1, 2, 0x8000]);
        assert_eq!((a.get(0), a.get(3), a.get(4)), (Some(-2), Some(-32768), None));
        assert_eq!(Value::Ints(a).to_string(), "[-2,1,2,-32768]");
        let u32s = field("\tfield:u32 v[2];\toffset:8;\tsize:8;\tsigned:0;", 8);
        let Some(Value::Ints(a)) = u32s.typed(&rec, Endian::Big) else { panic!() };
        assert_eq!(a.iter().collect::<Vec<_>>(), [0xfeff_0100, 0x0200_0080]);
        let Some(Value::Ints(a)) = u32s.typed(&rec, Endian::Little) else { panic!() };
        assert_eq!(Value::Ints(a).to_string(), "[131070,2147483650]");
        let u64s = field("\tfield:unsigned long v[1];\toffset:8;\tsize:8;\tsigned:0;", 8);
        let Some(Value::Ints(a)) = u64s.typed(&rec, Endian::Little) else { panic!() };
        assert_eq!(a.get(0).map(|v| v as u64), Some(0x8000_0002_0001_fffe));
        // A trailing `u32 buf[]` runs to the record's end; its cut element
        // is left out.
        let buf = field("\tfield:u32 buf[];\toffset:8;\tsize:0;\tsigned:0;", 8);
        let Some(Value::Ints(a)) = buf.typed(&rec[..15], Endian::Little) else { panic!() };
        assert_eq!((a.len(), a.bytes().len(), a.get(1)), (1, 7, None));
        assert_eq!(a.uints().len(), 1);
        // Single bytes, or elements of no integer's size, are bytes.
        let u8s = field("\tfield:u8 v[8];\toffset:8;\tsize:8;\tsigned:0;", 8);
        assert!(matches!(u8s.typed(&rec, Endian::Little), Some(Value::Bytes(b)) if b.len() == 8));
        let odd = field("\tfield:struct foo x[N];\toffset:8;\tsize:3;\tsigned:0;", 8);
        assert!(matches!(odd.typed(&rec, Endian::Little), Some(Value::Bytes(b)) if b.len() == 3));
    }

    fn field(line: &str, long: u32) -> Field {
        parse_field_line(line, long).unwrap().unwrap()
    }

    #[test]
    fn arrays() {
        let f = field("\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;", 8);
        assert_eq!((f.name.as_str(), f.type_name.as_str()), ("comm", "char"));
        assert_eq!(f.kind, FieldKind::Array { elem_size: 1, count: 16 });
        let f = field("\tfield:char comm[TASK_COMM_LEN];\toffset:8;\tsize:16;", 8);
        assert_eq!(f.kind, FieldKind::Array { elem_size: 1, count: 16 });
        assert!(!f.signed);
    }

    #[test]
    fn arrays_by_type() {
        let f = field("\tfield:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;", 8);
        assert_eq!(f.kind, FieldKind::Array { elem_size: 8, count: 8 });
        let f = field("\tfield:unsigned long caller[8];\toffset:12;\tsize:32;\tsigned:0;", 4);
        assert_eq!(f.kind, FieldKind::Array { elem_size: 4, count: 8 });
        // More entries than the bracket says.
        let f = field("\tfield:unsigned long caller[8];\toffset:16;\tsize:128;\tsigned:0;", 8);
        assert_eq!(f.kind, FieldKind::Array { elem_size: 8, count: 16 });
        let f = field("\tfield:u64 args[6];\toffset:16;\tsize:48;\tsigned:0;", 4);
        assert_eq!(f.kind, FieldKind::Array { elem_size: 8, count: 6 });
        let f = field("\tfield:void * ptrs[4];\toffset:16;\tsize:16;\tsigned:0;", 4);
        assert_eq!(f.kind, FieldKind::Array { elem_size: 4, count: 4 });
        // Unknown type: from the bracket number, else the whole size.
        let f = field("\tfield:struct foo x[3];\toffset:0;\tsize:24;\tsigned:0;", 8);
        assert_eq!(f.kind, FieldKind::Array { elem_size: 8, count: 3 });
        let f = field("\tfield:struct foo x[N];\toffset:0;\tsize:24;\tsigned:0;", 8);
        assert_eq!(f.kind, FieldKind::Array { elem_size: 24, count: 1 });
        let f = field("\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:1;", 8);
        assert_eq!(f.kind, FieldKind::Array { elem_size: 1, count: 0 });
        let f = field("\tfield:__u8 saddr [4];\toffset:16;\tsize:4;\tsigned:0;", 8);
        assert_eq!((f.name.as_str(), f.kind), ("saddr", FieldKind::Array { elem_size: 1, count: 4 }));
        let f = field("\tfield:char name[2][16];\toffset:16;\tsize:32;\tsigned:0;", 8);
        assert_eq!(f.kind, FieldKind::Array { elem_size: 1, count: 32 });
    }

    #[test]
    fn scalars_and_locs() {
        let f = field("\tfield:const char * fmt;\toffset:16;\tsize:8;\tsigned:0;", 8);
        assert_eq!((f.name.as_str(), f.type_name.as_str(), f.kind), ("fmt", "const char *", FieldKind::Scalar));
        let f = field("\tfield:const char *fmt;\toffset:16;\tsize:8;\tsigned:0;", 8);
        assert_eq!((f.name.as_str(), f.type_name.as_str()), ("fmt", "const char *"));
        let f = field("\tfield:__rel_loc char[] msg;\toffset:8;\tsize:4;\tsigned:0;", 8);
        assert_eq!((f.name.as_str(), f.kind), ("msg", FieldKind::RelLoc { elem_size: 1 }));
        assert_eq!(f.type_name, "__rel_loc char");
        let f = field("\tfield:__data_loc unsigned long[] mask;\toffset:8;\tsize:4;\tsigned:0;", 4);
        assert_eq!(f.kind, FieldKind::DataLoc { elem_size: 4 });
        let f = field("\tfield:__data_loc u32[] cpus;\toffset:8;\tsize:4;\tsigned:0;", 8);
        assert_eq!(f.kind, FieldKind::DataLoc { elem_size: 4 });
        let f = field("\tfield special:const char comm[16] __attribute__((aligned(4))); offset:2; size:16;", 8);
        assert_eq!((f.name.as_str(), f.type_name.as_str()), ("comm", "const char"));
        assert!(parse_field_line("\toffset:0;", 8).unwrap().is_none());
        assert!(parse_field_line("\tfield:int x", 8).is_err());
        assert!(parse_field_line("\tfield:int x;\toffset:1;", 8).is_err());
        assert!(parse_field_line("\tfield:x;\toffset:1;\tsize:1;", 8).is_err());
        assert!(parse_field_line("\tfield:int x;\toffset:a;\tsize:1;", 8).is_err());
        assert!(parse_field_line("\tfield:int ];\toffset:1;\tsize:1;", 8).is_err());
    }

    #[test]
    fn old_kernel_format() {
        let t = "name: sched_switch\r\nID: 56\r\nformat:\r\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\r\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\r\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\r\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\r\n\
\tfield:int common_lock_depth;\toffset:8;\tsize:4;\r\n\
\r\n\
\tfield:char prev_comm[TASK_COMM_LEN];\toffset:12;\tsize:16;\r\n\
\tfield:pid_t prev_pid;\toffset:28;\tsize:4;\r\n\
\tfield:unsigned int prev_state;\toffset:32;\tsize:4;\r\n\
\r\n\
print fmt: \"task %s:%d\", REC->prev_comm, REC->prev_pid\r\n";
        let e = EventFormat::parse(t, "sched", 4).unwrap();
        assert_eq!(e.common.len(), 5);
        assert_eq!(e.common[4].name, "common_lock_depth");
        assert!(e.common[4].signed);
        assert!(!e.common[0].signed);
        assert_eq!(e.fields.len(), 3);
        assert!(e.fields[1].signed);
        assert!(!e.fields[2].signed);
        assert_eq!(e.print_fmt, "\"task %s:%d\", REC->prev_comm, REC->prev_pid");
    }

    #[test]
    fn no_blank_line_splits_by_name() {
        let t = "name: x\nID: 7\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int a;\toffset:4;\tsize:4;\tsigned:1;\n";
        let e = EventFormat::parse(t, "s", 8).unwrap();
        assert_eq!((e.common.len(), e.fields.len(), e.print_fmt.as_str()), (1, 1, ""));
    }

    #[test]
    fn format_errors() {
        assert_eq!(EventFormat::parse("ID: 1\n", "s", 8).unwrap_err().kind, FormatErrorKind::MissingName);
        assert_eq!(EventFormat::parse("name: a\n", "s", 8).unwrap_err().kind, FormatErrorKind::MissingId);
        let e = EventFormat::parse("name: a\nID: x\n", "s", 8).unwrap_err();
        assert_eq!((e.line, e.kind), (2, FormatErrorKind::BadId));
        let e = EventFormat::parse("name: a\nID: 1\nformat:\n\tfield:int a;\tsize:4;\n", "s", 8).unwrap_err();
        assert_eq!((e.line, e.kind), (4, FormatErrorKind::MissingOffsetOrSize));
        assert!(!alloc::format!("{e}").is_empty());
    }

    #[test]
    fn header_page_64_and_32() {
        let t64 = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
        let h = HeaderPage::parse(t64).unwrap();
        assert_eq!(h, HeaderPage::new(8, 4096));
        assert_eq!((h.subbuf_size(), h.long_size()), (4096, 8));
        let t32 = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
\tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n\
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
\tfield: char data;\toffset:12;\tsize:16372;\tsigned:0;\n";
        let h = HeaderPage::parse(t32).unwrap();
        assert_eq!(h, HeaderPage::new(4, 16384));
        // No signed:, no overwrite (old kernels).
        let old = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\n\tfield: local_t commit;\toffset:8;\tsize:8;\n\tfield: char data;\toffset:16;\tsize:65520;\n";
        let h = HeaderPage::parse(old).unwrap();
        assert_eq!((h.overwrite, h.subbuf_size()), (None, 65536));
        assert_eq!(HeaderPage::parse("").unwrap_err().kind, FormatErrorKind::MissingHeaderField);
        let bad = t64.replace("size:8;\tsigned:1", "size:2;\tsigned:1");
        assert_eq!(HeaderPage::parse(&bad).unwrap_err().kind, FormatErrorKind::BadHeaderLayout);
        let bad = t64.replace("offset:16;\tsize:4080", "offset:16;\tsize:4294967295");
        assert_eq!(HeaderPage::parse(&bad).unwrap_err().kind, FormatErrorKind::BadHeaderLayout);
        let bad = t64.replace("offset:16;", "offset:4;");
        assert_eq!(HeaderPage::parse(&bad).unwrap_err().kind, FormatErrorKind::BadHeaderLayout);
    }

    #[test]
    fn header_event() {
        let t = "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";
        assert_eq!(HeaderEvent::parse(t), HeaderEvent::default());
        let old = "\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n\tdata max type_len  == 28\n";
        assert_eq!(HeaderEvent::parse(old).time_stamp_type, None);
        let ancient = "\ttype        :    2 bits\n\tlen         :    3 bits\n\ttime_delta  :   27 bits\n";
        assert!(HeaderEvent::parse(ancient).old_format);
    }

    #[test]
    fn table() {
        let mut t = EventTable::new();
        assert!(t.insert(EventFormat::parse(IRQ, "irq", 8).unwrap()).is_none());
        let mut other = EventFormat::parse(IRQ, "irq", 8).unwrap();
        other.id = 70000;
        other.name = String::from("big");
        t.insert(other);
        assert_eq!(t.events.len(), 2);
        assert_eq!(t.get(105).unwrap().name, "irq_handler_entry");
        assert_eq!(t.get(70000).unwrap().name, "big");
        assert!(t.get(104).is_none());
        assert_eq!(t.by_name("irq:irq_handler_entry").unwrap().id, 105);
        assert_eq!(t.by_name("irq/big").unwrap().id, 70000);
        assert!(t.by_name("irq:nope").is_none());
        let rec = [105u8, 0, 0, 0, 1, 0, 0, 0];
        assert_eq!(t.event_of(&rec, Endian::Little).unwrap().id, 105);
        assert_eq!(t.record_id(&[0, 105], Endian::Big), Some(105));
        // Replacing by ID.
        let mut again = EventFormat::parse(IRQ, "irq", 8).unwrap();
        again.name = String::from("renamed");
        assert_eq!(t.insert(again).unwrap().name, "irq_handler_entry");
        assert!(t.by_name("irq:irq_handler_entry").is_none());
        assert_eq!(t.by_name("irq:renamed").unwrap().id, 105);
        assert_eq!(t.events.len(), 2);
    }

    #[test]
    fn c_types() {
        assert_eq!(c_type_size("unsigned long long", 4), Some(8));
        assert_eq!(c_type_size("unsigned long", 4), Some(4));
        assert_eq!(c_type_size("long int", 8), Some(8));
        assert_eq!(c_type_size("unsigned", 8), Some(4));
        assert_eq!(c_type_size("short unsigned int", 8), Some(2));
        assert_eq!(c_type_size("struct x", 8), None);
        assert_eq!(c_type_size("", 8), None);
    }
}
