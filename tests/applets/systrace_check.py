#!/usr/bin/env python3
"""What Perfetto's text importer (trace_processor's systrace importer:
systrace_trace_parser.cc, systrace_line_tokenizer.cc) takes from a text
trace: whether it recognises the text at all (the sniff: "# tracer" in the
first bytes, or a text starting with a space or "cpus="), then for each line
not starting with '#' the task line's fields, by the importer's own pattern
(written here after its description):

  TASK-PID [(TGID)] [CPU] [FLAGS: 3 of [a-zA-Z.] then 1-2 of [0-9a-f.]] TS: NAME:

Prints "SNIFF ok|no", then "E <ts_us> <cpu> <pid> <name>" for each line it
tokenizes and "X <line>" for each it would count as a parse failure."""
import re
import sys

LINE = re.compile(r"-(\d+)\s+\(?\s*(\d+|-+)?\)?\s?\[(\d+)\]\s*([a-zA-Z.]{3}[0-9a-f.]{1,2}\s*)?(\d+\.\d+):\s+(\S+):")
LOOKAHEAD = 64 * 1024

text = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
start = text[:LOOKAHEAD]
sniff = "# tracer" in start or start.startswith(" ") or start.startswith("cpus=")
out = ["SNIFF " + ("ok" if sniff else "no")]
lines = text.split("\n")
if lines and re.fullmatch(r"cpus=\d+", lines[0]):
    lines = lines[1:]
for l in lines:
    if not l or l.startswith("#"):
        continue
    m = LINE.search(l)
    if not m:
        out.append("X " + l)
        continue
    s, frac = m.group(5).split(".")
    us = int(s) * 1000000 + int((frac + "000000")[:6])
    out.append(f"E {us} {int(m.group(3))} {int(m.group(1))} {m.group(6)}")
print("\n".join(out))
