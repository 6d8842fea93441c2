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
