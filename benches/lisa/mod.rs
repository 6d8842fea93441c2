//! trbox beside LISA's Rust `trace-dump` on the bench's real capture (part
//! of `make bench`; `TRBOX_BENCH=parquet make bench` runs only this, on a
//! fresh capture): `tr-cat FILE -o X.parquet` against `trace-dump parquet`
//! (CPU, wall, peak RSS, bytes written, both snappy; every event's rows
//! against `trace-cmd report`'s lines), and `tr-cat -j 1 FILE` against
//! `trace-dump human-readable` (CPU). LISA's binary is
//! $TRBOX_LISA_TRACE_DUMP, else ~/.cache/trbox/lisa/trace-dump
//! (/work/shared/tools/lisa/build.sh builds it); without it the LISA side
//! is skipped, said in one line.

use super::{run_measured, Command, Path, PathBuf, Stdio};
use std::collections::BTreeMap;
use std::fs;

/// Issue 41's goals: peak RSS, and CPU against LISA's.
const RSS_GOAL_KIB: i64 = 64 * 1024;
const CPU_GOAL: f64 = 0.5;
/// Issue 42's: `tr-cat -j 1` against `trace-dump human-readable`, CPU.
const TEXT_GOAL: f64 = 0.33;

fn lisa_binary() -> Option<PathBuf> {
    let p = match std::env::var_os("TRBOX_LISA_TRACE_DUMP") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".cache/trbox/lisa/trace-dump"),
    };
    p.is_file().then_some(p)
}

/// One run's (wall s, CPU s user+sys, peak RSS KiB).
type Usage = (f64, f64, i64);

/// The run with the least CPU of 3 (a shared machine slows some down);
/// `fresh` runs before each (the converters refuse or mix an old output).
fn least_cpu(mk: &dyn Fn() -> Command, fresh: &dyn Fn()) -> Usage {
    let report = std::env::temp_dir().join(format!("trbox-bench-lisa-usage-{}", std::process::id()));
    (0..3)
        .map(|_| {
            fresh();
            run_measured(&mk(), &report)
        })
        .fold((0.0, f64::MAX, 0), |b, r| if r.1 < b.1 { r } else { b })
}

/// Bytes of the `.parquet` files under `dir` (meta.json left out).
fn parquet_bytes(dir: &Path) -> u64 {
    let mut n = 0;
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            n += parquet_bytes(&p);
        } else if p.extension().is_some_and(|x| x == "parquet") {
            n += e.metadata().map_or(0, |m| m.len());
        }
    }
    n
}

/// meta.json's `events-info`: rows per event that has a file, and the
/// events with errors (LISA's refusals). A scan for the keys, not a JSON
/// parser: both writers put each event in one flat object.
fn meta_rows(dir: &Path) -> (BTreeMap<String, u64>, Vec<String>) {
    let text = fs::read_to_string(dir.join("meta.json")).unwrap_or_default();
    let (mut rows, mut errors) = (BTreeMap::new(), Vec::new());
    let Some(start) = text.find("\"events-info\"") else { return (rows, errors) };
    for obj in text[start..].split('{').skip(1) {
        let obj = obj.split('}').next().unwrap_or("");
        let Some(name) = obj.split("\"event\":\"").nth(1).and_then(|s| s.split('"').next()) else { continue };
        let n = obj
            .split("\"nr-rows\":")
            .nth(1)
            .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next().and_then(|d| d.parse::<u64>().ok()));
        if obj.contains("\"errors\":[\"") {
            errors.push(name.to_string());
        }
        if let Some(n) = n.filter(|_| obj.contains("\"path\"")) {
            rows.insert(name.to_string(), n);
        }
    }
    (rows, errors)
}

/// Lines per event of `trace-cmd report -N FILE` (`COMM-PID [CPU] TS:
/// EVENT: …`); `None` without trace-cmd.
fn report_counts(file: &Path) -> Option<BTreeMap<String, u64>> {
    use std::io::BufRead;
    let mut child = Command::new("trace-cmd")
        .args(["report", "-N"])
        .arg(file)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut m = BTreeMap::new();
    for l in std::io::BufReader::new(child.stdout.take()?).split(b'\n').map_while(Result::ok) {
        let l = String::from_utf8_lossy(&l);
        let Some((_, rest)) = l.split_once("] ") else { continue };
        let Some((_, rest)) = rest.split_once(": ") else { continue };
        let name = rest.split(':').next().unwrap_or("").trim();
        *m.entry(name.to_string()).or_insert(0) += 1;
    }
    child.wait().ok()?.success().then_some(m)
}

/// The events whose rows differ from `want`'s counts, as `NAME a/b`.
fn differ(got: &BTreeMap<String, u64>, want: &BTreeMap<String, u64>) -> Vec<String> {
    let names: std::collections::BTreeSet<&String> = got.keys().chain(want.keys()).collect();
    names
        .into_iter()
        .filter(|n| got.get(*n) != want.get(*n))
        .map(|n| format!("{n} {}/{}", got.get(n).copied().unwrap_or(0), want.get(n).copied().unwrap_or(0)))
        .collect()
}

/// The section: `file` is the real capture (`events` records).
pub fn lisa_bench(trbox: &Path, file: &Path, events: u64) {
    let dir = std::env::temp_dir().join(format!("trbox-bench-parquet-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let ours = dir.join("trbox.parquet");
    // Row groups are written on every CPU; -j 1 writes them on the
    // reading thread (the same files).
    let convert = |jobs: &'static [&'static str]| {
        least_cpu(
            &|| {
                let mut c = Command::new(trbox);
                c.arg("tr-cat").args(jobs).args([file.to_str().unwrap(), "-o", ours.to_str().unwrap()]);
                c
            },
            &|| {
                let _ = fs::remove_dir_all(&ours);
            },
        )
    };
    let one_run = convert(&["-j", "1"]);
    let ours_run = convert(&[]);
    let our_bytes = parquet_bytes(&ours);
    let (our_rows, _) = meta_rows(&ours);
    let total: u64 = our_rows.values().sum();
    println!("parquet: the real capture ({events} events) as LISA's layout, snappy; least CPU of 3 runs each");
    println!("  {:<36} {:>8} {:>8} {:>12} {:>12}", "converter", "CPU s", "wall s", "peak RSS KiB", "bytes");
    let line = |name: &str, u: Usage, bytes: u64| {
        println!("  {name:<36} {:>8.3} {:>8.3} {:>12} {:>12}", u.1, u.0, u.2, bytes);
    };
    line("tr-cat FILE -o X.parquet", ours_run, our_bytes);
    line("tr-cat -j 1 FILE -o X.parquet", one_run, our_bytes);
    println!("  wall on every CPU / -j 1: {:.2}", ours_run.0 / one_run.0.max(1e-9));
    match report_counts(file) {
        Some(want) => {
            let bad = differ(&our_rows, &want);
            if bad.is_empty() {
                println!("  rows: {total} in {} events, each as trace-cmd report's lines", our_rows.len());
            } else {
                println!("  rows: MISMATCH against trace-cmd report (ours/report): {}", bad.join(", "));
            }
        }
        None => println!("  rows: {total} in {} events (trace-cmd missing: not compared)", our_rows.len()),
    }
    let rss_ok = if ours_run.2 <= RSS_GOAL_KIB { "met" } else { "NOT met" };
    println!("  peak RSS {} KiB (goal <= {RSS_GOAL_KIB}: {rss_ok})", ours_run.2);
    let Some(lisa) = lisa_binary() else {
        println!(
            "  LISA: skipped: no trace-dump (build it with /work/shared/tools/lisa/build.sh LISA_CHECKOUT \
             ~/.cache/trbox/lisa, or set TRBOX_LISA_TRACE_DUMP)"
        );
        let _ = fs::remove_dir_all(&dir);
        return;
    };
    let theirs = dir.join("lisa");
    let lisa_run = least_cpu(
        &|| {
            let mut c = Command::new(&lisa);
            c.args(["parquet", "--trace", file.to_str().unwrap(), "--trace-format", "tracedat"]);
            c.args(["--compression", "snappy"]).current_dir(&theirs);
            c
        },
        &|| {
            let _ = fs::remove_dir_all(&theirs);
            fs::create_dir_all(&theirs).unwrap();
        },
    );
    let lisa_bytes = parquet_bytes(&theirs);
    line("trace-dump parquet (LISA)", lisa_run, lisa_bytes);
    let (lisa_rows, lisa_errors) = meta_rows(&theirs);
    let bad = differ(&our_rows, &lisa_rows);
    if !theirs.join("meta.json").exists() {
        // Its parquet files are written event by event; meta.json last,
        // and not when it met an error (lost events are one). Its last
        // line of stderr says which.
        let _ = fs::remove_dir_all(&theirs);
        fs::create_dir_all(&theirs).unwrap();
        let o = Command::new(&lisa)
            .args(["parquet", "--trace", file.to_str().unwrap(), "--trace-format", "tracedat"])
            .args(["--compression", "snappy"])
            .current_dir(&theirs)
            .stdout(Stdio::null())
            .output();
        let why = o.map(|o| String::from_utf8_lossy(&o.stderr).lines().last().unwrap_or("").to_string());
        println!("  LISA's rows: unknown: trace-dump wrote no meta.json; it said: {}", why.unwrap_or_default());
    } else if bad.is_empty() {
        println!("  LISA's rows: the same in every event");
    } else {
        println!("  LISA's rows differ (ours/LISA's): {}", bad.join(", "));
    }
    if !lisa_errors.is_empty() {
        println!("  LISA's meta.json has errors for: {}", lisa_errors.join(", "));
    }
    let cpu = ours_run.1 / lisa_run.1;
    let bytes = our_bytes as f64 / lisa_bytes.max(1) as f64;
    println!(
        "  ratio: CPU {cpu:.2}x LISA's (goal <= {CPU_GOAL}: {}), wall {:.2}x, peak RSS {:.2}x, bytes {bytes:.2}x \
         (goal <= 1: {})",
        if cpu <= CPU_GOAL { "met" } else { "NOT met" },
        ours_run.0 / lisa_run.0,
        ours_run.2 as f64 / lisa_run.2.max(1) as f64,
        if bytes <= 1.0 { "met" } else { "NOT met" }
    );
    // Text: issue 42's third goal.
    let none = || {};
    let text1 = least_cpu(
        &|| {
            let mut c = Command::new(trbox);
            c.args(["tr-cat", "-j", "1", file.to_str().unwrap()]);
            c
        },
        &none,
    );
    let lisa_text = least_cpu(
        &|| {
            let mut c = Command::new(&lisa);
            c.args(["human-readable", "--trace", file.to_str().unwrap(), "--trace-format", "tracedat"]);
            c
        },
        &none,
    );
    let r = text1.1 / lisa_text.1;
    println!(
        "text: tr-cat -j 1 FILE {:.3} s CPU (peak RSS {} KiB), trace-dump human-readable {:.3} s CPU (peak RSS {} \
         KiB): {r:.2}x (goal <= {TEXT_GOAL}: {})",
        text1.1,
        text1.2,
        lisa_text.1,
        lisa_text.2,
        if r <= TEXT_GOAL { "met" } else { "NOT met" }
    );
    let _ = fs::remove_dir_all(&dir);
}
