//! The kernel's printf engine (lib/vsprintf.c semantics): conversion-spec
//! decoding, `number()`, string widening, the `%p` extensions trace events
//! use, and `bstr_printf` for `bprint` records.
//!
//! Everything writes into a `core::fmt::Write`; nothing allocates.

use core::fmt::{self, Write};

use super::digits::{Digits, StackBuf, DIGITS};
use crate::abi::{Abi, Endian};

pub(crate) const SIGN: u8 = 1;
pub(crate) const LEFT: u8 = 2;
pub(crate) const PLUS: u8 = 4;
pub(crate) const SPACE: u8 = 8;
pub(crate) const ZEROPAD: u8 = 16;
pub(crate) const SMALL: u8 = 32;
pub(crate) const SPECIAL: u8 = 64;

/// The kernel's trace_seq is one page; nothing wider makes sense, and a cap
/// keeps hostile widths from producing gigabytes.
const WIDTH_MAX: i32 = 4096;

/// Length qualifier of an integer conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Qual {
    None,
    /// `hh`
    Char,
    /// `h`
    Short,
    /// `l`
    Long,
    /// `ll` / `L`
    LongLong,
    /// `z`
    Size,
    /// `t`
    PtrDiff,
}

/// What a `%p` extension prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PtrFmt {
    /// `%p` (printed like `%px`: hash-ptr off) .
    Plain,
    /// `%px`
    Hex,
    /// `%pK`
    Restricted,
    /// `%ps` / `%pf` (offset false), `%pS` / `%pF` (offset true).
    Sym { offset: bool },
    /// `%pB`
    Backtrace,
    /// `%pI4`, `%pi4` with byte order.
    Ip4 { zeros: bool, reverse: bool },
    /// `%pI6`, `%pi6`, `%pI6c`.
    Ip6 { colons: bool, compress: bool },
    /// `%pIS…` / `%piS…`
    IpSock { colons: bool, port: bool, compress: bool, flow: bool, scope: bool, reverse: bool, zeros: bool },
    /// `%pM`, `%pMF`, `%pMR`, `%pm`
    Mac { sep: u8, reverse: bool },
    /// `%pU[bBlL]`
    Uuid { little: bool, upper: bool },
    /// `%*ph[CDN]`
    HexBuf { sep: u8 },
    /// `%*pb`, `%*pbl`
    Bitmap { list: bool },
    /// Anything else: printed as a raw pointer value.
    Other,
}

/// The conversion character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Conv {
    Int { base: u8 },
    Char,
    Str,
    Ptr(PtrFmt),
    Percent,
}

/// One decoded conversion specification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Spec {
    pub(crate) flags: u8,
    /// -1 when not given.
    pub(crate) width: i32,
    pub(crate) width_star: bool,
    /// -1 when not given.
    pub(crate) prec: i32,
    pub(crate) prec_star: bool,
    pub(crate) qual: Qual,
    pub(crate) conv: Conv,
}

/// One token of a format string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Token<'a> {
    /// Text copied as it is (`%%` is a [`Spec`] of its own).
    Lit(&'a [u8]),
    /// A conversion, `%` up to its conversion character.
    Spec(Spec),
    /// An unsupported conversion: the kernel stops formatting here.
    Invalid,
}

fn skip_atoi(f: &[u8], i: &mut usize) -> i32 {
    let mut v: i32 = 0;
    while let Some(&c) = f.get(*i) {
        if !c.is_ascii_digit() {
            break;
        }
        v = v.saturating_mul(10).saturating_add(i32::from(c - b'0'));
        *i += 1;
    }
    v.min(WIDTH_MAX)
}

/// Decode the next token of `f`; returns it and the number of bytes used.
/// `None` at the end.
pub(crate) fn next_token(f: &[u8]) -> Option<(Token<'_>, usize)> {
    if f.is_empty() {
        return None;
    }
    if f[0] != b'%' {
        let n = f.iter().position(|&c| c == b'%').unwrap_or(f.len());
        return Some((Token::Lit(&f[..n]), n));
    }
    let mut i = 1;
    let mut flags = 0u8;
    loop {
        match f.get(i) {
            Some(b'-') => flags |= LEFT,
            Some(b'+') => flags |= PLUS,
            Some(b' ') => flags |= SPACE,
            Some(b'#') => flags |= SPECIAL,
            Some(b'0') => flags |= ZEROPAD,
            _ => break,
        }
        i += 1;
    }
    let mut spec =
        Spec { flags, width: -1, width_star: false, prec: -1, prec_star: false, qual: Qual::None, conv: Conv::Percent };
    match f.get(i) {
        Some(c) if c.is_ascii_digit() => spec.width = skip_atoi(f, &mut i),
        Some(b'*') => {
            spec.width_star = true;
            i += 1;
        }
        _ => {}
    }
    if f.get(i) == Some(&b'.') {
        i += 1;
        match f.get(i) {
            Some(c) if c.is_ascii_digit() => spec.prec = skip_atoi(f, &mut i),
            Some(b'*') => {
                spec.prec_star = true;
                i += 1;
            }
            // "%.d": precision 0 in C; the kernel leaves it at -1.
            _ => {}
        }
    }
    match f.get(i) {
        Some(b'h') => {
            i += 1;
            spec.qual = Qual::Short;
            if f.get(i) == Some(&b'h') {
                i += 1;
                spec.qual = Qual::Char;
            }
        }
        Some(b'l') => {
            i += 1;
            spec.qual = Qual::Long;
            if f.get(i) == Some(&b'l') {
                i += 1;
                spec.qual = Qual::LongLong;
            }
        }
        Some(b'L') => {
            i += 1;
            spec.qual = Qual::LongLong;
        }
        Some(b'z') => {
            i += 1;
            spec.qual = Qual::Size;
        }
        Some(b't') => {
            i += 1;
            spec.qual = Qual::PtrDiff;
        }
        _ => {}
    }
    let Some(&c) = f.get(i) else { return Some((Token::Invalid, i)) };
    i += 1;
    spec.conv = match c {
        b'c' => Conv::Char,
        b's' => Conv::Str,
        b'%' => Conv::Percent,
        b'o' => Conv::Int { base: 8 },
        b'x' => {
            spec.flags |= SMALL;
            Conv::Int { base: 16 }
        }
        b'X' => Conv::Int { base: 16 },
        b'd' | b'i' => {
            spec.flags |= SIGN;
            Conv::Int { base: 10 }
        }
        b'u' => Conv::Int { base: 10 },
        b'p' => {
            let start = i;
            while f.get(i).is_some_and(|c| c.is_ascii_alphanumeric()) {
                i += 1;
            }
            Conv::Ptr(ptr_fmt(&f[start..i]))
        }
        _ => return Some((Token::Invalid, i - 1)),
    };
    Some((Token::Spec(spec), i))
}

/// Classify the alphanumerics after `%p`.
pub(crate) fn ptr_fmt(ext: &[u8]) -> PtrFmt {
    let at = |k: usize| ext.get(k).copied().unwrap_or(0);
    match at(0) {
        0 => PtrFmt::Plain,
        b'x' => PtrFmt::Hex,
        b'K' => PtrFmt::Restricted,
        b's' | b'f' => PtrFmt::Sym { offset: false },
        b'S' | b'F' => PtrFmt::Sym { offset: true },
        b'B' => PtrFmt::Backtrace,
        b'I' | b'i' => {
            let colons = at(0) == b'I';
            match at(1) {
                b'4' => PtrFmt::Ip4 { zeros: !colons, reverse: matches!(at(2), b'h' | b'l') },
                b'6' => PtrFmt::Ip6 { colons, compress: colons && at(2) == b'c' },
                b'S' => {
                    let rest = &ext[2..];
                    let has = |ch: u8| rest.iter().take_while(|c| c.is_ascii_alphabetic()).any(|&c| c == ch);
                    PtrFmt::IpSock {
                        colons,
                        port: has(b'p'),
                        compress: has(b'c'),
                        flow: has(b'f'),
                        scope: has(b's'),
                        reverse: has(b'h') || has(b'l'),
                        zeros: !colons,
                    }
                }
                _ => PtrFmt::Other,
            }
        }
        b'M' => match at(1) {
            b'F' => PtrFmt::Mac { sep: b'-', reverse: false },
            b'R' => PtrFmt::Mac { sep: b':', reverse: true },
            _ => PtrFmt::Mac { sep: b':', reverse: false },
        },
        b'm' => PtrFmt::Mac { sep: 0, reverse: at(1) == b'R' },
        b'U' => match at(1) {
            b'B' => PtrFmt::Uuid { little: false, upper: true },
            b'l' => PtrFmt::Uuid { little: true, upper: false },
            b'L' => PtrFmt::Uuid { little: true, upper: true },
            _ => PtrFmt::Uuid { little: false, upper: false },
        },
        b'h' => PtrFmt::HexBuf {
            sep: match at(1) {
                b'C' => b':',
                b'D' => b'-',
                b'N' => 0,
                _ => b' ',
            },
        },
        b'b' => PtrFmt::Bitmap { list: at(1) == b'l' },
        _ => PtrFmt::Other,
    }
}

impl PtrFmt {
    /// Whether the argument is the pointer value itself (true) or the
    /// memory it points at (false).
    pub(crate) fn takes_value(self) -> bool {
        matches!(
            self,
            PtrFmt::Plain | PtrFmt::Hex | PtrFmt::Restricted | PtrFmt::Sym { .. } | PtrFmt::Backtrace | PtrFmt::Other
        )
    }
}

/// A symbol found for an address. Its `Display` is the kernel's
/// (lib/vsprintf.c `symbol_string()`, kernel/kallsyms.c
/// `__sprint_symbol()`): `{}` as `%ps` prints it (`name`, ` [module]`
/// after a module's), `{:#}` as `%pS` (`name+0x1c/0x80`, then the module).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sym<'a> {
    /// The symbol's name.
    pub name: &'a str,
    /// Bytes from the symbol's start to the address (`+0x1c` in `%pS`).
    pub offset: u64,
    /// The symbol's size in bytes (`/0x80` in `%pS`), 0 when unknown.
    pub size: u64,
    /// The module it belongs to (`[ext4]`), `None` for the kernel proper.
    pub module: Option<&'a str>,
}

impl fmt::Display for Sym<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)?;
        if f.alternate() {
            write!(f, "+0x{:x}/0x{:x}", self.offset, self.size)?;
        }
        if let Some(m) = self.module {
            write!(f, " [{m}]")?;
        }
        Ok(())
    }
}

/// How the traced kernel recognises the kretprobe trampoline as a return
/// address (`is_kretprobe_trampoline()`), which its own output prints as
/// `[unknown/kretprobe'd]` (see `super::write_ip_symbol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KretprobeTrampoline {
    /// 5.15+: exactly this address (`__kretprobe_trampoline`, or
    /// `arch_rethook_trampoline` where kretprobes run on rethook).
    At(u64),
    /// Before 5.15: by name, any address inside `kretprobe_trampoline`,
    /// and only when no offset is printed (the kernel compared the whole
    /// string `kallsyms_lookup()` gave).
    Named,
}

/// Address → symbol (implemented by [`crate::kallsyms::Kallsyms`]).
pub trait SymbolLookup {
    /// The symbol containing `addr`, or `None` (printed as a bare
    /// address, as the kernel does).
    fn lookup(&self, addr: u64) -> Option<Sym<'_>>;
    /// The kretprobe trampoline of this kernel, when the table names it.
    fn kretprobe_trampoline(&self) -> Option<KretprobeTrampoline> {
        None
    }
    /// The records are a previous boot's (a persistent buffer): its move
    /// (`crate::lastboot::LastBoot`), this boot's table and `_text`.
    fn last_boot(&self) -> Option<LastBootView<'_>> {
        None
    }
    /// `addr` is in the kernel image (`__is_kernel()`), where the table
    /// knows its bounds.
    fn in_image(&self, _addr: u64) -> bool {
        false
    }
}

/// [`SymbolLookup::last_boot`].
#[derive(Clone, Copy)]
pub struct LastBootView<'a> {
    /// How the previous boot's addresses move to this boot's.
    pub(crate) moved: &'a crate::lastboot::LastBoot,
    /// This boot's table, looked up with addresses already moved.
    pub(crate) syms: &'a dyn SymbolLookup,
    /// This boot's `_text`.
    pub(crate) text: Option<u64>,
    /// This boot's `_stext` (where `caller_offs` count from).
    pub(crate) stext: Option<u64>,
}

/// Address → constant string (implemented by
/// `crate::printk::PrintkFormats`: `printk_formats` also lists every
/// `tracepoint_string`).
pub trait StringLookup {
    /// The string the kernel keeps at `addr`, or `None` (printed as the
    /// address).
    fn string_at(&self, addr: u64) -> Option<&str>;
}

/// What the renderer knows about the traced kernel and its tables.
#[derive(Clone, Copy)]
pub struct Ctx<'e> {
    /// Byte order and `sizeof(long)` (4 or 8) of the traced kernel.
    pub abi: Abi,
    /// Symbols for `%pS`-style conversions; `None`: print addresses.
    pub syms: Option<&'e dyn SymbolLookup>,
    /// Strings for `%s` of a pointer into the kernel; `None`: print the
    /// address.
    pub strings: Option<&'e dyn StringLookup>,
}

impl Ctx<'_> {
    pub(crate) fn long_mask(&self) -> u64 {
        self.abi.long_mask()
    }
}

/// Write `n` copies of `c`.
pub(crate) fn pad<W: Write + ?Sized>(w: &mut W, c: char, n: i32) -> fmt::Result {
    const SP: &str = "                                                                ";
    const ZE: &str = "0000000000000000000000000000000000000000000000000000000000000000";
    let src = match c {
        ' ' => SP,
        '0' => ZE,
        _ => {
            for _ in 0..n.clamp(0, WIDTH_MAX) {
                w.write_char(c)?;
            }
            return Ok(());
        }
    };
    let mut n = n.clamp(0, WIDTH_MAX) as usize;
    while n > 0 {
        let k = n.min(src.len());
        w.write_str(&src[..k])?;
        n -= k;
    }
    Ok(())
}

/// Write raw bytes: valid UTF-8 as is, anything else as U+FFFD.
pub(crate) fn write_bytes<W: Write + ?Sized>(w: &mut W, b: &[u8]) -> fmt::Result {
    if let Ok(s) = core::str::from_utf8(b) {
        return w.write_str(s);
    }
    for chunk in b.utf8_chunks() {
        w.write_str(chunk.valid())?;
        if !chunk.invalid().is_empty() {
            w.write_char('\u{fffd}')?;
        }
    }
    Ok(())
}

/// The kernel's `number()`.
pub(crate) fn number(w: &mut dyn Write, num: u64, base: u8, flags: u8, width: i32, precision: i32) -> fmt::Result {
    match simple_number(num, base, flags, width, precision) {
        Some(d) => w.write_str(d.as_str()),
        None => number_full(w, num, base, flags, width, precision),
    }
}

/// [`number`] of the common `%d`, `%u`, `%x`, `%llu`, `%08x`, `%p`: the
/// digits, maybe a sign, padded on the left to a small width. `None` for
/// the others (a precision, a wide field, `+`, ` `, `#` or `-`).
pub(crate) fn simple_number(num: u64, base: u8, flags: u8, width: i32, precision: i32) -> Option<Digits> {
    if width > 20 || precision >= 0 || flags & (SPECIAL | PLUS | SPACE | LEFT) != 0 {
        return None;
    }
    let neg = flags & SIGN != 0 && (num as i64) < 0;
    let v = if neg { (num as i64).unsigned_abs() } else { num };
    let mut d = Digits::new(v, base, flags & SMALL == 0);
    let width = width.max(0) as usize;
    if flags & ZEROPAD != 0 {
        while d.len() + usize::from(neg) < width && d.room() > 1 {
            d.prepend(b'0');
        }
    }
    if neg {
        d.prepend(b'-');
    }
    while d.len() < width && d.room() > 0 {
        d.prepend(b' ');
    }
    Some(d)
}

/// [`number`] with everything: precision, wide fields, `+`, ` `, `#`, `-`.
fn number_full(w: &mut dyn Write, num: u64, base: u8, flags: u8, width: i32, precision: i32) -> fmt::Result {
    let neg = flags & SIGN != 0 && (num as i64) < 0;
    let upper = flags & SMALL == 0;
    let mut flags = flags;
    let base = base.max(2);
    let need_pfx = flags & SPECIAL != 0 && base != 10;
    let is_zero = num == 0;
    let mut field_width = width.min(WIDTH_MAX);
    let mut precision = precision.min(WIDTH_MAX);
    if flags & LEFT != 0 {
        flags &= !ZEROPAD;
    }
    let mut sign = 0u8;
    let mut num = num;
    if flags & SIGN != 0 {
        if neg {
            sign = b'-';
            num = (num as i64).unsigned_abs();
            field_width -= 1;
        } else if flags & PLUS != 0 {
            sign = b'+';
            field_width -= 1;
        } else if flags & SPACE != 0 {
            sign = b' ';
            field_width -= 1;
        }
    }
    if need_pfx {
        if base == 16 {
            field_width -= 2;
        } else if !is_zero {
            field_width -= 1;
        }
    }
    let d = Digits::new(num, base, upper);
    let nd = d.len() as i32;
    if nd > precision {
        precision = nd;
    }
    field_width -= precision;
    // Assembled in one buffer; paddings wider than it go through pad().
    let mut out = StackBuf::<96>::new();
    if flags & (ZEROPAD | LEFT) == 0 && field_width > 0 {
        pad(w, ' ', field_width)?;
        field_width = 0;
    }
    if sign != 0 {
        out.push(sign);
    }
    if need_pfx {
        if base == 16 || !is_zero {
            out.push(b'0');
        }
        if base == 16 {
            out.push(if upper { b'X' } else { b'x' });
        }
    }
    if flags & LEFT == 0 && field_width > 0 {
        fill(w, &mut out, if flags & ZEROPAD != 0 { b'0' } else { b' ' }, field_width)?;
        field_width = 0;
    }
    fill(w, &mut out, b'0', precision - nd)?;
    out.push_digits(&d);
    w.write_str(out.as_str())?;
    pad(w, ' ', field_width)
}

/// `n` copies of `c` after what `out` holds: in it when they fit (leaving
/// room for the digits), else `out` is written and the copies padded out.
fn fill(w: &mut dyn Write, out: &mut StackBuf<96>, c: u8, n: i32) -> fmt::Result {
    if n <= 0 {
        return Ok(());
    }
    if n as usize + DIGITS <= out.room() {
        out.fill(c, n as usize);
        return Ok(());
    }
    w.write_str(out.as_str())?;
    *out = StackBuf::new();
    pad(w, c as char, n)
}

/// Forwards to a possibly unsized writer through a sized one.
pub(crate) struct Fwd<'a, W: Write + ?Sized>(pub &'a mut W);
impl<W: Write + ?Sized> Write for Fwd<'_, W> {
    #[inline(always)]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.write_str(s)
    }
    fn write_char(&mut self, c: char) -> fmt::Result {
        self.0.write_char(c)
    }
}

/// Counts chars (kernel: bytes; we count the bytes of the UTF-8 text).
struct Counter(usize);
impl Write for Counter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

/// Passes at most `left` bytes through (precision on strings).
struct Limit<'w, W: Write + ?Sized> {
    w: &'w mut W,
    left: usize,
}
impl<W: Write + ?Sized> Write for Limit<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.left == 0 {
            return Ok(());
        }
        let mut n = s.len().min(self.left);
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        self.left -= n;
        if n < s.len() {
            // Whatever did not fit is dropped, even a partial character.
            self.left = 0;
        }
        self.w.write_str(&s[..n])
    }
}

/// Write the text produced by `f` like the kernel's `string_nocheck()` +
/// `widen_string()`: at most `prec` bytes, padded with spaces to `width`.
pub(crate) fn padded<W, F>(w: &mut W, width: i32, prec: i32, flags: u8, mut f: F) -> fmt::Result
where
    W: Write + ?Sized,
    F: FnMut(&mut dyn Write) -> fmt::Result,
{
    let limit = if prec < 0 { usize::MAX } else { prec as usize };
    if width <= 0 {
        if prec < 0 {
            return f(&mut Fwd(w));
        }
        let mut l = Limit { w, left: limit };
        return f(&mut l);
    }
    let mut c = Counter(0);
    {
        let mut l = Limit { w: &mut c, left: limit };
        f(&mut l)?;
    }
    let n = c.0.min(WIDTH_MAX as usize) as i32;
    let spaces = width.min(WIDTH_MAX) - n;
    if flags & LEFT == 0 {
        pad(w, ' ', spaces)?;
    }
    {
        let mut l = Limit { w, left: limit };
        f(&mut l)?;
    }
    if flags & LEFT != 0 {
        pad(w, ' ', spaces)?;
    }
    Ok(())
}

/// A C string inside `b`: up to the first NUL or the end.
pub(crate) fn cstr(b: &[u8]) -> &[u8] {
    match b.iter().position(|&c| c == 0) {
        Some(n) => &b[..n],
        None => b,
    }
}

/// `%s` of bytes.
pub(crate) fn string<W: Write + ?Sized>(w: &mut W, s: &[u8], spec: &Spec) -> fmt::Result {
    let s = cstr(s);
    let s = if spec.prec >= 0 { &s[..s.len().min(spec.prec as usize)] } else { s };
    let spaces = spec.width - s.len().min(WIDTH_MAX as usize) as i32;
    if spec.flags & LEFT == 0 {
        pad(w, ' ', spaces)?;
    }
    write_bytes(w, s)?;
    if spec.flags & LEFT != 0 {
        pad(w, ' ', spaces)?;
    }
    Ok(())
}

/// Convert an argument to the width the conversion reads (the varargs
/// `va_arg(type)` of vsnprintf), sign-extending signed conversions.
#[inline(always)]
pub(crate) fn convert_int(v: u64, spec: &Spec, long_size: u32) -> u64 {
    let signed = spec.flags & SIGN != 0;
    let bits = match spec.qual {
        Qual::None => 32,
        Qual::Char => 8,
        Qual::Short => 16,
        Qual::LongLong => 64,
        Qual::Long | Qual::Size | Qual::PtrDiff => long_size * 8,
    };
    // %td is always signed; %zd follows the conversion.
    let signed = signed || spec.qual == Qual::PtrDiff;
    if bits >= 64 {
        return v;
    }
    let m = (1u64 << bits) - 1;
    let v = v & m;
    if signed && v >> (bits - 1) & 1 == 1 {
        v | !m
    } else {
        v
    }
}

/// An integer conversion's argument as `va_arg` reads it, its base and
/// its flags.
#[inline(always)]
fn int_arg(v: u64, spec: &Spec, long_size: u32) -> (u64, u8, u8) {
    let base = match spec.conv {
        Conv::Int { base } => base,
        _ => 10,
    };
    let mut flags = spec.flags;
    if spec.qual == Qual::PtrDiff {
        flags |= SIGN;
    }
    (convert_int(v, spec, long_size), base, flags)
}

/// Print an integer conversion.
pub(crate) fn int_conv(w: &mut dyn Write, v: u64, spec: &Spec, long_size: u32) -> fmt::Result {
    let (v, base, flags) = int_arg(v, spec, long_size);
    number(w, v, base, flags, spec.width, spec.prec)
}

/// `%c`
pub(crate) fn char_conv<W: Write + ?Sized>(w: &mut W, v: u64, spec: &Spec) -> fmt::Result {
    let c = v as u8;
    let mut fw = spec.width;
    if spec.flags & LEFT == 0 {
        pad(w, ' ', fw - 1)?;
        fw = 0;
    }
    if c.is_ascii() {
        w.write_char(c as char)?;
    } else {
        w.write_char('\u{fffd}')?;
    }
    pad(w, ' ', fw - 1)
}

/// `pointer_string()`'s flags and width.
fn ptr_arg(spec: &Spec, long_size: u32) -> (u8, i32) {
    let flags = spec.flags | SMALL;
    if spec.width == -1 {
        return ((flags | ZEROPAD) & !SIGN, 2 * long_size as i32);
    }
    (flags & !SIGN, spec.width)
}

/// `pointer_string()`: `%px`, and `%p` with hashing off.
pub(crate) fn pointer_string(w: &mut dyn Write, v: u64, spec: &Spec, long_size: u32) -> fmt::Result {
    let (flags, width) = ptr_arg(spec, long_size);
    number(w, v, 16, flags, width, spec.prec)
}

/// The text of an integer argument that prints as a plain number — an
/// integer conversion, or a `%p` of the pointer value — when
/// [`simple_number`] covers it; `None` for everything else ([`emit`]).
pub(crate) fn plain_number(v: u64, spec: &Spec, ctx: &Ctx) -> Option<Digits> {
    match spec.conv {
        Conv::Int { .. } => {
            let (v, base, flags) = int_arg(v, spec, ctx.abi.long_size);
            simple_number(v, base, flags, spec.width, spec.prec)
        }
        Conv::Ptr(PtrFmt::Plain | PtrFmt::Hex | PtrFmt::Restricted | PtrFmt::Other) => {
            let (flags, width) = ptr_arg(spec, ctx.abi.long_size);
            simple_number(v & ctx.long_mask(), 16, flags, width, spec.prec)
        }
        _ => None,
    }
}

/// `%s` of a pointer we cannot dereference: look it up among the kernel's
/// constant strings, else show the address.
pub(crate) fn string_ptr<W: Write + ?Sized>(w: &mut W, v: u64, spec: &Spec, ctx: &Ctx) -> fmt::Result {
    let v = v & ctx.long_mask();
    if v == 0 {
        return error_string(w, "(null)", spec);
    }
    if let Some(s) = ctx.strings.and_then(|t| t.string_at(v)) {
        return string(w, s.as_bytes(), spec);
    }
    if v < 4096 || v > ctx.long_mask() - 4095 {
        return error_string(w, "(efault)", spec);
    }
    padded(w, spec.width, spec.prec, spec.flags, |w| write!(w, "(0x{v:x})"))
}

fn error_string<W: Write + ?Sized>(w: &mut W, s: &str, spec: &Spec) -> fmt::Result {
    let mut sp = *spec;
    if sp.prec == -1 {
        sp.prec = 16;
    }
    string(w, s.as_bytes(), &sp)
}

/// `%ps` / `%pS` / `%pB`.
fn symbol<W: Write + ?Sized>(w: &mut W, v: u64, offset: bool, back: bool, spec: &Spec, ctx: &Ctx) -> fmt::Result {
    let v = v & ctx.long_mask();
    let look = if back { v.wrapping_sub(1) } else { v };
    let found = ctx.syms.and_then(|s| s.lookup(look));
    if let (Some(s), false, None, true, true) =
        (found, offset || back, found.and_then(|s| s.module), spec.width <= 0, spec.prec < 0)
    {
        // `%ps` as it mostly is: the name.
        return w.write_str(s.name);
    }
    padded(w, spec.width, spec.prec, spec.flags, |w| match found {
        // `%pB` prints the offset of the return address it was given.
        Some(s) if back => write!(w, "{:#}", Sym { offset: s.offset + 1, ..s }),
        Some(s) if offset => write!(w, "{s:#}"),
        Some(s) => write!(w, "{s}"),
        None => write!(w, "0x{v:x}"),
    })
}

fn hex2<W: Write + ?Sized>(w: &mut W, b: u8, upper: bool) -> fmt::Result {
    if upper {
        write!(w, "{b:02X}")
    } else {
        write!(w, "{b:02x}")
    }
}

fn ip4<W: Write + ?Sized>(w: &mut W, a: &[u8], zeros: bool, reverse: bool) -> fmt::Result {
    for i in 0..4 {
        let b = if reverse { a[3 - i] } else { a[i] };
        if zeros {
            write!(w, "{b:03}")?;
        } else {
            write!(w, "{b}")?;
        }
        if i < 3 {
            w.write_char('.')?;
        }
    }
    Ok(())
}

fn ip6_full<W: Write + ?Sized>(w: &mut W, a: &[u8], colons: bool) -> fmt::Result {
    for i in 0..8 {
        hex2(w, a[2 * i], false)?;
        hex2(w, a[2 * i + 1], false)?;
        if colons && i != 7 {
            w.write_char(':')?;
        }
    }
    Ok(())
}

fn ip6_compressed<W: Write + ?Sized>(w: &mut W, a: &[u8]) -> fmt::Result {
    let word = |i: usize| u16::from_be_bytes([a[2 * i], a[2 * i + 1]]);
    let v4mapped = a[..10].iter().all(|&b| b == 0) && a[10] == 0xff && a[11] == 0xff;
    let isatap = (a[8] | 0x02) == 0x02 && a[9] == 0 && a[10] == 0x5e && a[11] == 0xfe;
    let use4 = v4mapped || isatap;
    let range = if use4 { 6 } else { 8 };
    let mut longest = 1;
    let mut colonpos: i32 = -1;
    for i in 0..range {
        let n = (i..range).take_while(|&j| word(j) == 0).count();
        if n > longest {
            longest = n;
            colonpos = i as i32;
        }
    }
    let mut needcolon = false;
    let mut i = 0;
    while i < range {
        if i as i32 == colonpos {
            if needcolon || i == 0 {
                w.write_char(':')?;
            }
            w.write_char(':')?;
            needcolon = false;
            i += longest;
            continue;
        }
        if needcolon {
            w.write_char(':')?;
        }
        write!(w, "{:x}", word(i))?;
        needcolon = true;
        i += 1;
    }
    if use4 {
        if needcolon {
            w.write_char(':')?;
        }
        ip4(w, &a[12..16], false, false)?;
    }
    Ok(())
}

/// The `%p` extensions that read memory: `b` is what the pointer points at.
fn ptr_mem<W: Write + ?Sized>(w: &mut W, b: &[u8], pf: PtrFmt, spec: &Spec, ctx: &Ctx) -> fmt::Result {
    let short = |w: &mut W| error_string(w, "(efault)", spec);
    match pf {
        PtrFmt::Ip4 { zeros, reverse } => {
            let Some(a) = b.get(..4) else { return short(w) };
            // 'h' means host order: reversed only on little-endian kernels.
            let rev = reverse && ctx.abi.endian == Endian::Little;
            padded(w, spec.width, spec.prec, spec.flags, |w| ip4(w, a, zeros, rev))
        }
        PtrFmt::Ip6 { colons, compress } => {
            let Some(a) = b.get(..16) else { return short(w) };
            padded(w, spec.width, spec.prec, spec.flags, |w| {
                if compress {
                    ip6_compressed(w, a)
                } else {
                    ip6_full(w, a, colons)
                }
            })
        }
        PtrFmt::IpSock { colons, port, compress, flow, scope, reverse, zeros } => {
            let Some(fam) = ctx.abi.endian.uint(b, 0, 2) else { return short(w) };
            match fam {
                2 => {
                    let Some(a) = b.get(4..8) else { return short(w) };
                    let p = u16::from_be_bytes([b[2], b[3]]);
                    let rev = reverse && ctx.abi.endian == Endian::Little;
                    padded(w, spec.width, spec.prec, spec.flags, |w| {
                        ip4(w, a, zeros, rev)?;
                        if port {
                            write!(w, ":{p}")?;
                        }
                        Ok(())
                    })
                }
                10 => {
                    let Some(a) = b.get(8..24) else { return short(w) };
                    let p = u16::from_be_bytes([b[2], b[3]]);
                    let fl = u32::from_be_bytes([b[4], b[5], b[6], b[7]]) & 0x000f_ffff;
                    let sc = ctx.abi.endian.uint(b, 24, 4).unwrap_or(0);
                    let br = port || scope || flow;
                    padded(w, spec.width, spec.prec, spec.flags, |w| {
                        if br {
                            w.write_char('[')?;
                        }
                        if colons && compress {
                            ip6_compressed(w, a)?;
                        } else {
                            ip6_full(w, a, colons)?;
                        }
                        if br {
                            w.write_char(']')?;
                        }
                        if port {
                            write!(w, ":{p}")?;
                        }
                        if flow {
                            write!(w, "/{fl}")?;
                        }
                        if scope {
                            write!(w, "%{sc}")?;
                        }
                        Ok(())
                    })
                }
                _ => error_string(w, "(einval)", spec),
            }
        }
        PtrFmt::Mac { sep, reverse } => {
            let Some(a) = b.get(..6) else { return short(w) };
            padded(w, spec.width, spec.prec, spec.flags, |w| {
                for i in 0..6 {
                    hex2(w, if reverse { a[5 - i] } else { a[i] }, false)?;
                    if sep != 0 && i != 5 {
                        w.write_char(sep as char)?;
                    }
                }
                Ok(())
            })
        }
        PtrFmt::Uuid { little, upper } => {
            let Some(a) = b.get(..16) else { return short(w) };
            const BE: [usize; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];
            const LE: [usize; 16] = [3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15];
            let idx = if little { &LE } else { &BE };
            padded(w, spec.width, spec.prec, spec.flags, |w| {
                for (i, &k) in idx.iter().enumerate() {
                    hex2(w, a[k], upper)?;
                    if matches!(i, 3 | 5 | 7 | 9) {
                        w.write_char('-')?;
                    }
                }
                Ok(())
            })
        }
        PtrFmt::HexBuf { sep } => {
            if spec.width == 0 {
                return Ok(());
            }
            let len = if spec.width > 0 { spec.width.min(64) as usize } else { 1 };
            for (i, &c) in b.iter().take(len).enumerate() {
                hex2(w, c, false)?;
                if sep != 0 && i != len - 1 {
                    w.write_char(sep as char)?;
                }
            }
            Ok(())
        }
        PtrFmt::Bitmap { list } => {
            let nbits = spec.width.max(0) as usize;
            if list {
                bitmap_list(w, b, nbits, ctx)
            } else {
                bitmap(w, b, nbits, ctx)
            }
        }
        _ => short(w),
    }
}

/// Bit `i` of a kernel bitmap (an array of `unsigned long` in the traced
/// kernel's byte order).
fn bit(b: &[u8], i: usize, ctx: &Ctx) -> bool {
    let ls = ctx.abi.long_size as usize;
    let word = i / (ls * 8);
    let Some(v) = ctx.abi.endian.uint(b, word * ls, ls) else { return false };
    v >> (i % (ls * 8)) & 1 == 1
}

/// `bitmap_string()`: 32-bit hex chunks, most significant first.
pub(crate) fn bitmap<W: Write + ?Sized>(w: &mut W, b: &[u8], nbits: usize, ctx: &Ctx) -> fmt::Result {
    let nbits = nbits.min(b.len() * 8);
    let mut chunksz = nbits & 31;
    if chunksz == 0 {
        chunksz = 32;
    }
    let mut i = nbits.div_ceil(32) * 32;
    let mut first = true;
    while i >= 32 {
        i -= 32;
        let mut val = 0u32;
        for k in (0..chunksz).rev() {
            val = (val << 1) | u32::from(bit(b, i + k, ctx));
        }
        if !first {
            w.write_char(',')?;
        }
        first = false;
        number(&mut Fwd(w), u64::from(val), 16, SMALL | ZEROPAD, chunksz.div_ceil(4) as i32, -1)?;
        chunksz = 32;
    }
    Ok(())
}

/// `bitmap_list_string()`: ranges like `0-3,8`.
pub(crate) fn bitmap_list<W: Write + ?Sized>(w: &mut W, b: &[u8], nbits: usize, ctx: &Ctx) -> fmt::Result {
    let nbits = nbits.min(b.len() * 8);
    let mut first = true;
    let mut i = 0;
    while i < nbits {
        if !bit(b, i, ctx) {
            i += 1;
            continue;
        }
        let lo = i;
        while i + 1 < nbits && bit(b, i + 1, ctx) {
            i += 1;
        }
        if !first {
            w.write_char(',')?;
        }
        first = false;
        if lo < i {
            write!(w, "{lo}-{i}")?;
        } else {
            write!(w, "{lo}")?;
        }
        i += 1;
    }
    Ok(())
}

/// An argument handed to [`emit`].
pub(crate) enum ArgVal<'a, 'f> {
    /// An integer or pointer value (raw bits).
    Int(u64),
    /// Memory: a string or the bytes a pointer points at.
    Bytes(&'a [u8]),
    /// Text produced on demand (helpers such as `__print_flags`).
    Text(&'f mut dyn FnMut(&mut dyn Write) -> fmt::Result),
    /// The argument could not be evaluated.
    Bad,
}

/// Marker printed where an argument could not be evaluated.
pub(crate) const BAD: &str = "<?>";

/// Format one argument for one conversion.
pub(crate) fn emit(w: &mut dyn Write, spec: &Spec, arg: ArgVal<'_, '_>, ctx: &Ctx) -> fmt::Result {
    match (spec.conv, arg) {
        (Conv::Percent, _) => w.write_char('%'),
        (_, ArgVal::Bad) => w.write_str(BAD),
        (Conv::Int { .. }, ArgVal::Int(v)) => int_conv(w, v, spec, ctx.abi.long_size),
        (Conv::Char, ArgVal::Int(v)) => char_conv(w, v, spec),
        (Conv::Str, ArgVal::Bytes(b)) => string(w, b, spec),
        (Conv::Str, ArgVal::Text(f)) => padded(w, spec.width, spec.prec, spec.flags, f),
        (Conv::Str, ArgVal::Int(v)) => string_ptr(w, v, spec, ctx),
        (Conv::Ptr(pf), ArgVal::Int(v)) => match pf {
            PtrFmt::Sym { offset } => symbol(w, v, offset, false, spec, ctx),
            PtrFmt::Backtrace => symbol(w, v, true, true, spec, ctx),
            PtrFmt::Plain | PtrFmt::Hex | PtrFmt::Restricted | PtrFmt::Other => {
                pointer_string(w, v & ctx.long_mask(), spec, ctx.abi.long_size)
            }
            _ => {
                if v == 0 {
                    error_string(w, "(null)", spec)
                } else {
                    // A pointer into kernel memory we do not have.
                    pointer_string(w, v & ctx.long_mask(), spec, ctx.abi.long_size)
                }
            }
        },
        (Conv::Ptr(pf), ArgVal::Bytes(b)) => ptr_mem(w, b, pf, spec, ctx),
        (Conv::Ptr(_), ArgVal::Text(f)) | (Conv::Int { .. }, ArgVal::Text(f)) | (Conv::Char, ArgVal::Text(f)) => {
            f(&mut Fwd(w))
        }
        (_, ArgVal::Bytes(_)) => w.write_str(BAD),
    }
}

/// Reads `vbin_printf()` arguments.
struct BinArgs<'a> {
    b: &'a [u8],
    pos: usize,
    e: Endian,
}

impl<'a> BinArgs<'a> {
    fn get(&mut self, size: usize) -> Option<u64> {
        let align = size.min(4);
        self.pos = self.pos.checked_add(align - 1)? / align * align;
        let v = if size == 8 {
            // Two u32 halves in memory order = the native u64 layout.
            self.e.u64(self.b, self.pos)?
        } else {
            self.e.uint(self.b, self.pos, size)?
        };
        self.pos += size;
        Some(v)
    }
    fn get_signed(&mut self, size: usize) -> Option<u64> {
        let v = self.get(size)?;
        Some(if size < 8 && v >> (size * 8 - 1) & 1 == 1 { v | !((1u64 << (size * 8)) - 1) } else { v })
    }
    fn str(&mut self) -> Option<&'a [u8]> {
        let rest = self.b.get(self.pos..)?;
        let n = rest.iter().position(|&c| c == 0)?;
        self.pos += n + 1;
        Some(&rest[..n])
    }
}

/// `bstr_printf()`: format `fmt` with the binary arguments `buf` of a
/// `bprint` record. Truncated or malformed argument buffers print `BAD`
/// for the missing arguments.
pub(crate) fn bstr_printf<W: Write + ?Sized>(w: &mut W, fmt: &[u8], buf: &[u8], ctx: &Ctx) -> fmt::Result {
    let mut a = BinArgs { b: buf, pos: 0, e: ctx.abi.endian };
    let ls = ctx.abi.long_size as usize;
    let mut f = fmt;
    while let Some((tok, n)) = next_token(f) {
        f = &f[n..];
        let mut spec = match tok {
            Token::Lit(s) => {
                write_bytes(w, s)?;
                continue;
            }
            Token::Invalid => return Ok(()),
            Token::Spec(s) => s,
        };
        if spec.width_star {
            match a.get_signed(4) {
                Some(v) => {
                    let v = (v as i64).clamp(-i64::from(WIDTH_MAX), i64::from(WIDTH_MAX)) as i32;
                    if v < 0 {
                        spec.flags |= LEFT;
                    }
                    spec.width = v.abs();
                }
                None => return w.write_str(BAD),
            }
        }
        if spec.prec_star {
            match a.get_signed(4) {
                Some(v) => spec.prec = (v as i64).clamp(0, i64::from(WIDTH_MAX)) as i32,
                None => return w.write_str(BAD),
            }
        }
        let arg = match spec.conv {
            Conv::Percent => ArgVal::Int(0),
            Conv::Char => a.get(1).map_or(ArgVal::Bad, ArgVal::Int),
            Conv::Str => a.str().map_or(ArgVal::Bad, ArgVal::Bytes),
            Conv::Ptr(pf) => {
                if pf.takes_value() {
                    a.get(ls).map_or(ArgVal::Bad, ArgVal::Int)
                } else {
                    // Formatted by the kernel at record time, stored as a string.
                    match a.str() {
                        Some(s) => {
                            write_bytes(w, s)?;
                            continue;
                        }
                        None => ArgVal::Bad,
                    }
                }
            }
            Conv::Int { .. } => {
                let size = match spec.qual {
                    Qual::LongLong => 8,
                    Qual::Long | Qual::Size | Qual::PtrDiff => ls,
                    Qual::Char => 1,
                    Qual::Short => 2,
                    Qual::None => 4,
                };
                a.get(size).map_or(ArgVal::Bad, ArgVal::Int)
            }
        };
        let bad = matches!(arg, ArgVal::Bad);
        emit(&mut Fwd(w), &spec, arg, ctx)?;
        if bad {
            return Ok(());
        }
    }
    Ok(())
}
