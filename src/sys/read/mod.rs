//! The read engine: records from a tracefs tree (live or a copy) or a
//! trace.dat (`Input`), merged across CPUs (and buffers) in time order,
//! and handed to a sink (the crate's `Sink` trait), the way ripgrep's searcher drives its
//! printers. The sinks: the text and JSON printer (`print()`), and any
//! closure that takes the kept records one by one (`collect`, each an
//! [`Entry`] as the pull reader gives them): the
//! counts of `tr-cat --stats` (`TraceSummary`), the Perfetto writer
//! (`perfetto`, host builds), the Parquet writer (`parquet`, host
//! builds, on a [`Reader`]),
//! tr-lat's, tr-graph's and tr-stack's collectors, a host tool's own.
//! The engine and its sinks are the crate's own (the applets'); a host
//! tool pulls records through [`Reader`], the library's way in (no sink).
//!
//! Nothing here has a side effect on the process: the caller says what
//! ends a read that follows ([`Stop`]: its signal handlers' flag, if it
//! has any), where the text goes (`Out`), and prints the note of an
//! empty read (`Printed::empty`, `Meta::empty`) where it likes.
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
#[cfg(feature = "slices")]
mod slices;
mod stream_in;
mod text;

pub(crate) use input::Input;
pub(crate) use opts::{Filter, Prepared, RawOpts, Reading};
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
use crate::merge::{self, Merger};
use crate::printfmt::SymbolLookup;
use crate::render::{Cmdlines, CommonFields, Renderer};
use crate::summary::TraceSummary;
use crate::sys::error::Error;
use crate::sys::pages::{wait_for_data, CpuItem, CpuPages};
use crate::sys::stop::Stop;
use crate::sys::trace::Opened;
use crate::sys::Tracefs;
use problems::{add_run_problems, UnknownEvents};
use std::io::Write as _;
use std::time::{Duration, Instant};

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

/// Decode the records and write them (text, or JSON with `o.json`) to
/// `out`, until the streams are empty (drain) or, when following, until
/// the time limit or `stop` says so. The caller flushes `out`
/// ([`Out::finish`]).
pub(crate) fn print(input: Input<'_>, o: &RawOpts, stop: &Stop<'_>, out: &mut Out) -> Result<Printed, Error> {
    let Input { trace, kernel, mut streams, tree, graph, irq_info, graph_auto, buffers, labels, empty_note, .. } =
        input;
    let Opened { events, cmdlines, symbols: syms, printk, endian, cpus: ncpus, .. } = &trace;
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
            .with_kernel(&kernel)
            .with_opts(opts)
            .with_cpu_count(ncpus)
    });
    // Worked out once for every rendering thread.
    let prepared = o.filter.prepare(events);
    let unknown = UnknownEvents::default();
    let plain = || Plain {
        r: Renderer::new(events, cmdlines.clone(), abi, in_ns)
            .with_strings(printk)
            .with_symbols(syms)
            .with_kernel(&kernel)
            .with_irq_info(irq_info),
        events,
        endian,
        o,
        buffers: &buffers,
        labels: &labels,
        prepared: &prepared,
        stacks: Default::default(),
        unknown: &unknown,
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
    let mut merger = Merger::new(streams.len());
    // A buffer read to its end (a file, a copy, a drain) renders on every
    // CPU; a followed one prints each line as it comes. The graph layout
    // folds records in order, so it stays on this thread.
    let draining = !streams.iter().any(|s| s.follow);
    let threads =
        if draining { o.threads.unwrap_or_else(|| crate::sys::thread::cpus_available().min(MAX_THREADS)) } else { 1 };
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
            &mut streams,
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
        parallel::run(&mut streams, &mut merger, watch, &id_of, threads, &plain, out);
    }
    drive(&mut streams, &mut merger, tree, o, stop, out, &mut em)?;
    let empty = if_empty(&streams, empty_note);
    let shown = out.wrote();
    if o.json {
        // What the readers read past, counted as `--stats` shows it: one
        // last line, only when there was something.
        let mut problems = trace.problems.clone();
        add_run_problems(&streams, &unknown, &buffers, &mut problems);
        let mut line = String::new();
        let _ = crate::json::problems_line(&mut line, &problems);
        let _ = out.write_all(line.as_bytes());
    }
    Ok(Printed { shown, empty })
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

/// What a collector gets besides the records, and back at the end to print
/// names: the session itself and the buffers' names.
pub(crate) struct Meta {
    /// The session: event formats, comms, symbols, byte order, clock.
    pub(crate) trace: Opened,
    /// The names of the buffers the items come from, when several.
    pub(crate) buffers: Vec<String>,
    /// The read met nothing at all: the note that says so, for the caller
    /// to print ([`Printed::empty`]).
    pub(crate) empty: Option<String>,
    /// Where the common fields are (the same in every format of a kernel):
    /// located once, not for each record.
    common: Option<CommonFields>,
    /// The traced system's `uname` text (a copy's file, a trace.dat's
    /// UNAME option), for writers of other formats (host builds).
    #[cfg(feature = "host")]
    pub(crate) uname: Option<String>,
    /// The `saved_cmdlines` text as read, for writers of other formats
    /// (host builds).
    #[cfg(feature = "host")]
    pub(crate) saved_cmdlines: String,
}

impl Meta {
    /// The session of `input`, and what reading its records takes: the
    /// streams, the live tree (comms while following), the note of an
    /// empty read.
    fn of(input: Input<'_>) -> (Meta, Vec<CpuPages>, Option<&Tracefs>, Option<String>) {
        let Input {
            trace,
            streams,
            tree,
            buffers,
            empty_note,
            #[cfg(feature = "host")]
            uname,
            #[cfg(feature = "host")]
            saved_cmdlines,
            ..
        } = input;
        let meta = Meta {
            common: CommonFields::of_table(&trace.events),
            trace,
            buffers,
            empty: None,
            #[cfg(feature = "host")]
            uname,
            #[cfg(feature = "host")]
            saved_cmdlines,
        };
        (meta, streams, tree, empty_note)
    }

    /// After the read: the note of an empty one, and what the readers read
    /// past among the session's problems.
    fn finish(mut self, streams: &[CpuPages], empty_note: Option<String>, unknown: &UnknownEvents) -> Meta {
        self.empty = if_empty(streams, empty_note);
        add_run_problems(streams, unknown, &self.buffers, &mut self.trace.problems);
        self
    }

    /// A dense index for per-CPU state of (buffer, CPU): two buffers have
    /// the same CPUs, and their records interleave in the merge.
    pub(crate) fn slot(&self, buffer: u32, cpu: u32) -> u32 {
        buffer.saturating_mul(self.trace.cpus.max(1)).saturating_add(cpu)
    }
}

/// Like [`print()`], but hand every kept record to `f` instead of printing it
/// (aggregations print at the end): each an [`Entry::Event`], or an
/// [`Entry::Lost`] (a damaged page is counted in the problems, a record no
/// format describes too). `buffer` indexes [`Meta::buffers`]. Returns the
/// metadata for the names.
pub(crate) fn collect(
    input: Input<'_>,
    o: &RawOpts,
    stop: &Stop<'_>,
    f: &mut dyn FnMut(&Meta, Entry<'_>),
) -> Result<Meta, Error> {
    let (meta, mut streams, tree, empty_note) = Meta::of(input);
    let prepared = o.filter.prepare(&meta.trace.events);
    let mut c = Collector { meta, f, o, prepared, stacks: Default::default(), unknown: UnknownEvents::default() };
    // The collector writes nothing: this only stands where a printer's
    // output would.
    let mut out = Out::memory();
    let mut merger = Merger::new(streams.len());
    drive(&mut streams, &mut merger, tree, o, stop, &mut out, &mut c)?;
    let Collector { meta, unknown, .. } = c;
    Ok(meta.finish(&streams, empty_note, &unknown))
}

/// `--stats`: every record and loss kept, counted, with the session that
/// names them. A plain file is counted by time slices on every CPU (the
/// counts are sums, whatever the order); anything else as [`collect`]
/// reads it. The same counts at every `-j`.
pub(crate) fn summarize(input: Input<'_>, o: &RawOpts, stop: &Stop<'_>) -> Result<(TraceSummary, Meta), Error> {
    #[cfg(feature = "slices")]
    let mut input = input;
    #[cfg(feature = "slices")]
    if let Some((st, unknown)) = count_sliced(&mut input, o, stop) {
        let (meta, streams, _, empty_note) = Meta::of(input);
        return Ok((st, meta.finish(&streams, empty_note, &unknown)));
    }
    let mut st = TraceSummary::default();
    let meta = collect(input, o, stop, &mut |_, e| match e {
        Entry::Event(ev) => st.record(ev.buffer(), ev.cpu(), ev.ts(), ev.format().id, ev.pid()),
        Entry::Lost { buffer, cpu, ts, count } => st.lost(buffer, cpu, ts, count),
        // collect() hands over nothing else.
        Entry::Damaged { .. } | Entry::Unknown { .. } => {}
    })?;
    Ok((st, meta))
}

/// [`summarize`]'s counts by time slices, each worker counting its own,
/// and the records of unknown events met; `None` (the input untouched)
/// when it is not a plain file, or there is one CPU to count on.
#[cfg(feature = "slices")]
fn count_sliced(input: &mut Input<'_>, o: &RawOpts, stop: &Stop<'_>) -> Option<(TraceSummary, UnknownEvents)> {
    let threads = o.threads.unwrap_or_else(|| crate::sys::thread::cpus_available().min(MAX_THREADS));
    if threads < 2 || input.streams.iter().any(|s| s.follow) {
        return None;
    }
    let t = &input.trace;
    let (endian, layout) = (t.endian, t.layout);
    let prepared = o.filter.prepare(&t.events);
    let unknown = UnknownEvents::default();
    let total = std::sync::Mutex::new(TraceSummary::default());
    let counter = || Counter {
        p: Plain {
            r: Renderer::new(&t.events, t.cmdlines.clone(), t.abi(), t.in_ns()),
            events: &t.events,
            endian,
            o,
            buffers: &input.buffers,
            labels: &input.labels,
            prepared: &prepared,
            stacks: Default::default(),
            unknown: &unknown,
        },
        summary: TraceSummary::default(),
    };
    let add = |c: Counter<'_>| total.lock().unwrap_or_else(std::sync::PoisonError::into_inner).merge(c.summary);
    // Counts write nothing: this only stands where the text would go.
    let mut out = Out::memory();
    let sliced =
        slices::run(&mut input.streams, layout, endian, None, threads, &counter, &add, &|| stop.asked(), &mut out);
    let summary = total.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    sliced.then_some((summary, unknown))
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

/// poll() readiness on trace_pipe_raw follows `buffer_percent`: a trickle
/// below it is still looked for this often.
const WAIT_TICK: Duration = Duration::from_millis(250);

/// What the read loop feeds, one item at a time in merged order: the text
/// and JSON printer ([`Emitter`]), and the collector behind [`collect`].
pub(crate) trait Sink {
    /// Take the next item of `s` (the stream whose item comes next in
    /// time), and write what it makes, if anything, to `out`. A sink may
    /// peek at the stream's next record (the graph layout folds an entry
    /// and its exit into one line).
    fn emit(&mut self, s: &mut CpuPages, out: &mut Out);
    /// New tasks appeared while following: their comms.
    fn cmdlines(&mut self, c: Cmdlines);
}

/// The merge loop: drain (or follow until a stop), in timestamp order.
fn drive(
    streams: &mut [CpuPages],
    merger: &mut Merger,
    tree: Option<&Tracefs>,
    o: &RawOpts,
    stop: &Stop<'_>,
    out: &mut Out,
    c: &mut dyn Sink,
) -> Result<(), Error> {
    let start = Instant::now();
    // The trace clock at the stop: the last drain ends there. Tracing is
    // still on then, and reading the buffer can itself make events (a
    // syscall event of read(), a sched_switch): without a bound, draining
    // an event its own reads cause never ends.
    let mut until = None;
    let stopping = || stop.asked() || o.limit.is_some_and(|l| start.elapsed() >= l);
    // Following live, the comms are read again now and then: a busy buffer
    // may never leave the loop idle (where they are read too), and tasks
    // born in the window (a command's exec) are named after the first look.
    // The session was opened with them just now: the first look waits.
    let (mut turns, mut comms_at) = (0u32, Instant::now());
    let comms = |c: &mut dyn Sink| {
        if let Some(Ok(Some(text))) = tree.map(|t| t.read_top_opt("saved_cmdlines")) {
            c.cmdlines(Cmdlines::parse(&text));
        }
    };
    loop {
        turns = turns.wrapping_add(1);
        if turns % 1024 == 1 && comms_at.elapsed() >= Duration::from_millis(100) {
            comms(c);
            comms_at = Instant::now();
        }
        let stopped = stopping();
        if out.broken() {
            break;
        }
        if stopped && streams.iter().any(|s| s.follow) {
            // Ctrl-C / time limit / the command ended: print what is
            // buffered, then end.
            streams.iter_mut().for_each(|s| s.follow = false);
            until = tree.and_then(Tracefs::now);
        }
        match merger.next(streams) {
            merge::Pick::Cpu(i) => {
                let s = &mut streams[i];
                if until.is_some_and(|u| s.peek_ts().ok().flatten().is_some_and(|ts| ts > u)) {
                    // Merged order: everything left is newer still.
                    break;
                }
                c.emit(s, out)
            }
            merge::Pick::End => break,
            merge::Pick::Pending(_) => {
                let _ = out.flush();
                let left = o.limit.map_or(Duration::from_secs(3600), |l| l.saturating_sub(start.elapsed()));
                wait_for_data(streams, stop.wake(), left.min(o.reading.pace.unwrap_or(WAIT_TICK)));
                // New tasks appeared meanwhile: their comms too.
                comms(c);
                // An idle CPU must not hold the others back for ever. What
                // is ready can grow as fast as it is read (events of our own
                // reads): a stop must still get through.
                while !stopping() && !out.broken() {
                    let merge::Pick::Cpu(i) = merger.next_ready(streams) else { break };
                    c.emit(&mut streams[i], out);
                }
            }
        }
    }
    // Tasks born late in the window (a command's exec just before it
    // ended) are named too.
    comms(c);
    for s in streams.iter() {
        let c = &s.counts;
        log::debug!(
            "cpu{}: {} pages, {} records, {} damaged, {} with bad times, {} cut off, {} lost (+{} pages with an \
             unknown loss)",
            s.cpu,
            c.pages,
            c.records,
            c.damaged,
            c.bad_time,
            c.truncated,
            c.lost,
            c.lost_unknown
        );
    }
    if let Some(e) = streams.iter_mut().find_map(|s| s.error.take()) {
        return Err(e);
    }
    Ok(())
}

struct Collector<'f> {
    meta: Meta,
    f: &'f mut dyn FnMut(&Meta, Entry<'_>),
    o: &'f RawOpts,
    prepared: Prepared,
    stacks: StackVerdicts,
    unknown: UnknownEvents,
}

impl Sink for Collector<'_> {
    fn emit(&mut self, s: &mut CpuPages, _: &mut Out) {
        let (buffer, cpu, m, o) = (s.buffer, s.cpu, &self.meta, self.o);
        match s.take() {
            Some(CpuItem::Record(rec)) => {
                let t = &m.trace;
                let Some(format) = t.events.event_of(rec.payload, t.endian) else {
                    return self.unknown.count(t.events.record_id(rec.payload, t.endian));
                };
                let ev = Event::of(buffer, cpu, rec, format, t, m.common);
                let keep = !o.since.is_some_and(|t0| rec.ts < t0)
                    && o.filter.keep(&self.prepared, format, rec.payload, t.endian, ev.pid(), &t.cmdlines);
                if !self.stacks.keep(buffer, cpu, format, keep) {
                    return;
                }
                (self.f)(m, Entry::Event(ev));
            }
            Some(CpuItem::Lost { ts, count }) if !o.since.is_some_and(|t0| ts < t0) => {
                (self.f)(m, Entry::Lost { buffer, cpu, ts, count })
            }
            // A damaged page is told and counted by the stream.
            _ => {}
        }
    }

    fn cmdlines(&mut self, c: Cmdlines) {
        self.meta.trace.cmdlines = c;
    }
}
