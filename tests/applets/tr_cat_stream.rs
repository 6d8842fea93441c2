//! `tr-cat -o -` against the live tracefs: the recording as trbox's stream
//! on standard output reads back (`tr-cat STREAM`, `tr-cat -i -`) with the
//! events the summary counted, converts into a trace.dat that `trace-cmd
//! report` reads with the same events, holds what a `tr-cat -o FILE` of
//! the same kind of run holds, and reads up to any cut with a warning.
//! tracefs is left as found.

use super::common;
use common::*;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

const EVENTS: &str = "sched:sched_switch,sched:sched_process_exec,sched:sched_process_exit,sched:sched_process_fork";
/// (`/bin/ls` by its path: busybox sh, the qemu boards', runs a bare `ls`
/// by exec'ing /proc/self/exe.)
const CMD: &[&str] = &["sh", "-c", "echo from-the-command; /bin/ls / >/dev/null; /bin/sleep 0.1; exit 3"];

/// Event lines (loss markers apart) of `tr-cat ARGS…`, which must not warn.
fn lines(args: &[&str]) -> Vec<String> {
    let mut a = vec!["tr-cat"];
    a.extend_from_slice(args);
    let o = run(&a);
    assert!(o.status.success() && !stderr(&o).contains("WARN"), "tr-cat {args:?}: {}", stderr(&o));
    stdout(&o).lines().filter(|l| !l.contains("[LOST ")).map(String::from).collect()
}

/// Event names in `trace-cmd report`'s lines, if it is installed.
fn trace_cmd_events(f: &Path) -> Option<Vec<String>> {
    Some(trace_cmd_records(f)?.iter().map(|l| event_name(l)).collect())
}

/// `sched_switch` from a text line of either tool (`…: NAME: …`).
fn event_name(l: &str) -> String {
    let after_ts = l.split_once(": ").map_or("", |(_, r)| r);
    after_ts.split(':').next().unwrap_or("").trim().to_string()
}

#[test]
fn stream_reads_back_like_a_trace_dat() {
    let Some((_l, root, before)) = live_with_snapshot() else {
        return;
    };
    let dir = TempDir::new("stream");
    let mut a = vec!["tr-cat", "-o", "-", "-e", EVENTS, "--"];
    a.extend_from_slice(CMD);
    let o = run(&a);
    let err = stderr(&o);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(o.status.code(), Some(3), "the command's status: {err}");
    // The command's own output goes to stderr, never into the stream.
    assert!(err.contains("from-the-command"), "{err}");
    assert!(o.stdout.starts_with(b"trbox-stream\n"), "not a stream");
    assert!(!o.stdout.windows(16).any(|w| w == b"from-the-command"));
    assert_same_state(&before, &snapshot(&root));
    let events = common::recorded_total(&err);
    assert!(events > 0, "{err}");
    let s = dir.path().join("rec.trbox");
    std::fs::write(&s, &o.stdout).unwrap();
    let s = s.to_str().unwrap();

    let direct = lines(&[s]);
    assert_eq!(direct.len() as u64, events, "tr-cat STREAM vs the summary");
    assert!(direct.iter().any(|l| l.contains("sched_process_exec:") && l.contains("/ls")), "{direct:?}");
    assert_eq!(direct.iter().filter(|l| l.contains("sched_process_exit:")).count(), 3, "sh, ls and sleep:\n{direct:?}");

    // From standard input.
    let mut c = cmd(&trbox(), &["tr-cat", "-i", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(&o.stdout).unwrap();
    let piped = c.wait_with_output().unwrap();
    assert!(piped.status.success(), "{}", stderr(&piped));
    assert_eq!(stdout(&piped).lines().filter(|l| !l.contains("[LOST ")).count(), direct.len(), "tr-cat -i -");

    // Converted: the same lines from the trace.dat, and trace-cmd reads it.
    let dat = dir.path().join("conv.dat");
    let c = run(&["tr-cat", s, "-o", dat.to_str().unwrap()]);
    assert!(c.status.success(), "{}", stderr(&c));
    assert_eq!(lines(&[dat.to_str().unwrap()]), direct, "tr-cat of the converted file");
    match trace_cmd_events(&dat) {
        Some(tc) => assert_eq!(
            tc,
            direct.iter().map(|l| event_name(l)).collect::<Vec<_>>(),
            "trace-cmd report of the converted file"
        ),
        None => common::skip_tool("trace-cmd", "trace-cmd checks: not installed"),
    }

    // Perfetto straight from the stream, when the schema is installed.
    let pf = dir.path().join("rec.pftrace");
    let c = run(&["tr-cat", s, "-o", pf.to_str().unwrap()]);
    assert!(c.status.success(), "{}", stderr(&c));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/applets/perfetto_check.py");
    match Command::new("python3").arg(script).arg(&pf).output() {
        Ok(p) if p.status.success() => {
            let n = String::from_utf8_lossy(&p.stdout).lines().filter(|l| l.starts_with("E ")).count();
            assert_eq!(n, direct.len(), "events in the .pftrace");
        }
        Err(_) => common::skip_tool("python3", "Perfetto check of a stream: no python3"),
        _ => skip("Perfetto check of a stream: python3 with perfetto and protobuf missing"),
    }

    // A trace.dat of the same kind of run holds the same kinds of events.
    let f = dir.path().join("direct.dat");
    let mut a = vec!["tr-cat", "-o", f.to_str().unwrap(), "-e", EVENTS, "--"];
    a.extend_from_slice(CMD);
    let o2 = run(&a);
    assert_eq!(o2.status.code(), Some(3), "{}", stderr(&o2));
    let file = lines(&[f.to_str().unwrap()]);
    let kinds = |v: &[String]| {
        let mut k: Vec<String> = v.iter().filter(|l| l.contains("sched_process_")).map(|l| event_name(l)).collect();
        k.sort();
        k
    };
    assert_eq!(kinds(&file), kinds(&direct), "process events of -o FILE and -o -");
    assert_same_state(&before, &snapshot(&root));

    cut_anywhere(dir.path(), &o.stdout, direct.len());
}

/// Cut at many offsets (the header, kallsyms, inside and between page
/// frames, the trailer): never a panic; past the start frame the events up
/// to the cut, with a warning; before it an error that says so.
fn cut_anywhere(dir: &Path, stream: &[u8], events: usize) {
    let len = stream.len();
    let mut cuts: Vec<usize> = (0..120).step_by(7).collect();
    cuts.extend((1..12).map(|i| i * len / 12));
    // Around the page data at the end: every 331 bytes of the last 12 KiB.
    cuts.extend((len.saturating_sub(12 * 1024)..len).step_by(331));
    cuts.push(len - 1);
    // Where the header ends (the H frame): a cut before it holds nothing.
    let mut header_end = 14;
    while let Some(h) = stream.get(header_end..header_end + 5) {
        header_end += 5 + u32::from_le_bytes([h[1], h[2], h[3], h[4]]) as usize;
        if h[0] == b'H' {
            break;
        }
    }
    cuts.push(header_end - 1);
    cuts.push(header_end);
    // In order: a cut is compared with the shorter ones (the header may
    // end inside the last 12 KiB, with few events after it).
    cuts.sort_unstable();
    cuts.dedup();
    let p = dir.join("cut.trbox");
    let mut last = 0;
    for &n in &cuts {
        std::fs::write(&p, &stream[..n]).unwrap();
        let o = run(&["tr-cat", p.to_str().unwrap()]);
        let err = stderr(&o);
        assert!(!err.contains("panicked"), "cut at {n}: {err}");
        if o.status.success() {
            assert!(err.contains("cut off") || err.contains("without its end"), "cut at {n}: no warning: {err}");
            let got = stdout(&o).lines().filter(|l| !l.contains("[LOST ")).count();
            assert!(got <= events, "cut at {n}: {got} events of {events}");
            if n > len - 12 * 1024 {
                assert!(got >= last, "cut at {n}: fewer events than a shorter cut");
                last = got;
            }
        } else {
            assert_eq!(o.status.code(), Some(2), "cut at {n}: {err}");
            assert!(n < header_end, "cut at {n} (the header ends at {header_end}): {err}");
            assert!(err.contains("nothing recorded") || err.contains("trbox stream"), "cut at {n}: {err}");
        }
    }
    assert_eq!(last, events, "a stream cut in its trailer still has every event");
}

#[test]
fn stream_refuses_max_kb() {
    let o = run(&["tr-cat", "-o", "-", "-m", "100", "-t", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("-m"), "{}", stderr(&o));
}

#[test]
fn converting_a_trace_dat_says_it_is_not_a_stream() {
    let dir = TempDir::new("stream-conv");
    let src = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tracedat"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "dat"))
        .unwrap();
    let out = dir.path().join("x.dat");
    let o = run(&["tr-cat", src.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a trbox stream"), "{}", stderr(&o));
    assert!(!out.exists());
}

/// `--console`: the lines rebuild the recording; console noise, `\r\n`
/// and kernel messages between lines change nothing; a damaged line is
/// named by its log line number and the rest is kept.
#[test]
fn console_lines_survive_noise_and_damage() {
    let Some((_l, root, before)) = live_with_snapshot() else {
        return;
    };
    let dir = TempDir::new("console");
    let mut a = vec!["tr-cat", "-o", "-", "--console", "-e", EVENTS, "--"];
    a.extend_from_slice(CMD);
    let o = run(&a);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert_same_state(&before, &snapshot(&root));
    assert!(err.contains("on the wire:") && err.contains("per event"), "{err}");
    let events = common::recorded_total(&err);
    let log = String::from_utf8(o.stdout.clone()).expect("console lines are text");
    assert!(
        log.starts_with("trbox-console-begin 1\n")
            && log.trim_end().lines().last().unwrap().starts_with("trbox-console-end "),
        "markers"
    );
    assert!(log.lines().all(|l| l.len() <= 120), "lines fit a console");
    // No kallsyms first: the symbols the pages name, at the end, a small
    // part of the table (/proc/kallsyms says size 0: read it).
    let table = std::fs::read("/proc/kallsyms").map_or(0, |k| k.len());
    let wire = |what: &str| -> usize {
        let at = err.find(what).unwrap_or_else(|| panic!("no '{what}' in: {err}")) + what.len();
        err[at..].split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
    };
    let (header, symbols) = (wire("= header "), wire(" + symbols "));
    assert!(err.contains("(formats)"), "{err}");
    assert!(symbols * 20 < table && header < table, "header {header}, symbols {symbols}, kallsyms {table}");
    assert!(log.len() * 4 < table, "the whole log ({} bytes) is far less than kallsyms ({table})", log.len());

    let clean = dir.path().join("clean.log");
    std::fs::write(&clean, &log).unwrap();
    let want = lines(&["--from-console", clean.to_str().unwrap()]);
    assert_eq!(want.len() as u64, events, "--from-console vs the summary");

    // As a console capture sees it: a boot log before, \r\n endings, kernel
    // messages and a prompt between the lines, a time stamp before some.
    let mut noisy =
        String::from("U-Boot 2024.01\r\n[    0.000000] Linux version 6.x\r\n# tr-cat -o - --console -- sh\r\n");
    for (i, l) in log.lines().enumerate() {
        if i % 97 == 5 {
            noisy += &format!("[ {i}.123456] random: crng init done\r\n");
        }
        if i % 13 == 0 {
            noisy += "[12:00:01.5] ";
        }
        noisy += l;
        noisy += "\r\n";
    }
    noisy += "# \r\n";
    let p = dir.path().join("noisy.log");
    std::fs::write(&p, &noisy).unwrap();
    assert_eq!(lines(&["--from-console", p.to_str().unwrap()]), want, "noise changes nothing");
    let dat = dir.path().join("console.dat");
    let c = run(&["tr-cat", "--from-console", p.to_str().unwrap(), "-o", dat.to_str().unwrap()]);
    assert!(c.status.success(), "{}", stderr(&c));
    assert_eq!(lines(&[dat.to_str().unwrap()]), want, "the converted trace.dat");
    if let Some(tc) = trace_cmd_events(&dat) {
        assert_eq!(tc, want.iter().map(|l| event_name(l)).collect::<Vec<_>>(), "trace-cmd report");
    }

    // The symbols come at the end, in blocks of their own, between the
    // pages' and the last (saved comms, stats, end). One damaged line in
    // them: named, every event still there; one in the pages' last block:
    // named, the events of the other blocks still there.
    let nl: Vec<&str> = noisy.split('\n').collect();
    let trbox_lines: Vec<usize> = nl.iter().enumerate().filter(|(_, l)| l.contains("trbox:")).map(|(i, _)| i).collect();
    let starts: Vec<usize> = trbox_lines
        .iter()
        .copied()
        .filter(|&i| matches!(nl[i].split("trbox:").nth(1).and_then(|r| r.split(':').nth(1)), Some("b" | "=")))
        .collect();
    assert!(starts.len() >= 4, "header, pages, symbols, end: {} blocks", starts.len());
    let symbols = starts[starts.len() - 2];
    let pages = trbox_lines[trbox_lines.iter().position(|&i| i == symbols).unwrap() - 1];
    for (what, at) in [("symbols", symbols), ("pages", pages)] {
        let mut d = nl.clone();
        // A flipped character in the base64 (noise on the line).
        let mut bad = d[at].as_bytes().to_vec();
        let k = bad.len() - 15;
        bad[k] = if bad[k] == b'Q' { b'R' } else { b'Q' };
        let bad = String::from_utf8(bad).unwrap();
        d[at] = &bad;
        let p = dir.path().join("damaged.log");
        std::fs::write(&p, d.join("\n")).unwrap();
        let o = run(&["tr-cat", "--from-console", p.to_str().unwrap()]);
        let err = stderr(&o);
        assert!(!err.contains("panicked"), "{err}");
        assert!(err.contains(&format!("log line {}:", at + 1)), "{what}: the damaged line named: {err}");
        let got: Vec<String> = stdout(&o).lines().filter(|l| !l.contains("[LOST ")).map(String::from).collect();
        if what == "symbols" {
            assert!(o.status.success(), "{err}");
            assert_eq!(got, want, "a damaged kallsyms line loses no event");
        } else {
            assert!(got.len() < want.len() && got.iter().all(|l| want.contains(l)), "{what}: a subset");
            assert!(err.contains("left out"), "{err}");
        }
    }
}

/// The reader goes away mid-run (`| head`, ssh dropped): the recorder
/// stops at once, quietly, and tracefs is put back.
#[test]
fn reader_gone_stops_cleanly() {
    use std::io::Read as _;
    let Some((_l, root, before)) = live_with_snapshot() else {
        return;
    };
    let mut c = cmd(
        &trbox(),
        &[
            "tr-cat",
            "-o",
            "-",
            "-e",
            "sched:sched_switch",
            "-t",
            "300",
            "--",
            "sh",
            "-c",
            "while :; do sleep 0.01; done",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut out = c.stdout.take().unwrap();
    // Read up to the end of the header (the `H` frame after kallsyms), then
    // close the pipe.
    let mut head = [0u8; 14];
    out.read_exact(&mut head).unwrap();
    loop {
        let mut h = [0u8; 5];
        out.read_exact(&mut h).unwrap();
        let mut p = vec![0u8; u32::from_le_bytes([h[1], h[2], h[3], h[4]]) as usize];
        out.read_exact(&mut p).unwrap();
        if h[0] == b'H' {
            break;
        }
    }
    drop(out);
    let start = std::time::Instant::now();
    let o = c.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    // The end the reader asked for (issue 26: it was exit 2 with "sending
    // stopped"): quietly, with the command's status (ended by trbox: 143).
    assert_eq!(o.status.code(), Some(128 + libc::SIGTERM), "{err}");
    assert!(!err.contains("sending stopped") && !err.contains("panicked"), "{err}");
    assert!(err.contains("standard output: "), "the summary: {err}");
    // -t is 300 s: ending well before it is ending at the broken pipe,
    // however slow the machine.
    assert!(start.elapsed().as_secs() < 150, "it stopped at the broken pipe, not at -t");
    assert_same_state(&before, &snapshot(&root));
}

/// Converting a stream on a terminal (issue 29): a line on stderr with the
/// MiB read so far, drawn in place and cleared before the result's line;
/// none when stderr is a pipe.
#[test]
fn conversion_progress_on_a_tty_only() {
    let Some((_l, root, before)) = live_with_snapshot() else {
        return;
    };
    let dir = TempDir::new("stream-progress");
    let o = run(&["tr-cat", "-o", "-", "-e", EVENTS, "-t", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_same_state(&before, &snapshot(&root));
    let s = dir.path().join("rec.trbox");
    std::fs::write(&s, &o.stdout).unwrap();
    let out = dir.path().join("rec.dat");
    let args = ["tr-cat", s.to_str().unwrap(), "-o", out.to_str().unwrap()];
    let (status, text) = on_pty(&args, "xterm", false);
    assert!(status.success(), "{text}");
    let (lines, after) = progress_lines(&text).unwrap_or_else(|| panic!("no progress line: {text:?}"));
    for l in &lines {
        let w: Vec<&str> = l.split_whitespace().collect();
        assert_eq!((w.len(), w[0], w[2], w[3], w[5], w[6]), (8, "tr-cat:", "MiB", "read,", "s", "so"), "{l}");
    }
    assert!(after.starts_with("tr-cat: ") && after.contains("(trace.dat version 6)"), "{after:?}");
    std::fs::remove_file(&out).unwrap();
    let o = run(&args[..]);
    assert!(o.status.success() && !stderr(&o).contains(['\r', '\x1b']), "{:?}", stderr(&o));
}

/// The console form sends only the kallsyms lines its pages name, at the
/// end: a board fixture's pages (function, function_graph, stacks, kprobes
/// and kretprobes with `func+off/size`, markers; 64- and 32-bit) sent so
/// through the console encoder read back (`--from-console`) as the text
/// of a trace.dat with the whole table; cut off before the symbols, it
/// still reads, with a warning that says they were lost.
#[test]
fn console_symbols_at_the_end_print_as_the_whole_table() {
    use trbox::kallsyms::UsedSymbols;
    use trbox::tracedat::{console, stream};
    let dir = TempDir::new("console-syms");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut compared = 0;
    for fx in [
        "aarch64-7.2/function_stack",
        "aarch64-7.2/function_graph",
        "aarch64-7.2/kprobe",
        "aarch64-7.2/kretprobe_function",
        "aarch64-7.2/stack",
        "aarch64-5.10/marker_raw",
        "armv7-7.2/function_graph",
        "armv7-7.2/kprobe",
        "x86_64/function_stack",
        "x86_64/kretprobe_function",
    ] {
        let src = fixtures.join(fx);
        if !src.join("kallsyms").is_file() {
            continue;
        }
        let name = fx.replace('/', "-");
        // The whole table's text.
        let full = dir.path().join(format!("{name}.dat"));
        let part = [dat::Part { dir: &src, min_events: 1, lost_every: None }];
        let (_, cpus) = dat::build(&src, &part, &full);
        let want = stdout(&run(&["tr-cat", full.to_str().unwrap()]));
        assert!(want.lines().count() > 3, "{fx}: {want}");
        // The H frame: the same header with no kallsyms.
        let bare = dir.path().join(&name);
        copy_tree(&src, &bare);
        std::fs::remove_file(bare.join("kallsyms")).unwrap();
        let bare_dat = dir.path().join(format!("{name}-bare.dat"));
        dat::build(&bare, &part, &bare_dat);
        let bytes = std::fs::read(&bare_dat).unwrap();
        let header = &bytes[..bytes.windows(10).position(|w| w == b"flyrecord\0").unwrap()];
        // The recorder's scan and cut.
        let trace = trbox::sys::trace::open(&src).unwrap();
        let (ps, abi) =
            (trace.layout.subbuf_size(), trbox::abi::Abi::new(trbox::abi::Endian::Little, trace.long_size()));
        let table = std::fs::read(src.join("kallsyms")).unwrap();
        let mut u = UsedSymbols::new();
        u.table_piece(&table);
        u.table_done();
        let mut s = stream::preamble().to_vec();
        let numbers: Vec<u32> = (0..cpus.len() as u32).collect();
        s.extend(stream::start_frame(abi.endian, abi.long_size as u8, ps as u32, &numbers));
        s.extend(stream::frame(b'H', header));
        for (c, pages) in cpus.iter().enumerate() {
            for p in pages.chunks(ps) {
                u.scan(p, abi);
                s.extend(stream::data_header(c as u32, p.len()));
                s.extend_from_slice(p);
            }
        }
        let cut_at = s.len();
        let mut k = Vec::new();
        u.filter_piece(&table, &mut k);
        u.filter_done(&mut k);
        assert!(!k.is_empty() && k.len() <= table.len(), "{fx}");
        s.extend(stream::frame(b'K', &k));
        s.extend(stream::named_frame(b'M', "saved_cmdlines", &std::fs::read(src.join("saved_cmdlines")).unwrap()));
        s.extend(stream::frame(b'E', b""));
        let encode = |s: &[u8]| {
            let mut e = console::Encoder::new();
            e.begin() + &e.push(s) + &e.end()
        };
        let log = dir.path().join(format!("{name}.log"));
        std::fs::write(&log, encode(&s)).unwrap();
        let o = run(&["tr-cat", "--from-console", log.to_str().unwrap()]);
        assert!(o.status.success() && stderr(&o).is_empty(), "{fx}: {}", stderr(&o));
        assert_eq!(stdout(&o), want, "{fx}: the text with the symbols the pages name");
        compared += 1;

        // Cut off before the symbols: read, said.
        std::fs::write(&log, encode(&s[..cut_at])).unwrap();
        let o = run(&["tr-cat", "--from-console", log.to_str().unwrap()]);
        let err = stderr(&o);
        assert!(o.status.success(), "{fx}: {err}");
        assert!(err.contains("no kernel symbols") && err.contains("lost"), "{fx}: {err}");
        let bare_text = stdout(&run(&["tr-cat", bare_dat.to_str().unwrap()]));
        assert_eq!(stdout(&o), bare_text, "{fx}: every event, as a trace.dat without symbols prints it");
    }
    if compared == 0 {
        common::skip("no tests/fixtures");
    }
}
