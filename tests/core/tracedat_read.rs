//! Reading trace.dat files written by trace-cmd 3.1.6 (tests/data/tracedat,
//! made by make.sh there): metadata, options, instances, and every page
//! decoded by the page decoder, with event counts per instance and CPU
//! equal to what `trace-cmd report` printed when the files were made
//! (`*.counts`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use trbox::page::Page;
use trbox::tracedat::{DatPages, TraceDat};
use trbox::Trace;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/tracedat").join(name)
}

/// (instance, cpu) -> events, and the total of lost-event marks.
pub fn count_events(td: &TraceDat, src: &mut std::fs::File) -> BTreeMap<(String, u32), u64> {
    let trace = Trace::from_dat(td, "", ()).unwrap();
    let (layout, table) = (trace.layout, &trace.events);
    assert!(trace.problems.is_empty(), "formats that do not parse: {:?}", trace.problems);
    let mut out = BTreeMap::new();
    for inst in &td.instances {
        for c in &inst.cpus {
            let mut pages = DatPages::new(td, inst, c);
            let mut n = 0u64;
            while let Some(p) = pages.next_page(src).expect("page") {
                let page = Page::parse(p, &layout, td.endian).expect("page header");
                let mut last = 0;
                for r in page.records() {
                    let r = r.expect("record");
                    assert!(r.ts >= last, "timestamps go back");
                    last = r.ts;
                    assert!(table.event_of(r.payload, td.endian).is_some(), "unknown event id");
                    n += 1;
                }
            }
            out.insert((inst.name.clone(), c.cpu), n);
        }
    }
    out
}

fn expected(name: &str) -> BTreeMap<(String, u32), u64> {
    let text = std::fs::read_to_string(data(name)).unwrap();
    let mut m = BTreeMap::new();
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut w = l.split_whitespace();
        let inst = w.next().unwrap();
        let inst = if inst == "-" { String::new() } else { inst.to_string() };
        let cpu: u32 = w.next().unwrap().parse().unwrap();
        let n: u64 = w.next().unwrap().parse().unwrap();
        m.insert((inst, cpu), n);
    }
    m
}

fn check_file(file: &str, version: u32) -> TraceDat {
    check_buffers(file, version, &["", "inst1"])
}

/// [`check_file`] for a file with these buffers (`""`: the top one).
fn check_buffers(file: &str, version: u32, buffers: &[&str]) -> TraceDat {
    let mut f = std::fs::File::open(data(file)).unwrap();
    let td = TraceDat::read(&mut f).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(td.version, version);
    assert_eq!(td.long_size, 8);
    assert_eq!(td.page_size, 4096);
    assert!(std::str::from_utf8(&td.header_page).unwrap().contains("commit"));
    assert!(std::str::from_utf8(&td.header_event).unwrap().contains("type_len"));
    assert!(!td.ftrace_formats.is_empty());
    assert!(
        td.systems.iter().any(|s| s.name == "sched"),
        "{:?}",
        td.systems.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    assert!(!td.kallsyms.is_empty());
    assert!(!td.saved_cmdlines.is_empty());
    assert_eq!(td.options.clock.as_deref(), Some("local"));
    assert!(td.options.uname.as_deref().unwrap_or("").starts_with("Linux"));
    assert!(td.options.version.is_some());
    assert!(td.options.cpustat.iter().any(|s| s.contains("entries:")));
    let names: Vec<&str> = td.instances.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, buffers);
    let mut counts = count_events(&td, &mut f);
    // `trace-cmd report` shows no line for a CPU without events.
    counts.retain(|_, n| *n > 0);
    let want = expected(&format!("{}.counts", file.trim_end_matches(".dat")));
    assert_eq!(counts, want, "{file}: events per (instance, cpu)");
    td
}

#[test]
fn v6_with_instance() {
    let td = check_file("v6-inst.dat", 6);
    assert!(td.compression.is_none());
}

#[test]
fn v7_uncompressed_with_instance() {
    let td = check_file("v7-none-inst.dat", 7);
    assert!(td.instances.iter().all(|i| !i.compressed));
}

#[cfg(feature = "zstd")]
#[test]
fn v7_zstd_with_instance() {
    let td = check_file("v7-zstd-inst.dat", 7);
    assert_eq!(td.compression.as_ref().unwrap().0, trbox::tracedat::Compression::Zstd);
    assert!(td.instances.iter().all(|i| i.compressed));
}

/// v6-inst.dat converted by a zlib-capable trace-cmd 3.1.6 (make.sh --zlib).
#[cfg(feature = "zlib")]
#[test]
fn v7_zlib_with_instance() {
    let td = check_file("v7-zlib-inst.dat", 7);
    assert_eq!(td.compression.as_ref().unwrap().0, trbox::tracedat::Compression::Zlib);
    assert!(td.instances.iter().all(|i| i.compressed));
}

/// `trace-cmd record -B fx` without the top buffer: v6 keeps an empty
/// flyrecord table for the top buffer, v7 (converted) has only "fx".
#[test]
fn v6_with_only_an_instance() {
    let td = check_buffers("v6-only-fx.dat", 6, &["", "fx"]);
    assert_eq!(td.top().unwrap().data_bytes(), 0);
    assert!(td.instances[1].data_bytes() > 0);
    assert!(td.problems.is_empty(), "{:?}", td.problems);
}

#[test]
fn v7_with_only_an_instance() {
    let td = check_buffers("v7-only-fx.dat", 7, &["fx"]);
    assert!(td.top().is_none());
    assert!(td.problems.is_empty(), "{:?}", td.problems);
}

/// Buffers without a single page: trace-cmd points their empty CPU data
/// past the end of the file, which is not a truncation.
#[test]
fn v6_without_events() {
    let td = check_buffers("v6-no-events.dat", 6, &["", "fx"]);
    assert!(td.instances.iter().all(|i| i.data_bytes() == 0));
    assert!(td.problems.is_empty(), "{:?}", td.problems);
}

/// trace-cmd 3.4's extract (make-3.4.sh): the BTF section (option 23) is
/// read whole and parses as BTF with the enums it was cut to; no option is
/// left unknown; events per CPU as 3.4's report counted them.
#[test]
fn trace_cmd_3_4_extract_carries_btf() {
    let path = data("v7-3.4-extract.dat");
    let mut f = std::fs::File::open(&path).unwrap();
    let td = TraceDat::read(&mut f).unwrap();
    assert_eq!(td.version, 7);
    assert!(td.problems.is_empty(), "{:?}", td.problems);
    assert_eq!(td.options.other, vec![], "options left unread");
    assert_eq!(td.options.last_boot, None);
    assert!(td.modules.is_empty());
    let btf = trbox::btf::Btf::parse(&td.btf).expect("the BTF section parses");
    assert_eq!(btf.enum_value("I_DIRTY_SYNC"), Some(1 << 4));
    assert_eq!(btf.enum_value("HRTIMER_MODE_REL"), Some(1));
    let counts = count_events(&td, &mut f);
    let report = std::fs::read_to_string(data("v7-3.4-extract.report")).unwrap();
    let total: u64 = counts.values().sum();
    assert_eq!(total, report.lines().filter(|l| !l.starts_with("cpus=")).count() as u64);
    // The record has no BTF (record stores it only for function arguments).
    let td = TraceDat::read(&mut std::fs::File::open(data("v7-3.4-record.dat")).unwrap()).unwrap();
    assert!(td.btf.is_empty() && td.options.other.is_empty());
}
