//! The Perfetto sink (`tr-cat FILE -o OUT.pftrace`, host builds): every
//! kept record into Perfetto's protobuf trace format, with the threads'
//! names from saved_cmdlines, the system's from uname, and the functions'
//! names from the session's symbols.

use super::{collect, Input, Item, RawOpts};
use crate::sys::error::Error;

/// A Perfetto trace of what `input` holds: its bytes, and how many events
/// it has. `done` is asked before each record is read, as by [`collect`]
/// (a caller counts the records so, for a progress line).
pub fn perfetto(input: Input<'_>, o: &RawOpts, done: &dyn Fn() -> bool) -> Result<(Vec<u8>, u64), Error> {
    let mut tr = crate::perfetto::TraceBuilder::new();
    let meta = collect(input, o, done, &mut |m, it| {
        if let Item::Record { cpu, ts, payload, .. } = it {
            let endian = m.trace.endian;
            if let Some(ev) = m.trace.events.event_of(payload, endian) {
                tr.event(ev, cpu, ts, m.pid(ev, payload), payload, endian);
            }
        }
    })?;
    let threads: Vec<(i32, &str)> = meta
        .saved_cmdlines
        .lines()
        .filter_map(|l| l.trim().split_once(' ').and_then(|(p, c)| Some((p.parse().ok()?, c.trim()))))
        .collect();
    let events = tr.events;
    let symbol = |a: u64| {
        use crate::printfmt::SymbolLookup;
        // The name alone, as the function_graph tracer prints it (%ps).
        meta.trace.symbols.lookup(a).map(|s| s.name.to_string())
    };
    let bytes = tr.finish(&threads, meta.uname.as_deref(), &symbol);
    Ok((bytes, events))
}
