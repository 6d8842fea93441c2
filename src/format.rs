//! `events/header_page`, `events/header_event` and `events/SYS/EVENT/format`
//! parsing into an event table keyed by ID.
//!
//! (Types fixed here so the page decoder and print-fmt can be written against
//! them; the parser fills them in.)

use alloc::string::String;
use alloc::vec::Vec;

/// How a field's bytes are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// A plain integer (or pointer) of `size` bytes.
    Scalar,
    /// A fixed array: `count` elements of `elem_size` bytes (`char comm[16]`).
    Array { elem_size: u32, count: u32 },
    /// `__data_loc`: a u32 `(len << 16) | offset`, offset from record start.
    DataLoc { elem_size: u32 },
    /// `__rel_loc`: like DataLoc, offset from the end of this field.
    RelLoc { elem_size: u32 },
}

/// One `field:` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    /// The C type as written, without the name and brackets
    /// (`unsigned long`, `char`, `__data_loc char`, `const char *`).
    pub type_name: String,
    pub offset: u32,
    pub size: u32,
    pub signed: bool,
    pub kind: FieldKind,
}

/// One event's format file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    pub id: u32,
    pub system: String,
    pub name: String,
    /// `common_*` fields (the part before the blank line).
    pub common: Vec<Field>,
    /// The event's own fields.
    pub fields: Vec<Field>,
    /// The text after `print fmt: `, unparsed.
    pub print_fmt: String,
}

/// Byte order of the kernel that wrote the data (not of this machine).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Endian {
    #[default]
    Little,
    Big,
}

impl Endian {
    /// Read an unsigned integer of 1, 2, 4 or 8 bytes at `off`; `None` when
    /// out of bounds or for another size.
    #[inline]
    pub fn uint(self, b: &[u8], off: usize, size: usize) -> Option<u64> {
        let s = b.get(off..off.checked_add(size)?)?;
        let mut v = 0u64;
        match self {
            Endian::Little => s.iter().rev().for_each(|&x| v = (v << 8) | u64::from(x)),
            Endian::Big => s.iter().for_each(|&x| v = (v << 8) | u64::from(x)),
        }
        matches!(size, 1 | 2 | 4 | 8).then_some(v)
    }

    #[inline]
    pub fn u32(self, b: &[u8], off: usize) -> Option<u32> {
        let a: [u8; 4] = b.get(off..off.checked_add(4)?)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u32::from_le_bytes(a),
            Endian::Big => u32::from_be_bytes(a),
        })
    }

    #[inline]
    pub fn u64(self, b: &[u8], off: usize) -> Option<u64> {
        let a: [u8; 8] = b.get(off..off.checked_add(8)?)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u64::from_le_bytes(a),
            Endian::Big => u64::from_be_bytes(a),
        })
    }
}

impl Field {
    /// The field's bytes inside record `rec` (the payload that starts with
    /// `common_type`): fixed fields and arrays in place, `__data_loc` /
    /// `__rel_loc` through their locator word. `None` when out of bounds.
    pub fn bytes<'a>(&self, rec: &'a [u8], e: Endian) -> Option<&'a [u8]> {
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

    /// A scalar field as an integer, sign-extended when the field is signed.
    pub fn int(&self, rec: &[u8], e: Endian) -> Option<i64> {
        let size = self.size as usize;
        let v = e.uint(rec, self.offset as usize, size)?;
        if self.signed && size < 8 {
            let shift = 64 - 8 * size as u32;
            Some(((v << shift) as i64) >> shift)
        } else {
            Some(v as i64)
        }
    }
}
