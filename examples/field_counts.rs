//! trbox as a library: how often each value of one field of one event
//! occurs in a recorded trace (a trace.dat, a `tr-cat -o -` stream, or a
//! copy of a tracefs tree given as a directory). One line per distinct
//! value, `VALUE<TAB>COUNT`, the most frequent first, ties by value;
//! strings as they are, integers in decimal.
//!
//! ```sh
//! cargo run --release --example field_counts tests/data/tracedat/v6-inst.dat sched:sched_switch prev_comm
//! ```

use std::collections::HashMap;
use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;
use trbox::format::Value;
use trbox::sys::read::{Entry, ReadOptions, Reader};

const USAGE: &str = "usage: field_counts FILE SYS:EVENT FIELD";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, event, field] = args.as_slice() else {
        eprintln!("{USAGE}");
        return ExitCode::from(1);
    };
    let Some((system, name)) = event.split_once(':') else {
        eprintln!("field_counts: {event}: not SYS:EVENT\n{USAGE}");
        return ExitCode::from(1);
    };
    match run(Path::new(path), system, name, field) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("field_counts: {e}");
            ExitCode::from(2)
        }
    }
}

/// A value as it sorts among ties: integers by number, strings by text.
#[derive(PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Key {
    Signed(i64),
    Unsigned(u64),
    Text(String),
}

fn run(path: &Path, system: &str, name: &str, field: &str) -> Result<(), String> {
    let o = ReadOptions::default();
    let mut r = if path.is_dir() { Reader::tree(path, &o) } else { Reader::trace_dat(path, &o) }
        .map_err(|e| e.hint().map_or_else(|| e.to_string(), |h| format!("{e}\nfield_counts: hint: {h}")))?;
    let Some(format) = r.session().events().get_by_name(system, name) else {
        return Err(format!("{}: no event {system}:{name} in this trace", path.display()));
    };
    if format.field(field).is_none() {
        let names: Vec<&str> = format.all_fields().map(|f| f.name.as_str()).collect();
        return Err(format!("{system}:{name} has no field {field} (its fields: {})", names.join(" ")));
    }
    let id = format.id;
    let mut counts: HashMap<Key, u64> = HashMap::new();
    while let Some(e) = r.next_entry() {
        let Entry::Event(ev) = e else { continue };
        if ev.format().id != id {
            continue;
        }
        let key = match ev.field(field) {
            Some(Value::Signed(v)) => Key::Signed(v),
            Some(Value::Unsigned(v)) => Key::Unsigned(v),
            Some(v) => Key::Text(v.to_string()),
            None => continue,
        };
        *counts.entry(key).or_default() += 1;
    }
    let problems = r.problems();
    if !problems.is_empty() {
        eprintln!(
            "field_counts: {}: {} problems reading it (pages skipped, unknown events…)",
            path.display(),
            problems.total()
        );
    }
    if counts.is_empty() {
        eprintln!("field_counts: {}: no {system}:{name} record", path.display());
    }
    let mut rows: Vec<(Key, u64)> = counts.into_iter().collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    // A reader that stops early (`| head`) ends the output, not the program
    // with a panic.
    let mut out = std::io::stdout().lock();
    for (k, n) in rows {
        let written = match k {
            Key::Signed(v) => writeln!(out, "{v}\t{n}"),
            Key::Unsigned(v) => writeln!(out, "{v}\t{n}"),
            Key::Text(s) => writeln!(out, "{s}\t{n}"),
        };
        if written.is_err() {
            break;
        }
    }
    Ok(())
}
