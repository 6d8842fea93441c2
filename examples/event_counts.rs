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
use trbox::sys::read::{self, Input, Item, RawOpts};
use trbox::sys::Tracefs;

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
    // Every CPU and buffer, no filter, read to the end (not followed).
    let o = RawOpts::all(false, false, None, None);
    let tree;
    let input = if path.is_dir() {
        tree = Tracefs::at(path)?;
        Input::tree(&tree, &o)?
    } else {
        Input::trace_dat("event_counts", path, None, &o)?
    };
    // Per event: its count, and the first record's first field as text.
    let mut counts: BTreeMap<String, (u64, String)> = BTreeMap::new();
    let mut lost = 0u64;
    let meta = read::collect(input, &o, &|| false, &mut |m, item| match item {
        Item::Record { cpu, ts, payload, .. } => {
            let Some(ev) = m.trace.events.event_of(payload, m.trace.endian) else { return };
            let e = counts.entry(format!("{}:{}", ev.system, ev.name)).or_default();
            e.0 += 1;
            if e.0 == 1 {
                // The event's first integer field (after the common_* ones).
                let endian = m.trace.endian;
                let value = ev.fields.iter().filter(|f| !f.name.starts_with("common_")).find_map(|f| {
                    let v = if f.signed {
                        f.int(payload, endian)?.to_string()
                    } else {
                        f.loc().uint(payload, endian)?.to_string()
                    };
                    Some(format!("{}={v}", f.name))
                });
                e.1 = format!(
                    "cpu{cpu} ts {ts} pid {}{}",
                    m.pid(ev, payload),
                    value.map_or(String::new(), |v| format!(" {v}"))
                );
            }
        }
        Item::Lost { count, .. } => lost += count.unwrap_or(0),
    })?;
    let mut rows: Vec<_> = counts.into_iter().collect();
    rows.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then_with(|| a.0.cmp(&b.0)));
    for (name, (n, first)) in &rows {
        println!("{n:>8}  {name:<32}  first: {first}");
    }
    let total: u64 = rows.iter().map(|r| r.1 .0).sum();
    println!("{total:>8}  records, {lost} lost, clock {}", meta.trace.clock);
    Ok(())
}
