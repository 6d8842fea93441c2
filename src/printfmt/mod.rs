//! print-fmt rendering: turn one event record into the body text the kernel
//! prints for it in `trace`.
//!
//! Each event's `print fmt:` is compiled once (`PrintFmt::compile`) into a
//! small program — literal pieces, conversion specs, and argument
//! expressions with every `REC->field` resolved to offset, size and sign —
//! and evaluated per record (`PrintFmt::render`) into any
//! `core::fmt::Write` without allocating. What cannot be compiled falls back
//! to `name=value` for every field; what cannot be evaluated for one record
//! (truncated record, bad index) prints a marker in place. Nothing here
//! panics on any record bytes.
//!
//! `ftrace/bprint`, `ftrace/bputs` and `ftrace/print` are rendered the way
//! the kernel's own output functions do (`ip_sym: text`), with `bprint`'s
//! binary arguments decoded per `vbin_printf()` and its format looked up in
//! `printk_formats`.

mod compile;
pub(crate) mod digits;
mod eval;
#[cfg(feature = "host")]
mod fast;
mod ir;
mod lex;
pub(crate) mod vsprintf;

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use crate::abi::{Abi, Endian};
use crate::format::{EventFormat, Field, FieldKind};
use digits::{StackBuf, Stage};
use ir::{Loc, Prog};
use vsprintf::{write_bytes, Fwd};
pub use vsprintf::{Ctx, KretprobeTrampoline, StringLookup, Sym, SymbolLookup};

use crate::kernel::{syscall_size_arg, syscall_style_of, SyscallStyle, O_ACCMODE, O_TMPFILE_BIT};

/// Why a print fmt could not be compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Error {
    /// A construct the compiler does not handle (short reason).
    Unsupported(&'static str),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Unsupported(w) => write!(f, "unsupported: {w}"),
        }
    }
}

/// Facts about the traced kernel that format files do not carry, for the
/// few print fmts that use them: enum names left unexpanded
/// (`I_DIRTY_SYNC`), values of kernel variables (`vmemmap_base`), struct
/// sizes for pointer arithmetic (`(struct page *)vmemmap_base + pfn`) and
/// typedef names in casts. Consulted only at compile time; every method may
/// answer `None` (the method names follow `btf::KernelConsts`).
pub(crate) trait KernelInfo {
    /// Value of an enumerator.
    fn enum_value(&self, _name: &str) -> Option<i64> {
        None
    }
    /// Current value of a kernel variable (`sizeof(long)` wide).
    fn variable(&self, _name: &str) -> Option<u64> {
        None
    }
    /// `sizeof(struct NAME)`.
    fn sizeof_struct(&self, _name: &str) -> Option<u32> {
        None
    }
    /// A typedef used in a cast: (size in bytes, signed), for integer and
    /// pointer typedefs only.
    fn typedef(&self, _name: &str) -> Option<(u32, bool)> {
        None
    }
    /// The traced kernel's (major, minor) version, for output that changed
    /// between versions without a trace in the format files (the syscall
    /// tracer's argument layout, `crate::kernel::syscall_style`). `None`: unknown.
    fn kernel_version(&self) -> Option<(u32, u32)> {
        None
    }
    /// The functions' parameters from BTF, for funcgraph-args.
    fn func_args(&self) -> Option<&crate::btf::FuncArgs> {
        None
    }
}

/// No extra knowledge.
pub(crate) struct NoKernelInfo;
impl KernelInfo for NoKernelInfo {}

/// [`KernelInfo`] from any [`crate::btf::KernelConsts`] (BTF, live kernel
/// variables) plus the kernel version:
/// `Program::compile_with(ev, long, &FromConsts { consts: &info, version })`.
pub(crate) struct FromConsts<'a, T: crate::btf::KernelConsts + ?Sized> {
    /// Where enum and `#define` values come from.
    pub(crate) consts: &'a T,
    /// The traced kernel's (major, minor), for what its format files
    /// leave out (see `crate::kernel`); `None` when unknown.
    pub(crate) version: Option<(u32, u32)>,
}

impl<T: crate::btf::KernelConsts + ?Sized> KernelInfo for FromConsts<'_, T> {
    fn enum_value(&self, name: &str) -> Option<i64> {
        self.consts.enum_value(name)
    }
    fn variable(&self, name: &str) -> Option<u64> {
        self.consts.variable(name)
    }
    fn sizeof_struct(&self, name: &str) -> Option<u32> {
        self.consts.sizeof_struct(name)
    }
    fn typedef(&self, name: &str) -> Option<(u32, bool)> {
        let t = self.consts.typedef(name)?;
        (!t.aggregate && !t.pointer).then_some((t.size, t.signed))
    }
    fn kernel_version(&self) -> Option<(u32, u32)> {
        self.version
    }
}

/// One field as the `name=value` fallback needs it.
#[derive(Debug, Clone)]
struct FieldInfo {
    name: (u32, u32),
    loc: Loc,
    elem_size: u32,
    signed: bool,
    hex: bool,
    text: bool,
}

#[derive(Debug, Clone)]
enum Body {
    Prog(Prog),
    // Why, and the text the reason names: read by the tests.
    #[cfg_attr(not(test), allow(dead_code))]
    Fallback(Error, String),
    /// `ftrace/bprint`: ip, fmt pointer, binary args from `buf`.
    Bprint {
        ip: Loc,
        fmt: Loc,
        buf: u32,
    },
    /// `ftrace/bputs`: ip, string pointer.
    Bputs {
        ip: Loc,
        s: Loc,
    },
    /// `ftrace/print`: ip, inline text.
    Print {
        ip: Loc,
        buf: u32,
    },
    /// `syscalls/sys_enter_*`: printed by the syscall tracer itself as
    /// `sys_NAME(arg: VALUE, …)` (the print fmt is not used); VALUE is `%lu`
    /// below 10, else `0x%lx` (6.17+), or `%lx` on older kernels; 6.19+
    /// adds the user data after its pointer and has its own `sys_openat`
    /// text ([`SyscallStyle::UserData`]).
    SysEnter {
        name: (u32, u32),
        args: Vec<SysArg>,
        small_decimal: bool,
        /// `sys_enter_openat` on 6.19+: its flag table (value, name).
        openat: Option<Vec<(u64, (u32, u32))>>,
    },
    /// A kprobe (`ip` set) or kretprobe (`func`, `ret`) event: the kernel
    /// prints `(sym+off/size)` / `(ret_sym+off/size <- func_sym)` itself,
    /// then the arguments as the print fmt says from item `first` on (a
    /// literal starting with `)`, whose first byte is skipped).
    Probe {
        prog: Prog,
        ip: Option<Loc>,
        func: Option<Loc>,
        ret: Option<Loc>,
        first: usize,
    },
    /// `syscalls/sys_exit_*`: `sys_NAME -> 0x%lx`.
    SysExit {
        name: (u32, u32),
        ret: Loc,
    },
    /// `ftrace/raw_data` (trace_marker_raw): `trace_raw_data()` prints
    /// `# %x buf:` of the id, then ` %02x` for every byte of the record
    /// from `buf` to its end — the whole reserved length, padding included
    /// (4-byte granules; 6.1 reserves at least 13 bytes after the header).
    RawData {
        id: Loc,
        buf: u32,
    },
}

/// One argument of a `sys_enter_*` event.
#[derive(Debug, Clone)]
struct SysArg {
    name: (u32, u32),
    loc: Loc,
    /// Its `__ARG_val` copy of user memory (6.19+).
    user: Option<UserData>,
}

/// What a pointer argument pointed to, as the event recorded it.
#[derive(Debug, Clone)]
struct UserData {
    data: Loc,
    /// A buffer (not a string): the index of the argument with its size.
    size_arg: Option<usize>,
}

/// A compiled print fmt.
#[derive(Debug, Clone)]
pub struct Program {
    long_size: u32,
    body: Body,
    names: String,
    fields: Vec<FieldInfo>,
}

fn find<'a>(ev: &'a EventFormat, name: &str) -> Option<&'a Field> {
    ev.fields.iter().find(|f| f.name == name)
}

fn scalar(f: Option<&Field>) -> Option<Loc> {
    let f = f?;
    (f.kind == FieldKind::Scalar && matches!(f.size, 4 | 8)).then(|| f.loc())
}

impl Program {
    /// Compile `ev.print_fmt` for a kernel whose `long` is `long_size`
    /// bytes (4 or 8; byte order comes with each [`Ctx`] at render time).
    /// Never fails: see `Program::fallback_reason`.
    pub fn compile(ev: &EventFormat, long_size: u32) -> Program {
        Self::compile_with(ev, long_size, &NoKernelInfo)
    }

    /// [`compile`](Self::compile) with kernel facts for identifiers and
    /// struct sizes the format file leaves symbolic.
    pub(crate) fn compile_with(ev: &EventFormat, long_size: u32, info: &dyn KernelInfo) -> Program {
        let long_size = if long_size == 4 { 4 } else { 8 };
        let mut names = String::new();
        let mut fields = Vec::new();
        for f in &ev.fields {
            let start = names.len() as u32;
            names.push_str(&f.name);
            let elem_size = match f.kind {
                FieldKind::Scalar => f.size,
                FieldKind::Array { elem_size, .. }
                | FieldKind::DataLoc { elem_size }
                | FieldKind::RelLoc { elem_size } => elem_size,
            };
            let t = f.type_name.as_str();
            let text = elem_size == 1 && f.kind != FieldKind::Scalar && t.contains("char");
            let hex = t.contains('*')
                || (t.contains("unsigned long") && !t.contains("long long"))
                || t == "long unsigned int";
            fields.push(FieldInfo {
                name: (start, f.name.len() as u32),
                loc: f.loc(),
                elem_size,
                signed: f.signed,
                hex,
                text,
            });
        }
        let body = Self::special(ev, &mut names, info.kernel_version()).unwrap_or_else(|| {
            match compile::compile(ev, long_size, info) {
                Ok(p) => Self::probe(ev, p),
                Err((e, at)) => Body::Fallback(e, at),
            }
        });
        Program { long_size, body, names, fields }
    }

    /// kprobe / kretprobe events: recognised by their leading fields and a
    /// print fmt that starts with `(%lx)` / `(%lx <- %lx)`.
    fn probe(ev: &EventFormat, p: Prog) -> Body {
        let first = ev.fields.first().map(|f| f.name.as_str());
        let (ip, func, ret, nconv) = match first {
            Some("__probe_ip") => (scalar(find(ev, "__probe_ip")), None, None, 1),
            Some("__probe_func") => (None, scalar(find(ev, "__probe_func")), scalar(find(ev, "__probe_ret_ip")), 2),
            _ => return Body::Prog(p),
        };
        if ip.is_none() && (func.is_none() || ret.is_none()) {
            return Body::Prog(p);
        }
        // Item layout: "(" conv [" <- " conv] ")…".
        let is_lit = |k: usize, f: &dyn Fn(&str) -> bool| p.items.get(k).and_then(|i| i.text(&p.pool)).is_some_and(f);
        let first = 2 * nconv;
        let shape = is_lit(0, &|t| t == "(")
            && matches!(p.items.get(1), Some(ir::Item::Conv(_)))
            && (nconv == 1 || (is_lit(2, &|t| t == " <- ") && matches!(p.items.get(3), Some(ir::Item::Conv(_)))))
            && is_lit(first, &|t| t.starts_with(')'));
        if !shape {
            return Body::Prog(p);
        }
        Body::Probe { prog: p, ip, func, ret, first }
    }

    fn special(ev: &EventFormat, names: &mut String, version: Option<(u32, u32)>) -> Option<Body> {
        if ev.system == "syscalls" {
            let mut name = |s: &str| {
                let start = names.len() as u32;
                names.push_str(s);
                (start, s.len() as u32)
            };
            if let Some(sc) = ev.name.strip_prefix("sys_enter_") {
                let n = name(&alloc::format!("sys_{sc}"));
                // `__ARG_val`: the copy of what ARG points to (6.19+).
                let user_of = |arg: &str| {
                    ev.fields.iter().find(|f| {
                        matches!(f.kind, FieldKind::DataLoc { .. })
                            && f.name.strip_prefix("__").and_then(|r| r.strip_suffix("_val")) == Some(arg)
                    })
                };
                let is_copy = |f: &Field| {
                    f.name.strip_prefix("__").and_then(|r| r.strip_suffix("_val")).is_some_and(|a| {
                        matches!(f.kind, FieldKind::DataLoc { .. }) && ev.fields.iter().any(|g| g.name == a)
                    })
                };
                let style = syscall_style_of(version, crate::kernel::records_user_data(ev));
                let plain: Vec<&Field> = ev.fields.iter().filter(|f| f.name != "__syscall_nr" && !is_copy(f)).collect();
                let mut args = Vec::new();
                for (i, f) in plain.iter().enumerate() {
                    let user = user_of(&f.name).filter(|_| style == SyscallStyle::UserData).map(|d| {
                        // A buffer prints through __print_dynamic_array in
                        // the print fmt, a string through __get_str.
                        let array = ev.print_fmt.contains(&alloc::format!("__print_dynamic_array({},", d.name));
                        UserData { data: d.loc(), size_arg: array.then(|| syscall_size_arg(i)) }
                    });
                    args.push(SysArg { name: name(&f.name), loc: f.loc(), user });
                }
                let openat = (style == SyscallStyle::UserData && sc == "openat")
                    .then(|| openat_flags(&ev.print_fmt, &mut name))
                    .flatten();
                return Some(Body::SysEnter {
                    name: n,
                    args,
                    small_decimal: style != SyscallStyle::Before6_17,
                    openat,
                });
            }
            if let Some(sc) = ev.name.strip_prefix("sys_exit_") {
                let n = name(&alloc::format!("sys_{sc}"));
                return Some(Body::SysExit { name: n, ret: scalar(find(ev, "ret"))? });
            }
            return None;
        }
        if ev.system != "ftrace" {
            return None;
        }
        let ip = || scalar(find(ev, "ip"));
        match ev.name.as_str() {
            "bprint" => Some(Body::Bprint { ip: ip()?, fmt: scalar(find(ev, "fmt"))?, buf: find(ev, "buf")?.offset }),
            "bputs" => Some(Body::Bputs { ip: ip()?, s: scalar(find(ev, "str"))? }),
            "print" => Some(Body::Print { ip: ip()?, buf: find(ev, "buf")?.offset }),
            "raw_data" => {
                let id = find(ev, "id").filter(|f| f.kind == FieldKind::Scalar && matches!(f.size, 1 | 2 | 4 | 8))?;
                Some(Body::RawData { id: id.loc(), buf: find(ev, "buf")?.offset })
            }
            _ => None,
        }
    }

    /// `Some(reason)` when the print fmt could not be compiled and
    /// [`render`](Self::render) prints `name=value` fields instead.
    #[cfg(test)]
    pub(crate) fn fallback_reason(&self) -> Option<Error> {
        match &self.body {
            Body::Fallback(e, _) => Some(*e),
            _ => None,
        }
    }

    /// Parts of a compiled program that could not be compiled (arguments
    /// that print a marker, `__print_symbolic` entries with unknown enum
    /// names); empty when the rendering is complete.
    #[cfg(test)]
    pub(crate) fn unknown_parts(&self) -> &[&'static str] {
        match &self.body {
            Body::Prog(p) | Body::Probe { prog: p, .. } => &p.unknown,
            _ => &[],
        }
    }

    /// For a fallback: a few tokens around where compilation stopped.
    #[cfg(test)]
    pub(crate) fn fallback_context(&self) -> Option<&str> {
        match &self.body {
            Body::Fallback(_, at) => Some(at),
            _ => None,
        }
    }

    /// The print fmt could not be compiled: records print their fields
    /// as `name=value` instead, as the kernel does for an event it cannot
    /// parse.
    #[cfg(test)]
    pub(crate) fn is_fallback(&self) -> bool {
        self.fallback_reason().is_some()
    }

    /// The lowest payload offset this body's text can depend on, when its
    /// text depends on the payload's bytes alone (a print fmt program:
    /// fields, literals, the symbol and string tables). 0 when a field is
    /// found through a locator word (`__data_loc`), which may point
    /// anywhere. `None` for the other bodies, and for a program that reads
    /// no field. Lets a renderer reuse the text of a payload it has seen
    /// (`render::memo::Memo`).
    pub(crate) fn reads_from(&self) -> Option<u32> {
        let Body::Prog(p) = &self.body else { return None };
        let at = |l: &Loc| if matches!(l.kind, FieldKind::Scalar | FieldKind::Array { .. }) { l.offset } else { 0 };
        p.nodes
            .iter()
            .filter_map(|n| match *n {
                ir::Node::Field { off, .. } | ir::Node::Elem { off, .. } => Some(off),
                ir::Node::Bytes(l) | ir::Node::DynLen(l) | ir::Node::Bitmask(l) => Some(at(&l)),
                _ => None,
            })
            .min()
    }

    /// Whether the kernel prints `event_name: ` before this body. False for
    /// the syscall tracer's events, whose body starts with the syscall
    /// name (`sys_openat(dfd: 0xffffff9c, …)`, `sys_read -> 0x340`).
    pub(crate) fn name_prefix(&self) -> bool {
        !matches!(self.body, Body::SysEnter { .. } | Body::SysExit { .. } | Body::RawData { .. })
    }

    /// Whether rendering may look up kallsyms (load it lazily on this).
    #[cfg(test)]
    pub(crate) fn needs_symbols(&self) -> bool {
        match &self.body {
            Body::Prog(p) => p.needs_syms,
            Body::Probe { .. } => true,
            Body::Fallback(..) | Body::SysEnter { .. } | Body::SysExit { .. } | Body::RawData { .. } => false,
            _ => true,
        }
    }

    /// Whether rendering may look up printk_formats.
    #[cfg(test)]
    pub(crate) fn needs_strings(&self) -> bool {
        match &self.body {
            Body::Prog(p) | Body::Probe { prog: p, .. } => p.needs_strings,
            Body::Fallback(..) => false,
            Body::Print { .. } | Body::SysEnter { .. } | Body::SysExit { .. } | Body::RawData { .. } => false,
            _ => true,
        }
    }

    /// Render the body for `rec` (the record payload starting with
    /// `common_type`) — the text after `event_name: ` in `trace`.
    /// `ctx` gives the byte order and the optional kallsyms / printk_formats
    /// tables (its `long_size` is overridden by the one compiled for).
    pub fn render<W: Write + ?Sized>(&self, w: &mut W, rec: &[u8], ctx: &Ctx) -> fmt::Result {
        let mut buf = StackBuf::new();
        let mut fwd = Fwd(w);
        let mut st = Stage::new(&mut buf, &mut fwd);
        self.render_staged(&mut st, rec, ctx)?;
        st.flush()
    }

    /// [`render`](Self::render) continuing the line `st` holds; what is
    /// left in it is the caller's to write out.
    pub(crate) fn render_staged(&self, w: &mut Stage<'_>, rec: &[u8], ctx: &Ctx) -> fmt::Result {
        self.render_by(w, rec, ctx, true)
    }

    /// [`render`](Self::render) by the interpreter alone, as board builds
    /// render (host builds run most print fmts through their whole-field
    /// writers, `printfmt::fast`): the tests compare the two.
    #[cfg(feature = "host")]
    #[doc(hidden)]
    #[cfg(test)]
    pub(crate) fn render_interpreted<W: Write + ?Sized>(&self, w: &mut W, rec: &[u8], ctx: &Ctx) -> fmt::Result {
        let mut buf = StackBuf::new();
        let mut fwd = Fwd(w);
        let mut st = Stage::new(&mut buf, &mut fwd);
        self.render_by(&mut st, rec, ctx, false)?;
        st.flush()
    }

    /// [`render_staged`](Self::render_staged); `fast`: through the
    /// whole-field writers where the host build has them.
    #[inline(always)]
    fn render_by(&self, w: &mut Stage<'_>, rec: &[u8], ctx: &Ctx, fast: bool) -> fmt::Result {
        #[cfg(not(feature = "host"))]
        let _ = fast;
        let ctx = Ctx { abi: Abi { endian: ctx.abi.endian, long_size: self.long_size }, ..*ctx };
        let e = ctx.abi.endian;
        match &self.body {
            #[cfg(feature = "host")]
            Body::Prog(p) if fast && !p.ops.is_empty() => fast::run(&p.ops, p, w, rec, &ctx),
            Body::Prog(p) => eval::Frame::new(p, rec, ctx).run_into(w, 0),
            Body::Probe { prog, ip, func, ret, first } => {
                let get = |l: &Loc| l.uint(rec, e);
                w.write_char('(')?;
                match (ip, func, ret) {
                    (Some(ip), _, _) => ip_sym_at(w, get(ip), true, &ctx)?,
                    (None, Some(f), Some(r)) => {
                        ip_sym_at(w, get(r), true, &ctx)?;
                        w.write_str(" <- ")?;
                        ip_sym_at(w, get(f), false, &ctx)?;
                    }
                    _ => {}
                }
                eval::Frame::new(prog, rec, ctx).run_into(w, *first)
            }
            Body::Fallback(..) => self.render_fields(w, rec, e),
            Body::Bprint { ip, fmt, buf } => {
                ip_sym(w, rec, ip, &ctx)?;
                w.write_str(": ")?;
                let Some(f) = fmt.uint(rec, e) else { return w.write_str("<OVERFLOW>") };
                let args = rec.get(*buf as usize..).unwrap_or(&[]);
                match ctx.strings.and_then(|s| s.string_at(f)) {
                    Some(text) => vsprintf::bstr_printf(w, text.as_bytes(), args, &ctx),
                    None => write!(w, "(fmt 0x{f:x})"),
                }
            }
            Body::Bputs { ip, s } => {
                ip_sym(w, rec, ip, &ctx)?;
                w.write_str(": ")?;
                let Some(p) = s.uint(rec, e) else { return w.write_str("<OVERFLOW>") };
                match ctx.strings.and_then(|t| t.string_at(p)) {
                    Some(text) => w.write_str(text),
                    None => write!(w, "(0x{p:x})"),
                }
            }
            Body::Print { ip, buf } => {
                ip_sym(w, rec, ip, &ctx)?;
                w.write_str(": ")?;
                write_bytes(w, vsprintf::cstr(rec.get(*buf as usize..).unwrap_or(&[])))
            }
            Body::SysEnter { name, args, small_decimal, openat } => {
                w.write_str(self.name(*name))?;
                w.write_char('(')?;
                if let Some(table) = openat {
                    self.sys_openat(w, args, table, rec, &ctx)?;
                    return w.write_char(')');
                }
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        w.write_str(", ")?;
                    }
                    w.write_str(self.name(a.name))?;
                    // 6.17+: small values in decimal, others 0x-prefixed;
                    // before: bare hex.
                    match a.loc.uint(rec, e).map(|v| v & ctx.long_mask()) {
                        Some(v) if !*small_decimal => {
                            w.write_str(": ")?;
                            hex(w, v)?
                        }
                        Some(v) if v < 10 => {
                            w.write_str(": ")?;
                            vsprintf::number(&mut Fwd(w), v, 10, 0, -1, -1)?
                        }
                        Some(v) => {
                            w.write_str(": 0x")?;
                            hex(w, v)?
                        }
                        None => w.write_str(": <OVERFLOW>")?,
                    }
                    if let Some(u) = &a.user {
                        let size = u.size_arg.map(|k| args.get(k).and_then(|s| s.loc.uint(rec, e)));
                        user_data(w, u.data.bytes(rec, e).unwrap_or(&[]), size)?;
                    }
                }
                w.write_char(')')
            }
            Body::SysExit { name, ret } => {
                w.write_str(self.name(*name))?;
                match ret.uint(rec, e) {
                    Some(v) => {
                        w.write_str(" -> 0x")?;
                        hex(w, v & ctx.long_mask())
                    }
                    None => w.write_str(" -> <OVERFLOW>"),
                }
            }
            Body::RawData { id, buf } => {
                let Some(v) = id.uint(rec, e) else { return w.write_str("# <OVERFLOW>") };
                w.write_str("# ")?;
                hex(w, v)?;
                w.write_str(" buf:")?;
                for &b in rec.get(*buf as usize..).unwrap_or(&[]) {
                    w.write_char(' ')?;
                    w.write_char(HEX[usize::from(b >> 4)] as char)?;
                    w.write_char(HEX[usize::from(b & 0xf)] as char)?;
                }
                Ok(())
            }
        }
    }

    /// The arguments of `sys_openat` on 6.19+ (7.2
    /// `sys_enter_openat_print()`): `dfd: %lu, filename: %lu "NAME",
    /// flags: F[, mode: 0%03o]`, the mode only when the flags create a file.
    fn sys_openat(
        &self,
        w: &mut Stage<'_>,
        args: &[SysArg],
        table: &[(u64, (u32, u32))],
        rec: &[u8],
        ctx: &Ctx,
    ) -> fmt::Result {
        let e = ctx.abi.endian;
        let value = |a: &SysArg| a.loc.uint(rec, e).map(|v| v & ctx.long_mask());
        let flag = |n: &str| table.iter().find(|(_, t)| self.name(*t) == n).map_or(0, |(v, _)| *v);
        let (creat, tmpfile) = (flag("O_CREAT"), O_TMPFILE_BIT | flag("O_DIRECTORY"));
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                w.write_str(", ")?;
            }
            let Some(v) = value(a) else {
                write!(w, "{}: <OVERFLOW>", self.name(a.name))?;
                continue;
            };
            match i {
                2 => {
                    w.write_str("flags: ")?;
                    // `int bits`, handed on as an unsigned long.
                    let bits = (v as u32 as i32 as i64 as u64) & ctx.long_mask();
                    let done = bits & (creat | tmpfile) == 0;
                    if bits & O_ACCMODE == 0 {
                        w.write_str(if bits == 0 { "O_RDONLY" } else { "O_RDONLY|" })?;
                    }
                    if bits != 0 {
                        // trace_print_flags_seq(): O_TMPFILE first.
                        let mut left = bits;
                        let mut first = true;
                        let names = core::iter::once((tmpfile, "O_TMPFILE"))
                            .chain(table.iter().map(|(m, n)| (*m, self.name(*n))));
                        for (mask, n) in names {
                            if left == 0 {
                                break;
                            }
                            if mask == 0 || left & mask != mask {
                                continue;
                            }
                            left &= !mask;
                            if !first {
                                w.write_char('|')?;
                            }
                            first = false;
                            w.write_str(n)?;
                        }
                        if left != 0 {
                            if !first {
                                w.write_char('|')?;
                            }
                            w.write_str("0x")?;
                            hex(w, left)?;
                        }
                    }
                    if done {
                        break;
                    }
                }
                3 => write!(w, "{}: 0{:03o}", self.name(a.name), v as u32)?,
                _ => {
                    write!(w, "{}: ", self.name(a.name))?;
                    vsprintf::number(&mut Fwd(w), v, 10, 0, -1, -1)?;
                    if let Some(u) = &a.user {
                        user_data(w, u.data.bytes(rec, e).unwrap_or(&[]), None)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn name(&self, (o, l): (u32, u32)) -> &str {
        self.names.get(o as usize..(o + l) as usize).unwrap_or("?")
    }

    /// The `name=value` rendering of every field (the fallback), e.g.
    /// `irq=5 name=eth0 ip=0xffffffff81000000`: integers in decimal
    /// (sign-aware), pointers and `unsigned long` in hex, char arrays and
    /// `__data_loc char[]` as text, other arrays as `{0x1,0x2}`;
    /// `<OVERFLOW>` where the record is too short.
    pub(crate) fn render_fields<W: Write + ?Sized>(&self, w: &mut W, rec: &[u8], e: Endian) -> fmt::Result {
        let mut w = Fwd(w);
        for (i, f) in self.fields.iter().enumerate() {
            if i > 0 {
                w.write_char(' ')?;
            }
            let (o, l) = f.name;
            w.write_str(self.names.get(o as usize..(o + l) as usize).unwrap_or("?"))?;
            w.write_char('=')?;
            let Some(b) = f.loc.bytes(rec, e) else {
                w.write_str("<OVERFLOW>")?;
                continue;
            };
            if f.loc.kind == FieldKind::Scalar && matches!(b.len(), 1 | 2 | 4 | 8) {
                let v = e.uint(b, 0, b.len()).unwrap_or(0);
                if f.hex {
                    write!(w, "0x{v:x}")?;
                } else if f.signed {
                    let ty = ir::Ty::int(b.len() as u8, true);
                    write!(w, "{}", ir::norm(v, ty) as i64)?;
                } else {
                    write!(w, "{v}")?;
                }
            } else if f.text {
                write_bytes(&mut w, vsprintf::cstr(b))?;
            } else {
                let es = if matches!(f.elem_size, 1 | 2 | 4 | 8) { f.elem_size as usize } else { 1 };
                w.write_char('{')?;
                for (k, c) in b.chunks_exact(es).enumerate() {
                    if k > 0 {
                        w.write_char(',')?;
                    }
                    write!(w, "0x{:x}", e.uint(c, 0, es).unwrap_or(0))?;
                }
                w.write_char('}')?;
            }
        }
        Ok(())
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A function's arguments after its name (funcgraph-args, func-args):
/// `()` when the record has none, else as 7.2's `print_function_args()` (trace_output.c) prints
/// them: `(name=value, …)` by the parameters' BTF types, `()` for a
/// function BTF does not know.
pub(crate) fn write_function_args<W: Write + ?Sized>(
    w: &mut W,
    syms: Option<&dyn SymbolLookup>,
    kernel: Option<&dyn KernelInfo>,
    abi: Abi,
    func: u64,
    p: &[u8],
    at: Option<u32>,
) -> fmt::Result {
    use crate::btf::ArgType;
    use crate::kernel::FTRACE_REGS_MAX_ARGS;
    let Some(at) = at else { return w.write_str("()") };
    w.write_char('(')?;
    // lookup_symbol_name(): the symbol the address is in.
    let name = syms.and_then(|s| s.lookup(func)).map(|s| s.name);
    let params = name.and_then(|n| kernel?.func_args()?.params(n));
    let long = abi.long_size as usize;
    let e = abi.endian;
    let arg = |a: usize| e.uint(p, at as usize + a * long, long).unwrap_or(0);
    let mut a = 0usize;
    for (i, param) in params.unwrap_or(&[]).iter().enumerate() {
        if i > 0 {
            w.write_str(", ")?;
        }
        if a == FTRACE_REGS_MAX_ARGS {
            w.write_str("...")?;
            break;
        }
        let v = arg(a);
        w.write_str(&param.name)?;
        w.write_char('=')?;
        let signed = |v: u64| if long == 4 { i64::from(v as u32 as i32) } else { v as i64 };
        match &param.ty {
            ArgType::Unknown => write!(w, "?0x{v:x}")?,
            ArgType::Pointer | ArgType::Int { signed: false } => write!(w, "0x{v:x}")?,
            ArgType::Int { signed: true } => write!(w, "{}", signed(v))?,
            ArgType::Enum(values) => {
                write!(w, "{}", signed(v))?;
                if let Some((_, n)) = values.iter().find(|(x, _)| x & abi.long_mask() == v) {
                    write!(w, " [{n}]")?;
                }
            }
            ArgType::Other { kind, size } => {
                write!(w, "({kind})[0x{v:x}")?;
                let mut x = long as u32;
                while x < *size {
                    w.write_char(':')?;
                    a += 1;
                    if a == FTRACE_REGS_MAX_ARGS {
                        w.write_str("...]")?;
                        return w.write_char(')');
                    }
                    write!(w, "0x{:x}", arg(a))?;
                    x += long as u32;
                }
                w.write_char(']')?;
            }
        }
        a += 1;
    }
    w.write_char(')')
}

/// `sys_enter_openat`'s flag table from its print fmt (`{ 0x1, "O_WRONLY"
/// }, …`: the values of the traced architecture), names into `name`.
fn openat_flags(fmt: &str, name: &mut impl FnMut(&str) -> (u32, u32)) -> Option<Vec<(u64, (u32, u32))>> {
    let mut table = Vec::new();
    let mut rest = fmt;
    while let Some(at) = rest.find("{ 0x") {
        rest = rest.get(at + 4..)?;
        let end = rest.find(|c: char| !c.is_ascii_hexdigit())?;
        let v = u64::from_str_radix(rest.get(..end)?, 16).ok()?;
        rest = rest.get(end..)?.strip_prefix(", \"")?;
        let q = rest.find('"')?;
        table.push((v, name(rest.get(..q)?)));
        rest = rest.get(q..)?;
    }
    (!table.is_empty()).then_some(table)
}

/// What a syscall's pointer argument pointed to, after the pointer (7.2
/// `print_syscall_enter()`): a string as ` "%.*s"`; a buffer (`size`: the
/// value of its size argument) as ` (xx:xx[, ...])` and, when a byte is
/// printable ASCII, ` "text"` with `.` for the others and `"...` when cut.
fn user_data<W: Write + ?Sized>(w: &mut W, data: &[u8], size: Option<Option<u64>>) -> fmt::Result {
    let Some(size) = size else {
        w.write_str(" \"")?;
        write_bytes(w, vsprintf::cstr(data))?;
        return w.write_char('"');
    };
    // `int val = trace->args[size]` against `int len`.
    let cut = size.is_some_and(|s| (data.len() as i64) < i64::from(s as u32 as i32));
    let printable = |b: u8| (0x20..0x7f).contains(&b);
    w.write_str(" (")?;
    for (i, &b) in data.iter().enumerate() {
        if i > 0 {
            w.write_char(':')?;
        }
        w.write_char(HEX[usize::from(b >> 4)] as char)?;
        w.write_char(HEX[usize::from(b & 0xf)] as char)?;
    }
    if cut {
        w.write_str(", ...")?;
    }
    w.write_char(')')?;
    if !data.iter().any(|&b| printable(b)) {
        return Ok(());
    }
    w.write_str(" \"")?;
    for &b in data {
        w.write_char(if printable(b) { b as char } else { '.' })?;
    }
    w.write_str(if cut { "\"..." } else { "\"" })
}

/// `%lx` without `core::fmt`.
fn hex<W: Write + ?Sized>(w: &mut W, v: u64) -> fmt::Result {
    vsprintf::number(&mut Fwd(w), v, 16, vsprintf::SMALL, -1, -1)
}

/// The name part of the kernel's `trace_seq_print_sym()`
/// (kernel/trace/trace_output.c), which `seq_print_ip_sym()` prints for
/// function entries and their parents, `<stack trace>` entries, the ip of
/// trace_printk records and probe addresses: the symbol (`+0x%lx/0x%lx
/// [module]` after it with `offset`, as `sprint_symbol()` does), except that
/// the kretprobe trampoline prints as `[unknown/kretprobe'd]` (`kretprobed()`:
/// a kretprobe has replaced that return address, 5.15+ by address, older
/// kernels by name). `Ok(false)`: no symbol, nothing written; the caller
/// prints the address its own way.
pub(crate) fn write_ip_symbol<W: Write + ?Sized>(
    w: &mut W,
    addr: u64,
    offset: bool,
    syms: Option<&dyn SymbolLookup>,
) -> Result<bool, fmt::Error> {
    let Some(table) = syms else { return Ok(false) };
    let sym = table.lookup(addr).filter(|s| !s.name.is_empty());
    let kretprobed = match table.kretprobe_trampoline() {
        Some(KretprobeTrampoline::At(a)) => a == addr,
        Some(KretprobeTrampoline::Named) => !offset && sym.is_some_and(|s| s.name == "kretprobe_trampoline"),
        None => false,
    };
    if kretprobed {
        w.write_str("[unknown/kretprobe'd]")?;
        return Ok(true);
    }
    let Some(s) = sym else { return Ok(false) };
    w.write_str(s.name)?;
    if offset {
        write!(w, "+0x{:x}/0x{:x}", s.offset, s.size)?;
        if let Some(m) = s.module {
            write!(w, " [{m}]")?;
        }
    }
    Ok(true)
}

/// A probe's address as `seq_print_ip_sym()` prints it: `0` for a zero
/// address, [`write_ip_symbol`], `0x%lx` when no symbol matches.
fn ip_sym_at<W: Write + ?Sized>(w: &mut W, v: Option<u64>, offset: bool, ctx: &Ctx) -> fmt::Result {
    let Some(v) = v else { return w.write_str("<OVERFLOW>") };
    let v = v & ctx.long_mask();
    if v == 0 {
        return w.write_char('0');
    }
    if write_ip_symbol(w, v, offset, ctx.syms)? {
        return Ok(());
    }
    // No symbol: a uprobe (user address), printed by the kernel as
    // `(0x%lx)` / `(0x%lx <- 0x%lx)`; sprint_symbol() prints a kprobe
    // address it cannot name the same way.
    write!(w, "0x{v:x}")
}

/// `seq_print_ip_sym()` with default flags: `0` for a zero address,
/// [`write_ip_symbol`] without offset, `0x%08lx` when no symbol matches.
pub(crate) fn write_ip_sym<W: Write + ?Sized>(w: &mut W, v: u64, syms: Option<&dyn SymbolLookup>) -> fmt::Result {
    if v == 0 {
        return w.write_char('0');
    }
    if write_ip_symbol(w, v, false, syms)? {
        return Ok(());
    }
    write!(w, "0x{v:08x}")
}

/// [`write_ip_sym`] of the address in field `ip` of `rec`.
fn ip_sym<W: Write + ?Sized>(w: &mut W, rec: &[u8], ip: &Loc, ctx: &Ctx) -> fmt::Result {
    let Some(v) = ip.uint(rec, ctx.abi.endian) else { return w.write_str("<OVERFLOW>") };
    write_ip_sym(w, v, ctx.syms)
}

/// Convenience: the `name=value` rendering of `rec` without compiling the
/// print fmt.
pub(crate) fn render_fields<W: Write + ?Sized>(w: &mut W, ev: &EventFormat, rec: &[u8], abi: Abi) -> fmt::Result {
    let mut ev2 = EventFormat { print_fmt: String::new(), ..ev.clone() };
    ev2.system.clear();
    Program::compile(&ev2, abi.long_size).render_fields(w, rec, abi.endian)
}

/// The text after `ip_sym: ` of the ftrace `print`, `bputs` and `bprint`
/// records (what `trace_print_print`, `trace_bputs_print` and
/// `trace_bprint_print` write after the ip). Looks fields up by name;
/// anything missing prints a marker.
pub(crate) fn render_ftrace_text<W: Write + ?Sized>(w: &mut W, ev: &EventFormat, rec: &[u8], ctx: &Ctx) -> fmt::Result {
    let e = ctx.abi.endian;
    let get = |n: &str| ev.fields.iter().find(|f| f.name == n);
    let ptr = |n: &str| get(n).and_then(|f| f.loc().uint(rec, e));
    match ev.name.as_str() {
        "bprint" => {
            let Some(f) = ptr("fmt") else { return w.write_str("<OVERFLOW>") };
            let args = get("buf").and_then(|b| rec.get(b.offset as usize..)).unwrap_or(&[]);
            match ctx.strings.and_then(|s| s.string_at(f)) {
                Some(text) => vsprintf::bstr_printf(w, text.as_bytes(), args, ctx),
                None => write!(w, "(fmt 0x{f:x})"),
            }
        }
        "bputs" => {
            let Some(p) = ptr("str") else { return w.write_str("<OVERFLOW>") };
            match ctx.strings.and_then(|t| t.string_at(p)) {
                Some(text) => w.write_str(text),
                None => write!(w, "(0x{p:x})"),
            }
        }
        _ => {
            let b = get("buf").and_then(|b| rec.get(b.offset as usize..)).unwrap_or(&[]);
            write_bytes(w, vsprintf::cstr(b))
        }
    }
}
