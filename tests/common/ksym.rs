//! What the kernel's `kallsyms_lookup()` answers for an address, written
//! out plainly from its sources, to hold trbox's `Kallsyms` against on
//! every symbol a kallsyms text lists (not a sample).
//!
//! The core kernel (kernel/kallsyms.c `kallsyms_lookup_buildid()`,
//! `get_symbol_pos()`): an address is looked up among vmlinux's symbols only
//! when `is_ksym_addr()` says it is the kernel's (include/linux/kallsyms.h,
//! include/asm-generic/sections.h):
//! - CONFIG_KALLSYMS_ALL (then `_end` is listed): `_stext <= a < _end`, or
//!   `__init_begin <= a < __init_end` from 5.17 on (`__is_kernel()`);
//! - otherwise `_stext <= a < _etext` or `_sinittext <= a < _einittext`
//!   (`__is_kernel_text()`, `is_kernel_inittext()`): the end symbols
//!   themselves are no kernel addresses — the exception the first failing
//!   machine met (`_einittext`);
//! - before 5.16 each end was in (`<=`);
//! - `in_gate_area_no_mm()` in either case: x86_64's vsyscall page and a
//!   32-bit arm kernel's vectors page, where no symbol is; the kernel names
//!   such an address after its last symbol.
//!
//! Then the name is the first listed of the symbols at the highest address
//! at or below it (/proc/kallsyms lists vmlinux's table in its order), the
//! size runs to the next higher symbol or, after the last, to `_einittext`
//! (in init text), `_end` (KALLSYMS_ALL) or `_etext`, wrapping as an
//! `unsigned long`.
//!
//! Modules (`find_kallsyms_symbol()`, kernel/module/kallsyms.c): the first
//! of the module's symbols at the highest address at or below it, skipping
//! mapping symbols (`$x`, `$d`, `.L…`, `L0…`, which /proc/kallsyms lists);
//! freed init functions ftrace keeps (`ftrace_mod_address_lookup()`) are
//! listed under the module's name too. BPF programs resolve without a module
//! name. The pages of `[__builtin__ftrace]` and `[__builtin__kprobes]`
//! resolve to nothing (no lookup covers them).
//!
//! Not checked, since a kallsyms text does not say it: the size of a
//! module's or BPF program's symbol (the kernel ends the last one of a
//! region at the region's end, which kallsyms does not list).

#![allow(dead_code)]

/// One answer: name, offset, size (`None`: not known from kallsyms), module.
pub type Answer = (String, u64, Option<u64>, Option<String>);

/// A kallsyms text as the kernel's lookups see it.
pub struct Rules<'a> {
    /// vmlinux's symbols in listing order (the kernel's table order).
    core: Vec<(u64, &'a str)>,
    /// Everything else: (address, name, module), in listing order.
    others: Vec<(u64, &'a str, &'a str)>,
    /// `others` but the mapping symbols, by address: (address, index).
    others_index: Vec<(u64, usize)>,
    version: (u32, u32),
    gate: Option<(u64, u64)>,
    long32: bool,
    /// The addresses of [`BOUNDS`]' symbols, where listed.
    bounds: [Option<u64>; 7],
}

const BOUNDS: [&str; 7] = ["_stext", "_etext", "_sinittext", "_einittext", "_end", "__init_begin", "__init_end"];

/// `is_mapping_symbol()` (include/linux/module_symbol.h).
pub fn is_mapping_symbol(name: &str) -> bool {
    name.starts_with('$') || name.starts_with(".L") || name.starts_with("L0")
}

impl<'a> Rules<'a> {
    /// The rules of kernel `version` for the table `text`; `gate`: its
    /// `in_gate_area_no_mm()` page.
    pub fn new(text: &'a str, version: (u32, u32), gate: Option<(u64, u64)>) -> Rules<'a> {
        let mut core = Vec::new();
        let mut others = Vec::new();
        let mut long32 = true;
        for l in text.lines() {
            let mut w = l.split_whitespace();
            let (Some(a), Some(_ty), Some(name)) = (w.next(), w.next(), w.next()) else { continue };
            let Ok(addr) = u64::from_str_radix(a, 16) else { continue };
            long32 &= a.len() <= 8;
            match w.next().and_then(|m| m.strip_prefix('[')?.strip_suffix(']')) {
                Some(m) => others.push((addr, name, m)),
                None => core.push((addr, name)),
            }
        }
        // The kernel's table is sorted by address; a listing keeps that
        // order (a cut-down copy too), ties in the table's order.
        core.sort_by_key(|s| s.0);
        let bounds = BOUNDS.map(|b| core.iter().find(|s| s.1 == b).map(|s| s.0));
        let mut others_index: Vec<(u64, usize)> =
            others.iter().enumerate().filter(|(_, s)| !is_mapping_symbol(s.1)).map(|(i, s)| (s.0, i)).collect();
        others_index.sort_by_key(|&(a, i)| (a, i));
        Rules { core, others, others_index, version, gate, long32, bounds }
    }

    fn b(&self, name: &str) -> Option<u64> {
        self.bounds[BOUNDS.iter().position(|b| *b == name).expect("a bound")]
    }

    /// CONFIG_KALLSYMS_ALL: `_end` is listed.
    pub fn all(&self) -> bool {
        self.b("_end").is_some()
    }

    /// `is_ksym_addr(a)` of this kernel.
    pub fn is_ksym_addr(&self, a: u64) -> bool {
        if self.gate.is_some_and(|(s, e)| a >= s && a < e) {
            return true;
        }
        let past = u64::from(self.version < (5, 16));
        let within = |s: &str, e: &str| match (self.b(s), self.b(e)) {
            (Some(s), Some(e)) => a >= s && a < e + past,
            _ => false,
        };
        let stext = self.b("_stext").expect("the table lists _stext");
        if self.all() {
            within("_stext", "_end") || (self.version >= (5, 17) && within("__init_begin", "__init_end"))
        } else {
            assert!(stext <= self.b("_etext").expect("_etext"), "_stext above _etext");
            within("_stext", "_etext") || within("_sinittext", "_einittext")
        }
    }

    /// `kallsyms_lookup(a)`.
    pub fn lookup(&self, a: u64) -> Option<Answer> {
        if self.is_ksym_addr(a) {
            let at = self.core.partition_point(|s| s.0 <= a);
            let start = self.core[at.checked_sub(1)?].0;
            let first = self.core[self.core.partition_point(|s| s.0 < start)];
            let past = u64::from(self.version < (5, 16));
            let end = match self.core[at..].first() {
                Some(next) => next.0,
                // is_kernel_inittext(), with its version's end.
                None if self.b("_sinittext").is_some_and(|s| a >= s)
                    && self.b("_einittext").is_some_and(|e| a < e + past) =>
                {
                    self.b("_einittext")?
                }
                None => self.b("_end").or(self.b("_etext"))?,
            };
            let mut size = end.wrapping_sub(start);
            if self.long32 {
                size &= 0xffff_ffff;
            }
            return Some((first.1.to_string(), a - start, Some(size), None));
        }
        // Modules, BPF, ftrace's kept init functions: checked at their own
        // symbols' addresses only (where within_module() holds).
        let i = self.others_at(a)?;
        let (_, name, m) = self.others[i];
        if m.starts_with("__builtin__") {
            return None;
        }
        Some((name.to_string(), 0, None, (m != "bpf").then(|| m.to_string())))
    }

    /// The first listed symbol at `a` that is no mapping symbol, among
    /// modules, BPF and the pseudo-modules (all at their own addresses).
    fn others_at(&self, a: u64) -> Option<usize> {
        let i = self.others_index.partition_point(|&(x, _)| x < a);
        self.others_index.get(i).filter(|&&(x, _)| x == a).map(|&(_, j)| j)
    }

    /// Every address the table lists, but those where only a module's
    /// mapping symbols are (no symbol of its own there).
    pub fn addresses(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.core.iter().map(|s| s.0).collect();
        v.extend(self.others.iter().filter(|s| !is_mapping_symbol(s.1)).map(|s| s.0));
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The table as kernel built without CONFIG_KALLSYMS_ALL would list it
    /// (scripts/kallsyms.c `symbol_valid()` without --all-symbols): vmlinux's
    /// symbols inside `_stext`..`_etext` and `_sinittext`..`_einittext`
    /// (ends included), and every `__start_*`/`__stop_*`, but none at
    /// `_etext`'s or `_einittext`'s address other than these two.
    pub fn text_only(text: &str) -> String {
        let r = Rules::new(text, (0, 0), None);
        let (Some(s), Some(e), Some(si), Some(ei)) =
            (r.b("_stext"), r.b("_etext"), r.b("_sinittext"), r.b("_einittext"))
        else {
            panic!("the table lacks a text bound")
        };
        let mut out = String::new();
        for l in text.lines() {
            let mut w = l.split_whitespace();
            let (Some(a), Some(_), Some(name)) = (w.next(), w.next(), w.next()) else { continue };
            let Ok(addr) = u64::from_str_radix(a, 16) else { continue };
            let keep = w.next().is_some()
                || name.starts_with("__start_")
                || name.starts_with("__stop_")
                || (((addr >= s && addr <= e) || (addr >= si && addr <= ei))
                    && !(addr == e && name != "_etext")
                    && !(addr == ei && name != "_einittext"));
            if keep {
                out.push_str(l);
                out.push('\n');
            }
        }
        out
    }
}

/// trbox's answer for `a` from `k`.
pub fn trbox_answer(k: &trbox::kallsyms::Kallsyms, a: u64) -> Option<Answer> {
    k.lookup(a).map(|s| (s.name.to_string(), s.offset, Some(s.size), s.module.map(str::to_string)))
}

/// Hold trbox's lookups of `text` (as kernel `version`, with `gate`) against
/// the kernel's at every address it lists and at the gate page's first and
/// last byte; the number of addresses checked.
pub fn check(text: &str, version: (u32, u32), gate: Option<(u64, u64)>, what: &str) -> usize {
    let rules = Rules::new(text, version, gate);
    let mut k = trbox::kallsyms::Kallsyms::parse(text.as_bytes());
    k.set_kernel(Some(version));
    if let Some((s, e)) = gate {
        k.set_gate_area(s, e);
    }
    let mut addrs = rules.addresses();
    if let Some((s, e)) = gate {
        addrs.extend([s, s + 0x400, e - 1]);
    }
    let mut bad = Vec::new();
    for &a in &addrs {
        let want = rules.lookup(a);
        let mut got = trbox_answer(&k, a);
        if let (Some(g), Some(w)) = (&mut got, &want) {
            if w.2.is_none() {
                g.2 = None;
            }
        }
        if got != want {
            bad.push(format!("{a:#x}: kernel {want:?}, trbox {got:?}"));
        }
    }
    assert!(
        bad.is_empty(),
        "{what}: {} of {} addresses differ from the kernel's lookup, e.g.\n{}",
        bad.len(),
        addrs.len(),
        bad.iter().take(12).cloned().collect::<Vec<_>>().join("\n")
    );
    addrs.len()
}

/// (major, minor) of a kernel release (`6.1.0-50-arm64`).
pub fn release_version(release: &str) -> Option<(u32, u32)> {
    let mut n = release.split(|c: char| !c.is_ascii_digit()).map(|x| x.parse().ok());
    Some((n.next()??, n.next()??))
}
