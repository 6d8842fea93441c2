//! `/proc/kallsyms` as a compact sorted table: one blob for all names and
//! module names, and one sorted `Vec` of fixed-size entries. Lookups follow
//! the kernel's own `kallsyms_lookup()`: the last symbol at or below the
//! address, the first of its aliases, size up to the next higher address.

use alloc::string::String;
use alloc::vec::Vec;

use crate::printfmt::{Sym, SymbolLookup};

#[derive(Debug, Clone, Copy)]
struct Entry {
    addr: u64,
    name_off: u32,
    name_len: u16,
    /// 0 = core kernel, else index + 1 into `modules`.
    module: u16,
}

/// A parsed symbol table.
#[derive(Debug, Default, Clone)]
pub struct Kallsyms {
    blob: String,
    syms: Vec<Entry>,
    modules: Vec<(u32, u16)>,
    /// Address ranges core-kernel lookups are valid in (`is_ksym_addr`).
    core: Vec<(u64, u64)>,
}

impl Kallsyms {
    /// Parse kallsyms text (`ADDR TYPE NAME [MODULE]` per line). Malformed
    /// lines, absolute symbols and all-zero addresses (kptr_restrict) are
    /// skipped.
    pub fn parse(text: &str) -> Kallsyms {
        let mut k = Kallsyms { blob: String::with_capacity(text.len() / 2), syms: Vec::with_capacity(text.len() / 40), ..Default::default() };
        let (mut stext, mut etext, mut sinit, mut einit, mut end) = (None, None, None, None, None);
        let mut last_mod: &[u8] = &[];
        let b = text.as_bytes();
        let mut pos = 0;
        while pos < b.len() {
            let eol = b[pos..].iter().position(|&c| c == b'\n').map_or(b.len(), |n| pos + n);
            let line = &b[pos..eol];
            pos = eol + 1;
            // ADDR
            let mut i = 0;
            let mut addr = 0u64;
            let mut digits = 0;
            while let Some(d) = line.get(i).and_then(|&c| (c as char).to_digit(16)) {
                addr = addr.wrapping_shl(4) | u64::from(d);
                i += 1;
                digits += 1;
            }
            if digits == 0 || digits > 16 || line.get(i) != Some(&b' ') {
                continue;
            }
            // TYPE
            let Some(&t) = line.get(i + 1) else { continue };
            if line.get(i + 2) != Some(&b' ') || addr == 0 || matches!(t, b'a' | b'A' | b'U' | b'u') {
                continue;
            }
            // NAME
            let rest = &line[i + 3..];
            let n = rest.iter().position(|c| c.is_ascii_whitespace()).unwrap_or(rest.len());
            let name = &rest[..n];
            if name.is_empty() || name.len() > u16::MAX as usize {
                continue;
            }
            // [MODULE]
            let tail = rest[n..].trim_ascii();
            let module = tail.strip_prefix(b"[").map(|m| m.strip_suffix(b"]").unwrap_or(m));
            let mi = match module {
                None => 0,
                Some(m) => {
                    if last_mod != m || k.modules.is_empty() {
                        if k.blob.len() > u32::MAX as usize - m.len() || k.modules.len() >= u16::MAX as usize - 1 {
                            continue;
                        }
                        let Ok(ms) = core::str::from_utf8(m) else { continue };
                        k.modules.push((k.blob.len() as u32, m.len().min(u16::MAX as usize) as u16));
                        k.blob.push_str(ms);
                        last_mod = m;
                    }
                    k.modules.len() as u16
                }
            };
            let Ok(name) = core::str::from_utf8(name) else { continue };
            if mi == 0 && name.as_bytes()[0] == b'_' {
                match name {
                    "_stext" => stext = Some(addr),
                    "_etext" => etext = Some(addr),
                    "_sinittext" => sinit = Some(addr),
                    "_einittext" => einit = Some(addr),
                    "_end" => end = Some(addr),
                    _ => {}
                }
            }
            if k.blob.len() > u32::MAX as usize - name.len() {
                break;
            }
            k.syms.push(Entry { addr, name_off: k.blob.len() as u32, name_len: name.len() as u16, module: mi });
            k.blob.push_str(name);
        }
        if !k.syms.windows(2).all(|w| w[0].addr <= w[1].addr) {
            // Stable: aliases keep file order, so the first listed wins.
            k.syms.sort_by_key(|e| e.addr);
        }
        match (stext, end, etext) {
            (Some(s), Some(e), _) => k.core.push((s, e.saturating_add(1))),
            (Some(s), None, Some(e)) => {
                k.core.push((s, e));
                if let (Some(a), Some(b)) = (sinit, einit) {
                    k.core.push((a, b));
                }
            }
            _ => {}
        }
        k
    }

    pub fn len(&self) -> usize {
        self.syms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    fn name(&self, e: &Entry) -> &str {
        let s = e.name_off as usize;
        self.blob.get(s..s + e.name_len as usize).unwrap_or("")
    }

    fn module(&self, e: &Entry) -> Option<&str> {
        let (o, l) = *self.modules.get((e.module as usize).checked_sub(1)?)?;
        self.blob.get(o as usize..o as usize + l as usize)
    }

    /// Address → symbol, offset and size, like `%pS` prints it.
    pub fn lookup(&self, addr: u64) -> Option<Sym<'_>> {
        // Index of the first entry above addr.
        let hi = self.syms.partition_point(|e| e.addr <= addr);
        let last = hi.checked_sub(1)?;
        let at = self.syms[last].addr;
        // Aliases share an address: the first of them names it (a few
        // steps back at most).
        let mut first = last;
        while first > 0 && self.syms[first - 1].addr == at {
            first -= 1;
        }
        let e = &self.syms[first];
        if e.module == 0 && !self.core.is_empty() && !self.core.iter().any(|&(s, x)| addr >= s && addr < x) {
            return None;
        }
        let size = match self.syms.get(hi) {
            Some(n) if e.module == 0 || n.module == e.module => n.addr - at,
            Some(n) => n.addr - at,
            None => 0,
        };
        if e.module != 0 && self.syms.get(hi).map_or(true, |n| n.module != e.module) && addr - at >= 0x10_0000 {
            // Past the last symbol of a module by a lot: not in it.
            return None;
        }
        Some(Sym { name: self.name(e), offset: addr - at, size, module: self.module(e) })
    }

    /// Exact name → address (first match).
    pub fn address_of(&self, name: &str) -> Option<u64> {
        self.syms.iter().find(|e| self.name(e) == name).map(|e| e.addr)
    }
}

impl SymbolLookup for Kallsyms {
    fn lookup(&self, addr: u64) -> Option<Sym<'_>> {
        Kallsyms::lookup(self, addr)
    }
}
