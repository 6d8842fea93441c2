//! Perfetto's protobuf trace format, written by hand (no protobuf crate):
//! `Trace { repeated TracePacket packet = 1 }`, the ftrace events of each
//! CPU in `FtraceEventBundle`s, thread names in a `ProcessTree`, the
//! kernel in `SystemInfo.utsname`. Field numbers are those of Perfetto's
//! protos (protos/perfetto/trace/trace_packet.proto,
//! ftrace/ftrace_event_bundle.proto, ftrace/ftrace_event.proto,
//! ftrace/sched.proto, raw_syscalls.proto, timer.proto, irq.proto,
//! ftrace.proto, ps/process_tree.proto, system_info.proto,
//! interned_data/interned_data.proto, google/protobuf/descriptor.proto),
//! and the encoding is the one of Perfetto's own recorder (traced_probes,
//! src/traced/probes/ftrace/cpu_reader.cc and compact_sched.cc):
//!
//! - packets go out as they fill ([`TraceBuilder::take`]): the memory
//!   held is one bundle per CPU, whatever the input's size;
//! - `sched_switch` and `sched_waking` go into the bundle's
//!   `compact_sched` columns (timestamps as deltas, comms interned in the
//!   bundle's table) when the reader can tell the event's task from the
//!   one the previous switch on that CPU put there (trace_processor's
//!   `PushSchedSwitchCompact` / `PushSchedWakingCompact` do), and are
//!   written whole otherwise (the first on a CPU, after a loss, a task
//!   that is not the one switched in, a timestamp that ties the previous);
//! - the events Perfetto has a typed message for are written in it (each
//!   field of the format has a field of the message, of the same kind);
//! - every other event is described once per bundle by a
//!   `GenericEventDescriptor` (a `DescriptorProto`: its name and its
//!   fields' names and types) and written as FtraceEvent field 65536 +
//!   its event id (the same in every bundle of the trace, as
//!   trace_processor wants, whoever wrote the bundle) with its values alone (the `denser_generic_event_encoding` of
//!   Perfetto v50+), not as `GenericFtraceEvent` with every name in every
//!   event;
//! - kernel addresses that name functions (funcgraph) are interned
//!   (`InternedData.kernel_symbols`), each defined in the first packet
//!   written after its first use.
//!
//! Timestamps are written as the trace clock gave them, in the bundle's
//! default clock (boot time to Perfetto): one trace file is consistent in
//! itself.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use crate::abi::Endian;
use crate::format::{EventFormat, Field, FieldKind};

/// Wire types.
const VARINT: u32 = 0;
const LEN: u32 = 2;

#[inline]
fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
fn key(out: &mut Vec<u8>, field: u32, wire: u32) {
    varint(out, u64::from(field << 3 | wire));
}

/// An integer field (int32, int64, uint32, uint64: the same varint; a
/// negative int32 takes ten bytes, as protobuf says).
#[inline]
pub(crate) fn put_int(out: &mut Vec<u8>, field: u32, v: u64) {
    key(out, field, VARINT);
    varint(out, v);
}

/// A string, bytes or embedded message field.
#[inline]
pub(crate) fn put_bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    key(out, field, LEN);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// The text of a C string: up to the first NUL.
fn c_str(b: &[u8]) -> &[u8] {
    b.split(|&c| c == 0).next().unwrap_or_default()
}

/// A string field: the text up to the first NUL, made valid UTF-8.
fn put_str(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    let b = c_str(b);
    match core::str::from_utf8(b) {
        Ok(s) => put_bytes(out, field, s.as_bytes()),
        Err(_) => put_bytes(out, field, String::from_utf8_lossy(b).as_bytes()),
    }
}

/// `FtraceEvent` fields.
mod ev {
    pub(crate) const TIMESTAMP: u32 = 1;
    pub(crate) const PID: u32 = 2;
    pub(crate) const GENERIC: u32 = 327;
    /// The first field number of the events described in the bundle
    /// (traced_probes' kGenericEvtProtoMinPbFieldId).
    pub(crate) const FIRST_DESCRIBED: u32 = 65536;
}

/// `FtraceEventBundle` fields.
mod bundle {
    pub(crate) const CPU: u32 = 1;
    pub(crate) const EVENT: u32 = 2;
    pub(crate) const LOST_EVENTS: u32 = 3;
    pub(crate) const COMPACT_SCHED: u32 = 4;
    pub(crate) const GENERIC_EVENT_DESCRIPTORS: u32 = 11;
}

/// `TracePacket` fields and sequence flags.
mod packet {
    pub(crate) const FTRACE_EVENTS: u32 = 1;
    pub(crate) const PROCESS_TREE: u32 = 2;
    pub(crate) const TRUSTED_PACKET_SEQUENCE_ID: u32 = 10;
    pub(crate) const INTERNED_DATA: u32 = 12;
    pub(crate) const SEQUENCE_FLAGS: u32 = 13;
    pub(crate) const SYSTEM_INFO: u32 = 45;
    pub(crate) const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
    pub(crate) const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
}

/// How a field is copied: an integer, a string, a kernel address as the
/// iid of its interned symbol name, an array of longs as a repeated
/// integer (sys_enter's args), an array of numbers as hex text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    Int,
    Str,
    Ksym,
    Longs,
    Hex,
}

const INT: How = How::Int;
const STR: How = How::Str;

/// Typed events: (system, name, FtraceEvent field, [(format field, proto
/// field, how)]). `all` says the message has a field for each of the
/// format's: an event whose format has more (a later kernel's) is
/// described instead, so that nothing of it is lost; the first rows keep
/// their typed message whatever the kernel adds (the UI reads them).
struct Typed {
    system: &'static str,
    name: &'static str,
    field: u32,
    map: &'static [(&'static str, u32, How)],
    all: bool,
}

const WAKE: &[(&str, u32, How)] =
    &[("comm", 1, STR), ("pid", 2, INT), ("prio", 3, INT), ("success", 4, INT), ("target_cpu", 5, INT)];
const SWITCH: &[(&str, u32, How)] = &[
    ("prev_comm", 1, STR),
    ("prev_pid", 2, INT),
    ("prev_prio", 3, INT),
    ("prev_state", 4, INT),
    ("next_comm", 5, STR),
    ("next_pid", 6, INT),
    ("next_prio", 7, INT),
];

const fn t(
    system: &'static str,
    name: &'static str,
    field: u32,
    map: &'static [(&'static str, u32, How)],
    all: bool,
) -> Typed {
    Typed { system, name, field, map, all }
}

// Field numbers: protos/perfetto/trace/ftrace/*.proto (Perfetto v50+,
// the `perfetto` wheel 0.59's schema).
const TYPED: &[Typed] = &[
    t("sched", "sched_switch", 4, SWITCH, false),
    t("sched", "sched_waking", 20, WAKE, false),
    t("sched", "sched_wakeup", 17, WAKE, false),
    t("sched", "sched_wakeup_new", 114, WAKE, false),
    t(
        "sched",
        "sched_process_fork",
        239,
        &[("parent_comm", 1, STR), ("parent_pid", 2, INT), ("child_comm", 3, STR), ("child_pid", 4, INT)],
        false,
    ),
    t(
        "sched",
        "sched_process_exit",
        238,
        &[("comm", 1, STR), ("pid", 2, INT), ("tgid", 3, INT), ("prio", 4, INT)],
        false,
    ),
    t("sched", "sched_process_free", 240, &[("comm", 1, STR), ("pid", 2, INT), ("prio", 3, INT)], false),
    t(
        "task",
        "task_newtask",
        235,
        &[("pid", 1, INT), ("comm", 2, STR), ("clone_flags", 3, INT), ("oom_score_adj", 4, INT)],
        false,
    ),
    t(
        "task",
        "task_rename",
        236,
        &[("pid", 1, INT), ("oldcomm", 2, STR), ("newcomm", 3, STR), ("oom_score_adj", 4, INT)],
        false,
    ),
    t("irq", "irq_handler_entry", 36, &[("irq", 1, INT), ("name", 2, STR)], false),
    t("irq", "irq_handler_exit", 37, &[("irq", 1, INT), ("ret", 2, INT)], false),
    t("irq", "softirq_entry", 24, &[("vec", 1, INT)], false),
    t("irq", "softirq_exit", 25, &[("vec", 1, INT)], false),
    t("ftrace", "print", 3, &[("ip", 1, INT), ("buf", 2, STR)], false),
    t("ftrace", "funcgraph_entry", 437, &[("depth", 1, INT), ("func", 2, How::Ksym)], false),
    t(
        "ftrace",
        "funcgraph_exit",
        438,
        &[("calltime", 1, INT), ("depth", 2, INT), ("func", 3, How::Ksym), ("overrun", 4, INT), ("rettime", 5, INT)],
        false,
    ),
    // Typed only when the message holds every field of the format.
    t("irq", "softirq_raise", 26, &[("vec", 1, INT)], true),
    t("raw_syscalls", "sys_enter", 329, &[("id", 1, INT), ("args", 2, How::Longs)], true),
    t("raw_syscalls", "sys_exit", 330, &[("id", 1, INT), ("ret", 2, INT)], true),
    t("irq_vectors", "local_timer_entry", 559, &[("vector", 1, INT)], true),
    t("irq_vectors", "local_timer_exit", 560, &[("vector", 1, INT)], true),
    t(
        "timer",
        "hrtimer_start",
        551,
        &[("hrtimer", 1, INT), ("function", 2, INT), ("expires", 3, INT), ("softexpires", 4, INT), ("mode", 5, INT)],
        true,
    ),
    t("timer", "hrtimer_cancel", 552, &[("hrtimer", 1, INT)], true),
    t("timer", "hrtimer_expire_entry", 553, &[("hrtimer", 1, INT), ("now", 2, INT), ("function", 3, INT)], true),
    t("timer", "hrtimer_expire_exit", 554, &[("hrtimer", 1, INT)], true),
    t(
        "timer",
        "timer_start",
        555,
        &[
            ("timer", 1, INT),
            ("function", 2, INT),
            ("expires", 3, INT),
            ("now", 4, INT),
            ("deferrable", 5, INT),
            ("flags", 6, INT),
            ("bucket_expiry", 7, INT),
        ],
        true,
    ),
    t("timer", "timer_cancel", 556, &[("timer", 1, INT)], true),
    t(
        "timer",
        "timer_expire_entry",
        557,
        &[("timer", 1, INT), ("now", 2, INT), ("function", 3, INT), ("baseclk", 4, INT)],
        true,
    ),
    t("timer", "timer_expire_exit", 558, &[("timer", 1, INT)], true),
    t("power", "cpu_frequency", 11, &[("state", 1, INT), ("cpu_id", 2, INT)], true),
    t("power", "cpu_frequency_limits", 12, &[("min_freq", 1, INT), ("max_freq", 2, INT), ("cpu_id", 3, INT)], true),
    t("power", "cpu_idle", 13, &[("state", 1, INT), ("cpu_id", 2, INT)], true),
    t("sched", "sched_process_exec", 237, &[("filename", 1, STR), ("pid", 2, INT), ("old_pid", 3, INT)], true),
    t("sched", "sched_process_wait", 242, &[("comm", 1, STR), ("pid", 2, INT), ("prio", 3, INT)], true),
    t("sched", "sched_process_hang", 241, &[("comm", 1, STR), ("pid", 2, INT)], true),
    t(
        "sched",
        "sched_migrate_task",
        491,
        &[
            ("comm", 1, STR),
            ("pid", 2, INT),
            ("prio", 3, INT),
            ("orig_cpu", 4, INT),
            ("dest_cpu", 5, INT),
            ("running", 6, INT),
            ("load", 7, INT),
        ],
        true,
    ),
    t(
        "sched",
        "sched_pi_setprio",
        353,
        &[("comm", 1, STR), ("newprio", 2, INT), ("oldprio", 3, INT), ("pid", 4, INT)],
        true,
    ),
    t("workqueue", "workqueue_activate_work", 56, &[("work", 1, INT), ("function", 2, INT)], true),
    t("workqueue", "workqueue_execute_end", 57, &[("work", 1, INT), ("function", 2, INT)], true),
    t("workqueue", "workqueue_execute_start", 58, &[("work", 1, INT), ("function", 2, INT)], true),
];

/// The fields of the compact forms (ftrace_event_bundle.proto's
/// CompactSched): sched_switch's prev_pid, prev_state, next_pid,
/// next_prio, next_comm; sched_waking's pid, target_cpu, prio, comm and
/// (when the format has one) success, and common_flags.
#[derive(Debug, Clone)]
enum Compact {
    None,
    Switch([Field; 5]),
    Waking { f: [Field; 4], success: Option<Field>, flags: Option<Field> },
}

/// How one event format becomes an `FtraceEvent` payload.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// The FtraceEvent field: a typed message's, or 65536 + the event id
    /// for a described event.
    field: u32,
    /// (format field, proto field, how).
    copies: Vec<(Field, u32, How)>,
    compact: Compact,
    /// A described event: its `GenericEventDescriptor`, encoded.
    descriptor: Option<Vec<u8>>,
    /// An event of more fields than trace_processor takes in a
    /// descriptor (field numbers below 32, generic_ftrace_tracker.cc's
    /// kMaxAllowedFields): a `GenericFtraceEvent` of this name, each field
    /// with its name.
    generic: Option<String>,
}

fn is_text(f: &Field) -> bool {
    f.type_name.contains("char") && !matches!(f.kind, FieldKind::Scalar)
}

fn is_int(f: &Field) -> bool {
    matches!(f.kind, FieldKind::Scalar) && f.size <= 8
}

/// How a field of a described or generic event is written: text, an
/// integer, or an array of numbers as hex text.
fn how_of(f: &Field) -> How {
    if is_text(f) {
        How::Str
    } else if is_int(f) {
        How::Int
    } else {
        How::Hex
    }
}

/// Fields a descriptor may have (numbers 1 to 31).
const MAX_DESCRIBED_FIELDS: usize = 32;

/// `DescriptorProto` field types (google/protobuf/descriptor.proto).
const TYPE_INT64: u64 = 3;
const TYPE_UINT64: u64 = 4;
const TYPE_STRING: u64 = 9;
const LABEL_OPTIONAL: u64 = 1;
const LABEL_REPEATED: u64 = 3;

impl Plan {
    /// The plan of format `f`.
    fn of(f: &EventFormat) -> Plan {
        if let Some(p) = Self::typed(f) {
            return p;
        }
        if f.fields.len() >= MAX_DESCRIBED_FIELDS {
            let copies = f.fields.iter().map(|x| (x.clone(), 0, how_of(x))).collect();
            return Plan {
                field: ev::GENERIC,
                copies,
                compact: Compact::None,
                descriptor: None,
                generic: Some(f.name.clone()),
            };
        }
        // GenericEventDescriptor { field_id 1, event_descriptor 2
        // (DescriptorProto { name 1, field 2 (FieldDescriptorProto {
        // name 1, number 3, label 4, type 5 }) }), group_name 3 }.
        // Event ids are 16 bits (`common_type`): the field stays a valid
        // field number.
        let field = ev::FIRST_DESCRIBED + (f.id & 0xffff);
        let mut d = Vec::new();
        put_bytes(&mut d, 1, f.name.as_bytes());
        let mut copies = Vec::new();
        for (i, x) in f.fields.iter().enumerate() {
            let number = i as u32 + 1;
            let how = how_of(x);
            let ty = match how {
                How::Int if x.signed => TYPE_INT64,
                How::Int => TYPE_UINT64,
                _ => TYPE_STRING,
            };
            let mut fd = Vec::new();
            put_bytes(&mut fd, 1, x.name.as_bytes());
            put_int(&mut fd, 3, u64::from(number));
            put_int(&mut fd, 4, LABEL_OPTIONAL);
            put_int(&mut fd, 5, ty);
            put_bytes(&mut d, 2, &fd);
            copies.push((x.clone(), number, how));
        }
        let mut g = Vec::new();
        put_int(&mut g, 1, u64::from(field));
        put_bytes(&mut g, 2, &d);
        put_bytes(&mut g, 3, f.system.as_bytes());
        let _ = LABEL_REPEATED;
        Plan { field, copies, compact: Compact::None, descriptor: Some(g), generic: None }
    }

    fn typed(f: &EventFormat) -> Option<Plan> {
        let t = TYPED.iter().find(|t| t.system == f.system && t.name == f.name)?;
        let mut copies = Vec::new();
        for (n, p, how) in t.map {
            let Some(x) = f.field(n) else {
                if t.all {
                    return None;
                }
                continue;
            };
            let fits = match how {
                How::Str => is_text(x),
                How::Longs => matches!(x.kind, FieldKind::Array { elem_size: 4 | 8, .. }),
                _ => is_int(x),
            };
            if !fits {
                if t.all {
                    return None;
                }
                continue;
            }
            copies.push((x.clone(), *p, *how));
        }
        if t.all && !f.fields.iter().all(|x| t.map.iter().any(|m| m.0 == x.name)) {
            return None;
        }
        let get = |n: &str| f.fields.iter().find(|x| x.name == n).cloned();
        let compact = match f.name.as_str() {
            "sched_switch" => (|| {
                let g = |n: &str| get(n).filter(|x| if n == "next_comm" { is_text(x) } else { is_int(x) });
                Some(Compact::Switch([
                    g("prev_pid")?,
                    g("prev_state")?,
                    g("next_pid")?,
                    g("next_prio")?,
                    g("next_comm")?,
                ]))
            })(),
            "sched_waking" => (|| {
                let g = |n: &str| get(n).filter(|x| if n == "comm" { is_text(x) } else { is_int(x) });
                Some(Compact::Waking {
                    f: [g("pid")?, g("target_cpu")?, g("prio")?, g("comm")?],
                    success: get("success").filter(is_int),
                    flags: f.common.iter().find(|x| x.name == "common_flags").filter(|x| is_int(x)).cloned(),
                })
            })(),
            _ => None,
        };
        Some(Plan {
            field: t.field,
            copies,
            compact: compact.unwrap_or(Compact::None),
            descriptor: None,
            generic: None,
        })
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A string field: the bytes `b` in hex.
fn put_hex(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    key(out, field, LEN);
    varint(out, 2 * b.len() as u64);
    for x in b {
        out.push(HEX[usize::from(x >> 4)]);
        out.push(HEX[usize::from(x & 15)]);
    }
}

/// Symbol names of kernel addresses, interned as the events need them.
#[derive(Default)]
struct Symbols {
    iids: BTreeMap<u64, u64>,
    /// `InternedData.kernel_symbols` (26) entries not written yet.
    pending: Vec<u8>,
}

impl Symbols {
    fn iid(&mut self, addr: u64, name: &dyn Fn(u64) -> Option<String>) -> u64 {
        if let Some(i) = self.iids.get(&addr) {
            return *i;
        }
        let iid = self.iids.len() as u64 + 1;
        self.iids.insert(addr, iid);
        let s = name(addr).unwrap_or_else(|| alloc::format!("0x{addr:x}"));
        // InternedString { iid 1, str 2 }.
        let mut one = Vec::with_capacity(s.len() + 8);
        put_int(&mut one, 1, iid);
        put_bytes(&mut one, 2, s.as_bytes());
        put_bytes(&mut self.pending, 26, &one);
        iid
    }
}

/// The payload of one event of `plan` from record `rec`.
fn encode_payload(
    plan: &Plan,
    rec: &[u8],
    e: Endian,
    out: &mut Vec<u8>,
    syms: &mut Symbols,
    name: &dyn Fn(u64) -> Option<String>,
) {
    if let Some(n) = &plan.generic {
        // GenericFtraceEvent { event_name 1, field 2 (Field { name 1,
        // str_value 3, int_value 4, uint_value 5 }) }.
        put_bytes(out, 1, n.as_bytes());
        let mut one = Vec::new();
        for (f, _, how) in &plan.copies {
            one.clear();
            put_bytes(&mut one, 1, f.name.as_bytes());
            if *how == How::Int {
                match f.int(rec, e) {
                    Some(v) => put_int(&mut one, if f.signed { 4 } else { 5 }, v as u64),
                    None => continue,
                }
            } else if *how == How::Str {
                put_str(&mut one, 3, f.value(rec, e));
            } else {
                put_hex(&mut one, 3, f.value(rec, e));
            }
            put_bytes(out, 2, &one);
        }
        return;
    }
    for (f, p, how) in &plan.copies {
        match how {
            How::Str => put_str(out, *p, f.value(rec, e)),
            How::Int | How::Ksym => {
                if let Some(v) = f.int(rec, e) {
                    let v = if *how == How::Ksym { syms.iid(v as u64, name) } else { v as u64 };
                    put_int(out, *p, v);
                }
            }
            How::Longs => {
                if let FieldKind::Array { elem_size, .. } = f.kind {
                    let w = elem_size as usize;
                    for c in f.value(rec, e).chunks_exact(w) {
                        put_int(out, *p, e.uint(c, 0, w).unwrap_or(0));
                    }
                }
            }
            How::Hex => put_hex(out, *p, f.value(rec, e)),
        }
    }
}

/// Bundle bytes at which a CPU's events go out as one packet.
const BUNDLE_BYTES: usize = 64 * 1024;

/// One packed column of `compact_sched`.
#[derive(Default)]
struct Col(Vec<u8>);

/// The bundle being filled for one (buffer, CPU).
#[derive(Default)]
struct Lane {
    cpu: u32,
    events: Vec<u8>,
    /// switch_timestamp, prev_state, next_pid, next_prio, next_comm_index.
    sw: [Col; 5],
    sw_last: u64,
    /// waking_timestamp, pid, target_cpu, prio, comm_index, common_flags.
    wk: [Col; 6],
    wk_last: u64,
    /// The bundle's intern table of comms, and its index.
    comms: Vec<u8>,
    comm_ix: BTreeMap<[u8; 16], u32>,
    /// Described events used in this bundle (plan indices).
    described: Vec<u32>,
    /// The task the last sched_switch put on this CPU, when known.
    current: Option<i64>,
    /// The last event's time on this CPU.
    last_ts: Option<u64>,
    lost: bool,
}

impl Lane {
    fn bytes(&self) -> usize {
        self.events.len()
            + self.comms.len()
            + self.sw.iter().map(|c| c.0.len()).sum::<usize>()
            + self.wk.iter().map(|c| c.0.len()).sum::<usize>()
    }

    fn comm(&mut self, b: &[u8]) -> u64 {
        let b = c_str(b);
        let mut k = [0u8; 16];
        let n = b.len().min(16);
        k[..n].copy_from_slice(&b[..n]);
        if let Some(i) = self.comm_ix.get(&k) {
            return u64::from(*i);
        }
        let i = self.comm_ix.len() as u32;
        self.comm_ix.insert(k, i);
        put_str(&mut self.comms, 5, &b[..n]);
        u64::from(i)
    }
}

/// Builds a Perfetto trace as it goes: events into per-CPU bundles, each
/// written out as a packet when it fills; [`TraceBuilder::take`] hands
/// over what is written; [`TraceBuilder::close`] the rest of the events,
/// and [`tail`] the thread names and the system info. Its first packet
/// clears the sequence's state (interned names), so the packets of two
/// builders may follow each other (a read by time slices: one builder a
/// slice).
pub(crate) struct TraceBuilder {
    out: Vec<u8>,
    lanes: Vec<Lane>,
    /// Lane index by (buffer, CPU).
    lane_of: BTreeMap<(u32, u32), usize>,
    /// Plan index by event id.
    plan_of: BTreeMap<u32, usize>,
    plans: Vec<Plan>,
    payload: Vec<u8>,
    one: Vec<u8>,
    syms: Symbols,
    pub(crate) events: u64,
    /// sched_switch and sched_waking events written in compact form.
    pub(crate) compact: u64,
    /// Whether the compact form may be used: not when several buffers
    /// have the same CPUs (a bundle names its CPU, not its buffer, so the
    /// reader could not tell whose switch put which task there).
    compact_ok: bool,
}

/// trusted_packet_sequence_id of every packet (one writer).
const SEQ: u64 = 1;

impl Default for TraceBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl TraceBuilder {
    pub(crate) fn new() -> TraceBuilder {
        TraceBuilder {
            out: cleared(),
            lanes: Vec::new(),
            lane_of: BTreeMap::new(),
            plan_of: BTreeMap::new(),
            plans: Vec::new(),
            payload: Vec::new(),
            one: Vec::new(),
            syms: Symbols::default(),
            events: 0,
            compact: 0,
            compact_ok: true,
        }
    }

    /// Records of several buffers come: write every event whole.
    pub(crate) fn several_buffers(&mut self) {
        self.compact_ok = false;
    }

    /// The bytes written so far (whole packets), handed over: the caller
    /// writes them out and the builder holds no more.
    pub(crate) fn take(&mut self) -> Vec<u8> {
        core::mem::take(&mut self.out)
    }

    /// How many bytes wait to be taken.
    pub(crate) fn pending(&self) -> usize {
        self.out.len()
    }

    fn lane(&mut self, buffer: u32, cpu: u32) -> usize {
        if let Some(i) = self.lane_of.get(&(buffer, cpu)) {
            return *i;
        }
        let i = self.lanes.len();
        self.lanes.push(Lane { cpu, ..Lane::default() });
        self.lane_of.insert((buffer, cpu), i);
        i
    }

    /// Events were lost on this CPU before what follows.
    pub(crate) fn lost(&mut self, buffer: u32, cpu: u32) {
        let l = self.lane(buffer, cpu);
        self.flush(l);
        let lane = &mut self.lanes[l];
        lane.lost = true;
        lane.current = None;
    }

    /// One event: `rec` is the record payload (from `common_type` on);
    /// `symbol` names a kernel address (funcgraph's functions).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn event(
        &mut self,
        f: &EventFormat,
        buffer: u32,
        cpu: u32,
        ts: u64,
        pid: i32,
        rec: &[u8],
        e: Endian,
        symbol: &dyn Fn(u64) -> Option<String>,
    ) {
        let p = match self.plan_of.get(&f.id) {
            Some(p) => *p,
            None => {
                self.plans.push(Plan::of(f));
                self.plan_of.insert(f.id, self.plans.len() - 1);
                self.plans.len() - 1
            }
        };
        let l = self.lane(buffer, cpu);
        self.events += 1;
        let plan = &self.plans[p];
        let lane = &mut self.lanes[l];
        let later = self.compact_ok && lane.last_ts.map_or(true, |t| ts > t);
        lane.last_ts = Some(ts);
        let pid = i64::from(pid);
        let mut done = false;
        match &plan.compact {
            Compact::Switch(x) => {
                let v = |i: usize| x[i].int(rec, e);
                let next = v(2);
                if later && lane.current.is_some() && lane.current == Some(pid) && v(0) == Some(pid) {
                    if let (Some(state), Some(next_pid), Some(prio)) = (v(1), next, v(3)) {
                        let c = lane.comm(x[4].value(rec, e));
                        varint(&mut lane.sw[0].0, ts - lane.sw_last);
                        lane.sw_last = ts;
                        varint(&mut lane.sw[1].0, state as u64);
                        varint(&mut lane.sw[2].0, next_pid as u64);
                        varint(&mut lane.sw[3].0, prio as u64);
                        varint(&mut lane.sw[4].0, c);
                        done = true;
                    }
                }
                lane.current = next;
            }
            Compact::Waking { f: x, success, flags } => {
                let v = |i: usize| x[i].int(rec, e);
                let ok = success.as_ref().map_or(true, |s| s.int(rec, e) == Some(1));
                if later && ok && lane.current == Some(pid) {
                    if let (Some(wpid), Some(target), Some(prio)) = (v(0), v(1), v(2)) {
                        let c = lane.comm(x[3].value(rec, e));
                        varint(&mut lane.wk[0].0, ts - lane.wk_last);
                        lane.wk_last = ts;
                        varint(&mut lane.wk[1].0, wpid as u64);
                        varint(&mut lane.wk[2].0, target as u64);
                        varint(&mut lane.wk[3].0, prio as u64);
                        varint(&mut lane.wk[4].0, c);
                        let fl = flags.as_ref().and_then(|f| f.int(rec, e)).unwrap_or(0);
                        varint(&mut lane.wk[5].0, fl as u64 & 0xffff_ffff);
                        done = true;
                    }
                }
            }
            Compact::None => {}
        }
        if done {
            self.compact += 1;
        } else {
            self.payload.clear();
            encode_payload(plan, rec, e, &mut self.payload, &mut self.syms, symbol);
            if plan.descriptor.is_some() && !lane.described.contains(&(p as u32)) {
                lane.described.push(p as u32);
            }
            let one = &mut self.one;
            one.clear();
            put_int(one, ev::TIMESTAMP, ts);
            put_int(one, ev::PID, pid as u32 as u64);
            put_bytes(one, plan.field, &self.payload);
            put_bytes(&mut lane.events, bundle::EVENT, one);
        }
        if lane.bytes() >= BUNDLE_BYTES {
            self.flush(l);
        }
    }

    /// Lane `l`'s bundle out as one packet (with the symbols interned since
    /// the last packet).
    fn flush(&mut self, l: usize) {
        let plans = &self.plans;
        let lane = &mut self.lanes[l];
        let n_sw = !lane.sw[0].0.is_empty();
        let n_wk = !lane.wk[0].0.is_empty();
        if lane.events.is_empty() && !n_sw && !n_wk && !lane.lost {
            return;
        }
        let mut b = Vec::with_capacity(lane.bytes() + 64);
        put_int(&mut b, bundle::CPU, u64::from(lane.cpu));
        if lane.lost {
            put_int(&mut b, bundle::LOST_EVENTS, 1);
            lane.lost = false;
        }
        b.extend_from_slice(&lane.events);
        lane.events.clear();
        if n_sw || n_wk {
            let mut c = Vec::new();
            c.extend_from_slice(&lane.comms);
            for (i, col) in lane.sw.iter_mut().enumerate() {
                if n_sw {
                    put_bytes(&mut c, [1, 2, 3, 4, 6][i], &col.0);
                }
                col.0.clear();
            }
            for (i, col) in lane.wk.iter_mut().enumerate() {
                if n_wk {
                    put_bytes(&mut c, 7 + i as u32, &col.0);
                }
                col.0.clear();
            }
            put_bytes(&mut b, bundle::COMPACT_SCHED, &c);
            lane.comms.clear();
            lane.comm_ix.clear();
            lane.sw_last = 0;
            lane.wk_last = 0;
        }
        for p in lane.described.drain(..) {
            if let Some(d) = plans.get(p as usize).and_then(|p| p.descriptor.as_ref()) {
                put_bytes(&mut b, bundle::GENERIC_EVENT_DESCRIPTORS, d);
            }
        }
        let mut pk = Vec::with_capacity(b.len() + self.syms.pending.len() + 16);
        if !self.syms.pending.is_empty() {
            put_bytes(&mut pk, packet::INTERNED_DATA, &self.syms.pending);
            self.syms.pending.clear();
        }
        put_bytes(&mut pk, packet::FTRACE_EVENTS, &b);
        put_int(&mut pk, packet::TRUSTED_PACKET_SEQUENCE_ID, SEQ);
        put_int(&mut pk, packet::SEQUENCE_FLAGS, packet::SEQ_NEEDS_INCREMENTAL_STATE);
        put_bytes(&mut self.out, 1, &pk);
    }

    /// The rest of the trace's events: the bundles not written yet.
    pub(crate) fn close(mut self) -> Vec<u8> {
        self.flush_all();
        self.out
    }

    /// The rest of the events so far, and a new start: what the builder
    /// writes next begins with a cleared state (no interned name, no task
    /// known on any CPU), so it may follow another builder's packets.
    pub(crate) fn restart(&mut self) -> Vec<u8> {
        self.flush_all();
        self.lanes.clear();
        self.lane_of.clear();
        self.syms = Symbols::default();
        core::mem::replace(&mut self.out, cleared())
    }

    fn flush_all(&mut self) {
        for l in 0..self.lanes.len() {
            self.flush(l);
        }
    }
}

/// The packet that starts the sequence's incremental state (the interned
/// names) afresh.
fn cleared() -> Vec<u8> {
    let mut out = Vec::new();
    let mut p = Vec::new();
    put_int(&mut p, packet::SEQUENCE_FLAGS, packet::SEQ_INCREMENTAL_STATE_CLEARED);
    put_int(&mut p, packet::TRUSTED_PACKET_SEQUENCE_ID, SEQ);
    put_bytes(&mut out, 1, &p);
    out
}

/// The packets that end a trace: the thread names (`(tid, comm)`) and the
/// kernel (`uname`: "sysname nodename release version… machine").
pub(crate) fn tail(threads: &[(i32, &str)], uname: Option<&str>) -> Vec<u8> {
    let mut out = Vec::new();
    if !threads.is_empty() {
        let mut tree = Vec::new();
        for (tid, name) in threads {
            let mut t = Vec::new();
            put_int(&mut t, 1, *tid as u32 as u64);
            put_str(&mut t, 2, name.as_bytes());
            put_bytes(&mut tree, 2, &t);
        }
        let mut packet = Vec::new();
        put_bytes(&mut packet, packet::PROCESS_TREE, &tree);
        put_int(&mut packet, packet::TRUSTED_PACKET_SEQUENCE_ID, SEQ);
        put_bytes(&mut out, 1, &packet);
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
            put_bytes(&mut packet, packet::SYSTEM_INFO, &si);
            put_int(&mut packet, packet::TRUSTED_PACKET_SEQUENCE_ID, SEQ);
            put_bytes(&mut out, 1, &packet);
        }
    }
    out
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

    /// An event of more fields than a descriptor may number is a
    /// GenericFtraceEvent (FtraceEvent field 327) with its fields' names;
    /// a smaller one is described (field 65536 + its id).
    #[test]
    fn wide_events_are_generic() {
        let field = |i: u32| Field {
            name: alloc::format!("f{i}"),
            type_name: "int".into(),
            offset: 8 + 4 * i,
            size: 4,
            signed: true,
            kind: FieldKind::Scalar,
        };
        let ev = |n: u32| EventFormat {
            id: 100 + n,
            system: "x".into(),
            name: alloc::format!("e{n}"),
            common: Vec::new(),
            fields: (0..n).map(field).collect(),
            print_fmt: String::new(),
        };
        let wide = Plan::of(&ev(40));
        assert_eq!((wide.field, wide.generic.as_deref()), (ev::GENERIC, Some("e40")));
        let rec = [0u8; 8 + 4 * 40];
        let mut out = Vec::new();
        encode_payload(&wide, &rec, Endian::Little, &mut out, &mut Symbols::default(), &|_| None);
        assert!(out.windows(3).any(|w| w == [0x12, 0x06, 0x0a]), "a Field message with a name");
        let narrow = Plan::of(&ev(31));
        assert_eq!((narrow.field, narrow.generic.is_none()), (ev::FIRST_DESCRIBED + 131, true));
    }
}
