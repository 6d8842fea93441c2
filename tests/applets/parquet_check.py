#!/usr/bin/env python3
"""Reads a `tr-cat FILE -o OUT.parquet` directory with DuckDB (tests/applets/tr_cat_parquet.rs).

  parquet_check.py one OUT JSONL   every EVENT.parquet of OUT (as meta.json lists
                                   them) against `tr-cat FILE --json` (JSONL): the
                                   same rows, the same sums of every integer
                                   field and the same strings in the same order;
                                   prints "EVENT ROWS" per file, then
                                   "compared N integer and M string columns".
  parquet_check.py fleet OUT EVENT the rows of EVENT per source= (hive
                                   partitioning): "SOURCE ROWS" lines.
  parquet_check.py codecs OUT      the compression codecs of every column
                                   chunk of OUT's files (parquet_metadata()),
                                   one per line.
  parquet_check.py ts-stats OUT    every file's common_ts chunks carry their min
                                   and max (what lets an engine skip row groups
                                   outside a time range), and they bound the
                                   file's times: "ts-stats N" (N files), or a
                                   line per file that fails.
  parquet_check.py groups OUT      "FILE N": the row groups of each of OUT's
                                   files.
  parquet_check.py schema OUT      the columns of every file meta.json lists, as
                                   DuckDB types them: "EVENT COLUMN TYPE" lines;
                                   "EVENT ! ERROR" for an event whose meta.json
                                   entry has errors (LISA's refusals). Works on
                                   LISA's `trace-dump parquet` output too.
"""

import json
import os
import sys

import duckdb

DB = duckdb.connect()


def sql(q):
    return DB.execute(q).fetchall()


def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


def one(out, jsonl):
    by_event = {}
    with open(jsonl, encoding="utf-8") as f:
        for line in f:
            o = json.loads(line)
            by_event.setdefault(o["event"].split(":", 1)[1], []).append(o)
    with open(os.path.join(out, "meta.json"), encoding="utf-8") as f:
        meta = json.load(f)
    ints = strs = 0
    files = [e for e in meta["events-info"] if "path" in e]
    if sorted(e["event"] for e in files) != sorted(by_event):
        fail(f"files {sorted(e['event'] for e in files)} but --json has {sorted(by_event)}")
    for e in files:
        name, path = e["event"], os.path.join(out, e["path"])
        rows = by_event[name]
        n = sql(f"SELECT count(*) FROM read_parquet('{path}')")[0][0]
        if n != len(rows) or n != e["nr-rows"]:
            fail(f"{name}: {n} rows, meta.json says {e['nr-rows']}, --json {len(rows)}")
        cols = [c[0] for c in sql(f"DESCRIBE SELECT * FROM read_parquet('{path}')")]
        common = {"common_ts": "ts_ns", "common_cpu": "cpu", "common_pid": "pid"}
        for col, key in common.items():
            got = sql(f"SELECT sum({col})::HUGEINT FROM read_parquet('{path}')")[0][0]
            want = sum(r[key] for r in rows)
            if got != want:
                fail(f"{name}.{col}: sum {got}, --json {want}")
            ints += 1
        for field, first in rows[0]["fields"].items():
            if field not in cols:
                fail(f"{name}: no column {field} (columns {cols})")
            if isinstance(first, int):
                got = sql(f'SELECT sum("{field}")::HUGEINT FROM read_parquet(\'{path}\')')[0][0]
                want = sum(r["fields"][field] for r in rows)
                if got != want:
                    fail(f"{name}.{field}: sum {got}, --json {want}")
                ints += 1
            elif isinstance(first, str):
                got = [v[0] for v in sql(f'SELECT "{field}" FROM read_parquet(\'{path}\')')]
                want = [r["fields"][field] for r in rows]
                if got != want:
                    bad = next(i for i, (a, b) in enumerate(zip(got, want)) if a != b)
                    fail(f"{name}.{field}: row {bad} is {got[bad]!r}, --json {want[bad]!r}")
                strs += 1
        print(f"{name} {n}")
    print(f"compared {ints} integer and {strs} string columns")


def fleet(out, event):
    q = (
        f"SELECT source, count(*) FROM read_parquet('{out}/*/{event}.parquet', hive_partitioning=true) "
        "GROUP BY source ORDER BY source"
    )
    for source, n in sql(q):
        print(f"{source} {n}")


def codecs(out):
    q = f"SELECT DISTINCT compression FROM parquet_metadata('{out}/*.parquet') ORDER BY 1"
    for (c,) in sql(q):
        print(c)


def groups(out):
    q = f"SELECT file_name, count(DISTINCT row_group_id) FROM parquet_metadata('{out}/*.parquet') GROUP BY 1 ORDER BY 1"
    for f, n in sql(q):
        print(f"{os.path.basename(f)} {n}")


def ts_stats(out):
    q = (
        f"SELECT file_name, min(stats_min_value::UBIGINT), max(stats_max_value::UBIGINT), "
        f"count(*) FILTER (stats_min_value IS NULL OR stats_max_value IS NULL) "
        f"FROM parquet_metadata('{out}/*.parquet') WHERE path_in_schema = 'common_ts' GROUP BY 1 ORDER BY 1"
    )
    n = 0
    for f, lo, hi, missing in sql(q):
        ((a, b),) = sql(f"SELECT min(common_ts), max(common_ts) FROM '{f}'")
        if missing or (lo, hi) != (a, b):
            print(f"{f}: common_ts min/max {lo}..{hi} ({missing} chunks without), the rows {a}..{b}")
        n += 1
    print(f"ts-stats {n}")


def schema(out):
    with open(os.path.join(out, "meta.json"), encoding="utf-8") as f:
        meta = json.load(f)
    for e in sorted(meta["events-info"], key=lambda e: e["event"]):
        if e.get("errors"):
            print(f"{e['event']} ! {e['errors'][0].splitlines()[0]}")
        if "path" not in e:
            continue
        path = os.path.join(out, e["path"])
        for col, typ, *_ in sql(f"DESCRIBE SELECT * FROM read_parquet('{path}')"):
            print(f"{e['event']} {col} {typ}")


if __name__ == "__main__":
    if sys.argv[1] == "codecs":
        codecs(sys.argv[2])
    elif sys.argv[1] == "one":
        one(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "fleet":
        fleet(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "groups":
        groups(sys.argv[2])
    elif sys.argv[1] == "ts-stats":
        ts_stats(sys.argv[2])
    elif sys.argv[1] == "schema":
        schema(sys.argv[2])
    else:
        fail(__doc__)
