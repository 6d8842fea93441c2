//! `/proc/kallsyms` as a compact sorted table: one blob for all names and
//! module names, and one sorted `Vec` of fixed-size entries. Lookups follow
//! the kernel's own `kallsyms_lookup()`: the last symbol at or below the
//! address, the first of its aliases, size up to the next higher address.
//!
//! What `kallsyms_lookup()` resolves is less than what /proc/kallsyms lists.
//! The core kernel's symbols name an address only where `is_ksym_addr()`
//! says so (include/linux/kallsyms.h, include/asm-generic/sections.h):
//! - with `CONFIG_KALLSYMS_ALL` (which is when `_end` is listed) `_stext`
//!   up to `_end`, and `__init_begin` up to `__init_end` (5.17 on, for
//!   parisc, whose init lies below `_stext`: elsewhere it is inside);
//! - without it `_stext` up to `_etext` and `_sinittext` up to `_einittext`
//!   (only text is listed then, with the `__start_*`/`__stop_*` bounds);
//! - the end symbol itself not (5.16 on), but before 5.16 it was (`<=`,
//!   `Kallsyms::set_kernel`);
//! - and `in_gate_area_no_mm()`: x86_64's vsyscall page and arm's vectors
//!   page (CONFIG_KUSER_HELPERS) count as kernel text, where no symbol is:
//!   the kernel names an address there after its last symbol, with the size
//!   up to `_end` (or `_etext`) from it, wrapped (`Kallsyms::set_gate_area`).
//!
//! Modules and BPF programs (printed without a module name) resolve as
//! listed, but a module's mapping symbols (which /proc/kallsyms lists) never
//! name anything, and never the pages listed under the `[__builtin__ftrace]` /
//! `[__builtin__kprobes]` pseudo-modules (ftrace trampolines, kprobe
//! instruction slots): the kernel prints those addresses as raw hex in
//! stack traces, so they stay in the table as stops that resolve to nothing.
//!
//! The table also names the kretprobe trampoline, which the kernel's own
//! output prints as `[unknown/kretprobe'd]` where it is a return address
//! (`crate::printfmt::write_ip_symbol`).

use alloc::string::String;
use alloc::vec::Vec;

use crate::printfmt::{KretprobeTrampoline, Sym, SymbolLookup};

#[derive(Debug, Clone, Copy)]
struct Entry {
    addr: u64,
    name_off: u32,
    name_len: u16,
    /// 0 = core kernel, [`OPAQUE`], [`BPF`], else index + 1 into `modules`.
    module: u16,
}

/// A symbol name with its NUL fits in KSYM_NAME_LEN bytes (512 since 6.1,
/// include/linux/kallsyms.h; scripts/kallsyms.c refuses longer names). A
/// longer "name" is not a symbol: the line is skipped.
pub(crate) const KSYM_NAME_LEN: usize = 512;

/// A `[__builtin__*]` pseudo-module's page: never a lookup hit.
const OPAQUE: u16 = u16::MAX;
/// `[bpf]`: resolved, but `%pS` shows no module name for it.
const BPF: u16 = u16::MAX - 1;

/// A parsed symbol table.
#[derive(Debug, Default, Clone)]
pub struct Kallsyms {
    blob: String,
    syms: Vec<Entry>,
    modules: Vec<(u32, u16)>,
    /// Address ranges core-kernel lookups are valid in (`is_ksym_addr`),
    /// from `bounds` and the kernel's version.
    core: Vec<(u64, u64)>,
    /// The [`BOUNDS`] symbols' addresses, where listed.
    bounds: [Option<u64>; 7],
    /// `in_gate_area_no_mm()`'s page, where the kernel has one.
    gate: Option<(u64, u64)>,
    /// 1 where the kernel's ranges take their end symbol in (before 5.16).
    past: u64,
    kretprobe: Option<KretprobeTrampoline>,
}

/// The section bounds `is_ksym_addr()` reads, as [`Kallsyms`]' `bounds`
/// holds them; the indexes below name them.
const BOUNDS: [&str; 7] = ["_stext", "_etext", "_sinittext", "_einittext", "_end", "__init_begin", "__init_end"];
const STEXT: usize = 0;
const ETEXT: usize = 1;
const SINITTEXT: usize = 2;
const EINITTEXT: usize = 3;
const END: usize = 4;
const INIT_BEGIN: usize = 5;
const INIT_END: usize = 6;

/// One line of kallsyms (`ADDR TYPE NAME [MODULE]`) as [`Kallsyms::parse`]
/// takes it: address, name and module (None: the core kernel's); None for
/// a line it skips (malformed, absolute, an all-zero address of
/// kptr_restrict, a module's mapping symbol, which find_kallsyms_symbol()
/// passes over: `$x`, `$d`, `.L…`, `L0…`).
fn symbol_line(text: &str) -> Option<(u64, &str, Option<&[u8]>)> {
    let line = text.as_bytes();
    // ADDR
    let mut i = 0;
    let mut addr = 0u64;
    while let Some(d) = line.get(i).and_then(|&c| (c as char).to_digit(16)) {
        addr = addr.wrapping_shl(4) | u64::from(d);
        i += 1;
    }
    if i == 0 || i > 16 || line.get(i) != Some(&b' ') {
        return None;
    }
    // TYPE
    let &t = line.get(i + 1)?;
    if line.get(i + 2) != Some(&b' ') || addr == 0 || matches!(t, b'a' | b'A' | b'U' | b'u') {
        return None;
    }
    // NAME
    let rest = line.get(i + 3..)?;
    let n = rest.iter().position(|c| c.is_ascii_whitespace()).unwrap_or(rest.len());
    let name_str = text.get(i + 3..i + 3 + n)?;
    let name = name_str.as_bytes();
    if name.is_empty() || name.len() >= KSYM_NAME_LEN {
        return None;
    }
    // [MODULE]
    let tail = rest[n..].trim_ascii();
    let module = tail.strip_prefix(b"[").map(|m| m.strip_suffix(b"]").unwrap_or(m));
    if module.is_some() && (name[0] == b'$' || name.starts_with(b".L") || name.starts_with(b"L0")) {
        return None;
    }
    Some((addr, name_str, module))
}

/// A run of whole lines of a table, read but not yet sorted
/// ([`Kallsyms::part`]). A big table is read in parts on several CPUs,
/// joined in order ([`Part::join`]) to what one reading of the whole text
/// gives.
pub(crate) struct Part {
    k: Kallsyms,
    /// The trampolines [`Part::finish`] chooses among: the last listed of
    /// each name.
    kretprobe: Option<u64>,
    rethook: Option<u64>,
    old_kretprobe: bool,
}

impl Kallsyms {
    /// Parse kallsyms text (`ADDR TYPE NAME [MODULE]` per line). Malformed
    /// lines, absolute symbols and all-zero addresses (kptr_restrict) are
    /// skipped.
    pub fn parse(text: &[u8]) -> Kallsyms {
        Kallsyms::part(text).finish()
    }

    /// Read `b`, whole lines, as a part of a table.
    pub(crate) fn part(b: &[u8]) -> Part {
        // A board's table is 100,000 lines and more, and a trace that prints
        // a symbol waits for all of them: one check of the whole text (not
        // a lossy copy, nor a check per name), then a line at a time.
        let lossy;
        let text = match core::str::from_utf8(b) {
            Ok(text) => text,
            Err(_) => {
                lossy = String::from_utf8_lossy(b);
                &lossy
            }
        };
        let mut k = Kallsyms {
            blob: String::with_capacity(text.len() / 2),
            syms: Vec::with_capacity(text.len() / 40),
            ..Default::default()
        };
        let (mut kretprobe, mut rethook, mut old_kretprobe) = (None, None, false);
        let mut last_mod: &[u8] = &[];
        for line in text.split('\n') {
            let Some((addr, name, module)) = symbol_line(line) else { continue };
            let mi = match module {
                None => 0,
                Some(m) if m.starts_with(b"__builtin__") => OPAQUE,
                Some(b"bpf") => BPF,
                Some(m) => {
                    if last_mod != m || k.modules.is_empty() {
                        if k.blob.len() > u32::MAX as usize - m.len() || k.modules.len() >= BPF as usize - 1 {
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
            // Unnamed: nothing ever prints it.
            let name = if mi == OPAQUE { "" } else { name };
            if mi == 0 && name.starts_with('_') {
                match BOUNDS.iter().position(|b| *b == name) {
                    Some(i) => k.bounds[i] = Some(addr),
                    None if name == "__kretprobe_trampoline" => kretprobe = Some(addr),
                    None => {}
                }
            } else if mi == 0 && name.ends_with("_trampoline") {
                match name {
                    "arch_rethook_trampoline" => rethook = Some(addr),
                    "kretprobe_trampoline" => old_kretprobe = true,
                    _ => {}
                }
            }
            if k.blob.len() > u32::MAX as usize - name.len() {
                break;
            }
            k.syms.push(Entry { addr, name_off: k.blob.len() as u32, name_len: name.len() as u16, module: mi });
            k.blob.push_str(name);
        }
        Part { k, kretprobe, rethook, old_kretprobe }
    }
}

impl Part {
    /// The table: sorted, its ranges known.
    #[inline]
    pub(crate) fn finish(self) -> Kallsyms {
        let Part { mut k, kretprobe, rethook, old_kretprobe } = self;
        if !k.syms.windows(2).all(|w| w[0].addr <= w[1].addr) {
            // Aliases keep file order, so the first listed wins: names are
            // in the blob in file order (an unstable sort with that tie-break
            // keeps the standard library's stable sort out of the binary).
            k.syms.sort_unstable_by_key(|e| (e.addr, e.name_off));
        }
        // is_kretprobe_trampoline(): `__kretprobe_trampoline` (5.15+); on
        // kernels whose kretprobes run on rethook (CONFIG_KRETPROBE_ON_RETHOOK:
        // x86 and others since 6.0) that one is not built and the check is
        // is_rethook_trampoline(); before 5.15 the name `kretprobe_trampoline`.
        k.kretprobe = match (kretprobe.or(rethook), old_kretprobe) {
            (Some(a), _) => Some(KretprobeTrampoline::At(a)),
            (None, true) => Some(KretprobeTrampoline::Named),
            (None, false) => None,
        };
        k.set_kernel(None);
        k
    }

    /// This part with the lines of `next` after its own (not past 4 GiB of
    /// names or [`BPF`] modules, where one reading stops too).
    #[cfg(feature = "slices")]
    pub(crate) fn join(mut self, next: Part) -> Part {
        let k = &mut self.k;
        let Ok(at) = u32::try_from(k.blob.len()) else { return self };
        if u32::try_from(k.blob.len() + next.k.blob.len()).is_err()
            || k.modules.len() + next.k.modules.len() >= BPF as usize
        {
            return self;
        }
        let mods = k.modules.len() as u16;
        k.blob.push_str(&next.k.blob);
        k.modules.extend(next.k.modules.iter().map(|&(o, l)| (o + at, l)));
        k.syms.extend(next.k.syms.iter().map(|e| Entry {
            name_off: e.name_off + at,
            module: if e.module == 0 || e.module >= BPF { e.module } else { e.module + mods },
            ..*e
        }));
        for (b, n) in k.bounds.iter_mut().zip(next.k.bounds) {
            *b = n.or(*b);
        }
        self.kretprobe = next.kretprobe.or(self.kretprobe);
        self.rethook = next.rethook.or(self.rethook);
        self.old_kretprobe |= next.old_kretprobe;
        self
    }
}

impl Kallsyms {
    /// Resolve core-kernel addresses as `is_ksym_addr()` of kernel `version`
    /// does (`None`: the newest kernel's): each range up to its end symbol,
    /// which before 5.16 was in too (5.15 include/linux/kallsyms.h: `<=`;
    /// 5.16's "kallsyms: fix address-checks for kernel related range").
    /// `__init_begin`..`__init_end` counts on every version: 5.17 added it
    /// for parisc, whose init lies below `_stext`; on the others it lies
    /// inside `_stext`..`_end` anyway.
    pub(crate) fn set_kernel(&mut self, version: Option<(u32, u32)>) {
        self.past = u64::from(version.is_some_and(|v| v < crate::kernel::KSYM_END_EXCLUDED_SINCE));
        let b = self.bounds;
        let pairs = match b[END] {
            Some(_) => [(STEXT, END), (INIT_BEGIN, INIT_END)],
            None => [(STEXT, ETEXT), (SINITTEXT, EINITTEXT)],
        };
        self.core.clear();
        if b[STEXT].is_some() {
            for (s, e) in pairs {
                if let (Some(s), Some(e)) = (b[s], b[e]) {
                    self.core.push((s, e.saturating_add(self.past)));
                }
            }
        }
    }

    /// The page `in_gate_area_no_mm()` of the traced kernel answers for
    /// (x86_64's `[vsyscall]` unless vsyscall=none, arm's `[vectors]` with
    /// CONFIG_KUSER_HELPERS): it is kernel text to the kernel's lookups.
    pub(crate) fn set_gate_area(&mut self, start: u64, end: u64) {
        self.gate = Some((start, end));
    }

    /// How many symbols it holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.syms.len()
    }

    /// Every symbol, address and name, by address (aliases side by side).
    pub(crate) fn symbols(&self) -> impl Iterator<Item = (u64, &str)> {
        self.syms.iter().map(|e| (e.addr, self.name(e)))
    }

    fn name(&self, e: &Entry) -> &str {
        let s = e.name_off as usize;
        self.blob.get(s..s + e.name_len as usize).unwrap_or("")
    }

    fn module(&self, e: &Entry) -> Option<&str> {
        let (o, l) = *self.modules.get((e.module as usize).checked_sub(1)?)?;
        self.blob.get(o as usize..o as usize + l as usize)
    }

    /// The first of the aliases of entry `i` (a few steps back at most).
    fn first_alias(&self, mut i: usize) -> &Entry {
        while i > 0 && self.syms[i - 1].addr == self.syms[i].addr {
            i -= 1;
        }
        &self.syms[i]
    }

    /// The size get_symbol_pos() gives the last core symbol, at `at`: up
    /// to `_einittext` in init text, else to `_end` (KALLSYMS_ALL) or
    /// `_etext`, as an `unsigned long` (the kernel's width: 32 bits where
    /// its addresses are).
    fn last_size(&self, addr: u64, at: u64) -> u64 {
        let b = &self.bounds;
        let init = matches!((b[SINITTEXT], b[EINITTEXT]), (Some(s), Some(e)) if addr >= s && addr < e + self.past);
        let end = if init { b[EINITTEXT] } else { b[END].or(b[ETEXT]) };
        let size = end.map_or(0, |e| e.wrapping_sub(at));
        if at >> 32 == 0 {
            size & u64::from(u32::MAX)
        } else {
            size
        }
    }

    /// Address → symbol, offset and size, like `%pS` prints it.
    pub(crate) fn lookup(&self, addr: u64) -> Option<Sym<'_>> {
        if self.gate.is_some_and(|(s, x)| addr >= s && addr < x) {
            // get_symbol_pos(): the last core symbol, all of them below
            // the page.
            let e = self.first_alias(self.syms.iter().rposition(|e| e.module == 0)?);
            let size = self.last_size(addr, e.addr);
            return Some(Sym { name: self.name(e), offset: addr.wrapping_sub(e.addr), size, module: None });
        }
        // Index of the first entry above addr.
        let hi = self.syms.partition_point(|e| e.addr <= addr);
        let e = self.first_alias(hi.checked_sub(1)?);
        let at = e.addr;
        if e.module == OPAQUE {
            return None;
        }
        if e.module == 0 && !self.core.is_empty() && !self.core.iter().any(|&(s, x)| addr >= s && addr < x) {
            return None;
        }
        // The next core symbol ends a core one; after the last,
        // get_symbol_pos() takes the section's end.
        let size = match self.syms.get(hi) {
            Some(n) if e.module != 0 || n.module == 0 => n.addr - at,
            _ if e.module == 0 => self.last_size(addr, at),
            _ => 0,
        };
        if e.module != 0 && self.syms.get(hi).map_or(true, |n| n.module != e.module) && addr - at >= 0x10_0000 {
            // Past the last symbol of a module by a lot: not in it.
            return None;
        }
        Some(Sym { name: self.name(e), offset: addr - at, size, module: self.module(e) })
    }

    /// `addr` is in the kernel image (`__is_kernel()`: `_stext` up to
    /// `_end`, or the text where kallsyms has no `_end`).
    pub(crate) fn in_image(&self, addr: u64) -> bool {
        self.core.first().is_some_and(|&(s, x)| addr >= s && addr < x)
    }

    /// Exact name → address (first match).
    pub(crate) fn address_of(&self, name: &str) -> Option<u64> {
        self.syms.iter().find(|e| self.name(e) == name).map(|e| e.addr)
    }
}

impl SymbolLookup for Kallsyms {
    fn lookup(&self, addr: u64) -> Option<Sym<'_>> {
        Kallsyms::lookup(self, addr)
    }
    fn kretprobe_trampoline(&self) -> Option<KretprobeTrampoline> {
        self.kretprobe
    }
    fn in_image(&self, addr: u64) -> bool {
        Kallsyms::in_image(self, addr)
    }
}

/// The symbols the readers find by name, whatever the pages hold: the
/// section bounds of `is_ksym_addr()` and `get_symbol_pos()` ([`BOUNDS`]),
/// `_text` (the last boot's text offset), the irq entry text (the graph's
/// irq rule) and the kretprobe trampolines.
const NAMED: [&str; 13] = [
    "_text",
    "_stext",
    "_etext",
    "_sinittext",
    "_einittext",
    "_end",
    "__init_begin",
    "__init_end",
    "__irqentry_text_start",
    "__irqentry_text_end",
    "__kretprobe_trampoline",
    "arch_rethook_trampoline",
    "kretprobe_trampoline",
];

/// The part of a kallsyms table a recording's pages need, for the console
/// form (`tr-cat -o - --console`), which cannot spend minutes of a serial
/// line on megabytes of symbols nobody uses. Fed the table before the run
/// ([`UsedSymbols::table_piece`]), the pages as they are sent
/// ([`UsedSymbols::scan`]), then the same table again
/// ([`UsedSymbols::filter_piece`]): out come the table's own lines, in
/// their order, of every symbol an address in the pages falls in and of
/// the one after it (which ends it: `func+off/size`), and of those the
/// readers find by name (`_stext`, `_end`…); a [`Kallsyms`] of them
/// resolves each of those addresses as one of the whole table does.
///
/// What it holds: each address the table lists a symbol at, once, sorted,
/// and one bit for each (8 bytes and a bit per symbol: 0.98 MB for the
/// 121 910 addresses of a Debian x86_64 kernel, whose text is 5.4 MB).
#[derive(Debug, Default)]
pub(crate) struct UsedSymbols {
    addrs: Vec<u64>,
    /// One bit per `addrs` entry: its lines are wanted.
    used: Vec<u64>,
    /// The addresses of [`NAMED`], wanted in any case.
    fixed: Vec<u64>,
    /// The last core symbol's, wanted too: `in_gate_area_no_mm()`
    /// addresses resolve to it.
    last_core: u64,
    /// The line a piece ended inside of.
    part: Vec<u8>,
    /// The value marked last (a page repeats the same few).
    last: Option<u64>,
}

impl UsedSymbols {
    /// Nothing known yet.
    pub(crate) fn new() -> UsedSymbols {
        UsedSymbols::default()
    }

    /// The next piece of the table's text (the pieces concatenate; a line
    /// may go on in the next one). After the last, [`UsedSymbols::table_done`].
    pub(crate) fn table_piece(&mut self, piece: &[u8]) {
        let mut part = core::mem::take(&mut self.part);
        each_line(&mut part, piece, &mut |line| self.add_line(line));
        self.part = part;
    }

    fn add_line(&mut self, line: &[u8]) {
        let Some((addr, name, module)) = core::str::from_utf8(line).ok().and_then(symbol_line) else {
            return;
        };
        self.addrs.push(addr);
        if module.is_none() {
            if NAMED.contains(&name) {
                self.fixed.push(addr);
            }
            self.last_core = self.last_core.max(addr);
        }
    }

    /// The whole table was given: sort it.
    pub(crate) fn table_done(&mut self) {
        let part = core::mem::take(&mut self.part);
        if !part.is_empty() {
            self.add_line(&part);
        }
        self.addrs.sort_unstable();
        self.addrs.dedup();
        self.addrs.shrink_to_fit();
        self.used = alloc::vec![0; self.addrs.len().div_ceil(64)];
        self.fixed.push(self.last_core);
        for a in core::mem::take(&mut self.fixed) {
            if let Ok(i) = self.addrs.binary_search(&a) {
                self.set(i);
            }
        }
    }

    fn set(&mut self, i: usize) {
        if let Some(w) = self.used.get_mut(i / 64) {
            *w |= 1 << (i % 64);
        }
    }

    fn is_set(&self, i: usize) -> bool {
        self.used.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// `addr` is named somewhere: want the symbol it falls in (the last
    /// at or below it: all the lines at that address, so that the first
    /// alias stays the first) and the next one (its address ends the
    /// size; its module decides whether `addr` is past a module's end).
    pub(crate) fn mark(&mut self, addr: u64) {
        if self.last == Some(addr) {
            return;
        }
        self.last = Some(addr);
        let hi = self.addrs.partition_point(|&a| a <= addr);
        if hi > 0 {
            self.set(hi - 1);
            self.set(hi);
        }
    }

    /// Mark each value of an `unsigned long` of `abi` that `data` (a page
    /// of the ring buffer) holds at a multiple of 4 bytes, where records
    /// and their fields are aligned: the function tracers' ip and
    /// parent_ip, the stack entries, `%pS` fields, a marker's ip, bprint's
    /// arguments. A value that is not an address only adds a symbol.
    pub(crate) fn scan(&mut self, data: &[u8], abi: crate::abi::Abi) {
        let Some(&low) = self.addrs.first() else { return };
        let n = abi.long_size as usize;
        let mut at = 0;
        while let Some(v) = abi.endian.uint(data, at, n) {
            if v >= low {
                self.mark(v);
            }
            at += 4;
        }
    }

    /// The next piece of the same table again: the lines wanted, each with
    /// its newline, onto `out`. After the last, [`UsedSymbols::filter_done`].
    pub(crate) fn filter_piece(&mut self, piece: &[u8], out: &mut Vec<u8>) {
        let mut part = core::mem::take(&mut self.part);
        each_line(&mut part, piece, &mut |line| self.keep_line(line, out));
        self.part = part;
    }

    /// The table's last line, if it had no newline.
    pub(crate) fn filter_done(&mut self, out: &mut Vec<u8>) {
        let part = core::mem::take(&mut self.part);
        if !part.is_empty() {
            self.keep_line(&part, out);
        }
    }

    fn keep_line(&self, line: &[u8], out: &mut Vec<u8>) {
        // A line the table did not have before the run (a module loaded
        // since) names no address of it.
        let Some((addr, ..)) = core::str::from_utf8(line).ok().and_then(symbol_line) else { return };
        if self.addrs.binary_search(&addr).is_ok_and(|i| self.is_set(i)) {
            out.extend_from_slice(line);
            out.push(b'\n');
        }
    }
}

/// Call `f` with each whole line of `part` and `piece` (without its
/// newline); what follows the last newline stays in `part`.
fn each_line(part: &mut Vec<u8>, mut piece: &[u8], f: &mut dyn FnMut(&[u8])) {
    while let Some(n) = piece.iter().position(|&c| c == b'\n') {
        if part.is_empty() {
            f(&piece[..n]);
        } else {
            part.extend_from_slice(&piece[..n]);
            f(part);
            part.clear();
        }
        piece = &piece[n + 1..];
    }
    part.extend_from_slice(piece);
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    /// The x86_64 board's (6.1, CONFIG_KALLSYMS_ALL) table around an ftrace
    /// trampoline, which its stack traces print as `=> 0xffffffffc0201083`.
    const TABLE: &str = "ffffffff81000000 T _stext\n\
        ffffffff81e01d32 T _etext\n\
        ffffffff84097b70 b pd\n\
        ffffffff84430000 B _end\n\
        ffffffffc0205000 t ftrace_trampoline\t[__builtin__ftrace]\n\
        ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\n\
        ffffffffc0210000 t ext4_fn\t[ext4]\n\
        ffffffffc0230000 t bpf_prog_6deef7357e7b4530_sd_fw\t[bpf]\n";

    /// A table read in parts cut after any lines, joined, is the table
    /// read whole: the same symbols, lookups, ranges and trampoline.
    #[cfg(feature = "slices")]
    #[test]
    fn parts_joined_are_the_whole() {
        // TABLE, then aliases, trampolines, a module's lines out of order
        // and its mapping symbol, a bad line, a last line without its end.
        let text = format!(
            "{TABLE}ffffffff81000000 T _text\n\
             ffffffff81000010 t first_alias\n\
             ffffffff81000010 T second_alias\n\
             ffffffff81050000 T __kretprobe_trampoline\n\
             ffffffff81050040 T arch_rethook_trampoline\n\
             ffffffffc0210100 t ext4_gn\t[ext4]\n\
             ffffffffc0200000 t m_fn\t[m]\n\
             ffffffffc0200000 t $x\t[m]\n\
             garbage line\n\
             ffffffff81000020 T late\n\
             ffffffff81050000 T __kretprobe_trampoline"
        );
        let view = |k: &Kallsyms| {
            let at = |a: u64| [k.lookup(a.wrapping_sub(1)), k.lookup(a), k.lookup(a + 1)];
            let syms: Vec<_> = k.symbols().map(|(a, n)| (a, n.to_string(), at(a))).collect();
            format!("{syms:?} {:?} {:?}", k.core, k.kretprobe)
        };
        let whole = view(&Kallsyms::parse(text.as_bytes()));
        let cuts: Vec<usize> = text.match_indices('\n').map(|(i, _)| i + 1).collect();
        for (n, &i) in cuts.iter().enumerate() {
            for &j in &cuts[n..] {
                let part = |a: usize, b: usize| Kallsyms::part(&text.as_bytes()[a..b]);
                let joined = part(0, i).join(part(i, j)).join(part(j, text.len())).finish();
                assert_eq!(view(&joined), whole, "cut after bytes {i} and {j}");
            }
        }
    }

    #[test]
    fn a_name_longer_than_a_kernels_is_no_symbol() {
        let long = "n".repeat(KSYM_NAME_LEN);
        let k = Kallsyms::parse(
            &format!("ffffffff81000000 T a\nffffffff81000100 T {long}\nffffffff81000200 T {}\n", &long[1..])
                .into_bytes(),
        );
        assert_eq!(k.syms.len(), 2, "the 511-byte name is one, the 512-byte one is not");
    }

    #[test]
    fn pseudo_module_pages_resolve_to_nothing() {
        let k = Kallsyms::parse(TABLE.as_bytes());
        assert!(k.lookup(0xffffffffc0201083).is_none());
        assert!(k.lookup(0xffffffffc0205fff).is_none());
        // Past _end: not the last data symbol either.
        assert!(k.lookup(0xffffffff84430001).is_none());
        let s = k.lookup(0xffffffff84097b78).unwrap();
        assert_eq!((s.name, s.offset, s.module), ("pd", 8, None));
        let s = k.lookup(0xffffffffc0210010).unwrap();
        assert_eq!((s.name, s.offset, s.size, s.module), ("ext4_fn", 0x10, 0x20000, Some("ext4")));
        let s = k.lookup(0xffffffffc0230004).unwrap();
        assert_eq!((s.name, s.offset, s.module), ("bpf_prog_6deef7357e7b4530_sd_fw", 4, None));
        assert_eq!(k.address_of("ftrace_trampoline"), None);
    }

    /// What `is_kretprobe_trampoline()` compares with, by kernel: the
    /// arm64 board (6.1), the x86_64 board (6.1, kretprobes on rethook,
    /// which also lists no `__kretprobe_trampoline`), a 5.10 kernel (by
    /// name), and none.
    #[test]
    fn kretprobe_trampoline_of_each_kernel() {
        let t = |text: &str| Kallsyms::parse(text.as_bytes()).kretprobe_trampoline();
        let arm64 = "ffff800008010000 T _stext\nffff8000080381c4 T __kretprobe_trampoline\nffff8000080381f0 T kprobe_breakpoint_handler\n";
        assert_eq!(t(arm64), Some(KretprobeTrampoline::At(0xffff8000080381c4)));
        let x86 = "ffffffff81076840 T arch_rethook_trampoline\nffffffff81076860 t arch_rethook_fixup_return\n";
        assert_eq!(t(x86), Some(KretprobeTrampoline::At(0xffffffff81076840)));
        // Both: kretprobes not on rethook (rethook only for fprobe).
        assert_eq!(
            t(&format!("{x86}ffffffff81076900 T __kretprobe_trampoline\n")),
            Some(KretprobeTrampoline::At(0xffffffff81076900))
        );
        assert_eq!(t("ffffffff81050000 T kretprobe_trampoline\n"), Some(KretprobeTrampoline::Named));
        assert_eq!(t("ffffffff81050000 T schedule\nffffffffc0001000 t kretprobe_trampoline\t[m]\n"), None);
    }

    /// `trace_seq_print_sym()`: the trampoline prints `[unknown/kretprobe'd]`
    /// by address (with or without offset) on 5.15+, by name and only
    /// without offset before.
    #[test]
    fn kretprobed_return_addresses() {
        use crate::printfmt::{write_ip_sym, write_ip_symbol};
        let s = |k: &Kallsyms, a: u64, offset: bool| {
            let mut o = String::new();
            let hit = write_ip_symbol(&mut o, a, offset, Some(k as &dyn SymbolLookup)).unwrap();
            (hit, o)
        };
        let k = Kallsyms::parse(
            b"ffff8000080381c4 T __kretprobe_trampoline\nffff8000080381f0 T kprobe_breakpoint_handler\n",
        );
        assert_eq!(s(&k, 0xffff8000080381c4, false), (true, "[unknown/kretprobe'd]".into()));
        assert_eq!(s(&k, 0xffff8000080381c4, true), (true, "[unknown/kretprobe'd]".into()));
        // Inside it but not the address itself: the symbol.
        assert_eq!(s(&k, 0xffff8000080381c8, true), (true, "__kretprobe_trampoline+0x4/0x2c".into()));
        assert_eq!(s(&k, 0xffff8000080381f4, false), (true, "kprobe_breakpoint_handler".into()));
        assert_eq!(s(&k, 0x1000, false), (false, String::new()));
        let mut o = String::new();
        write_ip_sym(&mut o, 0xffff8000080381c4, Some(&k as &dyn SymbolLookup)).unwrap();
        write_ip_sym(&mut o, 0, Some(&k as &dyn SymbolLookup)).unwrap();
        write_ip_sym(&mut o, 0x1000, None).unwrap();
        assert_eq!(o, "[unknown/kretprobe'd]00x00001000");
        let old = Kallsyms::parse("ffffffff81050000 T kretprobe_trampoline\nffffffff81050040 T schedule\n".as_bytes());
        assert_eq!(s(&old, 0xffffffff81050008, false), (true, "[unknown/kretprobe'd]".into()));
        assert_eq!(s(&old, 0xffffffff81050008, true), (true, "kretprobe_trampoline+0x8/0x40".into()));
    }

    #[test]
    fn unbounded_tail_of_a_table_without_section_markers() {
        // A cut-down table (no _stext/_end): the last symbol keeps a hit, but
        // a module's stops 1 MiB past its last symbol.
        let k = Kallsyms::parse("ffffffffc0001000 t m_fn\t[m]\n".as_bytes());
        assert!(k.lookup(0xffffffffc0001000 + 0x10_0000).is_none());
        assert_eq!(k.lookup(0xffffffffc0001004).map(|s| s.name), Some("m_fn"));
    }

    /// An x86_64-like table: aliases, a mapping symbol, a pseudo-module,
    /// BPF, the bounds and the irq entry text.
    const USED_TABLE: &str = "0000000000000000 A fixed_percpu_data\n\
        ffffffff81000000 T _text\n\
        ffffffff81000000 T _stext\n\
        ffffffff81001000 T alpha\n\
        ffffffff81001000 T alpha_alias\n\
        ffffffff81002000 t beta\n\
        ffffffff81003000 T gamma\n\
        ffffffff81004000 T __irqentry_text_start\n\
        ffffffff81005000 T __irqentry_text_end\n\
        ffffffff81006000 T delta\n\
        ffffffff81e01d32 T _etext\n\
        ffffffff82000000 D data1\n\
        ffffffff84430000 B _end\n\
        ffffffffc0205000 t ftrace_trampoline\t[__builtin__ftrace]\n\
        ffffffffc0210000 t $x\t[ext4]\n\
        ffffffffc0210000 t ext4_fn\t[ext4]\n\
        ffffffffc0210100 t ext4_gn\t[ext4]\n\
        ffffffffc0210200 t ext4_hn\t[ext4]\n\
        ffffffffc0230000 t bpf_prog_x\t[bpf]\n";

    fn used(table: &str, data: &[u8], abi: crate::abi::Abi, piece: usize) -> String {
        let mut u = UsedSymbols::new();
        for p in table.as_bytes().chunks(piece) {
            u.table_piece(p);
        }
        u.table_done();
        u.scan(data, abi);
        let mut out = Vec::new();
        for p in table.as_bytes().chunks(piece) {
            u.filter_piece(p, &mut out);
        }
        u.filter_done(&mut out);
        String::from_utf8(out).unwrap()
    }

    /// The lines kept: each address's symbol (all its aliases, the first
    /// first) and the next one, the named ones and the last core symbol;
    /// whatever the pieces' cuts. Each address resolves as with the whole
    /// table; a value at an offset not a multiple of 4 is not read.
    #[test]
    fn used_symbols_are_those_the_pages_name() {
        use crate::abi::{Abi, Endian};
        let addrs = [0xffffffff81001010u64, 0xffffffffc0210004, 0xffffffff81001010, 0x1234];
        let mut data = alloc::vec![0u8; 4];
        for a in addrs {
            data.extend_from_slice(&a.to_le_bytes());
        }
        // At offset 2 of a word (as trace_pipe_raw never aligns a field).
        data.extend_from_slice(&[0, 0]);
        data.extend_from_slice(&0xffffffff81003008u64.to_le_bytes());
        data.extend_from_slice(&[0, 0]);
        let want = "ffffffff81000000 T _text\n\
            ffffffff81000000 T _stext\n\
            ffffffff81001000 T alpha\n\
            ffffffff81001000 T alpha_alias\n\
            ffffffff81002000 t beta\n\
            ffffffff81004000 T __irqentry_text_start\n\
            ffffffff81005000 T __irqentry_text_end\n\
            ffffffff81e01d32 T _etext\n\
            ffffffff84430000 B _end\n\
            ffffffffc0210000 t ext4_fn\t[ext4]\n\
            ffffffffc0210100 t ext4_gn\t[ext4]\n";
        let abi = Abi::new(Endian::Little, 8);
        for piece in [1, 7, 64, USED_TABLE.len()] {
            assert_eq!(used(USED_TABLE, &data, abi, piece), want, "pieces of {piece} bytes");
        }
        let (full, part) = (Kallsyms::parse(USED_TABLE.as_bytes()), Kallsyms::parse(want.as_bytes()));
        for a in addrs {
            assert_eq!(full.lookup(a), part.lookup(a), "{a:#x}");
        }
        assert_eq!(full.lookup(0xffffffff81001010).map(|s| (s.name, s.size)), Some(("alpha", 0x1000)));
        assert_eq!(IrqRange::of(&part), IrqRange::of(&full));
        // Past every symbol: the last one and nothing after it; the table's
        // last line without its newline counts.
        let tail = used(USED_TABLE.trim_end(), &u64::MAX.to_le_bytes(), abi, 5);
        assert!(tail.ends_with("ffffffffc0230000 t bpf_prog_x\t[bpf]\n"), "{tail}");
        // Nothing recorded: the named symbols only.
        assert_eq!(used(USED_TABLE, &[], abi, 64).lines().count(), 6);
    }

    /// A 32-bit big-endian kernel's words.
    #[test]
    fn used_symbols_of_a_32_bit_big_endian_kernel() {
        use crate::abi::{Abi, Endian};
        let table = "c0008000 T _stext\nc0100000 T f\nc0100040 T g\nc0100080 T h\nc0800000 T _etext\n";
        let mut data = 0xc0100044u32.to_be_bytes().to_vec();
        data.extend_from_slice(&0xc0100044u32.to_le_bytes());
        let got = used(table, &data, Abi::new(Endian::Big, 4), 9);
        assert_eq!(got, "c0008000 T _stext\nc0100040 T g\nc0100080 T h\nc0800000 T _etext\n");
        let k = Kallsyms::parse(got.as_bytes());
        let s = k.lookup(0xc0100044).unwrap();
        assert_eq!((s.name, s.offset, s.size), ("g", 4, 0x40));
    }

    /// The irq entry text's bounds, by name (what the graph renderer reads).
    #[derive(Debug, PartialEq)]
    struct IrqRange(Option<u64>, Option<u64>);
    impl IrqRange {
        fn of(k: &Kallsyms) -> IrqRange {
            IrqRange(k.address_of("__irqentry_text_start"), k.address_of("__irqentry_text_end"))
        }
    }
}
