//! trbox as a library: read a trace.dat (a trbox stream, or a copy of a
//! tracefs tree given as a directory) and print how many records each event
//! has, the most first, then one field of the first record of each event.
//!
//! ```sh
//! cargo run --release --example event_counts tests/data/tracedat/v6-inst.dat
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use trbox::format::Value;
use trbox::sys::read::{Entry, ReadOptions, Reader};

fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: event_counts TRACE.DAT|TRACEFS-DIR");
        return ExitCode::from(1);
    };
    match run(Path::new(&path)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("event_counts: {e}");
            if let Some(h) = e.hint() {
                eprintln!("event_counts: hint: {h}");
            }
            ExitCode::from(2)
        }
    }
}

fn run(path: &Path) -> Result<(), trbox::sys::Error> {
    // Every CPU and buffer, read to the end.
    let o = ReadOptions::default();
    let mut r = if path.is_dir() { Reader::tree(path, &o)? } else { Reader::trace_dat(path, &o)? };
    // Per event: its count, and the first record's first field as text.
    let mut counts: BTreeMap<String, (u64, String)> = BTreeMap::new();
    let mut lost = 0u64;
    while let Some(entry) = r.next_entry() {
        match entry {
            Entry::Event(ev) => {
                let e = counts.entry(format!("{}:{}", ev.system(), ev.name())).or_default();
                e.0 += 1;
                if e.0 == 1 {
                    // The event's first integer field (after the common_* ones).
                    let value = ev.fields().find_map(|(name, v)| match v? {
                        Value::Signed(v) => Some(format!("{name}={v}")),
                        Value::Unsigned(v) => Some(format!("{name}={v}")),
                        _ => None,
                    });
                    e.1 = format!(
                        "cpu{} ts {} pid {}{}",
                        ev.cpu(),
                        ev.ts(),
                        ev.pid(),
                        value.map_or(String::new(), |v| format!(" {v}"))
                    );
                }
            }
            Entry::Lost { count, .. } => lost += count.unwrap_or(0),
            // Damaged pages and records of no known event are not counted
            // here: r.problems() has them.
            _ => {}
        }
    }
    let mut rows: Vec<_> = counts.into_iter().collect();
    rows.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then_with(|| a.0.cmp(&b.0)));
    for (name, (n, first)) in &rows {
        println!("{n:>8}  {name:<32}  first: {first}");
    }
    let total: u64 = rows.iter().map(|r| r.1 .0).sum();
    if total == 0 {
        // (The library leaves telling to its caller.)
        eprintln!("event_counts: {}: no records", path.display());
    }
    println!("{total:>8}  records, {lost} lost, clock {}", r.session().clock());
    Ok(())
}
