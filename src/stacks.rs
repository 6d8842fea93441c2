//! Kernel stacks counted (sans-IO), for `tr-stack -e` and `tr-stack --func`.
//!
//! A `kernel_stack` record (from the `stacktrace` event trigger, or
//! `options/func_stack_trace` with the function tracer) is written right
//! after the record it was taken for, on the same CPU: the stack is counted
//! under that record's *origin* — the event's name, or for a `function`
//! record the traced function. Identical stacks (same origin, same frame
//! names once symbolized) are merged and listed most frequent first.
//!
//! Folded output (`root;…;caller;ORIGIN COUNT`) puts the outermost frame
//! first, as flamegraph.pl and speedscope expect, and the origin as the
//! leaf, so the picture shows who leads to the event or function. The
//! folded paths are encoded as tr-graph's are (`graph::stats`).

use crate::strmap::StrMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use crate::abi::{Abi, Endian};
use crate::format::{EventTable, FieldLoc};
use crate::graph::stats::{key_path, path_key, push_frame};
use crate::printfmt::SymbolLookup;

/// Frames kept per stack (the kernel stores at most a page of them).
const MAX_FRAMES: usize = 512;

/// CPUs tracked (records of higher CPU numbers count as origin unknown).
const MAX_CPUS: usize = 4096;

/// What a stack was taken for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Origin {
    /// The record before it was of this event id.
    Event(u32),
    /// A `function` record for this ip.
    Function(u64),
    /// No record before it on this CPU (the buffer started there, or
    /// events were lost).
    Unknown,
}

impl Origin {
    fn encode(self) -> [u64; 2] {
        match self {
            Origin::Unknown => [0, 0],
            Origin::Event(id) => [1, u64::from(id)],
            Origin::Function(ip) => [2, ip],
        }
    }

    fn decode(key: &[u64]) -> (Origin, &[u64]) {
        match key {
            [1, id, rest @ ..] => (Origin::Event(*id as u32), rest),
            [2, ip, rest @ ..] => (Origin::Function(*ip), rest),
            [_, _, rest @ ..] => (Origin::Unknown, rest),
            _ => (Origin::Unknown, &[]),
        }
    }
}

/// One distinct stack and how often it was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StackRow {
    /// `sys:event`, the traced function's name, or `?`.
    pub(crate) origin: String,
    /// Innermost frame first, as the kernel prints them.
    pub(crate) frames: Vec<String>,
    pub(crate) count: u64,
}

/// Counts stacks from a stream of records in merged order.
pub(crate) struct StackCounts {
    endian: Endian,
    long: usize,
    /// kernel_stack: (id, caller offset, size field).
    stack: Option<(u32, usize, FieldLoc)>,
    /// ftrace function: (id, ip field).
    function: Option<(u32, FieldLoc)>,
    /// Per CPU: what the next stack on it was taken for.
    last: Vec<Origin>,
    /// [origin tag, origin value, frames…] as a [`path_key`] → count.
    counts: StrMap,
    total: u64,
}

impl StackCounts {
    /// Finds the `ftrace:kernel_stack` and `ftrace:function` events and
    /// their fields in `events`; `abi` gives the byte order and the size
    /// of an address.
    pub(crate) fn new(events: &EventTable, abi: Abi) -> Self {
        let mut s = StackCounts {
            endian: abi.endian,
            long: abi.long_size as usize,
            stack: None,
            function: None,
            last: Vec::new(),
            counts: StrMap::new(),
            total: 0,
        };
        for ev in events.iter() {
            if ev.system != "ftrace" {
                continue;
            }
            match ev.name.as_str() {
                "kernel_stack" => {
                    if let (Some(c), Some(n)) = (ev.field("caller"), ev.field("size")) {
                        s.stack = Some((ev.id, c.offset as usize, n.loc()));
                    }
                }
                "function" => s.function = ev.field("ip").map(|f| (ev.id, f.loc())),
                _ => {}
            }
        }
        s
    }

    /// Feed one record of `cpu` (any event).
    pub(crate) fn record(&mut self, events: &EventTable, cpu: u32, payload: &[u8]) {
        let e = self.endian;
        let Some(id) = events.record_id(payload, e) else { return };
        match self.stack {
            Some((sid, start, size)) if sid == id => {
                let origin = self.take_last(cpu);
                let n = size.uint(payload, e).unwrap_or(0) as usize;
                let end = if self.long == 4 { u64::from(u32::MAX) } else { u64::MAX };
                // The record may hold more entries than `caller[8]` says;
                // the list ends at `size` entries or a ULONG_MAX marker.
                let long = self.long;
                let frames =
                    (0..n.min(MAX_FRAMES)).map_while(|i| e.uint(payload, start + i * long, long).filter(|&a| a != end));
                let slot = self.counts.entry(&path_key(origin.encode().into_iter().chain(frames)), 0);
                *slot += 1;
                self.total += 1;
            }
            _ => {
                let origin = match self.function {
                    Some((fid, ip)) if fid == id => Origin::Function(ip.uint(payload, e).unwrap_or(0)),
                    _ => Origin::Event(id),
                };
                if let Some(slot) = self.last_slot(cpu) {
                    *slot = origin;
                }
            }
        }
    }

    /// Events were lost on `cpu`: the next stack's origin is unknown.
    pub(crate) fn lost(&mut self, cpu: u32) {
        self.take_last(cpu);
    }

    fn last_slot(&mut self, cpu: u32) -> Option<&mut Origin> {
        let i = cpu as usize;
        if i >= MAX_CPUS {
            return None;
        }
        if self.last.len() <= i {
            self.last.resize(i + 1, Origin::Unknown);
        }
        self.last.get_mut(i)
    }

    fn take_last(&mut self, cpu: u32) -> Origin {
        self.last_slot(cpu).map_or(Origin::Unknown, |s| core::mem::replace(s, Origin::Unknown))
    }

    /// Stacks seen.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Distinct stacks by symbol names (`events` names the events), most
    /// frequent first (ties: by origin, then frames).
    pub(crate) fn rows(&self, events: &EventTable, syms: Option<&dyn SymbolLookup>) -> Vec<StackRow> {
        // Merged under one key text, origin and frames on lines of their own.
        let mut m = StrMap::new();
        for (k, n) in self.counts.iter() {
            let k: Vec<u64> = key_path(k).collect();
            let (origin, frames) = Origin::decode(&k);
            let mut key = match origin {
                Origin::Event(id) => match events.get(id) {
                    Some(ev) => alloc::format!("{}:{}", ev.system, ev.name),
                    None => alloc::format!("event {id}"),
                },
                Origin::Function(ip) => name(syms, ip),
                Origin::Unknown => String::from("?"),
            };
            for a in frames {
                key.push('\n');
                key.push_str(&name(syms, *a));
            }
            *m.entry(&key, 0) += n;
        }
        let mut v: Vec<StackRow> = m
            .iter()
            .map(|(key, count)| {
                let mut lines = key.split('\n');
                let origin = String::from(lines.next().unwrap_or(""));
                StackRow { origin, frames: lines.map(String::from).collect(), count }
            })
            .collect();
        // The keys are unique: an unstable sort is deterministic (and smaller).
        v.sort_unstable_by(|a, b| {
            b.count.cmp(&a.count).then_with(|| (&a.origin, &a.frames).cmp(&(&b.origin, &b.frames)))
        });
        v
    }
}

/// The table: each distinct stack with its count, most frequent first (as
/// [`StackCounts::rows`] gives them), then a summary line.
pub(crate) fn write_table<W: Write + ?Sized>(w: &mut W, rows: &[StackRow]) -> fmt::Result {
    for r in rows {
        writeln!(w, "{:>8}  {}", r.count, r.origin)?;
        for f in &r.frames {
            writeln!(w, "          => {f}")?;
        }
        w.write_char('\n')?;
    }
    let total: u64 = rows.iter().map(|r| r.count).sum();
    writeln!(w, "{total} stacks, {} distinct", rows.len())
}

/// Folded lines, outermost frame first and the origin last, one per
/// distinct line (sorted), weighted by count.
pub(crate) fn write_folded<W: Write + ?Sized>(w: &mut W, rows: &[StackRow]) -> fmt::Result {
    let mut m = StrMap::new();
    for r in rows {
        let mut line = String::new();
        for f in r.frames.iter().rev() {
            push_frame(&mut line, f);
            line.push(';');
        }
        push_frame(&mut line, &r.origin);
        *m.entry(&line, 0) += r.count;
    }
    for (line, n) in m.sorted() {
        writeln!(w, "{line} {n}")?;
    }
    Ok(())
}

/// A frame the way the kernel's `<stack trace>` shows it: the symbol name,
/// or the raw address.
fn name(syms: Option<&dyn SymbolLookup>, addr: u64) -> String {
    let mut s = String::new();
    match syms.and_then(|t| t.lookup(addr)) {
        Some(sym) => s.push_str(sym.name),
        None => {
            let _ = write!(s, "0x{addr:08x}");
        }
    }
    s
}
