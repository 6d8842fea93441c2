//! `tr-cat FILE` against `trace-cmd report -N` on files trace-cmd wrote
//! (tests/data/tracedat: v6, v7 uncompressed, v7 zstd, v7 zlib, each with an
//! extra buffer `inst1`; v6 and v7 with only an instance buffer `fx`; one
//! without events): the same events, with the same bodies, every buffer by
//! default.

use super::common;
use common::*;
use std::process::Command;

/// (pid, cpu, timestamp, event, body with whitespace collapsed).
fn key(line: &str, ours: bool) -> Option<(String, String, String, String, String)> {
    let open = line.find(" [")?;
    let close = open + line[open..].find("] ")?;
    let pid = line[..open].trim().rsplit('-').next()?.to_string();
    let cpu = line[open + 2..close].to_string();
    let mut rest = line[close + 2..].trim_start();
    if ours {
        rest = rest.split_once(' ')?.1.trim_start(); // latency flags
    }
    let (ts, rest) = rest.split_once(": ")?;
    let (ev, body) = rest.split_once(": ").unwrap_or((rest, ""));
    let body = body.split_whitespace().collect::<Vec<_>>().join(" ");
    Some((pid, cpu, ts.trim().to_string(), ev.trim().to_string(), body))
}

fn have_trace_cmd() -> bool {
    if !common::have_trace_cmd() {
        common::skip("trace-cmd is not installed (make setup installs it)");
        return false;
    }
    true
}

/// `trace-cmd report -N` of a fixture. Debian's trace-cmd has no zlib, so for
/// the zlib file it falls back to the report stored next to it (made by a
/// zlib-capable build of the same trace-cmd, see make.sh).
fn report(path: &str, zlib: bool) -> String {
    let live_zlib = || {
        let o = Command::new("trace-cmd").args(["list", "-c"]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).split_whitespace().any(|w| w.trim_end_matches(',') == "zlib")
    };
    if zlib && !live_zlib() {
        let stored = path.replace(".dat", ".report");
        eprintln!("{path}: system trace-cmd has no zlib, comparing with {stored}");
        return std::fs::read_to_string(&stored).unwrap();
    }
    let rep = Command::new("trace-cmd").args(["report", "-N", path]).output().unwrap();
    assert!(rep.status.success(), "trace-cmd report {path}");
    String::from_utf8_lossy(&rep.stdout).into_owned()
}

#[test]
fn trace_cmd_files_read_like_trace_cmd_report() {
    if !have_trace_cmd() {
        return;
    }
    let mut total = 0;
    let mut same = 0;
    let mut bad = Vec::new();
    for f in ["v6-inst", "v7-none-inst", "v7-zstd-inst", "v7-zlib-inst"] {
        let path = format!("tests/data/tracedat/{f}.dat");
        let rep = report(&path, f.contains("zlib"));
        let (mut file_total, mut file_same) = (0, 0);
        for buf in ["", "inst1"] {
            let theirs: Vec<_> = rep
                .lines()
                .filter(|l| l.contains(" [") && l.contains("]  "))
                .filter_map(|l| match l.split_once(": ") {
                    Some((p, rest)) if !p.contains(' ') && !p.contains('[') => (p == buf).then_some(rest),
                    _ => buf.is_empty().then_some(l),
                })
                .filter_map(|l| key(l, false))
                .collect();
            // -B picks one buffer ('' the top one).
            let o = run(&["tr-cat", path.as_str(), "-B", buf]);
            assert!(o.status.success(), "{path} -B '{buf}': {}", stderr(&o));
            let ours: Vec<_> = stdout(&o).lines().filter_map(|l| key(l, true)).collect();
            assert_eq!(theirs.len(), ours.len(), "{path} buffer '{buf}': event count");
            file_total += theirs.len();
            for (a, b) in theirs.iter().zip(&ours) {
                total += 1;
                if a == b {
                    same += 1;
                    file_same += 1;
                } else if bad.len() < 10 {
                    bad.push(format!("{path} '{buf}':\n  trace-cmd: {a:?}\n  trbox:     {b:?}"));
                }
            }
        }
        println!("{path}: {file_same}/{file_total} events identical");
        assert!(file_total > 0, "{path}: no events in trace-cmd's report");
    }
    println!("{same}/{total} events identical");
    assert!(total > 1000);
    assert!(same as f64 >= 0.999 * total as f64, "{}", bad.join("\n"));
}

/// The event lines of a report, without the `cpus=N` header.
fn event_lines(report: &str) -> Vec<&str> {
    report.lines().filter(|l| l.contains(" [") && l.contains("]  ")).collect()
}

/// A file whose only buffer is the instance `fx` (`trace-cmd record -B fx`):
/// v6 still has an empty top buffer, v7 has none. Both show fx's events,
/// as one buffer: without the `fx: ` that trace-cmd puts before each line.
#[test]
fn instance_only_files_read_like_trace_cmd_report() {
    if !have_trace_cmd() {
        return;
    }
    for f in ["v6-only-fx", "v7-only-fx"] {
        let path = format!("tests/data/tracedat/{f}.dat");
        let rep = report(&path, false);
        let theirs: Vec<_> = event_lines(&rep)
            .into_iter()
            .map(|l| l.strip_prefix("fx: ").unwrap_or_else(|| panic!("{path}: no 'fx: ' in {l:?}")))
            .map(|l| key(l, false).unwrap())
            .collect();
        assert!(theirs.len() > 50, "{path}: {} events in trace-cmd's report", theirs.len());
        let o = run(&["tr-cat", &path]);
        assert!(o.status.success(), "{path}: {}", stderr(&o));
        let text = stdout(&o);
        assert!(text.lines().all(|l| !l.starts_with("fx")), "{path}: one buffer, no label:\n{text}");
        let ours: Vec<_> = text.lines().filter_map(|l| key(l, true)).collect();
        assert_eq!(ours, theirs, "{path}");
        // -B fx picks the same buffer.
        let b = run(&["tr-cat", &path, "-B", "fx"]);
        assert_eq!(stdout(&b), text, "{path} -B fx");
        // One buffer: JSON as for any single buffer, without a buffer field.
        let j = run(&["tr-cat", "--json", &path]);
        let json = stdout(&j);
        assert_eq!(json.lines().count(), theirs.len(), "{path} --json");
        assert!(!json.contains("\"buffer\""), "{path} --json");
    }
    // No top buffer in the v7 file: -B '' says what there is.
    let o = run(&["tr-cat", "tests/data/tracedat/v7-only-fx.dat", "-B", ""]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("(it has: fx)"), "{}", stderr(&o));
}

/// Several buffers: merged by time, each line after its buffer's label
/// exactly as `trace-cmd report` writes it (`inst1: `, blanks of the same
/// width for the top buffer).
#[test]
fn several_buffers_merge_like_trace_cmd_report() {
    if !have_trace_cmd() {
        return;
    }
    let (mut total, mut same, mut bad) = (0, 0, Vec::new());
    for f in ["v6-inst", "v7-none-inst", "v7-zstd-inst", "v7-zlib-inst"] {
        let path = format!("tests/data/tracedat/{f}.dat");
        let rep = report(&path, f.contains("zlib"));
        let theirs = event_lines(&rep);
        for j in ["1", "4"] {
            let o = run(&["tr-cat", &path, "-j", j]);
            assert!(o.status.success(), "{path}: {}", stderr(&o));
            let text = stdout(&o);
            let ours: Vec<&str> = text.lines().collect();
            assert_eq!(ours.len(), theirs.len(), "{path} -j {j}: event count");
            for (n, (a, b)) in theirs.iter().zip(&ours).enumerate() {
                // The label: "inst1: " or 7 blanks.
                let (la, ra) = a.split_at(7);
                let (lb, rb) = b.split_at(7.min(b.len()));
                assert_eq!(la, lb, "{path} line {}: label\n  trace-cmd: {a}\n  trbox:     {b}", n + 2);
                let (ka, kb) = (key(ra, false).unwrap(), key(rb, true).unwrap());
                // Merged the same way: same order of (pid, cpu, ts, event).
                assert_eq!((&ka.0, &ka.1, &ka.2, &ka.3), (&kb.0, &kb.1, &kb.2, &kb.3), "{path} line {}", n + 2);
                total += 1;
                if ka == kb {
                    same += 1;
                } else if bad.len() < 10 {
                    bad.push(format!("{path}:\n  trace-cmd: {ka:?}\n  trbox:     {kb:?}"));
                }
            }
        }
        // JSON names the buffer of each event when there are several.
        let j = run(&["tr-cat", "--json", &path]);
        let json = stdout(&j);
        let inst = json.lines().filter(|l| l.contains(",\"buffer\":\"inst1\",")).count();
        let top = json.lines().filter(|l| l.contains(",\"buffer\":\"\",")).count();
        assert_eq!(
            (top, inst),
            (
                theirs.iter().filter(|l| !l.starts_with("inst1: ")).count(),
                theirs.iter().filter(|l| l.starts_with("inst1: ")).count()
            ),
            "{path} --json"
        );
    }
    println!("{same}/{total} lines identical");
    assert!(same as f64 >= 0.999 * total as f64, "{}", bad.join("\n"));
}

/// A file whose buffers hold no event: nothing on stdout, and stderr says
/// so (exit 0: reading worked); the same for --stats and tr-graph -i.
#[test]
fn a_file_without_events_says_so() {
    let path = "tests/data/tracedat/v6-no-events.dat";
    for args in [
        &["tr-cat", path][..],
        &["tr-cat", path, "-j", "1"],
        &["tr-cat", "--json", path],
        &["tr-cat", path, "-B", "fx"],
        &["tr-cat", "--stats", path],
        &["tr-graph", "-i", path],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("v6-no-events.dat: no events in"), "{args:?}: {err}");
        assert!(!err.contains("truncated"), "{args:?}: {err}");
        if args[1] != "--stats" && args[1] != "-i" {
            assert_eq!(stdout(&o), "", "{args:?}");
        }
    }
    let o = run(&["tr-cat", path]);
    assert!(stderr(&o).contains("no events in any of its buffers: (top), fx"), "{}", stderr(&o));
    let o = run(&["tr-cat", path, "-B", "fx"]);
    assert!(stderr(&o).contains("no events in buffer 'fx'"), "{}", stderr(&o));
    // A file with events: no such note.
    let o = run(&["tr-cat", "tests/data/tracedat/v6-only-fx.dat"]);
    assert!(!stderr(&o).contains("no events"), "{}", stderr(&o));
}

/// `tr-graph -i` and `tr-cat --stats` read an instance-only file like
/// `tr-cat` does: every buffer.
#[test]
fn graph_and_stats_read_instance_only_files() {
    for f in ["v6-only-fx", "v7-only-fx"] {
        let path = format!("tests/data/tracedat/{f}.dat");
        let cat = stdout(&run(&["tr-cat", &path]));
        assert!(cat.lines().count() > 50, "{path}");
        // No funcgraph records: the events in the plain layout, after the
        // graph header.
        let o = run(&["tr-graph", "-i", &path]);
        assert!(o.status.success(), "{path}: {}", stderr(&o));
        let graph = stdout(&o);
        let events: Vec<&str> = graph.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(events, cat.lines().collect::<Vec<_>>(), "{path}: tr-graph -i");
        let o = run(&["tr-cat", "--stats", &path]);
        assert!(o.status.success(), "{path}: {}", stderr(&o));
        let st = stdout(&o);
        let counts = std::fs::read_to_string(path.replace(".dat", ".counts")).unwrap();
        let total: u64 = counts.lines().map(|l| l.split_whitespace().nth(2).unwrap().parse::<u64>().unwrap()).sum();
        assert!(st.starts_with(&format!("{total} events, from")), "{path}: {st}");
        // One buffer: the CPU table as for any buffer.
        assert!(st.contains("\n  cpu       events         lost\n"), "{path}: {st}");
        for l in counts.lines() {
            let w: Vec<&str> = l.split_whitespace().collect();
            assert!(
                st.contains(&format!("{:>5} {:>12} {:>12}\n", w[1], w[2], 0)),
                "{path}: cpu {} {}: {st}",
                w[1],
                w[2]
            );
        }
    }
    // Several buffers: a row per (buffer, CPU), as trace-cmd counted them.
    let st = stdout(&run(&["tr-cat", "--stats", "tests/data/tracedat/v6-inst.dat"]));
    assert!(st.contains("  buffer            cpu       events         lost\n"), "{st}");
    for l in std::fs::read_to_string("tests/data/tracedat/v6-inst.counts").unwrap().lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        let name = if w[0] == "-" { "(top)" } else { w[0] };
        assert!(st.contains(&format!("  {name:<16}{:>5} {:>12} {:>12}\n", w[1], w[2], 0)), "{l}: {st}");
    }
}

/// An intact trace.dat with two buffers, and a copy of it in `dir` cut
/// 5000 bytes short: both CPUs of its last buffer run past the cut.
const INTACT: &str = "tests/data/tracedat/v6-inst.dat";
fn cut_copy(dir: &TempDir) -> String {
    let cut = dir.path().join("cut.dat");
    let full = std::fs::read(INTACT).unwrap();
    std::fs::write(&cut, &full[..full.len() - 5000]).unwrap();
    cut.to_str().unwrap().to_string()
}

/// `--stats` ends with what was read past (trbox::problems): a count per
/// kind and the first message of each, the one stderr's warning says; an
/// intact file has no such part.
#[test]
fn stats_count_the_problems_read_past() {
    let st = stdout(&run(&["tr-cat", "--stats", INTACT]));
    assert!(!st.contains("problems"), "{st}");
    let dir = TempDir::new("stats-cut");
    let o = run(&["tr-cat", "--stats", &cut_copy(&dir)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (st, err) = (stdout(&o), stderr(&o));
    let warned: Vec<&str> = err.lines().filter_map(|l| l.split_once("cut.dat: ").map(|x| x.1)).collect();
    assert_eq!(warned.len(), 2, "{err}");
    let want = format!("\n    problems  kind: the first of them\n           2  cut_off: {}\n", warned[0]);
    assert!(st.ends_with(&want), "{st}");
}

/// `--json` carries the same counts as `--stats`: one last line,
/// `{"problems":{KIND:N,…}}`, after the events that could be read; an
/// intact file has no such line.
#[test]
fn json_ends_with_the_problem_counts() {
    let js = stdout(&run(&["tr-cat", "--json", INTACT]));
    assert!(js.lines().all(|l| l.starts_with("{\"ts_ns\":")), "{js}");
    assert!(!js.contains("problems"));
    let dir = TempDir::new("json-cut");
    let o = run(&["tr-cat", "--json", &cut_copy(&dir)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let js = stdout(&o);
    let lines: Vec<&str> = js.lines().collect();
    assert!(lines.len() > 1, "{js}");
    assert_eq!(lines.last(), Some(&"{\"problems\":{\"cut_off\":2}}"), "{js}");
    assert!(lines[..lines.len() - 1].iter().all(|l| l.starts_with("{\"ts_ns\":")), "{js}");
}

/// Files of 4.x arm64 boards that say nothing of their kernel (an old
/// trace-cmd wrote no UNAME option; cut from LISA's test suite, see
/// tests/data/tracedat/README.md): the same events as `trace-cmd report`,
/// the 4 latency columns of kernels before 5.13, and -v says what the
/// version was inferred from.
#[test]
fn files_of_4x_kernels_without_uname_read_like_trace_cmd_report() {
    let files = [
        ("lisa-arm64-rtapp", "kernel version before 4.9 (inferred from", "no ftrace event hwlat (added in 4.9)"),
        (
            "lisa-arm64-sched-load",
            "kernel version 4.10 or later, before 4.14 (inferred from",
            "ftrace event raw_data (4.10 on), sched_switch prev_state \"K\" (before 4.14)",
        ),
    ];
    for (f, version, clues) in files {
        let path = format!("tests/data/tracedat/{f}.dat");
        let o = run(&["tr-cat", "-v", path.as_str()]);
        assert!(o.status.success(), "{path}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(version) && err.contains(clues), "{path}: {err}");
        assert!(err.contains("latency columns of kernels before 5.13"), "{path}: {err}");
        let text = stdout(&o);
        // The kernel's prefix before 5.13: irqs-off, need-resched,
        // hard/softirq and the preempt count in 4 columns (5.10's and 4.x's
        // trace_print_lat_fmt()).
        let cols: Vec<&str> =
            text.lines().filter_map(|l| l.split_once("] ").and_then(|(_, r)| r.split_whitespace().next())).collect();
        assert!(cols.len() > 500, "{path}: {} lines", cols.len());
        assert!(cols.iter().all(|c| c.len() == 4), "{path}: {:?}", cols.iter().find(|c| c.len() != 4));
        if !have_trace_cmd() {
            continue;
        }
        // trace-cmd report -l prints the same columns (then a fifth, the
        // migrate-disable count libtraceevent adds), except that it shows
        // need-resched as `N` alone where the kernel tells `n` (only
        // TIF_NEED_RESCHED) from `N` (and PREEMPT_NEED_RESCHED).
        let lat = Command::new("trace-cmd").args(["report", "-l", "-N", path.as_str()]).output().unwrap();
        let theirs: Vec<String> = String::from_utf8_lossy(&lat.stdout)
            .lines()
            .filter(|l| !l.starts_with("cpus="))
            .filter_map(|l| l.split_whitespace().nth(1).map(|w| w.chars().rev().skip(1).take(4).collect::<Vec<_>>()))
            .map(|c| c.into_iter().rev().collect())
            .collect();
        assert_eq!(theirs.len(), cols.len(), "{path}: lines of report -l");
        for (a, b) in theirs.iter().zip(&cols) {
            assert_eq!(a.as_str(), b.replace('n', "N"), "{path}: latency columns");
        }
        // The events: print and bprint are the kernel's `IP: text` (no
        // event name; %p without 0x, as 4.x printed it); trace-cmd says
        // `bprint: 0xIP: text`.
        let rep = report(&path, false);
        let theirs: Vec<_> = rep
            .lines()
            .filter(|l| !l.starts_with("cpus="))
            .filter_map(|l| key(l, false))
            .map(|(pid, cpu, ts, ev, body)| match ev.as_str() {
                "print" | "bprint" => {
                    let (ip, rest) = body.split_once(": ").unwrap_or((body.as_str(), ""));
                    (pid, cpu, ts, ip.to_string(), rest.replace("=0x", "="))
                }
                _ => (pid, cpu, ts, ev, body),
            })
            .collect();
        let ours: Vec<_> = text.lines().filter_map(|l| key(l, true)).collect();
        assert_eq!(theirs.len(), ours.len(), "{path}: event count");
        let bad: Vec<String> =
            theirs.iter().zip(&ours).filter(|(a, b)| a != b).map(|(a, b)| format!("{a:?}\n{b:?}")).take(5).collect();
        assert!(bad.is_empty(), "{path}:\n{}", bad.join("\n"));
    }
}

/// `--kernel VER` reads a file as of that release, in place of what the
/// file says or shows, and -v says so.
#[test]
fn kernel_option_overrides_the_version() {
    let path = "tests/data/tracedat/lisa-arm64-sched-load.dat";
    let o = run(&["tr-cat", "-v", "--kernel", "6.1.0-40-arm64", path]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "kernel version 6.1 (from --kernel 6.1.0-40-arm64, in place of kernel version 4.10 or later, before 4.14)"
        ),
        "{err}"
    );
    let first = stdout(&o).lines().next().unwrap_or_default().to_string();
    assert!(first.contains("] d..1.  2084.021443: cpu_idle:"), "5 columns: {first}");
    // A file with a UNAME option, too.
    let o = run(&["tr-cat", "-v", "--kernel=5.10", "tests/data/tracedat/v6-inst.dat"]);
    assert!(
        stderr(&o).contains("kernel version 5.10 (from --kernel 5.10, in place of kernel version 6.18)"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o)
        .lines()
        .all(|l| l.split_once("] ").is_none_or(|(_, r)| r.split(' ').next().unwrap().len() == 4)));
    // Every reader of a file takes it (a common option).
    let o = run(&["tr-graph", "-v", "--kernel", "5.4", "-i", path]);
    assert!(stderr(&o).contains("kernel version 5.4 (from --kernel 5.4, in place of"), "{}", stderr(&o));
    let o = run(&["tr-cat", "--kernel", "new", path]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--kernel' with value 'new': not a kernel release"), "{}", stderr(&o));
}

/// Files trace-cmd 3.4 wrote (tests/data/tracedat/make-3.4.sh: an extract,
/// which carries the BTF as option 23, and a record), against 3.4's own
/// `report -N` stored beside them (made in a Debian sid chroot: CI has no
/// 3.4). Since 3.3 that report prints the latency columns after [CPU]; they
/// are the kernel's but where libtraceevent does not know BH_OFF (5.18:
/// `D`/`b`). Bodies are the same but for what the kernel prints otherwise
/// than trace-cmd: `%p` without 0x, and the enum constants that only BTF
/// gives (hrtimer_start's mode, which trace-cmd shows as 0x0;
/// writeback_dirty_inode's I_* flags, which trace-cmd cannot name and trbox
/// names from the file's BTF).
#[test]
fn trace_cmd_3_4_files_read_like_its_report() {
    for (f, btf) in [("v7-3.4-extract", true), ("v7-3.4-record", false)] {
        let path = format!("tests/data/tracedat/{f}.dat");
        let rep = std::fs::read_to_string(format!("tests/data/tracedat/{f}.report")).unwrap();
        let o = run(&["tr-cat", "-v", path.as_str()]);
        assert!(o.status.success(), "{path}: {}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.contains("BTF of the recording kernel"), btf, "{path}: {err}");
        let theirs: Vec<&str> =
            rep.lines().filter(|l| !l.starts_with("cpus=")).map(|l| l.strip_prefix("t34: ").unwrap_or(l)).collect();
        let text = stdout(&o);
        let ours: Vec<&str> = text.lines().collect();
        assert_eq!(theirs.len(), ours.len(), "{path}: event count");
        assert!(ours.len() > 100, "{path}: {} events", ours.len());
        let lat = |l: &str| l.split_once("] ").map(|(_, r)| r.split(' ').next().unwrap_or("").to_string());
        let mut named = 0;
        for (t, u) in theirs.iter().zip(&ours) {
            // The latency columns, BH_OFF aside.
            let ul = lat(u).map(|c| c.replace('D', "d").replace('b', "."));
            assert_eq!(lat(t), ul, "{path}:\n{t}\n{u}");
            let (Some(mut a), Some(mut b)) = (key(t, true), key(u, true)) else { panic!("{path}: {t}\n{u}") };
            if a.3 == "hrtimer_start" {
                a.4 = a.4.replace("hrtimer=0x", "hrtimer=");
                for k in [&mut a.4, &mut b.4] {
                    *k = k.split(' ').filter(|w| !w.starts_with("mode=")).collect::<Vec<_>>().join(" ");
                }
            }
            if a.3 == "writeback_dirty_inode" {
                // This kernel's I_DIRTY_SYNC is 1 << 4 (its BTF, in the file).
                if btf && a.4.ends_with("flags=0x10") {
                    assert!(b.4.ends_with("flags=I_DIRTY_SYNC"), "{path}: {u}");
                    named += 1;
                }
                for k in [&mut a.4, &mut b.4] {
                    *k = k.split(" state=").next().unwrap_or("").to_string();
                }
            }
            assert_eq!(a, b, "{path}:\n{t}\n{u}");
        }
        assert_eq!(named > 0, btf, "{path}: flags named from the BTF");
    }
}

/// `bytes` (a v7 trace.dat with uncompressed options sections, as trace-cmd
/// 3.4 writes them) with one more options section at its end holding
/// `options` ((id, data)), chained from the last DONE option; `sections`
/// ((id, body)) are appended first, and each `Err(i)` in place of an
/// option's data stands for the u64 offset of `sections[i]`.
fn with_v7_options(bytes: &[u8], sections: &[(u16, &[u8])], options: &[(u16, Result<&[u8], usize>)]) -> Vec<u8> {
    let u16_at = |b: &[u8], o: usize| u16::from_le_bytes(b[o..o + 2].try_into().unwrap());
    let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    // Magic (10), "7\0", endian, long size, page size, compression name and
    // version strings, then the first options section's offset.
    let mut p = 10 + 2 + 1 + 1 + 4;
    for _ in 0..2 {
        p += bytes[p..].iter().position(|&c| c == 0).unwrap() + 1;
    }
    let mut next = u64_at(bytes, p) as usize;
    let mut last_done = 0;
    while next != 0 {
        assert_eq!(u16_at(bytes, next + 2) & 1, 0, "compressed options: not handled");
        let mut o = next + 16;
        loop {
            let (id, size) = (u16_at(bytes, o), u32_at(bytes, o + 2) as usize);
            if id == 0 {
                last_done = o + 6;
                next = u64_at(bytes, last_done) as usize;
                break;
            }
            o += 6 + size;
        }
    }
    let mut out = bytes.to_vec();
    let mut at = Vec::new();
    for (id, body) in sections {
        at.push(out.len() as u64);
        out.extend(id.to_le_bytes());
        out.extend(0u16.to_le_bytes()); // not compressed
        out.extend(0u32.to_le_bytes()); // description: string 0
        out.extend((body.len() as u64).to_le_bytes());
        out.extend(*body);
    }
    let start = out.len() as u64;
    out[last_done..last_done + 8].copy_from_slice(&start.to_le_bytes());
    let mut opts = Vec::new();
    for (id, data) in options {
        let data = match data {
            Ok(d) => d.to_vec(),
            Err(i) => at[*i].to_le_bytes().to_vec(),
        };
        opts.extend(id.to_le_bytes());
        opts.extend((data.len() as u32).to_le_bytes());
        opts.extend(data);
    }
    opts.extend(0u16.to_le_bytes());
    opts.extend(8u32.to_le_bytes());
    opts.extend(0u64.to_le_bytes());
    out.extend(0u16.to_le_bytes()); // options section
    out.extend(0u16.to_le_bytes());
    out.extend(0u32.to_le_bytes());
    out.extend((opts.len() as u64).to_le_bytes());
    out.extend(opts);
    out
}

/// Options 24 and 25 (trace-cmd 3.4, an instance with a persistent buffer):
/// the records are of the previous boot, so their addresses move by the
/// kernel's delta before the lookup, as the kernel's own text does. No
/// machine here has such a buffer: a 3.4 record gets the options added,
/// with a delta that moves tick_nohz_handler's address onto
/// hrtimer_wakeup's (6.12's `text delta:` form), and MODULES_FILE.
#[test]
fn last_boot_info_moves_addresses_to_this_boot() {
    let path = "tests/data/tracedat/v7-3.4-record.dat";
    let bytes = std::fs::read(path).unwrap();
    let td = trbox::tracedat::TraceDat::read(&mut std::fs::File::open(path).unwrap()).unwrap();
    let syms = trbox::kallsyms::Kallsyms::parse(&td.kallsyms);
    let (tick, wake) = (syms.address_of("tick_nohz_handler").unwrap(), syms.address_of("hrtimer_wakeup").unwrap());
    let info = format!("t34:text delta:\t{}\ndata delta:\t0\n", wake.wrapping_sub(tick) as i64);
    let modules = b"ext4 1101824 2 - Live 0xffffffffc0200000\n";
    let moved = with_v7_options(
        &bytes,
        &[(25, modules)],
        &[(24, Ok(format!("{info}\0").as_bytes())), (25, Err(0)), (99, Ok(b"x"))],
    );
    let tmp = TempDir::new("lastboot");
    let file = tmp.path().join("lastboot.dat");
    std::fs::write(&file, &moved).unwrap();
    let before = stdout(&run(&["tr-cat", path]));
    let o = run(&["tr-cat", "-v", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("records of a previous boot (LAST_BOOT_INFO, option 24)"), "{err}");
    assert!(err.contains("LAST_BOOT_INFO: skipped data delta:\t0"), "{err}");
    assert!(err.contains("option 99 (1 bytes) skipped"), "{err}");
    let after = stdout(&o);
    // The kernel moved: events print by their fields (print_event_fields();
    // 6.18, the file's UNAME: a long as %pS of its value moved by the
    // delta, when that lands in the kernel).
    let before_n = before.matches("function=tick_nohz_handler ").count();
    assert!(before_n > 10, "{before}");
    assert_eq!(after.matches("function=tick_nohz_handler").count(), 0);
    assert_eq!(after.matches("function=hrtimer_wakeup+0x0/0x").count(), before_n, "{after}");
    assert!(
        after.contains(" hrtimer_start: hrtimer=0x")
            && after.contains(" sched_switch: prev_comm=trace-cmd prev_pid=0x71a (1818) "),
        "{after}"
    );
    // The same records, line for line.
    let heads = |t: &str| t.lines().map(|l| l.split(": ").next().unwrap_or("").to_string()).collect::<Vec<_>>();
    assert_eq!(heads(&before), heads(&after));
    // "# Current": nothing moves.
    let current = with_v7_options(&bytes, &[], &[(24, Ok(b"t34:# Current\n\0"))]);
    std::fs::write(&file, &current).unwrap();
    let o = run(&["tr-cat", "-v", file.to_str().unwrap()]);
    assert!(stderr(&o).contains("the buffer is of this boot, nothing moves"), "{}", stderr(&o));
    assert_eq!(stdout(&o), before);
}
