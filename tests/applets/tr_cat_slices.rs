//! `tr-cat FILE` with several threads reads by time slices
//! (src/sys/read/slices.rs): each worker merges and renders its own slice.
//! Its output must be byte for byte what one thread prints, whatever the
//! slices: TRBOX_SLICE_RECORDS=1 cuts at nearly every page, so every
//! boundary of every fixture is a case (records of one time on two CPUs, a
//! page across a boundary, a loss, a stack record after its event).
//! `--stats` counts by the same slices, each worker its own, the counts
//! summed: the same table at every -j.

use super::common;
use common::*;
use std::path::Path;
use std::process::Output;

/// `tr-cat ARGS` with `-j JOBS`, slices of about `slice` records (`None`:
/// as it chooses); its output, and how many slices it read by.
fn tr_cat(args: &[&str], jobs: &str, slice: Option<&str>) -> (Output, usize) {
    let mut c = cmd(&trbox(), &[&["tr-cat", "-j", jobs], args].concat());
    c.env("RUST_LOG", "trbox::sys::read::slices=debug");
    if let Some(n) = slice {
        c.env("TRBOX_SLICE_RECORDS", n);
    }
    let o = c.output().expect("run trbox");
    let err = stderr(&o);
    let slices =
        err.lines().find_map(|l| l.strip_prefix("DEBUG: time slices: ")?.split(' ').next()?.parse().ok()).unwrap_or(0);
    (o, slices)
}

/// The same output at every -j and slice size as with -j 1; returns the
/// most slices any run read by.
fn same_as_one_thread(args: &[&str]) -> usize {
    let (one, _) = tr_cat(args, "1", None);
    let one_err: Vec<String> = stderr(&one).lines().filter(|l| !l.starts_with("DEBUG")).map(String::from).collect();
    let mut most = 0;
    for jobs in ["2", "3", "4", "8"] {
        for slice in [None, Some("1")] {
            let (many, slices) = tr_cat(args, jobs, slice);
            most = most.max(slices);
            let err: Vec<String> =
                stderr(&many).lines().filter(|l| !l.starts_with("DEBUG")).map(String::from).collect();
            assert_eq!(many.status.code(), one.status.code(), "{args:?} -j {jobs} {slice:?}: exit status");
            assert_eq!(err, one_err, "{args:?} -j {jobs} {slice:?}: stderr");
            assert!(
                many.stdout == one.stdout,
                "{args:?} -j {jobs} slices of {slice:?}: output differs from -j 1 (first differing line {:?})",
                stdout(&many).lines().zip(stdout(&one).lines()).position(|(a, b)| a != b)
            );
        }
    }
    most
}

/// Every trace.dat of tests/data/tracedat, sorted.
fn tracedat_files() -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir("tests/data/tracedat")
        .unwrap()
        .flatten()
        .map(|e| e.path().to_string_lossy().into_owned())
        .filter(|p| p.ends_with(".dat"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_fixture_reads_the_same_by_slices() {
    let mut sliced = 0;
    for f in &tracedat_files() {
        if same_as_one_thread(&[f]) > 1 {
            sliced += 1;
        }
    }
    for tree in fixture_trees() {
        let t = tree.to_str().unwrap();
        let scenario = tree.file_name().unwrap().to_str().unwrap();
        // The filters where stack records follow their events (a stack
        // record takes the verdict of the event before it, maybe in the
        // slice before), and JSON where events are many.
        let extras: &[&[&str]] = match scenario {
            "stack" | "function_stack" => &[&[], &["-P", "1"], &["-e", "ftrace:kernel_stack"]],
            "events" => &[&[], &["-e", "sched:*"], &["--json"]],
            _ => &[&[]],
        };
        for extra in extras {
            if same_as_one_thread(&[&["--raw", "-T", t], *extra].concat()) > 1 {
                sliced += 1;
            }
        }
    }
    // Compressed files and graph layouts are read the old way; most are not.
    assert!(sliced > 60, "only {sliced} runs were read by slices");
}

/// `--stats` by slices: the same table (and the same problem lines) as
/// one thread's, on every trace.dat, a copy's stack records with a filter
/// they follow, and a file of losses with filters.
#[test]
fn stats_count_the_same_by_slices() {
    let mut sliced = 0;
    for f in &tracedat_files() {
        if same_as_one_thread(&["--stats", f]) > 1 {
            sliced += 1;
        }
    }
    for tree in fixture_trees() {
        let t = tree.to_str().unwrap();
        let extras: &[&[&str]] = match tree.file_name().unwrap().to_str().unwrap() {
            "stack" | "function_stack" => &[&["-P", "1"], &["-e", "ftrace:kernel_stack"]],
            "events" => &[&[], &["-e", "sched:*"], &["--all"]],
            _ => &[],
        };
        for extra in extras {
            if same_as_one_thread(&[&["--stats", "--raw", "-T", t], *extra].concat()) > 1 {
                sliced += 1;
            }
        }
    }
    assert!(sliced > 20, "only {sliced} runs were counted by slices");
    let fx = Path::new("tests/fixtures/x86_64/events");
    let out = std::env::temp_dir().join(format!("trbox-slices-stats-{}.dat", std::process::id()));
    let parts = [dat::Part { dir: fx, min_events: 50_000, lost_every: Some(5) }];
    dat::build(fx, &parts, &out);
    let file = out.to_str().unwrap();
    let (one, _) = tr_cat(&["--stats", file], "1", None);
    assert!(stdout(&one).contains("lost"), "{}", stdout(&one));
    for args in [&[][..], &["-e", "timer:*"][..], &["--pid", "0"][..]] {
        assert!(same_as_one_thread(&[&["--stats"], args, &[file]].concat()) > 4, "{args:?}: not counted by slices");
    }
    let _ = std::fs::remove_file(&out);
}

/// Two CPUs with the very same records: every time is on both CPUs, so
/// every boundary has records of one time on either side of it.
#[test]
fn records_of_one_time_on_two_cpus_stay_in_order() {
    let dir = TempDir::new("slices-twin");
    let fx = Path::new("tests/fixtures/x86_64/events");
    copy_tree(fx, dir.path());
    let cpu0 = dir.path().join("per_cpu/cpu0/trace_pipe_raw");
    std::fs::copy(&cpu0, dir.path().join("per_cpu/cpu1/trace_pipe_raw")).unwrap();
    let t = dir.path().to_str().unwrap();
    let (one, _) = tr_cat(&["--raw", "-T", t], "1", None);
    let text = stdout(&one);
    let twins = text
        .lines()
        .zip(text.lines().skip(1))
        .filter(|(a, b)| a.replace("[001]", "[000]") == b.replace("[001]", "[000]"))
        .count();
    assert!(twins > 100, "the copy does not pair records ({twins})");
    assert!(same_as_one_thread(&["--raw", "-T", t]) > 4);
}

/// A large file of losses and plain events, read by slices of every size.
#[test]
fn a_large_file_with_losses_reads_the_same() {
    let fx = Path::new("tests/fixtures/x86_64");
    let out = std::env::temp_dir().join(format!("trbox-slices-{}.dat", std::process::id()));
    let events = fx.join("events");
    let parts = [dat::Part { dir: &events, min_events: 50_000, lost_every: Some(5) }];
    let (n, _) = dat::build(&events, &parts, &out);
    let file = out.to_str().unwrap();
    let (one, _) = tr_cat(&[file], "1", None);
    let text = stdout(&one);
    assert!(text.lines().filter(|l| l.contains("[LOST EVENTS]")).count() > 5, "{n} events: no losses to cut at");
    for args in [&[][..], &["--json"][..], &["-e", "timer:*"][..], &["--pid", "0"][..]] {
        assert!(same_as_one_thread(&[args, &[file]].concat()) > 4, "{args:?}: not read by slices");
    }
    let _ = std::fs::remove_file(&out);
}
