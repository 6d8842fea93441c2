#!/usr/bin/env python3
"""Cut a version 6 trace.dat down to test size: the first PAGES sub-buffers
of each CPU, kallsyms emptied (optionally kept), everything else (formats,
printk formats, saved cmdlines, options, clock) as it was.

    trim-v6.py IN OUT PAGES [--keep-kallsyms] [--systems SYS,SYS...]

--systems keeps only the formats of these event systems (ftrace's own
events, a section of their own, are always kept whole).

Only little-endian v6 files with a flyrecord section are handled (what the
4.x files of public test suites are).
"""
import struct
import sys


def main():
    src, dst, pages = sys.argv[1], sys.argv[2], int(sys.argv[3])
    keep_kallsyms = "--keep-kallsyms" in sys.argv[4:]
    only = None
    if "--systems" in sys.argv[4:]:
        only = set(sys.argv[sys.argv.index("--systems") + 1].split(","))
    b = open(src, "rb").read()
    p = 0

    def take(n):
        nonlocal p
        v = b[p:p + n]
        if len(v) != n:
            sys.exit(f"{src}: cut at {p}")
        p += n
        return v

    def u(fmt):
        return struct.unpack("<" + fmt, take(struct.calcsize(fmt)))[0]

    def cstr():
        nonlocal p
        end = b.index(b"\0", p)
        v = b[p:end + 1]
        p = end + 1
        return v

    out = bytearray()
    head = take(10)
    assert head == b"\x17\x08Dtracing", "not a trace.dat"
    version = cstr()
    assert version == b"6\0", f"version {version!r}: only v6"
    endian, long_size = take(1), take(1)
    assert endian == b"\0", "big endian: not handled"
    page_size = u("I")
    out += head + version + endian + long_size + struct.pack("<I", page_size)
    for tag in (b"header_page\0", b"header_event\0"):
        assert take(len(tag)) == tag
        n = u("Q")
        out += tag + struct.pack("<Q", n) + take(n)
    count = u("I")
    out += struct.pack("<I", count)
    for _ in range(count):
        n = u("Q")
        out += struct.pack("<Q", n) + take(n)
    systems = u("I")
    kept = []
    for _ in range(systems):
        name = cstr()
        count = u("I")
        sysout = name + struct.pack("<I", count)
        for _ in range(count):
            n = u("Q")
            sysout += struct.pack("<Q", n) + take(n)
        if only is None or name[:-1].decode() in only:
            kept.append(sysout)
    out += struct.pack("<I", len(kept)) + b"".join(kept)
    n = u("I")
    syms = take(n)
    if not keep_kallsyms:
        syms = b""
    out += struct.pack("<I", len(syms)) + syms
    n = u("I")
    out += struct.pack("<I", n) + take(n)
    n = u("Q")
    out += struct.pack("<Q", n) + take(n)
    cpus = u("I")
    out += struct.pack("<I", cpus)
    tag = take(10)
    has_clock = False
    if tag == b"options  \0":
        out += tag
        while True:
            oid = u("H")
            out += struct.pack("<H", oid)
            if oid == 0:
                break
            n = u("I")
            out += struct.pack("<I", n) + take(n)
            has_clock |= oid == 4
        tag = take(10)
    assert tag == b"flyrecord\0", f"{tag!r}: only flyrecord data"
    out += tag
    table = [(u("Q"), u("Q")) for _ in range(cpus)]
    clock = b""
    if has_clock:
        n = u("Q")
        clock = struct.pack("<Q", n) + take(n)
    table_at = len(out)
    out += bytes(16 * cpus) + clock
    new = []
    for off, size in table:
        size = min(size, pages * page_size)
        out += bytes(-len(out) % page_size)
        new.append((len(out), size))
        out += b[off:off + size]
    for i, (off, size) in enumerate(new):
        struct.pack_into("<QQ", out, table_at + 16 * i, off, size)
    open(dst, "wb").write(out)


main()
