#!/usr/bin/env python3
"""Reads a fleet directory of `tr-cat A.dat B.dat … -o FLEET.parquet` with Spark
in local mode (tests/applets/tr_cat_parquet.rs), as a lab reads its boards'
traces once they outgrow one machine: spark.read.parquet over the fleet,
hive partitioning giving the `source` column.

  spark_check.py FLEET   for each source and event: "SOURCE EVENT ROWS" lines,
                         counted by one Spark query over every file; then
                         the queries of docs/analysis.md ("query NAME ROWS"),
                         and "spark START_S QUERIES_S" (the seconds Spark took
                         to start, and to run every query).

One SparkSession for all of it, local[1], no UI, log level ERROR: Spark's
start-up (a JVM) is most of its cost here.
"""

import sys
import time

T0 = time.monotonic()

from pyspark.sql import SparkSession  # noqa: E402


def session():
    return (
        SparkSession.builder.master("local[1]")
        .appName("trbox-fleet-check")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.driver.memory", "512m")
        .getOrCreate()
    )


def table(spark, fleet, event):
    """One event over every board: the fleet as one table, `source` from the
    directory names (basePath: the partitions start at the fleet)."""
    return spark.read.option("basePath", fleet).parquet(f"{fleet}/source=*/{event}.parquet")


def files(spark, fleet, pattern):
    """Every EVENT.parquet of the fleet matching `pattern` as one table of
    their common_pid, with the event from the file's name (a field's type
    differs between 32- and 64-bit boards, so only a common column)."""
    from pyspark.sql.functions import input_file_name, regexp_extract

    return (
        spark.read.schema("common_pid INT")
        .option("basePath", fleet)
        .parquet(f"{fleet}/source=*/{pattern}.parquet")
        .withColumn("event", regexp_extract(input_file_name(), r"/([^/]+)\.parquet$", 1))
    )


def main(fleet):
    spark = session()
    spark.sparkContext.setLogLevel("ERROR")
    started = time.monotonic()
    # The rows of every event of every board, in one job.
    rows = files(spark, fleet, "*").groupBy("source", "event").count().collect()
    for r in sorted(rows, key=lambda r: (r["source"], r["event"])):
        print(f"{r['source']} {r['event']} {r['count']}")
    # The queries docs/analysis.md shows, on the events the fixtures have.
    for name, view in [("sched_switch", "sched_switch"), ("sched_wakeup", "wakeup")]:
        table(spark, fleet, name).createOrReplaceTempView(view)
    queries = {
        # Per task, the time it ran: from each sched_switch that put it on a
        # CPU to the next sched_switch on that CPU.
        "run_time": """
            SELECT source, next_comm AS comm, next_pid AS pid, sum(ran) AS ns, count(*) AS slices
            FROM (SELECT source, next_comm, next_pid,
                         lead(common_ts) OVER (PARTITION BY source, common_cpu ORDER BY common_ts)
                           - common_ts AS ran
                  FROM sched_switch)
            WHERE ran IS NOT NULL AND next_pid != 0
            GROUP BY source, next_comm, next_pid ORDER BY ns DESC""",
        # Wakeup latency: from a task's wakeup to the sched_switch that
        # runs it, per source.
        "wakeup_latency": """
            SELECT source, pid, comm, woken, latency_ns
            FROM (SELECT w.source, w.pid, w.comm, w.common_ts AS woken,
                         s.common_ts - w.common_ts AS latency_ns,
                         row_number() OVER (PARTITION BY w.source, w.pid, w.common_ts
                                            ORDER BY s.common_ts) AS n
                  FROM wakeup w JOIN sched_switch s
                    ON s.source = w.source AND s.next_pid = w.pid AND s.common_ts >= w.common_ts)
            WHERE n = 1 ORDER BY latency_ns DESC""",
    }
    for name, q in queries.items():
        print(f"query {name} {len(spark.sql(q).collect())}")
    # The top syscalls: one sys_enter_NAME.parquet per syscall.
    files(spark, fleet, "sys_enter_*").createOrReplaceTempView("sys_enter")
    top = "SELECT source, event, count(*) AS n FROM sys_enter GROUP BY source, event ORDER BY n DESC"
    for r in sorted(spark.sql(top).collect(), key=lambda r: (r["source"], r["event"])):
        print(f"{r['source']} {r['event']} {r['n']} (top_syscalls)")
    print(f"spark {started - T0:.1f} {time.monotonic() - started:.1f}")
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
