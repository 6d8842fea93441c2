//! `print fmt:` text → program: the format string split into literal and
//! conversion pieces, and the argument expressions compiled into a node
//! arena with every `REC->field` resolved to offset, size and sign.

use alloc::string::String;
use alloc::vec::Vec;

use super::ir::{norm, BOp, Id, Item, Node, Piece, Prog, Ty, UOp};
use super::lex::{escape, lex, Tok};
use super::vsprintf::{next_token, Conv, PtrFmt, Token};
use super::Error;
use crate::format::{EventFormat, Field, FieldKind};

fn promote(t: Ty) -> Ty {
    if t.size < 4 {
        Ty::INT
    } else {
        Ty { ptr: 0, ..t }
    }
}

fn arith(a: Ty, b: Ty) -> Ty {
    let (a, b) = (promote(a), promote(b));
    if a.size != b.size {
        if a.size > b.size {
            a
        } else {
            b
        }
    } else {
        Ty::int(a.size, a.signed && b.signed)
    }
}

/// Static kind of an expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Int(Ty),
    /// Bytes (a pointer to memory we have) or rendered text.
    Str,
    /// Could not be compiled; fits any conversion.
    Bad,
}

/// The print fmt compiler: walks the tokens of one event's print fmt and
/// emits the program's nodes, tracking their kinds and scopes.
struct Compiler<'t, 'e> {
    toks: &'t [Tok<'t>],
    pos: usize,
    ev: &'e EventFormat,
    /// The traced kernel's `unsigned long` (pointers and `sizeof` too).
    ulong: Ty,
    prog: Prog,
    kinds: Vec<Kind>,
    scopes: Vec<(&'t str, u8)>,
    next_slot: u8,
    /// Current expression nesting, bounded so hostile input cannot
    /// exhaust the stack.
    depth: u32,
    info: &'e dyn super::KernelInfo,
    /// Casts to `struct X *` with a known `sizeof(struct X)`: (node, size).
    elem: Vec<(Id, u64)>,
    /// Set by `type_name()` for such a struct pointer type.
    last_struct_size: Option<u64>,
}

type CompileResult<T> = Result<T, Error>;

fn err<T>(what: &'static str) -> CompileResult<T> {
    Err(Error::Unsupported(what))
}

/// Size and sign of a C type name as written in casts, declarations and
/// `sizeof`; `None` for names we do not know.
pub(crate) fn type_of(words: &[&str], stars: usize, ulong: Ty) -> Option<Ty> {
    let words: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !matches!(*w, "const" | "volatile" | "__user" | "__iomem" | "__rcu" | "__force"))
        .collect();
    if stars > 0 {
        let bytes = match words.as_slice() {
            ["void"] | ["char"] | ["unsigned", "char"] | ["signed", "char"] | ["u8"] | ["s8"] | ["__u8"] => 1,
            _ => 2,
        };
        return Some(Ty { size: ulong.size, signed: false, ptr: bytes });
    }
    let ls = ulong.size;
    let t = |size: u8, signed: bool| Some(Ty::int(size, signed));
    match words.as_slice() {
        ["struct" | "union", ..] => None,
        ["enum", _] => t(4, false),
        [w] => match *w {
            "char" | "s8" | "__s8" | "int8_t" => t(1, true),
            "u8" | "__u8" | "uint8_t" | "bool" | "_Bool" | "blk_status_t" => t(1, false),
            "short" | "s16" | "__s16" | "int16_t" => t(2, true),
            "u16" | "__u16" | "uint16_t" | "__be16" | "__le16" | "umode_t" => t(2, false),
            "int" | "signed" | "s32" | "__s32" | "int32_t" | "pid_t" | "__kernel_rwf_t" | "clockid_t" => t(4, true),
            "unsigned" | "u32" | "__u32" | "uint32_t" | "uint" | "gfp_t" | "__be32" | "__le32" | "dev_t" | "uid_t"
            | "gid_t" | "fmode_t" | "blk_opf_t" | "slab_flags_t" | "xfs_agnumber_t" | "xfs_agblock_t"
            | "xfs_extlen_t" => t(4, false),
            "long" => t(ls, true),
            "s64" | "__s64" | "int64_t" | "loff_t" | "ktime_t" | "time64_t" | "__kernel_loff_t" => t(8, true),
            "u64" | "__u64" | "uint64_t" | "__be64" | "__le64" | "sector_t" | "blkcnt_t" | "xfs_ino_t"
            | "xfs_fsblock_t" | "xfs_off_t" | "xfs_daddr_t" | "xfs_fileoff_t" | "xfs_filblks_t" | "dma_addr_t"
            | "phys_addr_t" | "resource_size_t" => t(8, w.starts_with("xfs_off") || w.starts_with("xfs_daddr")),
            "ulong" | "size_t" | "uintptr_t" | "ino_t" | "pgoff_t" | "unsigned_long" => t(ls, false),
            "ssize_t" | "intptr_t" | "ptrdiff_t" | "off_t" | "time_t" => t(ls, true),
            _ => None,
        },
        ["signed", "char"] => t(1, true),
        ["unsigned", "char"] => t(1, false),
        ["short", "int"] | ["signed", "short"] | ["short", "signed"] | ["signed", "short", "int"] => t(2, true),
        ["unsigned", "short"] | ["unsigned", "short", "int"] | ["short", "unsigned"] => t(2, false),
        ["signed", "int"] => t(4, true),
        ["unsigned", "int"] => t(4, false),
        ["long", "int"] | ["signed", "long"] | ["long", "signed"] | ["signed", "long", "int"] => t(ls, true),
        ["unsigned", "long"] | ["unsigned", "long", "int"] | ["long", "unsigned"] => t(ls, false),
        ["long", "long"] | ["long", "long", "int"] | ["signed", "long", "long"] | ["signed", "long", "long", "int"] => {
            t(8, true)
        }
        ["unsigned", "long", "long"] | ["unsigned", "long", "long", "int"] | ["long", "long", "unsigned"] => {
            t(8, false)
        }
        _ => None,
    }
}

/// Enum constants that some format files leave unexpanded (no
/// TRACE_DEFINE_ENUM) but whose values are fixed ABI or long-stable.
fn known_constant(name: &str) -> Option<u64> {
    if let Some(m) = name.strip_prefix("HRTIMER_MODE_") {
        // ABS 0, REL 1, PINNED 2, SOFT 4, HARD 8 (4.16+).
        let mut v = 0;
        for part in m.split('_') {
            v |= match part {
                "ABS" => 0,
                "REL" => 1,
                "PINNED" => 2,
                "SOFT" => 4,
                "HARD" => 8,
                _ => return None,
            };
        }
        return Some(v);
    }
    let v = match name {
        "IOPRIO_CLASS_NONE" => 0,
        "IOPRIO_CLASS_RT" => 1,
        "IOPRIO_CLASS_BE" => 2,
        "IOPRIO_CLASS_IDLE" => 3,
        "IOPRIO_CLASS_INVALID" => 7,
        "TCP_ESTABLISHED" => 1,
        "TCP_SYN_SENT" => 2,
        "TCP_SYN_RECV" => 3,
        "TCP_FIN_WAIT1" => 4,
        "TCP_FIN_WAIT2" => 5,
        "TCP_TIME_WAIT" => 6,
        "TCP_CLOSE" => 7,
        "TCP_CLOSE_WAIT" => 8,
        "TCP_LAST_ACK" => 9,
        "TCP_LISTEN" => 10,
        "TCP_CLOSING" => 11,
        "TCP_NEW_SYN_RECV" => 12,
        "TCP_BOUND_INACTIVE" => 13,
        _ => return None,
    };
    Some(v)
}

fn is_type_word(w: &str) -> bool {
    matches!(
        w,
        "const"
            | "volatile"
            | "unsigned"
            | "signed"
            | "char"
            | "short"
            | "int"
            | "long"
            | "void"
            | "struct"
            | "union"
            | "enum"
            | "bool"
            | "_Bool"
    ) || type_of(&[w], 0, Ty::int(8, false)).is_some()
}

impl<'t, 'e> Compiler<'t, 'e> {
    fn peek(&self) -> Option<Tok<'t>> {
        self.toks.get(self.pos).copied()
    }
    fn peek_at(&self, n: usize) -> Option<Tok<'t>> {
        self.toks.get(self.pos + n).copied()
    }
    fn is(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if q == p)
    }
    fn eat(&mut self, p: &str) -> bool {
        if self.is(p) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, p: &str) -> CompileResult<()> {
        if self.eat(p) {
            Ok(())
        } else {
            err("syntax")
        }
    }
    fn ident(&mut self) -> CompileResult<&'t str> {
        match self.peek() {
            Some(Tok::Ident(s)) => {
                self.pos += 1;
                Ok(s)
            }
            _ => err("syntax"),
        }
    }

    fn push(&mut self, n: Node, k: Kind) -> CompileResult<Id> {
        if self.prog.nodes.len() >= 1 << 16 {
            return err("too large");
        }
        // Fold operations on constants (kernel masks are long constant
        // expressions) so records do not re-evaluate them.
        let is_const = |id: Id| matches!(self.prog.nodes.get(id as usize), Some(Node::Const(..)));
        let foldable = match n {
            Node::Unary(_, a, _) | Node::Cast(_, a) => is_const(a),
            Node::Binary(_, a, b, _) | Node::Logic(_, a, b) => is_const(a) && is_const(b),
            Node::Cond(c, a, b, Some(_)) => is_const(c) && is_const(a) && is_const(b),
            _ => false,
        };
        let n = match (foldable, k) {
            (true, Kind::Int(ty)) => {
                self.prog.nodes.push(n);
                let v = super::eval::Frame::constant(&self.prog).int((self.prog.nodes.len() - 1) as Id);
                self.prog.nodes.pop();
                match v {
                    Some(v) => Node::Const(v, ty),
                    None => n,
                }
            }
            _ => n,
        };
        self.prog.nodes.push(n);
        self.kinds.push(k);
        Ok((self.prog.nodes.len() - 1) as Id)
    }
    fn kind(&self, id: Id) -> Kind {
        self.kinds[id as usize]
    }
    fn int_ty(&self, id: Id) -> CompileResult<Ty> {
        match self.kind(id) {
            Kind::Int(t) => Ok(t),
            Kind::Str => err("pointer arithmetic on a string"),
            Kind::Bad => err("unknown"),
        }
    }

    /// Adjacent string literals, decoded, appended to the pool (bytes that
    /// are not UTF-8 become U+FFFD, as they would when written).
    fn strings(&mut self) -> CompileResult<(u32, u32)> {
        let start = self.prog.pool.len();
        let mut any = false;
        let mut buf: Vec<u8> = Vec::new();
        while let Some(Tok::Str(s)) = self.peek() {
            self.pos += 1;
            any = true;
            let b = s.as_bytes();
            let mut i = 0;
            while i < b.len() {
                if b[i] == b'\\' {
                    let (c, n) = escape(&b[i + 1..]);
                    buf.push(c);
                    i += 1 + n;
                } else {
                    buf.push(b[i]);
                    i += 1;
                }
            }
        }
        if !any {
            return err("expected a string");
        }
        self.prog.pool.push_str(&String::from_utf8_lossy(&buf));
        Ok((start as u32, (self.prog.pool.len() - start) as u32))
    }

    fn field(&self, name: &str) -> CompileResult<&'e Field> {
        let ev = self.ev;
        match ev.fields.iter().chain(ev.common.iter()).find(|f| f.name == name) {
            Some(f) => Ok(f),
            None => err("unknown field"),
        }
    }

    fn field_node(&mut self, name: &str) -> CompileResult<Id> {
        let f = self.field(name)?;
        match f.kind {
            FieldKind::Scalar if matches!(f.size, 1 | 2 | 4 | 8) => {
                let ptr = f.type_name.contains('*');
                let ty = Ty { size: f.size as u8, signed: f.signed && !ptr, ptr: if ptr { 2 } else { 0 } };
                if self.is("[") {
                    return err("indexing a scalar");
                }
                self.push(Node::Field { off: f.offset, ty }, Kind::Int(ty))
            }
            FieldKind::Array { elem_size, count } if self.is("[") && matches!(elem_size, 1 | 2 | 4 | 8) => {
                self.pos += 1;
                let idx = self.expr()?;
                self.int_ty(idx)?;
                self.expect("]")?;
                let ptr = f.type_name.contains('*');
                let ty = Ty { size: elem_size as u8, signed: f.signed && !ptr, ptr: 0 };
                self.push(Node::Elem { off: f.offset, count, ty, idx }, Kind::Int(ty))
            }
            _ => self.push(Node::Bytes(f.loc()), Kind::Str),
        }
    }

    /// A type name in parentheses or after `sizeof(`: words and stars.
    fn type_name(&mut self) -> CompileResult<Ty> {
        self.last_struct_size = None;
        let mut words: Vec<&str> = Vec::new();
        while let Some(Tok::Ident(w)) = self.peek() {
            words.push(w);
            self.pos += 1;
        }
        let mut stars = 0;
        while self.eat("*") {
            stars += 1;
            while let Some(Tok::Ident("const")) = self.peek() {
                self.pos += 1;
            }
        }
        if stars == 1 {
            if let [.., "struct" | "union", name] = words.as_slice() {
                self.last_struct_size = self.info.sizeof_struct(name).filter(|&n| n > 0).map(u64::from);
            }
        }
        let from_info = || match words
            .iter()
            .copied()
            .filter(|w| !matches!(*w, "const" | "volatile"))
            .collect::<Vec<_>>()
            .as_slice()
        {
            [w] if stars == 0 => match self.info.typedef(w) {
                Some((size @ (1 | 2 | 4 | 8), signed)) => Some(Ty::int(size as u8, signed)),
                _ => None,
            },
            _ => None,
        };
        match type_of(&words, stars, self.ulong).or_else(from_info) {
            Some(t) => Ok(t),
            None if words.first().is_some_and(|w| matches!(*w, "struct" | "union")) => err("struct type"),
            None => err("unknown type"),
        }
    }

    /// Does `(` at the cursor start a cast?
    fn at_cast(&self) -> bool {
        if !self.is("(") {
            return false;
        }
        match self.peek_at(1) {
            Some(Tok::Ident(w)) => {
                (is_type_word(w) || self.info.typedef(w).is_some()) && !self.scopes.iter().any(|(n, _)| *n == w)
            }
            _ => false,
        }
    }

    fn expr(&mut self) -> CompileResult<Id> {
        self.cond()
    }

    fn cond(&mut self) -> CompileResult<Id> {
        let c = self.binary(0)?;
        if !self.eat("?") {
            return Ok(c);
        }
        let a = self.expr()?;
        self.expect(":")?;
        let b = self.cond()?;
        let k = match (self.kind(a), self.kind(b)) {
            (Kind::Int(x), Kind::Int(y)) => Kind::Int(arith(x, y)),
            (Kind::Str, Kind::Str) => Kind::Str,
            // `cond ? "str" : 0` style NULL.
            (Kind::Str, Kind::Int(_)) | (Kind::Int(_), Kind::Str) => Kind::Str,
            (Kind::Bad, _) | (_, Kind::Bad) => return err("unknown"),
        };
        let ty = match k {
            Kind::Int(t) => Some(t),
            _ => None,
        };
        self.push(Node::Cond(c, a, b, ty), k)
    }

    fn binary(&mut self, min_prec: u8) -> CompileResult<Id> {
        let mut lhs = self.unary()?;
        while let Some(Tok::Punct(p)) = self.peek() {
            let (prec, op) = match p {
                "||" => (1, None),
                "&&" => (2, None),
                "|" => (3, Some(BOp::Or)),
                "^" => (4, Some(BOp::Xor)),
                "&" => (5, Some(BOp::And)),
                "==" => (6, Some(BOp::Eq)),
                "!=" => (6, Some(BOp::Ne)),
                "<" => (7, Some(BOp::Lt)),
                ">" => (7, Some(BOp::Gt)),
                "<=" => (7, Some(BOp::Le)),
                ">=" => (7, Some(BOp::Ge)),
                "<<" => (8, Some(BOp::Shl)),
                ">>" => (8, Some(BOp::Shr)),
                "+" => (9, Some(BOp::Add)),
                "-" => (9, Some(BOp::Sub)),
                "*" => (10, Some(BOp::Mul)),
                "/" => (10, Some(BOp::Div)),
                "%" => (10, Some(BOp::Rem)),
                _ => break,
            };
            if prec <= min_prec {
                break;
            }
            self.pos += 1;
            let rhs = self.binary(prec)?;
            lhs = match op {
                None => {
                    // Truthiness works on strings (non-NULL pointers) too.
                    self.push(Node::Logic(p == "&&", lhs, rhs), Kind::Int(Ty::INT))?
                }
                Some(op) => {
                    let (a, b) = (self.int_ty(lhs)?, self.int_ty(rhs)?);
                    let mut rhs = rhs;
                    if matches!(op, BOp::Add | BOp::Sub) && (a.ptr == 2 || b.ptr == 2) {
                        // `(struct X *)p + n` with a known sizeof(struct X).
                        let size = self.elem.iter().find(|e| e.0 == lhs).map(|e| e.1);
                        match size {
                            Some(n) if b.ptr == 0 => {
                                let ty = self.ulong;
                                let c = self.push(Node::Const(n, ty), Kind::Int(ty))?;
                                rhs = self.push(Node::Binary(BOp::Mul, rhs, c, ty), Kind::Int(ty))?;
                            }
                            _ => return err("pointer arithmetic"),
                        }
                    }
                    let ty = match op {
                        BOp::Shl | BOp::Shr => promote(a),
                        BOp::Lt | BOp::Gt | BOp::Le | BOp::Ge | BOp::Eq | BOp::Ne => arith(a, b),
                        _ => arith(a, b),
                    };
                    let res = match op {
                        BOp::Lt | BOp::Gt | BOp::Le | BOp::Ge | BOp::Eq | BOp::Ne => Ty::INT,
                        _ => ty,
                    };
                    self.push(Node::Binary(op, lhs, rhs, ty), Kind::Int(res))?
                }
            };
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> CompileResult<Id> {
        if self.depth >= 128 {
            return err("nesting too deep");
        }
        self.depth += 1;
        let r = self.unary_inner();
        self.depth -= 1;
        r
    }

    fn unary_inner(&mut self) -> CompileResult<Id> {
        if self.at_cast() {
            self.pos += 1;
            let ty = self.type_name()?;
            let elem = self.last_struct_size;
            self.expect(")")?;
            let e = self.unary()?;
            return match self.kind(e) {
                Kind::Str if ty.ptr != 0 => Ok(e),
                Kind::Str | Kind::Bad => err("cast of a pointer to an integer"),
                Kind::Int(_) => {
                    let id = self.push(Node::Cast(ty, e), Kind::Int(ty))?;
                    if let Some(n) = elem {
                        self.elem.push((id, n));
                    }
                    Ok(id)
                }
            };
        }
        let Some(tok) = self.peek() else { return err("syntax") };
        if let Tok::Punct(p @ ("-" | "+" | "!" | "~")) = tok {
            self.pos += 1;
            let e = self.unary()?;
            if p == "!" {
                return self.push(Node::Unary(UOp::Not, e, Ty::INT), Kind::Int(Ty::INT));
            }
            let t = promote(self.int_ty(e)?);
            return match p {
                "+" => Ok(e),
                "-" => self.push(Node::Unary(UOp::Neg, e, t), Kind::Int(t)),
                _ => self.push(Node::Unary(UOp::BitNot, e, t), Kind::Int(t)),
            };
        }
        if let Tok::Ident("sizeof") = tok {
            self.pos += 1;
            self.expect("(")?;
            let size = if matches!(self.peek(), Some(Tok::Ident(w)) if is_type_word(w)) {
                let t = self.type_name()?;
                if t.ptr != 0 {
                    self.ulong.size
                } else {
                    t.size
                }
            } else {
                let e = self.expr()?;
                match self.kind(e) {
                    Kind::Int(t) => t.size,
                    _ => return err("sizeof of an array"),
                }
            };
            self.expect(")")?;
            let ty = self.ulong;
            return self.push(Node::Const(u64::from(size), ty), Kind::Int(ty));
        }
        self.postfix()
    }

    fn postfix(&mut self) -> CompileResult<Id> {
        let mut e = self.primary()?;
        while self.is("[") {
            self.pos += 1;
            let idx = self.expr()?;
            self.int_ty(idx)?;
            self.expect("]")?;
            if self.kind(e) != Kind::Str {
                return err("indexing an integer");
            }
            let ty = Ty::int(1, true);
            e = self.push(Node::ByteAt { base: e, idx, ty }, Kind::Int(ty))?;
        }
        Ok(e)
    }

    /// `REC->name` after the `REC` (or `(REC)`) has been consumed.
    fn rec_member(&mut self) -> CompileResult<Id> {
        self.expect("->")?;
        let name = self.ident()?;
        self.field_node(name)
    }

    fn primary(&mut self) -> CompileResult<Id> {
        let Some(tok) = self.peek() else { return err("syntax") };
        self.pos += 1;
        match tok {
            Tok::Num { v, unsigned, longs, radix } => {
                let ls = self.ulong.size;
                let fits = |bits: u32, signed: bool| {
                    let b = if signed { bits - 1 } else { bits };
                    b >= 64 || v < (1u64 << b)
                };
                let cands: &[(u8, bool)] = match (unsigned, longs) {
                    (false, 0) if !radix => &[(4, true), (ls, true), (8, true)],
                    (false, 0) => &[(4, true), (4, false), (ls, true), (ls, false), (8, true), (8, false)],
                    (true, 0) => &[(4, false), (ls, false), (8, false)],
                    (false, 1) if !radix => &[(ls, true), (8, true)],
                    (false, 1) => &[(ls, true), (ls, false), (8, true), (8, false)],
                    (true, 1) => &[(ls, false), (8, false)],
                    (false, _) if !radix => &[(8, true)],
                    (false, _) => &[(8, true), (8, false)],
                    (true, _) => &[(8, false)],
                };
                let &(size, signed) = cands.iter().find(|(s, g)| fits(u32::from(*s) * 8, *g)).unwrap_or(&(8, false));
                let ty = Ty::int(size, signed);
                self.push(Node::Const(norm(v, ty), ty), Kind::Int(ty))
            }
            Tok::Char(v) => self.push(Node::Const(norm(v, Ty::INT), Ty::INT), Kind::Int(Ty::INT)),
            Tok::Str(_) => {
                self.pos -= 1;
                let (o, l) = self.strings()?;
                self.push(Node::Lit(o, l), Kind::Str)
            }
            Tok::Punct("(") => {
                if self.eat("{") {
                    return self.block();
                }
                if matches!(self.peek(), Some(Tok::Ident("REC"))) && matches!(self.peek_at(1), Some(Tok::Punct(")"))) {
                    self.pos += 2;
                    return self.rec_member();
                }
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            Tok::Ident("REC") => self.rec_member(),
            Tok::Ident(name) => {
                if let Some(&(_, slot)) = self.scopes.iter().rev().find(|(n, _)| *n == name) {
                    let ty = self.prog.decls.iter().rev().find(|d| d.0 == slot).map(|d| d.1).unwrap_or(Ty::INT);
                    return self.push(Node::Local(slot), Kind::Int(ty));
                }
                if !self.is("(") {
                    if let Some(v) = known_constant(name) {
                        return self.push(Node::Const(v, Ty::INT), Kind::Int(Ty::INT));
                    }
                    if let Some(v) = self.info.enum_value(name) {
                        return self.push(Node::Const(norm(v as u64, Ty::INT), Ty::INT), Kind::Int(Ty::INT));
                    }
                    if let Some(v) = self.info.variable(name) {
                        let ty = self.ulong;
                        return self.push(Node::Const(norm(v, ty), ty), Kind::Int(ty));
                    }
                }
                match name {
                    "true" => return self.push(Node::Const(1, Ty::INT), Kind::Int(Ty::INT)),
                    "false" | "NULL" => return self.push(Node::Const(0, Ty::INT), Kind::Int(Ty::INT)),
                    _ => {}
                }
                if !self.is("(") {
                    return err("unknown identifier");
                }
                self.pos += 1;
                let r = self.call(name)?;
                self.expect(")")?;
                Ok(r)
            }
            _ => err("syntax"),
        }
    }

    fn field_arg(&mut self) -> CompileResult<&'e Field> {
        let name = self.ident()?;
        self.field(name)
    }

    fn call(&mut self, name: &str) -> CompileResult<Id> {
        match name {
            "__get_str"
            | "__get_rel_str"
            | "__get_dynamic_array"
            | "__get_rel_dynamic_array"
            | "__get_sockaddr"
            | "__get_rel_sockaddr" => {
                let f = self.field_arg()?;
                self.push(Node::Bytes(f.loc()), Kind::Str)
            }
            "__get_dynamic_array_len" | "__get_rel_dynamic_array_len" => {
                let f = self.field_arg()?;
                if !matches!(f.kind, FieldKind::DataLoc { .. } | FieldKind::RelLoc { .. }) {
                    return err("dynamic array length of a fixed field");
                }
                self.push(Node::DynLen(f.loc()), Kind::Int(Ty::UINT))
            }
            "__get_bitmask" | "__get_rel_bitmask" | "__get_cpumask" | "__get_rel_cpumask" => {
                let f = self.field_arg()?;
                self.push(Node::Bitmask(f.loc()), Kind::Str)
            }
            "__builtin_expect" => {
                let e = self.expr()?;
                self.expect(",")?;
                self.expr()?;
                Ok(e)
            }
            "__print_flags" | "__print_flags_u64" => {
                let val = self.expr()?;
                self.int_ty(val)?;
                self.expect(",")?;
                let delim = self.strings()?;
                let tab = self.table()?;
                self.push(Node::Flags { val, delim, tab, wide: name.ends_with("u64") }, Kind::Str)
            }
            "__print_symbolic" | "__print_symbolic_u64" => {
                let val = self.expr()?;
                self.int_ty(val)?;
                let tab = self.table()?;
                self.push(Node::Symbolic { val, tab, wide: name.ends_with("u64") }, Kind::Str)
            }
            "__print_hex" | "__print_hex_str" => {
                let buf = self.expr()?;
                if self.kind(buf) != Kind::Str {
                    return err("__print_hex of a pointer value");
                }
                self.expect(",")?;
                let len = self.expr()?;
                self.int_ty(len)?;
                self.push(Node::Hex { buf, len, concat: name == "__print_hex_str" }, Kind::Str)
            }
            "__print_array" => {
                let buf = self.expr()?;
                if self.kind(buf) != Kind::Str {
                    return err("__print_array of a pointer value");
                }
                self.expect(",")?;
                let count = self.expr()?;
                self.int_ty(count)?;
                self.expect(",")?;
                let elsize = self.expr()?;
                self.int_ty(elsize)?;
                self.push(Node::Array { buf, count, elsize }, Kind::Str)
            }
            "__print_ns_to_secs" | "__print_ns_without_secs" => {
                let v = self.expr()?;
                self.int_ty(v)?;
                let c = self.push(Node::Cast(Ty::U64, v), Kind::Int(Ty::U64))?;
                let g = self.push(Node::Const(1_000_000_000, Ty::U64), Kind::Int(Ty::U64))?;
                if name == "__print_ns_to_secs" {
                    self.push(Node::Binary(BOp::Div, c, g, Ty::U64), Kind::Int(Ty::U64))
                } else {
                    let r = self.push(Node::Binary(BOp::Rem, c, g, Ty::U64), Kind::Int(Ty::U64))?;
                    self.push(Node::Cast(Ty::UINT, r), Kind::Int(Ty::UINT))
                }
            }
            _ => err("unknown function"),
        }
    }

    /// `, { mask, "name" } …` of `__print_flags` / `__print_symbolic`.
    fn table(&mut self) -> CompileResult<(u32, u32)> {
        let start = self.prog.table.len();
        let mut ended = false;
        while self.eat(",") {
            self.expect("{")?;
            if self.eat("}") {
                // `{ }`: an empty table.
                ended = true;
                continue;
            }
            let at = self.pos;
            let mask = match self.expr().and_then(|m| self.constant(m)) {
                Ok(v) => Some(v),
                Err(Error::Unsupported("unknown identifier")) => {
                    // An enum constant the format file did not expand: the
                    // entry cannot match anything we know.
                    self.pos = at;
                    self.skip_balanced(&["}"], false)?;
                    self.eat("}");
                    self.prog.unknown.push("table constant");
                    continue;
                }
                Err(e) => return Err(e),
            };
            self.expect(",")?;
            if matches!(self.peek(), Some(Tok::Str(_))) {
                let (o, l) = self.strings()?;
                self.expect("}")?;
                if !ended {
                    if let Some(m) = mask {
                        self.prog.table.push((m, o, l));
                    }
                }
            } else {
                // `{ 0, NULL }` / `{ -1, 0 }`: the kernel stops at a NULL name.
                self.expr()?;
                self.expect("}")?;
                ended = true;
            }
        }
        Ok((start as u32, (self.prog.table.len() - start) as u32))
    }

    /// Skip to the next `,` or one of `stops` at nesting depth 0 (not
    /// consuming it).
    fn skip_balanced(&mut self, stops: &[&str], comma: bool) -> CompileResult<()> {
        let mut depth = 0i32;
        while let Some(t) = self.peek() {
            if let Tok::Punct(p) = t {
                if depth == 0 && ((comma && p == ",") || stops.contains(&p)) {
                    return Ok(());
                }
                match p {
                    "(" | "{" | "[" => depth += 1,
                    ")" | "}" | "]" => {
                        depth -= 1;
                        if depth < 0 {
                            return Ok(());
                        }
                    }
                    _ => {}
                }
            }
            self.pos += 1;
        }
        Ok(())
    }

    /// Fold a constant expression (table masks).
    fn constant(&self, id: Id) -> CompileResult<u64> {
        let ctx = super::eval::Frame::constant(&self.prog);
        match ctx.int(id) {
            Some(v) => Ok(v),
            None => err("non-constant flag value"),
        }
    }

    /// `({ T a = e; …; result; })` after `({`.
    fn block(&mut self) -> CompileResult<Id> {
        let depth = self.scopes.len();
        let mut decls: Vec<(u8, Ty, Id)> = Vec::new();
        let result;
        loop {
            let is_decl = matches!(self.peek(), Some(Tok::Ident(w)) if is_type_word(w) && !self.scopes.iter().any(|(n, _)| *n == w));
            if is_decl {
                let mut words: Vec<&str> = Vec::new();
                let mut name = None;
                while let Some(Tok::Ident(w)) = self.peek() {
                    self.pos += 1;
                    if matches!(self.peek(), Some(Tok::Punct("="))) {
                        name = Some(w);
                        break;
                    }
                    words.push(w);
                }
                let (Some(name), Some(ty)) = (name, type_of(&words, 0, self.ulong)) else {
                    return err("declaration");
                };
                self.expect("=")?;
                let init = self.expr()?;
                self.int_ty(init)?;
                self.expect(";")?;
                if self.next_slot >= 16 {
                    return err("too many locals");
                }
                let slot = self.next_slot;
                self.next_slot += 1;
                let c = self.push(Node::Cast(ty, init), Kind::Int(ty))?;
                decls.push((slot, ty, c));
                self.prog.decls.push((slot, ty, c));
                self.scopes.push((name, slot));
                continue;
            }
            let e = self.expr()?;
            self.expect(";")?;
            if self.eat("}") {
                result = e;
                break;
            }
        }
        self.expect(")")?;
        self.scopes.truncate(depth);
        let first = self.prog.decls.len() - decls.len();
        // Keep this block's declarations contiguous.
        let first = if self.prog.decls[first..] == decls[..] {
            first
        } else {
            let f = self.prog.decls.len();
            self.prog.decls.extend_from_slice(&decls);
            f
        };
        let k = self.kind(result);
        self.push(Node::Block { first: first as u32, n: decls.len() as u32, result }, k)
    }
}

/// Compile `ev.print_fmt`; on failure also returns the index of the token
/// where it stopped and a few tokens of context.
pub(crate) fn compile(ev: &EventFormat, long_size: u32, info: &dyn super::KernelInfo) -> Result<Prog, (Error, String)> {
    let src = ev.print_fmt.trim();
    let toks = lex(src).ok_or((Error::Unsupported("tokens"), String::new()))?;
    let mut p = Compiler {
        toks: &toks,
        pos: 0,
        ev,
        ulong: Ty::int(if long_size == 4 { 4 } else { 8 }, false),
        prog: Prog::default(),
        kinds: Vec::new(),
        scopes: Vec::new(),
        next_slot: 0,
        depth: 0,
        info,
        elem: Vec::new(),
        last_struct_size: None,
    };
    match compile_in(&mut p) {
        Ok(()) => Ok(p.prog),
        Err(e) => {
            let mut ctx = String::new();
            let from = p.pos.saturating_sub(3);
            for t in toks.iter().skip(from).take(6) {
                match t {
                    Tok::Num { v, .. } => ctx.push_str(&alloc::format!("{v} ")),
                    Tok::Str(s) => ctx.push_str(&alloc::format!("\"{s}\" ")),
                    Tok::Char(c) => ctx.push_str(&alloc::format!("'{c}' ")),
                    Tok::Ident(s) | Tok::Punct(s) => {
                        ctx.push_str(s);
                        ctx.push(' ');
                    }
                }
            }
            Err((e, ctx))
        }
    }
}

fn compile_in(p: &mut Compiler) -> CompileResult<()> {
    let (fo, fl) = p.strings()?;
    let mut args: Vec<Id> = Vec::new();
    while p.eat(",") {
        let at = p.pos;
        match p.expr() {
            Ok(id) => args.push(id),
            Err(Error::Unsupported(why @ ("unknown identifier" | "unknown function" | "struct type"))) => {
                // One argument we cannot compute (a kernel variable, a
                // kernel function): it prints a marker, the rest renders.
                p.pos = at;
                p.scopes.clear();
                p.skip_balanced(&[], true)?;
                p.prog.unknown.push(why);
                args.push(p.push(Node::Unknown, Kind::Bad)?);
            }
            Err(e) => return Err(e),
        }
    }
    if p.pos != p.toks.len() {
        return err("trailing text");
    }
    let fmt: Vec<u8> = p.prog.pool.as_bytes()[fo as usize..(fo + fl) as usize].to_vec();
    let mut next = args.iter().copied();
    let mut items = Vec::new();
    let mut f = &fmt[..];
    let mut at = fo;
    while let Some((tok, n)) = next_token(f) {
        match tok {
            Token::Lit(_) => items.push(Item::lit(&p.prog.pool, at, n as u32)),
            Token::Invalid => break,
            Token::Spec(spec) => {
                let take_int = |p: &Compiler, next: &mut dyn Iterator<Item = Id>| -> CompileResult<Id> {
                    let id = next.next().ok_or(Error::Unsupported("too few arguments"))?;
                    p.int_ty(id)?;
                    Ok(id)
                };
                let width = if spec.width_star { Some(take_int(p, &mut next)?) } else { None };
                let prec = if spec.prec_star { Some(take_int(p, &mut next)?) } else { None };
                let mut wide = true;
                let arg = if spec.conv == Conv::Percent {
                    None
                } else {
                    let mut id = next.next().ok_or(Error::Unsupported("too few arguments"))?;
                    let k = p.kind(id);
                    let mismatch = match (spec.conv, k) {
                        (Conv::Int { .. } | Conv::Char, Kind::Str) => Some("string for an integer conversion"),
                        (Conv::Str, Kind::Int(_)) => {
                            p.prog.needs_strings = true;
                            None
                        }
                        // The kernel prints the address of record memory.
                        (Conv::Ptr(pf), Kind::Str) if pf.takes_value() => Some("address of record memory"),
                        (Conv::Ptr(PtrFmt::Sym { .. } | PtrFmt::Backtrace), Kind::Int(_)) => {
                            p.prog.needs_syms = true;
                            None
                        }
                        _ => None,
                    };
                    if let Some(why) = mismatch {
                        p.prog.unknown.push(why);
                        id = p.push(Node::Unknown, Kind::Bad)?;
                    }
                    if let Kind::Int(t) = k {
                        wide = t.size > 4;
                    }
                    Some(id)
                };
                items.push(Item::Conv(Piece { spec, width, prec, arg, wide }));
            }
        }
        f = &f[n..];
        at += n as u32;
    }
    p.prog.items = items;
    #[cfg(feature = "host")]
    {
        p.prog.ops = super::fast::compile(&p.prog, u32::from(p.ulong.size));
    }
    Ok(())
}
