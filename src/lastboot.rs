//! A persistent ring buffer's previous boot (6.12+: an instance on memory
//! kept across reboots, `reserve_mem=` + `trace_instance=NAME@LABEL`). Its
//! records hold the addresses of the kernel and modules as they were
//! loaded in that boot; the kernel shifts them to the current boot before
//! it looks a symbol up (`trace_adjust_address()`, kernel/trace/trace.c),
//! and so does a reader of a trace.dat that trace-cmd 3.4 wrote with the
//! instance's `last_boot_info` (option 24, LAST_BOOT_INFO) and the current
//! `/proc/modules` (option 25, MODULES_FILE), against the current boot's
//! kallsyms in the same file.
//!
//! `last_boot_info` (kernel/trace/trace.c, `tracing_last_boot_read()` and
//! later `l_show()`):
//!
//! | kernel | text |
//! |---|---|
//! | 6.12 | `text delta:\t%ld` and `data delta:\t%ld` |
//! | 6.14 | `%lx\t[kernel]` (the previous boot's KASLR offset), then `%lx\t%s` per module (its address then) |
//! | 6.15 on | `%lx\t[kernel]` (the previous boot's `_text`), modules as before |
//! | 6.14 on | `# Current`: the buffer holds this boot's records (after tracing started in it) |
//!
//! The KASLR offset of 6.14 cannot be told from `_text` by its text alone,
//! but an offset is small and `_text` is a kernel address: an offset is
//! not used (no current offset is in the file), and `LastBoot::skipped`
//! says so.
//!
//! Sans-IO: texts in, addresses out.

use alloc::string::String;
use alloc::vec::Vec;

/// Where the previous boot had the kernel and its modules, and how far each
/// moved since.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LastBoot {
    /// The previous boot's `_text` (6.15 on).
    text: Option<u64>,
    /// The kernel's move, as 6.12 states it.
    text_delta: Option<i64>,
    /// 6.12's data delta: not used to move addresses, but a non-zero one
    /// is a move ([`LastBoot::moved`]).
    data_delta: i64,
    /// Modules of the previous boot: (its address then, its address now,
    /// its size now), by the address then. A module not loaded now is left
    /// out: its addresses name nothing now.
    modules: Vec<(u64, u64, u64)>,
    /// What the text held that is not used, for `-v`.
    pub(crate) skipped: Vec<String>,
    /// Modules of the previous boot that are not loaded now.
    pub(crate) gone: Vec<String>,
}

/// Where module `name` is now, and its size: its line of `/proc/modules`
/// (`NAME SIZE REFS DEPS STATE ADDR`).
fn module_now(modules: &str, name: &str) -> Option<(u64, u64)> {
    modules.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        if w.next()? != name {
            return None;
        }
        let size = w.next()?.parse().ok()?;
        let addr = u64::from_str_radix(w.nth(3)?.trim_start_matches("0x"), 16).ok()?;
        Some((addr, size))
    })
}

/// A kernel address of either word size (a KASLR offset is far below).
fn is_kernel_address(a: u64) -> bool {
    a >= 0xffff_0000_0000_0000 || (0xc000_0000..=0xffff_ffff).contains(&a)
}

impl LastBoot {
    /// The shift `info` (a `last_boot_info` text; trace-cmd's option adds
    /// `INSTANCE:` before it, which is taken off here) and `modules` (the
    /// current `/proc/modules`) describe. `None`: the buffer is of this boot
    /// (`# Current`), or the text says nothing usable.
    pub(crate) fn parse(info: &str, modules: &str) -> Option<LastBoot> {
        // "NAME:" before the file's text (trace-record.c): the name has no
        // ':' and no white space, the text's first line has a tab or '#'.
        let info = match info.split_once(':') {
            Some((name, rest)) if !name.contains(char::is_whitespace) && !name.starts_with('#') => rest,
            _ => info,
        };
        let mut lb = LastBoot::default();
        for line in info.lines().map(str::trim) {
            if let Some(v) = line.strip_prefix("text delta:") {
                lb.text_delta = v.trim().parse().ok();
                continue;
            }
            // '# Current' and 6.12's "data delta:" have no address first.
            let Some((addr, name)) = line.split_once(char::is_whitespace) else { continue };
            let Ok(addr) = u64::from_str_radix(addr.trim_start_matches("0x"), 16) else {
                if let Some(v) = line.strip_prefix("data delta:") {
                    lb.data_delta = v.trim().parse().unwrap_or(0);
                    lb.skipped.push(String::from(line));
                }
                continue;
            };
            match name.trim() {
                "[kernel]" if is_kernel_address(addr) => lb.text = Some(addr),
                // A KASLR offset, as 6.14 wrote it.
                "[kernel]" => lb.skipped.push(String::from(line)),
                m => match module_now(modules, m) {
                    Some((at, size)) => lb.modules.push((addr, at, size)),
                    None => lb.gone.push(String::from(m)),
                },
            }
        }
        lb.modules.sort_unstable();
        (lb.text.is_some() || lb.text_delta.is_some() || !lb.modules.is_empty()).then_some(lb)
    }

    /// Modules whose addresses move.
    pub(crate) fn modules(&self) -> usize {
        self.modules.len()
    }

    /// How far the kernel moved, given the current boot's `_text`.
    pub(crate) fn text_delta(&self, text_now: Option<u64>) -> Option<i64> {
        self.text_delta.or_else(|| Some(text_now?.wrapping_sub(self.text?) as i64))
    }

    /// The kernel moved between the two boots (`text_now`: this boot's
    /// `_text`): then the kernel prints the previous boot's events by
    /// their fields ([`crate::kernel::FieldsStyle`]). 6.12: a non-zero
    /// text or data delta (`print_trace_fmt()`, 6.12 trace.c); 6.15 on:
    /// `_text` now minus `_text` then (`setup_trace_scratch()`, 7.2).
    pub(crate) fn moved(&self, text_now: Option<u64>) -> bool {
        self.data_delta != 0 || self.text_delta(text_now).is_some_and(|d| d != 0)
    }

    /// `addr` of the previous boot as an address of this one: inside a
    /// module it had then, moved with that module; else moved with the
    /// kernel (`text_now`: the current `_text`); else unchanged.
    pub(crate) fn adjust(&self, addr: u64, text_now: Option<u64>) -> u64 {
        self.adjust_if(addr, text_now, &|_| true)
    }

    /// [`adjust`](Self::adjust), but an address the kernel's move would
    /// take outside this boot's kernel image (`in_kernel` says no) stays
    /// as it was: `trace_adjust_address()` (7.2 trace.c), which the field
    /// printer applies to any value ([`crate::kernel::FieldsStyle::Symbols`]).
    pub(crate) fn adjust_if(&self, addr: u64, text_now: Option<u64>, in_kernel: &dyn Fn(u64) -> bool) -> u64 {
        let i = self.modules.partition_point(|m| m.0 <= addr);
        if let Some(&(then, now, size)) = i.checked_sub(1).and_then(|i| self.modules.get(i)) {
            if addr - then < size.max(1) {
                return now.wrapping_add(addr - then);
            }
        }
        match self.text_delta(text_now) {
            Some(d) if in_kernel(addr.wrapping_add(d as u64)) => addr.wrapping_add(d as u64),
            _ => addr,
        }
    }
}

/// Whose events a persistent instance holds (`tr-on`): `info` is its
/// `last_boot_info`, `entries` the events in its buffers. 6.12's deltas do
/// not say (starting tracing in the instance clears the previous boot's,
/// `update_last_data()`); from 6.14 `# Current` says they are this boot's,
/// and `[kernel]` is read until tracing starts (also after a cold start:
/// 7.2 then shows `0\t[kernel]` over an empty buffer).
pub(crate) fn whose(info: &str, entries: u64) -> &'static str {
    if entries == 0 {
        "empty"
    } else if info.starts_with('#') {
        "this boot's events"
    } else if info.starts_with("text delta") {
        "previous boot's events unless traced since"
    } else {
        "the previous boot's events"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULES: &str = "nft_nat 12288 1 - Live 0xffffffffc0a8f000\next4 1101824 2 - Live 0xffffffffc0200000 (E)\n";

    #[test]
    fn addresses_of_the_last_boot_move_with_their_kernel_or_module() {
        let info = "boot_mapped:ffffffff9a000000\t[kernel]\nffffffffc1000000\text4\nffffffffc2000000\tgone_mod\n";
        let lb = LastBoot::parse(info, MODULES).unwrap();
        assert_eq!(lb.modules(), 1);
        assert_eq!(lb.gone, ["gone_mod"]);
        let now = Some(0xffff_ffff_8100_0000);
        assert_eq!(lb.text_delta(now), Some(-0x1900_0000));
        // Kernel text: by the kernel's move.
        assert_eq!(lb.adjust(0xffff_ffff_9a12_3456, now), 0xffff_ffff_8112_3456);
        // In ext4 (1101824 bytes then at c1000000): by ext4's move.
        assert_eq!(lb.adjust(0xffff_ffff_c100_0010, now), 0xffff_ffff_c020_0010);
        // Past ext4's end: the kernel's move applies.
        assert_eq!(lb.adjust(0xffff_ffff_c110_d000, now), 0xffff_ffff_c110_d000u64.wrapping_sub(0x1900_0000));
    }

    #[test]
    fn what_the_last_boot_info_says_in_each_kernel() {
        assert_eq!(LastBoot::parse("inst:# Current\n", MODULES), None);
        let v612 = LastBoot::parse("text delta:\t-4096\ndata delta:\t0\n", "").unwrap();
        assert_eq!(v612.adjust(0x1_0000, None), 0xf000);
        assert_eq!(v612.skipped, ["data delta:\t0"]);
        // 6.14's KASLR offset: not used, said.
        assert_eq!(LastBoot::parse("b:3a000000\t[kernel]\n", ""), None);
        let lb = LastBoot::parse("3a000000\t[kernel]\nffffffffc1000000\text4\n", MODULES).unwrap();
        assert_eq!(lb.skipped.len(), 1);
        assert_eq!(lb.adjust(0xffff_ffff_9000_0000, Some(1)), 0xffff_ffff_9000_0000);
        // Garbage: nothing.
        assert_eq!(LastBoot::parse("x\ny z\n", "junk"), None);
    }

    #[test]
    fn what_tr_on_says_of_a_persistent_instance() {
        // The aarch64 boards' texts (cross/qemu/lastboot.sh).
        assert_eq!(whose("ffff800080000000\t[kernel]\nffffffffc1000000\text4\n", 11), "the previous boot's events");
        assert_eq!(whose("0\t[kernel]\n", 0), "empty");
        assert_eq!(whose("# Current\n", 3), "this boot's events");
        assert_eq!(whose("text delta:\t0\ndata delta:\t0\n", 9), "previous boot's events unless traced since");
    }
}
