//! The BTF blob as the kernel lays it out (include/uapi/linux/btf.h): the
//! header, the type records and their kind-specific tails, the string
//! section, and type ids across a base and its split blob. Every read is
//! bounds-checked; a damaged blob is an error with its byte offset.
//!
//! The layout: a header `{u16 magic 0xeB9F,
//! u8 version 1, u8 flags, u32 hdr_len, u32 type_off, u32 type_len, u32
//! str_off, u32 str_len}` (offsets from the end of the header, `hdr_len` may be
//! larger than 24), then the type records, then NUL-terminated strings. Each
//! record is `{u32 name_off, u32 info, u32 size_or_type}` (info: vlen in bits
//! 0..16, kind in bits 24..29, kind_flag in bit 31) followed by kind-specific
//! data. Type ids count records from 1 (0 is `void`). The byte order is the
//! one the magic reads correctly in.

use super::{BtfError, TypeInfo};
use crate::abi::Endian;

/// `0xeB9F` read in the blob's byte order.
#[cfg(test)]
pub(crate) const MAGIC: u16 = 0xeb9f;

pub(super) const HDR_MIN: usize = 24;
pub(super) const REC: usize = 12;

// Kinds (BTF_KIND_*).
pub(super) const K_INT: u8 = 1;
pub(super) const K_PTR: u8 = 2;
pub(super) const K_ARRAY: u8 = 3;
pub(super) const K_STRUCT: u8 = 4;
pub(super) const K_UNION: u8 = 5;
pub(super) const K_ENUM: u8 = 6;
pub(super) const K_FWD: u8 = 7;
pub(super) const K_TYPEDEF: u8 = 8;
pub(super) const K_VOLATILE: u8 = 9;
pub(super) const K_CONST: u8 = 10;
pub(super) const K_RESTRICT: u8 = 11;
pub(super) const K_FUNC: u8 = 12;
pub(super) const K_FUNC_PROTO: u8 = 13;
pub(super) const K_VAR: u8 = 14;
pub(super) const K_DATASEC: u8 = 15;
pub(super) const K_FLOAT: u8 = 16;
pub(super) const K_DECL_TAG: u8 = 17;
pub(super) const K_TYPE_TAG: u8 = 18;
pub(super) const K_ENUM64: u8 = 19;

/// Bounds-checked reads in the blob's byte order.
#[derive(Clone, Copy)]
pub(super) struct BlobReader<'a> {
    pub(super) b: &'a [u8],
    pub(super) be: bool,
}

impl<'a> BlobReader<'a> {
    pub(super) fn u32(&self, off: usize) -> Option<u32> {
        Endian::big_if(self.be).u32(self.b, off)
    }
}

/// One parsed blob, borrowed: its type section, string section and where its
/// type ids and string offsets start (non-zero for split BTF).
#[derive(Clone, Copy)]
pub(super) struct Blob<'a> {
    pub(super) types: BlobReader<'a>,
    pub(super) strs: &'a [u8],
    /// Type id of the first record.
    pub(super) first_id: u32,
    /// String offset of `strs[0]`.
    pub(super) str_base: u32,
}

pub(super) fn header(raw: &[u8]) -> Result<(BlobReader<'_>, &[u8]), BtfError> {
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
pub(super) struct Rec {
    pub(super) off: usize,
    pub(super) name_off: u32,
    pub(super) kind: u8,
    pub(super) kflag: bool,
    pub(super) vlen: usize,
    pub(super) size_or_type: u32,
    /// Offset of the trailing data.
    pub(super) tail: usize,
}

/// Bytes of kind-specific data after the 12-byte record.
pub(super) fn tail_len(kind: u8, vlen: usize) -> Option<usize> {
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
pub(super) fn walk(t: BlobReader<'_>, mut f: impl FnMut(&Rec) -> Result<(), BtfError>) -> Result<(), BtfError> {
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
pub(super) struct Strs<'a> {
    pub(super) base: Option<&'a [u8]>,
    pub(super) own: &'a [u8],
    pub(super) own_start: u32,
}

impl<'a> Strs<'a> {
    /// The string at `off`; `None` when out of range or not NUL-terminated.
    pub(super) fn get(&self, off: u32) -> Option<&'a [u8]> {
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
pub(super) struct Ids<'a, 'o> {
    pub(super) blobs: [Option<(Blob<'a>, &'o [u32])>; 2],
}

impl<'a> Ids<'a, '_> {
    pub(super) fn rec(&self, id: u32) -> Option<(BlobReader<'a>, usize)> {
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
    pub(super) fn resolve(&self, mut id: u32, long_size: Option<u8>) -> Option<TypeInfo> {
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

/// A builder of BTF blobs by hand, for the tests of each part.
#[cfg(test)]
pub(crate) mod test_blob {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    /// Builds BTF blobs by hand.
    pub(crate) struct B {
        pub(crate) be: bool,
        pub(crate) types: Vec<u8>,
        pub(crate) strs: Vec<u8>,
        pub(crate) n: u32,
    }

    impl B {
        pub(crate) fn new(be: bool) -> B {
            B { be, types: Vec::new(), strs: vec![0], n: 0 }
        }
        pub(crate) fn s(&mut self, name: &str) -> u32 {
            if name.is_empty() {
                return 0;
            }
            let o = self.strs.len() as u32;
            self.strs.extend_from_slice(name.as_bytes());
            self.strs.push(0);
            o
        }
        pub(crate) fn w(&mut self, v: u32) {
            let b = if self.be { v.to_be_bytes() } else { v.to_le_bytes() };
            self.types.extend_from_slice(&b);
        }
        /// A record; returns its type id.
        pub(crate) fn t(&mut self, name: &str, kind: u8, vlen: u32, kflag: bool, st: u32) -> u32 {
            let n = self.s(name);
            self.w(n);
            self.w(vlen | u32::from(kind) << 24 | u32::from(kflag) << 31);
            self.w(st);
            self.n += 1;
            self.n
        }
        pub(crate) fn blob(&self, extra_hdr: u32) -> Vec<u8> {
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
    pub(crate) fn every_kind(be: bool) -> B {
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
}

#[cfg(test)]
mod tests {
    use super::test_blob::{every_kind, B};
    use super::*;
    use crate::btf::Btf;

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
}
