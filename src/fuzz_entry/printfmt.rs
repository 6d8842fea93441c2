//! print-fmt compiler and evaluator, bstr_printf, kallsyms and
//! printk_formats parsers on arbitrary input. Nothing may panic.

use crate::abi::Endian;
use crate::format::{EventFormat, Field, FieldKind};
use crate::kallsyms::Kallsyms;
use crate::printfmt::{render_fields, render_ftrace_text, vsprintf, Ctx, Program};
use crate::printk::PrintkFormats;
use alloc::string::String;
use alloc::vec;

fn field(name: &str, ty: &str, offset: u32, size: u32, signed: bool, kind: FieldKind) -> Field {
    Field { name: name.into(), type_name: ty.into(), offset, size, signed, kind }
}

/// An event with one field of every kind, so `REC->x` resolves.
fn event(print_fmt: String) -> EventFormat {
    let common = vec![
        field("common_type", "unsigned short", 0, 2, false, FieldKind::Scalar),
        field("common_flags", "unsigned char", 2, 1, false, FieldKind::Scalar),
        field("common_preempt_count", "unsigned char", 3, 1, false, FieldKind::Scalar),
        field("common_pid", "int", 4, 4, true, FieldKind::Scalar),
    ];
    let fields = vec![
        field("a", "int", 8, 4, true, FieldKind::Scalar),
        field("s", "short", 12, 2, true, FieldKind::Scalar),
        field("u", "unsigned char", 14, 1, false, FieldKind::Scalar),
        field("b", "u64", 16, 8, false, FieldKind::Scalar),
        field("c", "char", 24, 16, false, FieldKind::Array { elem_size: 1, count: 16 }),
        field("d", "__data_loc char[]", 40, 4, false, FieldKind::DataLoc { elem_size: 1 }),
        field("e", "__u8", 44, 4, false, FieldKind::Array { elem_size: 1, count: 4 }),
        field("f", "void *", 48, 8, false, FieldKind::Scalar),
        field("g", "__rel_loc u32[]", 56, 4, false, FieldKind::RelLoc { elem_size: 4 }),
        field("m", "__data_loc unsigned long[]", 60, 4, false, FieldKind::DataLoc { elem_size: 8 }),
        field("h", "long", 64, 8, true, FieldKind::Scalar),
        field("arr", "unsigned long", 72, 32, false, FieldKind::Array { elem_size: 8, count: 4 }),
    ];
    EventFormat { id: 1, system: "fuzz".into(), name: "fuzz".into(), common, fields, print_fmt }
}

const KALLSYMS: &str = "ffffffff81000000 T _stext\nffffffff81000100 T a\nffffffff81000200 t b\nffffffff82000000 T _etext\nffffffffc0000000 t m [mod]\n";
const PRINTK: &str = "0xffffffff82000010 : \"%d %s %pS %*ph\\n\"\n0xffffffff82000020 : \"str\"\n";

/// One input of the `printfmt` target.
pub fn printfmt(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else { return };
    let long = if sel & 1 == 0 { 8 } else { 4 };
    let endian = if sel & 2 == 0 { Endian::Little } else { Endian::Big };
    let (text, rec) = match rest.iter().position(|&b| b == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let text = String::from_utf8_lossy(text).into_owned();
    let ks = Kallsyms::parse(KALLSYMS.as_bytes());
    let pk = PrintkFormats::parse(PRINTK);
    let ctx = Ctx { abi: crate::abi::Abi::new(endian, long), syms: Some(&ks), strings: Some(&pk) };
    let mut out = String::new();
    match sel >> 2 & 3 {
        0 | 1 => {
            // The text is a print fmt.
            let ev = event(text);
            let p = Program::compile(&ev, long);
            let _ = p.render(&mut out, rec, &ctx);
            let _ = render_fields(&mut out, &ev, rec, crate::abi::Abi::new(endian, long));
        }
        2 => {
            // The text is a whole format file.
            if let Ok(ev) = EventFormat::parse(&text, if sel & 16 == 0 { "fuzz" } else { "ftrace" }, long) {
                let _ = Program::compile(&ev, long).render(&mut out, rec, &ctx);
                let _ = render_ftrace_text(&mut out, &ev, rec, &ctx);
            }
        }
        _ => {
            // bstr_printf with the text as format and the record as args,
            // and the table parsers on the text.
            let _ = vsprintf::bstr_printf(&mut out, text.as_bytes(), rec, &ctx);
            let k = Kallsyms::parse(text.as_bytes());
            for c in rec.chunks(8) {
                let mut a = [0u8; 8];
                a[..c.len()].copy_from_slice(c);
                let _ = k.lookup(u64::from_le_bytes(a));
            }
            let p = PrintkFormats::parse(&text);
            let _ = p.iter().count();
        }
    }
}
