//! `tr-cat FILE` renders on several threads (src/sys/read/parallel.rs); its output
//! must be byte for byte what one thread prints, across many batches, with
//! losses between them and with a switch to the graph layout part way
//! through (which the one-thread loop takes over).

use super::common;
use common::*;
use std::path::Path;

fn tr_cat(args: &[&str]) -> String {
    let o = run(&[&["tr-cat"], args].concat());
    assert!(o.status.success(), "tr-cat {args:?}: {}", stderr(&o));
    stdout(&o)
}

#[test]
fn threads_print_what_one_thread_prints() {
    let fx = Path::new("tests/fixtures/x86_64");
    let out = std::env::temp_dir().join(format!("trbox-threads-{}.dat", std::process::id()));
    let events = fx.join("events");
    let parts = [
        // ~100 batches of plain events, a loss every 7th copy...
        dat::Part { dir: &events, min_events: 100_000, lost_every: Some(7) },
        // ...then function_graph records: the graph layout from there on.
        dat::Part { dir: &fx.join("function_graph"), min_events: 1, lost_every: None },
    ];
    let (n, _) = dat::build(&events, &parts, &out);
    let file = out.to_str().unwrap();
    let one = tr_cat(&["-j", "1", file]);
    let lines = one.lines().count();
    let lost = one.lines().filter(|l| l.contains("[LOST EVENTS]")).count();
    let graph = one.lines().filter(|l| l.contains(" |  ")).count();
    println!("{n} events: {lines} lines, {lost} loss lines, {graph} graph lines");
    assert!(lines as u64 >= n - n / 10 && lost > 5 && graph > 100, "the file does not exercise what it should");
    for j in ["2", "3", "8"] {
        let many = tr_cat(&["-j", j, file]);
        assert!(
            many == one,
            "-j {j}: output differs from -j 1 (first differing line {:?})",
            many.lines().zip(one.lines()).position(|(a, b)| a != b)
        );
    }
    // Filters and JSON take the same path.
    for args in [&["--json"][..], &["-e", "timer:*"][..], &["--pid", "0"][..]] {
        let a = tr_cat(&[&["-j", "1"], args, &[file]].concat());
        let b = tr_cat(&[&["-j", "4"], args, &[file]].concat());
        assert!(!a.is_empty() && a == b, "{args:?}: -j 4 differs from -j 1");
    }
    let _ = std::fs::remove_file(&out);
}
