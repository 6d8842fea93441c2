//! tr-lat's measuring: the records of a live buffer or a copy into
//! `trbox::lat`, and its tables, histograms or JSON; the report of a
//! kernel stop at a threshold.

use super::args::{mode_name, stop_armed, Args, Checked};
use crate::applets::cli::{self, Common, Error};
use crate::applets::command;
use std::cell::Cell;
use std::io::Write as _;
use std::time::{Duration, Instant};
use trbox::lat::{self, Lat, Mode, Table, Unit};
use trbox::sys::read::{self, Entry, Filter, Out, RawOpts, Reader, Reading};
use trbox::sys::Tracefs;

/// `-r`, or a copy of a tracefs tree: what its buffer holds, measured,
/// nothing set up.
pub(super) fn read_buffer(mut t: Tracefs, common: &Common, a: &Args, c: &Checked, cmd: &[String]) -> Result<(), Error> {
    let Checked { mode, tracer, tracer_opt } = *c;
    if !cmd.is_empty() {
        return Err(Error::usage("a copy of a tracefs tree (or -r) is only read: no -- CMD"));
    }
    if let Some(o) = tracer_opt {
        return Err(Error::usage(format!("a copy of a tracefs tree (or -r) is only read: {o} sets up a tracer")));
    }
    // The actions are the end of a run that measures as it records.
    if !a.on_end.is_empty() {
        return Err(Error::usage("a copy of a tracefs tree (or -r) is only read: no --on-end"));
    }
    if let Some(i) = &common.instance {
        t.enter_instance(i)?;
    }
    let held = t.held();
    let o = RawOpts {
        reading: reading(a, mode, tracer),
        json: a.json,
        kernel: common.kernel.clone(),
        ..Default::default()
    };
    let shown = measure(Reader::of_tree(&t, &o)?, a, mode, &o, &|| false, &Cell::new(false), &[])?;
    if !shown {
        let e = none_measured(a, mode, "in the buffer");
        let again = format!("'tr-lat {} -t S' measures as it records", a.mode());
        // (A copy's stats need not be those of the pages copied.)
        cli::note(&match (t.is_live(), command::empty_buffer(&e.msg, held, &again)) {
            (true, Some(empty)) => empty,
            (true, None) => Error::runtime(e.msg).hint(format!(
                "its {} events hold none that tr-lat {} pairs; {again}",
                held.entries,
                a.mode()
            )),
            (false, _) => e,
        });
    }
    command::note_consumed(&t, held);
    Ok(())
}

/// What a run of `mode` reads: its events' systems only; the tracepoints
/// as they come. A `tracer`'s entries once a second (as rtla does) while
/// something shows them as they come (the table on a terminal,
/// `--samples`) or a stop threshold is watched for; else only when the
/// kernel wakes the reader (the buffer `buffer_percent` full: half, unless
/// set otherwise) or at the end. Each read is work on the CPUs measured:
/// on the aarch64 boards at 1 ms, reading once a second cost 0.2-0.4% of
/// the timer IRQs (cross/qemu's ab-lat, 12 rounds).
pub(super) fn reading(a: &Args, mode: Mode, tracer: bool) -> Reading {
    let systems = if a.dump_tasks { &["osnoise", "sched", "workqueue"] } else { mode.systems() };
    let watched = redraws(a) || a.samples || stop_armed(a, mode);
    let pace = tracer.then_some(if watched { Duration::from_secs(1) } else { UNWATCHED });
    Reading { systems: Some(systems), pace, ..Default::default() }
}

/// The longest a tracer's entries wait to be read when nothing shows them
/// as they come: the kernel's wake-up at `buffer_percent` comes sooner
/// (a run with it at 100 would lose what overflows in between).
const UNWATCHED: Duration = Duration::from_secs(10);

/// The table is drawn again as records come, in place: on a terminal.
fn redraws(a: &Args) -> bool {
    !a.json && !a.read && a.aa_only.is_none() && cli::is_tty()
}

/// Records kept per CPU to show what led to a kernel stop.
const TAIL: usize = 24;

/// Feed the records into the accumulators, print as the options say;
/// whether anything was measured (or a stop reported).
pub(super) fn measure(
    reader: Reader,
    a: &Args,
    mode: Mode,
    o: &RawOpts,
    done: &dyn Fn() -> bool,
    stopped: &Cell<bool>,
    only: &[u32],
) -> Result<bool, Error> {
    let unit = Unit { ns: a.ns };
    let scale = if a.ns { 1 } else { 1000 };
    let hist = (a.hist || a.json && (a.bucket.is_some() || a.entries.is_some())).then(|| {
        (a.bucket.unwrap_or(1).saturating_mul(scale).max(1), a.entries.unwrap_or(256).clamp(1, lat::MAX_ENTRIES))
    });
    let mut acc: Option<Result<Lat, lat::Missing>> = None;
    let mut live = Out::stdout();
    let mut line = String::new();
    // With a stop threshold: the last records and latency of each CPU.
    let mut tail: Vec<Tail> = Vec::new();
    let keep_tail = stop_armed(a, mode) && !a.read;
    // --warm-up: records before the first one's time + S are left out.
    let warm = a.warm_up.map(|w| w.0.as_nanos() as u64);
    let mut from = None;
    // On a terminal the table is shown again about once a second (when
    // records come), in place; elsewhere once, at the end.
    let mut refreshed = redraws(a).then(Instant::now);
    // The auto-analysis of a stop, fed every record.
    let mut aa: Option<lat::aa::Analysis> = None;
    let want_aa = a.aa(mode) && !a.read;
    let mut screen = refreshed.is_some().then(super::screen::Screen::new);
    // trbox's own threads are left out by the measurement itself (no
    // latency of theirs), not by the output filter: a switch from one of
    // them to a woken task is that task's end of latency.
    let own = o.filter.not_self.then(trbox::sys::thread::own_tids);
    let o = &RawOpts { filter: Filter { not_self: false, ..o.filter.clone() }, ..o.clone() };
    let session = read::collect(reader, o, &command::stop(done)?, &mut |m, e| {
        // A record (CPU, time, bytes), or a loss (None).
        let it = match e {
            Entry::Event(ev) => Some((ev.cpu(), ev.ts(), ev.payload())),
            Entry::Lost { .. } => None,
            // collect() hands over nothing else.
            Entry::Damaged { .. } | Entry::Unknown { .. } => return,
        };
        if let (true, Some((cpu, ts, payload))) = (keep_tail, it) {
            let i = cpu as usize;
            if tail.len() <= i {
                tail.resize_with(i + 1, Default::default);
            }
            // The oldest record's buffer is reused for the newest.
            let q = &mut tail[i].0;
            let mut rec = if q.len() == TAIL { q.remove(0).1 } else { Vec::new() };
            rec.clear();
            rec.extend_from_slice(payload);
            q.push((ts, rec));
        }
        if let (true, Some((cpu, ts, payload))) = (want_aa, it) {
            aa.get_or_insert_with(|| lat::aa::Analysis::new(&m.trace.events, m.trace.endian)).record(cpu, ts, payload);
        }
        let Ok(l) = acc.get_or_insert_with(|| {
            let mut l = Lat::new(mode, &m.trace.events, m.trace.endian, a.rt, hist)?;
            if !only.is_empty() {
                l.only(&only.iter().map(|&p| i64::from(p)).collect::<Vec<_>>());
            }
            if let Some(own) = &own {
                l.leave_out(&own.iter().map(|&p| i64::from(p)).collect::<Vec<_>>());
            }
            Ok(l)
        }) else {
            return;
        };
        match it {
            Some((_, ts, _)) if warm.is_some_and(|w| ts < *from.get_or_insert(ts + w)) => {}
            Some((cpu, ts, payload)) => {
                if let (Some(at), Some(screen)) =
                    (refreshed.as_mut().filter(|at| at.elapsed() >= REFRESH), screen.as_mut())
                {
                    *at = Instant::now();
                    // The screen's own escapes go out as they are; the
                    // table's comms are shown escaped.
                    let mut o = Out::stdout_raw();
                    let table = read::for_terminal(&render(a, l, &m.trace.cmdlines, false));
                    let _ = o.write_all(screen.redraw(&table).as_bytes());
                    let _ = o.finish();
                }
                if let Some(s) = l.record(cpu, ts, payload) {
                    if let Some(t) = tail.get_mut(cpu as usize) {
                        t.1 = Some(s);
                    }
                    if a.samples {
                        line.clear();
                        let _ = lat::write_sample(&mut line, &s);
                        let _ = live.write_all(line.as_bytes());
                    }
                }
            }
            None => l.lose(),
        }
    })?;
    live.finish()?;
    let l = match acc {
        None => return Ok(false),
        Some(Err(e)) => {
            return Err(Error::runtime(format!("cannot measure {}: {e}", mode_name(mode)))
                .hint("is this a trace of the right events?"))
        }
        Some(Ok(l)) => l,
    };
    let shown = l.measured() > 0;
    if !shown && !stopped.get() {
        return Ok(false);
    }
    // After the redraws, the clearing escape of render's and its table
    // escaped by render.
    let mut out = if refreshed.is_some() { Out::stdout_raw() } else { Out::stdout() };
    let mut text = match a.aa_only {
        Some(_) => String::new(),
        None => render(a, &l, &session.trace.cmdlines, refreshed.is_some()),
    };
    if a.json {
        let _ = lat::write_problems_json(&mut text, &session.trace.problems);
    }
    let _ = out.write_all(text.as_bytes());
    out.finish()?;
    if mode == Mode::Irq {
        // Two tables: one that measured nothing is left out of the output,
        // which must not read as if that kind was never asked for.
        for (t, what) in [
            (Table::HardIrq, "hard IRQ handler (irq_handler_entry -> exit)"),
            (Table::SoftIrq, "softirq (softirq_entry -> exit)"),
        ] {
            if !l.rows().any(|(u, _, _)| u == t) {
                cli::note(&Error::runtime(format!("no {what} ended in the window: its table is left out")).hint(
                    "a longer window (-t) may see one; a VM's timer ticks may not pass through irq_handler_entry",
                ));
            }
        }
    }
    if !session.trace.in_ns() {
        cli::note(
            &Error::runtime("the trace clock does not count nanoseconds: the values are in its own ticks")
                .hint("set trace_clock to local, global or mono"),
        );
    }
    if l.lost > 0 {
        log::warn!("{} losses on the ring buffer: what was open then is not counted", l.lost);
    }
    let read = l.timer_irqs();
    if l.taken > read {
        log::warn!(
            "{} of the {} timer IRQs the kernel counted (seqnum) are not in the tables: lost on the ring buffer, or while tracing was off",
            l.taken - read,
            l.taken
        );
    }
    log::info!("{} begins or ends without their pair (the window cut them, or a loss): not counted", l.unpaired);
    if stopped.get() {
        stop_report(&session, &tail, a, unit, aa.as_ref())?;
    }
    Ok(true)
}

/// How often a terminal's table is drawn again.
const REFRESH: Duration = Duration::from_secs(1);

/// The tables (or histograms, or JSON lines) of `l`; with `tty`, after the
/// escape that clears the terminal and homes the cursor (the last, whole
/// table after the redraws that fit the screen), its control characters
/// escaped.
fn render(a: &Args, l: &Lat, cmdlines: &trbox::render::Cmdlines, tty: bool) -> String {
    let unit = Unit { ns: a.ns };
    let mut text = String::new();
    let _ = if a.json {
        lat::write_json(&mut text, l, unit, cmdlines)
    } else if a.hist {
        lat::write_hists(&mut text, l, unit, cmdlines)
    } else {
        lat::write_tables(&mut text, l, unit, cmdlines, (!a.all).then_some(lat::TOP))
    };
    if tty {
        // Written raw (Out::stdout_raw): the table's comms escaped here.
        text = format!("\x1b[H\x1b[2J{}", read::for_terminal(&text));
    }
    text
}

/// The kernel stopped tracing at a threshold: which CPU (the one whose
/// last latency is over its threshold, the latest if several: the kernel's
/// own "stop tracing hit on cpu N" goes through the trace_printk buffers,
/// which a kernel without trace_printk users, like Debian's, never
/// allocates), how long, and its records up to the stop, stacks included.
fn stop_report(
    session: &read::Session,
    tail: &[Tail],
    a: &Args,
    unit: Unit,
    aa: Option<&lat::aa::Analysis>,
) -> Result<(), Error> {
    let over = |s: &lat::Sample| {
        let us = if matches!(s.table, Table::TimerIrq | Table::Single) { a.irq_us } else { a.total_us };
        us.is_some_and(|us| s.ns >= us.saturating_mul(1000))
    };
    let found = tail
        .iter()
        .enumerate()
        .filter_map(|(cpu, (q, last))| last.filter(over).map(|s| (cpu, q, s)))
        .max_by_key(|w| w.2.end);
    let msg = "the kernel stopped tracing at a threshold";
    let Some((cpu, q, s)) = found else {
        cli::note(&Error::runtime(msg).hint("no latency over it was among the records read (a loss?)"));
        return Ok(());
    };
    let mut out = Out::stdout();
    // The analysis (rtla's), then only the stack among the records.
    let mut text = String::from("\n");
    let ns = |us: Option<u64>| us.unwrap_or(0).saturating_mul(1000);
    let tasks = a.dump_tasks.then_some(&session.trace.symbols as &dyn trbox::printfmt::SymbolLookup);
    let c = &session.trace.cmdlines;
    let analysed =
        aa.is_some_and(|aa| aa.write(&mut text, ns(a.irq_us), ns(a.total_us), unit, a.json, tasks, c).unwrap_or(false));
    let stack = session.trace.events.by_name("ftrace:kernel_stack").map(|e| e.id);
    if analysed {
        let _ = out.write_all(if a.json { &text[1..] } else { &text }.as_bytes());
    } else {
        let _ = write!(out, "\n# CPU {cpu}: its last records, up to the stop\n");
    }
    let mut r = trbox::render::Renderer::new(
        &session.trace.events,
        session.trace.cmdlines.clone(),
        session.trace.abi(),
        session.trace.in_ns(),
    )
    .with_symbols(&session.trace.symbols);
    for (ts, p) in q {
        let id = p.get(..2).map(|b| u32::from(session.trace.endian.uint(b, 0, 2).unwrap_or(0) as u16));
        if !analysed || !a.json && id.is_some() && id == stack {
            let _ = r.record(&mut out, cpu as u32, *ts, p);
        }
    }
    out.finish()?;
    let mut v = String::new();
    let _ = unit.write(&mut v, s.ns);
    cli::note(&Error::runtime(format!("{msg}: CPU {cpu}, {} {v} {}", s.table.name().replace('_', " "), unit.name())));
    Ok(())
}

/// The last records of one CPU and its last latency.
type Tail = (Vec<(u64, Vec<u8>)>, Option<lat::Sample>);

/// Nothing measured (`when`: how long the window was open).
pub(super) fn none_measured(a: &Args, mode: Mode, when: &str) -> Error {
    let (what, hint) = match mode {
        Mode::Wakeup if a.rt => {
            ("no wakeup of a real-time task was measured", "is an RT task running? (chrt -f 50 CMD)")
        }
        Mode::Wakeup => ("no wakeup was measured", "did the traced task sleep and wake up?"),
        Mode::Irq => ("no IRQ handler or softirq was measured", "try a longer -t"),
        Mode::Syscall => ("no system call was measured", "did the traced task make system calls?"),
        Mode::Timerlat if a.user_load => {
            ("no timerlat sample was recorded", "-U: a task pinned to CPU N reads osnoise/per_cpu/cpuN/timerlat_fd")
        }
        Mode::Timerlat => {
            ("no timerlat sample was recorded", "is the timerlat tracer allowed to run on these CPUs (--cpus)?")
        }
        Mode::Osnoise => ("no osnoise sample was recorded", "a period lasts osnoise/period_us: try a longer -t"),
        Mode::Hwlat => ("no hwlat sample was recorded", "hwlat records only samples over tracing_thresh (--irq-us US)"),
    };
    let whom = match a.pid.as_slice() {
        [] => String::new(),
        p => format!(" (pid {})", p.iter().map(u32::to_string).collect::<Vec<_>>().join(",")),
    };
    Error::runtime(format!("{what} {when}{whom}")).hint(hint)
}

#[cfg(test)]
mod tests {
    use super::super::args::{check, parse, Run};
    use super::*;

    /// How often a run given `words` reads its buffer.
    fn pace(words: &[&str]) -> Option<Duration> {
        let own: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        let (_, a) = parse(&own).unwrap();
        let Ok(Run::Measure(c)) = check(&a, &[]) else { panic!("{words:?}: not a measuring run") };
        reading(&a, c.mode, c.tracer).pace
    }

    #[test]
    fn a_tracer_is_read_once_a_second_only_while_watched() {
        assert_eq!(pace(&["timerlat", "--json", "-t", "1"]), Some(UNWATCHED));
        assert_eq!(pace(&["osnoise", "--json", "-t", "1"]), Some(UNWATCHED));
        let second = Some(Duration::from_secs(1));
        assert_eq!(pace(&["timerlat", "--json", "--samples", "-t", "1"]), second);
        assert_eq!(pace(&["timerlat", "--json", "--irq-us", "100", "-t", "1"]), second);
        assert_eq!(pace(&["timerlat", "--json", "--aa-only", "100", "-t", "1"]), second);
        // Tracepoints are read as they come.
        assert_eq!(pace(&["wakeup", "--json", "-t", "1"]), None);
    }
}
