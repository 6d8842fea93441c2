//! The v6 writer: a file made from the live tracefs metadata (read-only:
//! format files, saved_cmdlines, printk_formats, /proc/kallsyms) plus
//! synthetic sched_switch pages, with an extra instance; read back with the
//! reader, and checked with `trace-cmd report` / `trace-cmd dump --summary`
//! (no warnings, every event shown) when trace-cmd is installed.

use super::common;

use std::fs;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Command;

use trbox::abi::Endian;
use trbox::format::{EventFormat, HeaderPage};
use trbox::page::build::{Ev, PageBuilder};
use trbox::page::{Missed, Page, PageLayout};
use trbox::tracedat::{
    cpustat_text, data_layout, encode_flyrecord_header, encode_flyrecord_table, encode_options, encode_u64, DatPages,
    TraceDat, V6Writer, WriteOptions,
};
use trbox::Trace;

struct Meta {
    header_page: Vec<u8>,
    header_event: Vec<u8>,
    ftrace: Vec<Vec<u8>>,
    systems: Vec<(String, Vec<Vec<u8>>)>,
    kallsyms: Vec<u8>,
    printk: Vec<u8>,
    cmdlines: Vec<u8>,
    sched_switch: EventFormat,
    long_size: u32,
}

fn live_meta(root: &Path) -> Meta {
    let header_page = common::read_whole(&root.join("events/header_page"));
    let header_event = common::read_whole(&root.join("events/header_event"));
    let ftrace = common::formats(&root.join("events/ftrace"));
    // A few systems are enough (and keep the file small).
    let systems: Vec<(String, Vec<Vec<u8>>)> = ["sched", "irq", "timer"]
        .iter()
        .map(|s| (s.to_string(), common::formats(&root.join("events").join(s))))
        .filter(|(_, f)| !f.is_empty())
        .collect();
    let hp = HeaderPage::parse(std::str::from_utf8(&header_page).unwrap())
        .unwrap_or_else(|e| panic!("{e:?} {:?}", String::from_utf8_lossy(&header_page)));
    let text = fs::read_to_string(root.join("events/sched/sched_switch/format")).unwrap();
    let sched_switch = EventFormat::parse(&text, "sched", hp.long_size()).unwrap();
    Meta {
        header_page,
        header_event,
        ftrace,
        systems,
        kallsyms: fs::read("/proc/kallsyms").unwrap_or_default(),
        printk: fs::read(root.join("printk_formats")).unwrap_or_default(),
        cmdlines: fs::read(root.join("saved_cmdlines")).unwrap_or_default(),
        sched_switch,
        long_size: hp.long_size(),
    }
}

/// A sched_switch payload from `prev` (comm, pid) to `next`.
fn switch_payload(ev: &EventFormat, prev: (&str, i32), next: (&str, i32)) -> Vec<u8> {
    let end = ev.all_fields().map(|f| (f.offset + f.size) as usize).max().unwrap();
    let mut b = vec![0u8; end];
    let mut put = |name: &str, v: &[u8]| {
        let f = ev.field(name).unwrap_or_else(|| panic!("no field {name}"));
        let o = f.offset as usize;
        let n = v.len().min(f.size as usize);
        b[o..o + n].copy_from_slice(&v[..n]);
    };
    put("common_type", &(ev.id as u16).to_le_bytes());
    put("common_pid", &prev.1.to_le_bytes());
    put("prev_comm", prev.0.as_bytes());
    put("prev_pid", &prev.1.to_le_bytes());
    put("prev_prio", &120i32.to_le_bytes());
    put("prev_state", &1u64.to_le_bytes());
    put("next_comm", next.0.as_bytes());
    put("next_pid", &next.1.to_le_bytes());
    put("next_prio", &120i32.to_le_bytes());
    b
}

/// `n` events in pages for one CPU, timestamps from `t0` step 1000.
fn pages(meta: &Meta, layout: &PageLayout, n: usize, t0: u64, cpu: u32) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut ts = t0;
    while i < n {
        let mut pb = PageBuilder::new(*layout, Endian::Little, ts);
        let mut first = true;
        while i < n {
            let comm = format!("task{cpu}");
            let p = switch_payload(&meta.sched_switch, (&comm, 1000 + i as i32), ("swapper", 0));
            if pb.data_len() + p.len() + 8 > layout.subbuf_size() - 64 {
                break;
            }
            pb.push(Ev::Data { delta: if first { 0 } else { 1000 }, payload: &p, force_long: false });
            if !first {
                ts += 1000;
            }
            first = false;
            i += 1;
        }
        out.extend(pb.finish(Missed::None, None));
        ts += 1000;
    }
    out
}

struct Written {
    path: std::path::PathBuf,
    events: Vec<usize>,
    inst_events: Vec<usize>,
}

/// Write a file the way the recorder would: header first (options with
/// reserved room), data, then patch the table, the instance, the options.
fn write_file(meta: &Meta, dir: &Path, page_size: u32) -> Written {
    let events = vec![300usize, 200, 0];
    let inst_events = vec![40usize, 0, 25];
    let layout = PageLayout::from(&HeaderPage::parse(std::str::from_utf8(&meta.header_page).unwrap()).unwrap());
    assert_eq!(layout.subbuf_size(), page_size as usize);
    let path = dir.join("trbox.dat");
    let mut f = fs::File::create(&path).unwrap();
    let e = Endian::Little;
    let mut w = V6Writer::new(trbox::abi::Abi::new(e, meta.long_size), page_size);
    w.header_files(&meta.header_page, &meta.header_event).unwrap();
    w.ftrace_formats(&meta.ftrace).unwrap();
    w.event_systems(&meta.systems).unwrap();
    w.kallsyms(&meta.kallsyms).unwrap();
    f.write_all(&w.take()).unwrap();
    w.printk_formats(&meta.printk).unwrap();
    w.saved_cmdlines(&meta.cmdlines).unwrap();
    w.cpus(events.len() as u32).unwrap();
    let clock = "[local] global counter uptime perf mono mono_raw boot tai x86-tsc";
    let uname = "Linux trbox 6.0 x86_64";
    let instances = ["extra"];
    // Provisional options: CPUSTAT not known yet; reserve room.
    let provisional = WriteOptions {
        trace_clock: Some(clock),
        uname: Some(uname),
        version: Some("trbox-test"),
        instances: &instances,
        ..Default::default()
    };
    let slot = w.options(&provisional, Some(2048)).unwrap();
    let fly = w.flyrecord().unwrap();
    f.write_all(&w.take()).unwrap();
    assert_eq!(w.pos(), fly.data_start);
    assert_eq!(fly.data_start % page_size as u64, 0);

    // Top buffer data, page-aligned per CPU.
    let data: Vec<Vec<u8>> =
        events.iter().enumerate().map(|(c, &n)| pages(meta, &layout, n, 1_000_000 + c as u64, c as u32)).collect();
    let sizes: Vec<u64> = data.iter().map(|d| d.len() as u64).collect();
    let table = data_layout(fly.data_start, page_size, &sizes);
    for (d, &(off, _)) in data.iter().zip(&table) {
        f.write_all_at(d, off).unwrap();
    }
    f.write_all_at(&encode_flyrecord_table(e, &table), fly.table_pos).unwrap();
    let end = table.last().map(|&(o, s)| o + s).unwrap();

    // The extra instance: its flyrecord header after the top data.
    let (hdr, trel) = encode_flyrecord_header(e, inst_events.len() as u32, Some("local"));
    f.write_all_at(&hdr, end).unwrap();
    f.write_all_at(&encode_u64(e, end), slot.buffer_offsets[0]).unwrap();
    let idata: Vec<Vec<u8>> =
        inst_events.iter().enumerate().map(|(c, &n)| pages(meta, &layout, n, 2_000_000 + c as u64, c as u32)).collect();
    let isizes: Vec<u64> = idata.iter().map(|d| d.len() as u64).collect();
    let itable = data_layout(end + hdr.len() as u64, page_size, &isizes);
    for (d, &(off, _)) in idata.iter().zip(&itable) {
        f.write_all_at(d, off).unwrap();
    }
    f.write_all_at(&encode_flyrecord_table(e, &itable), end + trel as u64).unwrap();

    // Final options with the CPU stats, over the reserved block.
    let mut stats: Vec<String> = events
        .iter()
        .enumerate()
        .map(|(c, n)| cpustat_text(c as u32, &format!("entries: 0\noverrun: 0\ncommit overrun: 0\nbytes: 0\noldest event ts: 0.0\nnow ts: 1.0\ndropped events: 0\nread events: {n}\n")))
        .collect();
    stats.push("\nBuffer: extra\n\n".into());
    let fin = WriteOptions { cpustat: &stats, ..provisional.clone() };
    let (block, bufs) = encode_options(e, &fin, Some(slot.len)).unwrap();
    assert_eq!(block.len(), slot.len);
    f.write_all_at(&block, slot.pos).unwrap();
    // The rewritten block put the BUFFER offset back to 0: patch it again.
    f.write_all_at(&encode_u64(e, end), slot.pos + bufs[0]).unwrap();
    drop(f);
    Written { path, events, inst_events }
}

fn check_read_back(meta: &Meta, wr: &Written) {
    let mut f = fs::File::open(&wr.path).unwrap();
    let td = TraceDat::read(&mut f).unwrap();
    assert_eq!(td.version, 6);
    assert_eq!(td.header_page, meta.header_page);
    assert_eq!(td.header_event, meta.header_event);
    assert_eq!(td.ftrace_formats, meta.ftrace);
    assert_eq!(td.systems.len(), meta.systems.len());
    for (a, b) in td.systems.iter().zip(&meta.systems) {
        assert_eq!(a.name, b.0);
        assert_eq!(a.formats, b.1);
    }
    assert_eq!(td.kallsyms, meta.kallsyms);
    assert_eq!(td.printk_formats, meta.printk);
    assert_eq!(td.saved_cmdlines, meta.cmdlines);
    assert_eq!(td.cpus, 3);
    assert_eq!(td.options.clock.as_deref(), Some("local"));
    assert_eq!(td.options.uname.as_deref(), Some("Linux trbox 6.0 x86_64"));
    assert_eq!(td.options.version.as_deref(), Some("trbox-test"));
    assert_eq!(td.options.cpustat.len(), 4);
    assert!(td.options.cpustat[1].starts_with("CPU: 1\nentries: 0\n"));
    assert_eq!(td.instances.len(), 2);
    assert_eq!(td.instances[1].name, "extra");
    let layout = Trace::from_dat(&td, "", ()).unwrap().layout;
    for (inst, want) in td.instances.iter().zip([&wr.events, &wr.inst_events]) {
        let mut got = Vec::new();
        for c in &inst.cpus {
            let mut pages = DatPages::new(&td, inst, c);
            let mut n = 0;
            while let Some(p) = pages.next_page(&mut f).unwrap() {
                n += Page::parse(p, &layout, td.endian).unwrap().records().inspect(|r| assert!(r.is_ok())).count();
            }
            got.push(n);
        }
        assert_eq!(&got, want, "instance {:?}", inst.name);
    }
}

fn trace_cmd() -> bool {
    Command::new("trace-cmd")
        .arg("--version")
        .output()
        .map(|o| o.status.success() || !o.stdout.is_empty())
        .unwrap_or(false)
}

fn check_trace_cmd(wr: &Written) {
    if !trace_cmd() {
        common::skip_tool("trace-cmd", "trace-cmd checks: trace-cmd not installed");
        return;
    }
    let out = Command::new("trace-cmd").arg("report").arg(&wr.path).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "trace-cmd report failed: {stderr}");
    assert!(stderr.trim().is_empty(), "trace-cmd report warned:\n{stderr}");
    let top = stdout.lines().filter(|l| l.contains("sched_switch:") && !l.starts_with("extra:")).count();
    let inst = stdout.lines().filter(|l| l.starts_with("extra:") && l.contains("sched_switch:")).count();
    assert_eq!(top, wr.events.iter().sum::<usize>(), "top events in trace-cmd report");
    assert_eq!(inst, wr.inst_events.iter().sum::<usize>(), "instance events in trace-cmd report");
    let first = stdout.lines().find(|l| l.contains("sched_switch:")).unwrap();
    assert!(first.contains("task") && first.contains("swapper"), "{first}");

    let out = Command::new("trace-cmd").args(["dump", "--summary"]).arg(&wr.path).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "trace-cmd dump failed: {stderr}");
    assert!(stderr.trim().is_empty(), "trace-cmd dump warned:\n{stderr}");
    assert!(stdout.contains("[Flyrecord tracing data]"), "{stdout}");
    assert!(stdout.contains("3 [CPUs with tracing data]"), "{stdout}");

    let out = Command::new("trace-cmd").args(["report", "--stat"]).arg(&wr.path).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("read events: 200"), "cpustat not shown by report --stat:\n{stdout}");
}

#[test]
fn write_live_metadata_synthetic_pages() {
    let Some(root) = common::live_tracefs() else { return };
    let meta = {
        let _lock = common::TracefsLock::take();
        live_meta(&root)
    };
    let dir = common::TempDir::new("tracedat-write");
    let page_size = {
        let l = PageLayout::from(&HeaderPage::parse(std::str::from_utf8(&meta.header_page).unwrap()).unwrap());
        l.subbuf_size() as u32
    };
    let wr = write_file(&meta, dir.path(), page_size);
    check_read_back(&meta, &wr);
    check_trace_cmd(&wr);
}
