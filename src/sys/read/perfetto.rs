//! The Perfetto sink (`tr-cat FILE -o OUT.pftrace`, host builds): every
//! kept record into Perfetto's protobuf trace format, written out as the
//! packets fill (the memory held is one bundle per CPU and a buffer of
//! written packets), with the threads' names from saved_cmdlines, the
//! system's from uname, and the functions' names from the session's
//! symbols. A plain file is converted by time slices on every CPU, as its
//! text is read (slices.rs): each slice its own packets, begun with a
//! cleared sequence state (its interned names, its first switch on each
//! CPU written whole), written in slice order.

use super::{collect, Entry, Out, RawOpts, Reader};
use crate::perfetto::TraceBuilder;
use crate::printfmt::SymbolLookup;
use crate::sys::error::Error;
use crate::sys::stop::Stop;
use std::io::Write;

/// Packet bytes gathered before a write.
const WRITE_BYTES: usize = 1 << 20;

/// What the sink wrote.
pub(crate) struct Written {
    /// Events written.
    pub(crate) events: u64,
    /// sched_switch and sched_waking events among them in compact form.
    pub(crate) compact: u64,
    /// The input held nothing at all: the note that says so
    /// ([`Session::empty`](super::Session::empty)).
    pub(crate) empty: Option<String>,
}

/// The name alone of the function at `a`, as the function_graph tracer
/// prints it (%ps).
fn name(symbols: &dyn SymbolLookup, a: u64) -> Option<String> {
    symbols.lookup(a).map(|s| s.name.to_string())
}

/// A builder for records of `buffers` buffers: with several, every event
/// is written whole ([`TraceBuilder::several_buffers`]).
fn builder(buffers: usize) -> TraceBuilder {
    let mut tr = TraceBuilder::new();
    if buffers > 1 {
        tr.several_buffers();
    }
    tr
}

/// Writes a Perfetto trace of what `r` holds to `out`, the file `path`
/// (named in errors). `stop` is asked before each record is read, as by
/// [`collect`], or between slices.
pub(crate) fn perfetto(
    r: Reader,
    o: &RawOpts,
    stop: &Stop<'_>,
    mut out: Out,
    path: &std::path::Path,
) -> Result<Written, Error> {
    let w = convert(r, o, stop, &mut out)?;
    out.finish().map_err(|e| match e {
        Error::Output(e) => Error::io(path, e),
        e => e,
    })?;
    Ok(w)
}

/// [`perfetto`]'s packets into `out`: by time slices where the input
/// allows, else through [`collect`] on this thread.
fn convert(r: Reader, o: &RawOpts, stop: &Stop<'_>, out: &mut Out) -> Result<Written, Error> {
    #[cfg(feature = "slices")]
    let mut r = r;
    #[cfg(feature = "slices")]
    if let Some((events, compact)) = sliced(&mut r, o, stop, out) {
        let Reader { session, records } = r;
        let session = session.finish(&records);
        tail(&session, out);
        return Ok(Written { events, compact, empty: session.empty });
    }
    let mut tr = builder(r.session.buffers.len());
    let session = collect(r, o, stop, &mut |m, it| match it {
        Entry::Event(ev) => {
            let (buffer, cpu, ts, payload) = (ev.buffer(), ev.cpu(), ev.ts(), ev.payload());
            let symbol = |a| name(&m.trace.symbols, a);
            tr.event(ev.format(), buffer, cpu, ts, ev.pid(), payload, m.trace.endian, &symbol);
            if tr.pending() >= WRITE_BYTES {
                let _ = out.write_all(&tr.take());
            }
        }
        Entry::Lost { buffer, cpu, .. } => tr.lost(buffer, cpu),
        // collect() hands over nothing else.
        Entry::Damaged { .. } | Entry::Unknown { .. } => {}
    })?;
    let (events, compact) = (tr.events, tr.compact);
    let _ = out.write_all(&tr.close());
    tail(&session, out);
    Ok(Written { events, compact, empty: session.empty })
}

/// The packets after the events: the threads' names (saved_cmdlines) and
/// the system's (uname).
fn tail(session: &super::Session, out: &mut Out) {
    let threads: Vec<(i32, &str)> = session
        .saved_cmdlines
        .lines()
        .filter_map(|l| l.trim().split_once(' ').and_then(|(p, c)| Some((p.parse().ok()?, c.trim()))))
        .collect();
    let _ = out.write_all(&crate::perfetto::tail(&threads, session.uname.as_deref()));
}

/// [`perfetto`]'s events by time slices: the events and those in compact
/// form; `None` (the reader untouched) when it is not a plain file, or
/// there is one CPU to convert on.
#[cfg(feature = "slices")]
fn sliced(r: &mut Reader, o: &RawOpts, stop: &Stop<'_>, out: &mut Out) -> Option<(u64, u64)> {
    let threads = super::slice_threads(o, r)?;
    let Reader { session, records } = r;
    let t = &session.trace;
    // funcgraph's function names are looked up on every worker.
    t.symbols.read_on(threads);
    let prepared = o.filter.prepare(&t.events);
    let total = std::sync::Mutex::new((0u64, 0u64));
    let make = || Slice {
        p: super::verdicts(session, o, &prepared),
        symbols: &t.symbols,
        tr: builder(session.buffers.len()),
        used: false,
    };
    let add = |s: Slice<'_>| {
        let mut g = total.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *g = (g.0 + s.tr.events, g.1 + s.tr.compact);
    };
    // The function_graph layout is the text's: each funcgraph record is
    // an event of its own here.
    let sliced =
        super::slices::run(&mut records.streams, t.layout, t.endian, None, threads, &make, &add, &|| stop.asked(), out);
    sliced.then(|| total.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner))
}

/// A worker's conversion of its slices: the kept records (the text's
/// verdicts) into its builder, which starts afresh at each slice, and its
/// packets into the slice's output.
#[cfg(feature = "slices")]
struct Slice<'a> {
    p: super::Plain<'a>,
    symbols: &'a crate::sys::kallsyms::LazyKallsyms,
    tr: TraceBuilder,
    /// The slice had anything to write.
    used: bool,
}

#[cfg(feature = "slices")]
impl super::slices::SliceSink for Slice<'_> {
    fn read_past(&mut self, buffer: u32, cpu: u32, ts: u64, payload: &[u8]) {
        let _ = self.p.kept(buffer, cpu, ts, payload);
    }

    fn record(&mut self, out: &mut Out, buffer: u32, cpu: u32, ts: u64, payload: &[u8]) {
        match self.p.kept(buffer, cpu, ts, payload) {
            super::Kept::Event(f) => {
                let (pid, symbols) = (self.p.r.pid(payload), self.symbols);
                self.tr.event(f, buffer, cpu, ts, pid, payload, self.p.endian, &|a| name(symbols, a));
                self.used = true;
                if self.tr.pending() >= WRITE_BYTES {
                    let _ = out.write_all(&self.tr.take());
                }
            }
            super::Kept::Unknown => self.p.unknown.count(self.p.events.record_id(payload, self.p.endian)),
            super::Kept::Dropped => {}
        }
    }

    fn lost(&mut self, _: &mut Out, buffer: u32, cpu: u32, ts: u64, _: Option<u64>) {
        if !self.p.o.since.is_some_and(|t0| ts < t0) {
            self.tr.lost(buffer, cpu);
            self.used = true;
        }
    }

    fn end(&mut self, out: &mut Out) {
        if std::mem::take(&mut self.used) {
            let _ = out.write_all(&self.tr.restart());
        }
    }
}
