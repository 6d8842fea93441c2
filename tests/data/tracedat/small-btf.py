#!/usr/bin/env python3
"""Write a small BTF blob holding only the enums of a kernel's BTF that
define the given enumerator names (what the print fmts of a few events
name), so that a trace.dat carrying it (option 23, BTF_FILE) stays small.

    small-btf.py /sys/kernel/btf/vmlinux OUT NAME...

Layout (include/uapi/linux/btf.h): header {u16 magic 0xeb9f, u8 version,
u8 flags, u32 hdr_len, u32 type_off, u32 type_len, u32 str_off, u32
str_len}, type records, strings. Little-endian hosts only.
"""
import struct
import sys

KIND_SIZES = {  # kind -> (bytes after the 12-byte record, per vlen item)
    1: (4, 0), 2: (0, 0), 3: (12, 0), 4: (0, 12), 5: (0, 12), 6: (0, 8),
    7: (0, 0), 8: (0, 0), 9: (0, 0), 10: (0, 0), 11: (0, 0), 12: (0, 0),
    13: (0, 8), 14: (4, 0), 15: (0, 12), 16: (0, 0), 17: (4, 0), 18: (0, 0),
    19: (0, 12),
}


def main():
    raw = open(sys.argv[1], "rb").read()
    out_path, wanted = sys.argv[2], set(sys.argv[3:])
    magic, ver, flags, hdr_len, type_off, type_len, str_off, str_len = struct.unpack_from("<HBBIIIII", raw)
    assert magic == 0xEB9F, "not little-endian BTF"
    types = raw[hdr_len + type_off:hdr_len + type_off + type_len]
    strs = raw[hdr_len + str_off:hdr_len + str_off + str_len]

    def name(off):
        return strs[off:strs.index(b"\0", off)].decode()

    new_strs = bytearray(b"\0")
    new_types = bytearray()

    def add_str(s):
        off = len(new_strs)
        new_strs.extend(s.encode() + b"\0")
        return off

    p, found = 0, set()
    while p < len(types):
        name_off, info, size = struct.unpack_from("<III", types, p)
        kind, vlen = (info >> 24) & 0x1F, info & 0xFFFF
        extra, per = KIND_SIZES[kind]
        body = types[p + 12:p + 12 + extra + per * vlen]
        if kind in (6, 19):  # ENUM, ENUM64
            items = [struct.unpack_from("<I", body, i * per)[0] for i in range(vlen)]
            names = [name(o) for o in items]
            if wanted & set(names):
                found |= wanted & set(names)
                rec = bytearray(struct.pack("<III", add_str(name(name_off)) if name_off else 0, info, size))
                for i, n in enumerate(names):
                    rec += struct.pack("<I", add_str(n)) + body[i * per + 4:(i + 1) * per]
                new_types += rec
        p += 12 + extra + per * vlen
    missing = wanted - found
    if missing:
        print("not in BTF:", " ".join(sorted(missing)), file=sys.stderr)
    hdr = struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(new_types), len(new_types), len(new_strs))
    open(out_path, "wb").write(hdr + new_types + new_strs)


main()
