//! Where a [`Reader`]'s records come from, as the applets open them: the
//! per-CPU raw pages of a tracefs tree (the live one or a copy), or the
//! buffers of a trace.dat (a trbox stream or a console log rebuilt as
//! one), with the session that decodes them.

use super::opts::RawOpts;
use super::problems::UnknownEvents;
use super::reader::{Reader, Session};
use crate::abi::Endian;
use crate::graph::GraphOpts;
use crate::page::PageLayout;
use crate::sys::error::{describe, Error};
use crate::sys::pages::{CpuPages, FilePages};
use crate::sys::raw::RawPages;
use crate::sys::trace::header_page;
use crate::sys::trace::{dat_file, dat_session, open_tree_texts, read_dat_from, KernelFacts};
use crate::sys::Tracefs;
use crate::tracedat::Instance;
use std::path::Path;

impl Reader {
    /// The per-CPU raw pages of a tracefs tree.
    pub(crate) fn of_tree(t: &Tracefs, o: &RawOpts) -> Result<Self, Error> {
        Self::of_tree_then(t, o, &|| Ok(()))
    }

    /// [`of_tree`](Self::of_tree), calling `reading` once the raw pages are being
    /// read and before the rest (formats, comms) is: a command released
    /// there fills no buffer unread, and its comm is already saved when the
    /// comms are read.
    pub(crate) fn of_tree_then<E: From<Error>>(
        t: &Tracefs,
        o: &RawOpts,
        reading: &dyn Fn() -> Result<(), E>,
    ) -> Result<Self, E> {
        // One copy of the opening for every caller's error type (the
        // board's binary size): the callback's error waits here.
        let mut failed = None;
        let opened = Self::open_tree(t, o, &mut || match reading() {
            Ok(()) => true,
            Err(e) => {
                failed = Some(e);
                false
            }
        });
        match (failed, opened) {
            (Some(e), _) => Err(e),
            // (None comes only with `failed` set.)
            (None, r) => Ok(r?.ok_or(Error::Output(std::io::ErrorKind::Other.into()))?),
        }
    }

    /// [`of_tree_then`](Self::of_tree_then); `None` when `reading` said no.
    fn open_tree(t: &Tracefs, o: &RawOpts, reading: &mut dyn FnMut() -> bool) -> Result<Option<Self>, Error> {
        let header = header_page(t)?;
        let layout = PageLayout::from(&header);
        let cpus = t.cpus()?;
        no_cpu(t.dir(), o, &cpus)?;
        let mut sources = Vec::new();
        for cpu in cpus {
            if o.only.as_ref().is_some_and(|only| !only.contains(&cpu)) {
                continue;
            }
            let rel = format!("per_cpu/cpu{cpu}/trace_pipe_raw");
            // A copy may hold only some CPUs; an instance made while a CPU
            // was offline has no pages for it (tracefs lists every possible
            // CPU): nothing to read there either.
            let s = match RawPages::open(&t.path(&rel), layout.subbuf_size(), t.is_live()) {
                Ok(mut s) => (!t.is_live() || s.has_buffer()?).then_some(s),
                Err(e) if e.errno() == Some(libc::ENOENT) => None,
                Err(e) => return Err(e),
            };
            match s {
                Some(s) => sources.push((cpu, s)),
                None => log::info!("{rel}: absent or no buffer, skipped"),
            }
        }
        // Live pages are in this machine's byte order; a copy's may come
        // from a big-endian board: the first page that tells, read through
        // the sources opened here (each file is opened and read once).
        let mut endian = None;
        if !t.is_live() {
            for (_, s) in sources.iter_mut() {
                endian = s.guess_endian(&layout)?;
                if endian.is_some() {
                    break;
                }
            }
        }
        let endian = endian.unwrap_or(Endian::NATIVE);
        let mut streams = Vec::new();
        for (cpu, src) in sources {
            // Following the live buffer: read ahead on a thread of its own,
            // so that rendering behind the kernel does not lose events.
            let src = if o.follow && t.is_live() && o.reading.pace.is_none() {
                crate::sys::prefetch::read_ahead(src, layout, endian)
            } else {
                Box::new(src)
            };
            let mut s = CpuPages::new(cpu, src, layout, endian);
            s.follow = o.follow;
            streams.push(s);
        }
        if !reading() {
            return Ok(None);
        }
        let enabled = if o.reading.enabled { t.enabled_systems() } else { Vec::new() };
        let enabled: Vec<&str> = enabled.iter().map(String::as_str).collect();
        let systems = match o.reading.systems {
            None if o.reading.enabled => Some(enabled.as_slice()),
            s => s,
        };
        let (trace, texts) = open_tree_texts(t, header, endian, systems, o.kernel.as_deref())?;
        // A board build writes no other format: the texts go unused.
        #[cfg(not(feature = "host"))]
        drop(texts);
        let tracer = t.read_opt("current_tracer")?.unwrap_or_default();
        let options = t.read_opt("trace_options").ok().flatten().unwrap_or_default();
        let graph = (tracer.trim() == "function_graph").then(|| GraphOpts::from_trace_options(&options));
        let irq_info = !options.split_ascii_whitespace().any(|o| o == "noirq-info");
        let session = Session {
            kernel: KernelFacts::new(trace.kernel.version, Some(t.top().to_path_buf()), t.is_live()),
            trace,
            graph,
            irq_info,
            graph_auto: false,
            #[cfg(feature = "host")]
            saved_cmdlines: texts.saved_cmdlines,
            #[cfg(feature = "host")]
            uname: texts.uname,
            buffers: Vec::new(),
            labels: Vec::new(),
            empty_note: None,
            empty: None,
            unknown: UnknownEvents::default(),
            trace_id: None,
        };
        let mut r = Reader::of(session, streams);
        // The live tree, to follow it: a view that changes nothing when
        // the read ends (the tree is the caller's).
        r.records.tree = t.is_live().then(|| t.view());
        Ok(Some(r))
    }

    /// A trace.dat file: the buffer `instance` (`""` = the top one), or by
    /// default every buffer that holds data, merged by time. `applet` names
    /// who says so on stderr when they hold no event.
    pub(crate) fn dat(applet: &str, path: &Path, instance: Option<&str>, o: &RawOpts) -> Result<Self, Error> {
        let io = |e: std::io::Error| Error::TraceDat { path: path.into(), what: describe(&e) };
        // A stream is rebuilt as a trace.dat in an anonymous file, read
        // like any other (one reader in the binary, not one per source).
        let mem = match super::stream_in::load_stream(path)? {
            Some(b) => Some(crate::sys::anonymous_file(&b).map_err(io)?),
            None => None,
        };
        let open = || -> Result<std::fs::File, Error> {
            match &mem {
                Some(m) => m.try_clone().map_err(io),
                None => Ok(dat_file(path)?),
            }
        };
        let mut td = read_dat_from(&mut open()?, path)?;
        let mut trace = dat_session(&mut td, path, o.kernel.as_deref())?;
        let shown = |i: &&Instance| -> bool { instance.map_or(i.data_bytes() > 0, |n| i.name == n) };
        let mut chosen: Vec<&Instance> = td.instances.iter().filter(shown).collect();
        if chosen.is_empty() {
            if let Some(name) = instance {
                let existing = td.instances.iter().map(|i| buffer_name(&i.name).to_string()).collect();
                return Err(Error::NoBuffer { path: path.into(), name: name.to_string(), existing });
            }
            // No buffer holds data: the note below names them all.
            chosen = td.instances.iter().collect();
        }
        // The top buffer first, then the instances in file order.
        let (mut top, named): (Vec<_>, Vec<_>) = chosen.into_iter().partition(|i| i.name.is_empty());
        top.extend(named);
        chosen = top;
        let mut cpus: Vec<u32> = chosen.iter().flat_map(|i| i.cpus.iter().map(|c| c.cpu)).collect();
        cpus.sort_unstable();
        cpus.dedup();
        no_cpu(path, o, &cpus)?;
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
                let src = FilePages { file: open()?.into(), pages, path: path.into() };
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
        let session = Session {
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
            buffers,
            labels,
            empty_note,
            empty: None,
            unknown: UnknownEvents::default(),
            trace_id: td.options.trace_id,
        };
        Ok(Reader::of(session, streams))
    }
}

/// A CPU of `o.only` that `cpus` (what `path` holds) lacks.
fn no_cpu(path: &Path, o: &RawOpts, cpus: &[u32]) -> Result<(), Error> {
    match o.only.iter().flatten().find(|c| !cpus.contains(c)) {
        Some(&cpu) => Err(Error::NoCpu { path: path.into(), cpu, existing: cpus.to_vec() }),
        None => Ok(()),
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

impl Reader {
    /// Render the function_graph layout whatever the tree's tracer says
    /// (tr-graph on a copy), once funcgraph records show up.
    pub(crate) fn graph_layout(mut self) -> Self {
        let s = &mut self.session;
        if s.graph.is_none() {
            s.graph = Some(GraphOpts::default());
            s.graph_auto = true;
        }
        self
    }

    /// The graph options in use, if the graph layout is.
    pub(crate) fn graph_opts(&self) -> Option<GraphOpts> {
        self.session.graph
    }
}
