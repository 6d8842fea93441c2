//! The line prefix of the kernel's `trace` file: comm-pid, CPU, latency
//! flags and timestamp, exactly as kernel/trace/trace_output.c prints them
//! (`trace_print_context`, `trace_print_lat_fmt`, `trace_print_time`).

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

/// `saved_cmdlines`: pid → comm, as the kernel's `trace_find_cmdline` sees it.
#[derive(Debug, Default, Clone)]
pub struct Cmdlines {
    /// Sorted by pid.
    map: Vec<(i32, String)>,
}

impl Cmdlines {
    /// Parse `saved_cmdlines` text (`PID COMM` per line; comm may hold spaces).
    pub fn parse(text: &str) -> Self {
        let mut map: Vec<(i32, String)> = text
            .lines()
            .filter_map(|l| {
                let (pid, comm) = l.split_once(' ')?;
                Some((pid.trim().parse().ok()?, String::from(comm)))
            })
            .collect();
        map.sort_by_key(|e| e.0);
        map.dedup_by_key(|e| e.0);
        Cmdlines { map }
    }

    /// The comm the kernel would print for `pid`: `<idle>` for 0, `<...>`
    /// when it is not in the table.
    pub fn comm(&self, pid: i32) -> &str {
        if pid == 0 {
            return "<idle>";
        }
        if pid < 0 {
            return "<XXX>";
        }
        match self.map.binary_search_by_key(&pid, |e| e.0) {
            Ok(i) => self.map.get(i).map_or("<...>", |e| e.1.as_str()),
            Err(_) => "<...>",
        }
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// Whether the clock counts nanoseconds (the kernel's `in_ns`): counter,
/// uptime, x86-tsc and ppc-tb are raw counts printed as integers.
pub fn clock_in_ns(clock: &str) -> bool {
    !matches!(clock, "counter" | "uptime" | "x86-tsc" | "ppc-tb")
}

// Bits of `common_flags` (include/linux/trace_events.h). 0x02 was
// IRQS_NOSUPPORT (never set by a current architecture) and is NEED_RESCHED_LAZY
// since 6.13.
const IRQS_OFF: u8 = 0x01;
const NEED_RESCHED_LAZY: u8 = 0x02;
const NEED_RESCHED: u8 = 0x04;
const HARDIRQ: u8 = 0x08;
const SOFTIRQ: u8 = 0x10;
const PREEMPT_RESCHED: u8 = 0x20;
const NMI: u8 = 0x40;

/// The five latency columns (`d..2.`): irqs-off, need-resched,
/// hardirq/softirq, preempt depth, migrate-disable depth.
pub fn write_lat_flags<W: Write>(w: &mut W, flags: u8, preempt: u8) -> fmt::Result {
    let irqs_off = if flags & IRQS_OFF != 0 { 'd' } else { '.' };
    let need_resched = match flags & (NEED_RESCHED | NEED_RESCHED_LAZY | PREEMPT_RESCHED) {
        x if x == NEED_RESCHED | NEED_RESCHED_LAZY | PREEMPT_RESCHED => 'B',
        x if x == NEED_RESCHED | PREEMPT_RESCHED => 'N',
        x if x == NEED_RESCHED_LAZY | PREEMPT_RESCHED => 'L',
        x if x == NEED_RESCHED | NEED_RESCHED_LAZY => 'b',
        NEED_RESCHED => 'n',
        PREEMPT_RESCHED => 'p',
        NEED_RESCHED_LAZY => 'l',
        _ => '.',
    };
    let (nmi, hard, soft) = (flags & NMI != 0, flags & HARDIRQ != 0, flags & SOFTIRQ != 0);
    let hardsoft = match (nmi, hard, soft) {
        (true, true, _) => 'Z',
        (true, false, _) => 'z',
        (false, true, true) => 'H',
        (false, true, false) => 'h',
        (false, false, true) => 's',
        _ => '.',
    };
    w.write_char(irqs_off)?;
    w.write_char(need_resched)?;
    w.write_char(hardsoft)?;
    hex_or_dot(w, preempt & 0xf)?;
    hex_or_dot(w, preempt >> 4)
}

fn hex_or_dot<W: Write>(w: &mut W, v: u8) -> fmt::Result {
    if v == 0 {
        w.write_char('.')
    } else {
        w.write_char(char::from_digit(u32::from(v), 16).unwrap_or('?'))
    }
}

/// The timestamp column with its leading space: ` %5lu.%06lu` for clocks in
/// nanoseconds (rounded to the microsecond like `ns2usecs`), ` %12llu` for
/// counters.
pub fn write_timestamp<W: Write>(w: &mut W, ts: u64, in_ns: bool) -> fmt::Result {
    if in_ns {
        let us = ts.saturating_add(500) / 1000;
        write!(w, " {:5}.{:06}", us / 1_000_000, us % 1_000_000)
    } else {
        write!(w, " {ts:12}")
    }
}

/// The whole prefix up to and including the `": "` before the event body:
/// `            bash-4324    [000] d..2.   266.454481: `.
#[allow(clippy::too_many_arguments)]
pub fn write_prefix<W: Write>(
    w: &mut W,
    comm: &str,
    pid: i32,
    cpu: u32,
    flags: u8,
    preempt: u8,
    ts: u64,
    in_ns: bool,
) -> fmt::Result {
    write!(w, "{comm:>16}-{pid:<7} [{cpu:03}] ")?;
    write_lat_flags(w, flags, preempt)?;
    write_timestamp(w, ts, in_ns)?;
    w.write_str(": ")
}

/// `CPU:N [LOST M EVENTS]`, or `[LOST EVENTS]` when the count is unknown.
pub fn write_lost<W: Write>(w: &mut W, cpu: u32, count: Option<u64>) -> fmt::Result {
    match count {
        Some(n) => writeln!(w, "CPU:{cpu} [LOST {n} EVENTS]"),
        None => writeln!(w, "CPU:{cpu} [LOST EVENTS]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_matches_the_kernel() {
        let mut s = String::new();
        write_prefix(&mut s, "bash", 18082, 0, 0x01, 0x02, 539_056_656_400, true).unwrap();
        assert_eq!(s, "            bash-18082   [000] d..2.   539.056656: ");
        let mut s = String::new();
        write_prefix(&mut s, "<idle>", 0, 1, 0x0d, 0x21, 5_999_999_999_500, true).unwrap();
        assert_eq!(s, "          <idle>-0       [001] dnh12  6000.000000: ");
        let mut s = String::new();
        write_prefix(&mut s, "a-very-long-comm-name", 1, 12, 0, 0, 42, false).unwrap();
        assert_eq!(s, "a-very-long-comm-name-1       [012] .....           42: ");
    }

    #[test]
    fn lat_flags() {
        let f = |flags, pc| {
            let mut s = String::new();
            write_lat_flags(&mut s, flags, pc).unwrap();
            s
        };
        assert_eq!(f(0, 0), ".....");
        assert_eq!(f(NEED_RESCHED | PREEMPT_RESCHED, 0), ".N...");
        assert_eq!(f(PREEMPT_RESCHED, 0), ".p...");
        assert_eq!(f(NEED_RESCHED_LAZY, 0), ".l...");
        assert_eq!(f(NMI | HARDIRQ, 0xff), "..Zff");
        assert_eq!(f(NMI, 0), "..z..");
        assert_eq!(f(HARDIRQ | SOFTIRQ, 0x10), "..H.1");
        assert_eq!(f(SOFTIRQ | IRQS_OFF, 3), "d.s3.");
    }

    #[test]
    fn cmdlines() {
        let c = Cmdlines::parse("12 bash\n7 kworker/0:1 x\nbad line\n");
        assert_eq!(c.comm(12), "bash");
        assert_eq!(c.comm(7), "kworker/0:1 x");
        assert_eq!(c.comm(0), "<idle>");
        assert_eq!(c.comm(99), "<...>");
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn lost_lines() {
        let mut s = String::new();
        write_lost(&mut s, 1, Some(42)).unwrap();
        write_lost(&mut s, 0, None).unwrap();
        assert_eq!(s, "CPU:1 [LOST 42 EVENTS]\nCPU:0 [LOST EVENTS]\n");
    }

    #[test]
    fn clocks() {
        assert!(clock_in_ns("local") && clock_in_ns("mono") && clock_in_ns("boot"));
        assert!(!clock_in_ns("counter") && !clock_in_ns("x86-tsc") && !clock_in_ns("uptime"));
    }
}
