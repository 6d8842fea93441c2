//! A persistent buffer's previous boot, once the kernel has moved: the
//! kernel prints its events field by field (`print_event_fields()`), not
//! by their print fmt ([`crate::kernel::FieldsStyle`] says what and from
//! which version).

use core::fmt::{self, Write};

use crate::abi::Abi;
use crate::format::{EventFormat, FieldKind};
use crate::kernel::FieldsStyle;
use crate::printfmt::vsprintf::{cstr, number, write_bytes, SIGN, SMALL, ZEROPAD};
use crate::printfmt::vsprintf::{LastBootView, SymbolLookup};

/// The kernel's `isprint()` (lib/ctype.c): ASCII `' '`..`'~'` and Latin-1
/// from 0xa0.
fn isprint(c: u8) -> bool {
    (0x20..0x7f).contains(&c) || c >= 0xa0
}

/// `%x` (`%0Nx` with `width`).
fn hex(w: &mut dyn Write, v: u64, width: i32) -> fmt::Result {
    number(w, v, 16, SMALL | ZEROPAD, width, -1)
}

/// ` (%lld)`.
fn dec(w: &mut dyn Write, v: i64) -> fmt::Result {
    w.write_str(" (")?;
    number(w, v as u64, 10, SIGN, -1, -1)?;
    w.write_char(')')
}

/// `%pS` of an address of this boot: `name+0xoff/0xsize [module]`, else
/// `0x%lx` (`sprint_symbol()`, kernel/kallsyms.c).
fn sym(w: &mut dyn Write, a: u64, k: &dyn SymbolLookup) -> fmt::Result {
    let Some(s) = k.lookup(a).filter(|s| !s.name.is_empty()) else {
        w.write_str("0x")?;
        return hex(w, a, -1);
    };
    w.write_str(s.name)?;
    w.write_str("+0x")?;
    hex(w, s.offset, -1)?;
    w.write_str("/0x")?;
    hex(w, s.size, -1)?;
    if let Some(m) = s.module {
        w.write_str(" [")?;
        w.write_str(m)?;
        w.write_char(']')?;
    }
    Ok(())
}

/// `bytes` as `%02x` each, `sep` between.
fn hex_bytes(w: &mut dyn Write, b: &[u8], sep: char) -> fmt::Result {
    for (i, c) in b.iter().enumerate() {
        if i > 0 {
            w.write_char(sep)?;
        }
        hex(w, u64::from(*c), 2)?;
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
    LastBootView { moved: lb, syms: k, text, stext }: LastBootView<'_>,
) -> fmt::Result {
    let e = abi.endian;
    // trace_adjust_address() (7.2 trace.c).
    let adjust = |v: u64| lb.adjust_if(v, text, &|a| k.in_image(a));
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
            w.write_str("(0x")?;
            hex(w, v, 2 * long as i32)?;
            w.write_char(')')?;
        } else {
            // 6.16 on, a long (and the offsets from _stext) by symbol.
            let a = adjust(v);
            if symbols && b.len() == 4 && (f.name == "caller_offs" || f.name == "parent_offs") {
                sym(w, adjust(stext.unwrap_or(0).wrapping_add(v)), k)?;
                w.write_char(' ')?;
            }
            match b.len() {
                1 => {
                    let c = v as u8;
                    if isprint(c) {
                        // Latin-1 from 0xa0: not UTF-8, as write_bytes() shows it.
                        let ch = if c < 0x80 { c as char } else { '\u{fffd}' };
                        write!(w, "'{ch}'")?;
                    }
                    w.write_char('(')?;
                    number(w, v, 10, 0, -1, -1)?;
                    w.write_char(')')?;
                }
                n if symbols && n == long => {
                    sym(w, a, k)?;
                    dec(w, if n == 4 { a as i32 as i64 } else { a as i64 })?;
                }
                // %d of an unsigned short, of an unsigned int; %lld.
                2 | 4 | 8 => {
                    w.write_str("0x")?;
                    hex(w, v, -1)?;
                    dec(w, if b.len() == 4 { v as i32 as i64 } else { v as i64 })?;
                }
                _ => w.write_str("<INVALID-SIZE>")?,
            }
        }
    }
    w.write_char('\n')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::Endian;
    use crate::kallsyms::Kallsyms;
    use crate::lastboot::LastBoot;
    use alloc::string::String;
    use alloc::vec::Vec;

    /// This boot's kernel 0x1000 above the previous one's (`_text` then
    /// 0xffff800080000000, in last_boot_info).
    const KALLSYMS: &str = "ffff800080001000 T _text\nffff800080001000 T _stext\n\
        ffff800080001008 T sysrq\nffff800080001048 T other\nffff800080100000 B _end\n";

    const FORMAT: &str = "name: ev\nID: 300\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\
        \tfield:char comm[4];\toffset:2;\tsize:4;\tsigned:0;\n\
        \tfield:char c;\toffset:6;\tsize:1;\tsigned:0;\n\
        \tfield:u8 d;\toffset:7;\tsize:1;\tsigned:0;\n\
        \tfield:u16 s;\toffset:8;\tsize:2;\tsigned:0;\n\
        \tfield:int i;\toffset:10;\tsize:4;\tsigned:1;\n\
        \tfield:unsigned long l;\toffset:16;\tsize:8;\tsigned:0;\n\
        \tfield:__data_loc char[] str;\toffset:24;\tsize:4;\tsigned:0;\n\
        \tfield:__data_loc u8[] arr;\toffset:28;\tsize:4;\tsigned:0;\n\
        \tfield:__data_loc cpumask_t[] mask;\toffset:32;\tsize:4;\tsigned:0;\n\
        \tfield:const char * p;\toffset:40;\tsize:8;\tsigned:0;\n\
        \tfield:u32 caller_offs;\toffset:48;\tsize:4;\tsigned:0;\n\
        \tfield:u64 big[2];\toffset:56;\tsize:16;\tsigned:0;\n\
        \tfield:__data_loc char[] gone;\toffset:52;\tsize:4;\tsigned:0;\n\n\
        print fmt: \"x\"\n";

    fn record() -> Vec<u8> {
        let mut r = alloc::vec![0u8; 80];
        r[0] = 44;
        r[2..6].copy_from_slice(b"sh\0\0");
        r[6] = b'A';
        r[7] = 7;
        r[8..10].copy_from_slice(&0xfffeu16.to_le_bytes());
        r[10..14].copy_from_slice(&(-2i32).to_le_bytes());
        r[16..24].copy_from_slice(&0xffff_8000_8000_0010u64.to_le_bytes());
        r[24..28].copy_from_slice(&((3u32 << 16) | 72).to_le_bytes());
        r[28..32].copy_from_slice(&((2u32 << 16) | 76).to_le_bytes());
        r[40..48].copy_from_slice(&0x1e06_bbf0u64.to_le_bytes());
        r[48..52].copy_from_slice(&8u32.to_le_bytes());
        r[52..56].copy_from_slice(&((9u32 << 16) | 78).to_le_bytes());
        r[72..75].copy_from_slice(b"c\n\0");
        r[76..78].copy_from_slice(&[0xab, 0x01]);
        r
    }

    fn text(style: FieldsStyle) -> String {
        let ev = EventFormat::parse(FORMAT, "s", 8).unwrap();
        let k = Kallsyms::parse(KALLSYMS.as_bytes());
        let lb = LastBoot::parse("ffff800080000000\t[kernel]\n", "").unwrap();
        let mut s = String::new();
        let view = LastBootView { moved: &lb, syms: &k, text: k.address_of("_text"), stext: k.address_of("_stext") };
        write_fields(&mut s, &ev, &record(), Abi::new(Endian::Little, 8), style, view).unwrap();
        s
    }

    #[test]
    fn every_field_class_as_print_fields_prints_it() {
        // 6.12: hex and decimal (%d of an unsigned short stays positive,
        // of an int negative), the string as it is.
        assert_eq!(
            text(FieldsStyle::Plain),
            "ev: comm=sh c='A'(65) d=(7) s=0xfffe (65534) i=0xfffffffe (-2) l=0xffff800080000010 (-140735340871664) \
             str=c\n arr=ab,01 mask=<INVALID-TYPE> p=(0x000000001e06bbf0) caller_offs=0x8 (8) \
             big=<INVALID-SIZE> gone=<OVERFLOW>\n"
        );
        // 6.16: longs by symbol once moved into the kernel, the offsets
        // from _stext too; 6.19: the string with its unprintable byte.
        let t = text(FieldsStyle::SyscallsByFmt);
        assert!(t.contains(" l=sysrq+0x8/0x40 (-140735340867568) "), "{t}");
        assert!(t.contains(" str=c.. (63:0a:00) "), "{t}");
        // _stext (this boot's) plus the offset, moved again as the kernel
        // does.
        assert!(t.contains(" caller_offs=other+0xfc0/0xfefb8 0x8 (8) "), "{t}");
        assert!(text(FieldsStyle::Symbols).contains(" str=c\n "));
    }
}
