//! `tr-cat FILE… -o OUT.parquet`: LISA's `trace-dump parquet` layout, read
//! back with DuckDB (tests/applets/parquet_check.py): per event the rows
//! `trace-cmd report` prints, and every integer field's sum and every
//! string the same as `tr-cat FILE --json`'s, over trace.dat files made of
//! the boards' fixtures (sched_switch, syscalls, a kprobe with a string,
//! function_graph) and LISA's own recordings (bprint); several FILEs as
//! one table per event with a `source` column; the same with
//! `--compression zstd`; a fleet of the three boards' recordings read by
//! Spark (tests/applets/spark_check.py), per source and event the rows
//! `trace-cmd report` prints; the same files at every `-j`.

use super::common;
use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const CHECK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/applets/parquet_check.py");
const SPARK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/applets/spark_check.py");

/// DuckDB's Python module, or a skip (make setup installs it).
pub fn duckdb() -> Option<()> {
    let ok = Command::new("python3").args(["-c", "import duckdb"]).output().is_ok_and(|o| o.status.success());
    if !ok {
        skip("Parquet checks: python3 with the duckdb wheel is missing (make setup installs it)");
        return None;
    }
    Some(())
}

/// PySpark and the Java it runs on, or a skip (make setup installs them).
fn spark() -> Option<()> {
    let ok = |c: &mut Command| c.output().is_ok_and(|o| o.status.success());
    if !ok(Command::new("python3").args(["-c", "import pyspark"])) || !ok(Command::new("java").arg("-version")) {
        skip("Spark checks: python3 with the pyspark wheel, or java (17+), is missing (make setup installs them)");
        return None;
    }
    Some(())
}

pub fn check(args: &[&Path]) -> String {
    let o = Command::new("python3").arg(CHECK).args(args).output().unwrap();
    assert!(o.status.success(), "parquet_check.py {args:?}: {}", stderr(&o));
    stdout(&o)
}

/// A trace.dat holding one copy of a fixture tree's records.
fn dat_of(tree: &Path, out: &Path) -> PathBuf {
    let part = dat::Part { dir: tree, min_events: 1, lost_every: None };
    dat::build(tree, &[part], out);
    out.to_path_buf()
}

/// The recordings checked: the fixtures' events, syscalls with
/// function_graph, kprobes with strings; LISA's bprint recording.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut v: Vec<PathBuf> =
        ["x86_64-6.12/events", "x86_64-6.12/graph_syscalls", "aarch64-6.12/kprobe", "armv7/events"]
            .iter()
            .map(|t| dat_of(&fx.join(t), &dir.join(format!("{}.dat", t.replace('/', "-")))))
            .collect();
    v.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tracedat/lisa-arm64-rtapp.dat"));
    v
}

/// Records per event name as `trace-cmd report` prints them
/// (`COMM-PID [CPU] TS: EVENT: …`).
fn report_counts(lines: &[String]) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for l in lines {
        let Some((_, rest)) = l.split_once("] ") else { continue };
        let Some((_, rest)) = rest.split_once(": ") else { continue };
        let name = rest.split(':').next().unwrap_or("").trim().to_string();
        *m.entry(name).or_insert(0) += 1;
    }
    m
}

#[test]
fn every_event_as_trace_cmd_and_json_have_it() {
    every_event(&[]);
}

/// The same with the columns in zstd; the files' metadata says ZSTD.
#[test]
fn zstd_holds_the_same_rows() {
    every_event(&["--compression", "zstd"]);
}

/// `extra`: tr-cat's options besides FILE -o OUT (a `--compression`).
fn every_event(extra: &[&str]) {
    let Some(()) = duckdb() else { return };
    let tmp = TempDir::new("parquet");
    let mut compared = (0, 0);
    for f in inputs(tmp.path()) {
        let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
        let out = tmp.path().join(format!("{stem}.parquet"));
        let mut args = vec!["tr-cat", f.to_str().unwrap(), "-o", out.to_str().unwrap()];
        args.extend(extra);
        let o = run(&args);
        assert!(o.status.success(), "{}: {}", f.display(), stderr(&o));
        let codecs = check(&[Path::new("codecs"), &out]);
        let want = extra.get(1).unwrap_or(&"snappy").to_uppercase();
        assert_eq!(codecs.trim(), want, "{}: the column chunks' codecs", f.display());
        let ts = check(&[Path::new("ts-stats"), &out]);
        assert!(ts.starts_with("ts-stats ") && ts.lines().count() == 1, "{}: {ts}", f.display());
        assert!(stderr(&o).contains("(Parquet, LISA's layout)"), "{}", stderr(&o));
        let json = tmp.path().join(format!("{stem}.jsonl"));
        let j = run(&["tr-cat", f.to_str().unwrap(), "--json"]);
        assert!(j.status.success());
        std::fs::write(&json, &j.stdout).unwrap();
        let text = check(&[Path::new("one"), &out, &json]);
        eprintln!("{}:\n{text}", f.display());
        let mut rows = BTreeMap::new();
        for l in text.lines() {
            if let Some(rest) = l.strip_prefix("compared ") {
                let w: Vec<&str> = rest.split(' ').collect();
                compared.0 += w[0].parse::<u32>().unwrap();
                compared.1 += w[3].parse::<u32>().unwrap();
            } else if let Some((e, n)) = l.split_once(' ') {
                rows.insert(e.to_string(), n.parse::<u64>().unwrap());
            }
        }
        assert!(!rows.is_empty(), "{}: no event file", f.display());
        let Some(report) = trace_cmd_records(&f) else {
            skip_tool("trace-cmd", "the Parquet rows against trace-cmd report's");
            continue;
        };
        let mut want = report_counts(&report);
        // trace-cmd's function_graph plugin prints a leaf call's entry and
        // exit as one line (`funcgraph_entry: … | f();`): its exits are
        // the --json rows DuckDB was compared with above.
        if let Some(&n) = rows.get("funcgraph_exit") {
            want.insert("funcgraph_exit".into(), n);
        }
        assert_eq!(rows, want, "{}: rows per event, Parquet vs trace-cmd report", f.display());
    }
    // Something of each kind was compared: sched_switch's comms, the
    // kprobe's path, the syscalls' numbers, the graph's functions.
    assert!(compared.0 > 100 && compared.1 > 10, "compared {compared:?}");
}

/// The row groups are written on every CPU (`-j`), each event's in the
/// order they were cut: the files are byte for byte the same at every
/// `-j`. A recording of 400,000 records, so that the busiest events have
/// several row groups and the others are cut when all they hold together
/// passes the budget.
#[test]
fn the_files_are_the_same_at_every_j() {
    let Some(()) = duckdb() else { return };
    let tmp = TempDir::new("parquet-j");
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/x86_64-6.12/events");
    let f = tmp.path().join("big.dat");
    dat::build(&fx, &[dat::Part { dir: &fx, min_events: 400_000, lost_every: None }], &f);
    let convert = |jobs: &str| {
        let out = tmp.path().join(format!("j{jobs}.parquet"));
        let o = run(&["tr-cat", "-j", jobs, f.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "-j {jobs}: {}", stderr(&o));
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&out)
            .unwrap()
            .flatten()
            .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
            .collect();
        files.sort();
        (out, files)
    };
    let (out, one) = convert("1");
    let groups = check(&[Path::new("groups"), &out]);
    let most = groups.lines().filter_map(|l| l.split(' ').nth(1)?.parse::<u32>().ok()).max().unwrap_or(0);
    assert!(one.len() > 3 && most >= 3, "{} files, row groups: {groups}", one.len());
    for jobs in ["2", "3", "8"] {
        let (_, many) = convert(jobs);
        let names = |v: &[(String, Vec<u8>)]| v.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
        assert_eq!(names(&many), names(&one), "-j {jobs}: the files");
        for (a, b) in many.iter().zip(&one) {
            assert!(a.1 == b.1, "-j {jobs}: {} differs from -j 1's", a.0);
        }
    }
}

#[test]
fn several_files_are_one_table_with_a_source_column() {
    let Some(()) = duckdb() else { return };
    let tmp = TempDir::new("parquet-fleet");
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let a = dat_of(&fx.join("x86_64-6.12/events"), &tmp.path().join("board-a.dat"));
    let b = dat_of(&fx.join("aarch64/events"), &tmp.path().join("board-b.dat"));
    let out = tmp.path().join("fleet.parquet");
    let o = run(&["tr-cat", a.to_str().unwrap(), b.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    for s in ["board-a", "board-b"] {
        assert!(out.join(format!("source={s}/meta.json")).is_file(), "{s}");
    }
    let text = check(&[Path::new("fleet"), &out, Path::new("sched_switch")]);
    let count = |f: &Path| {
        let j = run(&["tr-cat", f.to_str().unwrap(), "--json", "-e", "sched:sched_switch"]);
        stdout(&j).lines().count()
    };
    let want = format!("board-a {}\nboard-b {}\n", count(&a), count(&b));
    assert_eq!(text, want);
}

/// A fleet of three boards' recordings (aarch64, armv7, x86_64, from the
/// qemu boards' fixtures) read by Spark in local mode: per source and
/// event the rows `trace-cmd report` prints for that board's file; the
/// queries docs/analysis.md shows run over it.
#[test]
fn spark_reads_a_fleet_as_trace_cmd_counts_it() {
    let Some(()) = spark() else { return };
    let tmp = TempDir::new("parquet-spark");
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let boards = ["aarch64", "armv7", "x86_64"];
    let dats: Vec<PathBuf> =
        boards.iter().map(|b| dat_of(&fx.join(b).join("events"), &tmp.path().join(format!("{b}.dat")))).collect();
    let out = tmp.path().join("fleet.parquet");
    let mut args = vec!["tr-cat"];
    args.extend(dats.iter().map(|d| d.to_str().unwrap()));
    // zstd: on a machine with musl installed (musl-tools, for the musl
    // test build), snappy-java, Spark's snappy, took its musl build and
    // could not load it (libc.musl-x86_64.so.1); zstd-jni loads.
    args.extend(["-o", out.to_str().unwrap(), "--compression", "zstd"]);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = std::time::Instant::now();
    let s = Command::new("python3").arg(SPARK).arg(&out).output().unwrap();
    assert!(s.status.success(), "spark_check.py: {}", stderr(&s));
    let text = stdout(&s);
    eprintln!("{text}Spark: {:.1} s in all", t.elapsed().as_secs_f64());
    let mut got: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut syscalls: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut queries = BTreeMap::new();
    for l in text.lines() {
        let w: Vec<&str> = l.split(' ').collect();
        match w[..] {
            ["query", name, n] => {
                queries.insert(name.to_string(), n.parse::<u64>().unwrap());
            }
            ["spark", ..] => {}
            [src, ev, n, "(top_syscalls)"] => {
                syscalls.entry(src.into()).or_default().insert(ev.into(), n.parse().unwrap());
            }
            [src, ev, n] => {
                got.entry(src.into()).or_default().insert(ev.into(), n.parse().unwrap());
            }
            _ => panic!("spark_check.py: {l}"),
        }
    }
    let mut want = BTreeMap::new();
    for (b, d) in boards.iter().zip(&dats) {
        let Some(report) = trace_cmd_records(d) else {
            skip_tool("trace-cmd", "Spark's counts against trace-cmd report's");
            return;
        };
        let counts = report_counts(&report);
        // The syscall query counts each sys_enter_* file: trace-cmd's rows.
        let enters: BTreeMap<String, u64> =
            counts.iter().filter(|(e, _)| e.starts_with("sys_enter_")).map(|(e, &n)| (e.clone(), n)).collect();
        assert_eq!(syscalls.get(*b).cloned().unwrap_or_default(), enters, "{b}: the top-syscalls query");
        want.insert(b.to_string(), counts);
    }
    assert_eq!(got, want, "rows per source and event, Spark vs trace-cmd report");
    // Every board ran tasks and woke some: the docs' queries found them.
    assert!(queries.get("run_time").is_some_and(|&n| n > 0), "{queries:?}");
    assert!(queries.get("wakeup_latency").is_some_and(|&n| n > 0), "{queries:?}");
}

#[test]
fn refusals_and_an_empty_recording() {
    let tmp = TempDir::new("parquet-refuse");
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tracedat");
    let f = data.join("v6-only-fx.dat");
    let out = tmp.path().join("x.parquet");
    // Nothing is written over.
    std::fs::create_dir(&out).unwrap();
    let o = run(&["tr-cat", f.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("already exists"), "{}", stderr(&o));
    // Filters are not taken silently.
    let o =
        run(&["tr-cat", f.to_str().unwrap(), "-e", "sched:*", "-o", tmp.path().join("y.parquet").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // --compression without -o X.parquet: a usage error, said.
    let o = run(&["tr-cat", f.to_str().unwrap(), "--compression", "zstd"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--compression"), "{}", stderr(&o));
    let o = run(&[
        "tr-cat",
        f.to_str().unwrap(),
        "-o",
        tmp.path().join("c.parquet").to_str().unwrap(),
        "--compression",
        "lz4",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // Several FILEs without -o X.parquet: a usage error.
    let o = run(&["tr-cat", f.to_str().unwrap(), f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // A recording without a record: no event file, and said.
    let z = tmp.path().join("z.parquet");
    let o = run(&["tr-cat", data.join("v6-no-events.dat").to_str().unwrap(), "-o", z.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("no event"), "{}", stderr(&o));
    let files: Vec<_> = std::fs::read_dir(&z).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(files, ["meta.json"]);
}

/// LISA's own column names and types, as its `trace-dump parquet` wrote
/// them for these inputs (tests/data/parquet/lisa-schema.txt, made by
/// lisa-schema.sh beside it): `INPUT EVENT COLUMN TYPE` lines in DuckDB's
/// type names, `INPUT EVENT ! ERROR` for an event LISA refused.
const LISA_SCHEMA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/parquet/lisa-schema.txt");

/// Where trbox's columns are not LISA's, and why (docs/analysis.md, "Where
/// trbox differs from LISA"): (event, column, trbox's type, LISA's type,
/// why); `*` ends a prefix or matches anything.
const NOT_LISAS: &[(&str, &str, &str, &str, &str)] = &[
    ("sys_enter_*", "buf", "UINTEGER", "VARCHAR", "a user pointer: the kernel stores its value, not the string"),
    ("sys_enter_*", "filename", "UINTEGER", "VARCHAR", "a user pointer (32-bit board)"),
    ("sys_enter_*", "filename", "UBIGINT", "VARCHAR", "a user pointer (64-bit board)"),
];

/// Events LISA refuses (or writes with errors), and why trbox writes them:
/// (the event's name or its start, what LISA's error says).
const LISA_REFUSES: &[(&str, &str)] = &[
    // The kernel stores every syscall argument in an unsigned long
    // (format: `int dfd; size:8; signed:0`); LISA wants the C type's.
    ("sys_enter_", "was inferred to be 4 but kernel reported 8"),
    ("sys_enter_", "was inferred to be Signed but kernel reported unsigned"),
    // A `char *` argument is a user address: LISA tries to read the
    // string behind it from the recording.
    ("sys_enter_", "Could not dereference address"),
    // The 4.x arm64 recording's formats give a flexible `buf[]` a size
    // of 0; LISA wants its element's size.
    ("bprint", "kernel reported 0"),
    ("print", "kernel reported 0"),
];

#[test]
fn columns_and_types_as_lisa_has_them() {
    let Some(()) = duckdb() else { return };
    let tmp = TempDir::new("parquet-lisa");
    let ins = inputs(tmp.path());
    // lisa-schema.sh runs LISA on the same files: this keeps them.
    if let Some(keep) = std::env::var_os("TRBOX_PARQUET_INPUTS") {
        for f in &ins {
            std::fs::copy(f, Path::new(&keep).join(f.file_name().unwrap())).unwrap();
        }
    }
    // input -> event -> LISA's (column, type) lines, or its error.
    let mut lisa: BTreeMap<String, BTreeMap<String, Vec<(String, String)>>> = BTreeMap::new();
    let mut refused: BTreeMap<(String, String), String> = BTreeMap::new();
    for l in std::fs::read_to_string(LISA_SCHEMA).unwrap().lines().filter(|l| !l.starts_with('#')) {
        let w: Vec<&str> = l.splitn(4, ' ').collect();
        let [input, event, col, typ] = w[..] else { panic!("lisa-schema.txt: {l:?}") };
        if col == "!" {
            refused.insert((input.into(), event.into()), typ.into());
        } else {
            let e = lisa.entry(input.into()).or_default().entry(event.into()).or_default();
            e.push((col.into(), typ.into()));
        }
    }
    let (mut same, mut excused) = (0, 0);
    for f in &ins {
        let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
        let out = tmp.path().join(format!("{stem}.parquet"));
        let o = run(&["tr-cat", f.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}: {}", f.display(), stderr(&o));
        let mut ours: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for l in check(&[Path::new("schema"), &out]).lines() {
            let (e, rest) = l.split_once(' ').unwrap();
            let (c, t) = rest.split_once(' ').unwrap();
            ours.entry(e.into()).or_default().push((c.into(), t.into()));
        }
        let want = lisa.get(&stem).unwrap_or_else(|| panic!("lisa-schema.txt has no {stem}: run lisa-schema.sh"));
        for (event, cols) in want {
            let got = ours.get(event).unwrap_or_else(|| panic!("{stem}: no {event}.parquet, LISA writes one"));
            // The text of trace_printk() and trace_marker writes: trbox's
            // own column, after LISA's.
            let got: Vec<&(String, String)> = got
                .iter()
                .filter(|(c, _)| !(c == "text" && ["bprint", "print", "bputs"].contains(&event.as_str())))
                .collect();
            let names = |v: &mut dyn Iterator<Item = &String>| v.cloned().collect::<Vec<_>>();
            assert_eq!(
                names(&mut got.iter().map(|c| &c.0)),
                names(&mut cols.iter().map(|c| &c.0)),
                "{stem}: {event}'s columns"
            );
            for ((c, t), (_, lt)) in got.iter().zip(cols) {
                if t == lt {
                    same += 1;
                    continue;
                }
                let any = |want: &str, got: &str| want.strip_suffix('*').map_or(want == got, |p| got.starts_with(p));
                let why = NOT_LISAS.iter().find(|x| any(x.0, event) && any(x.1, c) && x.2 == t && x.3 == lt);
                assert!(why.is_some(), "{stem}: {event}.{c} is {t}, LISA's is {lt}, and no reason is listed");
                excused += 1;
            }
        }
        for ((input, event), err) in refused.iter().filter(|((i, _), _)| *i == stem) {
            let why = LISA_REFUSES.iter().find(|r| event.starts_with(r.0) && err.contains(r.1));
            assert!(why.is_some(), "{input}: LISA refuses {event} ({err}), and no reason is listed");
            assert!(ours.contains_key(event), "{input}: trbox writes no {event}.parquet either");
        }
    }
    eprintln!("{same} columns typed as LISA types them, {excused} differently for a listed reason");
    assert!(same > 100, "{same}");
}

#[test]
fn meta_json_has_the_files_trace_id_as_lisa_writes_it() {
    let tmp = TempDir::new("parquet-id");
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tracedat/v7-none-inst.dat");
    let out = tmp.path().join("x.parquet");
    let o = run(&["tr-cat", f.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let meta = std::fs::read_to_string(out.join("meta.json")).unwrap();
    // trace-cmd's own view of the option: `[Option TRACEID, 8 bytes]`,
    // then the id in hex.
    let Some(dump) = Command::new("trace-cmd").args(["dump", "--options"]).arg(&f).output().ok() else {
        skip_tool("trace-cmd", "the trace-id against trace-cmd dump --options");
        return;
    };
    let text = String::from_utf8_lossy(&dump.stdout);
    let hex = text.lines().skip_while(|l| !l.contains("Option TRACEID")).nth(1).unwrap().trim();
    let id = u64::from_str_radix(hex.trim_start_matches("0x"), 16).unwrap();
    // LISA writes the number as a JSON string (u64 does not fit a double).
    assert!(meta.contains(&format!("\"trace-id\":\"{id}\"")), "{meta}");
}
