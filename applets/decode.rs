//! Decoding a tracefs tree's raw pages into lines: the loop shared by
//! `tr-cat --raw` and `tr-event` (drain, or follow until a stop).

use crate::cli::Error;
use crate::emit::{Emitter, Plain};
pub use crate::emit::{Filter, RawOpts, Reading};
use crate::out::Out;
use std::io::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};
use trbox::graph::{GraphOpts, GraphRenderer};
use trbox::merge::{self, Merger};
use trbox::printfmt::SymbolLookup;
use trbox::render::{Cmdlines, CommonFields, Renderer};
use trbox::sys::raw::RawPages;
use trbox::sys::stream::{wait_for_data, CpuPages, FilePages, Next};
use trbox::sys::trace::{dat_file, dat_session, open_tree_with, read_dat_from, tree_header, KernelFacts, Opened};
use trbox::sys::{signals, Tracefs};
use trbox::tracedat::Instance;

/// What the decode loop works on: the trace session and one page stream
/// per CPU, from a tracefs tree (live or a copy) or from a trace.dat.
pub struct Input<'t> {
    trace: Opened,
    /// BTF and kernel variables, for the print fmts that need them.
    kernel: KernelFacts,
    streams: Vec<CpuPages>,
    /// The live tree, to refresh comms while following.
    tree: Option<&'t Tracefs>,
    /// Render the function_graph layout (the tracer was function_graph).
    graph: Option<GraphOpts>,
    /// The `irq-info` option (a tree's `trace_options`; on elsewhere).
    irq_info: bool,
    /// Only switch to the graph layout once a funcgraph record shows up.
    graph_auto: bool,
    /// Names of the buffers the streams come from (`CpuPages::buffer`
    /// indexes them), when there are several; else empty.
    buffers: Vec<String>,
    /// What each of those buffers puts before its lines (the way `trace-cmd
    /// report` does); empty with one buffer.
    labels: Vec<String>,
    /// What to say on stderr when the streams hold nothing at all.
    empty_note: Option<String>,
    /// For writers of other formats: `uname` (sysname nodename release
    /// version machine) and the saved_cmdlines text.
    #[cfg(feature = "host")]
    uname: Option<String>,
    #[cfg(feature = "host")]
    saved_cmdlines: String,
}

impl<'t> Input<'t> {
    /// The per-CPU raw pages of a tracefs tree.
    pub fn tree(t: &'t Tracefs, o: &RawOpts) -> Result<Self, Error> {
        Self::tree_then(t, o, &|| Ok(()))
    }

    /// [`tree`](Self::tree), calling `reading` once the raw pages are being
    /// read and before the rest (formats, comms) is: a command released
    /// there fills no buffer unread, and its comm is already saved when the
    /// comms are read.
    pub fn tree_then(t: &'t Tracefs, o: &RawOpts, reading: &dyn Fn() -> Result<(), Error>) -> Result<Self, Error> {
        let (header, endian) = tree_header(t)?;
        let layout = trbox::page::PageLayout::from(&header);
        let mut streams = Vec::new();
        for cpu in t.cpus()? {
            if o.only.as_ref().is_some_and(|only| !only.contains(&cpu)) {
                continue;
            }
            let rel = format!("per_cpu/cpu{cpu}/trace_pipe_raw");
            let src = match RawPages::open(&t.path(&rel), layout.subbuf_size(), t.is_live()) {
                Ok(s) => s,
                // A copy may hold only some CPUs.
                Err(e) if e.errno() == Some(libc::ENOENT) => {
                    log::info!("{rel}: absent, skipped");
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            // Following the live buffer: read ahead on a thread of its own,
            // so that rendering behind the kernel does not lose events.
            let src = if o.follow && t.is_live() && o.reading.pace.is_none() {
                trbox::sys::prefetch::read_ahead(src, layout, endian)
            } else {
                Box::new(src)
            };
            let mut s = CpuPages::new(cpu, src, layout, endian);
            s.follow = o.follow;
            streams.push(s);
        }
        reading()?;
        let trace = open_tree_with(t, header, endian, o.reading.systems)?;
        let tracer = t.read_opt("current_tracer")?.unwrap_or_default();
        let options = t.read_opt("trace_options").ok().flatten().unwrap_or_default();
        let graph = (tracer.trim() == "function_graph").then(|| GraphOpts::from_trace_options(&options));
        let irq_info = !options.split_ascii_whitespace().any(|o| o == "noirq-info");
        Ok(Input {
            kernel: KernelFacts::new(trace.kernel.version, Some(t.top().to_path_buf()), t.is_live()),
            trace,
            graph,
            irq_info,
            graph_auto: false,
            #[cfg(feature = "host")]
            saved_cmdlines: t.read_top_opt("saved_cmdlines")?.unwrap_or_default(),
            #[cfg(feature = "host")]
            uname: ["uname", "version"].iter().find_map(|f| t.read_top_opt(f).ok().flatten()),
            streams,
            tree: t.is_live().then_some(t),
            buffers: Vec::new(),
            labels: Vec::new(),
            empty_note: None,
        })
    }

    /// A trace.dat file: the buffer `instance` (`""` = the top one), or by
    /// default every buffer that holds data, merged by time. `applet` names
    /// who says so on stderr when they hold no event.
    pub fn trace_dat(applet: &str, path: &Path, instance: Option<&str>, o: &RawOpts) -> Result<Self, Error> {
        let io = |e: std::io::Error| Error::runtime(format!("{}: {}", path.display(), trbox::sys::describe(&e)));
        // A stream is rebuilt as a trace.dat in an anonymous file, read
        // like any other (one reader in the binary, not one per source).
        let mem = match crate::stream_in::load_stream(path)? {
            Some(b) => Some(trbox::sys::anonymous_file(&b).map_err(io)?),
            None => None,
        };
        let open = || -> Result<std::fs::File, Error> {
            match &mem {
                Some(m) => m.try_clone().map_err(io),
                None => Ok(dat_file(path)?),
            }
        };
        let mut td = read_dat_from(&mut open()?, path)?;
        let mut trace = dat_session(&mut td, path)?;
        let shown = |i: &&Instance| -> bool { instance.map_or(i.data_bytes() > 0, |n| i.name == n) };
        let mut chosen: Vec<&Instance> = td.instances.iter().filter(shown).collect();
        if chosen.is_empty() {
            if let Some(name) = instance {
                let names: Vec<&str> = td.instances.iter().map(|i| buffer_name(&i.name)).collect();
                return Err(Error::runtime(format!(
                    "{}: no buffer '{name}' (it has: {})",
                    path.display(),
                    names.join(", ")
                ))
                .hint("-B NAME picks one; -B '' the top buffer; without -B every buffer is shown"));
            }
            // No buffer holds data: the note below names them all.
            chosen = td.instances.iter().collect();
        }
        // The top buffer first, then the instances in file order.
        let (mut top, named): (Vec<_>, Vec<_>) = chosen.into_iter().partition(|i| i.name.is_empty());
        top.extend(named);
        chosen = top;
        let on_cpus = if o.only.is_some() { " on the CPUs of --cpus" } else { "" };
        let empty_note = Some(match chosen.as_slice() {
            [one] if one.name.is_empty() => {
                format!("{applet}: {}: no events in the top buffer{on_cpus}", path.display())
            }
            [one] => format!("{applet}: {}: no events in buffer '{}'{on_cpus}", path.display(), one.name),
            all => {
                let names: Vec<&str> = all.iter().map(|i| buffer_name(&i.name)).collect();
                format!("{applet}: {}: no events in any of its buffers{on_cpus}: {}", path.display(), names.join(", "))
            }
        });
        // The streams of all buffers in one merge, the top buffer first:
        // equal timestamps go to it, as in `trace-cmd report`.
        let mut streams = Vec::new();
        for (b, inst) in chosen.iter().enumerate() {
            for (idx, c) in inst.cpus.iter().enumerate() {
                if o.only.as_ref().is_some_and(|only| !only.contains(&c.cpu)) {
                    continue;
                }
                let Some(pages) = td.pages(inst, idx) else { continue };
                let src = FilePages { file: open()?, pages, path: path.into() };
                let mut s = CpuPages::new(c.cpu, Box::new(src), trace.layout, trace.endian);
                s.buffer = b as u32;
                streams.push(s);
            }
        }
        // Each buffer may have its own clock; the file's is the default.
        let clock_of = |i: &Instance| i.clock.clone().unwrap_or_else(|| trace.clock.clone());
        let clock = chosen.first().map_or_else(|| "local".into(), |i| clock_of(i));
        if chosen.iter().any(|i| clock_of(i) != clock) {
            log::warn!("{}: the buffers use different trace clocks: merged by raw timestamp", path.display());
        }
        trace.clock = clock;
        let (buffers, labels) = if chosen.len() > 1 {
            // `trace-cmd report`: the name right-aligned to the longest
            // instance name of the file, then ": "; blanks for the top.
            let width = td.instances.iter().map(|i| i.name.len()).max().unwrap_or(0);
            let labels = chosen
                .iter()
                .map(|i| if i.name.is_empty() { " ".repeat(width + 2) } else { format!("{:>width$}: ", i.name) })
                .collect();
            (chosen.iter().map(|i| i.name.clone()).collect(), labels)
        } else {
            (Vec::new(), Vec::new())
        };
        Ok(Input {
            kernel: KernelFacts::new(trace.kernel.version, None, false).with_btf(std::mem::take(&mut td.btf)),
            trace,
            // trace.dat keeps no tracer name: graph records mean a graph trace.
            graph: Some(GraphOpts::default()),
            irq_info: true,
            graph_auto: true,
            #[cfg(feature = "host")]
            saved_cmdlines: String::from_utf8_lossy(&td.saved_cmdlines).into_owned(),
            #[cfg(feature = "host")]
            uname: td.options.uname.clone(),
            streams,
            tree: None,
            buffers,
            labels,
            empty_note,
        })
    }
}

/// A buffer's name as a person reads it.
fn buffer_name(name: &str) -> &str {
    if name.is_empty() {
        "(top)"
    } else {
        name
    }
}

impl Input<'_> {
    /// Render the function_graph layout whatever the tree's tracer says
    /// (tr-graph on a copy), once funcgraph records show up.
    pub fn graph_layout(mut self) -> Self {
        if self.graph.is_none() {
            self.graph = Some(GraphOpts::default());
            self.graph_auto = true;
        }
        self
    }

    /// The graph options in use, if the graph layout is.
    pub fn graph_opts(&self) -> Option<GraphOpts> {
        self.graph
    }
}

/// Decode and print until the streams are empty (drain) or, when
/// following, until Ctrl-C, the time limit or `done()` says so.
/// Print the records; whether anything (a record, a loss) was printed.
pub fn run(input: Input<'_>, o: &RawOpts, done: &dyn Fn() -> bool) -> Result<bool, Error> {
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
    let mut out = Out::stdout();
    let mut merger = Merger::new(streams.len());
    // A buffer read to its end (a file, a copy, a drain) renders on every
    // CPU; a followed one prints each line as it comes. The graph layout
    // folds records in order, so it stays on this thread.
    let draining = !streams.iter().any(|s| s.follow);
    let threads =
        if draining { o.threads.unwrap_or_else(|| trbox::sys::thread::cpus_available().min(MAX_THREADS)) } else { 1 };
    if threads > 1 && !(em.graph.is_some() && em.graph_on && !o.json) {
        let is_graph = |p: &[u8]| events.record_id(p, endian).is_some_and(|id| graph_ids.contains(&id));
        let watch = (em.graph.is_some() && !o.json).then_some(&is_graph as &dyn Fn(&[u8]) -> bool);
        crate::pool::run(&mut streams, &mut merger, watch, threads, &plain, &mut out);
    }
    drive(&mut streams, &mut merger, tree, o, done, &mut out, &mut em)?;
    note_if_empty(&streams, empty_note);
    let shown = out.wrote();
    out.finish()?;
    Ok(shown)
}

/// Never silently nothing: say so when the streams held no item at all.
fn note_if_empty(streams: &[CpuPages], note: Option<String>) {
    let seen = |s: &CpuPages| s.counts.records + s.counts.lost + s.counts.lost_unknown + s.counts.damaged;
    if let Some(n) = note.filter(|_| streams.iter().map(seen).sum::<u64>() == 0) {
        eprintln!("{n}");
    }
}

/// Most threads that render a drained buffer unless -j says.
const MAX_THREADS: usize = 8;

/// One kept record (or a loss) of a collecting run, in merged order.
/// `buffer` indexes [`Meta::buffers`].
pub enum Item<'a> {
    Record {
        buffer: u32,
        cpu: u32,
        ts: u64,
        payload: &'a [u8],
    },
    /// `count`: how many, when the page header said.
    Lost {
        buffer: u32,
        cpu: u32,
        ts: u64,
        count: Option<u64>,
    },
}

/// What a collector gets besides the records, and back at the end to print
/// names: the session itself and the buffers' names.
pub struct Meta {
    pub trace: Opened,
    /// The names of the buffers the items come from, when several.
    pub buffers: Vec<String>,
    /// Where the common fields are (the same in every format of a kernel):
    /// located once, not for each record.
    common: Option<CommonFields>,
    /// Read by the Perfetto writer (host builds).
    #[cfg(feature = "host")]
    pub uname: Option<String>,
    #[cfg(feature = "host")]
    pub saved_cmdlines: String,
}

impl Meta {
    /// A dense index for per-CPU state of (buffer, CPU): two buffers have
    /// the same CPUs, and their records interleave in the merge.
    pub fn slot(&self, buffer: u32, cpu: u32) -> u32 {
        buffer.saturating_mul(self.trace.cpus.max(1)).saturating_add(cpu)
    }

    /// The pid of record `payload`, an event `ev`.
    pub fn pid(&self, ev: &trbox::format::EventFormat, payload: &[u8]) -> i32 {
        self.common.unwrap_or_else(|| CommonFields::of(ev)).read(self.trace.endian, payload).2
    }
}

/// Like [`run`], but hand every kept record to `f` instead of printing it
/// (aggregations print at the end). Returns the metadata for the names.
pub fn collect(
    input: Input<'_>,
    o: &RawOpts,
    done: &dyn Fn() -> bool,
    f: &mut dyn FnMut(&Meta, Item<'_>),
) -> Result<Meta, Error> {
    let Input {
        trace,
        mut streams,
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
        #[cfg(feature = "host")]
        uname,
        #[cfg(feature = "host")]
        saved_cmdlines,
    };
    let prepared = o.filter.prepare(&meta.trace.events);
    let mut c = Collector { meta, f, o, prepared, stacks: Default::default() };
    let mut out = Out::stdout();
    let mut merger = Merger::new(streams.len());
    drive(&mut streams, &mut merger, tree, o, done, &mut out, &mut c)?;
    note_if_empty(&streams, empty_note);
    out.finish()?;
    Ok(c.meta)
}

/// poll() readiness on trace_pipe_raw follows `buffer_percent`: a trickle
/// below it is still looked for this often.
const WAIT_TICK: Duration = Duration::from_millis(250);

/// What the drive loop feeds.
trait Consumer {
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
    done: &dyn Fn() -> bool,
    out: &mut Out,
    c: &mut dyn Consumer,
) -> Result<(), Error> {
    let wake = signals::install().map_err(|e| Error::runtime(format!("cannot install signal handlers: {e}")))?;
    let start = Instant::now();
    // The trace clock at the stop: the last drain ends there. Tracing is
    // still on then, and reading the buffer can itself make events (a
    // syscall event of read(), a sched_switch): without a bound, draining
    // an event its own reads cause never ends.
    let mut until = None;
    let stopping = || signals::stop_requested().is_some() || o.limit.is_some_and(|l| start.elapsed() >= l) || done();
    // Following live, the comms are read again now and then: a busy buffer
    // may never leave the loop idle (where they are read too), and tasks
    // born in the window (a command's exec) are named after the first look.
    let (mut turns, mut comms_at) = (0u32, None::<Instant>);
    let comms = |c: &mut dyn Consumer| {
        if let Some(Ok(Some(text))) = tree.map(|t| t.read_top_opt("saved_cmdlines")) {
            c.cmdlines(Cmdlines::parse(&text));
        }
    };
    loop {
        turns = turns.wrapping_add(1);
        if turns % 1024 == 1 && comms_at.map_or(true, |at| at.elapsed() >= Duration::from_millis(100)) {
            comms(c);
            comms_at = Some(Instant::now());
        }
        let stop = stopping();
        if out.broken() {
            break;
        }
        if stop && streams.iter().any(|s| s.follow) {
            // Ctrl-C / time limit / the command ended: print what is
            // buffered, then end.
            streams.iter_mut().for_each(|s| s.follow = false);
            until = tree.and_then(Tracefs::now);
        }
        match merger.next(streams) {
            merge::Next::Cpu(i) => {
                let s = &mut streams[i];
                if until.is_some_and(|u| s.peek_ts().ok().flatten().is_some_and(|ts| ts > u)) {
                    // Merged order: everything left is newer still.
                    break;
                }
                c.emit(s, out)
            }
            merge::Next::End => break,
            merge::Next::Pending(_) => {
                let _ = out.flush();
                let left = o.limit.map_or(Duration::from_secs(3600), |l| l.saturating_sub(start.elapsed()));
                wait_for_data(streams, Some(wake), left.min(o.reading.pace.unwrap_or(WAIT_TICK)));
                // New tasks appeared meanwhile: their comms too.
                comms(c);
                // An idle CPU must not hold the others back for ever. What
                // is ready can grow as fast as it is read (events of our own
                // reads): a stop must still get through.
                while !stopping() && !out.broken() {
                    let merge::Next::Cpu(i) = merger.next_ready(streams) else { break };
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
            "cpu{}: {} pages, {} records, {} damaged, {} lost (+{} pages with an unknown loss)",
            s.cpu,
            c.pages,
            c.records,
            c.damaged,
            c.lost,
            c.lost_unknown
        );
    }
    if let Some(e) = streams.iter_mut().find_map(|s| s.error.take()) {
        return Err(e.into());
    }
    Ok(())
}

struct Collector<'f> {
    meta: Meta,
    f: &'f mut dyn FnMut(&Meta, Item<'_>),
    o: &'f RawOpts,
    prepared: crate::emit::Prepared,
    stacks: crate::emit::StackVerdicts,
}

impl Consumer for Collector<'_> {
    fn emit(&mut self, s: &mut CpuPages, _: &mut Out) {
        let (buffer, cpu, m, o) = (s.buffer, s.cpu, &self.meta, self.o);
        match s.take() {
            Some(Next::Record(rec)) => {
                let t = &m.trace;
                let Some(ev) = t.events.event_of(rec.payload, t.endian) else { return };
                let pid = m.pid(ev, rec.payload);
                let keep = !o.since.is_some_and(|t0| rec.ts < t0)
                    && o.filter.keep(&self.prepared, ev, rec.payload, t.endian, pid, &t.cmdlines);
                if !self.stacks.keep(buffer, cpu, ev, keep) {
                    return;
                }
                (self.f)(m, Item::Record { buffer, cpu, ts: rec.ts, payload: rec.payload });
            }
            Some(Next::Lost { ts, count }) if !o.since.is_some_and(|t0| ts < t0) => {
                (self.f)(m, Item::Lost { buffer, cpu, ts, count })
            }
            Some(Next::Damaged(e)) => log::warn!("cpu{cpu}: skipped a damaged page: {e}"),
            _ => {}
        }
    }

    fn cmdlines(&mut self, c: Cmdlines) {
        self.meta.trace.cmdlines = c;
    }
}

impl Consumer for Emitter<'_> {
    fn emit(&mut self, s: &mut CpuPages, out: &mut Out) {
        Emitter::emit(self, s, out)
    }

    fn cmdlines(&mut self, c: Cmdlines) {
        self.p.r.set_cmdlines(c);
    }
}
