//! Evaluating a compiled program against one record.

use core::cell::Cell;
use core::fmt::{self, Write};

use super::digits::Stage;
use super::ir::{norm, BOp, Id, Item, Node, Piece, Prog, Ty, UOp};
use super::vsprintf::{bitmap, emit, int_conv, number, plain_number, ArgVal, Conv, Ctx, Spec, LEFT, SMALL};
use crate::abi::{Abi, Endian};

/// A value during evaluation.
#[derive(Debug, Clone, Copy)]
pub(crate) enum V<'a> {
    /// An integer, normalised to its static type.
    I(u64),
    /// Memory we have: record bytes or a literal.
    B(&'a [u8]),
    /// Text a helper renders on demand.
    T(Id),
    Bad,
}

pub(crate) struct Frame<'a, 'e> {
    prog: &'a Prog,
    rec: &'a [u8],
    ctx: Ctx<'e>,
    locals: Cell<[u64; 16]>,
    depth: Cell<u32>,
}

impl<'a, 'e> Frame<'a, 'e> {
    pub(crate) fn new(prog: &'a Prog, rec: &'a [u8], ctx: Ctx<'e>) -> Self {
        Frame { prog, rec, ctx, locals: Cell::new([0; 16]), depth: Cell::new(0) }
    }

    /// A frame with no record, for folding constants at compile time.
    pub(crate) fn constant(prog: &'a Prog) -> Frame<'a, 'static> {
        Frame::new(prog, &[], Ctx { abi: Abi::new(Endian::Little, 8), syms: None, strings: None })
    }

    pub(crate) fn int(&self, id: Id) -> Option<u64> {
        // Most operands are a field as it is or a constant: no expression
        // walk for those.
        match self.prog.nodes.get(id as usize) {
            Some(&Node::Field { off, ty }) => self.field(off, ty),
            Some(&Node::Const(v, _)) => Some(v),
            _ => match self.val(id) {
                V::I(v) => Some(v),
                _ => None,
            },
        }
    }

    /// A scalar field of the record, normalised to its type.
    #[inline(always)]
    fn field(&self, off: u32, ty: Ty) -> Option<u64> {
        let v = self.ctx.abi.endian.uint(self.rec, off as usize, ty.size as usize)?;
        Some(norm(v, ty))
    }

    fn truth(&self, id: Id) -> Option<bool> {
        match self.val(id) {
            V::I(v) => Some(v != 0),
            V::B(_) | V::T(_) => Some(true),
            V::Bad => None,
        }
    }

    fn node(&self, id: Id) -> Node {
        self.prog.nodes[id as usize]
    }

    pub(crate) fn val(&self, id: Id) -> V<'a> {
        // Expressions are trees built by the parser, so depth is bounded by
        // the text; guard anyway.
        let d = self.depth.get();
        if d > 256 {
            return V::Bad;
        }
        self.depth.set(d + 1);
        let r = self.val_inner(id);
        self.depth.set(d);
        r
    }

    fn val_inner(&self, id: Id) -> V<'a> {
        let e = self.ctx.abi.endian;
        let int = |v: Option<u64>| v.map_or(V::Bad, V::I);
        match self.node(id) {
            Node::Const(v, _) => V::I(v),
            Node::Field { off, ty } => int(self.field(off, ty)),
            Node::Elem { off, count, ty, idx } => {
                let Some(i) = self.int(idx) else { return V::Bad };
                if i >= u64::from(count) {
                    return V::Bad;
                }
                let at = off as usize + i as usize * ty.size as usize;
                int(e.uint(self.rec, at, ty.size as usize).map(|v| norm(v, ty)))
            }
            Node::Bytes(loc) => loc.bytes(self.rec, e).map_or(V::Bad, V::B),
            Node::DynLen(loc) => int(e.u32(self.rec, loc.offset as usize).map(|w| u64::from(w >> 16))),
            Node::Lit(o, l) => self.prog.pool.as_bytes().get(o as usize..(o + l) as usize).map_or(V::Bad, V::B),
            Node::ByteAt { base, idx, ty } => {
                let (V::B(b), Some(i)) = (self.val(base), self.int(idx)) else { return V::Bad };
                match usize::try_from(i).ok().and_then(|i| b.get(i).map(|&c| (i, c))) {
                    Some((_, c)) => V::I(norm(u64::from(c), ty)),
                    None if i as usize == b.len() => V::I(0),
                    None => V::Bad,
                }
            }
            Node::Unary(op, x, ty) => match op {
                UOp::Not => self.truth(x).map_or(V::Bad, |t| V::I(u64::from(!t))),
                UOp::Neg => int(self.int(x).map(|v| norm(norm(v, ty).wrapping_neg(), ty))),
                UOp::BitNot => int(self.int(x).map(|v| norm(!v, ty))),
            },
            Node::Binary(op, l, r, ty) => {
                let (Some(a), Some(b)) = (self.int(l), self.int(r)) else { return V::Bad };
                binop(op, a, b, ty).map_or(V::Bad, V::I)
            }
            Node::Logic(and, l, r) => {
                let Some(a) = self.truth(l) else { return V::Bad };
                if a != and {
                    return V::I(u64::from(a));
                }
                self.truth(r).map_or(V::Bad, |b| V::I(u64::from(b)))
            }
            Node::Cond(c, a, b, ty) => {
                let v = match self.truth(c) {
                    Some(true) => self.val(a),
                    Some(false) => self.val(b),
                    None => V::Bad,
                };
                match (v, ty) {
                    (V::I(x), Some(t)) => V::I(norm(x, t)),
                    _ => v,
                }
            }
            Node::Cast(ty, x) => int(self.int(x).map(|v| norm(v, ty))),
            Node::Local(slot) => V::I(self.locals.get()[slot as usize & 15]),
            Node::Block { first, n, result } => {
                for &(slot, _, init) in self.prog.decls.get(first as usize..(first + n) as usize).unwrap_or(&[]) {
                    let Some(v) = self.int(init) else { return V::Bad };
                    let mut l = self.locals.get();
                    l[slot as usize & 15] = v;
                    self.locals.set(l);
                }
                self.val(result)
            }
            Node::Unknown => V::Bad,
            Node::Flags { .. } | Node::Symbolic { .. } | Node::Hex { .. } | Node::Array { .. } | Node::Bitmask(_) => {
                V::T(id)
            }
        }
    }

    #[inline(always)]
    fn name(&self, o: u32, l: u32) -> &'a str {
        self.prog.pool.get(o as usize..(o + l) as usize).unwrap_or("")
    }

    /// Render a text-producing helper.
    pub(crate) fn text(&self, id: Id, w: &mut dyn Write) -> fmt::Result {
        let e = self.ctx.abi.endian;
        let lm = self.ctx.long_mask();
        match self.node(id) {
            Node::Flags { val, delim, tab, wide } => {
                let Some(v) = self.int(val) else { return w.write_str(super::vsprintf::BAD) };
                let m = if wide { u64::MAX } else { lm };
                let mut flags = v & m;
                let mut first = true;
                let tab = self.prog.table.get(tab.0 as usize..(tab.0 + tab.1) as usize).unwrap_or(&[]);
                for &(mask, o, l) in tab {
                    if flags == 0 {
                        break;
                    }
                    let mask = mask & m;
                    if flags & mask != mask {
                        continue;
                    }
                    flags &= !mask;
                    if !first {
                        w.write_str(self.name(delim.0, delim.1))?;
                    }
                    first = false;
                    w.write_str(self.name(o, l))?;
                }
                if flags != 0 {
                    if !first {
                        w.write_str(self.name(delim.0, delim.1))?;
                    }
                    w.write_str("0x")?;
                    number(w, flags, 16, SMALL, -1, -1)?;
                }
                Ok(())
            }
            Node::Symbolic { val, tab, wide } => {
                let Some(v) = self.int(val) else { return w.write_str(super::vsprintf::BAD) };
                let m = if wide { u64::MAX } else { lm };
                let v = v & m;
                let tab = self.prog.table.get(tab.0 as usize..(tab.0 + tab.1) as usize).unwrap_or(&[]);
                match tab.iter().find(|t| t.0 & m == v) {
                    Some(&(_, o, l)) if l > 0 => w.write_str(self.name(o, l)),
                    _ => {
                        w.write_str("0x")?;
                        number(w, v, 16, SMALL, -1, -1)
                    }
                }
            }
            Node::Hex { buf, len, concat } => {
                let (V::B(b), Some(n)) = (self.val(buf), self.int(len)) else {
                    return w.write_str(super::vsprintf::BAD);
                };
                let n = (n as i32).max(0) as usize;
                let b = &b[..n.min(b.len())];
                for (i, chunk) in b.chunks(16).enumerate() {
                    if !concat && i != 0 {
                        w.write_char(' ')?;
                    }
                    for (j, c) in chunk.iter().enumerate() {
                        write!(w, "{c:02x}")?;
                        if !concat && j + 1 != chunk.len() {
                            w.write_char(' ')?;
                        }
                    }
                }
                if n > b.len() {
                    w.write_str(super::vsprintf::BAD)?;
                }
                Ok(())
            }
            Node::Array { buf, count, elsize } => {
                let (V::B(b), Some(n), Some(es)) = (self.val(buf), self.int(count), self.int(elsize)) else {
                    return w.write_str(super::vsprintf::BAD);
                };
                let n = (n as i32).max(0) as usize;
                let mut es = es as usize;
                w.write_char('{')?;
                let total = n.saturating_mul(es);
                let mut at = 0usize;
                let mut first = true;
                while at < total {
                    if !first {
                        w.write_char(',')?;
                    }
                    first = false;
                    match es {
                        1 | 2 | 4 | 8 => match e.uint(b, at, es) {
                            Some(v) => write!(w, "0x{v:x}")?,
                            None => {
                                w.write_str(super::vsprintf::BAD)?;
                                break;
                            }
                        },
                        _ => {
                            let Some(c) = b.get(at) else {
                                w.write_str(super::vsprintf::BAD)?;
                                break;
                            };
                            write!(w, "BAD SIZE:{es} 0x{c:x}")?;
                            es = 1;
                        }
                    }
                    at += es;
                }
                w.write_char('}')
            }
            Node::Bitmask(loc) => match loc.bytes(self.rec, e) {
                Some(b) => bitmap(w, b, b.len() * 8, &self.ctx),
                None => w.write_str("<OVERFLOW>"),
            },
            _ => w.write_str(super::vsprintf::BAD),
        }
    }

    /// Run the program from item `first`, continuing the line `st` holds:
    /// literal text and plain numbers are added to it directly, the other
    /// conversions write through it.
    pub(crate) fn run_into(&self, st: &mut Stage<'_>, first: usize) -> fmt::Result {
        for item in self.prog.items.get(first..).unwrap_or(&[]) {
            self.item(st, item)?;
        }
        Ok(())
    }

    /// One item of the program.
    #[inline(always)]
    pub(crate) fn item(&self, st: &mut Stage<'_>, item: &Item) -> fmt::Result {
        match item {
            Item::Short(b) => st.push_buf(b),
            &Item::Lit(o, l) => st.push(self.name(o, l)),
            Item::Conv(p) => {
                let spec = self.spec(p);
                match self.arg(p, &spec) {
                    Some(V::I(x)) => int_piece(st, x, &spec, &self.ctx),
                    v => self.conv(st, &spec, v),
                }
            }
        }
    }

    /// A conversion's spec with its `*` width and precision applied.
    fn spec(&self, p: &Piece) -> Spec {
        let mut spec: Spec = p.spec;
        if let Some(wi) = p.width {
            match self.int(wi) {
                Some(v) => {
                    let v = (v as i32).clamp(-4096, 4096);
                    if v < 0 {
                        spec.flags |= LEFT;
                    }
                    spec.width = v.abs();
                }
                None => spec.width = -1,
            }
        }
        if let Some(pi) = p.prec {
            spec.prec = self.int(pi).map_or(-1, |v| (v as i32).clamp(0, 4096));
        }
        spec
    }

    /// A conversion's argument; `None` for `%%` and a missing argument.
    fn arg(&self, p: &Piece, spec: &Spec) -> Option<V<'a>> {
        if spec.conv == Conv::Percent {
            return None;
        }
        let a = p.arg?;
        // Most arguments are a field as it is: read it without the
        // expression walk.
        let v = match self.prog.nodes.get(a as usize) {
            Some(&Node::Field { off, ty }) => self.field(off, ty).map_or(V::Bad, V::I),
            Some(Node::Bytes(loc)) => loc.bytes(self.rec, self.ctx.abi.endian).map_or(V::Bad, V::B),
            _ => self.val(a),
        };
        Some(match v {
            // Varargs: an int-sized value travels as 32 bits.
            V::I(v) if !p.wide => V::I(v & 0xffff_ffff),
            v => v,
        })
    }

    /// Write one conversion (one copy for every writer: size).
    fn conv(&self, w: &mut dyn Write, spec: &Spec, v: Option<V<'a>>) -> fmt::Result {
        let Some(v) = v else {
            return if spec.conv == Conv::Percent { w.write_char('%') } else { Ok(()) };
        };
        match v {
            V::I(v) => int_tail(w, v, spec, &self.ctx),
            V::B(b) => emit(w, spec, ArgVal::Bytes(b), &self.ctx),
            // Helpers' text with no width or precision to apply.
            V::T(id) if spec.width <= 0 && spec.prec < 0 => self.text(id, w),
            V::T(id) => {
                let mut f = |w: &mut dyn Write| self.text(id, w);
                emit(w, spec, ArgVal::Text(&mut f), &self.ctx)
            }
            V::Bad => emit(w, spec, ArgVal::Bad, &self.ctx),
        }
    }
}

/// A conversion of the integer `x` (the argument as it travels through
/// varargs): a plain number straight into the line, the rest through
/// [`int_tail`].
#[inline(always)]
pub(crate) fn int_piece(st: &mut Stage<'_>, x: u64, spec: &Spec, ctx: &Ctx) -> fmt::Result {
    match plain_number(x, spec, ctx) {
        Some(d) => st.push(d.as_str()),
        None => int_tail(st, x, spec, ctx),
    }
}

/// A conversion of the integer `x` that is not a plain number.
fn int_tail(w: &mut dyn Write, x: u64, spec: &Spec, ctx: &Ctx) -> fmt::Result {
    match spec.conv {
        Conv::Int { .. } => int_conv(w, x, spec, ctx.abi.long_size),
        _ => emit(w, spec, ArgVal::Int(x), ctx),
    }
}

fn binop(op: BOp, a: u64, b: u64, ty: Ty) -> Option<u64> {
    let (a, b) = (norm(a, ty), norm(b, ty));
    let bits = u32::from(ty.size) * 8;
    let s = ty.signed;
    let cmp = |lt: bool| Some(u64::from(lt));
    let r = match op {
        BOp::Add => a.wrapping_add(b),
        BOp::Sub => a.wrapping_sub(b),
        BOp::Mul => a.wrapping_mul(b),
        BOp::Div | BOp::Rem => {
            if b == 0 {
                return None;
            }
            match (op, s) {
                (BOp::Div, true) => (a as i64).wrapping_div(b as i64) as u64,
                (BOp::Div, false) => a / b,
                (_, true) => (a as i64).wrapping_rem(b as i64) as u64,
                (_, false) => a % b,
            }
        }
        BOp::Shl => {
            if b >= u64::from(bits) {
                0
            } else {
                a << b
            }
        }
        BOp::Shr => {
            if b >= u64::from(bits) {
                if s && (a as i64) < 0 {
                    u64::MAX
                } else {
                    0
                }
            } else if s {
                ((a as i64) >> b) as u64
            } else {
                a >> b
            }
        }
        BOp::And => a & b,
        BOp::Or => a | b,
        BOp::Xor => a ^ b,
        BOp::Lt => return cmp(if s { (a as i64) < (b as i64) } else { a < b }),
        BOp::Gt => return cmp(if s { (a as i64) > (b as i64) } else { a > b }),
        BOp::Le => return cmp(if s { (a as i64) <= (b as i64) } else { a <= b }),
        BOp::Ge => return cmp(if s { (a as i64) >= (b as i64) } else { a >= b }),
        BOp::Eq => return cmp(a == b),
        BOp::Ne => return cmp(a != b),
    };
    Some(norm(r, ty))
}
