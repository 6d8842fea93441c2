#!/bin/bash
# Remakes lisa-schema.txt: the column names and types LISA's own
# `trace-dump parquet` (ARM-software/lisa, tools/trace-parser) writes for the
# trace.dat files tests/applets/tr_cat_parquet.rs converts (made from the
# boards' fixtures: sched, syscalls with function_graph, a kprobe with a
# string; LISA's rt-app recording with bprint), as DuckDB types them.
# tr_cat_parquet.rs checks trbox's columns against them.
#
#   tests/data/parquet/lisa-schema.sh [TRACE_DUMP]
#
# TRACE_DUMP: LISA's binary ($TRBOX_LISA_TRACE_DUMP, else
# ~/.cache/trbox/lisa/trace-dump; /work/shared/tools/lisa/build.sh builds
# it). Needs python3 with duckdb.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
lisa=${1:-${TRBOX_LISA_TRACE_DUMP:-$HOME/.cache/trbox/lisa/trace-dump}}
[ -x "$lisa" ] || { echo "lisa-schema.sh: no $lisa (build it with /work/shared/tools/lisa/build.sh)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/in"
# The test writes its inputs where this says (and checks against the old
# file meanwhile: its verdict does not matter here).
(cd "$root" && cargo build --release --bin trbox >/dev/null 2>&1 &&
    TRBOX_PARQUET_INPUTS="$work/in" cargo test --release --lib \
    applets_tests::tr_cat_parquet::columns_and_types_as_lisa_has_them >/dev/null 2>&1) || true
ls "$work"/in/*.dat >/dev/null
# The LISA commit the binary was built from (build.sh's checkout).
commit=${LISA_COMMIT:-bb5ff50d0}
{
    echo "# LISA's trace-dump parquet (ARM-software/lisa $commit), made by lisa-schema.sh:"
    echo "# INPUT EVENT COLUMN TYPE (DuckDB's type names); INPUT EVENT ! ERROR where LISA refused the event"
    for f in "$work"/in/*.dat; do
        name=$(basename "$f" .dat)
        mkdir "$work/$name"
        (cd "$work/$name" && "$lisa" parquet --trace "$f" --trace-format tracedat >/dev/null 2>&1) || true
        python3 "$root/tests/applets/parquet_check.py" schema "$work/$name" | sed "s/^/$name /"
    done
} > "$here/lisa-schema.txt"
echo "$here/lisa-schema.txt: $(grep -vc '^#' "$here/lisa-schema.txt") lines"
