#!/usr/bin/env python3
"""Give qemu virt's device tree a PSCI idle state: fdt-idle.py IN.dtb OUT.dtb

Why: qemu's virt board describes PSCI but no idle states, so a guest kernel
has no cpuidle (/sys/devices/system/cpu/cpuN/cpuidle is missing) and
`tr-lat --deepest-idle-state` cannot be tried. qemu's TCG PSCI
(target/arm/psci.c) runs CPU_SUSPEND as WFI when its power_state asks for
standby (the bits above 16 zero), so one standby state is enough for the
kernel's psci cpuidle driver (drivers/cpuidle/cpuidle-psci.c,
dt_idle_states.c; Documentation/devicetree/bindings/cpu/idle-states.yaml):
each CPU gets state0 (WFI, the driver's own) and state1 (this one).
There is no dtc on the development machines, hence this small editor of
the flattened device tree (Documentation: devicetree-specification v0.4,
chapter 5) instead of a decompile/compile.

IN.dtb is what `qemu ... -machine dumpdtb=IN.dtb` wrote (qemu exits after
it); OUT.dtb is booted with `-dtb OUT.dtb` (qemu's arm boot code still
writes /chosen's bootargs and initrd and /memory into it). Added:
  /cpus/idle-states { entry-method = "psci";
      cpu-retention { compatible = "arm,idle-state";
          arm,psci-suspend-param = <0>; entry-latency-us = <10>;
          exit-latency-us = <10>; min-residency-us = <100>;
          phandle = <P>; }; };
  cpu-idle-states = <P> in every /cpus/cpu@N.
/chosen's kaslr-seed and rng-seed get new random bytes: qemu puts them in
its generated tree only, so without this every boot would reuse the
dumped ones.
"""
import os
import struct
import sys

MAGIC = 0xD00DFEED
BEGIN_NODE, END_NODE, PROP, NOP, END = 1, 2, 3, 4, 9


class Node:
    def __init__(self, name):
        self.name = name
        self.props = []  # (name, bytes), in order
        self.children = []

    def child(self, name):
        return next((c for c in self.children if c.name == name), None)

    def set(self, name, value):
        """Replace the property in place, or add it at the end."""
        for i, (n, _) in enumerate(self.props):
            if n == name:
                self.props[i] = (name, value)
                return
        self.props.append((name, value))


def cstr(b, off):
    end = b.index(b"\0", off)
    return b[off:end].decode(), end + 1


def align4(n):
    return (n + 3) & ~3


def parse(b):
    (magic, total, off_struct, off_strings, off_rsv, version, _last, boot_cpu,
     size_strings, size_struct) = struct.unpack_from(">10I", b, 0)
    if magic != MAGIC or version < 17:
        sys.exit("fdt-idle: not a flattened device tree (version 17)")
    rsv, off = b"", off_rsv
    while True:  # the memory reservation map, up to its (0, 0) entry
        addr, size = struct.unpack_from(">QQ", b, off)
        off += 16
        if addr == 0 and size == 0:
            break
        rsv += struct.pack(">QQ", addr, size)
    strings = b[off_strings:off_strings + size_strings]
    stack, root, off = [], None, off_struct
    while True:
        (tok,) = struct.unpack_from(">I", b, off)
        off += 4
        if tok == BEGIN_NODE:
            name, end = cstr(b, off)
            off = align4(end)
            node = Node(name)
            if stack:
                stack[-1].children.append(node)
            else:
                root = node
            stack.append(node)
        elif tok == END_NODE:
            stack.pop()
        elif tok == PROP:
            length, nameoff = struct.unpack_from(">II", b, off)
            off += 8
            stack[-1].props.append((cstr(strings, nameoff)[0], b[off:off + length]))
            off = align4(off + length)
        elif tok == NOP:
            pass
        elif tok == END:
            return root, rsv, boot_cpu
        else:
            sys.exit(f"fdt-idle: unknown token {tok} at {off - 4}")


def serialize(root, rsv, boot_cpu):
    strings, index = bytearray(), {}

    def nameoff(name):
        if name not in index:
            index[name] = len(strings)
            strings.extend(name.encode() + b"\0")
        return index[name]

    out = bytearray()

    def emit(node):
        name = node.name.encode() + b"\0"
        out.extend(struct.pack(">I", BEGIN_NODE) + name + b"\0" * (align4(len(name)) - len(name)))
        for n, v in node.props:
            out.extend(struct.pack(">III", PROP, len(v), nameoff(n)) + v)
            out.extend(b"\0" * (align4(len(v)) - len(v)))
        for c in node.children:
            emit(c)
        out.extend(struct.pack(">I", END_NODE))

    emit(root)
    out.extend(struct.pack(">I", END))
    rsvmap = rsv + b"\0" * 16
    off_rsv = 40
    off_struct = off_rsv + len(rsvmap)
    off_strings = off_struct + len(out)
    total = off_strings + len(strings)
    header = struct.pack(">10I", MAGIC, total, off_struct, off_strings, off_rsv,
                         17, 16, boot_cpu, len(strings), len(out))
    return header + rsvmap + bytes(out) + bytes(strings)


def u32(*vals):
    return b"".join(struct.pack(">I", v) for v in vals)


def phandles(node):
    for n, v in node.props:
        if n in ("phandle", "linux,phandle") and len(v) == 4:
            yield struct.unpack(">I", v)[0]
    for c in node.children:
        yield from phandles(c)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: fdt-idle.py IN.dtb OUT.dtb")
    with open(sys.argv[1], "rb") as f:
        root, rsv, boot_cpu = parse(f.read())
    cpus = root.child("cpus")
    if cpus is None or root.child("psci") is None:
        sys.exit("fdt-idle: the tree has no /cpus or no /psci")
    phandle = max(phandles(root), default=0) + 1
    state = Node("cpu-retention")
    state.props = [("compatible", b"arm,idle-state\0"),
                   ("arm,psci-suspend-param", u32(0)),  # standby, original format
                   ("entry-latency-us", u32(10)),
                   ("exit-latency-us", u32(10)),
                   ("min-residency-us", u32(100)),
                   ("phandle", u32(phandle))]
    idle = Node("idle-states")
    idle.props = [("entry-method", b"psci\0")]
    idle.children = [state]
    n = 0
    for c in cpus.children:
        if c.name.startswith("cpu@"):
            c.set("cpu-idle-states", u32(phandle))
            n += 1
    cpus.children.append(idle)
    chosen = root.child("chosen")
    for name, value in list(chosen.props if chosen else []):
        if name in ("kaslr-seed", "rng-seed"):
            chosen.set(name, os.urandom(len(value)))
    with open(sys.argv[2], "wb") as f:
        f.write(serialize(root, rsv, boot_cpu))
    print(f"fdt-idle: {n} CPUs given the PSCI standby state (phandle {phandle})", file=sys.stderr)


main()
