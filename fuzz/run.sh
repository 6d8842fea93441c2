#!/usr/bin/env bash
# `make fuzz`: build every fuzz target with cargo fuzz (libFuzzer,
# AddressSanitizer, debug assertions) and run each SECONDS, one at a time,
# starting from the real inputs the library's tests run the targets over
# (src/fuzz_entry/seeds.rs writes them with TRBOX_FUZZ_SEEDS). One line per
# target; a crash prints libFuzzer's report and fails, with the input in
# fuzz/artifacts/TARGET/ (make it a regression test next to the code it hit).
#
#   bash fuzz/run.sh SECONDS TARGET...
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:?usage: fuzz/run.sh SECONDS TARGET...}
shift
NIGHTLY=${TRBOX_NIGHTLY:-nightly}
CARGO=${CARGO:-cargo}
out=target/fuzz
mkdir -p "$out"

command -v cargo-fuzz >/dev/null ||
    { echo "fuzz: cargo-fuzz is missing: make setup installs it" >&2; exit 1; }

# The seeds: the same inputs `cargo test` runs every target over.
rm -rf "$out/seeds"
TRBOX_FUZZ_SEEDS="$PWD/$out/seeds" "$CARGO" test --release --quiet --lib fuzz_entry::seeds >"$out/seeds.log" 2>&1 ||
    { cat "$out/seeds.log" >&2; exit 1; }

# The console-log part of `stream` needs inflate. One target, or all.
one=()
[ $# -eq 1 ] && one=("$1")
(cd fuzz && "$CARGO" "+$NIGHTLY" fuzz build --features zlib "${one[@]}") >"$out/build.log" 2>&1 ||
    { tail -40 "$out/build.log" >&2; echo "fuzz: cargo fuzz build failed (log: $out/build.log)" >&2; exit 1; }

for t in "$@"; do
    corpus="$out/corpus/$t"
    mkdir -p "$corpus" "$out/seeds/$t"
    log="$out/$t.log"
    # The corpus grows from run to run (target/fuzz/corpus); the seeds are
    # read only. No -jobs: the machine may be shared.
    if ! (cd fuzz && "$CARGO" "+$NIGHTLY" fuzz run --features zlib "$t" "../$corpus" "../$out/seeds/$t" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1) >"$log" 2>&1; then
        grep -A40 -E '^==[0-9]+==|panicked|ERROR: libFuzzer' "$log" | head -60 >&2 || tail -40 "$log" >&2
        echo "fuzz $t: FAILED (log: $log; input in fuzz/artifacts/$t/)" >&2
        exit 1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    echo "fuzz $t: ${runs:-?} runs in ${secs} s, no crash (${cov:-cov: ?}, corpus $(ls "$corpus" | wc -l))"
done
