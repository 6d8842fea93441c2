//! Reading a trace: [`Reader`], the library's way in, opens it (a trace.dat,
//! a stream, a tracefs tree, live or a copy) and pulls its records merged
//! across CPUs (and buffers) in time order, through one merge loop
//! (records.rs). The applets open their input as a `Reader` too, and hand
//! it to a sink: the text and JSON printer (`print()`: on every CPU, by
//! time slices or rendering threads, where the input allows), or a
//! closure that takes the kept records one by one (`collect`, each an
//! [`Entry`] as the pull reader gives them): the counts of `tr-cat
//! --stats` (`summarize`, by time slices where it can), the Perfetto
//! writer (`perfetto`, host builds), the Parquet writer (`parquet`, host
//! builds), tr-lat's, tr-graph's and tr-stack's collectors.
//!
//! Nothing here has a side effect on the process: the caller says what
//! ends a read that follows ([`Stop`]: its signal handlers' flag, if it
//! has any), where the text goes (`Out`), and prints the note of an
//! empty read (`Printed::empty`, `Session::empty`) where it likes.
//!
//! ```no_run
//! use trbox::sys::read::{Entry, ReadOptions, Reader};
//! let mut r = Reader::trace_dat("trace.dat".as_ref(), &ReadOptions::default())?;
//! let mut n = 0u64;
//! while let Some(entry) = r.next_entry() {
//!     if let Entry::Event(_) = entry {
//!         n += 1
//!     }
//! }
//! let _ = (n, r.problems());
//! # Ok::<(), trbox::sys::Error>(())
//! ```

mod input;
mod opts;
mod out;
mod parallel;
#[cfg(feature = "host")]
pub(crate) mod parquet;
#[cfg(feature = "host")]
mod perfetto;
mod problems;
mod reader;
mod records;
#[cfg(feature = "slices")]
mod slices;
mod stream_in;
mod text;

pub(crate) use opts::{Filter, RawOpts, Reading};
pub(crate) use out::{for_terminal, Out};
#[cfg(feature = "host")]
pub(crate) use perfetto::perfetto;
pub use reader::{Entries, Entry, Event, GraphText, ReadOptions, Reader, Session, Text};
#[cfg(feature = "host")]
pub(crate) use stream_in::load_stream_with;
#[cfg(feature = "slices")]
use text::Kept;
pub(crate) use text::{Emitter, Plain, StackVerdicts};

use crate::graph::GraphRenderer;
use crate::printfmt::SymbolLookup;
use crate::render::Renderer;
use crate::summary::TraceSummary;
use crate::sys::error::Error;
use crate::sys::pages::CpuPages;
use crate::sys::stop::Stop;
use crate::sys::trace::Opened;
use problems::add_run_problems;
use records::{Records, Step};
use std::io::Write as _;

/// What a [`print()`] did, besides its text.
#[derive(Debug)]
pub(crate) struct Printed {
    /// Anything (a record, a loss) was written.
    pub(crate) shown: bool,
    /// The read met nothing at all (no record, no loss, no damaged page):
    /// the note that says so (`tr-cat: FILE: no events in the top
    /// buffer`), for the caller to print. Never silently nothing.
    pub(crate) empty: Option<String>,
}

/// Decode the records of `r` and write them (text, or JSON with
/// `o.json`) to `out`, until the streams are empty (drain) or, when
/// following, until the time limit or `stop` says so. The caller flushes
/// `out` ([`Out::finish`]).
pub(crate) fn print(r: Reader, o: &RawOpts, stop: &Stop<'_>, out: &mut Out) -> Result<Printed, Error> {
    let Reader { session, mut records } = r;
    let Session { trace, kernel, graph, irq_info, graph_auto, buffers, labels, unknown, .. } = &session;
    let Opened { events, cmdlines, symbols: syms, printk, endian, cpus: ncpus, .. } = trace;
    let (endian, ncpus, abi, in_ns) = (*endian, *ncpus, trace.abi(), trace.in_ns());
    let graph_ids: Vec<u32> = ["ftrace:funcgraph_entry", "ftrace:funcgraph_exit"]
        .iter()
        .filter_map(|n| events.by_name(n))
        .map(|e| e.id)
        .collect();
    let graph_cmdlines = cmdlines.clone();
    let graph = graph.map(|opts| {
        GraphRenderer::new(events, &graph_cmdlines, abi, Some(syms as &dyn SymbolLookup))
            .with_strings(printk)
            .with_kernel(kernel)
            .with_opts(opts)
            .with_cpu_count(ncpus)
    });
    // Worked out once for every rendering thread.
    let prepared = o.filter.prepare(events);
    let plain = || Plain {
        r: Renderer::new(events, cmdlines.clone(), abi, in_ns)
            .with_strings(printk)
            .with_symbols(syms)
            .with_kernel(kernel)
            .with_irq_info(*irq_info),
        events,
        endian,
        o,
        buffers,
        labels,
        prepared: &prepared,
        stacks: Default::default(),
        unknown,
    };
    let mut em = Emitter {
        p: plain(),
        graph,
        graph_on: !graph_auto,
        // The irq entry range is looked up when the graph layout comes
        // into use: it parses the symbol table (60% of reading an
        // 80,000-line syscall trace that has no graph record).
        irq_syms: Some(syms),
        graph_ids: &graph_ids,
        scratch: Vec::new(),
        text: Out::memory(),
        cpus: ncpus.max(1),
    };
    // A buffer read to its end (a file, a copy, a drain) renders on every
    // CPU; a followed one prints each line as it comes. The graph layout
    // folds records in order, so it stays on this thread.
    let draining = !records.streams.iter().any(|s| s.follow);
    let threads = if draining { threads(o.threads) } else { 1 };
    #[cfg(feature = "slices")]
    syms.read_on(threads);
    // A plain file: every CPU reads a time slice of it; else (a live
    // buffer, compressed data, a stream, a graph layout, a build without
    // `slices`) one thread merges and the others render.
    // The graph layout may come (the input has its events), or is on:
    // then it folds records in order, on this thread.
    let graph_may = em.graph.is_some() && !o.json;
    let graph_now = graph_may && em.graph_on;
    #[cfg(not(feature = "slices"))]
    let sliced = false;
    #[cfg(feature = "slices")]
    let sliced = threads > 1
        && !graph_now
        && slices::run(
            &mut records.streams,
            trace.layout,
            endian,
            graph_may.then_some(slices::GraphIds { events, ids: &graph_ids }),
            threads,
            &plain,
            &drop,
            &|| stop.asked(),
            out,
        );
    if !sliced && threads > 1 && !graph_now {
        let is_graph = |p: &[u8]| events.record_id(p, endian).is_some_and(|id| graph_ids.contains(&id));
        let watch = graph_may.then_some(&is_graph as &dyn Fn(&[u8]) -> bool);
        let id_of = |p: &[u8]| events.record_id(p, endian);
        let Records { streams, merger, .. } = &mut records;
        parallel::run(streams, merger, watch, &id_of, threads, &plain, out);
    }
    // What is left (all of it, on one thread; after a parallel run, from
    // the first graph record on) in merged order.
    records.pace(o.limit, o.reading.pace);
    loop {
        match records.step(stop, Some(out)) {
            Step::Take(i) => {
                if let Some(s) = records.streams.get_mut(i) {
                    em.emit(s, out)
                }
            }
            Step::Comms(c) => em.p.r.set_cmdlines(c),
            Step::End => break,
        }
    }
    records.end()?;
    drop(em);
    let session = session.finish(&records);
    let shown = out.wrote();
    if o.json {
        // What the readers read past, counted as `--stats` shows it: one
        // last line, only when there was something.
        let mut line = String::new();
        let _ = crate::json::problems_line(&mut line, &session.trace.problems);
        let _ = out.write_all(line.as_bytes());
    }
    Ok(Printed { shown, empty: session.empty })
}

/// Never silently nothing: the note, when the streams held no item at all.
fn if_empty(streams: &[CpuPages], note: Option<String>) -> Option<String> {
    let seen = |s: &CpuPages| {
        let c = &s.counts;
        c.records + c.lost + c.lost_unknown + c.damaged + c.bad_time + c.truncated
    };
    note.filter(|_| streams.iter().map(seen).sum::<u64>() == 0)
}

/// Most threads that render a drained buffer unless -j says.
const MAX_THREADS: usize = 8;

/// The threads a read works on: `-j`'s (`asked`), else one per CPU, up to
/// [`MAX_THREADS`].
fn threads(asked: Option<usize>) -> usize {
    asked.unwrap_or_else(|| crate::sys::thread::cpus_available().min(MAX_THREADS))
}

impl Session {
    /// After an applet's read of `records`: the note of an empty one, and
    /// what the readers read past among the session's problems.
    fn finish(mut self, records: &Records) -> Session {
        self.empty = if_empty(&records.streams, self.empty_note.take());
        add_run_problems(&records.streams, &self.unknown, &self.buffers, &mut self.trace.problems);
        self
    }

    /// A dense index for per-CPU state of (buffer, CPU): two buffers have
    /// the same CPUs, and their records interleave in the merge.
    pub(crate) fn slot(&self, buffer: u32, cpu: u32) -> u32 {
        buffer.saturating_mul(self.trace.cpus.max(1)).saturating_add(cpu)
    }
}

/// Like [`print()`], but hand every kept record of `r` to `f` instead of
/// printing it (aggregations print at the end): each an
/// [`Entry::Event`], or an [`Entry::Lost`] (a damaged page is counted in
/// the problems, a record no format describes too). `buffer` indexes
/// [`Session::buffers`]. Returns the session, for the names.
pub(crate) fn collect(
    r: Reader,
    o: &RawOpts,
    stop: &Stop<'_>,
    f: &mut dyn FnMut(&Session, Entry<'_>),
) -> Result<Session, Error> {
    let Reader { mut session, mut records } = r;
    let prepared = o.filter.prepare(&session.trace.events);
    let mut stacks = StackVerdicts::default();
    let before = |ts: u64| o.since.is_some_and(|t0| ts < t0);
    records.pace(o.limit, o.reading.pace);
    loop {
        match records.step(stop, None) {
            Step::Take(i) => match records.entry(i, &session) {
                Some(Entry::Event(ev)) => {
                    let t = &session.trace;
                    let (format, payload) = (ev.format(), ev.payload());
                    let keep =
                        !before(ev.ts()) && o.filter.keep(&prepared, format, payload, t.endian, ev.pid(), &t.cmdlines);
                    if stacks.keep(ev.buffer(), ev.cpu(), format, keep, o.since.is_some()) {
                        f(&session, Entry::Event(ev));
                    }
                }
                Some(e @ Entry::Lost { ts, .. }) if !before(ts) => f(&session, e),
                // A damaged page is told and counted by the stream, a
                // record no format describes by the records.
                _ => {}
            },
            Step::Comms(c) => session.trace.cmdlines = c,
            Step::End => break,
        }
    }
    records.end()?;
    // Tasks born late in the window are named too.
    if let Some(c) = records.comms() {
        session.trace.cmdlines = c;
    }
    Ok(session.finish(&records))
}

/// `--stats`: every record and loss kept, counted, with the session that
/// names them. A plain file is counted by time slices on every CPU (the
/// counts are sums, whatever the order); anything else as [`collect`]
/// reads it. The same counts at every `-j`.
pub(crate) fn summarize(r: Reader, o: &RawOpts, stop: &Stop<'_>) -> Result<(TraceSummary, Session), Error> {
    #[cfg(feature = "slices")]
    let mut r = r;
    #[cfg(feature = "slices")]
    if let Some(st) = count_sliced(&mut r, o, stop) {
        let Reader { session, records } = r;
        return Ok((st, session.finish(&records)));
    }
    let mut st = TraceSummary::default();
    let session = collect(r, o, stop, &mut |_, e| match e {
        Entry::Event(ev) => st.record(ev.buffer(), ev.cpu(), ev.ts(), ev.format().id, ev.pid()),
        Entry::Lost { buffer, cpu, ts, count } => st.lost(buffer, cpu, ts, count),
        // collect() hands over nothing else.
        Entry::Damaged { .. } | Entry::Unknown { .. } => {}
    })?;
    Ok((st, session))
}

/// [`summarize`]'s counts by time slices, each worker counting its own
/// (the records of unknown events met among the reader's); `None` (the
/// reader untouched) when it is not a plain file, or there is one CPU to
/// count on.
#[cfg(feature = "slices")]
fn count_sliced(r: &mut Reader, o: &RawOpts, stop: &Stop<'_>) -> Option<TraceSummary> {
    let threads = slice_threads(o, r)?;
    let Reader { session, records } = r;
    let t = &session.trace;
    let prepared = o.filter.prepare(&t.events);
    let total = std::sync::Mutex::new(TraceSummary::default());
    let counter = || Counter { p: verdicts(session, o, &prepared), summary: TraceSummary::default() };
    let add = |c: Counter<'_>| total.lock().unwrap_or_else(std::sync::PoisonError::into_inner).merge(c.summary);
    // Counts write nothing: this only stands where the text would go.
    let mut out = Out::memory();
    let sliced = slices::run(
        &mut records.streams,
        t.layout,
        t.endian,
        None,
        threads,
        &counter,
        &add,
        &|| stop.asked(),
        &mut out,
    );
    let summary = total.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    sliced.then_some(summary)
}

/// How many workers a read of `r` by time slices would have: `None` when
/// one (`-j 1`, one CPU), or when it follows a live buffer.
#[cfg(feature = "slices")]
fn slice_threads(o: &RawOpts, r: &Reader) -> Option<usize> {
    let threads = threads(o.threads);
    (threads >= 2 && !r.records.streams.iter().any(|s| s.follow)).then_some(threads)
}

/// The text's verdicts on each record of a slice ([`Plain::kept`]:
/// filters, stack records), for a sink that writes no text.
#[cfg(feature = "slices")]
fn verdicts<'a>(session: &'a Session, o: &'a RawOpts, prepared: &'a opts::Prepared) -> Plain<'a> {
    let t = &session.trace;
    Plain {
        r: Renderer::new(&t.events, t.cmdlines.clone(), t.abi(), t.in_ns()),
        events: &t.events,
        endian: t.endian,
        o,
        buffers: &session.buffers,
        labels: &session.labels,
        prepared,
        stacks: Default::default(),
        unknown: &session.unknown,
    }
}

/// A time slice's counts for [`summarize`]: the text's verdicts
/// ([`Plain::kept`]: filters, stack records), counted instead of printed.
#[cfg(feature = "slices")]
struct Counter<'a> {
    p: Plain<'a>,
    summary: TraceSummary,
}

#[cfg(feature = "slices")]
impl slices::SliceSink for Counter<'_> {
    fn read_past(&mut self, buffer: u32, cpu: u32, ts: u64, payload: &[u8]) {
        let _ = self.p.kept(buffer, cpu, ts, payload);
    }

    fn record(&mut self, _: &mut Out, buffer: u32, cpu: u32, ts: u64, payload: &[u8]) {
        match self.p.kept(buffer, cpu, ts, payload) {
            Kept::Event(ev) => self.summary.record(buffer, cpu, ts, ev.id, self.p.r.pid(payload)),
            Kept::Unknown => self.p.unknown.count(self.p.events.record_id(payload, self.p.endian)),
            Kept::Dropped => {}
        }
    }

    fn lost(&mut self, _: &mut Out, buffer: u32, cpu: u32, ts: u64, count: Option<u64>) {
        if !self.p.o.since.is_some_and(|t0| ts < t0) {
            self.summary.lost(buffer, cpu, ts, count);
        }
    }
}
