#!/usr/bin/env python3
"""The wakeup-latency figure of docs/analysis.md: one DuckDB query over a
`tr-cat FILE -o OUT.parquet` directory, drawn with matplotlib.

  wakeup_latency.py OUT.parquet FIGURE.svg

The recording needs sched:sched_waking and sched:sched_switch. Each waking
is paired with the first sched_switch after it that runs the woken task
(an ASOF join); the latency is the time between them. Only for the docs:
`make test` does not run it (it needs `pip install duckdb matplotlib`).
"""

import sys

import duckdb
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after the backend is chosen)

# The query docs/analysis.md shows (with the directory's name in it).
QUERY = """
WITH w AS (SELECT common_ts AS woken, pid FROM '{dir}/sched_waking.parquet'),
     s AS (SELECT common_ts AS ran, next_pid AS pid FROM '{dir}/sched_switch.parquet')
SELECT (w.woken - min(w.woken) OVER ()) / 1e9 AS t_s, (s.ran - w.woken) / 1e3 AS latency_us
FROM w ASOF JOIN s ON w.pid = s.pid AND s.ran >= w.woken
WHERE w.pid <> 0
ORDER BY t_s
"""


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, out = sys.argv[1], sys.argv[2]
    db = duckdb.connect()
    rows = db.execute(QUERY.format(dir=src)).fetchall()
    if not rows:
        sys.exit(f"{src}: no sched_waking paired with a sched_switch")
    t = [r[0] for r in rows]
    lat = [max(r[1], 0.1) for r in rows]
    p50, p99 = db.execute(
        f"SELECT quantile_cont(latency_us, 0.5), quantile_cont(latency_us, 0.99) FROM ({QUERY.format(dir=src)})"
    ).fetchall()[0]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    ax.scatter(t, lat, s=4, alpha=0.5, linewidths=0, label=f"{len(rows)} wakeups")
    ax.axhline(p50, color="tab:green", lw=1, label=f"median {p50:.1f} µs")
    ax.axhline(p99, color="tab:red", lw=1, label=f"99th percentile {p99:.0f} µs")
    ax.set_yscale("log")
    ax.set_xlabel("time since the first wakeup (s)")
    ax.set_ylabel("sched_waking → sched_switch (µs)")
    ax.set_title("Wakeup latency over time")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper right", fontsize="small")
    fig.tight_layout()
    # No date in the SVG: the same data makes the same file.
    fig.savefig(out, metadata={"Date": None})
    print(f"{out}: {len(rows)} wakeups, median {p50:.1f} µs, p99 {p99:.0f} µs")


if __name__ == "__main__":
    main()
