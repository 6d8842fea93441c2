//! The line prefix of the kernel's `trace` file: comm-pid, CPU, latency
//! flags and timestamp, exactly as kernel/trace/trace_output.c prints them
//! (`trace_print_context`, `trace_print_lat_fmt`, `trace_print_time`).

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use crate::kernel::LatColumns;
use crate::printfmt::digits::{StackBuf, Stage, LINE};

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
        // The kernel's table has one line per pid: which of two a made-up
        // file keeps does not matter.
        map.sort_unstable_by_key(|e| e.0);
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
const BH_OFF: u8 = 0x80;

/// The latency columns (`d..2.`; `d..2` before 5.13, `d...2..` on 6.1-rt):
/// irqs-off (`D`/`b` with BH disabled), need-resched, hardirq/softirq,
/// preempt depth, migrate-disable depth ([`LatColumns`]). `lazy`: the
/// record's `common_preempt_lazy_count` (RT kernels with it).
pub fn write_lat_flags<W: Write + ?Sized>(
    w: &mut W,
    flags: u8,
    preempt: u8,
    lazy: u8,
    cols: LatColumns,
) -> fmt::Result {
    let (b, n) = lat_flags(flags, preempt, lazy, cols);
    w.write_str(b.get(..n).and_then(|b| core::str::from_utf8(b).ok()).unwrap_or("....."))
}

/// `%x` of a count, or `.` for 0, into `b` at `n`; the new length.
fn push_count(b: &mut [u8; 8], n: usize, v: u8) -> usize {
    let (digits, len) = match v {
        0 => ([b'.', 0], 1),
        1..=15 => ([hex(v), 0], 1),
        _ => ([hex(v >> 4), hex(v & 0xf)], 2),
    };
    for (i, &d) in digits.iter().take(len).enumerate() {
        if let Some(slot) = b.get_mut(n + i) {
            *slot = d;
        }
    }
    n + len
}

/// The columns' bytes and how many of them are used.
fn lat_flags(flags: u8, preempt: u8, lazy: u8, cols: LatColumns) -> ([u8; 8], usize) {
    let (nmi, hard, soft) = (flags & NMI != 0, flags & HARDIRQ != 0, flags & SOFTIRQ != 0);
    let hardsoft = match (nmi, hard, soft) {
        (true, true, _) => b'Z',
        (true, false, _) => b'z',
        (false, true, true) => b'H',
        (false, true, false) => b'h',
        (false, false, true) => b's',
        _ => b'.',
    };
    // 0x02 was IRQS_NOSUPPORT before 6.13.
    let irqs_off = match (flags & IRQS_OFF != 0, flags & BH_OFF != 0) {
        (true, true) => b'D',
        (true, false) => b'd',
        (false, true) => b'b',
        _ if cols != LatColumns::Five && flags & NEED_RESCHED_LAZY != 0 => b'X',
        _ => b'.',
    };
    let mut b = [b'.'; 8];
    match cols {
        LatColumns::Four => {
            // No BH_OFF flag yet.
            b[0] = match flags & (IRQS_OFF | NEED_RESCHED_LAZY) {
                0 => b'.',
                x if x & IRQS_OFF != 0 => b'd',
                _ => b'X',
            };
            b[1] = match flags & (NEED_RESCHED | PREEMPT_RESCHED) {
                x if x == NEED_RESCHED | PREEMPT_RESCHED => b'N',
                NEED_RESCHED => b'n',
                PREEMPT_RESCHED => b'p',
                _ => b'.',
            };
            b[2] = hardsoft;
            let n = push_count(&mut b, 3, preempt);
            (b, n)
        }
        LatColumns::RtLazy => {
            // PREEMPT_RESCHED is 0 there and 0x20 is NEED_RESCHED_LAZY.
            b[0] = irqs_off;
            b[1] = if flags & NEED_RESCHED != 0 { b'n' } else { b'.' };
            b[2] = if flags & PREEMPT_RESCHED != 0 { b'L' } else { b'.' };
            b[3] = hardsoft;
            b[4] = hex_or_dot(preempt & 0xf);
            let n = push_count(&mut b, 5, lazy);
            if let Some(slot) = b.get_mut(n) {
                *slot = hex_or_dot(preempt >> 4);
            }
            (b, n + 1)
        }
        LatColumns::Five => {
            b[0] = irqs_off;
            b[1] = match flags & (NEED_RESCHED | NEED_RESCHED_LAZY | PREEMPT_RESCHED) {
                x if x == NEED_RESCHED | NEED_RESCHED_LAZY | PREEMPT_RESCHED => b'B',
                x if x == NEED_RESCHED | PREEMPT_RESCHED => b'N',
                x if x == NEED_RESCHED_LAZY | PREEMPT_RESCHED => b'L',
                x if x == NEED_RESCHED | NEED_RESCHED_LAZY => b'b',
                NEED_RESCHED => b'n',
                PREEMPT_RESCHED => b'p',
                NEED_RESCHED_LAZY => b'l',
                _ => b'.',
            };
            b[2] = hardsoft;
            b[3] = hex_or_dot(preempt & 0xf);
            b[4] = hex_or_dot(preempt >> 4);
            (b, 5)
        }
    }
}

fn hex_or_dot(v: u8) -> u8 {
    if v == 0 {
        b'.'
    } else {
        hex(v)
    }
}

/// The lower-case hex digit of a nibble.
fn hex(v: u8) -> u8 {
    match v & 0xf {
        d @ 0..=9 => b'0' + d,
        d => b'a' + d - 10,
    }
}

/// The timestamp column with its leading space: ` %5lu.%06lu` for clocks in
/// nanoseconds (rounded to the microsecond like `ns2usecs`), ` %12llu` for
/// counters.
pub fn write_timestamp<W: Write + ?Sized>(w: &mut W, ts: u64, in_ns: bool) -> fmt::Result {
    let mut b = StackBuf::<32>::new();
    let (whole, frac) = split_ts(ts, in_ns);
    b.push_buf(&ts_whole(whole, in_ns));
    push_frac(&mut b, frac);
    w.write_str(b.as_str())
}

/// A column piece of the prefix (fits any CPU number or timestamp).
type Piece = StackBuf<24>;

/// The timestamp's whole part (seconds, or the count of a counter clock)
/// and its microseconds (`None` for counters).
#[inline]
fn split_ts(ts: u64, in_ns: bool) -> (u64, Option<u32>) {
    if !in_ns {
        return (ts, None);
    }
    let us = ts.saturating_add(500) / 1000;
    (us / 1_000_000, Some((us % 1_000_000) as u32))
}

/// ` %5lu` (ns clocks: the seconds) or ` %12llu` (counters).
fn ts_whole(whole: u64, in_ns: bool) -> Piece {
    let mut b = Piece::new();
    b.push(b' ');
    b.push_padded(whole, if in_ns { 5 } else { 12 }, b' ');
    b
}

/// `.%06lu` of the microseconds, when there are.
#[inline]
fn push_frac<const N: usize>(b: &mut StackBuf<N>, frac: Option<u32>) {
    if let Some(frac) = frac {
        b.push(b'.');
        b.push_pair(frac / 10_000);
        b.push_pair(frac / 100 % 100);
        b.push_pair(frac % 100);
    }
}

/// `comm-pid` padded like `%16s-%-7d`.
fn push_comm_pid<const N: usize>(b: &mut StackBuf<N>, comm: &str, pid: i32) {
    b.fill(b' ', 16usize.saturating_sub(comm.len()));
    b.push_str(comm);
    push_pid(b, pid);
}

/// `-%-7d`
fn push_pid<const N: usize>(b: &mut StackBuf<N>, pid: i32) {
    b.push(b'-');
    let n = b.len();
    b.push_int(i64::from(pid));
    b.fill(b' ', 7usize.saturating_sub(b.len() - n));
}

/// ` [CPU] flags`: the columns between comm-pid and the timestamp (no
/// flags with the `irq-info` option off: `cols` `None`).
fn lat_col(cpu: u32, flags: u8, preempt: u8, lazy: u8, cols: Option<LatColumns>) -> Piece {
    let mut b = Piece::new();
    b.push(b' ');
    b.push(b'[');
    b.push_padded(u64::from(cpu), 3, b'0');
    b.push(b']');
    b.push(b' ');
    if let Some(cols) = cols {
        let (c, n) = lat_flags(flags, preempt, lazy, cols);
        for &c in c.iter().take(n) {
            b.push(c);
        }
    }
    b
}

/// The pieces of the prefix that repeat from line to line, kept: most
/// lines share their CPU/flags columns and the seconds of their timestamp
/// with a recent one.
struct Repeats {
    /// ` [CPU] flags` by (cpu, flags, preempt), direct-mapped.
    lat: Vec<(u64, Piece)>,
    /// The whole part of the last timestamp, and its text.
    whole: (u64, Piece),
    in_ns: bool,
    /// The latency columns; `None` with the `irq-info` option off.
    cols: Option<LatColumns>,
}

/// Entries of [`Repeats::lat`] (a power of two).
const LATS: usize = 64;

impl Repeats {
    fn new(in_ns: bool) -> Self {
        Repeats {
            lat: alloc::vec![(u64::MAX, Piece::new()); LATS],
            whole: (0, ts_whole(0, in_ns)),
            in_ns,
            cols: Some(LatColumns::Five),
        }
    }

    /// Change the latency columns (forgets the kept ones).
    fn set_cols(&mut self, cols: Option<LatColumns>) {
        self.cols = cols;
        self.lat.iter_mut().for_each(|e| e.0 = u64::MAX);
    }

    /// The columns after comm-pid, up to and including the `": "`.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn push<const N: usize>(&mut self, b: &mut StackBuf<N>, cpu: u32, flags: u8, preempt: u8, lazy: u8, ts: u64) {
        let key = u64::from(cpu) << 24 | u64::from(lazy) << 16 | u64::from(flags) << 8 | u64::from(preempt);
        let slot = (key as u32).wrapping_mul(0x9e37_79b1) as usize >> 26 & (LATS - 1);
        if let Some(e) = self.lat.get_mut(slot) {
            if e.0 != key {
                *e = (key, lat_col(cpu, flags, preempt, lazy, self.cols));
            }
            b.push_buf(&e.1);
        }
        let (whole, frac) = split_ts(ts, self.in_ns);
        if self.whole.0 != whole {
            self.whole = (whole, ts_whole(whole, self.in_ns));
        }
        b.push_buf(&self.whole.1);
        push_frac(b, frac);
        b.push(b':');
        b.push(b' ');
    }
}

/// The whole prefix up to and including the `": "` before the event body:
/// `            bash-4324    [000] d..2.   266.454481: `.
#[allow(clippy::too_many_arguments)]
pub fn write_prefix<W: Write + ?Sized>(
    w: &mut W,
    comm: &str,
    pid: i32,
    cpu: u32,
    flags: u8,
    preempt: u8,
    ts: u64,
    in_ns: bool,
) -> fmt::Result {
    // Hand-formatted into one buffer: this runs for every line.
    let mut b = StackBuf::<PREFIX>::new();
    if comm.len() > COMM_MAX {
        w.write_str(comm)?;
        push_pid(&mut b, pid);
    } else {
        push_comm_pid(&mut b, comm, pid);
    }
    b.push_buf(&lat_col(cpu, flags, preempt, 0, Some(LatColumns::Five)));
    let (whole, frac) = split_ts(ts, in_ns);
    b.push_buf(&ts_whole(whole, in_ns));
    push_frac(&mut b, frac);
    b.push_str(": ");
    w.write_str(b.as_str())
}

/// Longest comm assembled in the prefix buffer (longer ones are written
/// apart); the kernel's are at most 15 bytes.
const COMM_MAX: usize = 64;
/// Room for the comm-pid column of such a comm.
const COMM_COL: usize = COMM_MAX + 16;
/// The line buffer: comm, pid, CPU, flags and a 20-digit timestamp, an
/// event name, and the body as far as it fits.
const PREFIX: usize = LINE;

/// `CPU:N [LOST M EVENTS]`, or `[LOST EVENTS]` when the count is unknown.
pub fn write_lost<W: Write + ?Sized>(w: &mut W, cpu: u32, count: Option<u64>) -> fmt::Result {
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
            write_lat_flags(&mut s, flags, pc, 0, LatColumns::Five).unwrap();
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
        assert_eq!(f(IRQS_OFF | BH_OFF, 2), "D..2.");
        assert_eq!(f(BH_OFF, 0), "b....");
        // 5.10: four columns, the whole preempt count in hex.
        let f = |flags, pc| {
            let mut s = String::new();
            write_lat_flags(&mut s, flags, pc, 0, LatColumns::Four).unwrap();
            s
        };
        assert_eq!(f(0, 0), "....");
        assert_eq!(f(IRQS_OFF | NEED_RESCHED | HARDIRQ, 1), "dnh1");
        assert_eq!(f(NEED_RESCHED_LAZY | PREEMPT_RESCHED | SOFTIRQ, 0x21), "Xps21");
        assert_eq!(f(BH_OFF, 0x0f), "...f");
        assert_eq!(f(0, 0x10), "...10");
        // 6.1-rt: need-resched-lazy and the lazy count.
        let f = |flags, pc, lazy| {
            let mut s = String::new();
            write_lat_flags(&mut s, flags, pc, lazy, LatColumns::RtLazy).unwrap();
            s
        };
        assert_eq!(f(0, 0, 0), ".......");
        assert_eq!(f(0, 1, 0), "....1..");
        assert_eq!(f(IRQS_OFF | NEED_RESCHED | PREEMPT_RESCHED | HARDIRQ, 0x12, 1), "dnLh211");
        assert_eq!(f(0, 0, 0x1a), ".....1a.");
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
    fn json_strings_escape_quotes_backslashes_and_controls() {
        let mut s = String::new();
        json_str(&mut s, "a\"b\\c\nd\te\u{1}\u{1f}f\u{7f}é€😀").unwrap();
        assert_eq!(s, "\"a\\\"b\\\\c\\nd\\te\\u0001\\u001ff\u{7f}é€😀\"");
        for (t, want) in [("", "\"\""), ("\"", "\"\\\"\""), ("plain", "\"plain\""), ("\n\n", "\"\\n\\n\"")] {
            let mut s = String::new();
            json_str(&mut s, t).unwrap();
            assert_eq!(s, want, "{t:?}");
        }
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

/// Offsets of the common fields every record starts with (read from a format
/// file, never assumed).
#[derive(Debug, Clone, Copy, Default)]
pub struct CommonFields {
    /// (offset, size) of common_flags, common_preempt_count and common_pid;
    /// size 0 when the field is missing.
    at: [(u32, u32); 3],
    /// The layout of every kernel: two bytes and an int.
    plain: bool,
    /// Offset of `common_preempt_lazy_count` (RT kernels with lazy
    /// preemption, [`LatColumns::RtLazy`]).
    lazy: Option<u32>,
}

impl CommonFields {
    /// Those of a kernel's events: every format of one kernel starts with
    /// the same common fields. `None` for an empty table.
    pub fn of_table(events: &EventTable) -> Option<Self> {
        events.iter().next().map(Self::of)
    }

    pub fn of(ev: &crate::format::EventFormat) -> Self {
        let f = |n: &str| ev.common.iter().find(|f| f.name == n).map_or((0, 0), |f| (f.offset, f.size));
        let at = [f("common_flags"), f("common_preempt_count"), f("common_pid")];
        let lazy = ev.common.iter().find(|f| f.name == "common_preempt_lazy_count").map(|f| f.offset);
        CommonFields { at, plain: at[0].1 == 1 && at[1].1 == 1 && at[2].1 == 4, lazy }
    }

    /// Whether the events carry `common_preempt_lazy_count`.
    pub fn has_lazy_count(&self) -> bool {
        self.lazy.is_some()
    }

    /// A record's `common_preempt_lazy_count` (0 without one).
    #[inline]
    pub fn lazy_count(&self, p: &[u8]) -> u8 {
        self.lazy.and_then(|o| p.get(o as usize).copied()).unwrap_or(0)
    }

    /// (flags, preempt_count, pid) of a record payload.
    #[inline]
    pub fn read(&self, e: crate::format::Endian, p: &[u8]) -> (u8, u8, i32) {
        let [f, pc, pid] = self.at;
        if !self.plain {
            return self.read_any(e, p);
        }
        let byte = |o: u32| p.get(o as usize).copied().unwrap_or(0);
        (byte(f.0), byte(pc.0), e.u32(p, pid.0 as usize).unwrap_or(0) as i32)
    }

    /// [`read`](Self::read) of any layout (apart: the common one needs
    /// few registers).
    #[inline(never)]
    fn read_any(&self, e: crate::format::Endian, p: &[u8]) -> (u8, u8, i32) {
        let get = |(o, s): (u32, u32)| if s == 0 { 0 } else { e.uint(p, o as usize, s as usize).unwrap_or(0) };
        let [f, pc, pid] = self.at;
        (get(f) as u8, get(pc) as u8, get(pid) as u32 as i32)
    }
}

use crate::format::{Abi, Endian, EventFormat, EventTable, FieldLoc};
use crate::printfmt::{StringLookup, SymbolLookup};

/// How an event's body is produced.
// One per event type, built once: the size does not matter, and boxing the
// program would add a pointer chase to every record's hot path.
#[allow(clippy::large_enum_variant)]
/// What `trace_timerlat_print` and `trace_osnoise_print` (trace_output.c)
/// write instead of these entries' print fmts, as print fmts over their
/// fields. 6.1 prints `thread` for any timerlat context but 0 (and writes
/// only 0 and 1); 6.5+ has `user-ret` for 2. osnoise's figure is the %
/// of CPU time left to the workload, in the kernel's u64 arithmetic.
const TRACER_FMTS: [(&str, &str); 2] = [
    (
        "timerlat",
        "\"#%-5u context %6s timer_latency %9llu ns\\n\", REC->seqnum, \
         REC->context == 2 ? \"user-ret\" : REC->context ? \"thread\" : \"irq\", REC->timer_latency",
    ),
    (
        "osnoise",
        "\"%llu %10llu %3llu.%05llu %7llu %6u %6u %6u %6u %6u\\n\", REC->runtime, REC->noise, \
         REC->runtime ? (REC->runtime - REC->noise) * 10000000 / REC->runtime / 100000 : 0, \
         REC->runtime ? (REC->runtime - REC->noise) * 10000000 / REC->runtime % 100000 : 0, \
         REC->max_sample, REC->hw_count, REC->nmi_count, REC->irq_count, REC->softirq_count, REC->thread_count",
    ),
];

// The print fmt program is the common case; boxing it would cost a
// pointer chase on every record.
#[allow(clippy::large_enum_variant)]
enum Body {
    /// ftrace's own records, printed by dedicated kernel functions.
    Function {
        ip: FieldLoc,
        parent: FieldLoc,
        /// Offset of `args[]` (6.15+: func-args fills it).
        args: Option<u32>,
    },
    KernelStack,
    Hwlat,
    /// The print fmt program; `named` puts `name: ` before it (all events
    /// but ftrace's print/bputs/bprint, which start with their ip).
    Fmt {
        prog: crate::printfmt::Program,
        named: bool,
        memo: MemoUse,
    },
}

/// Texts of event bodies rendered lately, by event and payload. In a busy
/// trace most records repeat one of a few payloads (a softirq's vector, a
/// timer's address, a switch between the same two tasks), and a print fmt's
/// text depends on the payload's bytes alone (`Program::reads_from`): a
/// payload seen before costs a compare and a copy instead of the program.
struct Memo {
    slots: Vec<Slot>,
}

/// Direct-mapped entries of [`Memo`] (a power of two).
const MEMO: usize = 256;
/// Longest payload (from the first byte the program reads) and text kept.
const KEY: usize = 64;
const TEXT: usize = 104;

#[derive(Clone, Copy)]
struct Slot {
    /// Event id; `u32::MAX`: empty.
    id: u32,
    klen: u8,
    key: [u8; KEY],
    text: StackBuf<TEXT>,
}

/// How an event uses the [`Memo`]: from which payload byte its key starts,
/// and whether reuse pays (the hits are counted; an event whose payloads
/// rarely repeat, a timestamp in each, stops looking).
#[derive(Clone, Copy)]
struct MemoUse {
    /// `None`: not used for this event.
    from: Option<u32>,
    tries: u32,
    hits: u32,
}

impl MemoUse {
    /// The key of `payload`, when the memo is used for this event.
    #[inline]
    fn key<'p>(&self, payload: &'p [u8]) -> Option<&'p [u8]> {
        payload.get(self.from? as usize..).filter(|k| k.len() <= KEY)
    }

    fn count(&mut self, hit: bool) {
        self.tries += 1;
        self.hits += u32::from(hit);
        // Every 1024 tries: a hit rate under a quarter does not pay for
        // the lookups.
        if self.tries == 1024 {
            if self.hits < 256 {
                self.from = None;
            }
            (self.tries, self.hits) = (0, 0);
        }
    }
}

impl Memo {
    /// Where `key` goes: a hash of its first, middle and last eight bytes
    /// (whole keys are compared; this only spreads them).
    #[inline]
    fn slot(id: u32, key: &[u8]) -> usize {
        let n = key.len();
        let word = |at: usize| key.get(at..at + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()).map(u64::from_le_bytes);
        let last = n.saturating_sub(8);
        let h = match word(0) {
            Some(w) => w ^ word(last / 2).unwrap_or(0).rotate_left(21) ^ word(last).unwrap_or(0).rotate_left(42),
            // A key shorter than a word.
            None => key.iter().fold(0, |h, &b| h << 8 | u64::from(b)),
        };
        let h = (h ^ u64::from(id) << 40 ^ n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h >> 56) as usize & (MEMO - 1)
    }

    fn get(&self, id: u32, key: &[u8]) -> Option<&StackBuf<TEXT>> {
        let s = self.slots.get(Memo::slot(id, key))?;
        (s.id == id && s.key.get(..usize::from(s.klen)) == Some(key)).then_some(&s.text)
    }

    fn put(&mut self, id: u32, key: &[u8], text: &str) {
        if text.len() > TEXT || key.len() > KEY {
            return;
        }
        if self.slots.is_empty() {
            let empty = Slot { id: u32::MAX, klen: 0, key: [0; KEY], text: StackBuf::new() };
            self.slots = alloc::vec![empty; MEMO];
        }
        if let Some(s) = self.slots.get_mut(Memo::slot(id, key)) {
            s.id = id;
            s.klen = key.len() as u8;
            s.key.get_mut(..key.len()).unwrap_or(&mut []).copy_from_slice(key);
            s.text.clear();
            s.text.push_str(text);
        }
    }
}

/// Turns records into the kernel's `trace` lines. Programs are compiled on
/// first use of each event and kept.
pub struct Renderer<'a> {
    events: &'a EventTable,
    cmdlines: Cmdlines,
    abi: Abi,
    syms: Option<&'a dyn SymbolLookup>,
    strings: Option<&'a dyn StringLookup>,
    kernel: Option<&'a dyn crate::printfmt::KernelInfo>,
    common: Option<CommonFields>,
    /// Indexed by event id; `None` = not compiled yet.
    bodies: Vec<Option<Body>>,
    /// The comm-pid column of recent pids, by `pid % COLS`.
    cols: Vec<(i32, StackBuf<COL_MAX>)>,
    /// The line prefix being assembled (kept: no per-line initialising).
    pre: StackBuf<PREFIX>,
    repeats: Repeats,
    memo: Memo,
}

/// Cached comm-pid columns: direct-mapped by pid, enough for the tasks
/// of a busy board.
const COLS: usize = 256;
/// Longest cached column (`%16s-%-7d` of a kernel comm is at most 28).
const COL_MAX: usize = 32;

impl<'a> Renderer<'a> {
    pub fn new(events: &'a EventTable, cmdlines: Cmdlines, abi: Abi, in_ns: bool) -> Self {
        let common = CommonFields::of_table(events);
        Renderer {
            events,
            cmdlines,
            abi,
            syms: None,
            strings: None,
            kernel: None,
            common,
            bodies: Vec::new(),
            cols: Vec::new(),
            pre: StackBuf::new(),
            repeats: Repeats::new(in_ns),
            memo: Memo { slots: Vec::new() },
        }
    }

    /// The `common_pid` of a record.
    pub fn pid(&self, payload: &[u8]) -> i32 {
        self.common.map_or(0, |c| c.read(self.abi.endian, payload).2)
    }

    /// The pid → comm table in use.
    pub fn cmdlines(&self) -> &Cmdlines {
        &self.cmdlines
    }

    /// Replace the pid → comm table (re-read while following a live buffer).
    pub fn set_cmdlines(&mut self, c: Cmdlines) {
        self.cmdlines = c;
        self.cols.clear();
    }

    /// Symbols for `%ps`/`%pS` and function/stack records.
    pub fn with_symbols(mut self, s: &'a dyn SymbolLookup) -> Self {
        self.syms = Some(s);
        self
    }

    /// What the format files leave out (kernel version, enum values…).
    pub fn with_kernel(mut self, k: &'a dyn crate::printfmt::KernelInfo) -> Self {
        self.kernel = Some(k);
        let cols = self.repeats.cols.map(|_| self.lat_columns());
        self.repeats.set_cols(cols);
        self
    }

    /// The `irq-info` option (on by default): off leaves the latency
    /// columns out of the prefix. Call after [`Renderer::with_kernel`].
    pub fn with_irq_info(mut self, on: bool) -> Self {
        let cols = on.then(|| self.lat_columns());
        self.repeats.set_cols(cols);
        self
    }

    /// The latency columns of this kernel ([`crate::kernel::lat_columns`]).
    fn lat_columns(&self) -> LatColumns {
        let lazy = self.common.is_some_and(|c| c.has_lazy_count());
        crate::kernel::lat_columns(self.kernel.and_then(|k| k.kernel_version()), lazy)
    }

    /// printk_formats for bprint/bputs and string pointers.
    pub fn with_strings(mut self, s: &'a dyn StringLookup) -> Self {
        self.strings = Some(s);
        self
    }

    fn ctx(&self) -> crate::printfmt::Ctx<'a> {
        crate::printfmt::Ctx { abi: self.abi, syms: self.syms, strings: self.strings }
    }

    fn body_for(&self, ev: &EventFormat) -> Body {
        let loc = |n: &str| ev.field(n).map(crate::format::Field::loc);
        if ev.system == "ftrace" {
            match ev.name.as_str() {
                "function" => {
                    if let (Some(ip), Some(parent)) = (loc("ip"), loc("parent_ip")) {
                        return Body::Function { ip, parent, args: ev.field("args").map(|f| f.offset) };
                    }
                }
                "kernel_stack" => return Body::KernelStack,
                "hwlat" => return Body::Hwlat,
                _ => {}
            }
        }
        let own = TRACER_FMTS.iter().find(|t| ev.system == "ftrace" && t.0 == ev.name).map(|t| {
            let mut k = ev.clone();
            k.print_fmt = String::from(t.1);
            k
        });
        let ev = own.as_ref().unwrap_or(ev);
        let prog = match self.kernel {
            Some(k) => crate::printfmt::Program::compile_with(ev, self.abi.long_size, k),
            None => crate::printfmt::Program::compile(ev, self.abi.long_size),
        };
        let ftrace_text =
            ev.system == "ftrace" && (own.is_some() || matches!(ev.name.as_str(), "print" | "bputs" | "bprint"));
        let memo = MemoUse { from: prog.reads_from(), tries: 0, hits: 0 };
        Body::Fmt { named: prog.name_prefix() && !ftrace_text, prog, memo }
    }

    /// `ip` the way `seq_print_ip_sym` prints it (default flags).
    fn ip_sym<W: Write>(&self, w: &mut W, ip: u64) -> fmt::Result {
        crate::printfmt::write_ip_sym(w, ip, self.syms)
    }

    /// The line prefix up to and including its `": "`, assembled in
    /// `self.pre` (a comm too long for it is written to `w` first).
    fn prefix<W: Write>(&mut self, w: &mut W, common: CommonFields, cpu: u32, ts: u64, payload: &[u8]) -> fmt::Result {
        let (flags, preempt, pid) = common.read(self.abi.endian, payload);
        self.pre.clear();
        comm_col(&mut self.cols, &self.cmdlines, w, &mut self.pre, pid)?;
        let lazy = common.lazy_count(payload);
        self.repeats.push(&mut self.pre, cpu, flags, preempt, lazy, ts);
        Ok(())
    }

    /// Write one record's line(s), newline included.
    pub fn record<W: Write>(&mut self, w: &mut W, cpu: u32, ts: u64, payload: &[u8]) -> fmt::Result {
        let e = self.abi.endian;
        let Some(ev) = self.events.event_of(payload, e) else {
            self.prefix(w, self.common.unwrap_or_default(), cpu, ts, payload)?;
            w.write_str(self.pre.as_str())?;
            let id = self.events.record_id(payload, e).unwrap_or(0);
            return writeln!(w, "type: {id}");
        };
        self.record_of(w, ev, cpu, ts, payload)
    }

    /// [`record`](Self::record) for a record whose event the caller has
    /// looked up already.
    pub fn record_of<W: Write>(
        &mut self,
        w: &mut W,
        ev: &EventFormat,
        cpu: u32,
        ts: u64,
        payload: &[u8],
    ) -> fmt::Result {
        let e = self.abi.endian;
        // The common fields are laid out alike in every event of a kernel.
        let common = match self.common {
            Some(c) => c,
            None => CommonFields::of(ev),
        };
        self.prefix(w, common, cpu, ts, payload)?;
        let id = ev.id as usize;
        if self.bodies.len() <= id {
            self.bodies.resize_with(id + 1, || None);
        }
        if self.bodies[id].is_none() {
            let b = self.body_for(ev);
            self.bodies[id] = Some(b);
        }
        let ctx = self.ctx();
        let long = self.abi.long_size as usize;
        let Some(body) = self.bodies[id].as_mut() else { return w.write_str(self.pre.as_str()) };
        match body {
            Body::Fmt { prog, named, memo } => {
                let key = memo.key(payload);
                if let Some(k) = key {
                    let seen = self.memo.get(ev.id, k);
                    memo.count(seen.is_some());
                    if let Some(text) = seen {
                        self.pre.push_buf(text);
                        return w.write_str(self.pre.as_str());
                    }
                }
                // The line is assembled in the prefix buffer and written out
                // in one piece (or a few, if it is long or has strings).
                let start = self.pre.len();
                let mut st = Stage::new(&mut self.pre, w);
                if *named {
                    st.push(&ev.name)?;
                    st.push(": ")?;
                }
                prog.render_staged(&mut st, payload, &ctx)?;
                // trace_printk text carries its own newline (usually).
                if *named || st.last_byte() != b'\n' {
                    st.push("\n")?;
                }
                if let (Some(k), true) = (key, st.whole()) {
                    self.memo.put(ev.id, k, st.buf().as_str().get(start..).unwrap_or(""));
                }
                st.flush()
            }
            Body::Function { ip, parent, args } => {
                w.write_str(self.pre.as_str())?;
                let ip_v = ip.uint(payload, e).unwrap_or(0);
                let par = parent.uint(payload, e).unwrap_or(0);
                let args = *args;
                self.ip_sym(w, ip_v)?;
                // print_fn_trace() (7.2 trace_output.c): the arguments when
                // the record holds FTRACE_REGS_MAX_ARGS longs of them.
                let long = self.abi.long_size as usize;
                let args = args.filter(|&a| payload.len() >= a as usize + crate::kernel::FTRACE_REGS_MAX_ARGS * long);
                if args.is_some() {
                    crate::printfmt::write_function_args(w, self.syms, self.kernel, self.abi, ip_v, payload, args)?;
                }
                if par != 0 {
                    w.write_str(" <-")?;
                    self.ip_sym(w, par)?;
                }
                w.write_char('\n')
            }
            Body::Hwlat => {
                w.write_str(self.pre.as_str())?;
                write_hwlat(w, ev, payload, e)
            }
            Body::KernelStack => {
                w.write_str(self.pre.as_str())?;
                w.write_str("<stack trace>\n")?;
                let (start, count) = match (ev.field("caller"), ev.field("size")) {
                    (Some(c), Some(s)) => (c.offset as usize, s.int(payload, e).unwrap_or(0).max(0) as usize),
                    _ => return Ok(()),
                };
                let max = if long == 4 { u64::from(u32::MAX) } else { u64::MAX };
                // The record may hold more entries than `caller[8]` says.
                for i in 0..count {
                    let Some(a) = e.uint(payload, start + i * long, long) else { break };
                    if a == max {
                        break;
                    }
                    w.write_str(" => ")?;
                    if a == FTRACE_TRAMPOLINE_MARKER {
                        w.write_str("[FTRACE TRAMPOLINE]\n")?;
                        continue;
                    }
                    self.ip_sym(w, a)?;
                    w.write_char('\n')?;
                }
                Ok(())
            }
        }
    }

    /// One record as [`write_json`]'s line, assembled in the line buffer
    /// and written in one piece (or a few, when long): a write per field
    /// and quote was most of `--json`'s time.
    pub fn json_of<W: Write>(
        &mut self,
        w: &mut W,
        ev: &EventFormat,
        cpu: u32,
        buffer: Option<&str>,
        ts: u64,
        payload: &[u8],
    ) -> fmt::Result {
        let pid = self.pid(payload);
        self.pre.clear();
        let mut st = Stage::new(&mut self.pre, w);
        write_json(&mut st, ev, &self.cmdlines, self.abi.endian, cpu, buffer, ts, pid, payload)?;
        st.flush()
    }
}

/// What the stack tracer stores for a return address inside an ftrace
/// trampoline (kernel/trace/trace.h `FTRACE_TRAMPOLINE_MARKER`, INT_MAX; the
/// 6.12 x86_64 board's stacks have it); `trace_stack_print()` prints
/// `[FTRACE TRAMPOLINE]` for it. No kernel text lives there on any
/// architecture, so older kernels' stacks never hold it.
const FTRACE_TRAMPOLINE_MARKER: u64 = 0x7fff_ffff;

/// Push the comm-pid column of `pid`, from the cache when it is there.
fn comm_col<W: Write>(
    cols: &mut Vec<(i32, StackBuf<COL_MAX>)>,
    cmdlines: &Cmdlines,
    w: &mut W,
    b: &mut StackBuf<PREFIX>,
    pid: i32,
) -> fmt::Result {
    let slot = pid as u32 as usize % COLS;
    if let Some(c) = cols.get(slot).filter(|c| c.0 == pid && c.1.len() > 0) {
        b.push_buf(&c.1);
        return Ok(());
    }
    let comm = cmdlines.comm(pid);
    if comm.len() > COMM_MAX {
        w.write_str(comm)?;
        push_pid(b, pid);
        return Ok(());
    }
    let mut col = StackBuf::<COMM_COL>::new();
    push_comm_pid(&mut col, comm, pid);
    b.push_str(col.as_str());
    if col.len() <= COL_MAX {
        if cols.is_empty() {
            *cols = alloc::vec![(0, StackBuf::new()); COLS];
        }
        if let Some(c) = cols.get_mut(slot) {
            c.0 = pid;
            c.1.clear();
            c.1.push_str(col.as_str());
        }
    }
    Ok(())
}

/// Write `s` as a JSON string literal.
pub fn json_str(w: &mut dyn Write, s: &str) -> fmt::Result {
    w.write_str("\"")?;
    json_text(w, s)?;
    w.write_str("\"")
}

/// The inside of a JSON string: runs that need no escape are written
/// whole (a line holds a few dozen characters; one write each was most of
/// `--json`'s time).
fn json_text(w: &mut dyn Write, s: &str) -> fmt::Result {
    let mut from = 0;
    for (i, b) in s.bytes().enumerate() {
        if b >= 0x20 && b != b'"' && b != b'\\' {
            continue;
        }
        // An ASCII byte: `i` and `i + 1` are character boundaries.
        w.write_str(s.get(from..i).unwrap_or(""))?;
        from = i + 1;
        match b {
            b'"' => w.write_str("\\\"")?,
            b'\\' => w.write_str("\\\\")?,
            b'\n' => w.write_str("\\n")?,
            b'\t' => w.write_str("\\t")?,
            _ => write!(w, "\\u{:04x}", b)?,
        }
    }
    w.write_str(s.get(from..).unwrap_or(""))
}

/// A JSON number: the digits by hand (core's integer `Display` goes
/// through its padding code for every field).
fn json_uint(w: &mut dyn Write, v: u64) -> fmt::Result {
    w.write_str(crate::printfmt::digits::Digits::new(v, 10, false).as_str())
}

fn json_int(w: &mut dyn Write, v: i64) -> fmt::Result {
    if v < 0 {
        w.write_str("-")?;
    }
    json_uint(w, v.unsigned_abs())
}

/// One event as a JSON object on one line: `{"ts_ns":…,"cpu":…,"pid":…,
/// "comm":"…","event":"sys:name","fields":{…}}`. Integers stay numbers,
/// char arrays and `__data_loc char[]` become strings, other arrays lists.
/// `buffer`: the name of the buffer it comes from (`""` for the top one),
/// given when the input holds several; it follows `cpu`. `pid`: its
/// `common_pid`.
#[allow(clippy::too_many_arguments)]
pub fn write_json(
    w: &mut dyn Write,
    ev: &EventFormat,
    cmdlines: &Cmdlines,
    e: Endian,
    cpu: u32,
    buffer: Option<&str>,
    ts: u64,
    pid: i32,
    payload: &[u8],
) -> fmt::Result {
    use crate::format::FieldKind;
    w.write_str("{\"ts_ns\":")?;
    json_uint(w, ts)?;
    w.write_str(",\"cpu\":")?;
    json_uint(w, u64::from(cpu))?;
    // Literal pieces joined: each write is a call.
    if let Some(b) = buffer {
        w.write_str(",\"buffer\":")?;
        json_str(w, b)?;
    }
    w.write_str(",\"pid\":")?;
    json_int(w, i64::from(pid))?;
    w.write_str(",\"comm\":")?;
    json_str(w, cmdlines.comm(pid))?;
    w.write_str(",\"event\":\"")?;
    json_text(w, &ev.system)?;
    w.write_str(":")?;
    json_text(w, &ev.name)?;
    w.write_str("\",\"fields\":{")?;
    for (i, f) in ev.fields.iter().enumerate() {
        w.write_str(if i > 0 { ",\"" } else { "\"" })?;
        json_text(w, &f.name)?;
        w.write_str("\":")?;
        match (f.kind, f.bytes(payload, e)) {
            (_, None) => w.write_str("null")?,
            (FieldKind::Scalar, Some(_)) => match f.int(payload, e) {
                Some(v) if f.signed => json_int(w, v)?,
                Some(v) => json_uint(w, v as u64 & mask(f.size))?,
                None => w.write_str("null")?,
            },
            (FieldKind::Array { .. } | FieldKind::DataLoc { .. } | FieldKind::RelLoc { .. }, Some(b))
                if f.type_name.contains("char") =>
            {
                let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
                json_str(w, &alloc::string::String::from_utf8_lossy(b.get(..end).unwrap_or(b)))?;
            }
            (k, Some(b)) => {
                let es = match k {
                    FieldKind::Array { elem_size, .. }
                    | FieldKind::DataLoc { elem_size }
                    | FieldKind::RelLoc { elem_size } => elem_size as usize,
                    FieldKind::Scalar => 1,
                };
                let es = if matches!(es, 1 | 2 | 4 | 8) { es } else { 1 };
                w.write_str("[")?;
                for (j, c) in b.chunks_exact(es).enumerate() {
                    if j > 0 {
                        w.write_str(",")?;
                    }
                    json_uint(w, e.uint(c, 0, es).unwrap_or(0))?;
                }
                w.write_str("]")?;
            }
        }
    }
    w.write_str("}}\n")
}

fn mask(size: u32) -> u64 {
    if size >= 8 {
        u64::MAX
    } else {
        (1u64 << (size * 8)) - 1
    }
}

/// `trace_hwlat_print` of kernel/trace/trace_output.c. ` count:` came with
/// the entry's `count` field (5.14), so it is printed where the format has
/// the field; ` nmi-total:` only where the kernel measures it (not with
/// CONFIG_GENERIC_SCHED_CLOCK, as on arm and arm64, where it stays 0).
fn write_hwlat<W: Write>(w: &mut W, ev: &EventFormat, rec: &[u8], e: Endian) -> fmt::Result {
    // The format lists `struct timespec64 timestamp` as its two members,
    // and on 32-bit arm (where a s64 is 8-aligned) leaves out the 4 bytes
    // of padding after `long tv_nsec`: the fields after it are 4 bytes
    // further on than it says. The record, longer than the format, shows
    // it (i386 aligns a s64 to 4 and has no padding).
    let nsec = ev.field("tv_nsec");
    let end = ev.fields.iter().map(|f| f.offset as usize + f.size as usize).max().unwrap_or(0);
    let pad = match nsec {
        Some(f) if f.size == 4 && rec.len() >= end + 4 => 4,
        _ => 0,
    };
    let v = |n: &str| {
        let f = ev.field(n)?;
        let mut l = f.loc();
        if nsec.is_some_and(|t| f.offset > t.offset) {
            l.offset += pad;
        }
        l.int(rec, e)
    };
    let v = |n: &str| v(n).unwrap_or(0);
    write!(
        w,
        "#{:<5} inner/outer(us): {:>4}/{:<5} ts:{}.{:09}",
        v("seqnum") as u32,
        v("duration") as u64,
        v("outer_duration") as u64,
        v("tv_sec"),
        v("tv_nsec")
    )?;
    if ev.field("count").is_some() {
        write!(w, " count:{}", v("count") as i32)?;
    }
    let (nmi, total) = (v("nmi_count") as u32, v("nmi_total_ts") as u64);
    if nmi != 0 {
        if total != 0 {
            write!(w, " nmi-total:{total}")?;
        }
        write!(w, " nmi-count:{nmi}")?;
    }
    w.write_char('\n')
}

#[cfg(test)]
mod tracer_entry_tests {
    use super::*;
    use crate::format::Endian;

    const HWLAT: &str = "name: hwlat\nID: 15\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:u64 duration;\toffset:8;\tsize:8;\tsigned:0;\n\
\tfield:u64 outer_duration;\toffset:16;\tsize:8;\tsigned:0;\n\
\tfield:u64 nmi_total_ts;\toffset:24;\tsize:8;\tsigned:0;\n\
\tfield:s64 tv_sec;\toffset:32;\tsize:8;\tsigned:1;\n\
\tfield:long tv_nsec;\toffset:40;\tsize:8;\tsigned:1;\n\
\tfield:unsigned int nmi_count;\toffset:48;\tsize:4;\tsigned:0;\n\
\tfield:unsigned int seqnum;\toffset:52;\tsize:4;\tsigned:0;\n\
\tfield:unsigned int count;\toffset:56;\tsize:4;\tsigned:0;\n\n\
print fmt: \"cnt:%u\", REC->seqnum\n";

    /// One hwlat record's body, as trace_hwlat_print writes it.
    fn body(format: &str, nmi: (u32, u64)) -> String {
        let mut t = EventTable::new();
        t.insert(EventFormat::parse(format, "ftrace", 8).unwrap());
        let mut rec = [0u8; 64];
        let mut put = |off: usize, v: &[u8]| rec[off..off + v.len()].copy_from_slice(v);
        put(0, &15u16.to_le_bytes());
        put(8, &12u64.to_le_bytes());
        put(16, &3u64.to_le_bytes());
        put(24, &nmi.1.to_le_bytes());
        put(32, &100u64.to_le_bytes());
        put(40, &5u64.to_le_bytes());
        put(48, &nmi.0.to_le_bytes());
        put(52, &7u32.to_le_bytes());
        put(56, &2u32.to_le_bytes());
        let mut r = Renderer::new(&t, Cmdlines::default(), Abi::new(Endian::Little, 8), true);
        let mut out = String::new();
        r.record(&mut out, 0, 1_000_000, &rec).unwrap();
        String::from(out.split_once(": ").unwrap().1)
    }

    #[test]
    fn hwlat_lines_are_the_kernels() {
        assert_eq!(body(HWLAT, (0, 0)), "#7     inner/outer(us):   12/3     ts:100.000000005 count:2\n");
        // NMIs: their time only where the kernel measured it (not 0).
        assert!(body(HWLAT, (1, 40)).ends_with(" count:2 nmi-total:40 nmi-count:1\n"));
        assert!(body(HWLAT, (2, 0)).ends_with(" count:2 nmi-count:2\n"));
        // Before 5.14 the entry has no count, and the line none either.
        let old = HWLAT.replace("\tfield:unsigned int count;\toffset:56;\tsize:4;\tsigned:0;\n", "");
        assert!(body(&old, (0, 0)).ends_with("ts:100.000000005\n"));
    }
}

#[cfg(test)]
mod memo_tests {
    use super::*;
    use crate::format::Endian;

    /// Two scalar fields, a fixed string and a symbolic table; one common
    /// field read by the print fmt (keys must then hold it too).
    const EV: &str = "name: ev\nID: 9\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:unsigned int vec;\toffset:8;\tsize:4;\tsigned:0;\n\
\tfield:char comm[16];\toffset:12;\tsize:16;\tsigned:0;\n\
\tfield:u64 t;\toffset:32;\tsize:8;\tsigned:0;\n\n\
print fmt: \"vec=%u [%s] comm=%s t=%llu\", REC->vec, __print_symbolic(REC->vec, { 0, \"HI\" }, { 1, \"TIMER\" }), REC->comm, REC->t\n";

    fn rec(vec: u32, comm: &str, t: u64, pid: i32) -> [u8; 40] {
        let mut r = [0u8; 40];
        r[..2].copy_from_slice(&9u16.to_le_bytes());
        r[4..8].copy_from_slice(&pid.to_le_bytes());
        r[8..12].copy_from_slice(&vec.to_le_bytes());
        r[12..12 + comm.len()].copy_from_slice(comm.as_bytes());
        r[32..40].copy_from_slice(&t.to_le_bytes());
        r
    }

    /// Every line of one renderer that has seen many payloads (repeats,
    /// slot collisions, an event that stops using the memo) is the line a
    /// fresh renderer makes of that record alone.
    #[test]
    fn remembered_texts_are_the_programs() {
        for (fmt, name) in [(EV.to_string(), "fields"), (EV.replace("REC->t\n", "REC->t + REC->common_pid\n"), "pid")] {
            let mut t = EventTable::new();
            t.insert(EventFormat::parse(&fmt, "irq", 8).unwrap());
            let abi = Abi::new(Endian::Little, 8);
            let mut one = Renderer::new(&t, Cmdlines::default(), abi, true);
            let mut x = 7u64;
            for i in 0..6000u64 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                // The first half repeats a few payloads; the second half
                // has a new value in each (the memo gives up on it).
                let v = if i < 3000 { x >> 62 } else { x >> 20 };
                let r = rec((v % 3) as u32, ["sh", "kworker/0:1", "a"][(v % 3) as usize], v, (x >> 60) as i32);
                let mut a = String::new();
                one.record(&mut a, 0, i * 1000, &r).unwrap();
                let mut b = String::new();
                Renderer::new(&t, Cmdlines::default(), abi, true).record(&mut b, 0, i * 1000, &r).unwrap();
                assert_eq!(a, b, "{name}: record {i}");
            }
        }
    }
}
