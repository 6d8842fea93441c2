//! `make bench`: trbox against trace-cmd on the same data, in one run.
//!
//! Data: a real capture of this machine, recorded at bench time with
//! `tr-cat -o` (root and the live tracefs; at least 1 million events).
//! Never replicated pages: the same payloads again and again flatter every
//! cache. Then:
//! - raw decode: the capture's pages → records in memory (MB/s of pages,
//!   events/s);
//! - decode and merge throughput on their own (benches/throughput.rs):
//!   ~256 MiB of the x86_64-6.18 pages, the merge of 2 to 64 streams;
//! - text output: `tr-cat FILE` (the shipped release binary, rendering on
//!   every CPU, and with `-j 1` on one) vs `trace-cmd report FILE`, both to
//!   /dev/null, best of 3 each (events/s, MB/s of pages, ratio), with each
//!   one's peak RSS.
//! - recording (root, live tracefs): `tr-cat -o` (splice, and read+pwrite)
//!   vs `trace-cmd record` at the same syscall event rate — CPU time per MB,
//!   lost events, peak RSS — and the peak RSS of reading the ~100 MB file.
//! - the library's pull reader on the real capture, two fields per event,
//!   against the text decode's CPU (benches/pull/mod.rs).
//! - Parquet and text beside LISA's `trace-dump` on the real capture
//!   (benches/lisa/mod.rs).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;
use trbox::page::Page;

const MIN_EVENTS: u64 = 1_000_000;

mod lisa;
mod pull;
mod throughput;

/// Issue 42's table: `tr-cat -j N FILE` for N = 1 to the CPUs here (wall
/// and CPU, best of 3 by wall), the ratio of -j 2 to -j 1 (goal <= 0.55;
/// from pairs run in turn),
/// and Amdahl's model with the serial fraction those two imply, for the 4
/// or 8 cores of a board and the 16 of a build host.
fn jobs_table(trbox: &Path, file: &str, ncpu: usize) {
    let report = std::env::temp_dir().join(format!("trbox-bench-usage-{}", std::process::id()));
    println!("time slices: tr-cat -j N FILE (best of 3 by wall):");
    for n in 1..=ncpu.clamp(2, 16) {
        let (wall, cpu) = (0..3)
            .map(|_| {
                let mut c = Command::new(trbox);
                c.args(["tr-cat", "-j", &n.to_string(), file]);
                let (w, cpu, _) = run_measured(&c, &report);
                (w, cpu)
            })
            .fold((f64::MAX, 0.0), |b, r| if r.0 < b.0 { r } else { b });
        println!("  -j {n:<2} {wall:>6.3} s wall  {cpu:>6.3} s CPU");
    }
    // The ratio from pairs run in turn (-j 2, -j 1, -j 2, ...): the
    // machine's speed drifts by more than the ratio's own error between
    // the table's runs. The median of 7 pairs' ratios.
    let run = |n: &str| {
        let mut c = Command::new(trbox);
        c.args(["tr-cat", "-j", n, file]);
        run_measured(&c, &report).0
    };
    let mut ratios: Vec<f64> = (0..7).map(|_| run("2") / run("1")).collect();
    ratios.sort_by(f64::total_cmp);
    if let Some(&r) = ratios.get(ratios.len() / 2) {
        // T(n) = T1 * (s + (1 - s) / n); from T(2): s = 2r - 1.
        let s = (2.0 * r - 1.0).clamp(0.0, 1.0);
        let at = |n: f64| 1.0 / (s + (1.0 - s) / n);
        println!(
            "  -j 2 / -j 1: {r:.2} of the wall time (median of 7 pairs run in turn; goal <= 0.55); serial fraction \
             {s:.3}: -j 4 {:.1}x, -j 8 {:.1}x, -j 16 {:.1}x the speed of -j 1 (Amdahl)",
            at(4.0),
            at(8.0),
            at(16.0)
        );
    }
}

/// Run a command with stdout to /dev/null: (seconds, peak RSS in KiB),
/// under the launcher (see [`measured`]: the bench's own peak would show
/// otherwise).
fn time_cmd(cmd: &mut Command) -> (f64, i64) {
    let report = std::env::temp_dir().join(format!("trbox-bench-usage-{}", std::process::id()));
    let (wall, _, rss) = run_measured(cmd, &report);
    (wall, rss)
}

/// The fastest of `n` runs (a shared machine slows some down) and the
/// peak RSS of that run.
fn best_of(n: usize, mk: impl Fn() -> Command) -> (f64, i64) {
    (0..n).map(|_| time_cmd(&mut mk())).fold((f64::MAX, 0), |b, r| if r.0 < b.0 { r } else { b })
}

fn main() {
    launcher();
    // cargo bench passes --bench; nothing else to parse.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // TRBOX_BENCH=stream: only the live-streaming section (a quick look).
    if std::env::var("TRBOX_BENCH").as_deref() == Ok("stream") {
        return stream_bench(&root.join("target/release/trbox"));
    }
    // TRBOX_BENCH=cost: only what recording costs the traced program.
    if std::env::var("TRBOX_BENCH").as_deref() == Ok("cost") {
        return cost_bench(&root.join("target/release/trbox"));
    }
    // TRBOX_BENCH=record: only the recorders' CPU per MB.
    if std::env::var("TRBOX_BENCH").as_deref() == Ok("record") {
        return record_bench(&root.join("target/release/trbox"));
    }
    // TRBOX_BENCH=throughput: only the decoder's and the merge's own rates.
    if std::env::var("TRBOX_BENCH").as_deref() == Ok("throughput") {
        throughput::decode_throughput();
        throughput::merge_throughput();
        return;
    }
    // TRBOX_BENCH=pull: only the library's pull reader on a real capture.
    if std::env::var("TRBOX_BENCH").as_deref() == Ok("pull") {
        let real = std::env::temp_dir().join(format!("trbox-bench-real-{}.dat", std::process::id()));
        let report = std::env::temp_dir().join(format!("trbox-bench-usage-{}", std::process::id()));
        match real_capture(&root.join("target/release/trbox"), &real) {
            Some(_) => pull::pull_bench(&root.join("target/release/trbox"), &real, &report),
            None => println!("library pull: skipped (needs root and the live tracefs)"),
        }
        let _ = fs::remove_file(&real);
        return;
    }
    // TRBOX_BENCH=parquet: only the real capture beside LISA's trace-dump.
    if std::env::var("TRBOX_BENCH").as_deref() == Ok("parquet") {
        let trbox = root.join("target/release/trbox");
        let real = std::env::temp_dir().join(format!("trbox-bench-real-{}.dat", std::process::id()));
        match real_capture(&trbox, &real) {
            Some((n, _)) => lisa::lisa_bench(&trbox, &real, n),
            None => println!("parquet: skipped (the real capture needs root and the live tracefs)"),
        }
        let _ = fs::remove_file(&real);
        return;
    }
    // TRBOX_BENCH=decode: only the text decode against trace-cmd report.
    let decode_only = std::env::var("TRBOX_BENCH").as_deref() == Ok("decode");
    // The shipped binary (make bench keeps the bench profile's build apart).
    let trbox = root.join("target/release/trbox");
    assert!(trbox.exists(), "build the release binary first (make bench does)");
    // Per process: two benches at once must not share (or delete) a file.
    let real = std::env::temp_dir().join(format!("trbox-bench-real-{}.dat", std::process::id()));
    match real_capture(&trbox, &real) {
        Some((n, b)) => {
            raw_decode(&real);
            throughput::decode_throughput();
            throughput::merge_throughput();
            println!("== a real capture of this machine");
            decode_bench(&trbox, &real, n, b);
            let report = std::env::temp_dir().join(format!("trbox-bench-usage-{}", std::process::id()));
            pull::pull_bench(&trbox, &real, &report);
            if !decode_only {
                lisa::lisa_bench(&trbox, &real, n);
            }
        }
        None => println!("decoding: skipped (the real capture needs root and the live tracefs)"),
    }
    if std::env::var_os("TRBOX_BENCH_KEEP").is_none() {
        let _ = fs::remove_file(&real);
    }
    if decode_only {
        return;
    }
    record_bench(&trbox);
    cost_bench(&trbox);
    stream_bench(&trbox);
}

/// The pages of a trace.dat's first buffer decoded in memory to records,
/// best of 5 (the bench profile's decoder, no I/O): MB/s of pages and
/// records a second.
fn raw_decode(path: &Path) {
    let mut f = fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let td = trbox::tracedat::TraceDat::read(&mut f).expect("readable trace.dat");
    let layout = trbox::Trace::from_dat(&td, "", ()).unwrap().layout;
    let inst = &td.instances[0];
    let mut pages: Vec<Vec<u8>> = Vec::new();
    for c in &inst.cpus {
        let mut cpu = trbox::tracedat::DatPages::new(&td, inst, c);
        while let Ok(Some(p)) = cpu.next_page(&mut f) {
            pages.push(p.to_vec());
        }
    }
    let bytes: usize = pages.iter().map(Vec::len).sum();
    let (mut best, mut n) = (f64::MAX, 0u64);
    for _ in 0..5 {
        let t = Instant::now();
        n = 0;
        for p in &pages {
            if let Ok(pg) = Page::parse(p, &layout, td.endian) {
                for r in pg.records().flatten() {
                    n += r.payload.len() as u64 & 1 | 1;
                }
            }
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "raw decode:  {:>8.0} MB/s of pages, {:>6.1} M events/s ({n} records, in memory)",
        bytes as f64 / 1e6 / best,
        n as f64 / 1e6 / best
    );
}

/// `tr-cat ARGS FILE` on every CPU, then with `-j 1`: the best of 3
/// wall times of each.
fn every_cpu_and_one(trbox: &Path, args: &[&str], file: &str) -> (f64, f64) {
    let time = |jobs: &[&str]| {
        best_of(3, || {
            let mut c = Command::new(trbox);
            c.arg("tr-cat").args(jobs).args(args).arg(file);
            c
        })
        .0
    };
    (time(&[]), time(&["-j", "1"]))
}

/// The text decode of `out` (`events` events, `bytes` of pages) by the
/// shipped binary against trace-cmd report, its filtered and JSON forms,
/// and its conversion to Perfetto (time, peak RSS, size).
fn decode_bench(trbox: &Path, out: &Path, events: u64, bytes: u64) {
    let size = fs::metadata(trbox).map(|m| m.len()).unwrap_or(0);
    let file = out.to_str().unwrap();
    let (events, bytes) = (events as f64, bytes as f64);
    let (ts, trss) = best_of(3, || {
        let mut c = Command::new(trbox);
        c.args(["tr-cat", file]);
        c
    });
    let have_tc = Command::new("trace-cmd").arg("--help").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    let rate = |s: f64| format!("{:>6.2} s  {:>5.2} M events/s  {:>5.0} MB/s", s, events / 1e6 / s, bytes / 1e6 / s);
    let (t1, rss1) = best_of(3, || {
        let mut c = Command::new(trbox);
        c.args(["tr-cat", "-j", "1", file]);
        c
    });
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "text output (best of 3, stdout to /dev/null; MB/s of pages; tr-cat = target/release/trbox, {} KiB):",
        size / 1024
    );
    println!("  tr-cat ({ncpu} CPUs)    {}  peak RSS {:>6} KiB", rate(ts), trss);
    println!("  tr-cat -j 1       {}  peak RSS {:>6} KiB", rate(t1), rss1);
    if have_tc {
        let (cs, crss) = best_of(3, || {
            let mut c = Command::new("trace-cmd");
            c.args(["report", "-N", file]);
            c
        });
        println!("  trace-cmd report  {}  peak RSS {:>6} KiB", rate(cs), crss);
        println!(
            "ratio:       tr-cat is {:.1}x trace-cmd report's events/s (goal: 20x); on one thread {:.1}x (goal: 10x)",
            cs / ts,
            cs / t1
        );
    } else {
        println!("trace-cmd not installed: no comparison (bash cross/setup.sh installs it)");
    }
    jobs_table(trbox, file, ncpu);
    // A filter by event: the sched system's lines only (9% of the file).
    let (fs_, f1) = every_cpu_and_one(trbox, &["-e", "sched:*"], file);
    print!("filtered:    tr-cat -e 'sched:*' {fs_:.3} s (-j 1: {f1:.3} s)");
    if have_tc {
        let (fc, _) = best_of(3, || {
            let mut c = Command::new("trace-cmd");
            c.args(["report", "-N", "-F", "sched", file]);
            c
        });
        print!(", trace-cmd report -F sched {fc:.3} s: {:.1}x (-j 1: {:.1}x)", fc / fs_, fc / f1);
    }
    println!();
    // JSON lines (trace-cmd has no such output: its text is the reference).
    let (js, j1) = every_cpu_and_one(trbox, &["--json"], file);
    println!("json:        tr-cat --json {js:.3} s (-j 1: {j1:.3} s)");
    // The counts of --stats, by the same time slices.
    let (ss, s1) = every_cpu_and_one(trbox, &["--stats"], file);
    println!("stats:       tr-cat --stats {ss:.3} s (-j 1: {s1:.3} s)");
    // Perfetto: time, peak RSS and size beside the text decode, on every
    // CPU (time slices) and with -j 1.
    let pf = out.with_extension("pftrace");
    let convert = |jobs: &'static [&'static str]| {
        best_of(3, || {
            let _ = fs::remove_file(&pf);
            let mut c = Command::new(trbox);
            c.arg("tr-cat").args(jobs).args([file, "-o", pf.to_str().unwrap()]);
            c
        })
    };
    let (p1, _) = convert(&["-j", "1"]);
    let (ps, prss) = convert(&[]);
    let psize = fs::metadata(&pf).map_or(0, |m| m.len());
    let dsize = fs::metadata(out).map_or(0, |m| m.len());
    println!(
        "perfetto:    tr-cat FILE -o X.pftrace {ps:.3} s ({:.2}x the text decode; goal <= 2x; -j 1: {p1:.3} s, {:.2}x), \
         peak RSS {prss} KiB (goal <= 65536), {psize} bytes ({:.2}x the trace.dat's {dsize}; goal <= 1x)",
        ps / ts,
        p1 / t1,
        psize as f64 / dsize.max(1) as f64
    );
    let _ = fs::remove_file(&pf);
}

/// Record a real capture at bench time: sched, irq, timer and raw_syscalls
/// of the whole machine under a mixed load (a syscall stream, a fork loop,
/// a file walk, a sleeper's timers), with `tr-cat -o`, the live-test lock
/// held: for 4 s, then 8 and 16 until it holds MIN_EVENTS (a loaded or
/// slower machine makes fewer events a second). Its (events, page bytes);
/// `None` without root or tracefs.
fn real_capture(trbox: &Path, out: &Path) -> Option<(u64, u64)> {
    if unsafe { libc::geteuid() } != 0 || !Path::new("/sys/kernel/tracing/events").is_dir() {
        return None;
    }
    let _lock = rec_lock();
    let mut got = None;
    for secs in ["4", "8", "16"] {
        let (events, data_bytes) = capture_for(trbox, out, secs)?;
        println!(
            "data: {events} events, {:.1} MB of pages, recorded for {secs} s (tr-cat -o, this machine's kernel)",
            data_bytes as f64 / 1e6
        );
        got = Some((events, data_bytes));
        if events >= MIN_EVENTS {
            break;
        }
    }
    got
}

/// One recording of [`real_capture`], `secs` long.
fn capture_for(trbox: &Path, out: &Path, secs: &str) -> Option<(u64, u64)> {
    let loads = [
        "exec dd if=/dev/urandom of=/dev/null bs=2048 count=100000000 2>/dev/null",
        "while :; do /bin/true; done",
        "while :; do find /usr -xdev >/dev/null 2>&1; done",
        "exec python3 -c 'import time\nwhile 1: time.sleep(0.0005)' 2>/dev/null || while :; do sleep 0.001; done",
    ];
    let mut kids: Vec<_> = loads
        .iter()
        .filter_map(|l| Command::new("timeout").args([secs, "sh", "-c", l]).stdout(Stdio::null()).spawn().ok())
        .collect();
    let st = Command::new(trbox)
        .args(["tr-cat", "-o", out.to_str().unwrap(), "-t", secs])
        .args(["-e", "sched:*", "-e", "irq:*", "-e", "timer:*", "-e", "raw_syscalls:*"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    for k in &mut kids {
        let _ = k.wait();
    }
    if !st.is_ok_and(|s| s.success()) {
        println!("real capture: tr-cat -o failed");
        return None;
    }
    let (events, data_bytes, ..) = rec_file_counts(out);
    Some((events, data_bytes))
}

// ---------------------------------------------------------------------------
// Recording: trbox's recorder vs trace-cmd record at the same event rate,
// then the peak RSS of reading the ~100 MB file back. Needs root and the
// live tracefs; the live-test lock is held meanwhile.

/// What one recorder run produced.
struct RecRun {
    cpu_s: f64,
    rss_kib: i64,
    events: u64,
    data_bytes: u64,
    /// Lost events the kernel counted (CPUSTAT in the file: overrun +
    /// commit overrun + dropped), and as the page headers said.
    lost_stats: u64,
    lost_pages: u64,
    /// Pages flagged with a loss of unknown size.
    lost_unknown: u64,
    /// How tr-cat moved the pages, from its summary's first line (the
    /// word in parentheses at its end); empty for trace-cmd.
    mover: String,
}

/// The syscall load: fixed work (two syscalls per byte), so every
/// recorder sees the same events.
const REC_LOAD_BYTES: u64 = 800_000;
const REC_EVENT: &str = "raw_syscalls:sys_enter";

fn rec_lock() -> fs::File {
    let f = fs::File::create("/tmp/trbox-tracefs.lock").expect("lock file");
    use std::os::unix::io::AsRawFd;
    // SAFETY: valid fd.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
    f
}

/// Wait for `pid`: (CPU seconds user+system, peak RSS KiB) of it and the
/// children it waited for, and its exit code.
fn wait_usage(pid: i32) -> (f64, i64, i32) {
    let mut status = 0;
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: our own child, valid out-pointers.
    while unsafe { libc::wait4(pid, &mut status, 0, &mut ru) } < 0 {
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break;
        }
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 128 + libc::WTERMSIG(status) };
    (tv(ru.ru_utime) + tv(ru.ru_stime), ru.ru_maxrss, code)
}

/// Run to the end with stdout and stderr to /dev/null, under the launcher:
/// (wall seconds, CPU seconds, peak RSS KiB).
fn run_measured(c: &Command, report: &Path) -> (f64, f64, i64) {
    let t = Instant::now();
    let st = measured(c, report).stdout(Stdio::null()).stderr(Stdio::null()).status();
    assert!(st.is_ok(), "cannot run {:?}", c.get_program());
    let wall = t.elapsed().as_secs_f64();
    let (cpu, rss) = read_report(report);
    (wall, cpu, rss)
}

/// Events, page data bytes and losses (stats, page headers counted and of
/// unknown size) in a v6/v7 file.
fn rec_file_counts(path: &Path) -> (u64, u64, u64, u64, u64) {
    let mut f = fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let td = trbox::tracedat::TraceDat::read(&mut f).expect("readable trace.dat");
    let layout = trbox::Trace::from_dat(&td, "", ()).unwrap().layout;
    let (mut events, mut bytes, mut lost_pages, mut unknown) = (0, 0, 0, 0);
    let inst = &td.instances[0];
    for c in &inst.cpus {
        bytes += c.size;
        let mut pages = trbox::tracedat::DatPages::new(&td, inst, c);
        while let Ok(Some(p)) = pages.next_page(&mut f) {
            if let Ok(pg) = Page::parse(p, &layout, td.endian) {
                match pg.missed {
                    trbox::page::Missed::Count(n) => lost_pages += n,
                    trbox::page::Missed::Unknown => unknown += 1,
                    trbox::page::Missed::None => {}
                }
                events += pg.records().filter(|r| r.is_ok()).count() as u64;
            }
        }
    }
    let lost_stats = td
        .options
        .cpustat
        .iter()
        .map(|s| trbox::ctl::CpuStats::parse(s))
        .map(|s| s.overrun.unwrap_or(0) + s.commit_overrun.unwrap_or(0) + s.dropped.unwrap_or(0))
        .sum();
    (events, bytes, lost_stats, lost_pages, unknown)
}

/// Peak RSS needs care: a process's ru_maxrss keeps the peak of the memory
/// it had before exec, and a child spawned by this (large) bench starts as a
/// copy of it (or, spawned vfork-style, shares it) — every child would show
/// the bench's own size. So `measured` runs this binary again, small, as a
/// launcher that forks the command and reports its wait4() usage into a
/// file. The launcher's own size (about 1-2 MiB) is the floor of the figure.
const LAUNCH_ENV: &str = "TRBOX_BENCH_LAUNCH";

/// In the launcher role: run the command, write "maxrss_kib cpu_s", exit
/// with its status. SIGINT goes to the command (the launcher ignores it).
fn launcher() {
    let Some(report) = std::env::var_os(LAUNCH_ENV) else { return };
    let args: Vec<std::ffi::CString> =
        std::env::args_os().skip(1).map(|a| std::ffi::CString::new(a.into_encoded_bytes()).unwrap()).collect();
    let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    // SAFETY: fork/exec of a prepared argv; the child only execs or exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        unsafe {
            libc::execvp(argv[0], argv.as_ptr());
            libc::_exit(127);
        }
    }
    unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
    let (cpu, rss, code) = wait_usage(pid);
    let _ = fs::write(&report, format!("{rss} {cpu}"));
    std::process::exit(code);
}

/// A command that runs under the launcher, in its own process group (to
/// signal the whole group), and where its usage will be reported.
fn measured(c: &Command, report: &Path) -> Command {
    use std::os::unix::process::CommandExt;
    let mut m = Command::new(std::env::current_exe().unwrap());
    m.arg(c.get_program()).args(c.get_args()).env(LAUNCH_ENV, report).process_group(0);
    if let Some(d) = c.get_current_dir() {
        m.current_dir(d);
    }
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => m.env(k, v),
            None => m.env_remove(k),
        };
    }
    m
}

fn read_report(report: &Path) -> (f64, i64) {
    let s = fs::read_to_string(report).unwrap_or_default();
    let mut w = s.split_whitespace();
    let rss = w.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    let cpu = w.next().and_then(|v| v.parse().ok()).unwrap_or(0.0);
    let _ = fs::remove_file(report);
    (cpu, rss)
}

/// Start `recorder` (it enables REC_EVENT), run the load once it is
/// recording, stop it with SIGINT, and measure it.
fn rec_run(recorder: Command, out: &Path) -> RecRun {
    let enable = Path::new("/sys/kernel/tracing/events/raw_syscalls/sys_enter/enable");
    let report = out.with_extension("usage");
    let err = out.with_extension("err");
    let errf = fs::File::create(&err).expect("the recorder's stderr");
    let child = measured(&recorder, &report).stdout(Stdio::null()).stderr(errf).spawn().expect("start the recorder");
    let pid = child.id() as i32;
    let t = Instant::now();
    while fs::read_to_string(enable).map_or(true, |s| s.trim() != "1") && t.elapsed().as_secs() < 30 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Both write their header (kallsyms…) around here: let it pass.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let load = Command::new("dd")
        .args(["if=/dev/zero", "of=/dev/null", "bs=1", &format!("count={REC_LOAD_BYTES}"), "status=none"])
        .status();
    assert!(load.is_ok_and(|s| s.success()), "dd load failed");
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: signalling our own child's process group (Ctrl-C does that).
    unsafe { libc::kill(-pid, libc::SIGINT) };
    wait_usage(pid);
    drop(child);
    let (cpu_s, rss_kib) = read_report(&report);
    let (events, data_bytes, lost_stats, lost_pages, lost_unknown) = rec_file_counts(out);
    let first = fs::read_to_string(&err).unwrap_or_default().lines().next().unwrap_or_default().to_string();
    let _ = fs::remove_file(&err);
    let mover = match (first.starts_with("tr-cat:"), first.rfind(" (")) {
        (true, Some(i)) => first[i + 2..].trim_end_matches(')').to_string(),
        _ => String::new(),
    };
    RecRun { cpu_s, rss_kib, events, data_bytes, lost_stats, lost_pages, lost_unknown, mover }
}

/// trace-cmd record refuses to run on this kernel: it writes
/// /proc/sys/kernel/ftrace_enabled and opens set_ftrace_filter,
/// set_ftrace_notrace and set_ftrace_pid, all EPERM here. In a private mount
/// namespace those paths are shadowed by bind mounts of writable dummies.
const TC_SHADOW: &str = "d=$(mktemp -d) && echo 1 > $d/ftrace_enabled && \
    mount --bind $d/ftrace_enabled /proc/sys/kernel/ftrace_enabled && \
    for f in set_ftrace_filter set_ftrace_notrace set_ftrace_pid; do : > $d/$f; mount --bind $d/$f /sys/kernel/tracing/$f; done && \
    exec \"$@\"";

/// What trace-cmd leaves changed when the bench's time limit kills it (its
/// events on, tracing off, its command's pid in the event pid filter), put
/// back as it was when it is dropped.
struct TcGuard(Vec<(&'static str, String)>);

const TRACEFS: &str = "/sys/kernel/tracing";

impl TcGuard {
    fn new() -> TcGuard {
        let files = ["set_event", "set_event_pid", "tracing_on"];
        TcGuard(
            files.iter().map(|f| (*f, fs::read_to_string(Path::new(TRACEFS).join(f)).unwrap_or_default())).collect(),
        )
    }
}

impl Drop for TcGuard {
    fn drop(&mut self) {
        use std::io::Write;
        for (f, old) in &self.0 {
            let p = Path::new(TRACEFS).join(f);
            if fs::read_to_string(&p).ok().as_ref() == Some(old) {
                continue;
            }
            eprintln!("bench: trace-cmd left {f} changed: put back");
            // A truncating write empties a list; its lines go back one by one.
            let _ = fs::write(&p, if *f == "tracing_on" { old.trim() } else { "" });
            if *f != "tracing_on" {
                if let Ok(mut w) = fs::OpenOptions::new().append(true).open(&p) {
                    for l in old.lines() {
                        let _ = w.write_all(format!("{l}\n").as_bytes());
                    }
                }
            }
        }
    }
}

/// Runs of each recorder in the recording section (TRBOX_BENCH_RUNS, else
/// 5): the machine is shared, one run says little.
fn rec_runs() -> usize {
    std::env::var("TRBOX_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(5).max(1)
}

/// A recorder's runs: the median run's counts, and CPU per MB as min /
/// median over the runs. Returns (min, median).
fn rec_print(name: &str, runs: &[RecRun]) -> (f64, f64) {
    let per_mb = |r: &RecRun| r.cpu_s * 1000.0 / (r.data_bytes as f64 / 1e6).max(0.001);
    let mut v: Vec<f64> = runs.iter().map(per_mb).collect();
    v.sort_by(f64::total_cmp);
    let (min, med) = (v[0], v[v.len() / 2]);
    let r = runs.iter().find(|r| per_mb(r) == med).unwrap_or(&runs[0]);
    let mb = r.data_bytes as f64 / 1e6;
    let lost_stats: u64 = runs.iter().map(|r| r.lost_stats).max().unwrap_or(0);
    println!(
        "  {name:<22} {:>9} {:>7.1} {:>7.3} {:>5.2} / {:<5.2} {:>9} {:>9} {:>8}",
        r.events,
        mb,
        r.cpu_s,
        min,
        med,
        lost_stats,
        if r.lost_unknown > 0 { format!("{}+{}?", r.lost_pages, r.lost_unknown) } else { r.lost_pages.to_string() },
        r.rss_kib
    );
    // A run where splice gave up (tr-cat then reads) measures the other mover.
    let movers: Vec<&str> = runs.iter().map(|r| r.mover.as_str()).filter(|m| !m.is_empty()).collect();
    if movers.iter().any(|m| *m != movers[0]) {
        println!("    (not every run moved its pages the same way: {})", movers.join(", "));
    }
    (min, med)
}

/// The live-streaming section of `make bench`: a workload followed as text
/// (stdout counted, not kept) by `tr-event` and by `trace-cmd stream`;
/// events shown, loss markers, wall time. Goal: >= 1 M events/s, 0 lost.
pub fn stream_bench(trbox: &Path) {
    if unsafe { libc::geteuid() } != 0 || !Path::new("/sys/kernel/tracing/events").is_dir() {
        println!("streaming: skipped (needs root and the live tracefs)");
        return;
    }
    let _lock = rec_lock();
    let dd = ["dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=200k"];
    let mix = ["sh", "-c", "i=0; while [ $i -lt 2000 ]; do /bin/true; sleep 0; i=$((i+1)); done"];
    let have_tc = Command::new("trace-cmd").arg("--help").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    println!(
        "streaming: the workload's events followed as text (stdout counted); written/s: the events shown over \
         the span of their timestamps (the rate the kernel wrote them); wall: start to the last line"
    );
    println!(
        "  {:<44} {:>9} {:>6} {:>10} {:>7} {:>10}",
        "streamer", "events", "losses", "written/s", "wall s", "shown/s"
    );
    for (what, events, load) in [
        ("syscalls:* during dd bs=1 count=200k", &["syscalls:*"][..], &dd[..]),
        ("sched, irq, timer during 2000 execs", &["sched:*", "irq:*", "timer:*"][..], &mix[..]),
    ] {
        let mut c = Command::new(trbox);
        c.arg("tr-event").args(events).arg("--").args(load);
        stream_print(&format!("tr-event ({what})"), &mut c);
        if have_tc {
            // trace-cmd stream -F once hung after its command ended (the
            // command a zombie): a time limit keeps the bench going.
            let mut c = Command::new("timeout");
            c.args(["-k", "5", "-s", "INT", "120", "unshare", "-m", "--propagation", "private", "sh", "-c", TC_SHADOW]);
            c.args(["sh", "trace-cmd", "stream"]);
            for e in events {
                c.args(["-e", e.trim_end_matches(":*")]);
            }
            c.arg("-F").args(load);
            let _put_back = TcGuard::new();
            stream_print(&format!("trace-cmd stream ({what})"), &mut c);
        }
    }
}

/// Run a streamer to its end: its lines, loss markers (trbox's `[LOST`,
/// trace-cmd's `DROPPED]`), the rate the kernel wrote what was shown
/// (events over the span of their timestamps) and the wall time to the last
/// line (rendering included).
fn stream_print(name: &str, c: &mut Command) {
    use std::io::BufRead;
    let t = Instant::now();
    let mut child = c.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("start the streamer");
    let (mut lines, mut lost) = (0u64, 0u64);
    let (mut first, mut last) = (f64::MAX, 0f64);
    for l in std::io::BufReader::new(child.stdout.take().unwrap()).split(b'\n').map_while(Result::ok) {
        if l.windows(5).any(|w| w == b"[LOST") || l.ends_with(b"DROPPED]") {
            lost += 1;
            continue;
        }
        lines += 1;
        // The first `SECONDS.USECS:` word is the timestamp (both layouts).
        let ts = String::from_utf8_lossy(&l)
            .split_whitespace()
            .find_map(|w| w.strip_suffix(':').filter(|w| w.contains('.')).and_then(|w| w.parse::<f64>().ok()));
        if let Some(ts) = ts {
            (first, last) = (first.min(ts), last.max(ts));
        }
    }
    let _ = child.wait();
    let wall = t.elapsed().as_secs_f64();
    let span = (last - first).max(1e-6);
    println!(
        "  {name:<44} {lines:>9} {lost:>6} {:>10.0} {wall:>7.2} {:>10.0}",
        lines as f64 / span,
        lines as f64 / wall
    );
}

/// The recording section of `make bench`.
pub fn record_bench(trbox: &Path) {
    if unsafe { libc::geteuid() } != 0 || !Path::new("/sys/kernel/tracing/events").is_dir() {
        println!("recording: skipped (needs root and the live tracefs)");
        return;
    }
    let _lock = rec_lock();
    let dir = std::env::temp_dir().join(format!("trbox-bench-rec-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    println!(
        "recording: {REC_EVENT} while `dd bs=1 count={REC_LOAD_BYTES}` runs (~{} events), stopped with SIGINT; \
         CPU = user+system of the recorder and its helpers",
        2 * REC_LOAD_BYTES
    );
    let runs = rec_runs();
    println!(
        "  {runs} runs each; events, MB, CPU s, lost:page and RSS of the median run; lost:stat the most of any run"
    );
    println!(
        "  {:<22} {:>9} {:>7} {:>7} {:>13} {:>9} {:>9} {:>8}",
        "recorder", "events", "MB", "CPU s", "ms/MB min/med", "lost:stat", "lost:page", "RSS KiB"
    );
    let tb = dir.join("trbox.dat");
    let rec = |env: Option<(&str, &str)>, out: &Path| {
        (0..runs)
            .map(|_| {
                let mut c = Command::new(trbox);
                c.args(["tr-cat", "-o", out.to_str().unwrap(), "-e", REC_EVENT]);
                if let Some((k, v)) = env {
                    c.env(k, v);
                }
                rec_run(c, out)
            })
            .collect::<Vec<_>>()
    };
    let splice = rec_print("trbox (splice)", &rec(None, &tb));
    let tbr = dir.join("trbox-read.dat");
    let read = rec_print("trbox (read+pwrite)", &rec(Some(("TRBOX_NO_SPLICE", "1")), &tbr));
    let _ = fs::remove_file(&tbr);
    let have_tc = Command::new("trace-cmd").arg("--help").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    if have_tc {
        let tc = dir.join("trace-cmd.dat");
        let put_back = TcGuard::new();
        let tc_runs: Vec<RecRun> = (0..runs)
            .map(|_| {
                let mut c = Command::new("unshare");
                c.args(["-m", "--propagation", "private", "sh", "-c", TC_SHADOW, "sh"]).args([
                    "trace-cmd",
                    "record",
                    "--file-version",
                    "6",
                    "-o",
                    tc.to_str().unwrap(),
                    "-e",
                    REC_EVENT,
                ]);
                rec_run(c, &tc)
            })
            .collect();
        let (tmin, tmed) = rec_print("trace-cmd record (v6)", &tc_runs);
        drop(put_back);
        println!(
            "  trbox / trace-cmd CPU per MB (min, median): splice {:.2}x, {:.2}x (goal <= 0.8x); read {:.2}x, {:.2}x",
            splice.0 / tmin,
            splice.1 / tmed,
            read.0 / tmin,
            read.1 / tmed
        );
        println!(
            "  (trace-cmd ran in `unshare -m` with /proc/sys/kernel/ftrace_enabled, set_ftrace_filter, \
             set_ftrace_notrace and set_ftrace_pid shadowed by bind-mounted dummies: this kernel answers EPERM)"
        );
        let _ = fs::remove_file(&tc);
    } else {
        println!("  trace-cmd not installed: no comparison");
    }
    // Reading the trbox file back: memory stays flat.
    let size = fs::metadata(&tb).map(|m| m.len()).unwrap_or(0);
    let report = dir.join("read.usage");
    let mut c = Command::new(trbox);
    c.args(["tr-cat", tb.to_str().unwrap()]);
    let (secs, _, rss) = run_measured(&c, &report);
    println!(
        "reading:   tr-cat FILE ({:.0} MB)     {secs:>6.2} s  peak RSS {rss:>7} KiB (goal <= 32768)",
        size as f64 / 1e6
    );
    if have_tc {
        let mut c = Command::new("trace-cmd");
        c.args(["report", tb.to_str().unwrap()]);
        let (secs, _, rss) = run_measured(&c, &report);
        println!("           trace-cmd report of it   {secs:>6.2} s  peak RSS {rss:>7} KiB");
    }
    let (_, _, floor) = run_measured(&Command::new("true"), &report);
    println!("           (peak RSS measured through a launcher; `true` measures {floor} KiB)");
    let _ = fs::remove_dir_all(&dir);
}

/// What recording costs the traced program: `dd bs=1 count=200k` (a read
/// and a write per byte, ~820 k `syscalls:*` events) timed by itself with
/// tracing off, with the events on and nothing reading (the kernel's own
/// cost: the floor), and under `tr-cat -o FILE -e 'syscalls:*' -- dd`
/// (and trace-cmd record the same way); best of 3 each. Issue 17's goal:
/// at most 1.2x the floor.
pub fn cost_bench(trbox: &Path) {
    let t = Path::new("/sys/kernel/tracing");
    if unsafe { libc::geteuid() } != 0 || !t.join("events/syscalls/enable").exists() {
        println!("recording cost: skipped (needs root and the syscalls events)");
        return;
    }
    let _lock = rec_lock();
    let dir = std::env::temp_dir().join(format!("trbox-bench-cost-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let took = dir.join("took");
    // dd's own wall time in ns, written by the shell around it.
    let timed = format!(
        "a=$(date +%s%N); dd if=/dev/zero of=/dev/null bs=1 count=200k status=none; b=$(date +%s%N); echo $((b - a)) > {}",
        took.display()
    );
    let best = |mk: &dyn Fn() -> Command| {
        (0..3)
            .map(|_| {
                // A run that never reached the load must not read the last one's time.
                let _ = fs::remove_file(&took);
                let st = mk().stdout(Stdio::null()).stderr(Stdio::null()).status().expect("run the load");
                assert!(st.success(), "the timed load failed");
                fs::read_to_string(&took).ok().and_then(|s| s.trim().parse::<f64>().ok()).unwrap_or(f64::NAN) / 1e9
            })
            .fold(f64::INFINITY, f64::min)
    };
    let sh = || {
        let mut c = Command::new("sh");
        c.args(["-c", &timed]);
        c
    };
    let w = |f: &str, v: &str| fs::write(t.join(f), v).unwrap_or_else(|e| panic!("{f}: {e}"));
    let on = fs::read_to_string(t.join("tracing_on")).unwrap_or_default();
    w("tracing_on", "0");
    let off = best(&sh);
    w("events/syscalls/enable", "1");
    w("tracing_on", "1");
    let floor = best(&sh);
    w("tracing_on", "0");
    w("events/syscalls/enable", "0");
    w("trace", "");
    let f = dir.join("cost.dat");
    let trbox_s = best(&|| {
        let mut c = Command::new(trbox);
        c.args(["tr-cat", "-o", f.to_str().unwrap(), "-e", "syscalls:*", "--", "sh", "-c", &timed]);
        c
    });
    let have_tc = Command::new("trace-cmd").arg("--help").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    let tc_s = have_tc.then(|| {
        let _put_back = TcGuard::new();
        best(&|| {
            let mut c = Command::new("unshare");
            c.args(["-m", "--propagation", "private", "sh", "-c", TC_SHADOW, "sh"]).args([
                "trace-cmd",
                "record",
                "-o",
                f.to_str().unwrap(),
                "-e",
                "syscalls",
                "sh",
                "-c",
                &timed,
            ]);
            c
        })
    });
    w("tracing_on", on.trim());
    println!("recording cost: `dd bs=1 count=200k` (~820 k syscalls:* events), dd's own wall time, best of 3");
    println!("  tracing off                     {off:>7.3} s");
    println!("  syscalls:* on, no reader        {floor:>7.3} s  (the floor: the kernel's own cost)");
    println!("  under tr-cat -o                 {trbox_s:>7.3} s  {:.2}x the floor (goal <= 1.2x)", trbox_s / floor);
    if let Some(tc) = tc_s {
        println!("  under trace-cmd record          {tc:>7.3} s  {:.2}x the floor", tc / floor);
    }
    let _ = fs::remove_dir_all(&dir);
}
