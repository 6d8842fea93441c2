//! A persistent buffer's previous boot, once the kernel has moved: the
//! kernel prints its events field by field (`print_event_fields()`), not
//! by their print fmt ([`crate::kernel::FieldsStyle`] says what and from
//! which version).

use core::fmt::{self, Write};

use crate::abi::Abi;
use crate::format::{EventFormat, FieldKind};
use crate::kernel::FieldsStyle;
use crate::printfmt::vsprintf::{cstr, write_bytes};
use crate::printfmt::SymbolLookup;

/// The kernel's `isprint()` (lib/ctype.c): ASCII `' '`..`'~'` and Latin-1
/// from 0xa0.
fn isprint(c: u8) -> bool {
    (0x20..0x7f).contains(&c) || c >= 0xa0
}

/// `%pS` of an address of this boot: `name+0xoff/0xsize [module]`, else
/// `0x%lx` (`sprint_symbol()`, kernel/kallsyms.c).
fn sym(w: &mut dyn Write, a: u64, syms: &dyn SymbolLookup) -> fmt::Result {
    let Some(s) = syms.lookup_now(a).filter(|s| !s.name.is_empty()) else { return write!(w, "0x{a:x}") };
    write!(w, "{}+0x{:x}/0x{:x}", s.name, s.offset, s.size)?;
    match s.module {
        Some(m) => write!(w, " [{m}]"),
        None => Ok(()),
    }
}

/// `bytes` as `%02x` each, `sep` between.
fn hex_bytes(w: &mut dyn Write, b: &[u8], sep: char) -> fmt::Result {
    for (i, c) in b.iter().enumerate() {
        if i > 0 {
            w.write_char(sep)?;
        }
        write!(w, "{c:02x}")?;
    }
    Ok(())
}

/// `NAME:` and ` FIELD=VALUE` per field of `rec`, then a newline: 6.12
/// and 7.2's `print_event_fields()` and `print_fields()`
/// (kernel/trace/trace_output.c), by `filter_assign_type()`'s type classes
/// (trace_events_filter.c). Not mirrored: a `char *` field's string (the
/// kernel reads kernel memory there; 6.16 on it prints the address of the
/// field in its iterator, not the pointer), and x86's signed `char` in a
/// 6.19 dyn string's `%02x` (arm's `char` is unsigned).
pub(super) fn write_fields(
    w: &mut dyn Write,
    ev: &EventFormat,
    rec: &[u8],
    abi: Abi,
    style: FieldsStyle,
    syms: &dyn SymbolLookup,
) -> fmt::Result {
    let e = abi.endian;
    let long = abi.long_size as usize;
    let symbols = style != FieldsStyle::Plain;
    w.write_str(&ev.name)?;
    w.write_char(':')?;
    for f in &ev.fields {
        w.write_char(' ')?;
        w.write_str(&f.name)?;
        w.write_char('=')?;
        let ty = f.type_name.as_str();
        let text = ty.contains("char");
        let data_loc = matches!(f.kind, FieldKind::DataLoc { .. });
        let dynamic = data_loc || matches!(f.kind, FieldKind::RelLoc { .. });
        let cpumask = data_loc && !text && ty.contains("cpumask_t");
        let fixed = rec.get(f.offset as usize..f.end() as usize);
        // FILTER_DYN_STRING / FILTER_RDYN_STRING or print_array(): the
        // bytes the locator points at.
        let b = match (fixed, dynamic && (text || f.size == 4) && !cpumask) {
            (Some(_), true) => f.loc().bytes(rec, e),
            (b, _) => b,
        };
        let Some(b) = b else {
            w.write_str("<OVERFLOW>")?;
            continue;
        };
        let v = e.uint(b, 0, b.len().min(8)).unwrap_or(0);
        let printable = |c: &u8| (0x20..0x7f).contains(c);
        if cpumask {
            // FILTER_CPUMASK: print_fields() has no case for it.
            w.write_str("<INVALID-TYPE>")?;
        } else if dynamic && !text && f.size == 4 {
            hex_bytes(w, b, ',')?;
        } else if dynamic && text && style == FieldsStyle::SyscallsByFmt && b.iter().any(|c| *c != 0 && !printable(c)) {
            for c in b {
                w.write_char(if printable(c) { *c as char } else { '.' })?;
            }
            w.write_str(" (")?;
            hex_bytes(w, b, ':')?;
            w.write_char(')')?;
        } else if text && (dynamic || matches!(f.kind, FieldKind::Array { .. })) {
            write_bytes(w, cstr(b))?;
        } else if ty == "char *" || ty == "const char *" {
            write!(w, "(0x{v:0width$x})", width = 2 * long)?;
        } else {
            match b.len() {
                1 => {
                    let c = v as u8;
                    if isprint(c) {
                        w.write_char('\'')?;
                        write_bytes(w, &[c])?;
                        w.write_char('\'')?;
                    }
                    write!(w, "({v})")?;
                }
                4 if symbols => {
                    if f.name == "caller_offs" || f.name == "parent_offs" {
                        sym(w, syms.adjust_value(syms.stext().unwrap_or(0).wrapping_add(v)), syms)?;
                        w.write_char(' ')?;
                    }
                    if long == 4 {
                        let a = syms.adjust_value(v);
                        sym(w, a, syms)?;
                        write!(w, " ({})", a as i32)?;
                    } else {
                        write!(w, "0x{v:x} ({})", v as i32)?;
                    }
                }
                8 if symbols && long == 8 => {
                    let a = syms.adjust_value(v);
                    sym(w, a, syms)?;
                    write!(w, " ({})", a as i64)?;
                }
                // %d of an unsigned short, of an unsigned int; %lld.
                2 | 4 | 8 => write!(w, "0x{v:x} ({})", if b.len() == 4 { v as i32 as i64 } else { v as i64 })?,
                _ => w.write_str("<INVALID-SIZE>")?,
            }
        }
    }
    w.write_char('\n')
}
