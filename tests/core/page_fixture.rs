//! Decode real x86_64 pages recorded by tests/live/page_live.rs
//! (`TRBOX_SAVE_PAGES`: a tracefs-shaped copy) and compare with the kernel's
//! own `trace` text of the same buffer: CPU, µs timestamp and event name per
//! line, and some fields read through the parsed formats. Runs without root.

use super::common;

use std::collections::BTreeMap;
use std::path::Path;

use trbox::abi::Endian;
use trbox::merge::merge;
use trbox::page::{Page, PageItem, PageLayout};
use trbox::Trace;

pub fn load(dir: &Path) -> (Trace, BTreeMap<u32, Vec<u8>>) {
    let trace = trbox::sys::trace::open_parsed(dir).unwrap();
    let mut raw = BTreeMap::new();
    for e in std::fs::read_dir(dir.join("per_cpu")).unwrap().flatten() {
        let cpu: u32 = e.file_name().to_string_lossy().strip_prefix("cpu").unwrap().parse().unwrap();
        raw.insert(cpu, std::fs::read(e.path().join("trace_pipe_raw")).unwrap());
    }
    (trace, raw)
}

#[test]
fn x86_64_fixture_matches_kernel_text() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pages/x86_64-6.18");
    let (trace, raw) = load(&dir);
    let (table, layout) = (&trace.events, trace.layout);
    let sb = layout.subbuf_size();
    let trace = std::fs::read_to_string(dir.join("trace")).unwrap();
    let mut per: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut lines: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
    for line in trace.lines().filter(|l| !l.starts_with('#')) {
        let (cpu, us, name) = common::trace_text::parse_event(line).unwrap();
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
                let PageItem::Record(r) = it.unwrap() else { panic!("lost events in fixture") };
                let ev = table.event_of(r.payload, Endian::Little).expect("known event");
                let line = lines[cpu][ts.len()];
                checked += usize::from(common::trace_text::check_fields(ev, r.payload, line, Endian::Little).unwrap());
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
    let (trace, raw) = load(&dir);
    let layout = trace.layout;
    let sb = layout.subbuf_size();
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

/// The pages of one CPU as a `PageSource` (the file's sub-buffers in turn).
struct MemPages {
    pages: Vec<Vec<u8>>,
    next: usize,
}

impl trbox::sys::pages::PageSource for MemPages {
    fn next_page(&mut self) -> Result<Option<&[u8]>, trbox::sys::Error> {
        self.next += 1;
        Ok(self.pages.get(self.next - 1).map(Vec::as_slice))
    }
    fn is_live(&self) -> bool {
        false
    }
    fn poll_fd(&self) -> Option<i32> {
        None
    }
}

/// A record given back right after `take` (tr-cat's merge thread does that
/// with the first function_graph record) is the stream's next item again;
/// given back once the next one was peeked, nothing changes. Either way the
/// stream hands out every record once, in order.
#[test]
fn untake_gives_back_only_the_record_just_taken() {
    use trbox::sys::pages::{CpuItem, CpuPages};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pages/x86_64-6.18");
    let (trace, raw) = load(&dir);
    let (cpu, bytes) = raw.iter().max_by_key(|(_, b)| b.len()).unwrap();
    let stream = |pages: &[u8]| {
        let pages = pages.chunks(trace.layout.subbuf_size()).map(<[u8]>::to_vec).collect();
        CpuPages::new(*cpu, Box::new(MemPages { pages, next: 0 }), trace.layout, Endian::Little)
    };
    let records = |s: &mut CpuPages, each: &mut dyn FnMut(&mut CpuPages, u64)| {
        let mut out = Vec::new();
        while s.peek_ts().unwrap().is_some() {
            let rec = match s.take() {
                Some(CpuItem::Record(r)) => Some((r.ts, r.payload.to_vec())),
                _ => None,
            };
            if let Some((ts, payload)) = rec {
                out.push((ts, payload));
                each(s, ts);
            }
        }
        out
    };
    let plain = records(&mut stream(bytes), &mut |_, _| {});
    assert!(plain.len() > 100, "{} records", plain.len());
    // Every other record is given back once, then taken again.
    let mut again = stream(bytes);
    let mut back = 0;
    let mut given = records(&mut again, &mut |s, ts| {
        back += 1;
        if back % 2 == 1 {
            s.untake();
            assert_eq!(s.peek_ts().unwrap(), Some(ts));
        }
    });
    given.dedup();
    assert!(given == plain, "{} records given back and taken again, {} once", given.len(), plain.len());
    assert_eq!(again.counts.records, plain.len() as u64);
    // Given back after the next item was peeked (on this page or the
    // next): no effect.
    let mut late = stream(bytes);
    let seen = records(&mut late, &mut |s, _| {
        if s.peek_ts().unwrap().is_some() {
            s.untake();
        }
    });
    assert!(seen == plain, "{} records with late give-backs, {} without", seen.len(), plain.len());
}
