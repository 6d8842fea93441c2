//! The line prefix of the kernel's `trace` file: comm-pid, CPU, latency
//! flags and timestamp, exactly as kernel/trace/trace_output.c prints them
//! (`trace_print_context`, `trace_print_lat_fmt`, `trace_print_time`).

use alloc::vec::Vec;
use core::fmt::{self, Write};

use super::lat_flags::lat_flags;
use crate::kernel::LatColumns;
use crate::printfmt::digits::{StackBuf, LINE};

/// Whether the clock counts nanoseconds (the kernel's `in_ns`): counter,
/// uptime, x86-tsc and ppc-tb are raw counts printed as integers.
pub(crate) fn clock_in_ns(clock: &str) -> bool {
    !matches!(clock, "counter" | "uptime" | "x86-tsc" | "ppc-tb")
}

/// The timestamp column with its leading space: ` %5lu.%06lu` for clocks in
/// nanoseconds (rounded to the microsecond like `ns2usecs`), ` %12llu` for
/// counters.
pub(crate) fn write_timestamp<W: Write + ?Sized>(w: &mut W, ts: u64, in_ns: bool) -> fmt::Result {
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
pub(super) fn push_comm_pid<const N: usize>(b: &mut StackBuf<N>, comm: &str, pid: i32) {
    b.fill(b' ', 16usize.saturating_sub(comm.len()));
    b.push_str(comm);
    push_pid(b, pid);
}

/// `-%-7d`
pub(super) fn push_pid<const N: usize>(b: &mut StackBuf<N>, pid: i32) {
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
pub(super) struct Repeats {
    /// ` [CPU] flags` by (cpu, flags, preempt), direct-mapped.
    lat: Vec<(u64, Piece)>,
    /// The whole part of the last timestamp, and its text.
    whole: (u64, Piece),
    in_ns: bool,
    /// The latency columns; `None` with the `irq-info` option off.
    pub(super) cols: Option<LatColumns>,
}

/// Entries of [`Repeats::lat`] (a power of two).
const LATS: usize = 64;

impl Repeats {
    pub(super) fn new(in_ns: bool) -> Self {
        Repeats {
            lat: alloc::vec![(u64::MAX, Piece::new()); LATS],
            whole: (0, ts_whole(0, in_ns)),
            in_ns,
            cols: Some(LatColumns::Five),
        }
    }

    /// Change the latency columns (forgets the kept ones).
    pub(super) fn set_cols(&mut self, cols: Option<LatColumns>) {
        self.cols = cols;
        self.lat.iter_mut().for_each(|e| e.0 = u64::MAX);
    }

    /// The columns after comm-pid, up to and including the `": "`.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push<const N: usize>(
        &mut self,
        b: &mut StackBuf<N>,
        cpu: u32,
        flags: u8,
        preempt: u8,
        lazy: u8,
        ts: u64,
    ) {
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
#[cfg(test)]
pub(crate) fn write_prefix<W: Write + ?Sized>(
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
pub(super) const COMM_MAX: usize = 64;
/// Room for the comm-pid column of such a comm.
pub(super) const COMM_COL: usize = COMM_MAX + 16;
/// The line buffer: comm, pid, CPU, flags and a 20-digit timestamp, an
/// event name, and the body as far as it fits.
pub(super) const PREFIX: usize = LINE;

/// `CPU:N [LOST M EVENTS]`, or `[LOST EVENTS]` when the count is unknown.
pub(crate) fn write_lost<W: Write + ?Sized>(w: &mut W, cpu: u32, count: Option<u64>) -> fmt::Result {
    match count {
        Some(n) => writeln!(w, "CPU:{cpu} [LOST {n} EVENTS]"),
        None => writeln!(w, "CPU:{cpu} [LOST EVENTS]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;

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
