//! trbox as a library: how long each task ran on a CPU, from the
//! sched_switch records of a recorded trace (a trace.dat, a `tr-cat -o -`
//! stream, or a copy of a tracefs tree given as a directory).
//!
//! A task runs from the switch that puts it on a CPU (`next_pid`) to the
//! switch that takes it off (`prev_pid`); a CPU's time before its first
//! switch in the trace belongs to no known task and is not counted, and
//! neither is the idle task (pid 0). One line per task, `PID<TAB>COMM<TAB>
//! NANOSECONDS<TAB>RUNS` (RUNS: the slices counted), the longest first,
//! ties by pid; COMM is the task's `prev_comm` at its last switch out. The
//! buffer read is the top one, or BUFFER of a trace.dat with instances.
//!
//! ```sh
//! cargo run --release --example sched_runtime tests/data/tracedat/lisa-arm64-sched-load.dat
//! ```

use std::collections::HashMap;
use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;
use trbox::format::Value;
use trbox::sys::read::{Entry, ReadOptions, Reader};

const USAGE: &str = "usage: sched_runtime FILE [BUFFER]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (path, buffer) = match args.as_slice() {
        [path] => (path, ""),
        [path, buffer] => (path, buffer.as_str()),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(1);
        }
    };
    match run(Path::new(path), buffer) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sched_runtime: {e}");
            ExitCode::from(2)
        }
    }
}

/// What one task ran, summed.
#[derive(Default)]
struct Task {
    comm: String,
    ns: u64,
    runs: u64,
}

fn int(v: Option<Value<'_>>) -> Option<i64> {
    match v? {
        Value::Signed(v) => Some(v),
        Value::Unsigned(v) => i64::try_from(v).ok(),
        _ => None,
    }
}

fn run(path: &Path, buffer: &str) -> Result<(), String> {
    let o = ReadOptions { buffer: Some(buffer.to_string()), ..ReadOptions::default() };
    let mut r = if path.is_dir() { Reader::tree(path, &o) } else { Reader::trace_dat(path, &o) }
        .map_err(|e| e.hint().map_or_else(|| e.to_string(), |h| format!("{e}\nsched_runtime: hint: {h}")))?;
    let Some(id) = r.session().events().get_by_name("sched", "sched_switch").map(|f| f.id) else {
        return Err(format!("{}: no event sched:sched_switch in this trace", path.display()));
    };
    // Per CPU: when its current task was switched in, and which task.
    let mut on_cpu: HashMap<u32, (u64, i64)> = HashMap::new();
    let mut tasks: HashMap<i64, Task> = HashMap::new();
    let mut switches = 0u64;
    while let Some(e) = r.next_entry() {
        let Entry::Event(ev) = e else { continue };
        if ev.format().id != id {
            continue;
        }
        let (Some(prev), Some(next)) = (int(ev.field("prev_pid")), int(ev.field("next_pid"))) else {
            continue;
        };
        switches += 1;
        if let Some((since, _)) = on_cpu.get(&ev.cpu()).filter(|(_, pid)| *pid == prev && prev != 0) {
            let t = tasks.entry(prev).or_default();
            t.ns += ev.ts().saturating_sub(*since);
            t.runs += 1;
            if let Some(Value::Str(c)) = ev.field("prev_comm") {
                t.comm = String::from_utf8_lossy(c).into_owned();
            }
        }
        on_cpu.insert(ev.cpu(), (ev.ts(), next));
    }
    let problems = r.problems();
    if !problems.is_empty() {
        eprintln!(
            "sched_runtime: {}: {} problems reading it (pages skipped, unknown events…)",
            path.display(),
            problems.total()
        );
    }
    if switches == 0 {
        eprintln!("sched_runtime: {}: no sched:sched_switch record", path.display());
    } else if tasks.is_empty() {
        eprintln!("sched_runtime: {}: no task was both switched in and out on a CPU", path.display());
    }
    let mut rows: Vec<(i64, Task)> = tasks.into_iter().collect();
    rows.sort_by(|a, b| b.1.ns.cmp(&a.1.ns).then_with(|| a.0.cmp(&b.0)));
    // A reader that stops early (`| head`) ends the output, not the program
    // with a panic.
    let mut out = std::io::stdout().lock();
    for (pid, t) in rows {
        if writeln!(out, "{pid}\t{}\t{}\t{}", t.comm, t.ns, t.runs).is_err() {
            break;
        }
    }
    Ok(())
}
