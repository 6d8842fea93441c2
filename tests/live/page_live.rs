//! Live test of the page decoder against this machine's kernel: enable a few
//! events, generate load, stop tracing, read the kernel's own `trace` text,
//! then consume every `per_cpu/cpuN/trace_pipe_raw` page and decode it. The
//! decoded records must match the `trace` lines one for one (CPU, timestamp,
//! event name), and every `common_type` must be a known event.
//!
//! Uses the top-level buffer when it is empty, else a private instance (so
//! other people's unread data is never thrown away). Everything it changes is
//! put back by a guard, also when an assertion fails.
//!
//! `TRBOX_SAVE_PAGES=DIR` also writes a tracefs-shaped copy to DIR: the raw
//! pages as `per_cpu/cpuN/trace_pipe_raw`, `events/header_*`, the formats,
//! saved_cmdlines, printk_formats, trace_clock, current_tracer, and the
//! kernel's own text as `trace` (how tests/data/pages/ was made).

use super::common;

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use trbox::abi::Endian;
use trbox::merge::merge;
use trbox::page::{Page, PageItem};

const EVENTS: &[&str] = &[
    "sched/sched_switch",
    "sched/sched_wakeup",
    "sched/sched_wakeup_new",
    "sched/sched_process_fork",
    "sched/sched_process_exec",
    "sched/sched_process_exit",
    "task/task_newtask",
    "task/task_rename",
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "signal/signal_generate",
];

/// Read a whole tracefs text file (the std layer's reader: one large first
/// read, since header_page answers EOF after a short one).
fn read_text(p: &Path) -> String {
    trbox::sys::read_text(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn write(p: &Path, v: &str) -> std::io::Result<()> {
    OpenOptions::new().write(true).truncate(true).open(p)?.write_all(v.as_bytes())
}

/// Puts back what the test changed, in reverse, on drop.
struct Guard {
    dir: PathBuf,
    /// An instance we created (removed on drop).
    instance: Option<PathBuf>,
    enabled: Vec<PathBuf>,
    tracing_on: Option<String>,
    filled: bool,
}

impl Drop for Guard {
    fn drop(&mut self) {
        for p in self.enabled.iter().rev() {
            if let Err(e) = write(p, "0") {
                eprintln!("restore {}: {e}", p.display());
            }
        }
        if let Some(v) = &self.tracing_on {
            if let Err(e) = write(&self.dir.join("tracing_on"), v) {
                eprintln!("restore tracing_on: {e}");
            }
        }
        if self.filled {
            // Truncating `trace` clears the buffer.
            if let Err(e) = write(&self.dir.join("trace"), "") {
                eprintln!("clear trace: {e}");
            }
        }
        if let Some(i) = self.instance.take() {
            if let Err(e) = fs::remove_dir(&i) {
                eprintln!("remove instance {}: {e}", i.display());
            }
        }
    }
}

/// Every page of one CPU, read with exactly sub-buffer-sized non-blocking reads.
fn read_pages(path: &Path, subbuf: usize) -> Vec<Vec<u8>> {
    let mut f = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).unwrap();
    let mut pages = Vec::new();
    loop {
        let mut buf = vec![0u8; subbuf];
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                assert_eq!(n, subbuf, "{}: short read", path.display());
                pages.push(buf);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => panic!("{}: {e}", path.display()),
        }
    }
    pages
}

#[test]
fn live_pages_match_trace_file() {
    let _lock = common::TracefsLock::take();
    let Some(root) = common::live_tracefs() else { return };
    if unsafe { libc::geteuid() } != 0 {
        common::skip("not root");
        return;
    }
    let before = common::snapshot(&root);
    let save = std::env::var_os("TRBOX_SAVE_PAGES").map(PathBuf::from);

    // The top level when its buffer is empty, else a private instance.
    let top_empty = read_text(&root.join("trace")).lines().all(|l| l.starts_with('#'));
    let mut guard = Guard { dir: root.clone(), instance: None, enabled: Vec::new(), tracing_on: None, filled: false };
    if !top_empty {
        let inst = root.join("instances").join(format!("trbox-page-live-{}", std::process::id()));
        fs::create_dir(&inst).expect("create instance");
        guard.instance = Some(inst.clone());
        guard.dir = inst;
        eprintln!("top-level buffer holds data: using {}", guard.dir.display());
    }
    let dir = guard.dir.clone();

    let trace = trbox::sys::trace::open_tree(&trbox::sys::Tracefs::at(&root).unwrap()).expect("session");
    let (layout, table) = (trace.layout, &trace.events);
    let subbuf = layout.subbuf_size();
    let mut formats = Vec::new();
    for ev in EVENTS {
        let p = root.join("events").join(ev).join("format");
        if !p.exists() {
            continue;
        }
        let text = read_text(&p);
        let sys = ev.split('/').next().unwrap();
        assert!(table.get_by_name(sys, ev.rsplit('/').next().unwrap()).is_some(), "{ev}: format");
        formats.push((ev.to_string(), text));
    }

    // Tracing on, the events on, load, tracing off.
    let on = read_text(&dir.join("tracing_on")).trim().to_string();
    guard.tracing_on = Some(on.clone());
    if on != "1" {
        write(&dir.join("tracing_on"), "1").unwrap();
    }
    for (ev, _) in &formats {
        let p = dir.join("events").join(ev).join("enable");
        if read_text(&p).trim() == "0" {
            guard.enabled.push(p.clone());
            write(&p, "1").unwrap();
        }
    }
    guard.filled = true;
    let load: usize = std::env::var("TRBOX_PAGE_LOAD").ok().and_then(|v| v.parse().ok()).unwrap_or(40);
    for i in 0..load {
        let _ =
            std::process::Command::new("/bin/sh").args(["-c", &format!("echo {i} > /dev/null; exec true")]).status();
    }
    // Each shell was waited for: its fork, exec and exit are in the buffer.
    write(&dir.join("tracing_on"), "0").unwrap();
    for p in &guard.enabled {
        write(p, "0").unwrap();
    }

    // The kernel's text, before consuming.
    let trace = read_text(&dir.join("trace"));
    assert!(!trace.contains("LOST"), "the buffer overflowed; make the load smaller");
    let mut want: BTreeMap<u32, Vec<(u64, String)>> = BTreeMap::new();
    let mut bodies: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut nlines = 0usize;
    for line in trace.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let (cpu, us, name) =
            common::trace_text::parse_event(line).unwrap_or_else(|| panic!("unparsed trace line: {line}"));
        want.entry(cpu).or_default().push((us, name));
        bodies.entry(cpu).or_default().push(line.to_string());
        nlines += 1;
    }
    assert!(nlines > 2 * load, "only {nlines} events traced");
    // Timestamps compare in µs only for nanosecond clocks.
    let clock = read_text(&dir.join("trace_clock"));
    let ns_clock = !(clock.contains("[counter]") || clock.contains("[x86-tsc]"));

    // Consume and decode every page.
    let mut got: BTreeMap<u32, Vec<(u64, String)>> = BTreeMap::new();
    let mut all_pages: Vec<(u32, Vec<Vec<u8>>)> = Vec::new();
    let (mut npages, mut nbytes, mut nchecked) = (0usize, 0usize, 0usize);
    for cpu in common::cpu_numbers(&dir) {
        let pages = read_pages(&dir.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw")), subbuf);
        for page in &pages {
            npages += 1;
            nbytes += page.len();
            let p = Page::parse(page, &layout, Endian::NATIVE).expect("page header");
            for item in p.items() {
                match item.expect("page decodes") {
                    PageItem::Record(r) => {
                        let ev = table.event_of(r.payload, Endian::NATIVE).unwrap_or_else(|| {
                            panic!("unknown common_type {:?}", table.record_id(r.payload, Endian::NATIVE))
                        });
                        assert!(r.payload.len() as u32 >= ev.min_record_size(), "{} record too short", ev.name);
                        let i = got.get(&cpu).map_or(0, Vec::len);
                        if let Some(line) = bodies.get(&cpu).and_then(|b| b.get(i)) {
                            match common::trace_text::check_fields(ev, r.payload, line, Endian::NATIVE) {
                                Ok(checked) => nchecked += usize::from(checked),
                                Err(e) => panic!("cpu{cpu} record {i}: {e}"),
                            }
                        }
                        got.entry(cpu).or_default().push(((r.ts + 500) / 1000, ev.name.clone()));
                    }
                    PageItem::Lost { .. } => panic!("lost events reported on cpu{cpu}"),
                }
            }
        }
        all_pages.push((cpu, pages));
    }
    let ndecoded: usize = got.values().map(Vec::len).sum();
    eprintln!("{nlines} trace lines, {ndecoded} records decoded from {npages} pages ({nbytes} bytes), {nchecked} field-checked");
    assert_eq!(ndecoded, nlines, "record count differs from the trace file");
    for (cpu, w) in &want {
        let g = got.get(cpu).map(Vec::as_slice).unwrap_or(&[]);
        assert_eq!(g.len(), w.len(), "cpu{cpu}: count");
        for (i, (a, b)) in g.iter().zip(w).enumerate() {
            if ns_clock {
                assert_eq!(a, b, "cpu{cpu} record {i}: decoded vs trace");
            } else {
                assert_eq!(a.1, b.1, "cpu{cpu} record {i}: decoded vs trace");
            }
        }
    }

    // The merged stream is in timestamp order and loses nothing.
    let per_cpu: Vec<Vec<(u64, u32)>> = all_pages
        .iter()
        .map(|(cpu, pages)| {
            let mut v = Vec::new();
            for page in pages {
                let p = Page::parse(page, &layout, Endian::NATIVE).unwrap();
                v.extend(p.records().map(|r| (r.unwrap().ts, *cpu)));
            }
            v
        })
        .collect();
    let merged: Vec<(u64, u32)> = merge(per_cpu.into_iter().map(Vec::into_iter)).map(|(_, x)| x).collect();
    assert_eq!(merged.len(), nlines);
    assert!(merged.windows(2).all(|w| w[0].0 <= w[1].0), "merge out of order");

    if let Some(dst) = save {
        // A tracefs-shaped copy (usable with `-T DIR`), plus the kernel's text.
        let _ = fs::remove_dir_all(&dst);
        fs::create_dir_all(dst.join("events")).unwrap();
        for f in ["header_page", "header_event"] {
            fs::write(dst.join("events").join(f), read_text(&root.join("events").join(f))).unwrap();
        }
        for (ev, text) in &formats {
            fs::create_dir_all(dst.join("events").join(ev)).unwrap();
            fs::write(dst.join("events").join(ev).join("format"), text).unwrap();
        }
        for (cpu, pages) in &all_pages {
            fs::create_dir_all(dst.join(format!("per_cpu/cpu{cpu}"))).unwrap();
            fs::write(dst.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw")), pages.concat()).unwrap();
        }
        for f in ["trace_clock", "current_tracer"] {
            fs::write(dst.join(f), read_text(&dir.join(f))).unwrap();
        }
        for f in ["saved_cmdlines", "printk_formats"] {
            fs::write(dst.join(f), read_text(&root.join(f))).unwrap();
        }
        fs::write(dst.join("trace"), &trace).unwrap();
        eprintln!("saved to {}", dst.display());
    }
    drop(guard);
    // Restored: the state is as before.
    common::assert_same_state(&before, &common::snapshot(&root));
}
