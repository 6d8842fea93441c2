#!/usr/bin/env python3
"""Parse a Perfetto trace written by trbox with Perfetto's own schema (the
`perfetto` wheel's perfetto_trace_pb2) and print what it holds, one line
each, for tests/tr_cat_perfetto.rs to compare with tr-cat's view:

  E <ts> <cpu> <pid> <event>           every ftrace event (typed: the
                                      FtraceEvent field name; described:
                                      its descriptor's name; compact_sched:
                                      sched_switch / sched_waking)
  S <ts> <prev_pid> <next_pid> <prev_state> <next_prio> <next_comm>
  W <ts> <pid> <target_cpu> <prio> <comm>   sched_waking
  G <ts> <depth> <function>           funcgraph_entry/exit, the function's
                                      interned kernel symbol name
  T <tid> <name>                      ProcessTree threads
  U <sysname> <release> <machine>     SystemInfo.utsname
  K <switches> <wakings>              events in compact_sched form

Events written in the bundles' compact_sched columns are decoded as
trace_processor does (FtraceSchedEventTracker::PushSchedSwitchCompact,
PushSchedWakingCompact): timestamps are deltas, comms index the bundle's
intern table, and the task that ran the event (its pid, a switch's
prev_pid) is the one the previous sched_switch on that CPU switched in.

Events of FtraceEvent field >= 65536 are read with the DescriptorProto of
their bundle's generic_event_descriptors (Perfetto's
denser_generic_event_encoding), which must be the same for a field id in
every bundle. Interned kernel symbols are forgotten at a packet that
clears the sequence's incremental state, as trace_processor forgets them.

Exit 1 with a message on stderr when the file does not parse or holds a
field the schema does not know (an unknown field anywhere, a described
event without its descriptor or with a field its descriptor lacks)."""
import sys
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from google.protobuf import descriptor_pb2
from google.protobuf.unknown_fields import UnknownFieldSet

FIRST_DESCRIBED = 65536


def check_known(msg, path):
    unknown = [u for u in UnknownFieldSet(msg)]
    if msg.DESCRIPTOR.full_name == "perfetto.protos.FtraceEvent":
        # Described events: read in main() with their descriptor.
        unknown = [u for u in unknown if u.field_number < FIRST_DESCRIBED]
    if unknown:
        sys.exit(f"{path}: {len(unknown)} unknown fields in {msg.DESCRIPTOR.full_name}")
    for f, v in msg.ListFields():
        if f.type == f.TYPE_MESSAGE:
            items = v if f.is_repeated else [v]
            for i, m in enumerate(items):
                check_known(m, f"{path}.{f.name}[{i}]")


def varint(b, i):
    v = 0
    s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def read_described(data, d, where):
    """The values of a described event, checked against its descriptor."""
    fields = {f.number: f for f in d.field}
    out = {}
    i = 0
    while i < len(data):
        k, i = varint(data, i)
        num, wire = k >> 3, k & 7
        f = fields.get(num)
        if f is None:
            sys.exit(f"{where}: field {num} is not in the descriptor of {d.name}")
        if wire == 0:
            v, i = varint(data, i)
            if f.type not in (f.TYPE_INT64, f.TYPE_UINT64, f.TYPE_INT32, f.TYPE_UINT32):
                sys.exit(f"{where}: {d.name}.{f.name} is a varint, its descriptor says type {f.type}")
            if f.type == f.TYPE_INT64 and v >= 1 << 63:
                v -= 1 << 64
        elif wire == 2:
            n, i = varint(data, i)
            v = bytes(data[i : i + n]).decode()
            i += n
            if f.type != f.TYPE_STRING:
                sys.exit(f"{where}: {d.name}.{f.name} is a string, its descriptor says type {f.type}")
        else:
            sys.exit(f"{where}: wire type {wire} in {d.name}")
        out[f.name] = v
    return out


def main():
    data = open(sys.argv[1], "rb").read()
    t = pb.Trace()
    t.ParseFromString(data)
    check_known(t, "trace")
    out = []
    syms = {}
    described = {}
    # Per CPU: (ts, bundle, 0 compact / 1 whole, index, what) in the order
    # trace_processor sorts them, to replay the CPU's running task.
    per_cpu = {}
    compact = [0, 0]
    for bi, p in enumerate(t.packet):
        # SEQ_INCREMENTAL_STATE_CLEARED: the names interned before are gone
        # (each time slice of a conversion starts so).
        if p.sequence_flags & 1:
            syms = {}
        for k in p.interned_data.kernel_symbols:
            syms[k.iid] = k.str.decode()
        if p.HasField("ftrace_events"):
            b = p.ftrace_events
            items = per_cpu.setdefault(b.cpu, [])
            for g in b.generic_event_descriptors:
                d = descriptor_pb2.DescriptorProto.FromString(g.event_descriptor)
                # One field id, one event, in every bundle of the trace
                # (trace_processor keeps the first descriptor it sees).
                if described.setdefault(g.field_id, d) != d:
                    sys.exit(f"packet {bi}: field {g.field_id} describes {d.name}, and {described[g.field_id].name} before")
            if b.lost_events:
                items.append((-1, bi, -1, 0, ("lost",)))
            if b.HasField("compact_sched"):
                c = b.compact_sched
                n = len(c.switch_timestamp)
                cols = [c.switch_prev_state, c.switch_next_pid, c.switch_next_prio, c.switch_next_comm_index]
                if any(len(x) != n for x in cols):
                    sys.exit(f"packet {bi}: compact_sched switch columns of different lengths")
                ts = 0
                for j in range(n):
                    ts += c.switch_timestamp[j]
                    comm = c.intern_table[c.switch_next_comm_index[j]]
                    items.append((ts, bi, 0, j, ("switch", c.switch_prev_state[j], c.switch_next_pid[j], c.switch_next_prio[j], comm)))
                n = len(c.waking_timestamp)
                cols = [c.waking_pid, c.waking_target_cpu, c.waking_prio, c.waking_comm_index, c.waking_common_flags]
                if any(len(x) != n for x in cols):
                    sys.exit(f"packet {bi}: compact_sched waking columns of different lengths")
                ts = 0
                for j in range(n):
                    ts += c.waking_timestamp[j]
                    comm = c.intern_table[c.waking_comm_index[j]]
                    items.append((ts, bi, 0, 1 << 40 | j, ("waking", c.waking_pid[j], c.waking_target_cpu[j], c.waking_prio[j], comm)))
            for j, e in enumerate(b.event):
                kind = e.WhichOneof("event")
                extra = None
                if kind is None:
                    u = [u for u in UnknownFieldSet(e) if u.field_number >= FIRST_DESCRIBED]
                    if len(u) != 1 or u[0].field_number not in described:
                        sys.exit(f"packet {bi}: event at {e.timestamp} has no descriptor")
                    d = described[u[0].field_number]
                    read_described(u[0].data, d, f"packet {bi}")
                    name = d.name
                else:
                    name = e.generic.event_name if kind == "generic" else kind
                nxt = (e.sched_switch.next_pid,) if kind == "sched_switch" else ()
                items.append((e.timestamp, bi, 1, j, ("event", e.pid, name) + nxt))
                if kind in ("funcgraph_entry", "funcgraph_exit"):
                    g = getattr(e, kind)
                    if g.func not in syms:
                        sys.exit(f"{kind} at {e.timestamp}: func {g.func} is not an interned kernel symbol")
                    out.append(f"G {e.timestamp} {g.depth} {syms[g.func]}")
                if kind == "sched_switch":
                    s = e.sched_switch
                    out.append(f"S {e.timestamp} {s.prev_pid} {s.next_pid} {s.prev_state} {s.next_prio} {s.next_comm}")
                if kind == "sched_waking":
                    s = e.sched_waking
                    out.append(f"W {e.timestamp} {s.pid} {s.target_cpu} {s.prio} {s.comm}")
        if p.HasField("process_tree"):
            for th in p.process_tree.threads:
                out.append(f"T {th.tid} {th.name}")
        if p.HasField("system_info"):
            u = p.system_info.utsname
            out.append(f"U {u.sysname} {u.release} {u.machine}")
    for cpu, items in per_cpu.items():
        # A loss sorts at its bundle's place.
        items.sort(key=lambda x: (x[0] if x[0] >= 0 else -1, x[1], x[2], x[3]))
        current = None
        for ts, bi, _, _, what in items:
            if what[0] == "lost":
                current = None
            elif what[0] == "event":
                out.append(f"E {ts} {cpu} {what[1]} {what[2]}")
            elif what[0] == "switch":
                if current is None:
                    sys.exit(f"cpu {cpu}: compact sched_switch at {ts} with no switch before it")
                _, state, nxt, prio, comm = what
                out.append(f"E {ts} {cpu} {current} sched_switch")
                out.append(f"S {ts} {current} {nxt} {state} {prio} {comm}")
                compact[0] += 1
            elif what[0] == "waking":
                if current is None:
                    sys.exit(f"cpu {cpu}: compact sched_waking at {ts} with no switch before it")
                _, pid, target, prio, comm = what
                out.append(f"E {ts} {cpu} {current} sched_waking")
                out.append(f"W {ts} {pid} {target} {prio} {comm}")
                compact[1] += 1
            # Whole switches put their next task on the CPU too.
            if what[0] == "switch":
                current = what[2]
            elif what[0] == "event" and len(what) > 3:
                current = what[3]
    out.append(f"K {compact[0]} {compact[1]}")
    print("\n".join(out))


main()
