//! Perfetto's protobuf trace format, written by hand (no protobuf crate):
//! `Trace { repeated TracePacket packet = 1 }`, the ftrace events of each
//! CPU in `FtraceEventBundle`s, thread names in a `ProcessTree`, the
//! kernel in `SystemInfo.utsname`. Field numbers are those of Perfetto's
//! protos (protos/perfetto/trace/trace_packet.proto,
//! ftrace/ftrace_event_bundle.proto, ftrace/ftrace_event.proto,
//! ftrace/sched.proto, task.proto, irq.proto, ftrace.proto,
//! generic.proto, ps/process_tree.proto, system_info.proto).
//!
//! Each event format is mapped once ([`Plan`]): the events Perfetto has a
//! typed message for (sched_switch, the wakeups, fork/exit/free, task
//! newtask/rename, irq/softirq entry/exit, print, funcgraph entry/exit)
//! copy their fields by name; every other event is a `GenericFtraceEvent`
//! with all its fields. Timestamps are written as the trace clock gave
//! them, in the bundle's default clock (boot time to Perfetto): one trace
//! file is consistent in itself.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use crate::abi::Endian;
use crate::format::{EventFormat, Field, FieldKind};

/// Wire types.
const VARINT: u32 = 0;
const LEN: u32 = 2;

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn key(out: &mut Vec<u8>, field: u32, wire: u32) {
    varint(out, u64::from(field << 3 | wire));
}

/// An integer field (int32, int64, uint32, uint64: the same varint; a
/// negative int32 takes ten bytes, as protobuf says).
pub fn put_int(out: &mut Vec<u8>, field: u32, v: u64) {
    key(out, field, VARINT);
    varint(out, v);
}

/// A string, bytes or embedded message field.
pub fn put_bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    key(out, field, LEN);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// A string field: the text up to the first NUL, made valid UTF-8.
fn put_str(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    let b = b.split(|&c| c == 0).next().unwrap_or_default();
    match core::str::from_utf8(b) {
        Ok(s) => put_bytes(out, field, s.as_bytes()),
        Err(_) => put_bytes(out, field, String::from_utf8_lossy(b).as_bytes()),
    }
}

/// `FtraceEvent` fields.
mod ev {
    pub const TIMESTAMP: u32 = 1;
    pub const PID: u32 = 2;
    pub const GENERIC: u32 = 327;
}

/// How a field is copied: an integer, a string, a kernel address as the
/// iid of its interned symbol name.
const INT: u8 = 0;
const STR: u8 = 1;
const KSYM: u8 = 2;

/// Typed events: (system, name, FtraceEvent field, [(format field, proto
/// field, how)]).
type Typed = (&'static str, &'static str, u32, &'static [(&'static str, u32, u8)]);
const WAKE: &[(&str, u32, u8)] =
    &[("comm", 1, STR), ("pid", 2, INT), ("prio", 3, INT), ("success", 4, INT), ("target_cpu", 5, INT)];
const TYPED: &[Typed] = &[
    (
        "sched",
        "sched_switch",
        4,
        &[
            ("prev_comm", 1, STR),
            ("prev_pid", 2, INT),
            ("prev_prio", 3, INT),
            ("prev_state", 4, INT),
            ("next_comm", 5, STR),
            ("next_pid", 6, INT),
            ("next_prio", 7, INT),
        ],
    ),
    ("sched", "sched_waking", 20, WAKE),
    ("sched", "sched_wakeup", 17, WAKE),
    ("sched", "sched_wakeup_new", 114, WAKE),
    (
        "sched",
        "sched_process_fork",
        239,
        &[("parent_comm", 1, STR), ("parent_pid", 2, INT), ("child_comm", 3, STR), ("child_pid", 4, INT)],
    ),
    ("sched", "sched_process_exit", 238, &[("comm", 1, STR), ("pid", 2, INT), ("tgid", 3, INT), ("prio", 4, INT)]),
    ("sched", "sched_process_free", 240, &[("comm", 1, STR), ("pid", 2, INT), ("prio", 3, INT)]),
    (
        "task",
        "task_newtask",
        235,
        &[("pid", 1, INT), ("comm", 2, STR), ("clone_flags", 3, INT), ("oom_score_adj", 4, INT)],
    ),
    (
        "task",
        "task_rename",
        236,
        &[("pid", 1, INT), ("oldcomm", 2, STR), ("newcomm", 3, STR), ("oom_score_adj", 4, INT)],
    ),
    ("irq", "irq_handler_entry", 36, &[("irq", 1, INT), ("name", 2, STR)]),
    ("irq", "irq_handler_exit", 37, &[("irq", 1, INT), ("ret", 2, INT)]),
    ("irq", "softirq_entry", 24, &[("vec", 1, INT)]),
    ("irq", "softirq_exit", 25, &[("vec", 1, INT)]),
    ("ftrace", "print", 3, &[("ip", 1, INT), ("buf", 2, STR)]),
    ("ftrace", "funcgraph_entry", 437, &[("depth", 1, INT), ("func", 2, KSYM)]),
    (
        "ftrace",
        "funcgraph_exit",
        438,
        &[("calltime", 1, INT), ("depth", 2, INT), ("func", 3, KSYM), ("overrun", 4, INT), ("rettime", 5, INT)],
    ),
];

/// How one event format becomes an `FtraceEvent` payload.
#[derive(Debug, Clone)]
pub enum Plan {
    /// A typed message: its FtraceEvent field, and (format field, proto
    /// field, as a string).
    Typed { field: u32, copies: Vec<(Field, u32, u8)> },
    /// `GenericFtraceEvent`: the event's name and its fields.
    Generic { name: String, fields: Vec<Field> },
}

impl Plan {
    pub(crate) fn of(f: &EventFormat) -> Plan {
        if let Some((_, _, field, map)) = TYPED.iter().find(|t| t.0 == f.system && t.1 == f.name) {
            let copies = map.iter().filter_map(|(n, p, s)| f.field(n).map(|x| (x.clone(), *p, *s))).collect();
            return Plan::Typed { field: *field, copies };
        }
        Plan::Generic { name: f.name.clone(), fields: f.fields.clone() }
    }
}

/// A field's bytes; a trailing `char buf[]` (size 0) runs to the record's
/// end.
fn field_bytes<'a>(f: &Field, rec: &'a [u8], e: Endian) -> &'a [u8] {
    if let FieldKind::Array { .. } = f.kind {
        if f.size == 0 {
            return rec.get(f.offset as usize..).unwrap_or_default();
        }
    }
    f.bytes(rec, e).unwrap_or_default()
}

fn is_text(f: &Field) -> bool {
    f.type_name.contains("char") && !matches!(f.kind, FieldKind::Scalar)
}

/// The payload of one event of `plan` from record `rec`; kernel addresses
/// get the iid of their name in `ksyms`.
fn encode_payload(plan: &Plan, rec: &[u8], e: Endian, out: &mut Vec<u8>, ksyms: &mut BTreeMap<u64, u64>) -> u32 {
    match plan {
        Plan::Typed { field, copies } => {
            for (f, p, how) in copies {
                if *how == STR {
                    put_str(out, *p, field_bytes(f, rec, e));
                } else if let Some(v) = f.int(rec, e) {
                    let v = if *how == KSYM {
                        let next = ksyms.len() as u64 + 1;
                        *ksyms.entry(v as u64).or_insert(next)
                    } else {
                        v as u64
                    };
                    put_int(out, *p, v);
                }
            }
            *field
        }
        Plan::Generic { name, fields } => {
            put_bytes(out, 1, name.as_bytes());
            let mut one = Vec::new();
            for f in fields {
                one.clear();
                put_bytes(&mut one, 1, f.name.as_bytes());
                if is_text(f) {
                    put_str(&mut one, 3, field_bytes(f, rec, e));
                } else if matches!(f.kind, FieldKind::Scalar) && f.size <= 8 {
                    match f.int(rec, e) {
                        Some(v) if f.signed => put_int(&mut one, 4, v as u64),
                        Some(v) => put_int(&mut one, 5, v as u64),
                        None => continue,
                    }
                } else {
                    // An array of numbers: its bytes in hex.
                    let mut hex = String::new();
                    for b in field_bytes(f, rec, e) {
                        hex.push_str(&alloc::format!("{b:02x}"));
                    }
                    put_bytes(&mut one, 3, hex.as_bytes());
                }
                put_bytes(out, 2, &one);
            }
            ev::GENERIC
        }
    }
}

/// Bundle bytes at which a CPU's events go out as one packet.
const BUNDLE_BYTES: usize = 64 * 1024;

/// Builds a Perfetto trace: events in per-CPU bundles (each CPU's in time
/// order), then the thread names and the system info.
#[derive(Default)]
pub struct TraceBuilder {
    out: Vec<u8>,
    bundles: BTreeMap<u32, Vec<u8>>,
    plans: BTreeMap<u32, Plan>,
    scratch: Vec<u8>,
    /// Kernel addresses seen in funcgraph events, and their iids.
    ksyms: BTreeMap<u64, u64>,
    pub(crate) events: u64,
}

/// trusted_packet_sequence_id of every packet (one writer).
const SEQ: u64 = 1;

impl TraceBuilder {
    pub(crate) fn new() -> TraceBuilder {
        TraceBuilder::default()
    }

    /// One event: `rec` is the record payload (from `common_type` on).
    pub fn event(&mut self, f: &EventFormat, cpu: u32, ts: u64, pid: i32, rec: &[u8], e: Endian) {
        let plan = self.plans.entry(f.id).or_insert_with(|| Plan::of(f));
        self.scratch.clear();
        let field = encode_payload(plan, rec, e, &mut self.scratch, &mut self.ksyms);
        let b = self.bundles.entry(cpu).or_default();
        let mut one = Vec::with_capacity(self.scratch.len() + 16);
        put_int(&mut one, ev::TIMESTAMP, ts);
        put_int(&mut one, ev::PID, pid as u32 as u64);
        put_bytes(&mut one, field, &self.scratch);
        put_bytes(b, 2, &one);
        self.events += 1;
        if b.len() >= BUNDLE_BYTES {
            self.flush_cpu(cpu);
        }
    }

    fn flush_cpu(&mut self, cpu: u32) {
        let Some(b) = self.bundles.get_mut(&cpu) else {
            return;
        };
        if b.is_empty() {
            return;
        }
        let mut bundle = Vec::with_capacity(b.len() + 8);
        put_int(&mut bundle, 1, u64::from(cpu));
        bundle.extend_from_slice(b);
        b.clear();
        let mut packet = Vec::with_capacity(bundle.len() + 8);
        put_bytes(&mut packet, 1, &bundle);
        put_int(&mut packet, 10, SEQ);
        put_bytes(&mut self.out, 1, &packet);
    }

    /// The trace's bytes: the names of the kernel functions the events
    /// point at (`symbol` resolves an address; interned, before the events
    /// that use them), the events, the thread names (`(tid, comm)`) and
    /// the kernel (`uname`: "sysname nodename release version… machine").
    pub fn finish(
        mut self,
        threads: &[(i32, &str)],
        uname: Option<&str>,
        symbol: &dyn Fn(u64) -> Option<String>,
    ) -> Vec<u8> {
        let cpus: Vec<u32> = self.bundles.keys().copied().collect();
        for c in cpus {
            self.flush_cpu(c);
        }
        // InternedData.kernel_symbols (26): InternedString { iid 1, str 2 },
        // in a packet that starts the sequence's incremental state.
        let mut interned = Vec::new();
        for (addr, iid) in &self.ksyms {
            let name = symbol(*addr).unwrap_or_else(|| alloc::format!("0x{addr:x}"));
            let mut one = Vec::new();
            put_int(&mut one, 1, *iid);
            put_bytes(&mut one, 2, name.as_bytes());
            put_bytes(&mut interned, 26, &one);
        }
        let mut packet = Vec::new();
        if !interned.is_empty() {
            put_bytes(&mut packet, 12, &interned);
        }
        put_int(&mut packet, 13, 1);
        put_int(&mut packet, 10, SEQ);
        let mut first = Vec::with_capacity(packet.len() + 8 + self.out.len());
        put_bytes(&mut first, 1, &packet);
        first.extend_from_slice(&self.out);
        self.out = first;
        if !threads.is_empty() {
            let mut tree = Vec::new();
            for (tid, name) in threads {
                let mut t = Vec::new();
                put_int(&mut t, 1, *tid as u32 as u64);
                put_str(&mut t, 2, name.as_bytes());
                put_bytes(&mut tree, 2, &t);
            }
            let mut packet = Vec::new();
            put_bytes(&mut packet, 2, &tree);
            put_int(&mut packet, 10, SEQ);
            put_bytes(&mut self.out, 1, &packet);
        }
        if let Some(u) = uname {
            let w: Vec<&str> = u.split_whitespace().collect();
            if w.len() >= 3 {
                let mut uts = Vec::new();
                put_str(&mut uts, 1, w[0].as_bytes());
                if w.len() >= 5 {
                    put_str(&mut uts, 2, w[3..w.len() - 1].join(" ").as_bytes());
                    put_str(&mut uts, 4, w[w.len() - 1].as_bytes());
                }
                put_str(&mut uts, 3, w[2].as_bytes());
                let mut si = Vec::new();
                put_bytes(&mut si, 1, &uts);
                let mut packet = Vec::new();
                put_bytes(&mut packet, 45, &si);
                put_int(&mut packet, 10, SEQ);
                put_bytes(&mut self.out, 1, &packet);
            }
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints() {
        let mut v = Vec::new();
        varint(&mut v, 300);
        assert_eq!(v, [0xac, 0x02]);
        v.clear();
        put_int(&mut v, 1, -1i64 as u64);
        assert_eq!(v.len(), 11);
    }
}
