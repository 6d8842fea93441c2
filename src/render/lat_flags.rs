//! The latency columns of the line prefix (`d..2.`), as
//! kernel/trace/trace_output.c's `trace_print_lat_fmt` writes them.

use core::fmt::{self, Write};

use crate::kernel::LatColumns;

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
pub(crate) fn write_lat_flags<W: Write + ?Sized>(
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
pub(super) fn lat_flags(flags: u8, preempt: u8, lazy: u8, cols: LatColumns) -> ([u8; 8], usize) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
