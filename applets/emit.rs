//! The text of records, the way the applets print them: the output
//! filters and options ([`RawOpts`]), every layout but the graph one
//! ([`Plain`], all a worker thread of pool.rs needs), and the graph layout
//! on top of it ([`Emitter`], one thread: it folds records in order).

use crate::out::Out;
use std::io::Write as _;
use std::time::Duration;
use trbox::abi::Endian;
use trbox::format::{EventFormat, EventTable, FieldLoc};
use trbox::graph::{GraphRenderer, IrqText, Outcome};
use trbox::names::glob_match;
use trbox::render::{write_lost, Cmdlines, Renderer};
use trbox::sys::kallsyms::LazyKallsyms;
use trbox::sys::stream::{CpuPages, Next};

/// What to keep.
#[derive(Clone)]
pub struct Filter {
    pub pid: Option<i32>,
    pub comm: Option<String>,
    pub events: Vec<String>,
    /// Leave out trbox's own threads (a live run): the records they wrote
    /// and the scheduler events about them. The kernel's notrace pid list
    /// keeps most out, but it records a switch when either side is
    /// traced, and a waking when the waker is.
    pub not_self: bool,
}

/// What a [`Filter`] works out once per run, before the first record
/// ([`Filter::prepare`]): the globs of `-e` run once per event, not once
/// per record (a `format!` and two matches each: half of `tr-cat -e`).
#[derive(Default)]
pub struct Prepared {
    /// The events `-e` takes, by id (`common_type`, a short on every
    /// kernel); `None` without `-e`.
    ids: Option<Vec<bool>>,
    /// trbox's threads, with `not_self`.
    own: Vec<i32>,
    /// The field naming the task a scheduler event is about besides its
    /// writer (`next_pid`, a waking's `pid`), by event id.
    about: Vec<(u32, FieldLoc)>,
}

impl Filter {
    /// Work out what the filter needs of `table` (and, with `not_self`,
    /// which threads are trbox's: call it once its readers run).
    pub fn prepare(&self, table: &EventTable) -> Prepared {
        let mut p = Prepared::default();
        if !self.events.is_empty() {
            let mut ids = vec![false; 1 << 16];
            for ev in table.iter() {
                let full = format!("{}:{}", ev.system, ev.name);
                if let Some(k) = ids.get_mut(ev.id as usize) {
                    *k = self.events.iter().any(|g| glob_match(g, &full) || glob_match(g, &ev.name));
                }
            }
            p.ids = Some(ids);
        }
        if self.not_self {
            p.own = trbox::sys::thread::own_tids();
            for (name, field) in [
                ("sched_switch", "next_pid"),
                ("sched_waking", "pid"),
                ("sched_wakeup", "pid"),
                ("sched_wakeup_new", "pid"),
            ] {
                if let Some(f) = table.by_name(&format!("sched:{name}")).and_then(|ev| Some((ev.id, ev.field(field)?)))
                {
                    p.about.push((f.0, f.1.loc()));
                }
            }
        }
        p
    }

    /// Whether a record passes; `p`: what [`Filter::prepare`] gave.
    #[allow(clippy::too_many_arguments)]
    pub fn keep(
        &self,
        p: &Prepared,
        ev: &EventFormat,
        payload: &[u8],
        endian: Endian,
        pid: i32,
        cmdlines: &Cmdlines,
    ) -> bool {
        self.pid.map_or(true, |want| want == pid)
            && self.comm.as_deref().map_or(true, |c| glob_match(c, cmdlines.comm(pid)))
            && p.ids.as_ref().map_or(true, |ids| ids.get(ev.id as usize) == Some(&true))
            && (p.own.is_empty() || !p.mine(ev, payload, endian, pid))
    }
}

impl Prepared {
    /// Did trbox write the record, or is it a scheduler event about one of
    /// its threads?
    fn mine(&self, ev: &EventFormat, payload: &[u8], endian: Endian, pid: i32) -> bool {
        self.own.contains(&pid)
            || self
                .about
                .iter()
                .find(|a| a.0 == ev.id)
                .and_then(|a| a.1.int(payload, endian))
                .is_some_and(|task| self.own.iter().any(|&t| i64::from(t) == task))
    }
}

/// Options of a raw read: what to keep, how to follow and print.
#[derive(Clone)]
pub struct RawOpts {
    pub only: Option<Vec<u32>>,
    pub filter: Filter,
    pub follow: bool,
    pub json: bool,
    pub limit: Option<Duration>,
    /// Skip records older than this trace-clock time (what was in the
    /// buffer before this run started).
    pub since: Option<u64>,
    /// Threads that render a drained buffer; `None`: one per CPU this
    /// process may run on.
    pub threads: Option<usize>,
    pub reading: Reading,
}

/// What a live reader of a few events of its own needs of the tracefs.
#[derive(Clone, Copy, Default)]
pub struct Reading {
    /// Only these event systems' formats (and ftrace's) are read: see
    /// `sys::trace::open_tree_with`. A record of another is an unknown id.
    pub systems: Option<&'static [&'static str]>,
    /// Follow at this pace: the buffer read once per `pace`, by the
    /// decoder, with no read-ahead threads. For a slow writer (a latency
    /// tracer's entries, ~80 KB/s per CPU at a 1 ms period) whose reader
    /// must disturb the measured CPUs least: each read of a page the
    /// kernel is still writing copies its records with interrupts off.
    pub pace: Option<Duration>,
}

impl RawOpts {
    /// Every CPU, no output filter: what the tracing applets stream.
    pub fn all(follow: bool, json: bool, limit: Option<Duration>, since: Option<u64>) -> Self {
        RawOpts {
            only: None,
            filter: Filter { pid: None, comm: None, events: Vec::new(), not_self: false },
            follow,
            json,
            limit,
            since,
            threads: None,
            reading: Reading::default(),
        }
    }
}

/// The text of records and losses in every layout but the graph one: all
/// a worker thread needs (pool.rs).
pub struct Plain<'a> {
    pub r: Renderer<'a>,
    pub events: &'a EventTable,
    pub endian: Endian,
    pub o: &'a RawOpts,
    /// Buffer names and line labels, when there are several (Input).
    pub buffers: &'a [String],
    pub labels: &'a [String],
    /// What the filter worked out: [`Filter::prepare`].
    pub prepared: &'a Prepared,
    pub stacks: StackVerdicts,
}

/// A stack record (`kernel_stack`, `user_stack`: a stacktrace trigger's or
/// option's) belongs to the record just before it on its CPU, and shares
/// its verdict: the stack of a dropped event is dropped too (the kernel
/// writes it in the event's context, so `--pid` and `--comm` agree
/// anyway; a switch of trbox's own is dropped by what it names).
#[derive(Default)]
pub struct StackVerdicts {
    /// The (buffer, CPU)s whose last record was dropped.
    after_dropped: Vec<(u32, u32)>,
}

impl StackVerdicts {
    /// Whether the record `ev` of (buffer, CPU) is kept, given the
    /// filters' verdict `keep` on it.
    pub fn keep(&mut self, buffer: u32, cpu: u32, ev: &EventFormat, keep: bool) -> bool {
        let at = self.after_dropped.iter().position(|&k| k == (buffer, cpu));
        let follows_dropped = at.map(|i| self.after_dropped.swap_remove(i)).is_some();
        let stack = || ev.system == "ftrace" && matches!(ev.name.as_str(), "kernel_stack" | "user_stack");
        let keep = keep && !(follows_dropped && stack());
        if !keep {
            self.after_dropped.push((buffer, cpu));
        }
        keep
    }
}

/// What the filters make of a record.
pub enum Kept<'a> {
    /// An event id the format files do not know: printed as `type: N`.
    Unknown,
    Dropped,
    Event(&'a EventFormat),
}

impl<'a> Plain<'a> {
    pub fn kept(&mut self, buffer: u32, cpu: u32, ts: u64, payload: &[u8]) -> Kept<'a> {
        let Some(ev) = self.events.event_of(payload, self.endian) else { return Kept::Unknown };
        let pid = self.r.pid(payload);
        let keep = !self.o.since.is_some_and(|t0| ts < t0)
            && self.o.filter.keep(self.prepared, ev, payload, self.endian, pid, self.r.cmdlines());
        if !self.stacks.keep(buffer, cpu, ev, keep) {
            return Kept::Dropped;
        }
        Kept::Event(ev)
    }

    /// What goes before a line of `buffer` in text (`trace-cmd report`'s
    /// `NAME: `), when the input has several buffers.
    pub fn label(&self, w: &mut Out, buffer: u32) {
        if self.o.json {
            return;
        }
        if let Some(l) = self.labels.get(buffer as usize) {
            let _ = w.write_all(l.as_bytes());
        }
    }

    pub fn print(&mut self, w: &mut Out, ev: &EventFormat, buffer: u32, cpu: u32, ts: u64, payload: &[u8]) {
        let _ = if self.o.json {
            let name = self.buffers.get(buffer as usize).map(String::as_str);
            self.r.json_of(w, ev, cpu, name, ts, payload)
        } else {
            self.label(w, buffer);
            self.r.record_of(w, ev, cpu, ts, payload)
        };
    }

    /// A record's line(s), if the filters keep it.
    pub fn record(&mut self, w: &mut Out, buffer: u32, cpu: u32, ts: u64, payload: &[u8]) {
        match self.kept(buffer, cpu, ts, payload) {
            Kept::Unknown => {
                self.label(w, buffer);
                let _ = self.r.record(w, cpu, ts, payload);
            }
            Kept::Dropped => {}
            Kept::Event(ev) => self.print(w, ev, buffer, cpu, ts, payload),
        }
    }

    /// The `CPU:N [LOST …]` line of a loss.
    pub fn lost(&self, w: &mut Out, buffer: u32, cpu: u32, ts: u64, count: Option<u64>) {
        if !self.o.since.is_some_and(|t0| ts < t0) {
            self.label(w, buffer);
            let _ = write_lost(w, cpu, count);
        }
    }
}

/// Turns one stream item into output.
pub struct Emitter<'a> {
    pub p: Plain<'a>,
    pub graph: Option<GraphRenderer<'a>>,
    /// The graph layout is in use (set on the first funcgraph record when
    /// the input did not say).
    pub graph_on: bool,
    pub graph_ids: &'a [u32],
    /// The symbols that say where the irq entry code is, taken on the
    /// graph layout's first record (finding it parses the table).
    pub irq_syms: Option<&'a LazyKallsyms>,
    /// The current record, copied so the stream can peek the next one.
    pub scratch: Vec<u8>,
    /// A graph record's text, when it gets a buffer label (it may make
    /// no line at all).
    pub text: Out,
    /// CPUs of the traced machine (graph state slots per buffer).
    pub cpus: u32,
}

impl Emitter<'_> {
    pub fn emit(&mut self, s: &mut CpuPages, out: &mut Out) {
        self.emit_into(s, out);
        out.line_done();
    }

    /// Format one item straight into the output buffer.
    fn emit_into(&mut self, s: &mut CpuPages, line: &mut Out) {
        let (buffer, cpu) = (s.buffer, s.cpu);
        match s.take() {
            Some(Next::Record(rec)) => {
                let ev = match self.p.kept(buffer, cpu, rec.ts, rec.payload) {
                    Kept::Event(ev) => ev,
                    Kept::Unknown => {
                        self.p.label(line, buffer);
                        let _ = self.p.r.record(line, cpu, rec.ts, rec.payload);
                        return;
                    }
                    Kept::Dropped => return,
                };
                if !self.graph_on && self.graph_ids.contains(&ev.id) {
                    self.graph_on = true;
                }
                if let (Some(g), true, false) = (self.graph.as_mut(), self.graph_on, self.p.o.json) {
                    if let Some(k) = self.irq_syms.take() {
                        g.set_irq_text(k.table().map_or(IrqText::Fallback, IrqText::from_kallsyms));
                    }
                    // The graph layout folds an entry and its exit into one
                    // leaf line: it needs the next record of this CPU.
                    let ts = rec.ts;
                    self.scratch.clear();
                    self.scratch.extend_from_slice(rec.payload);
                    let next = s.peek_record().ok().flatten();
                    // Several buffers: the graph state is kept per stream
                    // (two buffers have the same CPUs), and the text goes
                    // through `text` to get its label.
                    let labelled = !self.p.labels.is_empty();
                    let slot = if labelled { buffer.saturating_mul(self.cpus).saturating_add(cpu) } else { cpu };
                    let w = if labelled { &mut self.text } else { &mut *line };
                    let outcome = g.record_in(w, slot, cpu, ts, &self.scratch, next);
                    match outcome {
                        Ok(Outcome::SkipNext) => {
                            let _ = s.take();
                        }
                        Ok(Outcome::NotGraph) => {
                            let _ = self.p.r.record(w, cpu, ts, &self.scratch);
                        }
                        _ => {}
                    }
                    if labelled && !self.text.is_empty() {
                        self.p.label(line, buffer);
                        line.put_block(&mut self.text);
                    }
                    return;
                }
                self.p.print(line, ev, buffer, cpu, rec.ts, rec.payload);
            }
            Some(Next::Lost { ts, count }) => self.p.lost(line, buffer, cpu, ts, count),
            Some(Next::Damaged(e)) => log::warn!("cpu{cpu}: skipped a damaged page: {e}"),
            None => {}
        }
    }
}
