//! The Perfetto sink (`tr-cat FILE -o OUT.pftrace`, host builds): every
//! kept record into Perfetto's protobuf trace format, written out as the
//! packets fill (the memory held is one bundle per CPU and a buffer of
//! written packets), with the threads' names from saved_cmdlines, the
//! system's from uname, and the functions' names from the session's
//! symbols.

use super::{collect, Entry, RawOpts, Reader};
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
    /// Bytes written.
    pub(crate) bytes: u64,
    /// The input held nothing at all: the note that says so
    /// ([`Session::empty`](super::Session::empty)).
    pub(crate) empty: Option<String>,
}

/// Writes a Perfetto trace of what `r` holds to `w` (the file
/// `path`, named in errors). `stop` is asked before each record is read,
/// as by [`collect`] (a caller counts the records so, for a progress
/// line).
pub(crate) fn perfetto(
    r: Reader,
    o: &RawOpts,
    stop: &Stop<'_>,
    w: &mut dyn Write,
    path: &std::path::Path,
) -> Result<Written, Error> {
    let mut tr = crate::perfetto::TraceBuilder::new();
    let mut bytes = 0u64;
    let mut failed: Option<std::io::Error> = None;
    let mut put = |b: &[u8], failed: &mut Option<std::io::Error>| {
        if failed.is_none() {
            if let Err(e) = w.write_all(b) {
                *failed = Some(e);
            }
        }
        bytes += b.len() as u64;
    };
    let session = collect(r, o, stop, &mut |m, it| match it {
        Entry::Event(ev) => {
            if m.buffers.len() > 1 {
                tr.several_buffers();
            }
            let symbol = |a: u64| {
                use crate::printfmt::SymbolLookup;
                // The name alone, as the function_graph tracer prints it (%ps).
                m.trace.symbols.lookup(a).map(|s| s.name.to_string())
            };
            let (buffer, cpu, ts, payload) = (ev.buffer(), ev.cpu(), ev.ts(), ev.payload());
            tr.event(ev.format(), buffer, cpu, ts, ev.pid(), payload, m.trace.endian, &symbol);
            if tr.pending() >= WRITE_BYTES {
                put(&tr.take(), &mut failed);
            }
        }
        Entry::Lost { buffer, cpu, .. } => tr.lost(buffer, cpu),
        // collect() hands over nothing else.
        Entry::Damaged { .. } | Entry::Unknown { .. } => {}
    })?;
    let threads: Vec<(i32, &str)> = session
        .saved_cmdlines
        .lines()
        .filter_map(|l| l.trim().split_once(' ').and_then(|(p, c)| Some((p.parse().ok()?, c.trim()))))
        .collect();
    let (events, compact) = (tr.events, tr.compact);
    let rest = tr.finish(&threads, session.uname.as_deref());
    put(&rest, &mut failed);
    if failed.is_none() {
        if let Err(e) = w.flush() {
            failed = Some(e);
        }
    }
    match failed {
        Some(e) => Err(Error::io(path, e)),
        None => Ok(Written { events, compact, bytes, empty: session.empty }),
    }
}
