//! Rendering cost per record of the print-fmt programs for a few common
//! events: `cargo bench --bench printfmt_speed`.

use std::fmt::Write;
use std::time::Instant;

use trbox::abi::Endian;
use trbox::format::EventFormat;
use trbox::kallsyms::Kallsyms;
use trbox::printfmt::{Ctx, Program};

fn load(name: &str) -> EventFormat {
    let p = format!("{}/tests/data/printfmt/formats/{name}.format", env!("CARGO_MANIFEST_DIR"));
    EventFormat::parse(&std::fs::read_to_string(p).unwrap(), name.split('_').next().unwrap(), 8).unwrap()
}

fn main() {
    let ks = Kallsyms::parse(
        "ffffffff81000000 T _stext\nffffffff81100000 T process_timeout\nffffffff82000000 T _etext\n".as_bytes(),
    );
    let ctx = Ctx { abi: trbox::abi::Abi::new(Endian::Little, 8), syms: Some(&ks), strings: None };
    for name in
        ["sched_sched_switch", "timer_timer_start", "kmem_kmalloc", "irq_softirq_entry", "sock_inet_sock_set_state"]
    {
        let ev = load(name);
        let p = Program::compile(&ev, 8);
        let mut rec = vec![0u8; 160];
        for (i, b) in rec.iter_mut().enumerate().skip(8) {
            *b = (i * 7) as u8 & 0x3f | 0x40;
        }
        rec[16..24].copy_from_slice(&0xffffffff81100010u64.to_le_bytes());
        let mut out = String::with_capacity(512);
        let n = 100_000;
        let t = Instant::now();
        let mut bytes = 0;
        for _ in 0..n {
            out.clear();
            p.render(&mut out, &rec, &ctx).unwrap();
            bytes += out.len();
        }
        let dt = t.elapsed();
        let mut line = String::new();
        let _ = write!(
            line,
            "{name:<28} {:>7.0} ns/record {:>6.1} M records/s  ({} B/line)",
            dt.as_nanos() as f64 / n as f64,
            n as f64 / dt.as_secs_f64() / 1e6,
            bytes / n
        );
        println!("{line}");
    }
}
