#!/usr/bin/env python3
"""Parse a Perfetto trace written by trbox with Perfetto's own schema (the
`perfetto` wheel's perfetto_trace_pb2) and print what it holds, one line
each, for tests/tr_cat_perfetto.rs to compare with tr-cat's view:

  E <ts> <cpu> <pid> <event>           every ftrace event (typed: the
                                      FtraceEvent field name; generic: its name)
  S <ts> <prev_pid> <next_pid> <prev_state> <prev_comm> <next_comm>
  G <ts> <depth> <function>           funcgraph_entry/exit, the function's
                                      interned kernel symbol name
  T <tid> <name>                      ProcessTree threads
  U <sysname> <release> <machine>     SystemInfo.utsname

Exit 1 with a message on stderr when the file does not parse or holds a
field the schema does not know (an unknown field anywhere)."""
import sys
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from google.protobuf.unknown_fields import UnknownFieldSet


def check_known(msg, path):
    if len(UnknownFieldSet(msg)) > 0:
        sys.exit(f"{path}: {len(UnknownFieldSet(msg))} unknown fields in {msg.DESCRIPTOR.full_name}")
    for f, v in msg.ListFields():
        if f.type == f.TYPE_MESSAGE:
            items = v if f.is_repeated else [v]
            for i, m in enumerate(items):
                check_known(m, f"{path}.{f.name}[{i}]")


def main():
    data = open(sys.argv[1], "rb").read()
    t = pb.Trace()
    t.ParseFromString(data)
    check_known(t, "trace")
    out = []
    syms = {}
    for p in t.packet:
        for k in p.interned_data.kernel_symbols:
            syms[k.iid] = k.str.decode()
        if p.HasField("ftrace_events"):
            b = p.ftrace_events
            for e in b.event:
                kind = e.WhichOneof("event")
                name = e.generic.event_name if kind == "generic" else kind
                out.append(f"E {e.timestamp} {b.cpu} {e.pid} {name}")
                if kind in ("funcgraph_entry", "funcgraph_exit"):
                    g = getattr(e, kind)
                    if g.func not in syms:
                        sys.exit(f"{kind} at {e.timestamp}: func {g.func} is not an interned kernel symbol")
                    out.append(f"G {e.timestamp} {g.depth} {syms[g.func]}")
                if kind == "sched_switch":
                    s = e.sched_switch
                    out.append(f"S {e.timestamp} {s.prev_pid} {s.next_pid} {s.prev_state} {s.prev_comm} {s.next_comm}")
        if p.HasField("process_tree"):
            for th in p.process_tree.threads:
                out.append(f"T {th.tid} {th.name}")
        if p.HasField("system_info"):
            u = p.system_info.utsname
            out.append(f"U {u.sysname} {u.release} {u.machine}")
    print("\n".join(out))


main()
