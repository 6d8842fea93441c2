//! Decode real x86_64 pages recorded by tests/page_live.rs
//! (`TRBOX_SAVE_PAGES`: a tracefs-shaped copy) and compare with the kernel's
//! own `trace` text of the same buffer: CPU, µs timestamp and event name per
//! line, and some fields read through the parsed formats. Runs without root.

use std::collections::BTreeMap;
use std::path::Path;

use trbox::format::{Endian, EventFormat, EventTable, HeaderPage};
use trbox::merge::merge;
use trbox::page::{Item, Page, PageLayout};

pub fn load(dir: &Path) -> (HeaderPage, EventTable, BTreeMap<u32, Vec<u8>>) {
    let hp = HeaderPage::parse(&std::fs::read_to_string(dir.join("events/header_page")).unwrap()).unwrap();
    let mut table = EventTable::new();
    for sys in std::fs::read_dir(dir.join("events")).unwrap().flatten().filter(|e| e.path().is_dir()) {
        let sysname = sys.file_name().to_string_lossy().into_owned();
        for ev in std::fs::read_dir(sys.path()).unwrap().flatten() {
            let text = std::fs::read_to_string(ev.path().join("format")).unwrap();
            table.insert(EventFormat::parse(&text, &sysname, hp.long_size()).unwrap());
        }
    }
    let mut raw = BTreeMap::new();
    for e in std::fs::read_dir(dir.join("per_cpu")).unwrap().flatten() {
        let cpu: u32 = e.file_name().to_string_lossy().strip_prefix("cpu").unwrap().parse().unwrap();
        raw.insert(cpu, std::fs::read(e.path().join("trace_pipe_raw")).unwrap());
    }
    (hp, table, raw)
}

/// One line of the `trace` file: (cpu, µs, event name).
fn parse_trace_line(line: &str) -> Option<(u32, u64, String)> {
    // `COMM-PID [CCC] FLAGS TIMESTAMP: EVENT: ...`; COMM may hold anything,
    // so try each `[digits]` followed by flags and a timestamp.
    let mut i = 0;
    while let Some(off) = line[i..].find('[') {
        let s = i + off;
        i = s + 1;
        let Some(close) = line[s..].find(']') else { break };
        let cpu = &line[s + 1..s + close];
        if cpu.is_empty() || !cpu.bytes().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let rest = line[s + close + 1..].trim_start();
        let Some((_flags, tail)) = rest.split_once(' ') else { continue };
        let Some((ts, after)) = tail.trim_start().split_once(": ") else { continue };
        let Some((sec, usec)) = ts.split_once('.') else { continue };
        let (Ok(sec), Ok(usec)) = (sec.parse::<u64>(), usec.parse::<u64>()) else { continue };
        let name = after.split(':').next()?.to_string();
        return Some((cpu.parse().ok()?, sec * 1_000_000 + usec, name));
    }
    None
}

/// Check a few fields read through the parsed format against the kernel's
/// text of the same record (fixed fields, arrays and `__data_loc` strings).
fn check_fields(ev: &EventFormat, p: &[u8], line: &str) -> Result<bool, String> {
    let e = Endian::Little;
    let s = |n: &str| -> String {
        let b = ev.field(n).and_then(|f| f.bytes(p, e)).unwrap_or(b"?");
        String::from_utf8_lossy(b.split(|&c| c == 0).next().unwrap_or(b"")).into_owned()
    };
    let i = |n: &str| -> String { ev.field(n).and_then(|f| f.int(p, e)).map_or("?".into(), |v| v.to_string()) };
    let want = match ev.name.as_str() {
        "sched_switch" => vec![
            format!("prev_comm={} prev_pid={} prev_prio={} ", s("prev_comm"), i("prev_pid"), i("prev_prio")),
            format!("next_comm={} next_pid={} next_prio={}", s("next_comm"), i("next_pid"), i("next_prio")),
        ],
        "sched_wakeup" | "sched_wakeup_new" => vec![format!("comm={} pid={} prio={} ", s("comm"), i("pid"), i("prio"))],
        "sched_process_exec" => vec![format!("filename={} pid={} old_pid={}", s("filename"), i("pid"), i("old_pid"))],
        "sched_process_fork" => vec![format!(
            "comm={} pid={} child_comm={} child_pid={}",
            ev.field("parent_comm").map_or_else(|| s("comm"), |_| s("parent_comm")),
            ev.field("parent_pid").map_or_else(|| i("pid"), |_| i("parent_pid")),
            s("child_comm"),
            i("child_pid")
        )],
        "irq_handler_entry" => vec![format!("irq={} name={}", i("irq"), s("name"))],
        "task_newtask" => vec![format!("pid={} comm={} ", i("pid"), s("comm"))],
        _ => vec![],
    };
    for w in &want {
        if !line.contains(w.as_str()) {
            return Err(format!("{w:?} not in {line:?}"));
        }
    }
    Ok(!want.is_empty())
}

#[test]
fn x86_64_fixture_matches_kernel_text() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pages/x86_64-6.18");
    let (hp, table, raw) = load(&dir);
    let layout = PageLayout::from(&hp);
    let sb = hp.subbuf_size() as usize;
    let trace = std::fs::read_to_string(dir.join("trace")).unwrap();
    let mut per: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut lines: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
    for line in trace.lines().filter(|l| !l.starts_with('#')) {
        let (cpu, us, name) = parse_trace_line(line).unwrap();
        per.entry(cpu).or_default().push(format!("{cpu} {us} {name}\n"));
        lines.entry(cpu).or_default().push(line);
    }
    let want: String = per.values().flatten().map(String::as_str).collect();
    let mut got = String::new();
    let mut per_cpu = Vec::new();
    let mut checked = 0;
    for (cpu, bytes) in &raw {
        assert_eq!(bytes.len() % sb, 0);
        let mut ts = Vec::new();
        for page in bytes.chunks(sb) {
            let p = Page::parse(page, &layout, Endian::Little).unwrap();
            for it in p.items() {
                let Item::Record(r) = it.unwrap() else { panic!("lost events in fixture") };
                let ev = table.event_of(r.payload, Endian::Little).expect("known event");
                let line = lines[cpu][ts.len()];
                checked += usize::from(check_fields(ev, r.payload, line).unwrap());
                got.push_str(&format!("{cpu} {} {}\n", (r.ts + 500) / 1000, ev.name));
                ts.push((r.ts, *cpu));
            }
        }
        per_cpu.push(ts);
    }
    assert!(checked > 100);
    assert_eq!(got.lines().count(), want.lines().count());
    for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        assert_eq!(g, w, "line {i}");
    }
    let merged: Vec<_> = merge(per_cpu.into_iter().map(Vec::into_iter)).collect();
    assert_eq!(merged.len(), want.lines().count());
    assert!(merged.windows(2).all(|w| (w[0].1 .0, w[0].0) <= (w[1].1 .0, w[1].0)));
}

/// The same real records re-encoded into big-endian pages with 4-byte
/// commit words and 16 KiB / 64 KiB sub-buffers decode to the same
/// (timestamp, payload) sequence.
#[test]
fn fixture_reencoded_other_layouts() {
    use trbox::page::build::{Ev, PageBuilder};
    use trbox::page::Missed;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pages/x86_64-6.18");
    let (hp, _, raw) = load(&dir);
    let layout = PageLayout::from(&hp);
    let sb = hp.subbuf_size() as usize;
    let mut recs: Vec<(u64, Vec<u8>)> = Vec::new();
    for page in raw.values().next().unwrap().chunks(sb) {
        let p = Page::parse(page, &layout, Endian::Little).unwrap();
        recs.extend(p.records().map(|r| r.map(|r| (r.ts, r.payload.to_vec())).unwrap()));
    }
    for (e, long, size) in [(Endian::Big, 4, 4096), (Endian::Big, 8, 16384), (Endian::Little, 4, 65536)] {
        let l = PageLayout::new(long, size);
        let mut pages: Vec<Vec<u8>> = Vec::new();
        let mut b: Option<PageBuilder> = None;
        let mut last = 0u64;
        for (ts, payload) in &recs {
            let need = payload.len() + 16;
            if b.as_ref().map_or(true, |b| b.data_len() + need > l.data_size) {
                if let Some(b) = b.take() {
                    pages.push(b.finish(Missed::None, None));
                }
                b = Some(PageBuilder::new(l, e, *ts));
                last = *ts;
            }
            let b = b.as_mut().unwrap();
            let d = ts - last;
            if d >= 1 << 27 {
                b.push(Ev::Extend(d));
                b.push(Ev::Data { delta: 0, payload, force_long: false });
            } else {
                b.push(Ev::Data { delta: d as u32, payload, force_long: false });
            }
            last = *ts;
        }
        pages.push(b.unwrap().finish(Missed::None, None));
        let mut out = Vec::new();
        for page in &pages {
            let p = Page::parse(page, &l, e).unwrap();
            out.extend(p.records().map(|r| r.map(|r| (r.ts, r.payload.to_vec())).unwrap()));
        }
        assert_eq!(out, recs, "{e:?} long={long} size={size}");
    }
}
