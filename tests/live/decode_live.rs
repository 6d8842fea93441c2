//! The decoder against the kernel's own text (issue 4's main acceptance):
//! enable every event this kernel lets us enable, in batches, generate load,
//! stop, read `trace`, then let `tr-cat --raw` decode the same buffer from the
//! raw pages. The per-event mismatch table is printed either way.
//!
//! Print fmts that need what tracefs does not give (an enum the kernel did
//! not export with TRACE_DEFINE_ENUM, `sizeof(struct page)`, the variables
//! `vmemmap_base` or `jiffies`) are rendered, as by tr-cat, with BTF and the
//! live system's values (trbox::sys::kvars); events still incomplete after that
//! are listed with the reason and counted apart too. At least 99.9% of all
//! lines, and of the lines renderable from tracefs, must be identical; on
//! the kernels whose string verifier prints an event's first `%s` empty
//! with hash-ptr off (x86_64, 5.12 to 6.12: common::strverify), a line
//! equal to trbox's with that string left out counts as identical.

use super::common;
use common::strverify::{self, FirstString};
use common::*;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// The event name of a `trace` line (`…: NAME: body`), or `function`-style
/// lines without a name.
fn event_of(line: &str) -> String {
    // After the timestamp: "  123.456789: name: ..."
    let Some(rest) = line.get(40..).and_then(|r| r.split_once(": ")).map(|(_, r)| r) else {
        return "?".into();
    };
    match rest.split_once(": ") {
        Some((name, _)) if !name.contains(' ') => name.to_string(),
        _ => "(no name)".into(),
    }
}

struct Tally {
    total: usize,
    bad: usize,
    /// Lines equal to ours with the first `%s` left out (common::strverify).
    verifier: usize,
    per_event: BTreeMap<String, (usize, usize)>,
    examples: BTreeMap<String, (String, String)>,
}

/// writeback's `age=` is `(jiffies - dirtied_when) / HZ` evaluated when the
/// line is printed — by the kernel when the test read `trace`, by trbox a
/// moment later — so it may tick between the two; it is not compared.
fn normalize(l: &str) -> std::borrow::Cow<'_, str> {
    match l.find(" age=") {
        Some(i) if l.contains(": writeback_single_inode") => {
            let end = l[i + 5..].find(' ').map_or(l.len(), |j| i + 5 + j);
            format!("{} age=*{}", &l[..i], &l[end..]).into()
        }
        _ => l.into(),
    }
}

/// `first`: the events whose first `%s` this kernel prints empty
/// (common::strverify), by name; a kernel line of one also matches ours
/// with that string left out.
fn compare(kernel: &str, ours: &str, first: &HashMap<String, FirstString>, t: &mut Tally) {
    let ours: Vec<std::borrow::Cow<str>> = ours.lines().map(normalize).collect();
    let mut have: HashMap<&str, usize> = HashMap::new();
    for l in &ours {
        *have.entry(l).or_default() += 1;
    }
    let mut by_prefix: HashMap<&str, Vec<&str>> = HashMap::new();
    for l in &ours {
        if let Some(p) = l.get(..40) {
            by_prefix.entry(p).or_default().push(l);
        }
    }
    let mut missed = Vec::new();
    for l in kernel.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let l = normalize(l);
        // Continuation lines of multi-line events (stack traces) count too.
        let ev = event_of(&l);
        t.per_event.entry(ev.clone()).or_default().0 += 1;
        t.total += 1;
        match have.get_mut(&*l) {
            Some(n) if *n > 0 => *n -= 1,
            _ => missed.push((ev, l)),
        }
    }
    for (ev, l) in missed {
        let cuts = first.get(&ev).map(|f| strverify::cuts(&l, f)).unwrap_or_default();
        let same = l.get(..40).and_then(|p| by_prefix.get(p)).map_or(&[][..], |v| v.as_slice());
        let cut = same
            .iter()
            .find(|o| have.get(**o).is_some_and(|n| *n > 0) && cuts.iter().any(|&c| strverify::fits(&l, o, c)));
        if let Some(o) = cut {
            *have.get_mut(*o).unwrap() -= 1;
            t.verifier += 1;
            continue;
        }
        t.per_event.entry(ev.clone()).or_default().1 += 1;
        t.bad += 1;
        t.examples
            .entry(ev)
            .or_insert_with(|| (l.to_string(), same.first().copied().unwrap_or("(no line)").to_string()));
    }
}

fn systems(root: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root.join("events"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|s| s != "ftrace")
        .collect();
    v.sort();
    v
}

#[test]
fn raw_decode_equals_kernel_text() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let mut tally = Tally { total: 0, bad: 0, verifier: 0, per_event: BTreeMap::new(), examples: BTreeMap::new() };
    // Events the decoder knows it cannot render completely from tracefs.
    let t = trbox::sys::Tracefs::at(&root).unwrap();
    let trace = trbox::sys::trace::open_tree(&t).unwrap();
    let (long, table) = (trace.long_size(), &trace.events);
    // With what trbox itself uses: BTF and the live system's variables.
    let consts = trbox::sys::kvars::load_for_tree(&root, true).unwrap_or_default();
    let kernel = trbox::printfmt::FromConsts { consts: &consts, version: None };
    let incomplete: BTreeMap<String, String> = table
        .iter()
        .filter_map(|ev| {
            let p = trbox::printfmt::Program::compile_with(ev, long, &kernel);
            let mut u = p.unknown_parts().to_vec();
            u.sort_unstable();
            u.dedup();
            (!u.is_empty()).then(|| (ev.name.clone(), u.join(", ")))
        })
        .collect();
    // x86_64 kernels 5.12 to 6.12 print the first `%s` of an event empty
    // with hash-ptr off, as here (common::strverify: the kernel's rule).
    let first: HashMap<String, FirstString> = match strverify::live_kernel_empties_first_string() {
        true => strverify::events(table.iter()),
        false => HashMap::new(),
    };
    {
        let mut g = Guard::new(&root);
        g.set("options/hash-ptr", "0");
        g.set("buffer_size_kb", "8192");
        g.set("tracing_on", "0");
        std::fs::write(root.join("trace"), "").unwrap();
        let systems = systems(&root);
        // Batches of systems; each system's `enable` switches all its events.
        for batch in systems.chunks(8) {
            let mut enabled = Vec::new();
            for s in batch {
                let rel = format!("events/{s}/enable");
                if std::fs::write(root.join(&rel), "1").is_ok() {
                    enabled.push(rel);
                }
            }
            std::fs::write(root.join("tracing_on"), "1").unwrap();
            common::load();
            std::fs::write(root.join("tracing_on"), "0").unwrap();
            for rel in &enabled {
                let _ = std::fs::write(root.join(rel), "0");
            }
            let overrun: u64 = std::fs::read_dir(root.join("per_cpu"))
                .unwrap()
                .flatten()
                .map(|c| {
                    trbox::ctl::CpuStats::parse(&std::fs::read_to_string(c.path().join("stats")).unwrap_or_default())
                })
                .map(|s| s.overrun.unwrap_or(0))
                .sum();
            let kernel = std::fs::read_to_string(root.join("trace")).unwrap();
            let o = run(&["tr-cat", "--raw", "-T", root.to_str().unwrap()]);
            assert!(o.status.success(), "tr-cat --raw failed: {}", stderr(&o));
            if overrun > 0 {
                eprintln!("batch {batch:?}: {overrun} events overwritten; comparison skipped");
            } else {
                compare(&strverify::unglue(&kernel, &first), &stdout(&o), &first, &mut tally);
            }
            std::fs::write(root.join("trace"), "").unwrap();
        }
    }
    assert_same_state(&before, &snapshot(&root));
    println!("{:<40} {:>8} {:>8}  reason", "event", "lines", "differ");
    let (mut excl_lines, mut excl_bad) = (0, 0);
    for (ev, (n, bad)) in &tally.per_event {
        let why = incomplete.get(ev);
        if *bad > 0 {
            println!("{ev:<40} {n:>8} {bad:>8}  {}", why.map_or("", |w| w.as_str()));
        }
        if why.is_some() {
            excl_lines += n;
            excl_bad += bad;
        }
    }
    println!("events needing kernel data outside tracefs: {excl_lines} lines, {excl_bad} differ");
    for (ev, (k, o)) in &tally.examples {
        println!("{ev}:\n  kernel: {k}\n  trbox:  {o}");
    }
    if !first.is_empty() {
        println!(
            "{} lines equal ours with the first %s left out, as this kernel's string verifier prints them",
            tally.verifier
        );
    }
    let ok = tally.total - tally.bad;
    println!(
        "all: {} event types, {} lines, {} identical ({:.3}%)",
        tally.per_event.len(),
        tally.total,
        ok,
        100.0 * ok as f64 / tally.total.max(1) as f64
    );
    let (n, good) = (tally.total - excl_lines, ok - (excl_lines - excl_bad));
    println!("renderable from tracefs: {n} lines, {good} identical ({:.3}%)", 100.0 * good as f64 / n.max(1) as f64);
    assert!(n > 1000, "too few events to judge: {n}");
    assert!(good as f64 >= 0.999 * n as f64, "fewer than 99.9% identical lines among events renderable from tracefs");
    assert!(ok as f64 >= 0.999 * tally.total as f64, "fewer than 99.9% identical lines overall");
}

/// trace_marker_raw records (`ftrace/raw_data`) of 0..120 data bytes after
/// the 4-byte id, each one write(), in an instance of our own: `tr-cat
/// --raw` prints them as the kernel's `trace_raw_data()` does (`# ID buf:`
/// and every byte of the record after the id, padding included).
#[test]
fn raw_markers_equal_kernel_text() {
    let Some((_l, root, before)) = live_with_snapshot() else { return };
    if !root.join("trace_marker_raw").exists() {
        skip_absent("no trace_marker_raw here (4.19+)");
        return;
    }
    let name = format!("trbox-rawmarker-{}", std::process::id());
    let inst = root.join("instances").join(&name);
    std::fs::create_dir(&inst).unwrap();
    struct Rm(std::path::PathBuf);
    impl Drop for Rm {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir(&self.0);
        }
    }
    let rm = Rm(inst.clone());
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().write(true).open(inst.join("trace_marker_raw")).unwrap();
        for n in [0u32, 1, 2, 3, 4, 5, 8, 9, 12, 13, 16, 20, 100, 120] {
            let mut rec = (0x1000 + n).to_le_bytes().to_vec();
            rec.extend((1..=n).map(|b| b as u8));
            // One write(): the kernel makes one record of it.
            assert_eq!(f.write(&rec).unwrap(), rec.len());
        }
    }
    let kernel = std::fs::read_to_string(inst.join("trace")).unwrap();
    let k: Vec<&str> = kernel.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(k.len(), 14, "{kernel}");
    // 6.18 prints `# 1001 buf: 01 00 00 00`; 6.1 reserves at least 13 bytes.
    assert!(k[1].contains(": # 1001 buf: 01 00 00 00"), "{}", k[1]);
    let o = run(&["tr-cat", "--raw", "-B", &name]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ours = stdout(&o);
    let t: Vec<&str> = ours.lines().collect();
    for i in 0..k.len().max(t.len()) {
        assert_eq!(k.get(i), t.get(i), "line {}", i + 1);
    }
    drop(rm);
    assert_same_state(&before, &snapshot(&root));
}
