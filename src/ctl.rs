//! Parsers for the small tracefs control files (`trace_clock`,
//! `per_cpu/cpuN/stats`, `trigger`, `filter`, `set_event`…).

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;

/// The bracketed choice in files like `trace_clock` or `current_tracer`-style
/// lists: `"[local] global counter"` → `local`.
pub(crate) fn selected(text: &str) -> Option<&str> {
    text.split_whitespace().find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
}

/// Every choice of such a file, brackets removed.
pub(crate) fn choices(text: &str) -> Vec<&str> {
    text.split_whitespace().map(|w| w.trim_start_matches('[').trim_end_matches(']')).collect()
}

/// `per_cpu/cpuN/stats`. Fields a kernel does not have stay `None`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CpuStats {
    /// `entries:` events in the buffer now, not yet read.
    pub(crate) entries: Option<u64>,
    /// `overrun:` events overwritten because the buffer was full
    /// (overwrite mode): the events a reader lost.
    pub overrun: Option<u64>,
    /// `commit overrun:` events lost because an interrupt nested so deep
    /// that the writer wrapped the page it was committing; should be 0.
    pub commit_overrun: Option<u64>,
    pub(crate) bytes: Option<u64>,
    /// `dropped events:` events refused because the buffer was full and
    /// not in overwrite mode.
    pub dropped: Option<u64>,
    /// `read events:` events a consuming read (`trace_pipe`,
    /// `trace_pipe_raw`) took out of the buffer since it was last reset.
    pub(crate) read: Option<u64>,
    /// `now ts:` in trace-clock units: nanoseconds (from the printed
    /// `secs.usecs`) for clocks in ns, the raw count for counter clocks.
    pub(crate) now: Option<u64>,
}

impl CpuStats {
    /// Reads the `key: value` lines of `per_cpu/cpuN/stats`
    /// (kernel/trace/trace.c `tracing_stats_read()`); unknown keys and
    /// unreadable values are skipped.
    pub fn parse(text: &str) -> Self {
        let mut s = CpuStats::default();
        for line in text.lines() {
            let Some((k, v)) = line.split_once(':') else { continue };
            let v = v.trim().parse::<u64>().ok();
            match k.trim() {
                "entries" => s.entries = v,
                "overrun" => s.overrun = v,
                "commit overrun" => s.commit_overrun = v,
                "bytes" => s.bytes = v,
                "dropped events" => s.dropped = v,
                "read events" => s.read = v,
                "now ts" => s.now = clock_value(line.split_once(':').map_or("", |x| x.1)),
                _ => {}
            }
        }
        s
    }
}

/// A timestamp as tracefs prints it (`1234.567890` → ns, or a plain count).
pub(crate) fn clock_value(text: &str) -> Option<u64> {
    let t = text.trim();
    match t.split_once('.') {
        Some((s, frac)) => {
            let scale = 10u64.checked_pow(9u32.checked_sub(frac.len() as u32)?)?;
            let frac: u64 = frac.parse().ok()?;
            s.trim().parse::<u64>().ok()?.checked_mul(1_000_000_000)?.checked_add(frac.checked_mul(scale)?)
        }
        None => t.parse().ok(),
    }
}

/// An event's `filter` file: `None` when it says `none`.
pub(crate) fn filter(text: &str) -> Option<&str> {
    let t = text.trim();
    (!t.is_empty() && t != "none").then_some(t)
}

/// An event's `trigger` file: the active triggers, without the `#` help text
/// the kernel prints when there are none.
pub(crate) fn triggers(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// The command of a trigger as written or listed: `hist` of
/// `hist:keys=pid`, `traceoff` of `traceoff:1 if pid == 1`.
pub(crate) fn trigger_command(trigger: &str) -> &str {
    let t = trigger.trim().trim_start_matches('!');
    t.split([':', ' ']).next().unwrap_or(t)
}

/// The event an `enable_event` / `disable_event` trigger switches:
/// `(SYS, EVENT)` of `enable_event:SYS:EVENT[:COUNT] [if FILTER]`
/// (kernel/trace/trace_events_trigger.c `event_enable_trigger_parse()`).
/// These two are the triggers that change their target's soft-disable bit
/// when they fire (`event_enable_trigger()`); `enable_hist` and
/// `disable_hist` pause hist triggers and leave it alone.
pub(crate) fn trigger_target(trigger: &str) -> Option<(&str, &str)> {
    let t = trigger.trim();
    let t = t.split(" if ").next().unwrap_or(t);
    let mut words = t.split(':');
    if !matches!(words.next(), Some("enable_event" | "disable_event")) {
        return None;
    }
    let sys = words.next().filter(|w| !w.is_empty())?;
    let ev = words.next().map(str::trim).filter(|w| !w.is_empty())?;
    Some((sys, ev))
}

/// The commands an event's `trigger` file lists as this kernel's when the
/// event has no trigger (`# Available triggers:` and a `#` line of names,
/// trace_events_trigger.c `trigger_show()`); `None` when it lists
/// triggers instead.
pub(crate) fn available_triggers(text: &str) -> Option<Vec<&str>> {
    let mut lines = text.lines();
    lines.find(|l| l.trim() == "# Available triggers:")?;
    let names = lines.next()?.trim().strip_prefix('#')?;
    Some(names.split_whitespace().collect())
}

/// Lines of a list file (`set_event`, `set_ftrace_filter`, `dynamic_events`,
/// `set_event_pid`…), skipping the kernel's `#` comments.
pub(crate) fn entries(text: &str) -> impl Iterator<Item = &str> {
    triggers(text)
}

/// The newest entry of `error_log` (its `[ts] source: message` line and the
/// `Command:` / caret lines after it), without the timestamp. `None` when the
/// log is empty.
pub(crate) fn last_error(text: &str) -> Option<alloc::string::String> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().rposition(|l| l.starts_with('['))?;
    let mut out = alloc::string::String::new();
    for (i, l) in lines.get(start..)?.iter().enumerate() {
        let l = if i == 0 { l.split_once("] ").map_or(*l, |(_, m)| m) } else { l };
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(l.trim_end());
    }
    Some(out)
}

/// The value a control file holds in the form it is written: the bracketed
/// choice of `trace_clock`-style files, the size of a not yet expanded
/// `buffer_size_kb` (`7 (expanded: 1408)` → `1408`), otherwise the trimmed
/// text.
pub(crate) fn writable_value(text: &str) -> &str {
    if let Some(sel) = selected(text) {
        return sel;
    }
    // An event `enable` of `0*`/`1*` (soft mode, set by triggers) is
    // written as the plain digit.
    let t = text.trim();
    let t = t.strip_suffix('*').unwrap_or(t);
    match t.split_once(" (expanded: ") {
        Some((_, exp)) => exp.trim_end_matches(')'),
        None => t,
    }
}

/// Control files whose value follows from other files (the sum of the
/// per-CPU `buffer_size_kb`): no setting of their own, neither compared
/// nor put back.
#[cfg(test)]
pub(crate) const DERIVED: &[&str] = &["buffer_total_size_kb"];

/// The KiB a `buffer_size_kb` reads once the buffer is in use: the one
/// change to a setting that the kernel makes by itself. Until its first use
/// a buffer is allocated small and the file reads `7 (expanded: 1408)`;
/// any tracing then expands it to whole sub-buffers of `data` bytes each
/// (the sub-buffer less its header, `data` in events/header_page: 4080 for
/// 4 KiB pages on 64-bit) — ring_buffer.c's `ring_buffer_resize`,
/// `DIV_ROUND_UP(size, BUF_PAGE_SIZE)`, at least 2 — and the file reads
/// their total (1410): what a run finds afterwards without having changed
/// anything. A plain number is returned as it is; None for other text.
pub(crate) fn buffer_kb_in_use(text: &str, data: u64) -> Option<u64> {
    let t = text.trim();
    let Some((_, exp)) = t.split_once(" (expanded: ") else { return t.parse().ok() };
    let kb: u64 = exp.trim_end_matches(')').parse().ok()?;
    Some(buffer_kb_for(kb, data))
}

/// The KiB `buffer_size_kb` reads after `kb` is written to it, with
/// sub-buffers that hold `data` bytes of records each (the sub-buffer less
/// its header: `data` in events/header_page): the kernel allocates whole
/// sub-buffers, at least two (ring_buffer.c `ring_buffer_resize()`:
/// `DIV_ROUND_UP(size, subbuf_size)`), and the file reads their data bytes
/// in KiB, rounded down (trace.c `tracing_entries_read()`).
pub(crate) fn buffer_kb_for(kb: u64, data: u64) -> u64 {
    let pages = kb.saturating_mul(1024).div_ceil(data.max(1)).max(2);
    pages.saturating_mul(data) / 1024
}

/// The CPUs of a kernel CPU list, as `osnoise/cpus` or `tracing_cpumask`'s
/// list form read and as people write them to it (lib/bitmap-str.c
/// `bitmap_parselist()`): regions `N`, `N-M` or `N-M:USED/GROUP` (the
/// first USED of every GROUP CPUs of the range), separated by commas (or
/// white space); ascending, without repeats. A region that is none of
/// these, a range that runs backwards, or a CPU past [`MAX_CPUS`] is an
/// error naming that region.
pub(crate) fn cpu_list(text: &str) -> Result<Vec<u32>, &str> {
    let mut cpus = Vec::new();
    for region in text.split(|c: char| c == ',' || c.is_ascii_whitespace()).filter(|r| !r.is_empty()) {
        let (range, group) = match region.split_once(':') {
            Some((r, g)) => {
                let (used, len) = g.split_once('/').ok_or(region)?;
                (r, Some((used.parse::<u32>().map_err(|_| region)?, len.parse::<u32>().map_err(|_| region)?)))
            }
            None => (region, None),
        };
        let (a, b) = range.split_once('-').unwrap_or((range, range));
        let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) else { return Err(region) };
        let (used, len) = group.unwrap_or((1, 1));
        if a > b || b >= MAX_CPUS || len == 0 || used > len {
            return Err(region);
        }
        cpus.extend((a..=b).filter(|c| (c - a) % len < used));
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// CPU numbers [`cpu_list`] takes: below the largest `NR_CPUS` a kernel
/// is built with (8192, x86's `MAXSMP`).
pub(crate) const MAX_CPUS: u32 = 8192;

/// CPUs as the kernel prints a CPU list (`%*pbl`: `0-3,5`).
pub(crate) fn cpu_list_text(cpus: &[u32]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while let Some(&first) = cpus.get(i) {
        let mut last = first;
        while cpus.get(i + 1) == Some(&(last + 1)) {
            last += 1;
            i += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        let _ = write!(out, "{first}");
        if last > first {
            let _ = write!(out, "-{last}");
        }
        i += 1;
    }
    out
}

/// `ftrace_dump_on_oops`: every CPU's buffer, or the oopsing CPU's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DumpOnOops {
    /// `ftrace_dump_on_oops` (or `=1`): all CPUs' buffers.
    AllCpus,
    /// `ftrace_dump_on_oops=2` (`orig_cpu`): only the oopsing CPU's.
    OopsCpu,
}

impl DumpOnOops {
    /// The value for the sysctl (and `=VALUE` on the command line): `1`,
    /// `2`; for an instance (6.9+) `0,NAME` or `0,NAME=2`.
    pub(crate) fn value(self, instance: Option<&str>) -> String {
        match (self, instance) {
            (DumpOnOops::AllCpus, None) => "1".into(),
            (DumpOnOops::OopsCpu, None) => "2".into(),
            (DumpOnOops::AllCpus, Some(i)) => ["0,", i].concat(),
            (DumpOnOops::OopsCpu, Some(i)) => ["0,", i, "=2"].concat(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bracket_choice() {
        assert_eq!(selected("[local] global counter uptime perf mono mono_raw boot x86-tsc\n"), Some("local"));
        assert_eq!(selected("local global [x86-tsc]"), Some("x86-tsc"));
        assert_eq!(selected("local global"), None);
        assert_eq!(choices("[local] global"), ["local", "global"]);
    }

    #[test]
    fn error_log() {
        let t = "[  686.309811] event filter parse error: error: Invalid value (did you forget quotes)?\n  Command: prev_pid ==\n                       ^\n";
        let e = last_error(t).unwrap();
        assert_eq!(e, "event filter parse error: error: Invalid value (did you forget quotes)?\n  Command: prev_pid ==\n                       ^");
        let two = "[1.0] a: old\n  Command: x\n  ^\n[2.0] b: new\n  Command: y\n   ^\n";
        assert!(last_error(two).unwrap().starts_with("b: new\n  Command: y"));
        assert_eq!(last_error(""), None);
    }

    #[test]
    fn buffer_sizes_after_first_use() {
        // This machine after its first boot: 1408 KiB asked, 354 pages of
        // 4080 bytes allocated, 1410 read (issue 26: the first make test
        // after a boot saw 1408 -> 1410).
        assert_eq!(buffer_kb_in_use("7 (expanded: 1408)\n", 4080), Some(1410));
        assert_eq!(buffer_kb_in_use("1410\n", 4080), Some(1410));
        // armv7 (12-byte page header) and 16 KiB pages.
        assert_eq!(buffer_kb_in_use("7 (expanded: 1408)", 4084), Some(1411));
        assert_eq!(buffer_kb_in_use("16 (expanded: 1408)", 16368), Some(1422));
        // Never fewer than two sub-buffers.
        assert_eq!(buffer_kb_in_use("1 (expanded: 1)", 4080), Some(7));
        assert_eq!(buffer_kb_in_use("X\n", 4080), None);
    }

    #[test]
    fn buffer_sizes_in_sub_buffers() {
        // 8 KiB sub-buffers (8176 data bytes): 1410 KiB is 177 of them,
        // which read 1413 (issue 39); 4 KiB ones: 354, which read 1410.
        assert_eq!(buffer_kb_for(1410, 8176), 1413);
        assert_eq!(buffer_kb_for(1410, 4080), 1410);
        assert_eq!(buffer_kb_for(0, 4080), 7);
        assert_eq!(buffer_kb_for(u64::MAX, 4080), u64::MAX / 1024);
    }

    #[test]
    fn cpu_lists_read_as_the_kernel_parses_them() {
        assert_eq!(cpu_list("0-3,5\n"), Ok(alloc::vec![0, 1, 2, 3, 5]));
        assert_eq!(cpu_list("1"), Ok(alloc::vec![1]));
        assert_eq!(cpu_list(""), Ok(alloc::vec![]));
        assert_eq!(cpu_list("3,1,1-2"), Ok(alloc::vec![1, 2, 3]));
        // bitmap_parselist()'s groups: 2 of every 4 CPUs of 0-9.
        assert_eq!(cpu_list("0-9:2/4"), Ok(alloc::vec![0, 1, 4, 5, 8, 9]));
        for bad in ["x", "2-1", "0-", "-1", "1,x", "0-3:5/4", "0-3:1/0", "0-3:1", "8192", "0-4294967295"] {
            assert!(cpu_list(bad).is_err(), "{bad}");
        }
        assert_eq!(cpu_list("0,2-1"), Err("2-1"));
        assert_eq!(cpu_list_text(&[0, 1, 2, 3, 5, 7, 8]), "0-3,5,7-8");
        assert_eq!(cpu_list_text(&[]), "");
    }

    #[test]
    fn triggers_and_their_targets() {
        assert_eq!(trigger_command("hist:keys=pid"), "hist");
        assert_eq!(trigger_command("traceoff if pid == 1"), "traceoff");
        assert_eq!(trigger_command("stacktrace"), "stacktrace");
        assert_eq!(trigger_target("enable_event:sched:sched_process_exit"), Some(("sched", "sched_process_exit")));
        assert_eq!(
            trigger_target("disable_event:irq:irq_handler_entry:2 if irq == 1"),
            Some(("irq", "irq_handler_entry"))
        );
        assert_eq!(trigger_target("enable_event:sched:sched_switch:unlimited"), Some(("sched", "sched_switch")));
        assert_eq!(trigger_target("enable_hist:sched:sched_switch"), None);
        assert_eq!(trigger_target("enable_event:sched"), None);
        assert_eq!(trigger_target("stacktrace"), None);
        let none = "# Available triggers:\n# traceon traceoff stacktrace enable_event disable_event\n";
        assert_eq!(
            available_triggers(none),
            Some(alloc::vec!["traceon", "traceoff", "stacktrace", "enable_event", "disable_event"])
        );
        assert_eq!(available_triggers("stacktrace:unlimited\n"), None);
    }

    #[test]
    fn writable_values() {
        assert_eq!(writable_value("[local] global\n"), "local");
        assert_eq!(writable_value("7 (expanded: 1408)\n"), "1408");
        assert_eq!(writable_value("nop\n"), "nop");
        assert_eq!(writable_value("0*\n"), "0");
    }

    #[test]
    fn stats() {
        let t = "entries: 12\noverrun: 3\ncommit overrun: 0\nbytes: 400\noldest event ts:  5.1\nnow ts:  6.2\ndropped events: 7\nread events: 1\n";
        let s = CpuStats::parse(t);
        assert_eq!((s.entries, s.overrun, s.dropped, s.read), (Some(12), Some(3), Some(7), Some(1)));
        assert_eq!(CpuStats::parse("garbage\n"), CpuStats::default());
        assert_eq!(s.now, Some(6_200_000_000));
        assert_eq!(clock_value("  12.000345"), Some(12_000_345_000));
        assert_eq!(clock_value("123456"), Some(123456));
    }

    #[test]
    fn filters_and_triggers() {
        assert_eq!(filter("none\n"), None);
        assert_eq!(filter("pid == 1\n"), Some("pid == 1"));
        let none = "# Available triggers:\n# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist\n";
        assert_eq!(triggers(none).count(), 0);
        assert_eq!(triggers("stacktrace:unlimited\ntraceoff:1 if pid == 3\n").collect::<Vec<_>>().len(), 2);
    }
}
