//! The kernel's own dump of the ring buffer in a console log, sans-IO:
//! what `ftrace_dump_on_oops` (or sysrq-z, or `ftrace_dump()` from a
//! driver) printed at an oops or panic, found in a captured serial console
//! and given back as the trace it was (host build only).
//!
//! `ftrace_dump()` / `ftrace_dump_one()` (kernel/trace/trace.c; the same in
//! 6.1, 6.12 and 7.x apart from the instance header) prints, each as one
//! printk at KERN_EMERG:
//!
//! ```text
//! Dumping ftrace buffer:                 (an instance, 6.9+: "Dumping ftrace instance NAME buffer:")
//! # WARNING: FUNCTION TRACING IS CORRUPTED   (two lines, only if ftrace died)
//! ---------------------------------      (33 dashes; "   (ftrace buffer empty)" instead when empty)
//!     bash-312       1d..1. 3902133us : sched_switch: prev_comm=bash ...
//! CPU:1 [LOST 12 EVENTS]
//! ---------------------------------
//! ```
//!
//! Event lines are in the latency format (the dump sets
//! `TRACE_FILE_LAT_FMT`): `lat_print_generic()` prints `%8.8s-%-7d %3d`
//! (comm cut to 8, pid, CPU) and the flag columns ([`crate::kernel::
//! LatColumns`]: 4 to 7 characters), `lat_print_timestamp()` ` %4lldus%c: `
//! (microseconds since the buffer's start, a delay mark) for clocks in
//! nanoseconds, ` %4lld: ` for counters; then the event (`NAME: body`) or
//! the tracer's own text (function: `func <-parent`). Lost events show as
//! `CPU:N [LOST M EVENTS]` (`print_trace_line()`), overruns as `##### CPU
//! N buffer started ####`. A body of several lines (stack traces: ` =>
//! func`) continues on lines of its own.
//!
//! The console adds its prefix to every line: `[   12.345678] `, with
//! CONFIG_PRINTK_CALLER `[   12.345678][  T123] `; a syslog copy may lead
//! with `<0>`. The oops report goes on after the dump (the die notifier
//! dumps in the middle of it; a panic's dump comes before "Rebooting");
//! `Dump::after` keeps those lines.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// The line that opens and closes a non-empty dump.
pub(crate) const DASHES: &str = "---------------------------------";
/// The most lines of the oops report kept after a dump.
pub(crate) const MAX_AFTER: usize = 200;

/// One dump found in a log.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Dump {
    /// The instance named in the header (6.9+), `None` for the top buffer.
    pub(crate) instance: Option<String>,
    /// The header's line number in the log (from 1).
    pub(crate) line: usize,
    /// The dump's lines between the dashes, console prefix removed.
    pub(crate) lines: Vec<String>,
    /// The "(ftrace buffer empty)" form.
    pub(crate) empty: bool,
    /// The closing dashes were seen (else the log ends inside the dump).
    pub(crate) complete: bool,
    /// The lines before the dashes (the kernel's warnings).
    pub(crate) warnings: Vec<String>,
    /// The oops or panic report that came before the dump, from its first
    /// line ([`opens_report`]) to the dump's header, up to [`MAX_AFTER`]
    /// lines: a panic prints its message and backtrace, then dumps.
    pub(crate) before: Vec<String>,
    /// The console lines that followed the dump (the rest of the oops
    /// report, the panic), up to [`MAX_AFTER`], the next dump or the
    /// next boot.
    pub(crate) after: Vec<String>,
}

/// One event line of a dump, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line<'a> {
    /// The task's name as the dump printed it (`<idle>`, `<...>`).
    pub(crate) comm: &'a str,
    /// The task's pid.
    pub(crate) pid: i64,
    /// The CPU whose buffer held the event (`[003]`).
    pub(crate) cpu: u32,
    /// The latency columns (`d..2.`).
    pub(crate) flags: &'a str,
    /// Microseconds since the buffer started (or counter ticks when
    /// `in_us` is false).
    pub(crate) ts: u64,
    pub(crate) in_us: bool,
    /// The event's name; `function` for the function tracer's
    /// `func <-parent`, empty when the text names none.
    pub(crate) event: &'a str,
    /// The rest of the line after `event: `, as the kernel printed it.
    pub(crate) body: &'a str,
}

/// A `CPU:N [LOST M EVENTS]` line: (cpu, count).
pub(crate) fn lost(l: &str) -> Option<(u32, Option<u64>)> {
    let r = l.strip_prefix("CPU:")?;
    let (cpu, r) = r.split_once(' ')?;
    let cpu = cpu.parse().ok()?;
    let r = r.strip_prefix('[')?.strip_suffix(']')?;
    if r == "LOST EVENTS" {
        return Some((cpu, None));
    }
    let n = r.strip_prefix("LOST ")?.strip_suffix(" EVENTS")?.parse().ok()?;
    Some((cpu, Some(n)))
}

/// The console's prefix taken off: `<N>`, `[  time]`, `[caller]`, one space.
pub(crate) fn strip_prefix(l: &str) -> &str {
    let l = l.strip_suffix('\r').unwrap_or(l);
    let mut l = match l.strip_prefix('<') {
        Some(r) => match r.split_once('>') {
            Some((n, rest)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => rest,
            _ => l,
        },
        None => l,
    };
    let stamp = |s: &str| s.bytes().all(|b| b.is_ascii_digit() || b == b' ' || b == b'.') && s.contains('.');
    match l.strip_prefix('[').and_then(|r| r.split_once(']')) {
        Some((t, rest)) if stamp(t) => l = rest,
        _ => return l,
    }
    // CONFIG_PRINTK_CALLER: `[  T123]` or `[    C1]`.
    if let Some((c, rest)) = l.strip_prefix('[').and_then(|r| r.split_once(']')) {
        let digits = c.trim_start().strip_prefix(['T', 'C']);
        if digits.is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())) {
            l = rest;
        }
    }
    l.strip_prefix(' ').unwrap_or(l)
}

/// Parse an event line of a dump (see the module docs); `None` for any
/// other line.
pub(crate) fn parse(l: &str) -> Option<Line<'_>> {
    // The time stamp: ` DIGITSus?: ` after the flag columns.
    let mut from = 0;
    let (head, ts, in_us, rest) = loop {
        let i = from + l.get(from..)?.find(": ")?;
        let before = &l[..i];
        let (before, in_us) = match before.len().checked_sub(3).and_then(|k| before.get(k..)) {
            // `us` and the delay mark (` `, `+`, `!`, `#`, `*`, `@`, `$`).
            Some(t) if t.starts_with("us") => (&before[..before.len() - 3], true),
            _ => (before, false),
        };
        let d = before.len() - before.bytes().rev().take_while(u8::is_ascii_digit).count();
        if d < before.len() && before[..d].ends_with(' ') {
            if let Ok(ts) = before[d..].parse() {
                break (&before[..d - 1], ts, in_us, &l[i + 2..]);
            }
        }
        from = i + 2;
    };
    // `%8.8s-%-7d %3d` + flags: the CPU and flags are the last word.
    let head = head.trim_end();
    let sp = head.rfind(' ')?;
    let (who, cf) = (&head[..sp], &head[sp + 1..]);
    let nd = cf.find(|c: char| !c.is_ascii_digit())?;
    let cpu = cf[..nd].parse().ok()?;
    let flags = &cf[nd..];
    let who = who.trim_end();
    let dash = who.rfind('-')?;
    let pid = who[dash + 1..].parse().ok()?;
    let comm = who[..dash].trim_start();
    if !(4..=7).contains(&flags.len()) {
        return None;
    }
    let (event, body) = match rest.split_once(": ") {
        Some((n, b)) if !n.is_empty() && n.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') => (n, b),
        _ if rest.contains(" <-") => ("function", rest),
        _ => ("", rest),
    };
    Some(Line { comm, pid, cpu, flags, ts, in_us, event, body })
}

fn header(l: &str) -> Option<Option<String>> {
    if l == "Dumping ftrace buffer:" {
        return Some(None);
    }
    let name = l.strip_prefix("Dumping ftrace instance ")?.strip_suffix(" buffer:")?;
    Some(Some(name.to_string()))
}

/// The first line of an oops or panic report: arm64's and x86's page
/// fault messages (arch/*/mm/fault.c), `die()`'s (arm, arm64:
/// `Internal error:`; x86: `Oops:`), x86's `BUG:` and `general protection
/// fault`, `panic()`'s, a WARN/BUG's `cut here` line (arm's fault
/// handler prints its own), and the sysrq crash key (drivers/tty/sysrq.c).
pub(crate) fn opens_report(l: &str) -> bool {
    const FIRST: [&str; 9] = [
        "Unable to handle kernel ",
        "Internal error: ",
        "Oops",
        "BUG: ",
        "general protection fault",
        "Kernel panic - not syncing",
        "------------[ cut here ]------------",
        "8<--- cut here ---",
        "sysrq: Trigger a crash",
    ];
    FIRST.iter().any(|f| l.starts_with(f))
}

/// A new boot in the log ends what followed a dump.
fn boots(l: &str) -> bool {
    l.starts_with("Booting Linux") || l.starts_with("Linux version ")
}

/// Every dump in a console log, in order.
pub(crate) fn find(log: &str) -> Vec<Dump> {
    #[derive(PartialEq)]
    enum At {
        Outside,
        Header,
        Inside,
        After,
    }
    let mut dumps: Vec<Dump> = Vec::new();
    let mut at = At::Outside;
    // The report being printed: its lines since its first one, and whether
    // that line had a console time stamp. A stamped report is one run of
    // kernel lines; a line without the stamp (a shell's output) ends it.
    let mut report: Vec<String> = Vec::new();
    let mut stamped = false;
    for (n, raw) in log.lines().enumerate() {
        let l = strip_prefix(raw);
        if let Some(instance) = header(l) {
            let before = core::mem::take(&mut report);
            dumps.push(Dump { instance, line: n + 1, before, ..Dump::default() });
            at = At::Header;
            continue;
        }
        if at == At::Outside || at == At::After {
            let has_stamp = l.len() != raw.trim_end_matches('\r').len();
            if boots(l) || (stamped && !has_stamp) || report.len() >= MAX_AFTER {
                report.clear();
            }
            if report.is_empty() && opens_report(l) {
                stamped = has_stamp;
            }
            if !report.is_empty() || opens_report(l) {
                report.push(l.to_string());
            }
        }
        let Some(d) = dumps.last_mut() else { continue };
        match at {
            At::Outside => {}
            At::Header if l == DASHES => at = At::Inside,
            At::Header if l.trim() == "(ftrace buffer empty)" => {
                d.empty = true;
                d.complete = true;
                at = At::After;
            }
            At::Header => d.warnings.push(l.to_string()),
            At::Inside if l == DASHES => {
                d.complete = true;
                at = At::After;
            }
            At::Inside => d.lines.push(l.to_string()),
            At::After if boots(l) || d.after.len() >= MAX_AFTER => at = At::Outside,
            At::After => d.after.push(l.to_string()),
        }
    }
    dumps
}

/// Counts over a dump's lines for `--stats`.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Stats {
    /// Event lines parsed.
    pub(crate) events: u64,
    /// Lines that are neither events nor lost-event marks (continuations,
    /// another tracer's layout, a message that tore in).
    pub(crate) other: u64,
    /// (event name, count), most first.
    pub(crate) by_event: Vec<(String, u64)>,
    /// (cpu, events, lost; `None` where the kernel kept no count).
    pub(crate) by_cpu: Vec<(u32, u64, Option<u64>)>,
    /// First and last time stamp.
    pub(crate) span: Option<(u64, u64)>,
    /// The time stamps are microseconds (else counter ticks, from a
    /// counter trace clock such as `x86-tsc`).
    pub(crate) in_us: bool,
}

impl Stats {
    /// Counts the lines of one dump.
    pub(crate) fn of(d: &Dump) -> Stats {
        let mut s = Stats::default();
        let cpu = |s: &mut Stats, c: u32| -> usize {
            match s.by_cpu.iter().position(|x| x.0 == c) {
                Some(i) => i,
                None => {
                    s.by_cpu.push((c, 0, Some(0)));
                    s.by_cpu.len() - 1
                }
            }
        };
        for l in &d.lines {
            if let Some(e) = parse(l) {
                s.events += 1;
                s.in_us = e.in_us;
                let name = if e.event.is_empty() { "(other)" } else { e.event };
                match s.by_event.iter_mut().find(|x| x.0 == name) {
                    Some(x) => x.1 += 1,
                    None => s.by_event.push((name.to_string(), 1)),
                }
                let i = cpu(&mut s, e.cpu);
                s.by_cpu[i].1 += 1;
                s.span = Some(s.span.map_or((e.ts, e.ts), |(a, b)| (a.min(e.ts), b.max(e.ts))));
            } else if let Some((c, n)) = lost(l) {
                let i = cpu(&mut s, c);
                let x = &mut s.by_cpu[i].2;
                *x = match (*x, n) {
                    (Some(a), Some(b)) => Some(a + b),
                    _ => None,
                };
            } else {
                s.other += 1;
            }
        }
        s.by_event.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        s.by_cpu.sort();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_lines_in_the_latency_format() {
        let e = parse("    bash-312       1d..1. 3902133us : sched_switch: prev_comm=bash prev_pid=312").unwrap();
        assert_eq!((e.comm, e.pid, e.cpu, e.flags, e.ts, e.in_us), ("bash", 312, 1, "d..1.", 3902133, true));
        assert_eq!((e.event, e.body), ("sched_switch", "prev_comm=bash prev_pid=312"));
        let e = parse("kworker/-1234567 12.N.2.   12us+: vfs_read <-ksys_read").unwrap();
        assert_eq!((e.comm, e.pid, e.cpu, e.flags, e.ts), ("kworker/", 1234567, 12, ".N.2.", 12));
        assert_eq!((e.event, e.body), ("function", "vfs_read <-ksys_read"));
        let e = parse("  <idle>-0         0d.h2 4567: irq_handler_entry: irq=11 name=virtio0").unwrap();
        assert_eq!((e.comm, e.ts, e.in_us, e.flags, e.event), ("<idle>", 4567, false, "d.h2", "irq_handler_entry"));
        assert_eq!(parse("Modules linked in:"), None);
        assert_eq!(parse("CPU: 1 PID: 312 Comm: sh Not tainted 6.1.0"), None);
        assert_eq!(lost("CPU:1 [LOST 12 EVENTS]"), Some((1, Some(12))));
        assert_eq!(lost("CPU:0 [LOST EVENTS]"), Some((0, None)));
    }

    #[test]
    fn console_prefixes() {
        assert_eq!(strip_prefix("[   12.345678] Dumping ftrace buffer:"), "Dumping ftrace buffer:");
        assert_eq!(strip_prefix("[   12.345678][  T123] x\r"), "x");
        assert_eq!(strip_prefix("<0>[    1.000000] ---"), "---");
        assert_eq!(strip_prefix("[<ffff0000>] f+0x1"), "[<ffff0000>] f+0x1");
        assert_eq!(strip_prefix("[   12.345678]    (ftrace buffer empty)"), "   (ftrace buffer empty)");
    }

    #[test]
    fn the_report_before_a_dump_is_one_run_of_kernel_lines() {
        let log = "\
[    1.0] ------------[ cut here ]------------\n\
[    1.1] WARNING: an old one\n\
# a shell's line ends that report\n\
[    2.0] Unable to handle kernel NULL pointer dereference at virtual address 0\n\
[    2.0] Mem abort info:\n\
[    2.1] Internal error: Oops: 0000000096000005 [#1] SMP\n\
[    2.2] Dumping ftrace buffer:\n\
[    2.2]    (ftrace buffer empty)\n";
        let d = find(log);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].before.len(), 3);
        assert!(d[0].before[0].starts_with("Unable to handle kernel NULL"));
        // Without time stamps, the report runs up to the dump.
        let d = find("Oops: 0002 [#1] SMP\n# shell\nDumping ftrace buffer:\n");
        assert_eq!(d[0].before, ["Oops: 0002 [#1] SMP", "# shell"]);
    }

    #[test]
    fn dumps_in_a_log() {
        let log = "\
[    5.0] sysrq: Trigger a crash\n\
[    5.1] Dumping ftrace buffer:\n\
[    5.1] ---------------------------------\n\
[    5.1]     bash-312       1d..1. 3902133us : sched_switch: prev_comm=bash\n\
[    5.1] CPU:0 [LOST 3 EVENTS]\n\
[    5.1]   <idle>-0         0dN.2. 3902140us : sched_wakeup: comm=bash\n\
[    5.1] ---------------------------------\n\
[    5.2] Kernel panic - not syncing: sysrq triggered crash\n\
[    5.3] Dumping ftrace instance foo buffer:\n\
[    5.3]    (ftrace buffer empty)\n\
[    0.0] Booting Linux on physical CPU 0x0\n\
[    0.1] later\n";
        let d = find(log);
        assert_eq!(d.len(), 2);
        assert_eq!((d[0].line, d[0].lines.len(), d[0].complete), (2, 3, true));
        assert_eq!(d[0].after, ["Kernel panic - not syncing: sysrq triggered crash"]);
        assert_eq!(d[0].before, ["sysrq: Trigger a crash"]);
        assert_eq!(d[1].before, ["Kernel panic - not syncing: sysrq triggered crash"]);
        assert_eq!((d[1].instance.as_deref(), d[1].empty, d[1].after.len()), (Some("foo"), true, 0));
        let s = Stats::of(&d[0]);
        assert_eq!((s.events, s.other, s.span), (2, 0, Some((3902133, 3902140))));
        assert_eq!(s.by_cpu, [(0, 1, Some(3)), (1, 1, Some(0))]);
    }
}
