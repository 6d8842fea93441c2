//! tr-lat's accumulators on arbitrary records: the real formats of the
//! events each mode reads (sched, irq, raw_syscalls, ftrace/timerlat and
//! ftrace/osnoise, from a 6.18 x86_64 kernel) or an arbitrary format text,
//! then records, losses and the printers (table, histogram, JSON).

use crate::abi::Endian;
use crate::format::HeaderPage;
use crate::lat::{write_hists, write_json, write_sample, write_tables, Lat, Mode, Unit};
use crate::render::Cmdlines;
use crate::Trace;
use alloc::format;
use alloc::string::String;

const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

const EVENTS: &[(&str, &str, u32, &str)] = &[
    ("sched", "sched_waking", 1, "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n"),
    ("sched", "sched_switch", 2, "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n"),
    ("irq", "irq_handler_entry", 3, "\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;\n\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;\n"),
    ("irq", "irq_handler_exit", 4, "\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;\n\tfield:int ret;\toffset:12;\tsize:4;\tsigned:1;\n"),
    ("irq", "softirq_entry", 5, "\tfield:unsigned int vec;\toffset:8;\tsize:4;\tsigned:0;\n"),
    ("irq", "softirq_exit", 6, "\tfield:unsigned int vec;\toffset:8;\tsize:4;\tsigned:0;\n"),
    ("raw_syscalls", "sys_enter", 7, "\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n\tfield:unsigned long args[6];\toffset:16;\tsize:48;\tsigned:0;\n"),
    ("raw_syscalls", "sys_exit", 8, "\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n\tfield:long ret;\toffset:16;\tsize:8;\tsigned:1;\n"),
    ("ftrace", "timerlat", 9, "\tfield:unsigned int seqnum;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:int context;\toffset:12;\tsize:4;\tsigned:1;\n\tfield:u64 timer_latency;\toffset:16;\tsize:8;\tsigned:0;\n"),
    ("ftrace", "osnoise", 10, "\tfield:u64 noise;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:u64 runtime;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:u64 max_sample;\toffset:24;\tsize:8;\tsigned:0;\n\tfield:unsigned int hw_count;\toffset:32;\tsize:4;\tsigned:0;\n\tfield:unsigned int nmi_count;\toffset:36;\tsize:4;\tsigned:0;\n\tfield:unsigned int irq_count;\toffset:40;\tsize:4;\tsigned:0;\n\tfield:unsigned int softirq_count;\toffset:44;\tsize:4;\tsigned:0;\n\tfield:unsigned int thread_count;\toffset:48;\tsize:4;\tsigned:0;\n"),
];

/// One input of the `lat` target.
pub fn lat(data: &[u8]) {
    // Byte 0: mode, endian, --rt, ns, a pid filter; byte 1: histogram width and entries;
    // then, when bit 7 of byte 0 is set, a format text up to a NUL that
    // replaces the first event of the mode; then records: [cpu, len, ts
    // delta, bytes...] (len 0: a loss).
    let [sel, h, rest @ ..] = data else { return };
    let mode =
        [Mode::Wakeup, Mode::Irq, Mode::Syscall, Mode::Timerlat, Mode::Osnoise, Mode::Hwlat][usize::from(sel & 7) % 6];
    let e = if sel & 8 == 0 { Endian::Little } else { Endian::Big };
    let mut trace = Trace::new(HeaderPage::new(8, 4096), e, ());
    for (sys, name, id, fields) in EVENTS {
        let text = format!("name: {name}\nID: {id}\nformat:\n{COMMON}{fields}\nprint fmt: \"x\"\n");
        let _ = trace.add_format(sys, &text);
    }
    let mut rest = rest;
    if sel & 0x80 != 0 {
        let i = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        let sys = match mode {
            Mode::Wakeup => "sched",
            Mode::Irq => "irq",
            Mode::Syscall => "raw_syscalls",
            _ => "ftrace",
        };
        let _ = trace.add_format(sys, &String::from_utf8_lossy(&rest[..i]));
        rest = rest.get(i + 1..).unwrap_or(&[]);
    }
    let hist = (h & 1 != 0).then(|| (u64::from(h >> 4), usize::from(h & 0x0e) * 3));
    let Ok(mut lat) = Lat::new(mode, &trace.events, e, sel & 0x10 != 0, hist) else {
        return;
    };
    if sel & 0x40 != 0 {
        lat.only(&[1, 2, 0x100]);
    }
    let mut ts = 0u64;
    let mut out = String::new();
    while let [cpu, len, dt, more @ ..] = rest {
        ts = ts.wrapping_add(u64::from(*dt) * 97);
        if *len == 0 {
            lat.lose();
            rest = more;
            continue;
        }
        let n = usize::from(*len).min(more.len());
        if let Some(s) = lat.record(u32::from(*cpu), ts, &more[..n]) {
            out.clear();
            let _ = write_sample(&mut out, &s);
        }
        rest = &more[n..];
    }
    let unit = Unit { ns: sel & 0x20 != 0 };
    let c = Cmdlines::default();
    out.clear();
    let _ = write_tables(&mut out, &lat, unit, &c, (sel & 0x40 != 0).then_some(3));
    let _ = write_hists(&mut out, &lat, unit, &c);
    let _ = write_json(&mut out, &lat, unit, &c);
    let _ = lat.measured();
}
