//! `printk_formats`: the kernel's table of `trace_printk()` format strings
//! and `tracepoint_string()` constants, `0xADDR : "text"` per line, which
//! `bprint` (fmt pointer), `bputs` (str pointer) and `%s` of string
//! pointers in events refer to.

use alloc::string::String;
use alloc::vec::Vec;

use crate::printfmt::StringLookup;

/// Address → string table.
#[derive(Debug, Default, Clone)]
pub(crate) struct PrintkFormats {
    blob: String,
    /// (address, offset, length), sorted by address.
    entries: Vec<(u64, u32, u32)>,
}

impl PrintkFormats {
    /// Parse the file's text. The kernel escapes newline, tab and double
    /// quote (`\n`, `\t`, `\"`) but writes a backslash as itself, so a
    /// backslash before anything else stays a backslash. Malformed lines
    /// are skipped.
    pub(crate) fn parse(text: &str) -> PrintkFormats {
        let mut t = PrintkFormats::default();
        for line in text.lines() {
            let Some((a, rest)) = line.split_once(" : ") else { continue };
            let a = a.trim();
            let a = a.strip_prefix("0x").or_else(|| a.strip_prefix("0X")).unwrap_or(a);
            let Ok(addr) = u64::from_str_radix(a, 16) else { continue };
            let rest = rest.trim_end_matches(['\r']);
            let Some(body) = rest.strip_prefix('"') else { continue };
            let body = body.strip_suffix('"').unwrap_or(body);
            if t.blob.len() + body.len() > u32::MAX as usize {
                break;
            }
            let start = t.blob.len();
            let mut chars = body.chars();
            while let Some(c) = chars.next() {
                if c != '\\' {
                    t.blob.push(c);
                    continue;
                }
                let mut peek = chars.clone();
                match peek.next() {
                    Some('n') => {
                        t.blob.push('\n');
                        chars = peek;
                    }
                    Some('t') => {
                        t.blob.push('\t');
                        chars = peek;
                    }
                    Some('"') => {
                        t.blob.push('"');
                        chars = peek;
                    }
                    _ => t.blob.push('\\'),
                }
            }
            t.entries.push((addr, start as u32, (t.blob.len() - start) as u32));
        }
        // The first line for an address wins: its text starts first in the
        // blob (an unstable sort of the whole tuple is that stable order, and
        // keeps the standard library's stable sort out of the binary).
        t.entries.sort_unstable();
        t
    }

    /// How many strings it holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The string at exactly `addr`.
    pub(crate) fn get(&self, addr: u64) -> Option<&str> {
        let i = self.entries.partition_point(|e| e.0 < addr);
        let &(a, o, l) = self.entries.get(i)?;
        if a != addr {
            return None;
        }
        self.blob.get(o as usize..(o + l) as usize)
    }

    /// All entries, in address order.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, &str)> + '_ {
        self.entries.iter().map(|&(a, o, l)| (a, self.blob.get(o as usize..(o + l) as usize).unwrap_or("")))
    }
}

impl StringLookup for PrintkFormats {
    fn string_at(&self, addr: u64) -> Option<&str> {
        self.get(addr)
    }
}
