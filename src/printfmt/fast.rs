//! Host builds: a compiled print fmt compiled once more, into whole-field
//! writers ([`Op`]), so that a record runs no interpretation for the
//! common plain conversions: no piece dispatch, no `*` width or precision,
//! no argument walk through the node arena, no varargs conversion step by
//! step. A literal is copied; an integer field is read, its bits folded
//! into the value the conversion prints in three operations ([`Fold`]) and
//! its digits written into the line; a `%s` of a record array goes to
//! `%s`'s own writer. Everything else (helpers, expressions, `*`) is an
//! [`Op::Item`]: the interpreter ([`super::eval`]) runs that item, and it
//! runs every item whose field a short record does not hold.
//!
//! The interpreter is the one definition of the text (board builds run it
//! alone); the writers here only skip its steps for the cases whose result
//! is fixed at compile time. `Program::render_interpreted` renders with the
//! interpreter alone, and tests/core/printfmt_fixtures.rs compares both on
//! every record of every fixture.

use alloc::vec::Vec;
use core::fmt;

use super::digits::{StackBuf, Stage};
use super::eval::{int_piece, Frame};
use super::ir::{Fold, Item, Node, Op, Prog, Ty};
use super::vsprintf::{emit, ArgVal, Conv, Ctx, Qual, Spec, SIGN, SMALL, ZEROPAD};
use crate::abi::Endian;

impl Fold {
    /// A field of `size` bytes as read.
    fn raw(size: u8) -> Fold {
        Fold { k: 8 * size, m: 8 * size }
    }

    /// Keep the low `n` bits, then sign- or zero-extend them.
    fn ext(self, n: u8, signed: bool) -> Fold {
        if n >= 64 {
            self
        } else if n <= self.k {
            Fold { k: n, m: if signed { 64 } else { n } }
        } else if n <= self.m {
            // Bit n - 1 is a copy of bit k - 1.
            Fold { k: self.k, m: if signed { 64 } else { n } }
        } else {
            // Bit n - 1 is zero: nothing changes.
            self
        }
    }

    /// Keep the low `n` bits.
    fn mask(self, n: u8) -> Fold {
        Fold { k: self.k.min(n), m: self.m.min(n) }
    }

    #[inline(always)]
    fn apply(self, v: u64) -> u64 {
        let shl = 64 - u32::from(self.k);
        let x = v << shl;
        let x = if self.m > self.k { ((x as i64) >> shl) as u64 } else { x >> shl };
        if self.m >= 64 {
            x
        } else {
            x & ((1u64 << self.m) - 1)
        }
    }
}

/// The writers of `prog` for a kernel whose `long` is `long_size` bytes;
/// empty when none would beat the interpreter (every item is an
/// [`Op::Item`]).
pub(crate) fn compile(prog: &Prog, long_size: u32) -> Vec<Op> {
    let long_bits = (8 * long_size) as u8;
    let mut ops = Vec::with_capacity(prog.items.len());
    let mut any = false;
    for (i, item) in prog.items.iter().enumerate() {
        let i = i as u32;
        let op = match *item {
            Item::Short(b) => Op::Short(b),
            Item::Lit(o, l) => Op::Lit(o, l),
            Item::Conv(p) if p.width.is_some() || p.prec.is_some() || p.spec.conv == Conv::Percent => Op::Item(i),
            Item::Conv(p) => {
                let field = p.arg.and_then(|a| field_of(prog, a));
                let bytes = p.arg.and_then(|a| match prog.nodes.get(a as usize) {
                    Some(&Node::Bytes(loc)) => Some(loc),
                    _ => None,
                });
                let spec = p.spec;
                match (field, bytes) {
                    (Some((off, ty)), _) => {
                        // Eval's `arg()`: the field normalised to its type,
                        // an int-sized value travelling as 32 bits.
                        let mut fold = Fold::raw(ty.size);
                        if ty.size < 8 {
                            fold = fold.ext(8 * ty.size, ty.signed);
                        }
                        if !p.wide {
                            fold = fold.mask(32);
                        }
                        match plain(&spec) {
                            Some((base, signed)) => {
                                // `convert_int()`: the conversion's va_arg type.
                                let bits = match spec.qual {
                                    Qual::None => 32,
                                    Qual::Char => 8,
                                    Qual::Short => 16,
                                    Qual::LongLong => 64,
                                    Qual::Long | Qual::Size | Qual::PtrDiff => long_bits,
                                };
                                let fold = fold.ext(bits, signed);
                                let size = ty.size;
                                // A short literal before it goes with it.
                                let mut pre = StackBuf::new();
                                if let Some(Op::Short(b)) =
                                    ops.last().filter(|o| matches!(o, Op::Short(b) if b.len() <= 8))
                                {
                                    pre.push_str(b.as_str());
                                    ops.pop();
                                }
                                if base == 16 {
                                    Op::Hex { pre, off, size, fold, upper: spec.flags & SMALL == 0, item: i }
                                } else {
                                    Op::Dec { pre, off, size, fold, signed, item: i }
                                }
                            }
                            None => Op::Int { off, size: ty.size, fold, spec, item: i },
                        }
                    }
                    (None, Some(loc)) if spec.conv == Conv::Str => Op::Str { loc, spec, item: i },
                    _ => Op::Item(i),
                }
            }
        };
        any |= !matches!(op, Op::Item(_) | Op::Short(_) | Op::Lit(..));
        ops.push(op);
    }
    if !any {
        ops.clear();
    }
    ops
}

/// Where an argument is a scalar field as it is: `REC->field`, or
/// `REC->arr[i]` with a constant `i` inside the array.
fn field_of(prog: &Prog, a: u32) -> Option<(u32, Ty)> {
    match *prog.nodes.get(a as usize)? {
        Node::Field { off, ty } if matches!(ty.size, 1 | 2 | 4 | 8) => Some((off, ty)),
        Node::Elem { off, count, ty, idx } if matches!(ty.size, 1 | 2 | 4 | 8) => {
            match *prog.nodes.get(idx as usize)? {
                Node::Const(i, _) if i < u64::from(count) => Some((off + i as u32 * u32::from(ty.size), ty)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A `%d`/`%u`/`%x`/`%X` whose text is its digits alone (a `-` in front
/// for a negative `%d`): no width, precision or flag that changes the
/// text, not `%td` (which signs a hex conversion too). (base, signed).
fn plain(s: &Spec) -> Option<(u8, bool)> {
    let Conv::Int { base: base @ (10 | 16) } = s.conv else { return None };
    let signed = s.flags & SIGN != 0;
    let flags_ok = s.flags & !(SIGN | SMALL | ZEROPAD) == 0 && (base == 10 || !signed);
    (s.width <= 0 && s.prec < 0 && flags_ok && s.qual != Qual::PtrDiff).then_some((base, signed))
}

/// A field's bits for [`Fold::apply`]: [`Endian::uint`] in place (the
/// size-tuned build calls it).
#[inline(always)]
fn read(rec: &[u8], off: u32, size: u8, e: Endian) -> Option<u64> {
    let off = off as usize;
    let le = e == Endian::Little;
    // Little endian: the eight bytes from the field on, where the record
    // has them, whatever its size: the bytes after it land above bit
    // 8 * size, which every fold drops (its `k` is at most that).
    if le {
        if let Some(a) = rec.get(off..off + 8).and_then(|a| <[u8; 8]>::try_from(a).ok()) {
            return Some(u64::from_le_bytes(a));
        }
    }
    Some(match size {
        8 => {
            let a = <[u8; 8]>::try_from(rec.get(off..off + 8)?).ok()?;
            if le {
                u64::from_le_bytes(a)
            } else {
                u64::from_be_bytes(a)
            }
        }
        4 => {
            let a = <[u8; 4]>::try_from(rec.get(off..off + 4)?).ok()?;
            u64::from(if le { u32::from_le_bytes(a) } else { u32::from_be_bytes(a) })
        }
        2 => {
            let a = <[u8; 2]>::try_from(rec.get(off..off + 2)?).ok()?;
            u64::from(if le { u16::from_le_bytes(a) } else { u16::from_be_bytes(a) })
        }
        1 => u64::from(*rec.get(off)?),
        _ => return None,
    })
}

/// Render `prog`'s record `rec` through its writers `ops`, continuing the
/// line `st` holds.
pub(crate) fn run(ops: &[Op], prog: &Prog, st: &mut Stage<'_>, rec: &[u8], ctx: &Ctx<'_>) -> fmt::Result {
    let e = ctx.abi.endian;
    let mut frame: Option<Frame<'_, '_>> = None;
    // The interpreter for item `i` (a frame made once, when first needed).
    let mut interp = |st: &mut Stage<'_>, i: u32| -> fmt::Result {
        let f = frame.get_or_insert_with(|| Frame::new(prog, rec, *ctx));
        match prog.items.get(i as usize) {
            Some(item) => f.item(st, item),
            None => Ok(()),
        }
    };
    for op in ops {
        match *op {
            Op::Short(ref b) => st.push_buf(b)?,
            Op::Lit(o, l) => st.push(prog.pool.get(o as usize..(o + l) as usize).unwrap_or(""))?,
            Op::Hex { ref pre, off, size, fold, upper, item } => match read(rec, off, size, e) {
                Some(v) => st.push_hex(pre, fold.apply(v), upper)?,
                None => {
                    st.push_buf(pre)?;
                    interp(st, item)?
                }
            },
            Op::Dec { ref pre, off, size, fold, signed, item } => match read(rec, off, size, e) {
                Some(v) => {
                    let v = fold.apply(v);
                    let neg = signed && (v as i64) < 0;
                    st.push_dec(pre, neg, if neg { (v as i64).unsigned_abs() } else { v })?
                }
                None => {
                    st.push_buf(pre)?;
                    interp(st, item)?
                }
            },
            Op::Int { off, size, fold, ref spec, item } => match read(rec, off, size, e) {
                Some(v) => int_piece(st, fold.apply(v), spec, ctx)?,
                None => interp(st, item)?,
            },
            Op::Str { loc, ref spec, item } => match loc.bytes(rec, e) {
                Some(b) => emit(st, spec, ArgVal::Bytes(b), ctx)?,
                None => interp(st, item)?,
            },
            Op::Item(i) => interp(st, i)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::printfmt::ir::norm;
    use crate::printfmt::vsprintf::convert_int;

    /// Every chain the compiler folds gives what the steps give one by one.
    #[test]
    fn folds_equal_the_steps() {
        let mut vals = alloc::vec![0u64, 1, u64::MAX, 1 << 63, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff];
        vals.extend([0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 0x1_0000_0000, 0x8000_0000_0000_0000]);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            vals.push(x);
            vals.push(x & 0xff);
            vals.push(x | 0x80);
        }
        let quals = [Qual::None, Qual::Char, Qual::Short, Qual::Long, Qual::LongLong, Qual::Size];
        for size in [1u8, 2, 4, 8] {
            for fsigned in [false, true] {
                for wide in [false, true] {
                    for q in quals {
                        for csigned in [false, true] {
                            for long in [4u32, 8] {
                                let ty = Ty::int(size, fsigned);
                                let spec = Spec {
                                    flags: if csigned { SIGN } else { 0 },
                                    width: -1,
                                    width_star: false,
                                    prec: -1,
                                    prec_star: false,
                                    qual: q,
                                    conv: Conv::Int { base: 10 },
                                };
                                let mut f = Fold::raw(size);
                                if size < 8 {
                                    f = f.ext(8 * size, fsigned);
                                }
                                if !wide {
                                    f = f.mask(32);
                                }
                                let bits = match q {
                                    Qual::None => 32,
                                    Qual::Char => 8,
                                    Qual::Short => 16,
                                    Qual::LongLong => 64,
                                    _ => (8 * long) as u8,
                                };
                                let g = f.ext(bits, csigned);
                                for &v in &vals {
                                    let raw = if size == 8 { v } else { v & ((1 << (8 * size)) - 1) };
                                    let mut a = norm(raw, ty);
                                    if !wide {
                                        a &= 0xffff_ffff;
                                    }
                                    assert_eq!(f.apply(raw), a, "{size} {fsigned} {wide} {v:#x}");
                                    assert_eq!(
                                        g.apply(raw),
                                        convert_int(a, &spec, long),
                                        "{size} {fsigned} {wide} {q:?} {csigned} {long} {v:#x}"
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
