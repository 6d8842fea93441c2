//! The kernel's BTF (`/sys/kernel/btf/vmlinux`), reduced to what a print fmt
//! needs and the format file does not say: enumerator values (constants the
//! kernel did not export with `TRACE_DEFINE_ENUM`, e.g. `I_DIRTY_SYNC`),
//! `sizeof(struct X)` / `sizeof(union X)` / `sizeof(enum X)`, and the size and
//! sign of typedef names used in casts (`gfp_t`, `loff_t`, …).
//!
//! Split BTF (`/sys/kernel/btf/MODULE`) continues the base's type ids and
//! string offsets; `Btf::add_split` indexes a module against its base.
//!
//! The files: `blob.rs` reads the blob (header, records, strings, type
//! ids); this one indexes the names a print fmt asks for ([`Btf`]);
//! `consts.rs` answers the print-fmt compiler ([`KernelConsts`]), with
//! kernel variables beside BTF's constants; `func_args.rs` keeps the
//! functions' parameters for funcgraph-args (`FuncArgs`).
//!
//! Sans-IO: the parser takes bytes; [`KernelConsts`] is what the print-fmt
//! compiler asks. The live reader of kernel variables and the loader for a
//! tracefs tree live in `sys::kvars` (std only).

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use blob::*;

mod blob;
mod consts;
mod func_args;

#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use consts::vmemmap_base_from_trace;
pub(crate) use consts::{BtfInfo, KernelConsts, VarReader};
pub(crate) use func_args::{ArgType, FuncArgs};

/// Why a blob was rejected. Offsets are byte offsets into the blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BtfError {
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
pub(crate) struct TypeInfo {
    /// `sizeof` in bytes.
    pub(crate) size: u32,
    /// Signed integer or enum with signed values (floats count as signed).
    pub(crate) signed: bool,
    /// Resolves to a pointer.
    pub(crate) pointer: bool,
    /// Resolves to a struct, union or array (not usable as an integer).
    pub(crate) aggregate: bool,
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
pub(crate) struct Btf {
    tables: Vec<Table>,
    big_endian: bool,
    /// `sizeof(long)` from the blob's `long int` type, if it has one.
    long_size: Option<u8>,
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
    pub(crate) fn parse(raw: &[u8]) -> Result<Btf, BtfError> {
        Self::parse_filtered(raw, &|_| true)
    }

    /// Like [`Btf::parse`], but index only the names `keep` accepts (e.g.
    /// the identifiers that occur in the print fmts at hand): the same walk
    /// and checks, a much smaller table.
    pub(crate) fn parse_filtered(raw: &[u8], keep: &dyn Fn(&str) -> bool) -> Result<Btf, BtfError> {
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
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn add_split(&mut self, base_raw: &[u8], split_raw: &[u8]) -> Result<(), BtfError> {
        self.add_splits(base_raw, &[split_raw]).pop().unwrap_or(Ok(()))
    }

    /// [`Btf::add_split`] for several modules, walking the base once. One
    /// result per split blob; a bad base fails them all.
    pub(crate) fn add_splits(&mut self, base_raw: &[u8], splits: &[&[u8]]) -> Vec<Result<(), BtfError>> {
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
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn len(&self) -> usize {
        self.tables.iter().map(|t| t.entries.len()).sum()
    }

    /// Heap bytes held by the index.
    /// No name indexed (a blob of anonymous types only).
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn heap_bytes(&self) -> usize {
        self.tables.iter().map(|t| t.blob.capacity() + t.entries.capacity() * core::mem::size_of::<Entry>()).sum()
    }

    /// The blob was big endian.
    #[cfg(test)]
    pub(crate) fn big_endian(&self) -> bool {
        self.big_endian
    }

    /// `sizeof(long)` of the kernel the blob describes (from `long int`).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn long_size(&self) -> Option<u8> {
        self.long_size
    }

    fn find(&self, kind: Kind, name: &str) -> Option<&Entry> {
        let e = self.tables.iter().find_map(|t| t.find(kind, name))?;
        (e.flags & F_AMBIGUOUS == 0).then_some(e)
    }

    /// Enumerator value; see [`KernelConsts::enum_value`]. `None` when unknown
    /// or defined more than once with different values.
    pub(crate) fn enum_value(&self, name: &str) -> Option<i64> {
        self.find(Kind::Enumerator, name).map(|e| e.value as i64)
    }

    /// `sizeof(struct NAME)`.
    pub(crate) fn struct_size(&self, name: &str) -> Option<u32> {
        self.find(Kind::Struct, name).map(|e| e.value as u32)
    }

    /// `sizeof(union NAME)`.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn union_size(&self, name: &str) -> Option<u32> {
        self.find(Kind::Union, name).map(|e| e.value as u32)
    }

    /// `sizeof(enum NAME)`.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn enum_size(&self, name: &str) -> Option<u32> {
        self.find(Kind::Enum, name).map(|e| e.value as u32)
    }

    /// A typedef resolved to its size and sign.
    pub(crate) fn typedef(&self, name: &str) -> Option<TypeInfo> {
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

#[cfg(test)]
mod tests {
    use super::blob::test_blob::{every_kind, B};
    use super::blob::*;
    use super::*;

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
        assert_eq!(info.sizeof_struct("page"), Some(64));
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
}
