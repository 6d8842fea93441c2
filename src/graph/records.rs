//! The function_graph records: `ftrace/funcgraph_entry` (and
//! `fgraph_retaddr_entry`, the entry with funcgraph-retaddr) and
//! `ftrace/funcgraph_exit`, their fields found by name in each event's
//! format once, and one record decoded into a [`GraphRec`].

use alloc::vec::Vec;

use crate::abi::{Abi, Endian};
use crate::format::{EventFormat, EventTable, Field, FieldLoc as Loc};
use crate::render::CommonFields;

/// A graph record's field: a scalar of 1, 2, 4 or 8 bytes.
fn loc_of(f: &Field) -> Option<Loc> {
    matches!(f.size, 1 | 2 | 4 | 8).then(|| f.loc())
}

#[derive(Debug, Clone, Copy)]
struct EntLayout {
    id: u32,
    func: Loc,
    depth: Loc,
    /// Offset of `args[]` (6.15+: funcgraph-args fills it).
    args: Option<u32>,
}

#[derive(Debug, Clone, Copy)]
struct RetLayout {
    id: u32,
    func: Loc,
    depth: Loc,
    overrun: Option<Loc>,
    calltime: Option<Loc>,
    rettime: Option<Loc>,
    retval: Option<Loc>,
}

/// One decoded graph record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GraphRec {
    /// `funcgraph_entry`: a traced function was called.
    /// `args`: where the record's arguments start, when it carries them
    /// (funcgraph-args: `crate::kernel::FTRACE_REGS_MAX_ARGS` `long`s).
    Entry {
        /// `common_pid`: the task that made the call.
        pid: i32,
        /// The called function's address (`graph_ent.func`).
        func: u64,
        /// Call depth, 0 for the outermost function traced.
        depth: i64,
        /// Byte offset of the first argument in the payload.
        args: Option<u32>,
    },
    /// `funcgraph_exit`: a traced function returned.
    Exit {
        /// `common_pid`: the task that returned.
        pid: i32,
        /// The returning function's address.
        func: u64,
        /// Call depth, as its entry had.
        depth: i64,
        /// Returns the task's return stack lost (it was full): the entries
        /// and exits around it no longer pair.
        overrun: u64,
        /// Trace-clock time of the call.
        calltime: u64,
        /// Trace-clock time of the return; `rettime - calltime` is the
        /// duration printed.
        rettime: u64,
        /// The return value, where the format has a `retval` field (6.5+,
        /// CONFIG_FUNCTION_GRAPH_RETVAL).
        retval: Option<u64>,
    },
}

/// Finds the funcgraph events in an event table (by name, fields by name)
/// and decodes their records.
#[derive(Debug, Clone)]
pub(crate) struct GraphEvents {
    endian: Endian,
    long_mask: u64,
    ents: Vec<EntLayout>,
    rets: Vec<RetLayout>,
    pub(super) common: Option<CommonFields>,
    /// `common_type` location.
    type_loc: Option<Loc>,
}

fn field<'a>(ev: &'a EventFormat, name: &str) -> Option<&'a Field> {
    ev.field(name)
}

impl GraphEvents {
    /// Finds `funcgraph_entry`/`funcgraph_exit` in `events` and where each
    /// field lies, whatever the kernel version's layout; `abi` is the
    /// traced kernel's byte order and `long` size.
    pub(crate) fn new(events: &EventTable, abi: Abi) -> Self {
        let mut g = GraphEvents {
            endian: abi.endian,
            long_mask: abi.long_mask(),
            ents: Vec::new(),
            rets: Vec::new(),
            common: None,
            type_loc: None,
        };
        for ev in events.iter() {
            if g.common.is_none() {
                g.common = Some(CommonFields::of(ev));
                g.type_loc = ev.common.iter().find(|f| f.name == "common_type").and_then(loc_of);
            }
            if ev.system != "ftrace" {
                continue;
            }
            let loc = |n: &str| field(ev, n).and_then(loc_of);
            match ev.name.as_str() {
                "funcgraph_entry" | "fgraph_retaddr_entry" => {
                    if let (Some(func), Some(depth)) = (loc("func"), loc("depth")) {
                        let args = field(ev, "args").map(|f| f.offset);
                        g.ents.push(EntLayout { id: ev.id, func, depth, args });
                    }
                }
                "funcgraph_exit" => {
                    if let (Some(func), Some(depth)) = (loc("func"), loc("depth")) {
                        g.rets.push(RetLayout {
                            id: ev.id,
                            func,
                            depth,
                            overrun: loc("overrun"),
                            calltime: loc("calltime"),
                            rettime: loc("rettime"),
                            retval: loc("retval"),
                        });
                    }
                }
                _ => {}
            }
        }
        g
    }

    /// The event id of a record.
    pub(crate) fn record_id(&self, p: &[u8]) -> Option<u32> {
        self.type_loc.and_then(|l| l.uint(p, self.endian)).map(|v| v as u32)
    }

    /// (flags, preempt_count, pid) of any record.
    pub(crate) fn common(&self, p: &[u8]) -> (u8, u8, i32) {
        self.common.map_or((0, 0, 0), |c| c.read(self.endian, p))
    }

    /// Decode a graph record; `None` for other events (or a record too short
    /// for its func/depth fields).
    pub(crate) fn decode(&self, p: &[u8]) -> Option<GraphRec> {
        let id = self.record_id(p)?;
        let e = self.endian;
        let pid = self.common(p).2;
        if let Some(l) = self.ents.iter().find(|l| l.id == id) {
            // print_graph_entry_*(): `args_size >= FTRACE_REGS_MAX_ARGS *
            // sizeof(long)`, args_size being what follows `args` in the record.
            let long = if self.long_mask == u64::MAX { 8 } else { 4 };
            let args = l.args.filter(|&a| p.len() >= a as usize + crate::kernel::FTRACE_REGS_MAX_ARGS * long);
            return Some(GraphRec::Entry {
                pid,
                func: l.func.uint(p, e)? & self.long_mask,
                depth: l.depth.int(p, e)?,
                args,
            });
        }
        let l = self.rets.iter().find(|l| l.id == id)?;
        let opt = |x: Option<Loc>| x.and_then(|x| x.uint(p, e)).unwrap_or(0);
        Some(GraphRec::Exit {
            pid,
            func: l.func.uint(p, e)? & self.long_mask,
            depth: l.depth.int(p, e)?,
            overrun: opt(l.overrun),
            calltime: opt(l.calltime),
            rettime: opt(l.rettime),
            retval: l.retval.and_then(|x| x.uint(p, e)),
        })
    }

    pub(super) fn is_exit_id(&self, id: u32) -> bool {
        self.rets.iter().any(|l| l.id == id)
    }

    /// Whether `id` is a funcgraph entry or exit of this trace.
    pub(super) fn is_graph_id(&self, id: u32) -> bool {
        self.ents.iter().any(|l| l.id == id) || self.is_exit_id(id)
    }
}
