//! Hostile input: real recordings (tests/data/tracedat, tests/fixtures)
//! damaged by the test the way an adversarial campaign did, and what
//! `tr-cat` must make of them: `--json` prints only JSON, what it read past
//! is counted (stderr, `--json`'s last line, `--stats`' problems table), a
//! page size that contradicts the file is an error, a damaged time is not
//! used.

use super::common;
use common::json::is_json;
use common::*;
use std::path::{Path, PathBuf};

/// A 6-CPU arm64 recording (trace-cmd v6, 1,442 events over 0.24 s).
const LISA: &str = "tests/data/tracedat/lisa-arm64-sched-load.dat";
const LISA_SPAN: &str = "from  2084.021443 to  2084.265700";
const PAGE: usize = 4096;

fn write(dir: &TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The top buffer's (offset, size) per CPU of a v6 trace.dat: the table
/// after `flyrecord\0` (pairs of u64, page-aligned offsets; the clock's
/// length ends it).
fn cpu_data(dat: &[u8]) -> Vec<(usize, usize)> {
    let at = dat.windows(10).position(|w| w == b"flyrecord\0").unwrap() + 10;
    let u64_at = |i: usize| u64::from_le_bytes(dat[i..i + 8].try_into().unwrap()) as usize;
    (0..)
        .map(|c| (u64_at(at + 16 * c), u64_at(at + 16 * c + 8)))
        .take_while(|&(off, size)| off > 0 && off % PAGE == 0 && off + size <= dat.len())
        .collect()
}

/// Where the first record's payload is in the (little-endian, 8-byte
/// commit) page at `page`: after its event header (and length word).
fn first_payload(dat: &[u8], page: usize) -> usize {
    let mut at = page + 16;
    loop {
        let h = u32::from_le_bytes(dat[at..at + 4].try_into().unwrap());
        match h & 0x1f {
            1..=28 => return at + 4,
            0 => return at + 8,
            // Time extend or absolute stamp: 8 bytes, then the record.
            30 | 31 => at += 8,
            t => panic!("type_len {t} first in the page at {page}"),
        }
    }
}

/// Every line of `out` is one JSON value.
fn only_json(out: &str) {
    for l in out.lines() {
        assert!(is_json(l), "not JSON: {l}");
    }
}

/// `--stats`' first line: `N events, from A to B (S s)`.
fn span(args: &[&str]) -> String {
    let mut a = vec!["tr-cat", "--stats"];
    a.extend_from_slice(args);
    let o = applet(a[0], &a[1..]);
    stdout(&o).lines().next().unwrap_or("").to_string()
}

#[test]
fn json_checker_takes_json_and_nothing_else() {
    for ok in ["{}", "[]", "{\"a\":[1,-2.5e3,\"x\\u0041\",true,null]}", " 0 "] {
        assert!(is_json(ok), "{ok}");
    }
    for bad in ["", "{", "{\"a\":}", "[1,]", "01", "\"\u{1b}\"", "<idle>-0 [000] dn.1 2084.202269: type: 255", "{} {}"]
    {
        assert!(!is_json(bad), "{bad}");
    }
}

/// A record whose event id no format describes (one changed `common_type`
/// in a real file): text prints it as `type: N`, `--json` leaves it out
/// (a JSON line is an event's) and both count it, on stderr and in
/// `--json`'s and `--stats`' problem counts.
#[test]
fn an_unknown_event_id_is_counted_and_json_stays_json() {
    let mut dat = std::fs::read(LISA).unwrap();
    let (cpu0, _) = cpu_data(&dat)[0];
    let p = first_payload(&dat, cpu0);
    dat[p..p + 2].copy_from_slice(&0xfff0u16.to_le_bytes());
    let dir = TempDir::new("hostile-id");
    let f = write(&dir, "id.dat", &dat);

    let o = applet("tr-cat", &["--json", s(&f)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    only_json(&out);
    assert_eq!(out.lines().count(), 1_441 + 1, "the other events and the problems line");
    assert_eq!(out.lines().last(), Some("{\"problems\":{\"unknown_event\":1}}"));
    assert!(stderr(&o).contains("event id 65520: no event format describes it"), "{}", stderr(&o));

    let o = applet("tr-cat", &[s(&f)]);
    assert!(stdout(&o).contains(": type: 65520"), "text shows the record as the kernel would");
    let o = applet("tr-cat", &["--stats", s(&f)]);
    assert!(stdout(&o).contains("unknown_event: event id 65520: 1 record no event format describes"), "{}", stdout(&o));
}

/// A format file cut short in a tracefs copy (sched_switch's, of a real
/// x86_64 board's recording): it is told, counted as a bad format, and its
/// records are unknown events, out of `--json`.
#[test]
fn a_format_cut_short_is_told_and_counted() {
    let dir = TempDir::new("hostile-format");
    copy_tree(Path::new("tests/fixtures/x86_64/events"), dir.path());
    let fmt = dir.path().join("events/sched/sched_switch/format");
    let text = std::fs::read_to_string(&fmt).unwrap();
    std::fs::write(&fmt, &text[..text.find("ID:").unwrap()]).unwrap();
    let o = applet("tr-cat", &["--raw", "-T", s(dir.path()), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (out, err) = (stdout(&o), stderr(&o));
    only_json(&out);
    assert!(!out.contains("sched_switch"), "{out}");
    assert!(err.contains("sched_switch/format") && err.contains("no event format describes it"), "{err}");
    let last = out.lines().last().unwrap();
    assert!(last.starts_with("{\"problems\":{\"bad_format\":1,\"unknown_event\":64}"), "{last}");
}

/// The file header's page size changed (the campaign read 980 or 493 of
/// 1,442 events, with exit 0 and no word): contradicting header_page, or
/// no kernel's size, it is an error that says which.
#[test]
fn a_page_size_that_contradicts_the_file_is_an_error() {
    let dat = std::fs::read(LISA).unwrap();
    // "\x17\x08Dtracing" "6\0" endian long_size, then the u32 page size.
    assert_eq!(u32::from_le_bytes(dat[14..18].try_into().unwrap()), 4096);
    let dir = TempDir::new("hostile-pagesize");
    for size in [8192u32, 16384, 65536, 4097, 2048, 0] {
        let mut d = dat.clone();
        d[14..18].copy_from_slice(&size.to_le_bytes());
        let f = write(&dir, &format!("ps{size}.dat"), &d);
        let o = applet("tr-cat", &[s(&f)]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "page size {size}: {err}");
        assert!(stdout(&o).is_empty(), "page size {size}");
        let why = if size.is_power_of_two() && size >= 4096 {
            "is not header_page's sub-buffer size (4096 bytes)"
        } else {
            "is no kernel's (a power of two, 4096 or more)"
        };
        assert!(err.contains(&format!("page size {size} {why}")), "{err}");
    }
    // A v7 file: its top buffer's BUFFER option says 4096 too.
    let v7 = std::fs::read("tests/data/tracedat/v7-none-inst.dat").unwrap();
    let mut d = v7.clone();
    d[14..18].copy_from_slice(&8192u32.to_le_bytes());
    let o = applet("tr-cat", &[s(&write(&dir, "v7.dat", &d))]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// 300 bytes overwritten in a page (the campaign's damage): what is
/// skipped is counted (`--json`'s last line, `--stats`' problems table),
/// and no damaged time is used (a 2 s recording showed a 405 s span).
#[test]
fn damaged_pages_are_counted_and_their_times_not_used() {
    let dat = std::fs::read(LISA).unwrap();
    let dir = TempDir::new("hostile-damage");
    let cpus = cpu_data(&dat);
    assert_eq!(cpus.len(), 6);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for (i, &(off, size)) in cpus.iter().enumerate() {
        for page in (0..size / PAGE).take(2) {
            let mut d = dat.clone();
            // 300 pseudo-random bytes a third into the page.
            for b in &mut d[off + page * PAGE + 1_300..][..300] {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                *b = seed as u8;
            }
            let f = write(&dir, &format!("cpu{i}-{page}.dat"), &d);
            let o = applet("tr-cat", &["--json", s(&f)]);
            assert!(o.status.success(), "{}", stderr(&o));
            let out = stdout(&o);
            only_json(&out);
            let last = out.lines().last().unwrap();
            assert!(last.starts_with("{\"problems\":{"), "cpu{i} page {page}: {last}");
            let stats = stdout(&applet("tr-cat", &["--stats", s(&f)]));
            assert!(stats.contains("\n    problems  kind: the first of them\n"), "{stats}");
            // The times are within the recording's.
            let first = stats.lines().next().unwrap();
            let (a, b) = first.split_once(", from").unwrap().1.split_once(" to").unwrap();
            let ts = |t: &str| t.trim().split_once(' ').map_or(t.trim(), |x| x.0).parse::<f64>().unwrap();
            assert!(ts(a) >= 2084.021443 && ts(b) <= 2084.265700, "cpu{i} page {page}: {first}");
        }
    }
}

/// A page whose header time stamp is damaged (far after the next page's):
/// its times are not used, it is counted as `bad_time`, and the span is
/// the recording's.
#[test]
fn a_damaged_page_stamp_is_a_problem_not_a_time() {
    let mut dat = std::fs::read(LISA).unwrap();
    let (cpu2, _) = cpu_data(&dat)[2];
    // The second page of CPU 2: its stamp 400 s later.
    let stamp = cpu2 + PAGE;
    let t = u64::from_le_bytes(dat[stamp..stamp + 8].try_into().unwrap());
    dat[stamp..stamp + 8].copy_from_slice(&(t + 400_000_000_000).to_le_bytes());
    let dir = TempDir::new("hostile-stamp");
    let f = write(&dir, "stamp.dat", &dat);
    assert!(span(&[s(&f)]).contains(LISA_SPAN), "{}", span(&[s(&f)]));
    let o = applet("tr-cat", &["--json", s(&f)]);
    assert_eq!(stdout(&o).lines().last(), Some("{\"problems\":{\"bad_time\":1}}"));
    assert!(stderr(&o).contains("cpu2: skipped a page whose times are out of order (its page 2)"), "{}", stderr(&o));
    let stats = stdout(&applet("tr-cat", &["--stats", s(&f)]));
    assert!(stats.contains("bad_time: cpu2: 1 page with times out of order skipped"), "{stats}");
}

/// A copy of the x86_64 board's recording in `dir`.
fn board_copy(dir: &TempDir) -> &Path {
    copy_tree(Path::new("tests/fixtures/x86_64/events"), dir.path());
    dir.path()
}

/// A saved_cmdlines far larger than a kernel's (which has at most 32,768
/// lines of 15-byte comms): cut to that, told and counted. Its 1.1 M
/// lines took tr-cat to 352 MB: a copy per rendering thread.
#[test]
fn a_saved_cmdlines_larger_than_a_kernels_is_cut_to_it() {
    let dir = TempDir::new("hostile-cmdlines");
    let tree = board_copy(&dir);
    let mut text = String::new();
    for pid in 1..=40_000 {
        text += &format!("{pid} c{}\n", pid % 100);
    }
    text += "40001 a-comm-longer-than-a-kernels\n";
    std::fs::write(tree.join("saved_cmdlines"), &text).unwrap();
    let o = applet("tr-cat", &["--raw", "-T", s(tree), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said = "saved_cmdlines: 7233 lines past a kernel's 32768 left out, 0 comms cut to 15 bytes";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    only_json(&stdout(&o));
    assert_eq!(stdout(&o).lines().last(), Some("{\"problems\":{\"too_large\":1}}"));
    let stats = stdout(&applet("tr-cat", &["--raw", "-T", s(tree), "--stats"]));
    // (The table clips each message to its width.)
    assert!(stats.contains(&format!("too_large: {}", &said[..50])), "{stats}");
}

/// A format of 60,000 fields (3.1 MB; a kernel's event has at most a few
/// hundred) made 830 KB lines, and --json 705 MB: it is no kernel's
/// format, told and counted.
#[test]
fn a_format_with_more_fields_than_a_kernels_is_refused() {
    let dir = TempDir::new("hostile-fields");
    let tree = board_copy(&dir);
    let fmt = tree.join("events/sched/sched_switch/format");
    let text = std::fs::read_to_string(&fmt).unwrap();
    let head = &text[..text.find("\tfield:char prev_comm").unwrap()];
    let fields: String =
        (0..60_000).map(|i| format!("\tfield:int f{i};\toffset:{};\tsize:4;\tsigned:1;\n", 8 + i % 16 * 4)).collect();
    std::fs::write(&fmt, format!("{head}{fields}\nprint fmt: \"x\"\n")).unwrap();
    let o = applet("tr-cat", &["--raw", "-T", s(tree), "--json"]);
    let (out, err) = (stdout(&o), stderr(&o));
    // The 257th field's line.
    let line = head.lines().count() + 257 - head.matches("field:").count();
    assert!(
        err.contains(&format!("sched_switch/format: line {line}: more fields than any kernel's event has (256)")),
        "{err}"
    );
    only_json(&out);
    assert!(out.lines().all(|l| l.len() < 4096), "no line of a 60,000-field event");
    assert!(out.lines().last().unwrap().starts_with("{\"problems\":{\"bad_format\":1,"), "{out}");
}

/// The peak resident set of `trbox ARGS…` (stdout thrown away), in KiB.
// The child is reaped by wait4: std's wait gives no rusage.
#[allow(clippy::zombie_processes)]
fn peak_kib(args: &[&str]) -> i64 {
    let child = cmd(&trbox(), args).stdout(std::process::Stdio::null()).spawn().unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 on our own child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut ru) };
    assert!(pid > 0 && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "trbox {args:?}: {status}");
    ru.ru_maxrss
}

/// Records that render into long lines (240 fields of 180-byte names:
/// 45 KB of JSON each, within what a kernel's format can be): the
/// rendering threads hold batches bounded in bytes, not 1,024 records
/// each, so four threads take about what one does (they took 7 times as
/// much, 66 MB for 9.5).
#[test]
fn rendering_threads_hold_batches_bounded_in_bytes() {
    let dir = TempDir::new("hostile-batches");
    let tree = board_copy(&dir);
    let names: String =
        (0..240).map(|i| format!("\tfield:int {}{i};\toffset:4;\tsize:4;\tsigned:1;\n", "n".repeat(180))).collect();
    for sys in std::fs::read_dir(tree.join("events")).unwrap().flatten().filter(|e| e.path().is_dir()) {
        for ev in std::fs::read_dir(sys.path()).unwrap().flatten() {
            let fmt = ev.path().join("format");
            let Ok(text) = std::fs::read_to_string(&fmt) else { continue };
            let Some(at) = text.find("\tfield:int common_pid") else { continue };
            let end = at + text[at..].find('\n').unwrap() + 1;
            std::fs::write(&fmt, format!("{}\n{names}\nprint fmt: \"x\"\n", &text[..end])).unwrap();
        }
    }
    let json = |j: &str| peak_kib(&["tr-cat", "--raw", "-T", s(tree), "--json", "-j", j]);
    let (one, four) = (json("1"), json("4"));
    assert!(four < one + 16 * 1024, "--json -j 4: {four} KiB, -j 1: {one} KiB");
}

/// A comm that drives a terminal: OSC 0 (set the title), BEL, ED 2 (clear
/// the screen), cut to a kernel's 15 bytes.
const EVIL: &[u8] = b"\x1b]0;owned\x07\x1b[2Js";
/// How a terminal shows it (`ls -b`'s escapes).
const EVIL_SHOWN: &str = "\\033]0;owned\\a\\033[2Js";

/// Whether `b` holds `what`.
fn holds(b: &[u8], what: &[u8]) -> bool {
    b.windows(what.len()).any(|w| w == what)
}

/// What the trace's writers put in a comm goes out byte for byte into a
/// pipe or a file (the kernel's `trace` prints it raw too), and escaped on
/// a terminal: from saved_cmdlines, from a record's own comm field, from
/// the `trace` file plain `tr-cat` prints.
#[test]
fn terminal_escapes_from_the_trace_are_shown_escaped_on_a_terminal_only() {
    let dir = TempDir::new("hostile-escapes");
    let tree = board_copy(&dir);
    // saved_cmdlines: pid 100, the board's `sh`.
    let cl = std::fs::read(tree.join("saved_cmdlines")).unwrap();
    let cl = [&b"100 "[..], EVIL, b"\n", &cl[..]].concat();
    std::fs::write(tree.join("saved_cmdlines"), cl).unwrap();
    // The `trace` file: a line of it.
    let text = std::fs::read(tree.join("trace")).unwrap();
    std::fs::write(tree.join("trace"), [&b"# "[..], EVIL, b"\n", &text[..]].concat()).unwrap();
    // A record's own comm: every kworker/4:2 comm field of a recording.
    let mut dat = std::fs::read(LISA).unwrap();
    let at: Vec<usize> = (0..dat.len() - 16).filter(|&i| dat[i..].starts_with(b"kworker/4:2\0")).collect();
    assert!(!at.is_empty());
    for i in at {
        dat[i..i + 16].copy_from_slice(&[EVIL, b"\0"].concat());
    }
    let f = write(&dir, "comm.dat", &dat);

    for (args, whose) in [
        (vec!["tr-cat", "--raw", "-T", s(tree)], "saved_cmdlines"),
        (vec!["tr-cat", s(&f)], "a record's comm"),
        (vec!["tr-cat", "-T", s(tree)], "the trace file"),
    ] {
        let o = applet(args[0], &args[1..]);
        assert!(o.status.success() && holds(&o.stdout, EVIL), "{whose}: raw into a pipe");
        let (st, shown) = on_pty(&args, "xterm", true);
        assert!(st.success(), "{whose}: {shown}");
        assert!(shown.contains(EVIL_SHOWN) && !holds(shown.as_bytes(), b"\x1b]0;owned"), "{whose}: {shown}");
    }
}
