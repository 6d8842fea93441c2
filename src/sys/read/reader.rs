//! A pull reader of a trace ([`Reader`]): a trace.dat (v6, v7,
//! compressed), a `tr-cat -o -` stream, a copy of a tracefs tree, or what
//! the live tracefs's buffer holds now (consumed), with the trace's
//! metadata and its records merged by time, one [`Entry`] per
//! call, and the kernel's text of a record ([`Text`]) or of a whole read
//! in the function_graph layout ([`GraphText`]). The applets read through
//! it too, with their sinks (the text printer, the collectors) on its
//! records; on its own it installs no signal handler and writes
//! nothing to stdout or stderr. What it reads past (losses, damaged or cut
//! pages, records no format describes) comes as entries and as
//! [`Reader::problems`]; the `log` crate's records say more, if the host
//! program installed a logger.

use super::opts::RawOpts;
use super::problems::{add_run_problems, UnknownEvents};
use super::records::{Records, Step};
use super::text::graph_record;
use crate::format::{EventFormat, EventTable, Field, FieldKind, Value};
use crate::graph::{GraphOpts, GraphRenderer, IrqText};
use crate::kernel::KernelProfile;
use crate::page::{PageError, Record};
use crate::printfmt::{Sym, SymbolLookup};
use crate::problems::Problems;
use crate::render::{write_lost, CommonFields, Renderer};
use crate::sys::error::Error;
use crate::sys::pages::{self, CpuPages};
use crate::sys::stop::Stop;
use crate::sys::trace::{KernelFacts, Opened};
use crate::sys::Tracefs;
use std::path::Path;

/// What to read of a trace. `ReadOptions::default()` reads every CPU of
/// every buffer of a trace.dat that holds data, or the top buffer of a
/// tracefs tree.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Only these CPUs; `None`: every CPU. A CPU the trace does not have
    /// is an error ([`Error::NoCpu`]).
    pub cpus: Option<Vec<u32>>,
    /// Only this buffer of a trace.dat (`""`: the top one); `None`: every
    /// buffer that holds data, merged by time (the top one first at equal
    /// times, as `trace-cmd report`). Of a tracefs tree (the live one or a
    /// copy): the instance `instances/NAME`; `None` or `""`: the top
    /// buffer. A name the trace has no buffer or instance of is an error
    /// ([`Error::NoBuffer`], [`Error::NoInstance`]).
    pub buffer: Option<String>,
    /// Read as of this kernel release (e.g. `"4.19"`): its text rules,
    /// whatever the trace's uname, UNAME option or formats say. `None`: the
    /// kernel the trace names (or its formats suggest).
    pub kernel: Option<String>,
    /// Of the live tracefs ([`Reader::live`]): follow the buffer, as
    /// `trace_pipe` does. Once what it holds is read, the reader waits
    /// for new records until the stop given to
    /// [`Reader::next_entry_until`] (with [`Reader::next_entry`]: for
    /// ever). Other sources ignore it: they end where their data does.
    pub follow: bool,
}

impl ReadOptions {
    /// The engine's options for a whole, unfiltered read.
    fn raw(&self) -> RawOpts {
        RawOpts { only: self.cpus.clone(), kernel: self.kernel.clone(), ..Default::default() }
    }
}

/// A recorded trace opened for reading: its metadata ([`Session`]), and
/// its records in time order through [`Reader::next_entry`] (or, with the
/// session borrowed beside them, [`Reader::split`]).
///
/// ```no_run
/// use trbox::sys::read::{Entry, ReadOptions, Reader};
/// let mut r = Reader::trace_dat("trace.dat".as_ref(), &ReadOptions::default())?;
/// let (session, mut entries) = r.split();
/// let mut text = session.text();
/// let mut line = String::new();
/// while let Some(e) = entries.next_entry() {
///     if let Entry::Event(ev) = e {
///         if let Some(v) = ev.field("prev_pid") {
///             let _ = (ev.ts(), ev.cpu(), ev.comm(), ev.name(), v);
///         }
///         line.clear();
///         text.line(&ev, &mut line);
///     }
/// }
/// # Ok::<(), trbox::sys::Error>(())
/// ```
pub struct Reader {
    pub(super) session: Session,
    pub(super) records: Records,
}

/// What a trace holds besides its records: formats, comms, symbols, clock,
/// kernel, CPUs, buffers.
pub struct Session {
    /// Formats, comms, symbols, byte order, clock, kernel, CPUs.
    pub(crate) trace: Opened,
    /// BTF and kernel variables, for the print fmts that need them.
    pub(super) kernel: KernelFacts,
    /// The `irq-info` option (a tree's `trace_options`; on elsewhere): the
    /// latency columns of the text.
    pub(super) irq_info: bool,
    /// Names of the buffers the streams come from (`CpuPages::buffer`
    /// indexes them), when there are several; else empty.
    pub(crate) buffers: Vec<String>,
    /// What each of those buffers puts before its lines (the way
    /// `trace-cmd report` does); empty with one buffer.
    pub(super) labels: Vec<String>,
    /// A trace.dat's TRACEID option: the id trace-cmd gave the recording.
    pub(super) trace_id: Option<u64>,
    /// The function_graph layout's options (a tree's `trace_options`),
    /// when the trace says it is a graph trace.
    pub(super) graph: Option<GraphOpts>,
    /// The graph layout begins at the first funcgraph record (a trace.dat
    /// keeps no tracer name), not at the first record.
    pub(super) graph_auto: bool,
    /// What an applet says on stderr when the streams hold nothing at all
    /// (`tr-cat: FILE: no events in the top buffer`).
    pub(super) empty_note: Option<String>,
    /// After an applet's read: that note, when the read met nothing at
    /// all (no record, no loss, no damaged page), for the caller to
    /// print. Never silently nothing.
    pub(crate) empty: Option<String>,
    /// For writers of other formats (host builds): `uname` (sysname
    /// nodename release version machine) and the saved_cmdlines text.
    #[cfg(feature = "host")]
    pub(crate) uname: Option<String>,
    #[cfg(feature = "host")]
    pub(crate) saved_cmdlines: String,
    /// Records of event ids no format describes, counted as they are met.
    pub(super) unknown: UnknownEvents,
}

impl Reader {
    /// A trace.dat file (v6 or v7, its sections compressed or not), or a
    /// `tr-cat -o -` stream or console log: the file's content says which.
    /// `-` reads standard input.
    pub fn trace_dat(path: &Path, o: &ReadOptions) -> Result<Reader, Error> {
        // (The applet name only makes the note of an empty read, which
        // this reader leaves to its caller.)
        Reader::dat("", path, o.buffer.as_deref(), &o.raw())
    }

    /// A stream `tr-cat -o -` wrote (or its console log), at `path` (`-`:
    /// standard input). The same reader as [`Reader::trace_dat`], which
    /// tells them apart by content: this name is for a caller that
    /// expects a stream.
    pub fn stream(path: &Path, o: &ReadOptions) -> Result<Reader, Error> {
        Reader::trace_dat(path, o)
    }

    /// A copy of a tracefs tree (`events/`, `per_cpu/cpuN/trace_pipe_raw`,
    /// `saved_cmdlines`…), as a `cp -r` of one makes it. Its pages may come
    /// from a big-endian board, and its kernel is the one its `uname` or
    /// `version` file names, or the one its formats imply. The live
    /// tracefs is refused ([`Error::TraceDat`]): reading it would consume
    /// its buffers, which only [`Reader::live`] does.
    pub fn tree(dir: &Path, o: &ReadOptions) -> Result<Reader, Error> {
        let mut t = Tracefs::at(dir)?;
        if t.is_live() {
            let what =
                "the live tracefs, not a copy of one: reading its buffers would consume them (Reader::live does)"
                    .into();
            return Err(Error::TraceDat { path: dir.into(), what });
        }
        enter(&mut t, o)?;
        Reader::of_tree(&t, &o.raw())
    }

    /// What the live tracefs's buffer holds now (and, with
    /// [`ReadOptions::follow`], what it gets later): the top one, or the
    /// instance [`ReadOptions::buffer`] names. The tracefs is the mounted
    /// one, found as the applets find it (`/proc/self/mountinfo`); none
    /// mounted is [`Error::NotMounted`] (this reader mounts none).
    ///
    /// Reading **consumes** the records (`per_cpu/cpuN/trace_pipe_raw`,
    /// like `tr-cat --raw`): they are gone from the buffer and its `trace`
    /// file after. That is its only effect: it changes no tracefs setting
    /// (tracing goes on as it was) and installs no signal handler.
    /// Without `follow`, [`Reader::next_entry`] returns `None` once what
    /// the buffer held at this call is read: records written later (some
    /// by the reads themselves, a syscall event of `read()`) end the read
    /// rather than prolong it; those on a page already read out are
    /// consumed unseen. With `follow`, each CPU's buffer is read ahead by
    /// a thread of its own (so that a slow caller does not make the kernel
    /// overwrite), the comms of new tasks are read again now and then, and
    /// the read ends at [`Reader::next_entry_until`]'s stop: what the
    /// buffer holds up to the trace clock of the stop is read first.
    pub fn live(o: &ReadOptions) -> Result<Reader, Error> {
        let mut t = Tracefs::find()?;
        enter(&mut t, o)?;
        let until = (!o.follow).then(|| t.now()).flatten();
        let mut r = Reader::of_tree(&t, &RawOpts { follow: o.follow, ..o.raw() })?;
        r.records.until = until;
        if !o.follow {
            // What was saved of the comms at the start names the tasks.
            r.records.tree = None;
        }
        Ok(r)
    }

    pub(super) fn of(session: Session, streams: Vec<CpuPages>) -> Reader {
        let records = Records::new(streams, CommonFields::of_table(&session.trace.events));
        Reader { session, records }
    }

    /// The next record or problem, in time order across CPUs and buffers;
    /// `None` at the end. What it returns borrows the page it is in: take
    /// what you need of it before the next call. (A reader that follows
    /// the live buffer has no end: see [`Reader::next_entry_until`].)
    pub fn next_entry(&mut self) -> Option<Entry<'_>> {
        let i = self.records.pick()?;
        self.records.entry(i, &self.session)
    }

    /// [`Reader::next_entry`], for a reader that follows the live buffer
    /// ([`ReadOptions::follow`]): once the buffer is empty for now, it
    /// waits for records (or for `stop`: [`Stop::wake`]'s descriptor ends
    /// a wait at once; else it is asked at least every 250 ms). Once
    /// `stop` says so, it returns what the buffer holds up to the trace
    /// clock of that moment, then `None`. The comms of tasks born
    /// meanwhile are read again now and then ([`Session::comm`],
    /// [`Event::comm`]). Of a reader that does not follow, the same as
    /// `next_entry` (asking `stop` too).
    pub fn next_entry_until(&mut self, stop: &Stop<'_>) -> Option<Entry<'_>> {
        loop {
            match self.records.step(stop, None) {
                Step::Take(i) => return self.records.entry(i, &self.session),
                Step::Comms(c) => self.session.trace.cmdlines = c,
                Step::End => return None,
            }
        }
    }

    /// The trace's metadata.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The metadata and the records apart, to use the one (a [`Text`])
    /// while the other lends a record.
    pub fn split(&mut self) -> (&Session, Entries<'_>) {
        (&self.session, Entries { records: &mut self.records, session: &self.session })
    }

    /// The kernel's text of the rest of the read in the function_graph
    /// layout ([`GraphText`]).
    pub fn graph_text(&mut self) -> GraphText<'_> {
        let s = &self.session;
        let t = &s.trace;
        let ids = ["ftrace:funcgraph_entry", "ftrace:funcgraph_exit"];
        let graph = GraphRenderer::new(&t.events, &t.cmdlines, t.abi(), Some(&t.symbols))
            .with_strings(&t.printk)
            .with_kernel(&s.kernel)
            .with_opts(s.graph.unwrap_or_default())
            .with_cpu_count(t.cpus);
        GraphText {
            records: &mut self.records,
            session: s,
            text: s.text(),
            graph,
            // A tree whose tracer is function_graph: every record is the
            // layout's; else (a trace.dat, another tracer) from the first
            // funcgraph record on, as `tr-cat FILE` and tr-graph.
            on: s.graph.is_some() && !s.graph_auto,
            ids: ids.iter().filter_map(|n| t.events.by_name(n)).map(|e| e.id).collect(),
            irq_text: false,
            scratch: Vec::new(),
        }
    }

    /// What the trace holds that could not be read, counted by kind: the
    /// file's own (sections cut or left out, formats that do not parse)
    /// and, so far, the pages skipped and the records of unknown events.
    /// (Losses are [`Entry::Lost`] and [`Reader::lost`].)
    pub fn problems(&self) -> Problems {
        let (s, r) = (&self.session, &self.records);
        let mut p = s.trace.problems.clone();
        add_run_problems(&r.streams, &s.unknown, &s.buffers, &mut p);
        p
    }

    /// How many events the page headers reported lost so far, and how many
    /// pages reported a loss without a count.
    pub fn lost(&self) -> (u64, u64) {
        self.records.streams.iter().fold((0, 0), |(n, u), s| (n + s.counts.lost, u + s.counts.lost_unknown))
    }
}

impl Records {
    /// The item [`Step::Take`] named, as an entry.
    pub(super) fn entry<'a>(&'a mut self, i: usize, session: &'a Session) -> Option<Entry<'a>> {
        let s = self.streams.get_mut(i)?;
        let (buffer, cpu) = (s.buffer, s.cpu);
        // The merge points at a stream whose head it peeked: there is one.
        Some(match s.take()? {
            pages::CpuItem::Record(rec) => {
                let (t, payload) = (session.trace(), rec.payload);
                match t.events.event_of(payload, t.endian) {
                    Some(format) => Entry::Event(Event::of(buffer, cpu, rec, format, t, self.common)),
                    None => {
                        let id = t.events.record_id(payload, t.endian);
                        session.unknown.count(id);
                        Entry::Unknown { buffer, cpu, ts: rec.ts, id }
                    }
                }
            }
            pages::CpuItem::Lost { ts, count } => Entry::Lost { buffer, cpu, ts, count },
            pages::CpuItem::Damaged(error) => Entry::Damaged { buffer, cpu, error },
        })
    }
}

/// The kernel's text of a read in the function_graph layout
/// ([`Reader::graph_text`]), as `tr-cat` prints a graph trace and the
/// kernel's `trace` file with the function_graph tracer: a function's
/// entry and exit fold into one leaf line (`func();`) when nothing comes
/// between them on the CPU, other events are `/* … */` comments, and
/// records before the first funcgraph one (of a trace.dat) are plain
/// lines. The lines of several buffers carry no buffer label.
///
/// ```no_run
/// use trbox::sys::read::{ReadOptions, Reader};
/// let mut r = Reader::tree("copy-of-tracefs".as_ref(), &ReadOptions::default())?;
/// let mut graph = r.graph_text();
/// let mut text = String::new();
/// while graph.next_text(&mut text) {
///     print!("{text}");
///     text.clear();
/// }
/// # Ok::<(), trbox::sys::Error>(())
/// ```
pub struct GraphText<'r> {
    records: &'r mut Records,
    session: &'r Session,
    /// The lines of records outside the layout.
    text: Text<'r>,
    graph: GraphRenderer<'r>,
    /// The layout is in use.
    on: bool,
    /// The ids of funcgraph_entry and funcgraph_exit.
    ids: Vec<u32>,
    /// Where the irq entry code is has been looked up.
    irq_text: bool,
    /// The current record, copied so that its stream can peek the next.
    scratch: Vec<u8>,
}

impl GraphText<'_> {
    /// Append the text of the next item of the read to `out`: a record's
    /// lines (none for the exit a leaf line took in, or a record inside
    /// an irq the options hide), or a loss's `CPU:N [LOST …]` line.
    /// `false` at the end of the read.
    pub fn next_text(&mut self, out: &mut String) -> bool {
        let Some(i) = self.records.pick() else { return false };
        let streams = &mut self.records.streams;
        let Some(s) = streams.get_mut(i) else { return false };
        let (buffer, cpu) = (s.buffer, s.cpu);
        let t = &self.session.trace;
        let rec = match s.take() {
            Some(pages::CpuItem::Record(rec)) => rec,
            Some(pages::CpuItem::Lost { count, .. }) => {
                let _ = write_lost(out, cpu, count);
                return true;
            }
            Some(pages::CpuItem::Damaged(_)) | None => return true,
        };
        let (ts, r) = (rec.ts, &mut self.text.r);
        let Some(format) = t.events.event_of(rec.payload, t.endian) else {
            self.session.unknown.count(t.events.record_id(rec.payload, t.endian));
            let _ = r.record(out, cpu, ts, rec.payload);
            return true;
        };
        self.on |= self.ids.contains(&format.id);
        if !self.on {
            let _ = r.record_of(out, format, cpu, ts, rec.payload);
            return true;
        }
        if !self.irq_text {
            // Found when the layout comes into use: it parses the symbols.
            self.irq_text = true;
            self.graph.set_irq_text(t.symbols.table().map_or(IrqText::Fallback, IrqText::from_kallsyms));
        }
        self.scratch.clear();
        self.scratch.extend_from_slice(rec.payload);
        // Two buffers have the same CPUs: a graph state for each of both.
        let slot = buffer.saturating_mul(t.cpus.max(1)).saturating_add(cpu);
        graph_record(&mut self.graph, r, out, s, slot, ts, &self.scratch);
        true
    }
}

/// A [`Reader`]'s records, apart from its [`Session`] ([`Reader::split`]).
pub struct Entries<'r> {
    records: &'r mut Records,
    session: &'r Session,
}

impl Entries<'_> {
    /// [`Reader::next_entry`].
    pub fn next_entry(&mut self) -> Option<Entry<'_>> {
        let i = self.records.pick()?;
        self.records.entry(i, self.session)
    }
}

impl Session {
    /// The whole session: formats, comms, symbols, byte order, page
    /// layout, clock, kernel, CPUs.
    pub fn trace(&self) -> &Opened {
        &self.trace
    }

    /// The id trace-cmd gave the recording (a trace.dat's TRACEID
    /// option), if the file has one.
    pub fn trace_id(&self) -> Option<u64> {
        self.trace_id
    }

    /// The traced machine's CPUs.
    pub fn cpus(&self) -> u32 {
        self.trace.cpus
    }

    /// The trace clock's name (`local`, `mono`, `counter`…).
    pub fn clock(&self) -> &str {
        &self.trace.clock
    }

    /// The size of a ring-buffer page (sub-buffer), in bytes.
    pub fn page_size(&self) -> usize {
        self.trace.layout.subbuf_size()
    }

    /// The traced kernel: its version as read or inferred, and from what.
    pub fn kernel(&self) -> &KernelProfile {
        &self.trace.kernel
    }

    /// The events' formats.
    pub fn events(&self) -> &EventTable {
        &self.trace.events
    }

    /// The comm of `pid` as the trace saved it (`<...>` when it did not,
    /// `<idle>` for pid 0).
    pub fn comm(&self, pid: i32) -> &str {
        self.trace.cmdlines.comm(pid)
    }

    /// The names of the buffers entries come from ([`Event::buffer`]
    /// indexes them; `""` is the top one) when there are several; else
    /// empty.
    pub fn buffers(&self) -> &[String] {
        &self.buffers
    }

    /// The kernel symbol that holds `addr`, from the trace's own kallsyms
    /// (a trace.dat's, or a tracefs copy's `kallsyms` file): its name,
    /// offset, size and module, which print as the kernel's `%ps` (`{}`)
    /// or `%pS` (`{:#}`) prints them. `None` when the trace has no
    /// kallsyms or no symbol holds the address (where the kernel prints
    /// `0x` and the address). The records of a previous boot (a persistent
    /// buffer's) are looked up at where their addresses are in this boot,
    /// as the text does.
    pub fn symbol(&self, addr: u64) -> Option<Sym<'_>> {
        self.trace.symbols.lookup(addr)
    }

    /// What writes the kernel's text of this session's records.
    pub fn text(&self) -> Text<'_> {
        let t = &self.trace;
        let r = Renderer::new(&t.events, t.cmdlines.clone(), t.abi(), t.in_ns())
            .with_strings(&t.printk)
            .with_symbols(&t.symbols)
            .with_kernel(&self.kernel)
            .with_irq_info(self.irq_info);
        Text { r }
    }
}

/// The kernel's text of records ([`Session::text`]): each line as the
/// `trace` file prints it, the print fmt's body after the prefix of task,
/// CPU, latency columns and time. (Not the function_graph layout, which
/// folds an entry and its exit into one line, and so needs the records
/// that follow: that is [`Reader::graph_text`]. A funcgraph record is one
/// line of its own here.)
pub struct Text<'s> {
    r: Renderer<'s>,
}

impl Text<'_> {
    /// Append the line (or lines: a stack record's) of `ev` to `out`, each
    /// with its newline.
    pub fn line(&mut self, ev: &Event<'_>, out: &mut String) {
        // Writing to a String cannot fail.
        let _ = self.r.record_of(out, ev.format, ev.cpu, ev.ts, ev.payload);
    }

    /// Append the body of `ev` to `out`: its line without the prefix (the
    /// print fmt's text, `sched_switch: prev_comm=…`), and without its
    /// last newline (a stack record's body has several lines).
    pub fn body(&mut self, ev: &Event<'_>, out: &mut String) {
        let start = out.len();
        let _ = self.r.body_of(out, ev.format, ev.payload);
        if out.len() > start && out.ends_with('\n') {
            out.pop();
        }
    }
}

/// Enter the instance `o.buffer` names, if any, of tree `t`.
fn enter(t: &mut Tracefs, o: &ReadOptions) -> Result<(), Error> {
    match o.buffer.as_deref() {
        Some(name) => t.enter_instance(name),
        None => Ok(()),
    }
}

/// One step of a [`Reader`]: a record, or a problem met on the way. (What
/// `collect` hands over: an event the filters kept, or a
/// loss.)
#[derive(Debug)]
pub enum Entry<'a> {
    /// A record of an event the trace has the format of.
    Event(Event<'a>),
    /// Events lost before the next page (the ring buffer overran).
    Lost {
        /// Its buffer ([`Session::buffers`]).
        buffer: u32,
        /// The CPU that lost them.
        cpu: u32,
        /// The time of the page that follows the loss.
        ts: u64,
        /// How many, when the page header said.
        count: Option<u64>,
    },
    /// A page, or the rest of it, that could not be read: damaged, its
    /// times out of order, or cut off by the end of the file
    /// (`PageError::kind` says which). The reader goes on with the next
    /// page.
    Damaged {
        /// Its buffer ([`Session::buffers`]).
        buffer: u32,
        /// The CPU of the page.
        cpu: u32,
        /// What was wrong, and where in the page.
        error: PageError,
    },
    /// A record whose event id no format of the trace describes.
    Unknown {
        /// Its buffer ([`Session::buffers`]).
        buffer: u32,
        /// The CPU that wrote it.
        cpu: u32,
        /// Its time.
        ts: u64,
        /// Its `common_type`; `None` when it is too short to hold one.
        id: Option<u32>,
    },
}

/// One record, with its event's format: its time, CPU, task, and each
/// field by name with its type.
#[derive(Clone, Copy)]
pub struct Event<'a> {
    ts: u64,
    cpu: u32,
    buffer: u32,
    payload: &'a [u8],
    format: &'a EventFormat,
    trace: &'a Opened,
    common: CommonFields,
}

impl<'a> Event<'a> {
    /// Record `rec` of CPU `cpu` of buffer `buffer`, an event `format` of
    /// `trace`; `common`: where the common fields are, when known for
    /// every format.
    pub(super) fn of(
        buffer: u32,
        cpu: u32,
        rec: Record<'a>,
        format: &'a EventFormat,
        trace: &'a Opened,
        common: Option<CommonFields>,
    ) -> Self {
        let common = common.unwrap_or_else(|| CommonFields::of(format));
        Event { ts: rec.ts, cpu, buffer, payload: rec.payload, format, trace, common }
    }

    /// Its time, in the trace clock's unit (nanoseconds for most clocks).
    pub fn ts(&self) -> u64 {
        self.ts
    }

    /// The CPU that wrote it.
    pub fn cpu(&self) -> u32 {
        self.cpu
    }

    /// Its buffer: an index into [`Session::buffers`].
    pub fn buffer(&self) -> u32 {
        self.buffer
    }

    /// The pid of the task that wrote it (`common_pid`).
    pub fn pid(&self) -> i32 {
        self.common.read(self.trace.endian, self.payload).2
    }

    /// The comm of that task, as the trace saved it (`<...>` when it did
    /// not).
    pub fn comm(&self) -> &'a str {
        self.trace.cmdlines.comm(self.pid())
    }

    /// `common_flags`: the irq and preemption state bits (`TRACE_FLAG_*`).
    pub fn flags(&self) -> u8 {
        self.common.read(self.trace.endian, self.payload).0
    }

    /// `common_preempt_count`.
    pub fn preempt_count(&self) -> u8 {
        self.common.read(self.trace.endian, self.payload).1
    }

    /// Its event's system (`sched`).
    pub fn system(&self) -> &'a str {
        &self.format.system
    }

    /// Its event's name (`sched_switch`).
    pub fn name(&self) -> &'a str {
        &self.format.name
    }

    /// Its event's format: every field's name, type, offset and size.
    pub fn format(&self) -> &'a EventFormat {
        self.format
    }

    /// The record's bytes, from `common_type` on.
    pub fn payload(&self) -> &'a [u8] {
        self.payload
    }

    /// The field `name` (an event's own, or a `common_*` one) with its
    /// type; `None` when the event has no such field or the record is too
    /// short for it.
    pub fn field(&self, name: &str) -> Option<Value<'a>> {
        self.format_of(name)?.typed(self.payload, self.trace.endian)
    }

    /// The kernel symbol at the address the field `name` holds (a scalar:
    /// `ip`, `call_site`, `function`), from the trace's own kallsyms, as
    /// `%ps` (`{}`) or `%pS` (`{:#}`) prints it; `None` when the event has
    /// no such scalar field, the trace has no kallsyms, or no symbol holds
    /// the address. For the addresses in an array (a stack's `caller`),
    /// [`Session::symbol`] each of [`Ints::uints`](crate::format::Ints::uints).
    pub fn symbol(&self, name: &str) -> Option<Sym<'a>> {
        let f = self.format_of(name).filter(|f| f.kind == FieldKind::Scalar)?;
        self.trace.symbols.lookup(f.loc().uint(self.payload, self.trace.endian)?)
    }

    /// The field `name` of its format, the event's own or a `common_*` one.
    fn format_of(&self, name: &str) -> Option<&'a Field> {
        self.format.fields.iter().chain(&self.format.common).find(|f| f.name == name)
    }

    /// The event's own fields (not the `common_*` ones), in format order,
    /// with their values (`None`: the record is too short for it).
    pub fn fields(&self) -> impl Iterator<Item = (&'a str, Option<Value<'a>>)> + 'a {
        let (payload, endian) = (self.payload, self.trace.endian);
        self.format.fields.iter().map(move |f| (f.name.as_str(), f.typed(payload, endian)))
    }
}

impl std::fmt::Debug for Event<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event")
            .field("ts", &self.ts)
            .field("cpu", &self.cpu)
            .field("pid", &self.pid())
            .field("event", &format_args!("{}:{}", self.system(), self.name()))
            .finish()
    }
}

/// docs/library.md's Rust snippet, compiled by `cargo test --doc`: the page
/// cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/library.md")]
struct LibraryMd;
