//! Kernel variables the print-fmt compiler may need, from the text the
//! kernel offers when its memory cannot be read: the decisions only; the
//! std layer (`sys::kvars`, std only) reads
//! `/proc/kallsyms`, `/proc/kcore` (through [`crate::elf`]), the timer list,
//! the command line and the CPU flags, and hands their text here.

/// `jiffies` now, from /proc/timer_list's `jiffies: N` lines. A print fmt
/// that uses it (writeback's `age=`) is rendered by the kernel with the value
/// at read time too; the compiler takes it once per run.
pub(crate) fn jiffies_from_timer_list(text: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix("jiffies: ")?.trim().parse().ok())
}

/// x86_64's memory-layout bases when KASLR is off (kernels without
/// /proc/kcore or data symbols in kallsyms cannot be asked): `nokaslr` on
/// the command line, or the kernel text (`text`, the address of `_text`) at
/// its link address (with CONFIG_RANDOMIZE_BASE the text and the memory
/// regions move together; Documentation/arch/x86/x86_64/mm.rst). Only
/// 4-level paging is known for sure: a CPU with `la57` (in `cpuinfo`) may
/// run 5-level, whose bases differ. `None` on other architectures.
pub(crate) fn x86_64_unrandomized(name: &str, text: Option<u64>, cmdline: &str, cpuinfo: &str) -> Option<u64> {
    if !cfg!(target_arch = "x86_64") {
        return None;
    }
    let kaslr_off = cmdline.split_whitespace().any(|w| w == "nokaslr") || text == Some(0xffff_ffff_8100_0000);
    let four_level = !cpuinfo.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "la57"));
    if !kaslr_off || !four_level {
        return None;
    }
    match name {
        "vmemmap_base" => Some(0xffff_ea00_0000_0000),
        "page_offset_base" => Some(0xffff_8880_0000_0000),
        "vmalloc_base" => Some(0xffff_c900_0000_0000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jiffies_line() {
        let t =
            "Tick Device: mode:     1\nclock event device: lapic\n .idle_jiffies   : 4297477899\njiffies: 4297517350\n";
        assert_eq!(jiffies_from_timer_list(t), Some(4297517350));
        assert_eq!(jiffies_from_timer_list("  .last_jiffies   : 1\n"), None);
    }

    #[test]
    fn x86_64_layout_only_when_kaslr_is_evidently_off() {
        let flags = "flags\t\t: fpu vme de pse\n";
        let la57 = "flags\t\t: fpu la57 vme\n";
        let text = Some(0xffff_ffff_8100_0000);
        let moved = Some(0xffff_ffff_9a20_0000);
        let want = cfg!(target_arch = "x86_64").then_some(0xffff_ea00_0000_0000);
        assert_eq!(x86_64_unrandomized("vmemmap_base", text, "console=ttyS0", flags), want);
        assert_eq!(x86_64_unrandomized("vmemmap_base", moved, "quiet nokaslr", flags), want);
        assert_eq!(x86_64_unrandomized("vmemmap_base", moved, "console=ttyS0", flags), None);
        assert_eq!(x86_64_unrandomized("vmemmap_base", None, "nokaslrx", flags), None);
        assert_eq!(x86_64_unrandomized("vmemmap_base", text, "", la57), None);
        assert_eq!(x86_64_unrandomized("jiffies", text, "", flags), None);
    }
}
