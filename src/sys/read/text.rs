//! The text sink: records as the kernel's `trace` file prints them, or one
//! JSON object each (`--json`). Every layout but the graph one is
//! [`Plain`] (all a worker thread of parallel.rs needs); the graph layout
//! sits on top of it in [`Emitter`] (one thread: it folds records in
//! order).

use super::opts::{Prepared, RawOpts};
use super::out::Out;
use super::problems::UnknownEvents;
use crate::abi::Endian;
use crate::format::{EventFormat, EventTable};
use crate::graph::{GraphRenderer, IrqText, Outcome};
use crate::render::{write_lost, Renderer};
use crate::sys::kallsyms::LazyKallsyms;
use crate::sys::pages::{CpuItem, CpuPages};
use std::io::Write as _;

/// The text of records and losses in every layout but the graph one: all
/// a worker thread needs (parallel.rs).
pub(crate) struct Plain<'a> {
    /// The kernel's text rules for a record.
    pub(crate) r: Renderer<'a>,
    /// The session's event formats.
    pub(crate) events: &'a EventTable,
    /// The byte order of the records.
    pub(crate) endian: Endian,
    /// What to keep and how to print.
    pub(crate) o: &'a RawOpts,
    /// Buffer names, when there are several ([`Session::buffers`](super::Session::buffers)).
    pub(crate) buffers: &'a [String],
    /// What goes before a line of each of those buffers.
    pub(crate) labels: &'a [String],
    /// What the filter worked out: [`Filter::prepare`](super::Filter::prepare).
    pub(crate) prepared: &'a Prepared,
    /// The verdicts stack records inherit.
    pub(crate) stacks: StackVerdicts,
    /// Records of event ids no format describes, counted.
    pub(crate) unknown: &'a UnknownEvents,
}

/// A stack record (`kernel_stack`, `user_stack`: a stacktrace trigger's or
/// option's) belongs to the record just before it on its CPU, and shares
/// its verdict: the stack of a dropped event is dropped too (the kernel
/// writes it in the event's context, so `--pid` and `--comm` agree
/// anyway; a switch of trbox's own is dropped by what it names). In a
/// live window a stack record before any other on its CPU is of an event
/// the window did not see (read out of the buffer as the window opened,
/// the stack written a moment later): dropped too.
#[derive(Default)]
pub(crate) struct StackVerdicts {
    /// The (buffer, CPU)s whose last record was not as one before any
    /// record is taken: dropped in a file, kept in a window.
    marked: Vec<(u32, u32)>,
}

impl StackVerdicts {
    /// Whether the record `ev` of (buffer, CPU) is kept, given the
    /// filters' verdict `keep` on it; `window`: the read is a live
    /// window's.
    pub(crate) fn keep(&mut self, buffer: u32, cpu: u32, ev: &EventFormat, keep: bool, window: bool) -> bool {
        let at = self.marked.iter().position(|&k| k == (buffer, cpu));
        let follows_dropped = at.map(|i| self.marked.swap_remove(i)).is_some() != window;
        let stack = || ev.system == "ftrace" && matches!(ev.name.as_str(), "kernel_stack" | "user_stack");
        let keep = keep && !(follows_dropped && stack());
        if keep == window {
            self.marked.push((buffer, cpu));
        }
        keep
    }
}

/// What the filters make of a record.
pub(crate) enum Kept<'a> {
    /// An event id the format files do not know: printed as `type: N`.
    Unknown,
    /// The filters drop it.
    Dropped,
    /// Kept: a record of this event.
    Event(&'a EventFormat),
}

impl<'a> Plain<'a> {
    /// What the filters make of the record `payload` of (buffer, CPU) at
    /// `ts`.
    pub(crate) fn kept(&mut self, buffer: u32, cpu: u32, ts: u64, payload: &[u8]) -> Kept<'a> {
        let before = self.o.since.is_some_and(|t0| ts < t0);
        // A live window reads the formats of what it can record only
        // (Reading::enabled): what was in the buffer before it may be of
        // other systems, and is not shown anyway.
        let Some(ev) = self.events.event_of(payload, self.endian) else {
            return if before { Kept::Dropped } else { Kept::Unknown };
        };
        let pid = self.r.pid(payload);
        let keep = !before && self.o.filter.keep(self.prepared, ev, payload, self.endian, pid, self.r.cmdlines());
        if !self.stacks.keep(buffer, cpu, ev, keep, self.o.since.is_some()) {
            return Kept::Dropped;
        }
        Kept::Event(ev)
    }

    /// What goes before a line of `buffer` in text (`trace-cmd report`'s
    /// `NAME: `), when the input has several buffers.
    pub(crate) fn label(&self, w: &mut Out, buffer: u32) {
        if self.o.json {
            return;
        }
        if let Some(l) = self.labels.get(buffer as usize) {
            let _ = w.write_all(l.as_bytes());
        }
    }

    /// A kept record's line (text, with its buffer's label) or JSON object.
    pub(crate) fn print(&mut self, w: &mut Out, ev: &EventFormat, buffer: u32, cpu: u32, ts: u64, payload: &[u8]) {
        let _ = if self.o.json {
            let name = self.buffers.get(buffer as usize).map(String::as_str);
            self.r.json_of(w, ev, cpu, name, ts, payload)
        } else {
            self.label(w, buffer);
            self.r.record_of(w, ev, cpu, ts, payload)
        };
    }

    /// A record's line(s), if the filters keep it.
    pub(crate) fn record(&mut self, w: &mut Out, buffer: u32, cpu: u32, ts: u64, payload: &[u8]) {
        match self.kept(buffer, cpu, ts, payload) {
            Kept::Unknown => self.unknown_event(w, buffer, cpu, ts, payload),
            Kept::Dropped => {}
            Kept::Event(ev) => self.print(w, ev, buffer, cpu, ts, payload),
        }
    }

    /// A record of an event id no format describes: counted, and its line
    /// (`type: N`, as the kernel's `trace` has no better) in text only: a
    /// JSON line is an event's.
    pub(crate) fn unknown_event(&mut self, w: &mut Out, buffer: u32, cpu: u32, ts: u64, payload: &[u8]) {
        self.unknown.count(self.events.record_id(payload, self.endian));
        if !self.o.json {
            self.label(w, buffer);
            let _ = self.r.record(w, cpu, ts, payload);
        }
    }

    /// The `CPU:N [LOST …]` line of a loss.
    pub(crate) fn lost(&self, w: &mut Out, buffer: u32, cpu: u32, ts: u64, count: Option<u64>) {
        if !self.o.since.is_some_and(|t0| ts < t0) {
            self.label(w, buffer);
            let _ = write_lost(w, cpu, count);
        }
    }
}

/// Turns one stream item into output.
pub(crate) struct Emitter<'a> {
    /// Every layout but the graph one.
    pub(crate) p: Plain<'a>,
    /// The function_graph layout, when the input may use it.
    pub(crate) graph: Option<GraphRenderer<'a>>,
    /// The graph layout is in use (set on the first funcgraph record when
    /// the input did not say).
    pub(crate) graph_on: bool,
    /// The ids of funcgraph_entry and funcgraph_exit.
    pub(crate) graph_ids: &'a [u32],
    /// The symbols that say where the irq entry code is, taken on the
    /// graph layout's first record (finding it parses the table).
    pub(crate) irq_syms: Option<&'a LazyKallsyms>,
    /// The current record, copied so the stream can peek the next one.
    pub(crate) scratch: Vec<u8>,
    /// A graph record's text, when it gets a buffer label (it may make
    /// no line at all).
    pub(crate) text: Out,
    /// CPUs of the traced machine (graph state slots per buffer).
    pub(crate) cpus: u32,
}

impl Emitter<'_> {
    /// Print the next item of `s`.
    pub(crate) fn emit(&mut self, s: &mut CpuPages, out: &mut Out) {
        self.emit_into(s, out);
        out.line_done();
    }

    /// Format one item straight into the output buffer.
    fn emit_into(&mut self, s: &mut CpuPages, line: &mut Out) {
        let (buffer, cpu) = (s.buffer, s.cpu);
        match s.take() {
            Some(CpuItem::Record(rec)) => {
                let ev = match self.p.kept(buffer, cpu, rec.ts, rec.payload) {
                    Kept::Event(ev) => ev,
                    Kept::Unknown => return self.p.unknown_event(line, buffer, cpu, rec.ts, rec.payload),
                    Kept::Dropped => return,
                };
                if !self.graph_on && self.graph_ids.contains(&ev.id) {
                    self.graph_on = true;
                }
                if let (Some(g), true, false) = (self.graph.as_mut(), self.graph_on, self.p.o.json) {
                    if let Some(k) = self.irq_syms.take() {
                        g.set_irq_text(k.table().map_or(IrqText::Fallback, IrqText::from_kallsyms));
                    }
                    let ts = rec.ts;
                    self.scratch.clear();
                    self.scratch.extend_from_slice(rec.payload);
                    // Several buffers: the graph state is kept per stream
                    // (two buffers have the same CPUs), and the text goes
                    // through `text` to get its label.
                    let labelled = !self.p.labels.is_empty();
                    let slot = if labelled { buffer.saturating_mul(self.cpus).saturating_add(cpu) } else { cpu };
                    let w = if labelled { &mut self.text } else { &mut *line };
                    graph_record(g, &mut self.p.r, w, s, slot, ts, &self.scratch);
                    if labelled && !self.text.is_empty() {
                        self.p.label(line, buffer);
                        line.put_block(&mut self.text);
                    }
                    return;
                }
                self.p.print(line, ev, buffer, cpu, rec.ts, rec.payload);
            }
            Some(CpuItem::Lost { ts, count }) => self.p.lost(line, buffer, cpu, ts, count),
            // A damaged page is told and counted by the stream.
            Some(CpuItem::Damaged(_)) | None => {}
        }
    }
}

/// The function_graph layout's text of `payload` (a copy of the record of
/// `s` at `ts` just taken), its graph state kept in `slot`; what is not
/// the layout's (a `function` record) in `plain`'s text.
pub(crate) fn graph_record<W: std::fmt::Write>(
    g: &mut GraphRenderer<'_>,
    plain: &mut Renderer<'_>,
    w: &mut W,
    s: &mut CpuPages,
    slot: u32,
    ts: u64,
    payload: &[u8],
) {
    // The layout folds an entry and its exit into one leaf line: it needs
    // the next record of this CPU.
    let cpu = s.cpu;
    let next = s.peek_record().ok().flatten();
    match g.record_in(w, slot, cpu, ts, payload, next) {
        Ok(Outcome::SkipNext) => {
            let _ = s.take();
        }
        Ok(Outcome::NotGraph) => {
            let _ = plain.record(w, cpu, ts, payload);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stack record takes the verdict of the record before it on its
    /// CPU; in a live window, one before any record on its CPU is of an
    /// event the window did not see. A file shows it (as `trace-cmd
    /// report` does: the page of its event was overwritten).
    #[test]
    fn a_stack_takes_the_verdict_of_the_record_before_it() {
        let ev = |system: &str, name: &str| EventFormat {
            id: 1,
            system: system.into(),
            name: name.into(),
            common: Vec::new(),
            fields: Vec::new(),
            print_fmt: String::new(),
        };
        let (sw, stack) = (ev("sched", "sched_switch"), ev("ftrace", "kernel_stack"));
        let mut file = StackVerdicts::default();
        assert!(file.keep(0, 0, &stack, true, false), "a file's first record on cpu0");
        assert!(!file.keep(0, 0, &sw, false, false));
        assert!(!file.keep(0, 0, &stack, true, false), "the stack of a dropped event");
        assert!(file.keep(0, 0, &sw, true, false));
        assert!(file.keep(0, 0, &stack, true, false));
        let mut window = StackVerdicts::default();
        assert!(!window.keep(0, 1, &stack, true, true), "a window's first record on cpu1");
        assert!(window.keep(0, 1, &sw, true, true));
        assert!(window.keep(0, 1, &stack, true, true));
        assert!(!window.keep(1, 1, &stack, true, true), "the first on another buffer's cpu1");
        assert!(window.keep(0, 0, &sw, true, true), "an event first on cpu0");
    }
}
