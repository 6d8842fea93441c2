//! ELF symbol resolution on arbitrary bytes, and probe definitions on
//! arbitrary text. First byte: bit 7 selects the definition parser, the
//! rest picks a probe place to resolve. Every symbol's address goes through
//! the segment mapping; the first names found are resolved back.

use crate::elf::{Elf, Table};
use crate::probe::{Def, Kind, GROUP};
use alloc::string::String;
use alloc::vec::Vec;

const SPECS: &[&str] = &[
    "main",
    "main+0x10",
    "memcpy@@GLIBC_2.14",
    "memcpy@GLIBC_2.2.5",
    "f@V1",
    "0x1000",
    "x+99999999999999999999",
    "trbox_probe_me",
];

/// One input of the `elf` target.
pub fn elf(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else { return };
    if sel & 0x80 != 0 {
        let text = String::from_utf8_lossy(rest);
        for kind in [Kind::Kprobe, Kind::Uprobe] {
            for ret in [false, true] {
                if let Ok(d) = Def::parse(kind, ret, &text) {
                    let name = d.default_name();
                    assert!(!name.is_empty() && name.len() < 64);
                    let _ = d.line(d.group.unwrap_or(GROUP), d.event.unwrap_or(&name), d.place);
                    let _ = d.uprobe_target();
                }
            }
        }
        return;
    }
    let Ok(elf) = Elf::parse(rest) else { return };
    let mut names = Vec::new();
    for t in [Table::Symtab, Table::Dynsym] {
        if let Ok(syms) = elf.symbols(t) {
            for s in syms.take(256) {
                let _ = elf.file_offset(s.value);
                if names.len() < 6 && !s.name.is_empty() {
                    names.push(s.name);
                }
            }
        }
    }
    for n in names {
        let _ = elf.resolve(n);
    }
    let _ = elf.resolve(SPECS[usize::from(sel) % SPECS.len()]);
}
