//! print-fmt bodies against the kernel's own `trace` text, on this machine:
//! enable batches of events, generate load, stop, read `trace` (the
//! kernel's rendering), then drain `per_cpu/cpuN/trace_pipe_raw`, decode the
//! pages, and render every record with [`Program`]. The text after the
//! timestamp (`name: body`) must match; the per-event mismatch table is
//! printed either way (`-- --nocapture`). Where the kernel's string
//! verifier prints an event's first `%s` empty (x86_64, 5.12 to 6.12, with
//! hash-ptr off as here: common::strverify), a body equal to ours with
//! that string left out matches.
//!
//! Needs root and a live tracefs; holds the shared tracefs lock and restores
//! everything it changed (Drop guard), also when an assertion fails.

use super::common;
use super::common::bodies::{self, Tally};

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use trbox::page::{decode, PageItem};
use trbox::printfmt::{Ctx, Program};

fn read_raw(root: &Path, cpu: u32, subbuf: usize) -> Vec<Vec<u8>> {
    let p = root.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
    let Ok(mut f) = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&p) else {
        return Vec::new();
    };
    let mut pages = Vec::new();
    loop {
        let mut buf = vec![0u8; subbuf];
        match f.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                buf.truncate(n);
                pages.push(buf);
            }
        }
    }
    pages
}

#[test]
fn bodies_equal_kernel_text() {
    let Some(root) = common::live_tracefs() else { return };
    if unsafe { libc::geteuid() } != 0 {
        common::skip("not root");
        return;
    }
    let _lock = common::TracefsLock::take();
    let before = common::snapshot(&root);
    // The running kernel's session: its version decides the syscall events' layout.
    let trace = trbox::sys::trace::open_tree(&trbox::sys::Tracefs::at(&root).unwrap()).unwrap();
    let (layout, long, endian) = (trace.layout, trace.long_size(), trace.endian);
    let ctx = Ctx { abi: trbox::abi::Abi::new(endian, long), syms: Some(&trace.symbols), strings: Some(&trace.printk) };
    let ncpu = (0..1024).take_while(|c| root.join(format!("per_cpu/cpu{c}")).is_dir()).count() as u32;

    let batches: &[&[&str]] = &[
        &["sched", "irq", "timer", "workqueue", "signal", "task", "irq_vectors", "power", "ftrace/print"],
        &["kmem", "net", "sock", "skb", "tcp", "block", "writeback", "rcu", "filemap", "ftrace/print"],
        &[
            "syscalls/sys_enter_openat",
            "syscalls/sys_exit_openat",
            "syscalls/sys_enter_read",
            "syscalls/sys_exit_read",
            "syscalls/sys_enter_write",
            "ext4",
            "jbd2",
            "mmap",
            "pagemap",
            "migrate",
            "ftrace/print",
        ],
    ];
    // x86_64 kernels 5.12 to 6.12 print the first `%s` of an event empty
    // with hash-ptr off, as here (common::strverify: the kernel's rule).
    let first = match common::strverify::live_kernel_empties_first_string() {
        true => common::strverify::events(trace.events.iter()),
        false => Default::default(),
    };
    let mut programs: HashMap<u32, Program> = HashMap::new();
    let mut per_event: BTreeMap<String, Tally> = BTreeMap::new();
    let mut lost = 0;
    for batch in batches {
        let mut g = common::Guard::new(&root);
        g.set("tracing_on", "0");
        let _ = std::fs::write(root.join("trace"), "");
        g.set("options/hash-ptr", "0");
        for s in batch.iter() {
            if s.starts_with("ftrace") {
                continue;
            }
            let rel = format!("events/{s}/enable");
            if root.join(&rel).exists() {
                g.set(&rel, "1");
            }
        }
        std::fs::write(root.join("tracing_on"), "1").unwrap();
        common::load();
        let _ = std::fs::write(root.join("trace_marker"), "printfmt live marker");
        std::fs::write(root.join("tracing_on"), "0").unwrap();
        let text = std::fs::read_to_string(root.join("trace")).unwrap_or_default();
        let mut ours = bodies::Lines::new();
        for cpu in 0..ncpu {
            for page in read_raw(&root, cpu, layout.subbuf_size()) {
                let Ok(items) = decode(&page, &layout, endian) else { continue };
                for it in items {
                    let rec = match it {
                        Ok(PageItem::Record(r)) => r,
                        Ok(PageItem::Lost { .. }) => {
                            lost += 1;
                            continue;
                        }
                        Err(_) => break,
                    };
                    let Some(id) = endian.uint(rec.payload, 0, 2) else { continue };
                    let id = id as u32;
                    let Some(ev) = trace.events.get(id) else { continue };
                    let prog = programs.entry(id).or_insert_with(|| Program::compile_with(ev, long, &trace.kernel));
                    let Some(s) = bodies::body(ev, prog, rec.payload, &ctx) else { continue };
                    ours.entry((cpu, format!("{}:{}", ev.system, ev.name))).or_default().push(s);
                }
            }
        }
        // Kernel lines, grouped the same way (by CPU and event); what is no
        // event's is a trace_marker line.
        let text = common::strverify::unglue(&text, &first);
        let kernel = bodies::kernel_lines(&text, trace.events.iter(), Some("ftrace:print"));
        bodies::tally(&kernel, &ours, &bodies::partial_events(&programs, &trace.events), &first, &mut per_event);
        drop(g);
    }
    common::assert_same_state(&before, &common::snapshot(&root));
    let total: usize = per_event.values().map(|t| t.total).sum();
    let bad: usize = per_event.values().map(|t| t.bad).sum();
    let ftotal: usize = per_event.values().filter(|t| !t.partial).map(|t| t.total).sum();
    let fbad: usize = per_event.values().filter(|t| !t.partial).map(|t| t.bad).sum();
    let cut: usize = per_event.values().map(|t| t.verifier).sum();
    if !first.is_empty() {
        println!("{cut} lines equal ours with the first %s left out, as this kernel's string verifier prints them");
    }
    println!("print-fmt bodies vs kernel text: {total} lines, {bad} differ ({:.3}% equal), {} event types, lost-event pages: {lost}", 100.0 * (total - bad) as f64 / total.max(1) as f64, per_event.len());
    println!(
        "  events whose print fmt compiles completely: {ftotal} lines, {fbad} differ ({:.3}% equal)",
        100.0 * (ftotal - fbad) as f64 / ftotal.max(1) as f64
    );
    println!("{:<44} {:>7} {:>7}", "event (* = has parts we cannot compute)", "lines", "differ");
    for (ev, t) in &per_event {
        if t.bad > 0 {
            println!("{:<44} {:>7} {:>7}", format!("{}{ev}", if t.partial { "*" } else { "" }), t.total, t.bad);
            if let Some((k, o)) = &t.example {
                println!("    kernel: {k}\n    ours:   {o}");
            }
        }
    }
    let clean: Vec<String> =
        per_event.iter().filter(|(_, t)| t.bad == 0).map(|(e, t)| format!("{e}({})", t.total)).collect();
    println!("identical: {}", clean.join(" "));
    assert!(total > 100, "too few events to judge: {total}");
    assert!(fbad * 1000 <= ftotal, "more than 0.1% of bodies of completely compiled events differ");
}
