//! Real kernel pages into a trace.dat: sched events recorded in a private
//! tracefs instance, drained from per_cpu/cpuN/trace_pipe_raw, written with
//! the v6 writer, read back with the reader, and shown by `trace-cmd report`
//! with the same number of events and no warnings. The instance is removed
//! (and its events disabled) by a Drop guard even when an assertion fails.

use super::common;

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use trbox::abi::Endian;
use trbox::format::HeaderPage;
use trbox::page::{Page, PageLayout};
use trbox::tracedat::{cpustat_text, data_layout, encode_flyrecord_table, DatPages, TraceDat, V6Writer, WriteOptions};
use trbox::Trace;

const INSTANCE: &str = "trbox-tracedat-test";

/// Removes the test instance on drop (events off first).
struct Guard(PathBuf);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = fs::write(self.0.join("events/enable"), "0");
        let _ = fs::write(self.0.join("tracing_on"), "0");
        let _ = fs::remove_dir(&self.0);
    }
}

/// Drain one CPU's raw pages (non-blocking, one sub-buffer per read).
fn drain(path: &Path, page: usize) -> Vec<u8> {
    let mut f = fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).unwrap();
    let mut out = Vec::new();
    let mut buf = vec![0u8; page];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                assert_eq!(n, page, "trace_pipe_raw returns whole sub-buffers");
                out.extend_from_slice(&buf);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("read {}: {e}", path.display()),
        }
    }
    out
}

#[test]
fn record_live_pages_into_trace_dat() {
    let Some(root) = common::live_tracefs() else { return };
    let _lock = common::TracefsLock::take();
    let before = common::snapshot(&root);
    let inst = root.join("instances").join(INSTANCE);
    let _ = fs::remove_dir(&inst);
    if let Err(e) = fs::create_dir(&inst) {
        common::skip(&format!("cannot create an instance: {e}"));
        return;
    }
    let dir = common::TempDir::new("tracedat-live");
    let path = dir.path().join("live.dat");
    let (events_per_cpu, stats_texts) = {
        let guard = Guard(inst.clone());
        let inst = &guard.0;
        fs::write(inst.join("events/sched/sched_switch/enable"), "1").unwrap();
        fs::write(inst.join("events/sched/sched_wakeup/enable"), "1").unwrap();
        fs::write(inst.join("tracing_on"), "1").unwrap();
        for _ in 0..20 {
            Command::new("ls").arg("/").output().unwrap();
        }
        fs::write(inst.join("tracing_on"), "0").unwrap();

        let header_page = common::read_whole(&root.join("events/header_page"));
        let hp = HeaderPage::parse(std::str::from_utf8(&header_page).unwrap()).unwrap();
        let layout = PageLayout::from(&hp);
        let page = layout.subbuf_size();
        let cpus = common::cpu_numbers(inst);
        let data: Vec<Vec<u8>> =
            cpus.iter().map(|c| drain(&inst.join(format!("per_cpu/cpu{c}/trace_pipe_raw")), page)).collect();
        let stats: Vec<String> = cpus
            .iter()
            .map(|c| {
                cpustat_text(
                    *c,
                    &String::from_utf8_lossy(&common::read_whole(&inst.join(format!("per_cpu/cpu{c}/stats")))),
                )
            })
            .collect();
        // Events per CPU as the page decoder sees them.
        let counts: Vec<usize> = data
            .iter()
            .map(|d| {
                d.chunks(page)
                    .map(|p| Page::parse(p, &layout, Endian::NATIVE).unwrap().records().filter(|r| r.is_ok()).count())
                    .sum()
            })
            .collect();
        assert!(counts.iter().sum::<usize>() > 0, "no events recorded");

        let mut f = fs::File::create(&path).unwrap();
        let mut w =
            V6Writer::new(trbox::abi::Abi::new(Endian::NATIVE, std::mem::size_of::<usize>() as u32), page as u32);
        w.header_files(&header_page, &common::read_whole(&root.join("events/header_event"))).unwrap();
        w.ftrace_formats(&common::formats(&root.join("events/ftrace"))).unwrap();
        w.event_systems(&[("sched", common::formats(&root.join("events/sched")))]).unwrap();
        w.kallsyms(&common::read_whole(Path::new("/proc/kallsyms"))).unwrap();
        w.printk_formats(&common::read_whole(&root.join("printk_formats"))).unwrap();
        w.saved_cmdlines(&common::read_whole(&root.join("saved_cmdlines"))).unwrap();
        w.cpus(cpus.len() as u32).unwrap();
        let clock = String::from_utf8_lossy(&common::read_whole(&inst.join("trace_clock"))).trim().to_string();
        w.options(
            &WriteOptions {
                trace_clock: Some(&clock),
                uname: Some("Linux test"),
                version: Some("trbox"),
                cpustat: &stats,
                ..Default::default()
            },
            None,
        )
        .unwrap();
        let fly = w.flyrecord().unwrap();
        f.write_all(&w.take()).unwrap();
        let sizes: Vec<u64> = data.iter().map(|d| d.len() as u64).collect();
        let table = data_layout(fly.data_start, page as u32, &sizes);
        for (d, &(off, _)) in data.iter().zip(&table) {
            f.write_all_at(d, off).unwrap();
        }
        f.write_all_at(&encode_flyrecord_table(Endian::NATIVE, &table), fly.table_pos).unwrap();
        (counts, stats)
    };
    // The instance is gone, tracefs as before.
    common::assert_same_state(&before, &common::snapshot(&root));

    let mut f = fs::File::open(&path).unwrap();
    let td = TraceDat::read(&mut f).unwrap();
    assert_eq!(td.options.cpustat, stats_texts);
    let top = td.top().unwrap();
    let layout = Trace::from_dat(&td, "", ()).unwrap().layout;
    let got: Vec<usize> = top
        .cpus
        .iter()
        .map(|c| {
            let mut p = DatPages::new(&td, top, c);
            let mut n = 0;
            while let Some(pg) = p.next_page(&mut f).unwrap() {
                n += Page::parse(pg, &layout, td.endian).unwrap().records().filter(|r| r.is_ok()).count();
            }
            n
        })
        .collect();
    assert_eq!(got, events_per_cpu);

    if Command::new("trace-cmd").arg("--version").output().is_err() {
        common::skip_tool("trace-cmd", "trace-cmd checks: not installed");
        return;
    }
    let out = Command::new("trace-cmd").arg("report").arg(&path).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.trim().is_empty(), "trace-cmd report: {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut per_cpu = vec![0usize; events_per_cpu.len()];
    for l in stdout.lines().filter(|l| l.contains("sched_switch:") || l.contains("sched_wakeup:")) {
        let cpu: usize =
            l.split('[').nth(1).and_then(|s| s.split(']').next()).and_then(|s| s.trim().parse().ok()).unwrap();
        per_cpu[cpu] += 1;
    }
    assert_eq!(per_cpu, events_per_cpu, "events per CPU: trace-cmd report vs trbox");
    let out = Command::new("trace-cmd").args(["dump", "--summary"]).arg(&path).output().unwrap();
    assert!(out.status.success() && out.stderr.is_empty(), "trace-cmd dump: {}", String::from_utf8_lossy(&out.stderr));
}
