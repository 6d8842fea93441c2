//! print-fmt bodies against the kernel's own `trace` text, on this machine:
//! enable batches of events, generate load, stop, read `trace` (the
//! kernel's rendering), then drain `per_cpu/cpuN/trace_pipe_raw`, decode the
//! pages, and render every record with [`Program`]. The text after the
//! timestamp (`name: body`) must match; the per-event mismatch table is
//! printed either way (`-- --nocapture`).
//!
//! Needs root and a live tracefs; holds the shared tracefs lock and restores
//! everything it changed (Drop guard), also when an assertion fails.

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use trbox::format::{Endian, EventFormat, HeaderPage};
use trbox::kallsyms::Kallsyms;
use trbox::page::{decode, Item, PageLayout};
use trbox::printfmt::{Ctx, Program};
use trbox::printk::PrintkFormats;

/// The running kernel's version (the syscall events' layout depends on it).
struct Running;
impl trbox::printfmt::KernelInfo for Running {
    fn kernel_version(&self) -> Option<(u32, u32)> {
        trbox::ctl::kernel_version(&std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?)
    }
}

fn load(root: &Path) {
    let dir = std::env::temp_dir().join(format!("trbox-pf-load-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    for i in 0..10 {
        let f = dir.join(format!("f{i}"));
        let _ = std::fs::write(&f, vec![i as u8; 4096]);
        let _ = std::fs::read(&f);
    }
    let _ = Command::new("sh")
        .args(["-c", "ls /proc/self/ >/dev/null; echo x | cat >/dev/null; sleep 0.02; kill -0 $$"])
        .status();
    if let Ok(l) = std::net::TcpListener::bind("127.0.0.1:0") {
        if let Ok(a) = l.local_addr() {
            if let Ok(mut c) = std::net::TcpStream::connect(a) {
                use std::io::Write;
                let _ = c.write_all(b"hello");
                if let Ok((mut s, _)) = l.accept() {
                    let mut b = [0u8; 5];
                    let _ = s.read(&mut b);
                }
            }
        }
    }
    let _ = std::fs::write(root.join("trace_marker"), "printfmt live marker");
    let _ = Command::new("sync").status();
    let _ = std::fs::remove_dir_all(&dir);
}

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

#[derive(Default)]
struct Tally {
    total: usize,
    bad: usize,
    example: Option<(String, String)>,
    /// The program has parts it cannot compute (kernel variables, enum
    /// names the format file leaves unexpanded).
    partial: bool,
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
    let hp_text = std::fs::read_to_string(root.join("events/header_page")).unwrap();
    let (layout, long) = match HeaderPage::parse(&hp_text) {
        Ok(hp) => (PageLayout::from(&hp), hp.long_size() as u8),
        Err(_) => header_page_fallback(&hp_text),
    };
    let endian = if cfg!(target_endian = "big") { Endian::Big } else { Endian::Little };
    let ks = Kallsyms::parse(&std::fs::read_to_string("/proc/kallsyms").unwrap_or_default());
    let pk = PrintkFormats::parse(&std::fs::read_to_string(root.join("printk_formats")).unwrap_or_default());
    let ctx = Ctx { endian, long_size: long, syms: Some(&ks), strings: Some(&pk) };
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
    let ids = format_paths(&root);
    let mut formats: HashMap<u32, EventFormat> = HashMap::new();
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
        load(&root);
        std::fs::write(root.join("tracing_on"), "0").unwrap();
        let text = std::fs::read_to_string(root.join("trace")).unwrap_or_default();
        let mut ours: HashMap<(u32, String), Vec<String>> = HashMap::new();
        for cpu in 0..ncpu {
            for page in read_raw(&root, cpu, layout.subbuf_size()) {
                let Ok(items) = decode(&page, &layout, endian) else { continue };
                for it in items {
                    let rec = match it {
                        Ok(Item::Record(r)) => r,
                        Ok(Item::Lost { .. }) => {
                            lost += 1;
                            continue;
                        }
                        Err(_) => break,
                    };
                    let Some(id) = endian.uint(rec.payload, 0, 2) else { continue };
                    let id = id as u32;
                    if let std::collections::hash_map::Entry::Vacant(v) = formats.entry(id) {
                        if let Some(f) = ids.get(&id).and_then(|(sys, p)| {
                            EventFormat::parse(&std::fs::read_to_string(p).ok()?, sys, u32::from(long)).ok()
                        }) {
                            v.insert(f);
                        }
                    }
                    let Some(ev) = formats.get(&id) else { continue };
                    let mut s = String::new();
                    if ev.system == "ftrace" && !matches!(ev.name.as_str(), "print" | "bprint" | "bputs") {
                        continue;
                    }
                    let prog = programs.entry(id).or_insert_with(|| Program::compile_with(ev, long, &Running));
                    if ev.system != "ftrace" && prog.name_prefix() {
                        s.push_str(&ev.name);
                        s.push_str(": ");
                    }
                    prog.render(&mut s, rec.payload, &ctx).unwrap();
                    let s = s.strip_suffix('\n').unwrap_or(&s).to_string();
                    let key_name = format!("{}:{}", ev.system, ev.name);
                    ours.entry((cpu, key_name)).or_default().push(s);
                }
            }
        }
        // Kernel lines, grouped the same way (by CPU and event).
        let names: HashMap<String, String> = formats
            .values()
            .filter(|f| f.system != "ftrace")
            .map(|f| (f.name.clone(), format!("{}:{}", f.system, f.name)))
            .collect();
        let mut kernel: HashMap<(u32, String), Vec<String>> = HashMap::new();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((cpu, rest)) = common::trace_text::split_line(line) else { continue };
            let name = rest.split(": ").next().unwrap_or("");
            let key = match names.get(name) {
                Some(k) => k.clone(),
                None => match rest.strip_prefix("sys_").and_then(|r| r.find(['(', ' ']).map(|n| (r, n))) {
                    // The syscall tracer's own lines.
                    Some((r, n)) if r[n..].starts_with('(') => format!("syscalls:sys_enter_{}", &r[..n]),
                    Some((r, n)) if r[n..].starts_with(" -> ") => format!("syscalls:sys_exit_{}", &r[..n]),
                    _ => "ftrace:print".to_string(),
                },
            };
            kernel.entry((cpu, key)).or_default().push(rest.to_string());
        }
        let partial: std::collections::HashSet<String> = programs
            .iter()
            .filter(|(_, p)| !p.unknown_parts().is_empty() || p.is_fallback())
            .filter_map(|(id, _)| formats.get(id))
            .map(|f| format!("{}:{}", f.system, f.name))
            .collect();
        for ((cpu, ev), klines) in &kernel {
            let t = per_event.entry(ev.clone()).or_default();
            t.partial |= partial.contains(ev);
            let empty = Vec::new();
            let o = ours.get(&(*cpu, ev.clone())).unwrap_or(&empty);
            let mut pool: HashMap<&str, usize> = HashMap::new();
            for s in o {
                *pool.entry(s.as_str()).or_default() += 1;
            }
            for (i, k) in klines.iter().enumerate() {
                t.total += 1;
                match pool.get_mut(k.as_str()) {
                    Some(n) if *n > 0 => *n -= 1,
                    _ => {
                        t.bad += 1;
                        if t.example.is_none() {
                            t.example = Some((k.clone(), o.get(i).cloned().unwrap_or_else(|| "<no record>".into())));
                        }
                    }
                }
            }
        }
        drop(g);
    }
    common::assert_same_state(&before, &common::snapshot(&root));
    let total: usize = per_event.values().map(|t| t.total).sum();
    let bad: usize = per_event.values().map(|t| t.bad).sum();
    let ftotal: usize = per_event.values().filter(|t| !t.partial).map(|t| t.total).sum();
    let fbad: usize = per_event.values().filter(|t| !t.partial).map(|t| t.bad).sum();
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

/// `offset:`/`size:` of the `commit` and `data` lines, for format.rs
/// versions whose header_page parser rejects this kernel's text.
fn header_page_fallback(t: &str) -> (PageLayout, u8) {
    let num = |line: &str, key: &str| -> Option<u32> { line.split(key).nth(1)?.split(';').next()?.trim().parse().ok() };
    let find =
        |name: &str| t.lines().find(|l| l.contains(name)).and_then(|l| Some((num(l, "offset:")?, num(l, "size:")?)));
    let (_, commit) = find(" commit;").unwrap_or((8, 8));
    let (doff, dsize) = find(" data;").unwrap_or((16, 4080));
    (PageLayout::new(commit, doff + dsize), commit as u8)
}

/// Event id → (system, format file path), for every event.
fn format_paths(root: &Path) -> HashMap<u32, (String, PathBuf)> {
    let mut m = HashMap::new();
    let Ok(systems) = std::fs::read_dir(root.join("events")) else { return m };
    for sys in systems.flatten() {
        let Ok(evs) = std::fs::read_dir(sys.path()) else { continue };
        for ev in evs.flatten() {
            let Ok(t) = std::fs::read_to_string(ev.path().join("id")) else { continue };
            if let Ok(id) = t.trim().parse() {
                m.insert(id, (sys.file_name().to_string_lossy().into_owned(), ev.path().join("format")));
            }
        }
    }
    m
}
