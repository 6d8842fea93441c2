//! tr-graph: offline on the function_graph trees recorded in the arm64,
//! armv7 and x86_64 boards (tests/fixtures/ARCH/function_graph{,_depth},
//! read through `-T`, and the same data as a trace.dat through `-i`): the
//! graph equals the kernel's own text, `--folded` adds up to the graph's
//! top-level time, `--top` agrees with the graph's durations, lost entries
//! and a depth limit. Live on this machine (no function_graph tracer): the
//! one-line reason, exit 2, tracefs untouched.

use super::common;
use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn graph(args: &[&str]) -> std::process::Output {
    let mut a = vec!["tr-graph"];
    a.extend_from_slice(args);
    let o = run(&a);
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    o
}

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut v = Vec::new();
    for arch in ["aarch64", "armv7", "x86_64"] {
        for s in ["function_graph", "function_graph_depth"] {
            v.push(root.join(arch).join(s));
        }
    }
    v
}

fn body(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.starts_with('#')).collect()
}

/// (cpu, depth, function name, duration in ns) of every graph line that
/// has a duration, read from graph text the way the kernel writes it: the
/// name of a bare `}` is the function opened at that depth on that CPU.
fn durations(text: &str) -> Vec<(u32, usize, String, u64)> {
    let mut open: BTreeMap<(u32, usize), String> = BTreeMap::new();
    let mut v = Vec::new();
    for l in body(text) {
        let Some((cols, func)) = l.split_once("|  ") else { continue };
        let Some((cpu, dur)) = cols.split_once(')') else { continue };
        let Ok(cpu) = cpu.trim().parse::<u32>() else { continue };
        let depth = (func.len() - func.trim_start().len()) / 2;
        let f = func.trim();
        let dur = dur.trim().trim_start_matches(['+', '!', '#', '*', '@', '$']).trim();
        if let Some(name) = f.strip_suffix("() {") {
            open.insert((cpu, depth), name.to_string());
            continue;
        }
        let Some(us) = dur.strip_suffix("us") else { continue };
        let (int, frac) = us.trim().split_once('.').unwrap_or((us.trim(), ""));
        let ns = int.parse::<u64>().unwrap() * 1000 + format!("{frac:0<3}").parse::<u64>().unwrap();
        let name = if let Some(n) = f.strip_suffix("();") {
            n.to_string()
        } else if let Some(n) = f.strip_prefix("} /* ").and_then(|n| n.strip_suffix(" */")) {
            n.to_string()
        } else if f == "}" {
            open.get(&(cpu, depth)).cloned().unwrap_or_default()
        } else {
            continue;
        };
        v.push((cpu, depth, name, ns));
    }
    v
}

#[test]
fn graph_of_every_board_equals_the_kernels_text() {
    for d in fixtures() {
        let o = graph(&["-T", d.to_str().unwrap()]);
        assert!(o.status.success(), "{}: {}", d.display(), stderr(&o));
        let ours = stdout(&o);
        assert!(ours.starts_with("# tracer: function_graph\n#\n# CPU  DURATION"), "{ours}");
        let kernel = std::fs::read_to_string(d.join("trace")).unwrap();
        let (k, t) = (body(&kernel), body(&ours));
        assert!(k.len() > 100, "{}", d.display());
        for (i, (a, b)) in k.iter().zip(&t).enumerate() {
            assert_eq!(a, b, "{}: line {} differs", d.display(), i + 1);
        }
        assert_eq!(k.len(), t.len(), "{}", d.display());
    }
}

/// tr-cat decoding the same trees' raw pages turns to the graph layout on
/// the first graph record, and only then looks up where the irq entry code
/// is (it parses the symbol table, which a trace without graph records
/// never needs): the same text as the kernel's, `==========>` irq markers
/// included.
#[test]
fn tr_cat_finds_the_irq_entry_code_on_the_first_graph_record() {
    let mut markers = 0;
    for d in fixtures() {
        let o = run(&["tr-cat", "--raw", "-T", d.to_str().unwrap()]);
        assert!(o.status.success(), "{}: {}", d.display(), stderr(&o));
        let kernel = std::fs::read_to_string(d.join("trace")).unwrap();
        let ours = stdout(&o);
        assert_eq!(body(&ours), body(&kernel), "{}", d.display());
        markers += body(&ours).iter().filter(|l| l.contains("==========>")).count();
    }
    assert!(markers > 0, "no fixture has an irq entry: the lookup is not exercised");
}

/// The folded weights (ns) add up to the inclusive time of the calls at the
/// graph's top level; with no loss in the fixtures these are the depth-0
/// lines (`}` and leaves) of the text. Each frame name is a function the
/// graph shows.
#[test]
fn folded_adds_up_to_the_graphs_top_level_time() {
    for d in fixtures() {
        let o = graph(&["-T", d.to_str().unwrap(), "--folded"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let folded = stdout(&o);
        let g = stdout(&graph(&["-T", d.to_str().unwrap()]));
        let lines = durations(&g);
        let names: std::collections::BTreeSet<&str> = lines.iter().map(|l| l.2.as_str()).collect();
        let mut sum = 0u64;
        for l in folded.lines() {
            let (path, w) = l.rsplit_once(' ').unwrap();
            sum += w.parse::<u64>().unwrap();
            for f in path.split(';') {
                assert!(names.contains(f), "{}: frame {f} not in the graph", d.display());
            }
        }
        // The graph prints durations cut to at most 7 digits (0.001 us):
        // allow that much per top-level call.
        let top: Vec<&(u32, usize, String, u64)> = lines.iter().filter(|l| l.1 == 0).collect();
        let want: u64 = top.iter().map(|l| l.3).sum();
        assert!(!top.is_empty());
        assert!(
            sum.abs_diff(want) <= top.len() as u64 * 1000,
            "{}: folded {sum} ns, graph top level {want} ns",
            d.display()
        );
        println!("{}: {} folded lines, {} ns = graph top level {} ns", d.display(), folded.lines().count(), sum, want);
    }
}

/// `--svg FILE`: a flame graph of the same folded stacks, nothing on
/// stdout, one line on stderr; with `--folded` the lines too. The root box
/// (`all`) holds the folded lines' whole time; each top-level function of
/// the graph is a box. A symlink at FILE is refused.
#[test]
fn svg_is_the_folded_stacks_as_a_flame_graph() {
    for d in fixtures() {
        let dir = TempDir::new("svg");
        let svg = dir.path().join("g.svg");
        let o = graph(&["-T", d.to_str().unwrap(), "--svg", svg.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{}", stdout(&o));
        assert!(stderr(&o).contains("flame graph of"), "{}", stderr(&o));
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.starts_with("<?xml") && text.trim_end().ends_with("</svg>"), "{text}");
        let folded = stdout(&graph(&["-T", d.to_str().unwrap(), "--folded"]));
        let total: u64 = folded.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap()).sum();
        let all = format!("<title>all ({}.{:03} us, 100.00%)</title>", total / 1000, total % 1000);
        assert!(text.contains(&all), "{}: no {all}", d.display());
        for root in folded.lines().map(|l| l.split([';', ' ']).next().unwrap()) {
            assert!(text.contains(&format!("<title>{root} (")), "{}: no box for {root}", d.display());
        }
        let o = graph(&["-T", d.to_str().unwrap(), "--svg", svg.to_str().unwrap(), "--folded"]);
        assert_eq!(stdout(&o), folded);
    }
    let dir = TempDir::new("svg");
    let link = dir.path().join("link.svg");
    std::os::unix::fs::symlink(dir.path().join("elsewhere"), &link).unwrap();
    let d = fixtures().remove(0);
    let o = graph(&["-T", d.to_str().unwrap(), "--svg", link.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!dir.path().join("elsewhere").exists());
}

/// `--top` calls and total time per function equal the graph's own lines.
#[test]
fn top_agrees_with_the_graph() {
    for d in fixtures() {
        let o = graph(&["-T", d.to_str().unwrap(), "--top", "100000"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let top = stdout(&o);
        assert!(top.starts_with("    CALLS     TOTAL(us)      SELF(us)      MAX(us)  FUNCTION\n"), "{top}");
        let g = stdout(&graph(&["-T", d.to_str().unwrap()]));
        let mut want: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for (_, _, name, ns) in durations(&g) {
            let e = want.entry(name).or_default();
            e.0 += 1;
            e.1 += ns;
        }
        let mut rows = 0;
        let mut last_total = u64::MAX;
        for l in top.lines().skip(1) {
            let c: Vec<&str> = l.split_whitespace().collect();
            let us = |s: &str| (s.parse::<f64>().unwrap() * 1000.0).round() as u64;
            let (calls, total, self_, max, name) = (c[0].parse::<u64>().unwrap(), us(c[1]), us(c[2]), us(c[3]), c[4]);
            let (wc, wt) = want[name];
            assert_eq!(calls, wc, "{}: {name} calls", d.display());
            assert!(total.abs_diff(wt) <= calls * 1000, "{}: {name} total {total} vs graph {wt}", d.display());
            assert!(self_ <= total && max <= total && total <= last_total, "{l}");
            last_total = total;
            rows += 1;
        }
        assert_eq!(rows, want.len(), "{}", d.display());
        assert_eq!(graph(&["-T", d.to_str().unwrap(), "--top", "3"]).stdout.iter().filter(|&&b| b == b'\n').count(), 4);
    }
}

/// max_graph_depth 3 (function_graph_depth): nothing deeper than three
/// levels, and subtrees cut off there end in leaves.
#[test]
fn depth_limit() {
    for d in fixtures().into_iter().filter(|d| d.ends_with("function_graph_depth")) {
        assert_eq!(std::fs::read_to_string(d.join("max_graph_depth")).unwrap().trim(), "3");
        let g = stdout(&graph(&["-T", d.to_str().unwrap()]));
        let lines = durations(&g);
        assert!(lines.iter().all(|l| l.1 < 3), "{}", d.display());
        assert!(lines.iter().any(|l| l.1 == 2), "{}", d.display());
    }
}

/// Lost entries: a copy of the tree whose first page on CPU 0 is gone (the
/// page after it says events were lost). The graph says so, closes calls
/// whose entry is missing with `} /* func */` the kernel's way, and the
/// aggregations still add up.
#[test]
fn lost_entries() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/aarch64/function_graph");
    let tmp = TempDir::new("graph-lost");
    let d = tmp.path().join("tree");
    copy_tree(&src, &d);
    let raw = d.join("per_cpu/cpu0/trace_pipe_raw");
    let bytes = std::fs::read(&raw).unwrap();
    assert!(bytes.len() >= 3 * 4096);
    let mut cut = bytes[4096..].to_vec();
    // commit word (8 bytes at offset 8 on arm64): RB_MISSED_EVENTS.
    cut[8 + 3] |= 0x80;
    std::fs::write(&raw, &cut).unwrap();
    let o = graph(&["-T", d.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let g = stdout(&o);
    assert!(g.contains("CPU:0 [LOST EVENTS]"), "{g}");
    assert!(g.lines().any(|l| l.contains("} /* ") && l.starts_with(" 0)")), "{g}");
    let folded = stdout(&graph(&["-T", d.to_str().unwrap(), "--folded"]));
    let sum: u64 = folded.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap()).sum();
    assert!(sum > 0);
    let top = stdout(&graph(&["-T", d.to_str().unwrap(), "--top", "5"]));
    assert!(top.contains("do_sys_openat2"), "{top}");
}

/// The same records in a trace.dat (written from the fixture tree with the
/// core's v6 writer) give the same graph through `-i`.
#[test]
fn trace_dat_input_gives_the_same_graph() {
    use std::io::Write;
    use std::os::unix::fs::FileExt;
    use trbox::abi::Endian;
    use trbox::format::HeaderPage;
    use trbox::tracedat::{data_layout, encode_flyrecord_table, V6Writer, WriteOptions};
    for d in fixtures() {
        let tmp = TempDir::new("graph-dat");
        let path = tmp.path().join("g.dat");
        let read = |p: &str| std::fs::read(d.join(p)).unwrap_or_default();
        let formats = |dir: &Path| -> Vec<Vec<u8>> {
            let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
                .unwrap()
                .flatten()
                .map(|e| e.path().join("format"))
                .filter(|p| p.is_file())
                .collect();
            v.sort();
            v.iter().map(|p| std::fs::read(p).unwrap()).collect()
        };
        let hp_text = read("events/header_page");
        let hp = HeaderPage::parse(std::str::from_utf8(&hp_text).unwrap()).unwrap();
        let page = hp.subbuf_size();
        let mut systems: Vec<(String, Vec<Vec<u8>>)> = Vec::new();
        for s in std::fs::read_dir(d.join("events")).unwrap().flatten().filter(|s| s.path().is_dir()) {
            let name = s.file_name().to_string_lossy().into_owned();
            if name != "ftrace" {
                systems.push((name, formats(&s.path())));
            }
        }
        let mut w = V6Writer::new(trbox::abi::Abi::new(Endian::Little, hp.long_size()), page);
        w.header_files(&hp_text, &read("events/header_event")).unwrap();
        w.ftrace_formats(&formats(&d.join("events/ftrace"))).unwrap();
        w.event_systems(&systems).unwrap();
        w.kallsyms(&read("kallsyms")).unwrap();
        w.printk_formats(&read("printk_formats")).unwrap();
        w.saved_cmdlines(&read("saved_cmdlines")).unwrap();
        let data: Vec<Vec<u8>> = (0..2).map(|c| read(&format!("per_cpu/cpu{c}/trace_pipe_raw"))).collect();
        w.cpus(data.len() as u32).unwrap();
        let clock = String::from_utf8(read("trace_clock")).unwrap();
        w.options(
            &WriteOptions {
                trace_clock: Some(clock.trim()),
                uname: Some("Linux board 6.1.0 test"),
                ..Default::default()
            },
            None,
        )
        .unwrap();
        let fly = w.flyrecord().unwrap();
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(&w.take()).unwrap();
        let sizes: Vec<u64> = data.iter().map(|x| x.len() as u64).collect();
        let table = data_layout(fly.data_start, page, &sizes);
        for (x, &(off, _)) in data.iter().zip(&table) {
            f.write_all_at(x, off).unwrap();
        }
        f.write_all_at(&encode_flyrecord_table(Endian::Little, &table), fly.table_pos).unwrap();
        drop(f);
        let from_dat = graph(&["-i", path.to_str().unwrap()]);
        assert!(from_dat.status.success(), "{}", stderr(&from_dat));
        let from_tree = graph(&["-T", d.to_str().unwrap()]);
        assert_eq!(body(&stdout(&from_dat)), body(&stdout(&from_tree)), "{}", d.display());
        let f1 = stdout(&graph(&["-i", path.to_str().unwrap(), "--folded"]));
        assert_eq!(f1, stdout(&graph(&["-T", d.to_str().unwrap(), "--folded"])));
    }
}

#[test]
fn usage_errors() {
    let d = fixtures().remove(0);
    let o = graph(&["-T", d.to_str().unwrap(), "--folded", "--top", "3"]);
    assert_eq!(o.status.code(), Some(1));
    let o = graph(&["-T", d.to_str().unwrap(), "do_sys_openat2"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = graph(&["--help"]);
    assert!(o.status.success() && stdout(&o).contains("--min-us"));
}

/// A kernel without the function_graph tracer: one line naming what is
/// missing and the tracers it has, exit 2, nothing changed. Shown such a
/// kernel (`available_tracers` without it, in a mount namespace of trbox's
/// own), and this one where it really lacks it.
#[test]
fn no_function_graph_tracer_here() {
    let Some(root) = live_tracefs() else { return };
    let avail = std::fs::read_to_string(root.join("available_tracers")).unwrap();
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    for args in [
        &["do_sys_openat2", "-d", "3", "-t", "1"][..],
        &["--folded", "--", "true"],
        &["-P", "1", "--min-us", "5", "-t", "1"],
    ] {
        let argv: Vec<&str> = ["tr-graph"].iter().chain(args).copied().collect();
        let Some((shown, o)) = common::without_tracers(&root, &["function_graph"], &argv) else { return };
        let mut runs = vec![(shown, o)];
        if !avail.split_whitespace().any(|t| t == "function_graph") {
            runs.push((avail.clone(), graph(args)));
        }
        for (shown, o) in runs {
            assert_eq!(o.status.code(), Some(2), "{args:?}");
            let e = stderr(&o);
            assert_eq!(e.lines().count(), 1, "{e}");
            assert!(
                e.starts_with("tr-graph: this kernel has no function_graph tracer (CONFIG_FUNCTION_GRAPH_TRACER"),
                "{e}"
            );
            for t in shown.split_whitespace() {
                assert!(e.contains(t), "{e}");
            }
            assert!(stdout(&o).is_empty());
        }
    }
    assert_same_state(&before, &snapshot(&root));
}

/// Syscall events inside the graph (`/* sys_openat(dfd: ffffffffffffff9c, …) */`)
/// in the kernel's version's layout (6.1 on the boards), as in its text.
#[test]
fn syscall_comments_follow_the_kernel_version() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for arch in ["aarch64", "armv7", "x86_64"] {
        let d = root.join(arch).join("graph_syscalls");
        let o = graph(&["-T", d.to_str().unwrap()]);
        assert!(o.status.success(), "{}: {}", d.display(), stderr(&o));
        let ours = stdout(&o);
        let kernel = std::fs::read_to_string(d.join("trace")).unwrap();
        let (k, t) = (body(&kernel), body(&ours));
        assert!(k.iter().any(|l| l.contains("/* sys_openat(dfd: ")), "{}: no syscall comment", d.display());
        assert_eq!(k, t, "{}", d.display());
    }
}

/// `tr-graph --boot`: function_graph with its filter and depth from boot.
#[test]
fn boot_prints_the_graph_command_line() {
    let o = run(&["tr-graph", "--boot", "schedule", "-d", "3", "--min-us", "10"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().nth(1), Some("ftrace=function_graph ftrace_graph_filter=schedule ftrace_graph_max_depth=3"));
    assert!(out.contains("kernel.ftrace_graph_max_depth = 3"), "{out}");
    assert!(out.contains("# --min-us: no boot-time form"), "{out}");
    // --persist: the instance's buffer on memory kept across a warm reboot.
    let o = run(&["tr-graph", "--boot", "-B", "boot_mapped", "--persist", "12", "vfs_read"]);
    let out = stdout(&o);
    assert!(out.contains("reserve_mem=12M:4096:trbox trace_instance=boot_mapped@trbox"), "{out}");
}

/// `--min-us N` sets tracing_thresh for the run: the kernel then writes
/// only the returns of calls that took N us or more
/// (trace_functions_graph.c `trace_graph_thresh_return()`), and puts it back.
#[test]
fn min_us_sets_tracing_thresh() {
    let Some(root) = live_tracefs() else { return };
    let avail = std::fs::read_to_string(root.join("available_tracers")).unwrap();
    if !avail.split_whitespace().any(|t| t == "function_graph") {
        common::skip_absent("no function_graph tracer here (no_function_graph_tracer_here checks the message)");
        return;
    }
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let f = root.join("tracing_thresh");
    let o = graph(&["--min-us", "100", "vfs_read", "--", "cat", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).lines().any(|l| l == "100"), "{}", stdout(&o));
    assert_same_state(&before, &snapshot(&root));
}
