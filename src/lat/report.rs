//! tr-lat's report: the accumulators of a run ([`Lat`]) printed as
//! tables (rtla's `top`), histograms (rtla's `hist`) or JSON lines, and
//! one sample or a max-latency tracer's new maximum as a JSON line. All
//! JSON goes through [`crate::json`].

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt::{self, Write};

use super::{Lat, Mode, Noise, Row, Sample, Stat, Table, VecMap, CLASSES, SOFTIRQS};
use crate::json::{self, Object};
use crate::problems::Problems;
use crate::render::Cmdlines;

/// How values are printed: µs with three decimals (default) or ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unit {
    /// Print nanoseconds (`--ns`), not microseconds.
    pub(crate) ns: bool,
}

impl Unit {
    /// The unit's name for column headers and JSON (`us` or `ns`).
    pub(crate) fn name(self) -> &'static str {
        if self.ns {
            "ns"
        } else {
            "us"
        }
    }

    /// Writes `v` nanoseconds in this unit: `12.345` (µs) or `12345`.
    pub(crate) fn write<W: Write + ?Sized>(self, w: &mut W, v: u64) -> fmt::Result {
        if self.ns {
            write!(w, "{v}")
        } else {
            write!(w, "{}.{:03}", v / 1000, v % 1000)
        }
    }

    fn cell<W: Write + ?Sized>(self, w: &mut W, v: u64, width: usize) -> fmt::Result {
        let mut s = String::new();
        self.write(&mut s, v)?;
        write!(w, " {s:>width$}")
    }
}

/// The name of a row's key as a person reads it.
pub(crate) fn key_name(table: Table, key: i64, row: &Row, cmdlines: &Cmdlines) -> String {
    let comm = |pid: i64| {
        if row.name.is_empty() {
            String::from(cmdlines.comm(pid as i32))
        } else {
            row.name.clone()
        }
    };
    match table {
        Table::Task | Table::SyscallTask => alloc::format!("{}-{key}", comm(key)),
        Table::Class => String::from(usize::try_from(key).ok().and_then(|i| CLASSES.get(i)).copied().unwrap_or("?")),
        Table::HardIrq if !row.name.is_empty() => alloc::format!("{key} {}", row.name),
        Table::SoftIrq => match usize::try_from(key).ok().and_then(|i| SOFTIRQS.get(i)) {
            Some(n) => alloc::format!("{key} {n}"),
            None => alloc::format!("{key}"),
        },
        Table::Syscall if !row.name.is_empty() => row.name.clone(),
        Table::Syscall => alloc::format!("NR {key}"),
        _ => alloc::format!("{key}"),
    }
}

const KEY_WIDTH: usize = 24;

/// Every table of `lat`: a title with the unit, then one line per key
/// (sorted by key; tasks by their maximum, worst first).
/// Task rows a table shows unless every task is asked for: a board's
/// short-lived tasks (`sleep-PID` by the hundred) would not fit a screen.
pub(crate) const TOP: usize = 20;

/// The rows of a task table to show: every task when they fit in `top`
/// rows (or without `top`); else the tasks of one comm in one row
/// (`sleep (750 tasks)`), the `top` with the highest maximum, and how many
/// were left out.
fn task_rows(
    rows: &[(i64, &Row)],
    table: Table,
    cmdlines: &Cmdlines,
    top: Option<usize>,
) -> (Vec<(String, Stat)>, usize) {
    let Some(top) = top.filter(|&top| rows.len() > top) else {
        return (rows.iter().map(|(k, r)| (key_name(table, *k, r, cmdlines), r.stat)).collect(), 0);
    };
    // (comm, tasks, stat, the one pid's name)
    let mut groups: Vec<(String, usize, Stat, String)> = Vec::new();
    for (k, r) in rows {
        let name = key_name(table, *k, r, cmdlines);
        let comm = name.rsplit_once('-').map_or(name.as_str(), |(c, _)| c).to_string();
        match groups.iter_mut().find(|g| g.0 == comm) {
            Some(g) => {
                g.1 += 1;
                g.2.merge(&r.stat);
            }
            None => groups.push((comm, 1, r.stat, name)),
        }
    }
    // Unstable: no two groups have one comm, so no ties.
    groups.sort_unstable_by(|a, b| b.2.max.cmp(&a.2.max).then_with(|| a.0.cmp(&b.0)));
    let more = groups.len().saturating_sub(top);
    groups.truncate(top);
    let shown = groups
        .into_iter()
        .map(|(comm, n, stat, one)| (if n == 1 { one } else { alloc::format!("{comm} ({n} tasks)") }, stat))
        .collect();
    (shown, more)
}

/// The tables: one per kind of key, task tables sorted by maximum (and,
/// with `top`, grouped by comm and cut: `task_rows`); with `top`, a
/// longer table of another kind shows its `top` worst rows.
pub(crate) fn write_tables<W: Write + ?Sized>(
    w: &mut W,
    lat: &Lat,
    unit: Unit,
    cmdlines: &Cmdlines,
    top: Option<usize>,
) -> fmt::Result {
    let mut tables: Vec<Table> = lat.rows().map(|(t, _, _)| t).collect();
    tables.dedup();
    for (i, t) in tables.iter().enumerate() {
        let (title, key) = t.title();
        if i > 0 {
            w.write_char('\n')?;
        }
        writeln!(w, "# {title}, {}", unit.name())?;
        // Per call, failures too (as strace -c): a narrower key keeps the
        // line in 80 columns; the longest call names are 22 bytes.
        let errors = *t == Table::Syscall;
        let width = if errors { KEY_WIDTH - 6 } else { KEY_WIDTH };
        write!(w, "{key:<width$} {:>8} {:>10} {:>10} {:>10} {:>12}", "COUNT", "MIN", "AVG", "MAX", "TOTAL")?;
        w.write_str(if errors { " ERRORS\n" } else { "\n" })?;
        let mut rows: Vec<(i64, &Row)> = lat.rows().filter(|(u, _, _)| u == t).map(|(_, k, r)| (k, r)).collect();
        let tasks = matches!(t, Table::Task | Table::SyscallTask);
        // Tasks, and any table longer than `top` (system calls, IRQs of a
        // big board): the worst first.
        let cut = top.filter(|&n| rows.len() > n);
        if tasks || cut.is_some() {
            // Unstable: a table's keys are unique, so no ties.
            rows.sort_unstable_by(|a, b| b.1.stat.max.cmp(&a.1.stat.max).then(a.0.cmp(&b.0)));
        }
        let (shown, more) = if tasks {
            task_rows(&rows, *t, cmdlines, top)
        } else {
            let more = cut.map_or(0, |n| rows.len() - n);
            rows.truncate(rows.len() - more);
            (rows.iter().map(|(k, r)| (key_name(*t, *k, r, cmdlines), r.stat)).collect(), more)
        };
        for (mut name, stat) in shown {
            if name.len() > width {
                let mut cut = width;
                while !name.is_char_boundary(cut) {
                    cut -= 1;
                }
                name.truncate(cut);
            }
            write!(w, "{name:<width$} {:>8}", stat.count)?;
            unit.cell(w, stat.min, 10)?;
            unit.cell(w, stat.avg(), 10)?;
            unit.cell(w, stat.max, 10)?;
            unit.cell(w, stat.sum, 12)?;
            if errors {
                write!(w, " {:>6}", stat.errors)?;
            }
            w.write_char('\n')?;
        }
        if more > 0 {
            writeln!(w, "# and {more} more (--all: every {})", if tasks { "task" } else { "row" })?;
        }
    }
    if let Some(noise) = lat.noise().filter(|n| !n.is_empty()) {
        write_noise(w, noise)?;
    }
    Ok(())
}

/// The osnoise tracer's per-CPU table, as `rtla osnoise top` shows it
/// (runtime and noise in µs, as the tracer reports them).
fn write_noise<W: Write + ?Sized>(w: &mut W, noise: &VecMap<u32, Noise>) -> fmt::Result {
    writeln!(w, "\n# osnoise per CPU: runtime, noise and max single noise in us")?;
    writeln!(w, "CPU   PERIODS      RUNTIME      NOISE  %AVAIL  MAXSINGLE      HW     NMI     IRQ SOFTIRQ  THREAD")?;
    for (cpu, n) in noise.iter() {
        let a = n.available_mpct();
        writeln!(
            w,
            "{cpu:<3} {:>9} {:>12} {:>10} {:>3}.{:03} {:>10} {:>7} {:>7} {:>7} {:>7} {:>7}",
            n.periods,
            n.runtime,
            n.noise,
            a / 1000,
            a % 1000,
            n.max_single,
            n.hw,
            n.nmi,
            n.irq,
            n.softirq,
            n.thread
        )?;
    }
    Ok(())
}

/// Every histogram: per key, the non-empty buckets (`FROM-TO COUNT`) and
/// the overflow row.
pub(crate) fn write_hists<W: Write + ?Sized>(w: &mut W, lat: &Lat, unit: Unit, cmdlines: &Cmdlines) -> fmt::Result {
    let mut first = true;
    for (t, k, r) in lat.rows() {
        let Some(h) = &r.hist else { continue };
        if !first {
            w.write_char('\n')?;
        }
        first = false;
        let (title, _) = t.title();
        writeln!(w, "# {title}: {} ({} samples), {}", key_name(t, k, r, cmdlines), r.stat.count, unit.name())?;
        for (i, n) in h.buckets.iter().enumerate().filter(|(_, n)| **n > 0) {
            let from = (i as u64).saturating_mul(h.width);
            let mut s = String::new();
            unit.write(&mut s, from)?;
            s.push_str(" - ");
            unit.write(&mut s, from.saturating_add(h.width))?;
            writeln!(w, "{s:>27} {n:>10}")?;
        }
        let mut s = String::from(">= ");
        unit.write(&mut s, (h.buckets.len() as u64).saturating_mul(h.width))?;
        writeln!(w, "{s:>27} {:>10}", h.over)?;
    }
    Ok(())
}

/// One JSON object per row (and per osnoise CPU), one a line; values in
/// `unit`, with `"unit"` saying which.
pub(crate) fn write_json<W: Write>(w: &mut W, lat: &Lat, unit: Unit, cmdlines: &Cmdlines) -> fmt::Result {
    for (t, k, r) in lat.rows() {
        let mut o = Object::begin(w)?;
        o.string("table", t.name())?;
        o.int("key", k)?;
        o.string("name", &key_name(t, k, r, cmdlines))?;
        o.string("unit", unit.name())?;
        o.uint("count", r.stat.count)?;
        for (n, v) in [("min", r.stat.min), ("avg", r.stat.avg()), ("max", r.stat.max), ("sum", r.stat.sum)] {
            unit.write(o.key(n)?, v)?;
        }
        if t == Table::Syscall {
            o.uint("errors", r.stat.errors)?;
        }
        if let Some(h) = &r.hist {
            let mut hist = Object::begin(o.key("hist")?)?;
            unit.write(hist.key("width")?, h.width)?;
            json::uint_array(hist.key("buckets")?, h.buckets.iter().copied())?;
            hist.uint("over", h.over)?;
            hist.end()?;
        }
        o.end()?;
        w.write_char('\n')?;
    }
    for (&cpu, n) in lat.noise().into_iter().flat_map(|n| n.iter()) {
        let mut o = Object::begin(w)?;
        o.string("table", "osnoise_cpu")?;
        o.uint("key", u64::from(cpu))?;
        o.string("unit", "us")?;
        o.uint("periods", n.periods)?;
        o.uint("runtime", n.runtime)?;
        o.uint("noise", n.noise)?;
        let a = n.available_mpct();
        write!(o.key("available_pct")?, "{}.{:03}", a / 1000, a % 1000)?;
        for (k, v) in [
            ("max_single", n.max_single),
            ("hw", n.hw),
            ("nmi", n.nmi),
            ("irq", n.irq),
            ("softirq", n.softirq),
            ("thread", n.thread),
        ] {
            o.uint(k, v)?;
        }
        o.end()?;
        w.write_char('\n')?;
    }
    if lat.mode == Mode::Timerlat {
        // The kernel's own count beside ours: what a reader missed shows.
        let mut o = Object::begin(w)?;
        o.string("table", "timerlat_samples")?;
        o.uint("taken", lat.taken)?;
        o.uint("read", lat.timer_irqs())?;
        o.end()?;
        w.write_char('\n')?;
    }
    if lat.mode == Mode::Wakeup {
        // What was not counted, and why: wakings no switch to their task
        // followed, and begins or ends the window or a loss cut.
        let mut o = Object::begin(w)?;
        o.string("table", "uncounted")?;
        o.uint("wakings_without_switch", lat.wakings_without_switch())?;
        o.uint("unpaired", lat.unpaired)?;
        o.uint("losses", lat.lost)?;
        o.end()?;
        w.write_char('\n')?;
    }
    Ok(())
}

/// A max-latency tracer's new maximum (`tr-lat wakeup_rt --json` …) as a
/// JSON object on one line: the tracer, its sequence number `n`, the
/// latency in us, and the saved file's name (`file`) or else the kernel's
/// trace text of it (`trace`).
pub(crate) fn write_max_json<W: Write>(
    w: &mut W,
    tracer: &str,
    n: u32,
    latency_us: u64,
    file: Option<&str>,
    trace: &str,
) -> fmt::Result {
    let (k, body) = file.map_or(("trace", trace), |f| ("file", f));
    let mut o = Object::begin(w)?;
    o.string("tracer", tracer)?;
    o.uint("n", u64::from(n))?;
    o.string("unit", "us")?;
    o.uint("latency", latency_us)?;
    o.string(k, body)?;
    o.end()?;
    w.write_char('\n')
}

/// One sample as a JSON line: times in trace-clock ns, the latency in ns.
pub(crate) fn write_sample<W: Write>(w: &mut W, s: &Sample) -> fmt::Result {
    let mut o = Object::begin(w)?;
    o.string("table", s.table.name())?;
    o.int("key", s.key)?;
    o.uint("cpu", u64::from(s.cpu))?;
    o.uint("begin", s.begin)?;
    o.uint("end", s.end)?;
    o.uint("ns", s.ns)?;
    o.end()?;
    w.write_char('\n')
}

/// What the input's readers read past ([`Problems`]) as one line, in the
/// shape every `--json` of trbox gives it ([`json::problems_line`]):
/// `{"problems":{"cut_off":1}}`; nothing when there were none.
pub(crate) fn write_problems_json(w: &mut dyn Write, p: &Problems) -> fmt::Result {
    json::problems_line(w, p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_are_one_json_line_in_the_readers_shape() {
        use crate::problems::ProblemKind;
        let mut w = String::new();
        let mut p = Problems::new();
        write_problems_json(&mut w, &p).unwrap();
        assert_eq!(w, "");
        p.add(ProblemKind::BadFormat, "sched:sched_switch: the format does not parse");
        p.add(ProblemKind::BadFormat, "irq:irq_handler_entry: the format does not parse");
        write_problems_json(&mut w, &p).unwrap();
        assert_eq!(w, "{\"problems\":{\"bad_format\":2}}\n");
    }

    #[test]
    fn a_new_maximum_is_one_json_line_with_its_file_or_its_text() {
        let mut w = String::new();
        write_max_json(&mut w, "wakeup_rt", 2, 17, Some("out/2.txt"), "ignored").unwrap();
        assert_eq!(w, "{\"tracer\":\"wakeup_rt\",\"n\":2,\"unit\":\"us\",\"latency\":17,\"file\":\"out/2.txt\"}\n");
        w.clear();
        write_max_json(&mut w, "irqsoff", 1, 5, None, "# tracer: irqsoff\n\"x\"\n").unwrap();
        assert_eq!(
            w,
            "{\"tracer\":\"irqsoff\",\"n\":1,\"unit\":\"us\",\"latency\":5,\"trace\":\"# tracer: irqsoff\\n\\\"x\\\"\\n\"}\n"
        );
    }

    #[test]
    fn a_sample_is_one_json_line() {
        let s = Sample { table: Table::Syscall, key: -1, cpu: 3, begin: 10, end: 25, ns: 15 };
        let mut w = String::new();
        write_sample(&mut w, &s).unwrap();
        assert_eq!(w, "{\"table\":\"syscall\",\"key\":-1,\"cpu\":3,\"begin\":10,\"end\":25,\"ns\":15}\n");
    }
}
