//! The function_graph renderer and its aggregations on arbitrary records:
//! the first byte picks the kernel layout (64-bit 6.1, 32-bit packed, a
//! newer one with `retval`), byte order and options; the rest is split into
//! records (one length byte each) fed in order, each with the following
//! record as its peeked successor. The same records go through the
//! kernel_stack counter (stacks) too.

use crate::abi::Endian;
use crate::format::HeaderPage;
use crate::graph::stats::{GraphStats, TopBy};
use crate::graph::{GraphOpts, GraphRenderer, IrqText, Outcome};
use crate::kallsyms::Kallsyms;
use crate::render::Cmdlines;
use crate::stacks::{write_folded, write_table, StackCounts};
use crate::Trace;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

fn ev(name: &str, id: u32, fields: &[(&str, u32, u32, u32)], fmt: &str) -> String {
    let mut t = format!("name: {name}\nID: {id}\nformat:\n{COMMON}");
    for (decl, off, size, signed) in fields {
        t.push_str(&format!("\tfield:{decl};\toffset:{off};\tsize:{size};\tsigned:{signed};\n"));
    }
    t.push_str(&format!("\nprint fmt: {fmt}\n"));
    t
}

/// The session of the layout `kind`, in byte order `e`.
fn trace(kind: u8, e: Endian) -> Trace {
    let long = if kind == 1 { 4 } else { 8 };
    let mut trace = Trace::new(
        HeaderPage::new(long, 4096),
        e,
        Kallsyms::parse(
            "0000000000000100 t gic_handle_irq\n0000000000000200 T foo\n0000000000000300 T bar [mod]\n".as_bytes(),
        ),
    );
    trace.cmdlines = Cmdlines::parse("1 sh\n2 a-very-long-name\n");
    let mut add = |text: String| trace.add_format("ftrace", &text).expect("format");
    let (l, u64a) = (long, if kind == 1 { 4 } else { 8 });
    let ent = "\"--> %ps (%d)\", (void *)REC->func, REC->depth";
    let ret = "\"<-- %ps (%d)\", (void *)REC->func, REC->depth";
    add(ev("funcgraph_entry", 11, &[("unsigned long func", 8, l, 0), ("int depth", 8 + l, 4, 1)], ent));
    match kind {
        2 => add(ev(
            "funcgraph_exit",
            10,
            &[
                ("unsigned long func", 8, 8, 0),
                ("unsigned long retval", 16, 8, 0),
                ("unsigned int depth", 24, 4, 0),
                ("unsigned int overrun", 28, 4, 0),
                ("unsigned long long calltime", 32, 8, 0),
                ("unsigned long long rettime", 40, 8, 0),
            ],
            ret,
        )),
        _ => add(ev(
            "funcgraph_exit",
            10,
            &[
                ("unsigned long func", 8, l, 0),
                ("int depth", 8 + l, 4, 1),
                ("unsigned int overrun", 12 + l, 4, 0),
                ("unsigned long long calltime", 16 + l, 8, 0),
                ("unsigned long long rettime", 16 + l + u64a.max(8), 8, 0),
            ],
            ret,
        )),
    };
    add(ev(
        "print",
        5,
        &[("unsigned long ip", 8, l, 0), ("char buf[]", 8 + l, 0, 0)],
        "\"%ps: %s\", (void *)REC->ip, REC->buf",
    ));
    add(ev(
        "function",
        1,
        &[("unsigned long ip", 8, l, 0), ("unsigned long parent_ip", 8 + l, l, 0)],
        "\" %ps <-- %ps\", (void *)REC->ip, (void *)REC->parent_ip",
    ));
    add(ev(
        "kernel_stack",
        12,
        &[("int size", 8, 4, 1), ("unsigned long caller[8]", 8 + l, 8 * l, 0)],
        "\"\\t=> %ps\\n\", (void *)REC->caller[0]",
    ));
    add(ev(
        "user_event",
        30,
        &[("int value", 8, 4, 1), ("__data_loc char[] name", 12, 4, 0)],
        "\"value=%d name=%s\", REC->value, __get_str(name)",
    ));
    trace
}

/// One input of the `graph` target.
pub fn graph(data: &[u8]) {
    let Some((&sel, mut rest)) = data.split_first() else { return };
    let e = if sel & 0x04 == 0 { Endian::Little } else { Endian::Big };
    let trace = trace(sel % 3, e);
    let long = trace.long_size();
    let Trace { events: table, symbols: syms, cmdlines: cmd, .. } = trace;
    let opts = GraphOpts {
        irqs: sel & 0x08 == 0,
        proc_: sel & 0x10 != 0,
        abstime: sel & 0x20 != 0,
        retval: sel & 0x40 != 0,
        latency: sel & 0x40 != 0,
        tail: sel & 0x80 != 0,
        overrun: sel & 0x80 != 0,
        ..GraphOpts::default()
    };
    let irq = if sel & 0x10 != 0 { IrqText::Range(0x100, 0x180) } else { IrqText::Fallback };
    let mut g = GraphRenderer::new(&table, &cmd, crate::abi::Abi::new(e, long), Some(&syms))
        .with_opts(opts)
        .with_irq_text(irq)
        .with_cpu_count(u32::from(sel));
    let mut stats = GraphStats::new(&table, crate::abi::Abi::new(e, long), sel & 1 == 0);
    let mut recs: Vec<(u32, &[u8])> = Vec::new();
    while let Some((&n, r)) = rest.split_first() {
        let n = usize::from(n & 0x3f).min(r.len());
        let cpu = u32::from(rest[0] >> 6);
        recs.push((cpu, &r[..n]));
        rest = &r[n..];
    }
    let mut stacks = StackCounts::new(&table, crate::abi::Abi::new(e, long));
    for (cpu, p) in &recs {
        if p.len() == 1 {
            stacks.lost(*cpu);
        }
        stacks.record(&table, *cpu, p);
    }
    let rows = stacks.rows(&table, Some(&syms));
    assert_eq!(rows.iter().map(|r| r.count).sum::<u64>(), stacks.total());
    let mut st = String::new();
    let _ = write_table(&mut st, &rows);
    let _ = write_folded(&mut st, &rows);
    let mut out = String::new();
    let mut skip = vec![false; recs.len()];
    for i in 0..recs.len() {
        if skip[i] {
            continue;
        }
        let (cpu, p) = recs[i];
        stats.record(p, &cmd);
        let nj = (i + 1..recs.len()).find(|&j| recs[j].0 == cpu && !skip[j]);
        let next = nj.map(|j| (0u64, recs[j].1));
        match g.record(&mut out, cpu, i as u64, p, next) {
            Ok(Outcome::SkipNext) => {
                let j = nj.expect("SkipNext without a next record");
                skip[j] = true;
                stats.record(recs[j].1, &cmd);
            }
            Ok(_) => {}
            Err(_) => panic!("String writes do not fail"),
        }
        assert!(out.len() < 1 << 24);
    }
    // The same records per CPU through render_streams, and per task
    // through record_in (slot = pid & 7, peeking that task's next record).
    let mut g2 = GraphRenderer::new(&table, &cmd, crate::abi::Abi::new(e, long), Some(&syms)).with_opts(opts);
    let mut streams: Vec<_> = (0..4u32)
        .map(|c| recs.iter().enumerate().filter(move |r| r.1 .0 == c).map(|(i, r)| (i as u64, r.1)).peekable())
        .collect();
    let mut out2 = String::new();
    let _ = crate::graph::render_streams(&mut g2, &mut out2, &mut streams, |w: &mut String, _, _, _| {
        w.push('\n');
        Ok(())
    });
    let slot_of = |p: &[u8]| u32::from(p.get(4).copied().unwrap_or(0) & 7);
    let mut g3 = GraphRenderer::new(&table, &cmd, crate::abi::Abi::new(e, long), Some(&syms)).with_opts(opts);
    let mut done = vec![false; recs.len()];
    for i in 0..recs.len() {
        if done[i] {
            continue;
        }
        let slot = slot_of(recs[i].1);
        let nj = (i + 1..recs.len()).find(|&j| !done[j] && slot_of(recs[j].1) == slot);
        if let Ok(Outcome::SkipNext) =
            g3.record_in(&mut out2, slot, recs[i].0, 0, recs[i].1, nj.map(|j| (0, recs[j].1)))
        {
            done[nj.expect("SkipNext without a next record")] = true;
        }
    }
    let folded = stats.folded(Some(&syms));
    let sum = folded.iter().fold(0u64, |a, x| a.saturating_add(x.1));
    assert_eq!(sum, stats.roots_total());
    let mut s = String::new();
    let _ = stats.write_top(&mut s, Some(&syms), 5, TopBy::Self_);
    let _ = stats.write_folded(&mut s, None);
}
