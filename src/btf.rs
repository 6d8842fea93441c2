//! The kernel's BTF (`/sys/kernel/btf/vmlinux`), reduced to what a print fmt
//! needs and the format file does not say: enumerator values (constants the
//! kernel did not export with `TRACE_DEFINE_ENUM`, e.g. `I_DIRTY_SYNC`),
//! `sizeof(struct X)` / `sizeof(union X)` / `sizeof(enum X)`, and the size and
//! sign of typedef names used in casts (`gfp_t`, `loff_t`, …).
//!
//! The blob layout (include/uapi/linux/btf.h): a header `{u16 magic 0xeB9F,
//! u8 version 1, u8 flags, u32 hdr_len, u32 type_off, u32 type_len, u32
//! str_off, u32 str_len}` (offsets from the end of the header, `hdr_len` may be
//! larger than 24), then the type records, then NUL-terminated strings. Each
//! record is `{u32 name_off, u32 info, u32 size_or_type}` (info: vlen in bits
//! 0..16, kind in bits 24..29, kind_flag in bit 31) followed by kind-specific
//! data. Type ids count records from 1 (0 is `void`). The byte order is the
//! one the magic reads correctly in.
//!
//! Split BTF (`/sys/kernel/btf/MODULE`) continues the base's type ids and
//! string offsets; [`Btf::add_split`] indexes a module against its base.
//!
//! Sans-IO: the parser takes bytes; [`KernelConsts`] is what the print-fmt
//! compiler asks. The live reader of kernel variables and the loader for a
//! tracefs tree live in `sys::kvars` (std only).

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use crate::abi::Endian;

/// `0xeB9F` read in the blob's byte order.
pub const MAGIC: u16 = 0xeb9f;

const HDR_MIN: usize = 24;
const REC: usize = 12;

// Kinds (BTF_KIND_*).
const K_INT: u8 = 1;
const K_PTR: u8 = 2;
const K_ARRAY: u8 = 3;
const K_STRUCT: u8 = 4;
const K_UNION: u8 = 5;
const K_ENUM: u8 = 6;
const K_FWD: u8 = 7;
const K_TYPEDEF: u8 = 8;
const K_VOLATILE: u8 = 9;
const K_CONST: u8 = 10;
const K_RESTRICT: u8 = 11;
const K_FUNC: u8 = 12;
const K_FUNC_PROTO: u8 = 13;
const K_VAR: u8 = 14;
const K_DATASEC: u8 = 15;
const K_FLOAT: u8 = 16;
const K_DECL_TAG: u8 = 17;
const K_TYPE_TAG: u8 = 18;
const K_ENUM64: u8 = 19;

/// Why a blob was rejected. Offsets are byte offsets into the blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BtfError {
    /// Shorter than the fixed header.
    Truncated,
    /// The first two bytes are not 0xeB9F in either byte order.
    BadMagic,
    /// Only version 1 exists.
    BadVersion(u8),
    /// `hdr_len` too small, or a section lies outside the blob.
    BadHeader,
    /// A type record (with its trailing data) runs past the type section.
    TruncatedType {
        /// Byte offset of the record in the type section.
        offset: usize,
    },
    /// A kind this parser does not know how to step over.
    UnknownKind {
        /// The `BTF_KIND_*` number (include/uapi/linux/btf.h).
        kind: u8,
        /// Byte offset of the record in the type section.
        offset: usize,
    },
    /// A name offset outside the string section, or a string without NUL.
    BadString {
        /// The name offset, into the string section.
        offset: usize,
    },
    /// A split blob whose byte order differs from its base.
    EndianMismatch,
    /// More than `u32` can address (names blob or type count).
    TooLarge,
}

impl fmt::Display for BtfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            BtfError::Truncated => f.write_str("BTF: shorter than its header"),
            BtfError::BadMagic => f.write_str("BTF: bad magic (not 0xeB9F)"),
            BtfError::BadVersion(v) => write!(f, "BTF: unsupported version {v}"),
            BtfError::BadHeader => f.write_str("BTF: header sections lie outside the blob"),
            BtfError::TruncatedType { offset } => write!(f, "BTF: type record at byte {offset} is truncated"),
            BtfError::UnknownKind { kind, offset } => write!(f, "BTF: unknown kind {kind} at byte {offset}"),
            BtfError::BadString { offset } => write!(f, "BTF: bad string offset (record at byte {offset})"),
            BtfError::EndianMismatch => f.write_str("BTF: split blob and base differ in byte order"),
            BtfError::TooLarge => f.write_str("BTF: too large"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for BtfError {}

/// Size and sign of a scalar-ish type (what a cast to a typedef name means).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeInfo {
    /// `sizeof` in bytes.
    pub size: u32,
    /// Signed integer or enum with signed values (floats count as signed).
    pub signed: bool,
    /// Resolves to a pointer.
    pub pointer: bool,
    /// Resolves to a struct, union or array (not usable as an integer).
    pub aggregate: bool,
}

/// What the print-fmt compiler needs to know about the traced kernel beyond
/// its format files. Every method answers `None` for "unknown": the caller
/// then falls back to `name=value` rendering.
pub trait KernelConsts {
    /// Value of an enumerator (`I_DIRTY_SYNC`). Unsigned 64-bit values above
    /// `i64::MAX` come back as their bit pattern (`as u64` restores them).
    fn enum_value(&self, name: &str) -> Option<i64>;
    /// `sizeof(struct NAME)` (NAME without the `struct` keyword).
    fn sizeof_struct(&self, name: &str) -> Option<u32>;
    /// The current value of the kernel variable NAME (`vmemmap_base`),
    /// `sizeof(long)` bytes wide. Only a live system can answer this.
    fn variable(&self, name: &str) -> Option<u64>;
    /// `sizeof(union NAME)`.
    fn sizeof_union(&self, _name: &str) -> Option<u32> {
        None
    }
    /// `sizeof(enum NAME)` (the enum's storage size).
    fn sizeof_enum(&self, _name: &str) -> Option<u32> {
        None
    }
    /// A typedef name as it appears in casts (`gfp_t`, `loff_t`), resolved
    /// through const/volatile/typedef chains.
    fn typedef(&self, _name: &str) -> Option<TypeInfo> {
        None
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
enum Kind {
    Enumerator = 0,
    Struct = 1,
    Union = 2,
    Enum = 3,
    Typedef = 4,
}

// Entry flags.
const F_SIGNED: u8 = 1;
const F_POINTER: u8 = 2;
const F_AGGREGATE: u8 = 4;
/// Several definitions with different values: the name is not answered.
const F_AMBIGUOUS: u8 = 0x80;

/// One indexed name: 16 bytes.
#[derive(Debug, Clone, Copy)]
struct Entry {
    value: u64,
    name: u32,
    len: u16,
    kind: Kind,
    flags: u8,
}

/// The names of one blob (vmlinux or one module): a names blob and a sorted
/// index of fixed-size entries.
#[derive(Debug, Default, Clone)]
struct Table {
    blob: String,
    entries: Vec<Entry>,
}

impl Table {
    fn name(&self, e: &Entry) -> &str {
        let s = e.name as usize;
        self.blob.get(s..s.saturating_add(e.len as usize)).unwrap_or("")
    }

    fn find(&self, kind: Kind, name: &str) -> Option<&Entry> {
        let i = self.entries.binary_search_by(|e| e.kind.cmp(&kind).then_with(|| self.name(e).cmp(name))).ok()?;
        self.entries.get(i)
    }
}

/// Enumerators, struct/union/enum sizes and typedefs from one or more BTF
/// blobs. Lookups are binary searches; the first blob (vmlinux) wins over
/// modules added later.
#[derive(Debug, Default, Clone)]
pub struct Btf {
    tables: Vec<Table>,
    big_endian: bool,
    /// `sizeof(long)` from the blob's `long int` type, if it has one.
    long_size: Option<u8>,
}

/// Bounds-checked reads in the blob's byte order.
#[derive(Clone, Copy)]
struct BlobReader<'a> {
    b: &'a [u8],
    be: bool,
}

impl<'a> BlobReader<'a> {
    fn u32(&self, off: usize) -> Option<u32> {
        Endian::big_if(self.be).u32(self.b, off)
    }
}

/// One parsed blob, borrowed: its type section, string section and where its
/// type ids and string offsets start (non-zero for split BTF).
#[derive(Clone, Copy)]
struct Blob<'a> {
    types: BlobReader<'a>,
    strs: &'a [u8],
    /// Type id of the first record.
    first_id: u32,
    /// String offset of `strs[0]`.
    str_base: u32,
}

fn header(raw: &[u8]) -> Result<(BlobReader<'_>, &[u8]), BtfError> {
    let m = raw.get(..2).ok_or(BtfError::Truncated)?;
    let be = match (m[0], m[1]) {
        (0x9f, 0xeb) => false,
        (0xeb, 0x9f) => true,
        _ => return Err(BtfError::BadMagic),
    };
    if raw.len() < HDR_MIN {
        return Err(BtfError::Truncated);
    }
    let r = BlobReader { b: raw, be };
    let version = raw.get(2).copied().ok_or(BtfError::Truncated)?;
    if version != 1 {
        return Err(BtfError::BadVersion(version));
    }
    let field = |off: usize| r.u32(off).map(|v| v as usize).ok_or(BtfError::Truncated);
    let hdr_len = field(4)?;
    let (type_off, type_len, str_off, str_len) = (field(8)?, field(12)?, field(16)?, field(20)?);
    if hdr_len < HDR_MIN {
        return Err(BtfError::BadHeader);
    }
    let sect = |off: usize, len: usize| -> Result<&[u8], BtfError> {
        let start = hdr_len.checked_add(off).ok_or(BtfError::BadHeader)?;
        let end = start.checked_add(len).ok_or(BtfError::BadHeader)?;
        raw.get(start..end).ok_or(BtfError::BadHeader)
    };
    let types = sect(type_off, type_len)?;
    let strs = sect(str_off, str_len)?;
    Ok((BlobReader { b: types, be }, strs))
}

/// One type record.
#[derive(Clone, Copy)]
struct Rec {
    off: usize,
    name_off: u32,
    kind: u8,
    kflag: bool,
    vlen: usize,
    size_or_type: u32,
    /// Offset of the trailing data.
    tail: usize,
}

/// Bytes of kind-specific data after the 12-byte record.
fn tail_len(kind: u8, vlen: usize) -> Option<usize> {
    match kind {
        K_INT | K_VAR | K_DECL_TAG => Some(4),
        K_ARRAY => Some(12),
        K_STRUCT | K_UNION | K_DATASEC | K_ENUM64 => vlen.checked_mul(12),
        K_ENUM | K_FUNC_PROTO => vlen.checked_mul(8),
        K_PTR | K_FWD | K_TYPEDEF | K_VOLATILE | K_CONST | K_RESTRICT | K_FUNC | K_FLOAT | K_TYPE_TAG => Some(0),
        _ => None,
    }
}

/// Walk the records of a type section; `f` sees each one.
fn walk(t: BlobReader<'_>, mut f: impl FnMut(&Rec) -> Result<(), BtfError>) -> Result<(), BtfError> {
    let mut off = 0usize;
    while off < t.b.len() {
        let bad = BtfError::TruncatedType { offset: off };
        let (Some(name_off), Some(info), Some(size_or_type)) = (t.u32(off), t.u32(off + 4), t.u32(off + 8)) else {
            return Err(bad);
        };
        let kind = ((info >> 24) & 0x1f) as u8;
        let vlen = (info & 0xffff) as usize;
        let tail = tail_len(kind, vlen).ok_or(BtfError::UnknownKind { kind, offset: off })?;
        let end = off.checked_add(REC).and_then(|x| x.checked_add(tail)).ok_or(bad)?;
        if end > t.b.len() {
            return Err(bad);
        }
        f(&Rec { off, name_off, kind, kflag: info >> 31 != 0, vlen, size_or_type, tail: off + REC })?;
        off = end;
    }
    Ok(())
}

/// Strings of a blob and, for split BTF, of its base.
#[derive(Clone, Copy)]
struct Strs<'a> {
    base: Option<&'a [u8]>,
    own: &'a [u8],
    own_start: u32,
}

impl<'a> Strs<'a> {
    /// The string at `off`; `None` when out of range or not NUL-terminated.
    fn get(&self, off: u32) -> Option<&'a [u8]> {
        let (s, o) = match off.checked_sub(self.own_start) {
            Some(o) => (self.own, o as usize),
            None => (self.base?, off as usize),
        };
        let tail = s.get(o..)?;
        let n = tail.iter().position(|&c| c == 0)?;
        tail.get(..n)
    }
}

/// The record offsets of every type, by id, across base and split.
struct Ids<'a, 'o> {
    blobs: [Option<(Blob<'a>, &'o [u32])>; 2],
}

impl<'a> Ids<'a, '_> {
    fn rec(&self, id: u32) -> Option<(BlobReader<'a>, usize)> {
        for (b, offs) in self.blobs.iter().flatten() {
            if let Some(i) = id.checked_sub(b.first_id) {
                if let Some(&o) = offs.get(i as usize) {
                    return Some((b.types, o as usize));
                }
            }
        }
        None
    }

    /// Size/sign of type `id`, following modifiers and typedefs.
    fn resolve(&self, mut id: u32, long_size: Option<u8>) -> Option<TypeInfo> {
        let mut mult: u32 = 1;
        for _ in 0..32 {
            let (t, off) = self.rec(id)?;
            let info = t.u32(off + 4)?;
            let kind = ((info >> 24) & 0x1f) as u8;
            let kflag = info >> 31 != 0;
            let st = t.u32(off + 8)?;
            let mk = |size: u32, signed: bool, pointer: bool, aggregate: bool| {
                Some(TypeInfo { size: size.checked_mul(mult)?, signed, pointer, aggregate: aggregate || mult != 1 })
            };
            match kind {
                K_INT => {
                    let enc = t.u32(off + REC)? >> 24;
                    return mk(st, enc & 1 != 0, false, false);
                }
                K_ENUM | K_ENUM64 => return mk(st, kflag, false, false),
                K_FLOAT => return mk(st, true, false, false),
                K_STRUCT | K_UNION => return mk(st, false, false, true),
                K_PTR => return mk(u32::from(long_size?), false, true, false),
                K_TYPEDEF | K_CONST | K_VOLATILE | K_RESTRICT | K_TYPE_TAG => id = st,
                K_ARRAY => {
                    id = t.u32(off + REC)?;
                    mult = mult.checked_mul(t.u32(off + REC + 8)?)?;
                }
                _ => return None,
            }
        }
        None
    }
}

/// Entries of one blob before they are sorted and their names copied.
struct Pending<'a> {
    /// (kind, name, value, flags)
    items: Vec<(Kind, &'a [u8], u64, u8)>,
    /// (name, type id)
    typedefs: Vec<(&'a [u8], u32)>,
}

impl Btf {
    /// Parse a complete (base) BTF blob such as /sys/kernel/btf/vmlinux.
    pub fn parse(raw: &[u8]) -> Result<Btf, BtfError> {
        Self::parse_filtered(raw, &|_| true)
    }

    /// Like [`Btf::parse`], but index only the names `keep` accepts (e.g.
    /// the identifiers that occur in the print fmts at hand): the same walk
    /// and checks, a much smaller table.
    pub fn parse_filtered(raw: &[u8], keep: &dyn Fn(&str) -> bool) -> Result<Btf, BtfError> {
        let (types, strs) = header(raw)?;
        let blob = Blob { types, strs, first_id: 1, str_base: 0 };
        let mut btf = Btf { tables: Vec::new(), big_endian: types.be, long_size: None };
        let table = btf.index(None, blob, keep)?;
        btf.tables.push(table);
        Ok(btf)
    }

    /// Index a split blob (a module's /sys/kernel/btf/MODULE) whose base is
    /// `base_raw` (the vmlinux blob this `Btf` was parsed from). Names already
    /// known from earlier blobs keep their first answer.
    pub fn add_split(&mut self, base_raw: &[u8], split_raw: &[u8]) -> Result<(), BtfError> {
        self.add_splits(base_raw, &[split_raw]).pop().unwrap_or(Ok(()))
    }

    /// [`Btf::add_split`] for several modules, walking the base once. One
    /// result per split blob; a bad base fails them all.
    pub fn add_splits(&mut self, base_raw: &[u8], splits: &[&[u8]]) -> Vec<Result<(), BtfError>> {
        let prep = (|| {
            let (btypes, bstrs) = header(base_raw)?;
            if !self.tables.is_empty() && self.big_endian != btypes.be {
                return Err(BtfError::EndianMismatch);
            }
            let base_strs = Strs { base: None, own: bstrs, own_start: 0 };
            let mut offs = Vec::with_capacity(btypes.b.len() / 40);
            let mut long_size = self.long_size;
            walk(btypes, |r| {
                offs.push(u32::try_from(r.off).map_err(|_| BtfError::TooLarge)?);
                if long_size.is_none() && r.kind == K_INT && base_strs.get(r.name_off) == Some(b"long int") {
                    long_size = u8::try_from(r.size_or_type).ok();
                }
                Ok(())
            })?;
            let first_id = u32::try_from(offs.len()).ok().and_then(|n| n.checked_add(1)).ok_or(BtfError::TooLarge)?;
            let str_base = u32::try_from(bstrs.len()).map_err(|_| BtfError::TooLarge)?;
            Ok((Blob { types: btypes, strs: bstrs, first_id: 1, str_base: 0 }, offs, long_size, first_id, str_base))
        })();
        let (base, offs, long_size, first_id, str_base) = match prep {
            Ok(p) => p,
            Err(e) => return splits.iter().map(|_| Err(e)).collect(),
        };
        if self.tables.is_empty() {
            self.big_endian = base.types.be;
        }
        self.long_size = self.long_size.or(long_size);
        splits
            .iter()
            .map(|raw| {
                let (stypes, sstrs) = header(raw)?;
                if stypes.be != base.types.be {
                    return Err(BtfError::EndianMismatch);
                }
                let split = Blob { types: stypes, strs: sstrs, first_id, str_base };
                let table = self.index(Some((base, &offs)), split, &|_| true)?;
                self.tables.push(table);
                Ok(())
            })
            .collect()
    }

    /// Walk `own` (with `base` and its record offsets for id/name
    /// resolution) into a sorted table.
    fn index(
        &mut self,
        base: Option<(Blob<'_>, &[u32])>,
        own: Blob<'_>,
        keep: &dyn Fn(&str) -> bool,
    ) -> Result<Table, BtfError> {
        let strs = Strs { base: base.map(|b| b.0.strs), own: own.strs, own_start: own.str_base };
        let mut long_size = self.long_size;
        let mut offs = Vec::with_capacity(own.types.b.len() / 40);
        let mut p = Pending { items: Vec::new(), typedefs: Vec::new() };
        let t = own.types;
        walk(t, |r| {
            offs.push(u32::try_from(r.off).map_err(|_| BtfError::TooLarge)?);
            let name = strs.get(r.name_off).ok_or(BtfError::BadString { offset: r.off })?;
            match r.kind {
                K_INT if name == b"long int" && long_size.is_none() => long_size = u8::try_from(r.size_or_type).ok(),
                K_ENUM | K_ENUM64 => {
                    let wide = r.kind == K_ENUM64;
                    let step = if wide { 12 } else { 8 };
                    for i in 0..r.vlen {
                        let at = r.tail + i * step;
                        let bad = BtfError::TruncatedType { offset: r.off };
                        let n = t.u32(at).ok_or(bad)?;
                        let lo = t.u32(at + 4).ok_or(bad)?;
                        let v = if wide {
                            u64::from(lo) | u64::from(t.u32(at + 8).ok_or(bad)?) << 32
                        } else if r.kflag {
                            lo as i32 as i64 as u64
                        } else {
                            u64::from(lo)
                        };
                        let n = strs.get(n).ok_or(BtfError::BadString { offset: r.off })?;
                        if !n.is_empty() {
                            p.items.push((Kind::Enumerator, n, v, if r.kflag { F_SIGNED } else { 0 }));
                        }
                    }
                    if !name.is_empty() {
                        p.items.push((Kind::Enum, name, u64::from(r.size_or_type), 0));
                    }
                }
                K_STRUCT | K_UNION if !name.is_empty() => {
                    let k = if r.kind == K_STRUCT { Kind::Struct } else { Kind::Union };
                    p.items.push((k, name, u64::from(r.size_or_type), F_AGGREGATE));
                }
                K_TYPEDEF if !name.is_empty() => p.typedefs.push((name, r.size_or_type)),
                _ => {}
            }
            Ok(())
        })?;
        let ids = Ids { blobs: [base, Some((own, &offs))] };
        self.long_size = long_size;
        for &(name, ty) in &p.typedefs {
            if let Some(ti) = ids.resolve(ty, long_size) {
                let mut fl = 0;
                if ti.signed {
                    fl |= F_SIGNED;
                }
                if ti.pointer {
                    fl |= F_POINTER;
                }
                if ti.aggregate {
                    fl |= F_AGGREGATE;
                }
                p.items.push((Kind::Typedef, name, u64::from(ti.size), fl));
            }
        }
        build_table(p.items, keep)
    }

    /// Number of indexed names (enumerators, structs, unions, enums, typedefs).
    pub fn len(&self) -> usize {
        self.tables.iter().map(|t| t.entries.len()).sum()
    }

    /// No name indexed (a blob of anonymous types only).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes held by the index.
    pub fn heap_bytes(&self) -> usize {
        self.tables.iter().map(|t| t.blob.capacity() + t.entries.capacity() * core::mem::size_of::<Entry>()).sum()
    }

    /// The blob was big endian.
    pub fn big_endian(&self) -> bool {
        self.big_endian
    }

    /// `sizeof(long)` of the kernel the blob describes (from `long int`).
    pub fn long_size(&self) -> Option<u8> {
        self.long_size
    }

    fn find(&self, kind: Kind, name: &str) -> Option<&Entry> {
        let e = self.tables.iter().find_map(|t| t.find(kind, name))?;
        (e.flags & F_AMBIGUOUS == 0).then_some(e)
    }

    /// Enumerator value; see [`KernelConsts::enum_value`]. `None` when unknown
    /// or defined more than once with different values.
    pub fn enum_value(&self, name: &str) -> Option<i64> {
        self.find(Kind::Enumerator, name).map(|e| e.value as i64)
    }

    /// `sizeof(struct NAME)`.
    pub fn struct_size(&self, name: &str) -> Option<u32> {
        self.find(Kind::Struct, name).map(|e| e.value as u32)
    }

    /// `sizeof(union NAME)`.
    pub fn union_size(&self, name: &str) -> Option<u32> {
        self.find(Kind::Union, name).map(|e| e.value as u32)
    }

    /// `sizeof(enum NAME)`.
    pub fn enum_size(&self, name: &str) -> Option<u32> {
        self.find(Kind::Enum, name).map(|e| e.value as u32)
    }

    /// A typedef resolved to its size and sign.
    pub fn typedef(&self, name: &str) -> Option<TypeInfo> {
        self.find(Kind::Typedef, name).map(|e| TypeInfo {
            size: e.value as u32,
            signed: e.flags & F_SIGNED != 0,
            pointer: e.flags & F_POINTER != 0,
            aggregate: e.flags & F_AGGREGATE != 0,
        })
    }
}

/// Sort by (kind, name), merge duplicates (same value: one entry; different
/// values: marked ambiguous), and copy each distinct name once.
fn build_table(mut items: Vec<(Kind, &[u8], u64, u8)>, keep: &dyn Fn(&str) -> bool) -> Result<Table, BtfError> {
    items.retain(|it| core::str::from_utf8(it.1).is_ok_and(keep));
    items.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)).then(a.2.cmp(&b.2)));
    let mut t = Table { blob: String::new(), entries: Vec::with_capacity(items.len()) };
    let mut last: Option<(Kind, &[u8], u32)> = None; // kind, name, blob offset of that name
    for (kind, n, value, flags) in items {
        // Identifiers only: C names are ASCII.
        let Ok(s) = core::str::from_utf8(n) else { continue };
        let Ok(len) = u16::try_from(n.len()) else { continue };
        match last {
            Some((k, ln, _)) if k == kind && ln == n => {
                if let Some(prev) = t.entries.last_mut() {
                    if prev.value != value || prev.flags & !F_AMBIGUOUS != flags {
                        prev.flags |= F_AMBIGUOUS;
                    }
                }
                continue;
            }
            Some((_, ln, at)) if ln == n => {
                t.entries.push(Entry { value, name: at, len, kind, flags });
            }
            _ => {
                let at = u32::try_from(t.blob.len()).map_err(|_| BtfError::TooLarge)?;
                t.blob.push_str(s);
                t.entries.push(Entry { value, name: at, len, kind, flags });
            }
        }
        let at = t.entries.last().map_or(0, |e| e.name);
        last = Some((kind, n, at));
    }
    t.blob.shrink_to_fit();
    t.entries.shrink_to_fit();
    Ok(t)
}

/// A source of kernel variable values (the live system: `sys::kvars::LiveVars`,
/// std only).
pub trait VarReader {
    /// The value of the kernel variable `name` (a `u64` or pointer), or
    /// `None` when it cannot be read (no such symbol, no `/proc/kcore`).
    fn read_var(&self, name: &str) -> Option<u64>;
}

/// [`KernelConsts`] from BTF, values of variables known in advance, and an
/// optional reader of live variables.
#[derive(Default)]
pub struct BtfInfo {
    pub(crate) btf: Option<Btf>,
    /// Variables with known values (checked before the reader).
    pub known: Vec<(String, u64)>,
    /// Asked for variables not in `known`: the live kernel's memory, when
    /// trbox runs on the traced machine; `None` for a recorded file.
    pub reader: Option<Box<dyn VarReader + Send + Sync>>,
}

impl fmt::Debug for BtfInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BtfInfo")
            .field("btf", &self.btf)
            .field("known", &self.known)
            .field("reader", &self.reader.is_some())
            .finish()
    }
}

impl BtfInfo {
    /// Constants from `btf` (a kernel's `/sys/kernel/btf/vmlinux`), no
    /// variables known yet.
    pub fn from_btf(btf: Btf) -> Self {
        BtfInfo { btf: Some(btf), ..Default::default() }
    }

    /// Record a variable's value (e.g. one learned by
    /// [`vmemmap_base_from_trace`]); it takes precedence over the reader.
    pub fn set_variable(&mut self, name: &str, value: u64) {
        match self.known.iter_mut().find(|(n, _)| n == name) {
            Some(e) => e.1 = value,
            None => self.known.push((name.into(), value)),
        }
    }
}

impl KernelConsts for Btf {
    fn enum_value(&self, name: &str) -> Option<i64> {
        Btf::enum_value(self, name)
    }
    fn sizeof_struct(&self, name: &str) -> Option<u32> {
        self.struct_size(name)
    }
    fn variable(&self, _name: &str) -> Option<u64> {
        None
    }
    fn sizeof_union(&self, name: &str) -> Option<u32> {
        self.union_size(name)
    }
    fn sizeof_enum(&self, name: &str) -> Option<u32> {
        self.enum_size(name)
    }
    fn typedef(&self, name: &str) -> Option<TypeInfo> {
        Btf::typedef(self, name)
    }
}

impl KernelConsts for BtfInfo {
    fn enum_value(&self, name: &str) -> Option<i64> {
        self.btf.as_ref()?.enum_value(name)
    }
    fn sizeof_struct(&self, name: &str) -> Option<u32> {
        self.btf.as_ref()?.struct_size(name)
    }
    fn variable(&self, name: &str) -> Option<u64> {
        if let Some(&(_, v)) = self.known.iter().find(|(n, _)| n == name) {
            return Some(v);
        }
        self.reader.as_ref()?.read_var(name)
    }
    fn sizeof_union(&self, name: &str) -> Option<u32> {
        self.btf.as_ref()?.union_size(name)
    }
    fn sizeof_enum(&self, name: &str) -> Option<u32> {
        self.btf.as_ref()?.enum_size(name)
    }
    fn typedef(&self, name: &str) -> Option<TypeInfo> {
        self.btf.as_ref()?.typedef(name)
    }
}

/// Learn x86_64's `vmemmap_base` from the kernel's own text of page events
/// (`mm_page_alloc: page=ffffea0004a1b2c0 pfn=0x1286cb …`, `0x` optional;
/// needs `options/hash-ptr` 0): `page = vmemmap_base + pfn *
/// sizeof(struct page)`. Every line with both values must agree, else `None`.
pub fn vmemmap_base_from_trace(text: &str, struct_page_size: u32) -> Option<u64> {
    fn hex(s: &str) -> Option<(u64, &str)> {
        let s = s.strip_prefix("0x").unwrap_or(s);
        let n = s.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(s.len());
        let v = u64::from_str_radix(s.get(..n)?, 16).ok()?;
        Some((v, s.get(n..)?))
    }
    let mut found: Option<u64> = None;
    for line in text.lines() {
        let Some(i) = line.find(" page=") else { continue };
        let Some((page, rest)) = line.get(i + 6..).and_then(hex) else { continue };
        let Some(rest) = rest.strip_prefix(" pfn=") else { continue };
        let Some((pfn, _)) = hex(rest) else { continue };
        if page == 0 {
            continue;
        }
        let base = page.wrapping_sub(pfn.wrapping_mul(u64::from(struct_page_size)));
        match found {
            None => found = Some(base),
            Some(b) if b == base => {}
            Some(_) => return None,
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    /// Builds BTF blobs by hand.
    struct B {
        be: bool,
        types: Vec<u8>,
        strs: Vec<u8>,
        n: u32,
    }

    impl B {
        fn new(be: bool) -> B {
            B { be, types: Vec::new(), strs: vec![0], n: 0 }
        }
        fn s(&mut self, name: &str) -> u32 {
            if name.is_empty() {
                return 0;
            }
            let o = self.strs.len() as u32;
            self.strs.extend_from_slice(name.as_bytes());
            self.strs.push(0);
            o
        }
        fn w(&mut self, v: u32) {
            let b = if self.be { v.to_be_bytes() } else { v.to_le_bytes() };
            self.types.extend_from_slice(&b);
        }
        /// A record; returns its type id.
        fn t(&mut self, name: &str, kind: u8, vlen: u32, kflag: bool, st: u32) -> u32 {
            let n = self.s(name);
            self.w(n);
            self.w(vlen | u32::from(kind) << 24 | u32::from(kflag) << 31);
            self.w(st);
            self.n += 1;
            self.n
        }
        fn blob(&self, extra_hdr: u32) -> Vec<u8> {
            let mut o = Vec::new();
            let w =
                |o: &mut Vec<u8>, v: u32| o.extend_from_slice(&if self.be { v.to_be_bytes() } else { v.to_le_bytes() });
            let m = if self.be { MAGIC.to_be_bytes() } else { MAGIC.to_le_bytes() };
            o.extend_from_slice(&m);
            o.push(1);
            o.push(0);
            w(&mut o, 24 + extra_hdr);
            w(&mut o, 0);
            w(&mut o, self.types.len() as u32);
            w(&mut o, self.types.len() as u32);
            w(&mut o, self.strs.len() as u32);
            o.extend(core::iter::repeat(0).take(extra_hdr as usize));
            o.extend_from_slice(&self.types);
            o.extend_from_slice(&self.strs);
            o
        }
    }

    /// A blob with every kind in it.
    fn every_kind(be: bool) -> B {
        let mut b = B::new(be);
        let int = b.t("int", K_INT, 0, false, 4);
        b.w(1 << 24 | 32); // signed, 32 bits
        let long = b.t("long int", K_INT, 0, false, 8);
        b.w(1 << 24 | 64);
        let uchar = b.t("unsigned char", K_INT, 0, false, 1);
        b.w(8);
        let ptr = b.t("", K_PTR, 0, false, uchar);
        let arr = b.t("", K_ARRAY, 0, false, 0);
        b.w(uchar);
        b.w(int);
        b.w(16);
        let st = b.t("page", K_STRUCT, 2, false, 64);
        for (n, ty, off) in [("flags", long, 0), ("name", arr, 64)] {
            let n = b.s(n);
            b.w(n);
            b.w(ty);
            b.w(off);
        }
        b.t("u", K_UNION, 1, true, 8);
        let n = b.s("x");
        b.w(n);
        b.w(long);
        b.w(0);
        // Unsigned enum (kflag 0) with a high value; signed one with -1.
        b.t("inode_state_flags_t", K_ENUM, 3, false, 4);
        for (n, v) in [("I_NEW", 1u32), ("I_DIRTY_SYNC", 16), ("I_HIGH", 0x8000_0000)] {
            let n = b.s(n);
            b.w(n);
            b.w(v);
        }
        b.t("", K_ENUM, 1, true, 4);
        let n = b.s("NEG_ONE");
        b.w(n);
        b.w(u32::MAX);
        b.t("fwd", K_FWD, 0, false, 0);
        let td = b.t("gfp_t", K_TYPEDEF, 0, false, int);
        let vol = b.t("", K_VOLATILE, 0, false, long);
        let cst = b.t("", K_CONST, 0, false, vol);
        b.t("loff_t", K_TYPEDEF, 0, false, cst);
        let rs = b.t("", K_RESTRICT, 0, false, ptr);
        b.t("ptr_t", K_TYPEDEF, 0, false, rs);
        b.t("name_t", K_TYPEDEF, 0, false, arr);
        b.t("page_t", K_TYPEDEF, 0, false, st);
        b.t("gfp2_t", K_TYPEDEF, 0, false, td);
        let proto = b.t("", K_FUNC_PROTO, 2, false, int);
        for (n, ty) in [("a", int), ("", 0)] {
            let n = b.s(n);
            b.w(n);
            b.w(ty);
        }
        let func = b.t("f", K_FUNC, 0, false, proto);
        let var = b.t("jiffies", K_VAR, 0, false, long);
        b.w(1);
        b.t(".data", K_DATASEC, 2, false, 16);
        for off in [0, 8] {
            b.w(var);
            b.w(off);
            b.w(8);
        }
        let fl = b.t("double", K_FLOAT, 0, false, 8);
        b.t("tag", K_DECL_TAG, 0, false, func);
        b.w(u32::MAX);
        let tt = b.t("user", K_TYPE_TAG, 0, false, int);
        b.t("tagged_t", K_TYPEDEF, 0, false, tt);
        b.t("dbl_t", K_TYPEDEF, 0, false, fl);
        b.t("big", K_ENUM64, 2, false, 8);
        for (n, lo, hi) in [("BIG_U", 1u32, 0x8000_0000u32), ("BIG_2", 2, 1)] {
            let n = b.s(n);
            b.w(n);
            b.w(lo);
            b.w(hi);
        }
        b.t("sbig", K_ENUM64, 1, true, 8);
        let n = b.s("BIG_NEG");
        b.w(n);
        b.w(0xffff_fffe);
        b.w(0xffff_ffff);
        b
    }

    fn check_every_kind(btf: &Btf) {
        assert_eq!(btf.long_size(), Some(8));
        assert_eq!(btf.enum_value("I_NEW"), Some(1));
        assert_eq!(btf.enum_value("I_DIRTY_SYNC"), Some(16));
        assert_eq!(btf.enum_value("I_HIGH"), Some(0x8000_0000));
        assert_eq!(btf.enum_value("NEG_ONE"), Some(-1));
        assert_eq!(btf.enum_value("BIG_U").map(|v| v as u64), Some(0x8000_0000_0000_0001));
        assert_eq!(btf.enum_value("BIG_2"), Some(0x1_0000_0002));
        assert_eq!(btf.enum_value("BIG_NEG"), Some(-2));
        assert_eq!(btf.enum_value("I_NOPE"), None);
        assert_eq!(btf.enum_value("page"), None);
        assert_eq!(btf.struct_size("page"), Some(64));
        assert_eq!(btf.struct_size("u"), None);
        assert_eq!(btf.union_size("u"), Some(8));
        assert_eq!(btf.struct_size("fwd"), None);
        assert_eq!(btf.enum_size("inode_state_flags_t"), Some(4));
        assert_eq!(btf.enum_size("big"), Some(8));
        let ti = |size, signed, pointer, aggregate| Some(TypeInfo { size, signed, pointer, aggregate });
        assert_eq!(btf.typedef("gfp_t"), ti(4, true, false, false));
        assert_eq!(btf.typedef("gfp2_t"), ti(4, true, false, false));
        assert_eq!(btf.typedef("loff_t"), ti(8, true, false, false));
        assert_eq!(btf.typedef("ptr_t"), ti(8, false, true, false));
        assert_eq!(btf.typedef("name_t"), ti(16, false, false, true));
        assert_eq!(btf.typedef("page_t"), ti(64, false, false, true));
        assert_eq!(btf.typedef("tagged_t"), ti(4, true, false, false));
        assert_eq!(btf.typedef("dbl_t"), ti(8, true, false, false));
        assert_eq!(btf.typedef("int"), None);
        // KernelConsts through both implementations.
        let k: &dyn KernelConsts = btf;
        assert_eq!(k.sizeof_struct("page"), Some(64));
        assert_eq!(k.variable("jiffies"), None);
        let mut info = BtfInfo::from_btf(btf.clone());
        assert_eq!(KernelConsts::enum_value(&info, "I_DIRTY_SYNC"), Some(16));
        assert_eq!(info.sizeof_union("u"), Some(8));
        info.set_variable("vmemmap_base", 0xffffea0000000000);
        info.set_variable("vmemmap_base", 0xffffea8000000000);
        assert_eq!(info.variable("vmemmap_base"), Some(0xffffea8000000000));
        assert_eq!(info.variable("jiffies"), None);
    }

    #[test]
    fn every_kind_both_endians() {
        for be in [false, true] {
            let b = every_kind(be);
            for extra in [0, 8] {
                let btf = Btf::parse(&b.blob(extra)).unwrap();
                assert_eq!(btf.big_endian(), be);
                check_every_kind(&btf);
            }
        }
    }

    #[test]
    fn filtered() {
        let raw = every_kind(false).blob(0);
        let all = Btf::parse(&raw).unwrap();
        let some = Btf::parse_filtered(&raw, &|n| n.starts_with("I_") || n == "page" || n == "loff_t").unwrap();
        assert_eq!(some.enum_value("I_DIRTY_SYNC"), Some(16));
        assert_eq!(some.struct_size("page"), Some(64));
        assert_eq!(some.typedef("loff_t").map(|t| t.size), Some(8));
        assert_eq!(some.enum_value("NEG_ONE"), None);
        assert_eq!(some.len(), 5);
        assert!(some.heap_bytes() < all.heap_bytes());
        assert_eq!(Btf::parse_filtered(&raw[..40], &|_| true).unwrap_err(), BtfError::BadHeader);
    }

    #[test]
    fn empty_and_header_errors() {
        let b = B::new(false);
        let btf = Btf::parse(&b.blob(0)).unwrap();
        assert!(btf.is_empty());
        assert_eq!(btf.enum_value("X"), None);
        assert_eq!(Btf::parse(&[]).unwrap_err(), BtfError::Truncated);
        assert_eq!(Btf::parse(&[0x9f]).unwrap_err(), BtfError::Truncated);
        assert_eq!(Btf::parse(&[0x9f, 0xeb, 1]).unwrap_err(), BtfError::Truncated);
        assert_eq!(Btf::parse(&[0x12, 0x34, 1, 0]).unwrap_err(), BtfError::BadMagic);
        let mut v = every_kind(false).blob(0);
        v[2] = 2;
        assert_eq!(Btf::parse(&v).unwrap_err(), BtfError::BadVersion(2));
        let mut v = every_kind(false).blob(0);
        v[4] = 20; // hdr_len below 24
        assert_eq!(Btf::parse(&v).unwrap_err(), BtfError::BadHeader);
        let mut v = every_kind(true).blob(0);
        v[23] = v[23].wrapping_add(1); // str_len one too long
        assert_eq!(Btf::parse(&v).unwrap_err(), BtfError::BadHeader);
        let mut v = every_kind(false).blob(0);
        v[8..12].copy_from_slice(&u32::MAX.to_le_bytes()); // type_off overflows
        assert_eq!(Btf::parse(&v).unwrap_err(), BtfError::BadHeader);
    }

    #[test]
    fn truncated_everywhere_is_an_error() {
        for be in [false, true] {
            let full = every_kind(be).blob(0);
            for n in 0..full.len() {
                assert!(Btf::parse(&full[..n]).is_err(), "prefix {n} parsed");
            }
            // Shrinking type_len cuts a record: an error, not a short table.
            let b = every_kind(be);
            let tl = b.types.len() as u32;
            for cut in [1u32, 4, 11, 13] {
                let mut v = b.blob(0);
                let new = if be { (tl - cut).to_be_bytes() } else { (tl - cut).to_le_bytes() };
                v[12..16].copy_from_slice(&new);
                assert!(matches!(Btf::parse(&v), Err(BtfError::TruncatedType { .. })), "cut {cut}");
            }
        }
    }

    #[test]
    fn corrupt_records() {
        // Unknown kind.
        let mut b = B::new(false);
        b.t("x", 20, 0, false, 0);
        assert_eq!(Btf::parse(&b.blob(0)).unwrap_err(), BtfError::UnknownKind { kind: 20, offset: 0 });
        let mut b = B::new(false);
        b.t("x", 0, 0, false, 0);
        assert!(matches!(Btf::parse(&b.blob(0)), Err(BtfError::UnknownKind { kind: 0, .. })));
        // Name offset outside the strings.
        let mut b = B::new(true);
        b.w(9999);
        b.w(u32::from(K_STRUCT) << 24);
        b.w(4);
        assert_eq!(Btf::parse(&b.blob(0)).unwrap_err(), BtfError::BadString { offset: 0 });
        // Enumerator name outside the strings.
        let mut b = B::new(false);
        b.t("e", K_ENUM, 1, false, 4);
        b.w(9999);
        b.w(1);
        assert_eq!(Btf::parse(&b.blob(0)).unwrap_err(), BtfError::BadString { offset: 0 });
        // String section without a final NUL.
        let mut b = B::new(false);
        b.t("abc", K_STRUCT, 0, false, 4);
        b.strs.pop();
        assert!(matches!(Btf::parse(&b.blob(0)), Err(BtfError::BadString { .. })));
        // vlen larger than the section.
        let mut b = B::new(false);
        b.t("e", K_ENUM, 0xffff, false, 4);
        assert!(matches!(Btf::parse(&b.blob(0)), Err(BtfError::TruncatedType { offset: 0 })));
        // A typedef cycle and a typedef to a missing id resolve to nothing.
        let mut b = B::new(false);
        b.t("a_t", K_TYPEDEF, 0, false, 2);
        b.t("b_t", K_TYPEDEF, 0, false, 1);
        b.t("c_t", K_TYPEDEF, 0, false, 77);
        b.t("v_t", K_TYPEDEF, 0, false, 0);
        let int = b.t("int", K_INT, 0, false, 4);
        b.w(1 << 24 | 32);
        // Arrays whose size overflows u32.
        let a = b.t("", K_ARRAY, 0, false, 0);
        b.w(int);
        b.w(int);
        b.w(u32::MAX);
        b.t("huge_t", K_TYPEDEF, 0, false, a);
        // A pointer without a `long int` to size it.
        let p = b.t("", K_PTR, 0, false, int);
        b.t("p_t", K_TYPEDEF, 0, false, p);
        let btf = Btf::parse(&b.blob(0)).unwrap();
        for n in ["a_t", "b_t", "c_t", "v_t", "huge_t", "p_t"] {
            assert_eq!(btf.typedef(n), None, "{n}");
        }
    }

    #[test]
    fn duplicates() {
        let mut b = B::new(false);
        for (e, v) in [("e1", 1u32), ("e2", 2), ("e3", 1)] {
            b.t(e, K_ENUM, 2, false, 4);
            for (n, v) in [("SAME", 5u32), ("DIFF", v)] {
                let n = b.s(n);
                b.w(n);
                b.w(v);
            }
        }
        b.t("s", K_STRUCT, 0, false, 8);
        b.t("s", K_STRUCT, 0, false, 8);
        b.t("t", K_STRUCT, 0, false, 8);
        b.t("t", K_STRUCT, 0, false, 16);
        b.t("t", K_UNION, 0, false, 4);
        let btf = Btf::parse(&b.blob(0)).unwrap();
        assert_eq!(btf.enum_value("SAME"), Some(5));
        assert_eq!(btf.enum_value("DIFF"), None);
        assert_eq!(btf.struct_size("s"), Some(8));
        assert_eq!(btf.struct_size("t"), None);
        assert_eq!(btf.union_size("t"), Some(4));
    }

    #[test]
    fn split_btf() {
        for be in [false, true] {
            let base = every_kind(be);
            let base_raw = base.blob(0);
            let base_ids = base.n;
            // Split strings continue after the base's; reuse "page" (base
            // string) as an enumerator name to test base string lookups.
            let mut m = B::new(be);
            m.strs.clear();
            let page_off = {
                let pos = base.strs.windows(5).position(|w| w == b"page\0").unwrap();
                pos as u32
            };
            let st = |m: &mut B, s: &str| base.strs.len() as u32 + m.s(s);
            let n = st(&mut m, "mod_enum");
            m.w(n);
            m.w(u32::from(K_ENUM) << 24 | 2);
            m.w(4);
            m.w(page_off);
            m.w(7);
            let n = st(&mut m, "MOD_X");
            m.w(n);
            m.w(3);
            // typedef in the module to the base's `long int` (id 2).
            let n = st(&mut m, "mod_long_t");
            m.w(n);
            m.w(u32::from(K_TYPEDEF) << 24);
            m.w(2);
            // typedef to the module's own first type (the enum).
            let n = st(&mut m, "mod_enum_t");
            m.w(n);
            m.w(u32::from(K_TYPEDEF) << 24);
            m.w(base_ids + 1);
            let n = st(&mut m, "I_NEW"); // shadowed by vmlinux
            m.w(n);
            m.w(u32::from(K_ENUM) << 24 | 1);
            m.w(4);
            m.w(n);
            m.w(99);
            let split_raw = m.blob(0);
            let mut btf = Btf::parse(&base_raw).unwrap();
            btf.add_split(&base_raw, &split_raw).unwrap();
            assert_eq!(btf.struct_size("page"), Some(64));
            assert_eq!(btf.typedef("loff_t").map(|t| (t.size, t.signed)), Some((8, true)));
            assert_eq!(btf.enum_value("BIG_NEG"), Some(-2));
            assert_eq!(btf.enum_value("page"), Some(7));
            assert_eq!(btf.enum_value("MOD_X"), Some(3));
            assert_eq!(btf.enum_value("I_NEW"), Some(1));
            assert_eq!(btf.typedef("mod_long_t").map(|t| (t.size, t.signed)), Some((8, true)));
            assert_eq!(btf.typedef("mod_enum_t").map(|t| (t.size, t.signed)), Some((4, false)));
            // Several modules at once, one bad among them.
            let mut b3 = Btf::parse(&base_raw).unwrap();
            let r = b3.add_splits(&base_raw, &[&split_raw, &split_raw[..10], &split_raw]);
            assert!(r[0].is_ok() && r[1].is_err() && r[2].is_ok());
            assert_eq!(b3.enum_value("MOD_X"), Some(3));
            assert_eq!(b3.add_splits(&base_raw[..30], &[&split_raw, &split_raw]), vec![Err(BtfError::BadHeader); 2]);
            // Mismatched byte order.
            let other = every_kind(!be).blob(0);
            assert_eq!(btf.add_split(&other, &split_raw).unwrap_err(), BtfError::EndianMismatch);
            // Truncated split blobs are errors.
            for n in 0..split_raw.len() {
                let mut b2 = btf.clone();
                assert!(b2.add_split(&base_raw, &split_raw[..n]).is_err());
            }
        }
    }

    #[test]
    fn mutations_never_panic() {
        // Deterministic byte flips over the whole blob.
        let full = every_kind(false).blob(0);
        let mut x: u32 = 0x1234_5678;
        for _ in 0..5000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let mut v = full.clone();
            let i = x as usize % v.len();
            v[i] ^= (x >> 24) as u8 | 1;
            if let Ok(b) = Btf::parse(&v) {
                let _ = (b.enum_value("I_NEW"), b.struct_size("page"), b.typedef("loff_t"));
            }
            let mut b = Btf::default();
            let _ = b.add_split(&full, &v);
        }
    }

    #[test]
    fn vmemmap_from_text() {
        let t = "  bash-1 [000] ..... 1.0: mm_page_alloc: page=0xffffea0000040000 pfn=0x1000 order=0 migratetype=0 gfp_flags=GFP_KERNEL\n\
                 x: mm_page_alloc: page=0xffffea0000040040 pfn=0x1001 order=0\n\
                 x: mm_page_free: page=0xffffea0000080000 pfn=0x2000 order=0\n\
                 x: other: page=0x12\n";
        assert_eq!(vmemmap_base_from_trace(t, 64), Some(0xffffea0000000000));
        assert_eq!(vmemmap_base_from_trace(t, 56), None);
        assert_eq!(vmemmap_base_from_trace("nothing here", 64), None);
        assert_eq!(vmemmap_base_from_trace("a page=0xzz pfn=0x1", 64), None);
        assert_eq!(vmemmap_base_from_trace(" page=0x40 pfn=0x1", 64), Some(0));
        assert_eq!(vmemmap_base_from_trace(" page=ffffea0000000080 pfn=0x2 order=0", 64), Some(0xffffea0000000000));
        assert_eq!(vmemmap_base_from_trace(" page=0000000000000000 pfn=0x0 order=0\n page=(null) pfn=0x0", 64), None);
        assert_eq!(vmemmap_base_from_trace(" page=0x40 pfn=0x1\n page=0x", 64), Some(0));
    }
    /// `FuncArgs`: a FUNC's FUNC_PROTO parameters, typedefs and qualifiers
    /// skipped as `btf_type_skip_modifiers()` does, kinds as
    /// `print_function_args()` tells them apart.
    #[test]
    fn function_parameters() {
        for be in [false, true] {
            let mut b = B::new(be);
            let int = b.t("int", K_INT, 0, false, 4);
            b.w(1 << 24 | 32);
            let uint = b.t("unsigned int", K_INT, 0, false, 4);
            b.w(32);
            let u32_ = b.t("u32", K_TYPEDEF, 0, false, uint);
            let cu32 = b.t("", K_CONST, 0, false, u32_);
            let chr = b.t("char", K_INT, 0, false, 1);
            b.w(1 << 24 | 8);
            let ptr = b.t("", K_PTR, 0, false, chr);
            let en = b.t("mode", K_ENUM, 2, false, 4);
            let (a, c) = (b.s("MODE_A"), b.s("MODE_C"));
            b.w(a);
            b.w(0);
            b.w(c);
            b.w(2);
            let st = b.t("pair", K_STRUCT, 0, false, 16);
            let proto = b.t("", K_FUNC_PROTO, 6, false, int);
            for (n, t) in [("dfd", int), ("name", ptr), ("flags", cu32), ("m", en), ("p", st), ("", 0)] {
                let n = b.s(n);
                b.w(n);
                b.w(t);
            }
            b.t("do_it", K_FUNC, 0, false, proto);
            b.t("skipped", K_FUNC, 0, false, proto);
            let f = FuncArgs::parse(&b.blob(0), &|n| n != "skipped").unwrap();
            assert_eq!(f.funcs.len(), 1);
            assert!(f.params("skipped").is_none());
            let p = f.params("do_it").unwrap();
            let names: Vec<&str> = p.iter().map(|x| x.name.as_str()).collect();
            assert_eq!(names, ["dfd", "name", "flags", "m", "p", ""]);
            assert_eq!(p[0].ty, ArgType::Int { signed: true });
            assert_eq!(p[1].ty, ArgType::Pointer);
            assert_eq!(p[2].ty, ArgType::Int { signed: false });
            assert_eq!(p[3].ty, ArgType::Enum(vec![(0, "MODE_A".into()), (2, "MODE_C".into())]));
            assert_eq!(p[4].ty, ArgType::Other { kind: "STRUCT", size: 16 });
            assert_eq!(p[5].ty, ArgType::Unknown);
            // Never a panic on a damaged blob: every cut, every byte flipped.
            let raw = b.blob(0);
            for n in 0..raw.len() {
                let _ = FuncArgs::parse(&raw[..n], &|_| true);
                let mut bad = raw.clone();
                bad[n] ^= 0xff;
                let _ = FuncArgs::parse(&bad, &|_| true);
            }
        }
    }
}

/// How `print_function_args()` (7.2 kernel/trace/trace_output.c) prints one
/// parameter, by the BTF kind of its type after `btf_type_skip_modifiers()`
/// (typedefs, const, volatile, restrict and type tags skipped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgType {
    /// No type (id 0, a variadic `...`): `?0x%lx`.
    Unknown,
    /// A pointer: `0x%lx`.
    Pointer,
    /// An integer: `%ld` when signed, else `0x%lx`.
    Int {
        /// `BTF_INT_SIGNED` is set in the int's encoding.
        signed: bool,
    },
    /// An enum (32-bit enumerators): `%ld`, then ` [NAME]` of the first
    /// enumerator with that value.
    Enum(Vec<(u64, String)>),
    /// Anything else (a struct or union by value, a float, a 64-bit enum):
    /// `(KIND)[0x%lx` and one more `:0x%lx` per further `long` of its size,
    /// `]`; KIND is `btf_type_str()`, the kind's upper-case name.
    Other {
        /// The kind's name as `btf_type_str()` prints it (`STRUCT`, `UNION`, …).
        kind: &'static str,
        /// The type's size in bytes.
        size: u32,
    },
}

/// One parameter of a function: its name (may be empty) and type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub(crate) name: String,
    pub(crate) ty: ArgType,
}

/// The parameters of the kernel's functions (`BTF_KIND_FUNC` and its
/// `FUNC_PROTO`), what funcgraph-args needs to print a function's
/// arguments as the kernel does (`print_function_args()`).
#[derive(Debug, Default, Clone)]
pub struct FuncArgs {
    funcs: alloc::collections::BTreeMap<String, Vec<Param>>,
}

/// `btf_kind_str[]` (kernel/bpf/btf.c), what `btf_type_str()` prints.
fn kind_str(kind: u8) -> &'static str {
    match kind {
        K_INT => "INT",
        K_PTR => "PTR",
        K_ARRAY => "ARRAY",
        K_STRUCT => "STRUCT",
        K_UNION => "UNION",
        K_ENUM => "ENUM",
        K_FWD => "FWD",
        K_TYPEDEF => "TYPEDEF",
        K_VOLATILE => "VOLATILE",
        K_CONST => "CONST",
        K_RESTRICT => "RESTRICT",
        K_FUNC => "FUNC",
        K_FUNC_PROTO => "FUNC_PROTO",
        K_VAR => "VAR",
        K_DATASEC => "DATASEC",
        K_FLOAT => "FLOAT",
        K_DECL_TAG => "DECL_TAG",
        K_TYPE_TAG => "TYPE_TAG",
        K_ENUM64 => "ENUM64",
        _ => "UNKN",
    }
}

impl FuncArgs {
    /// The functions of a vmlinux blob whose names `keep` accepts (e.g.
    /// those in a trace's kallsyms), with their parameters.
    pub fn parse(raw: &[u8], keep: &dyn Fn(&str) -> bool) -> Result<FuncArgs, BtfError> {
        let (t, strs) = header(raw)?;
        let strs = Strs { base: None, own: strs, own_start: 0 };
        let mut offs = Vec::with_capacity(t.b.len() / 40);
        let mut funcs = Vec::new();
        walk(t, |r| {
            offs.push(u32::try_from(r.off).map_err(|_| BtfError::TooLarge)?);
            if r.kind == K_FUNC {
                let name = strs.get(r.name_off).ok_or(BtfError::BadString { offset: r.off })?;
                if let Ok(n) = core::str::from_utf8(name) {
                    if keep(n) {
                        funcs.push((n, r.size_or_type));
                    }
                }
            }
            Ok(())
        })?;
        let rec = |id: u32| -> Option<(usize, u8, bool, u32, usize)> {
            let off = *offs.get(usize::try_from(id).ok()?.checked_sub(1)?)? as usize;
            let info = t.u32(off + 4)?;
            Some((off, ((info >> 24) & 0x1f) as u8, info >> 31 != 0, t.u32(off + 8)?, (info & 0xffff) as usize))
        };
        let mut out = FuncArgs::default();
        for (name, proto) in funcs {
            let Some((off, K_FUNC_PROTO, _, _, vlen)) = rec(proto) else { continue };
            let mut params = Vec::with_capacity(vlen);
            for i in 0..vlen {
                let at = off + REC + i * 8;
                let (Some(pn), Some(mut ty)) = (t.u32(at), t.u32(at + 4)) else { break };
                let pname = strs.get(pn).and_then(|s| core::str::from_utf8(s).ok()).unwrap_or("");
                // btf_type_skip_modifiers(): typedefs and qualifiers.
                let mut arg = ArgType::Unknown;
                for _ in 0..32 {
                    if ty == 0 {
                        break;
                    }
                    let Some((o, kind, _, st, vl)) = rec(ty) else { break };
                    arg = match kind {
                        K_TYPEDEF | K_CONST | K_VOLATILE | K_RESTRICT | K_TYPE_TAG => {
                            ty = st;
                            continue;
                        }
                        K_PTR => ArgType::Pointer,
                        K_INT => ArgType::Int { signed: t.u32(o + REC).is_some_and(|e| (e >> 24) & 1 != 0) },
                        K_ENUM => {
                            let mut v = Vec::with_capacity(vl);
                            for k in 0..vl {
                                let (Some(n), Some(val)) = (t.u32(o + REC + k * 8), t.u32(o + REC + k * 8 + 4)) else {
                                    break;
                                };
                                // `arg == enums[i].val`: struct btf_enum's
                                // `__s32 val`, sign-extended to a long.
                                let val = val as i32 as i64 as u64;
                                let n = strs.get(n).and_then(|s| core::str::from_utf8(s).ok()).unwrap_or("");
                                v.push((val, String::from(n)));
                            }
                            ArgType::Enum(v)
                        }
                        k => ArgType::Other { kind: kind_str(k), size: st },
                    };
                    break;
                }
                params.push(Param { name: String::from(pname), ty: arg });
            }
            out.funcs.entry(String::from(name)).or_insert(params);
        }
        Ok(out)
    }

    /// The parameters of function `name`; `None`: BTF has no such function.
    pub fn params(&self, name: &str) -> Option<&[Param]> {
        self.funcs.get(name).map(Vec::as_slice)
    }
}
