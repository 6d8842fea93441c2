//! The compiled form of a print fmt: what [`compile`](super::compile)
//! produces and [`eval`](super::eval) runs — the format string as literal
//! and conversion items, and the argument expressions as a node arena with
//! every `REC->field` resolved to offset, size and sign.

use alloc::string::String;
use alloc::vec::Vec;

use super::digits::StackBuf;
use super::vsprintf::Spec;

pub(crate) type Id = u32;

/// A static C integer type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ty {
    pub(crate) size: u8,
    pub(crate) signed: bool,
    /// 0 not a pointer, 1 pointer to bytes (char/void/u8), 2 other pointer.
    pub(crate) ptr: u8,
}

impl Ty {
    pub(crate) const INT: Ty = Ty { size: 4, signed: true, ptr: 0 };
    pub(crate) const UINT: Ty = Ty { size: 4, signed: false, ptr: 0 };
    pub(crate) const U64: Ty = Ty { size: 8, signed: false, ptr: 0 };
    pub(crate) const fn int(size: u8, signed: bool) -> Ty {
        Ty { size, signed, ptr: 0 }
    }
}

/// Truncate `v` to `ty` and sign- or zero-extend it back to 64 bits.
#[inline(always)]
pub(crate) fn norm(v: u64, ty: Ty) -> u64 {
    if ty.size >= 8 {
        return v;
    }
    let bits = u32::from(ty.size) * 8;
    let m = (1u64 << bits) - 1;
    let v = v & m;
    if ty.signed && (v >> (bits - 1)) & 1 == 1 {
        v | !m
    } else {
        v
    }
}

/// Where a field's bytes are.
pub(crate) use crate::format::FieldLoc as Loc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UOp {
    Neg,
    Not,
    BitNot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Shl,
    Shr,
    And,
    Or,
    Xor,
    Lt,
    Gt,
    Le,
    Ge,
    Eq,
    Ne,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Node {
    /// A constant, already normalised to its type.
    Const(u64, Ty),
    /// A scalar field.
    Field {
        off: u32,
        ty: Ty,
    },
    /// `REC->arr[i]` of a fixed array.
    Elem {
        off: u32,
        count: u32,
        ty: Ty,
        idx: Id,
    },
    /// The bytes of an array / `__data_loc` / `__rel_loc` field (a pointer
    /// to memory inside the record).
    Bytes(Loc),
    /// `__get_dynamic_array_len()`.
    DynLen(Loc),
    /// A string literal in the pool.
    Lit(u32, u32),
    /// `bytes[i]` (`__get_str(x)[0]`).
    ByteAt {
        base: Id,
        idx: Id,
        ty: Ty,
    },
    Unary(UOp, Id, Ty),
    Binary(BOp, Id, Id, Ty),
    /// `&&` (true) / `||` (false).
    Logic(bool, Id, Id),
    /// `c ? a : b`; the type both integer branches convert to.
    Cond(Id, Id, Id, Option<Ty>),
    Cast(Ty, Id),
    Local(u8),
    /// A GNU statement expression: locals in `decls[first..first+n]`.
    Block {
        first: u32,
        n: u32,
        result: Id,
    },
    Flags {
        val: Id,
        delim: (u32, u32),
        tab: (u32, u32),
        wide: bool,
    },
    Symbolic {
        val: Id,
        tab: (u32, u32),
        wide: bool,
    },
    Hex {
        buf: Id,
        len: Id,
        concat: bool,
    },
    Array {
        buf: Id,
        count: Id,
        elsize: Id,
    },
    Bitmask(Loc),
    /// An argument that could not be compiled: prints a marker.
    Unknown,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Piece {
    pub(crate) spec: Spec,
    pub(crate) width: Option<Id>,
    pub(crate) prec: Option<Id>,
    pub(crate) arg: Option<Id>,
    /// The argument's static type is wider than 32 bits.
    pub(crate) wide: bool,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Item {
    /// Literal text, kept in place: no pool lookup per record.
    Short(StackBuf<SHORT>),
    /// Longer literal text, in the pool.
    Lit(u32, u32),
    Conv(Piece),
}

/// Longest literal kept in an [`Item`] (it is no bigger for it).
const SHORT: usize = 32;

impl Item {
    /// The literal text of `pool[o..o + l]`.
    pub(crate) fn lit(pool: &str, o: u32, l: u32) -> Item {
        match pool.get(o as usize..(o + l) as usize) {
            Some(t) if t.len() <= SHORT => {
                let mut b = StackBuf::new();
                b.push_str(t);
                Item::Short(b)
            }
            _ => Item::Lit(o, l),
        }
    }

    /// The text of a literal item.
    pub(crate) fn text<'p>(&'p self, pool: &'p str) -> Option<&'p str> {
        match self {
            Item::Short(b) => Some(b.as_str()),
            Item::Lit(o, l) => pool.get(*o as usize..(*o + *l) as usize),
            Item::Conv(_) => None,
        }
    }
}

/// The compiled program.
#[derive(Debug, Default, Clone)]
pub(crate) struct Prog {
    pub(crate) items: Vec<Item>,
    /// Literal text (format pieces, strings, table names), UTF-8.
    pub(crate) pool: String,
    pub(crate) nodes: Vec<Node>,
    pub(crate) decls: Vec<(u8, Ty, Id)>,
    pub(crate) table: Vec<(u64, u32, u32)>,
    pub(crate) needs_syms: bool,
    pub(crate) needs_strings: bool,
    /// What could not be compiled and prints a marker / is missing.
    pub(crate) unknown: Vec<&'static str>,
    /// Host builds: the items as whole-field writers ([`super::fast`]);
    /// empty when the interpreter runs them all.
    #[cfg(feature = "host")]
    pub(crate) ops: Vec<Op>,
}

/// How a field's raw bits (zero-extended) become the value a conversion
/// prints: the low `k` bits as they are, bits `k..m` copies of bit `k - 1`,
/// zeros above `m` (`Fold::apply` in [`super::fast`]). Every step between the record and the
/// digits — the field's own type (`norm`), an `int` travelling as 32 bits
/// through varargs, the conversion's `va_arg` type (`convert_int`) — keeps
/// that shape, so their chain folds into one at compile time.
#[cfg(feature = "host")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fold {
    pub(crate) k: u8,
    pub(crate) m: u8,
}

/// One whole-field writer.
#[cfg(feature = "host")]
#[derive(Debug, Clone, Copy)]
pub(crate) enum Op {
    /// Literal text, in place.
    Short(StackBuf<SHORT>),
    /// Longer literal text, in the pool.
    Lit(u32, u32),
    /// A plain `%x` / `%lx` / `%X` of a field: its hex digits, after the
    /// short literal `pre` (the text before it, up to 8 bytes).
    Hex { pre: StackBuf<8>, off: u32, size: u8, fold: Fold, upper: bool, item: u32 },
    /// A plain `%d` / `%u` / `%ld` / `%lu` / `%llu` of a field, after `pre`.
    Dec { pre: StackBuf<8>, off: u32, size: u8, fold: Fold, signed: bool, item: u32 },
    /// Any other conversion of an integer field (a width, `%p`, `%ps`,
    /// `%c`, …): the value as varargs hand it on, then the interpreter's
    /// own conversion code.
    Int { off: u32, size: u8, fold: Fold, spec: Spec, item: u32 },
    /// `%s` (any width and precision) of a record array or `__data_loc`.
    Str { loc: Loc, spec: Spec, item: u32 },
    /// Item `n` of the program, through the interpreter.
    Item(u32),
}
