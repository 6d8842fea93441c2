//! The function_graph layout's columns as trace_functions_graph.c prints
//! them: the duration with its overhead mark (`print_graph_duration`),
//! the process column (`print_graph_proc`) and the header lines
//! (`print_graph_headers_flags`).

use core::fmt::{self, Write};

use super::GraphOpts;

/// The overhead mark for a duration in ns (`trace_find_mark`): strictly
/// greater than 1 s `$`, 100 ms `@`, 10 ms `*`, 1 ms `#`, 100 µs `!`,
/// 10 µs `+`, else a space.
pub(crate) fn overhead_mark(ns: u64) -> char {
    const MARKS: [(u64, char); 6] =
        [(1_000_000_000, '$'), (100_000_000, '@'), (10_000_000, '*'), (1_000_000, '#'), (100_000, '!'), (10_000, '+')];
    MARKS.iter().find(|m| ns > m.0).map_or(' ', |m| m.1)
}

/// `trace_print_graph_duration`: microseconds with up to three decimals, at
/// most 7 digits in all, `" us "` and padding to the column width.
/// `long_size` 4 truncates the microseconds to 32 bits like a 32-bit
/// kernel's `%lu` of an `unsigned long`.
pub(crate) fn write_duration<W: Write + ?Sized>(w: &mut W, ns: u64, long_size: u32) -> fmt::Result {
    let mut us = ns / 1000;
    let rem = ns % 1000;
    if long_size == 4 {
        us &= 0xffff_ffff;
    }
    let mut digits = [0u8; 20];
    let mut n = 0;
    let mut v = us;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 || n == digits.len() {
            break;
        }
    }
    for d in digits[..n].iter().rev() {
        w.write_char(char::from(*d))?;
    }
    let mut len = n;
    if len < 7 {
        // snprintf(nsecs_str, min(5, 8 - len), "%03lu", rem): at most
        // 8 - len - 1 of the three digits.
        let keep = (8 - len - 1).min(4);
        let r = [b'0' + (rem / 100) as u8, b'0' + (rem / 10 % 10) as u8, b'0' + (rem % 10) as u8];
        let shown = keep.min(3);
        w.write_char('.')?;
        for d in &r[..shown] {
            w.write_char(char::from(*d))?;
        }
        len += shown + 1;
    }
    w.write_str(" us ")?;
    for _ in len..8 {
        w.write_char(' ')?;
    }
    Ok(())
}

/// The whole duration column of a line with a duration (`print_graph_duration`
/// with data): mark, space, duration, `"|  "`.
pub(crate) fn write_duration_column<W: Write + ?Sized>(
    w: &mut W,
    ns: u64,
    overhead: bool,
    long_size: u32,
) -> fmt::Result {
    if overhead {
        w.write_char(overhead_mark(ns))?;
        w.write_char(' ')?;
    } else {
        w.write_str("  ")?;
    }
    write_duration(w, ns, long_size)?;
    w.write_str("|  ")
}

/// `print_graph_proc`: `comm-pid` (comm cut to 7 bytes) centred in 14
/// columns.
pub(crate) fn write_proc<W: Write + ?Sized>(w: &mut W, comm: &str, pid: i32) -> fmt::Result {
    let mut cut = comm.len().min(7);
    while !comm.is_char_boundary(cut) {
        cut -= 1;
    }
    let comm = comm.get(..cut).unwrap_or("");
    let mut pid_buf = heapless::String::<12>::new();
    let _ = write!(pid_buf, "{pid}");
    let len = comm.len() + pid_buf.len() + 1;
    let spaces = 14usize.saturating_sub(len);
    for _ in 0..spaces / 2 {
        w.write_char(' ')?;
    }
    write!(w, "{comm}-{pid_buf}")?;
    for _ in 0..spaces - spaces / 2 {
        w.write_char(' ')?;
    }
    Ok(())
}

/// The two `#` header lines the kernel prints above a graph (after
/// `# tracer: function_graph` and `#`), for these options.
pub(crate) fn write_header<W: Write + ?Sized>(w: &mut W, o: &GraphOpts) -> fmt::Result {
    if !o.context_info {
        return Ok(());
    }
    if o.latency {
        let size = if o.abstime { 16 } else { 0 } + if o.cpu { 4 } else { 0 } + if o.proc_ { 17 } else { 0 };
        const SP: &str = "                                     ";
        let sp = SP.get(..size).unwrap_or(SP);
        writeln!(w, "#{sp}  _-----=> irqs-off        ")?;
        writeln!(w, "#{sp} / _----=> need-resched    ")?;
        writeln!(w, "#{sp}| / _---=> hardirq/softirq ")?;
        writeln!(w, "#{sp}|| / _--=> preempt-depth   ")?;
        writeln!(w, "#{sp}||| /                      ")?;
    }
    w.write_char('#')?;
    if o.abstime {
        w.write_str("     TIME       ")?;
    }
    if o.cpu {
        w.write_str(" CPU")?;
    }
    if o.proc_ {
        w.write_str("  TASK/PID       ")?;
    }
    if o.latency {
        w.write_str("||||   ")?;
    }
    if o.duration {
        w.write_str("  DURATION   ")?;
    }
    w.write_str("               FUNCTION CALLS\n#")?;
    if o.abstime {
        w.write_str("      |         ")?;
    }
    if o.cpu {
        w.write_str(" |  ")?;
    }
    if o.proc_ {
        w.write_str("   |    |        ")?;
    }
    if o.latency {
        w.write_str("||||   ")?;
    }
    if o.duration {
        w.write_str("   |   |      ")?;
    }
    w.write_str("               |   |   |   |\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;

    fn dur(ns: u64) -> String {
        let mut s = String::new();
        write_duration_column(&mut s, ns, true, 8).unwrap();
        s
    }

    #[test]
    fn durations_like_the_kernel() {
        assert_eq!(dur(2048), "  2.048 us    |  ");
        assert_eq!(dur(19_824), "+ 19.824 us   |  ");
        assert_eq!(dur(212_144), "! 212.144 us  |  ");
        assert_eq!(dur(8_448_480), "# 8448.480 us |  ");
        assert_eq!(dur(14_177_550), "* 14177.55 us |  ");
        assert_eq!(dur(28_554_809), "* 28554.80 us |  ");
        assert_eq!(dur(123_456_789), "@ 123456.7 us |  ");
        assert_eq!(dur(1_234_567_890), "$ 1234567 us  |  ");
        assert_eq!(dur(12_345_678_901), "$ 12345678 us |  ");
        assert_eq!(dur(0), "  0.000 us    |  ");
        assert_eq!(dur(999), "  0.999 us    |  ");
        // Marks are strict: exactly 10 µs is not marked.
        assert_eq!(dur(10_000), "  10.000 us   |  ");
        assert_eq!(dur(10_001), "+ 10.001 us   |  ");
        let mut s = String::new();
        write_duration_column(&mut s, 2048, false, 8).unwrap();
        assert_eq!(s, "  2.048 us    |  ");
        // 32-bit kernels print the µs as a 32-bit unsigned long.
        let mut s = String::new();
        write_duration(&mut s, (1u64 << 32) * 1000 + 5_000, 4).unwrap();
        assert_eq!(s, "5.000 us    ");
    }

    #[test]
    fn marks() {
        let m = [
            (0, ' '),
            (10_000, ' '),
            (10_001, '+'),
            (100_001, '!'),
            (1_000_001, '#'),
            (10_000_001, '*'),
            (100_000_001, '@'),
            (1_000_000_001, '$'),
            (u64::MAX, '$'),
        ];
        for (ns, c) in m {
            assert_eq!(overhead_mark(ns), c, "{ns}");
        }
    }

    #[test]
    fn proc_column() {
        let p = |c: &str, pid| {
            let mut s = String::new();
            write_proc(&mut s, c, pid).unwrap();
            s
        };
        assert_eq!(p("busybox", 553), " busybox-553  ");
        assert_eq!(p("sh", 100), "    sh-100    ");
        assert_eq!(p("rcu_sched", 14), "  rcu_sch-14  ");
        assert_eq!(p("<idle>", 0), "   <idle>-0   ");
        assert_eq!(p("kworker/0:1", 16), "  kworker-16  ");
        assert_eq!(p("abcdefg", 1234567), "abcdefg-1234567");
    }

    #[test]
    fn header_default() {
        let mut s = String::new();
        write_header(&mut s, &GraphOpts::default()).unwrap();
        assert_eq!(
            s,
            "# CPU  DURATION                  FUNCTION CALLS\n# |     |   |                     |   |   |   |\n"
        );
    }
}
