#!/usr/bin/env bash
# make bench, board part: what each codegen flag of the board build costs
# in speed on the board's own CPU (issue 42, §3). cross/rustflags.sh's
# rule: a flag stays only if it costs at most 2% of decode or record speed.
#
# Builds, for BENCH_FLAGS_BOARD's triple (default aarch64), the `full`
# configuration once without each flag of cross/rustflags.sh
# (TRBOX_DROP_FLAGS=NAME; BENCH_FLAGS="NAME..." picks some) and once with
# each flag it leaves out (+hpe: -homogeneous-prolog-epilog), each in a
# target directory of its own (target/flags/NAME), beside make cross's
# build with every flag. The board boots with all of them
# (TRBOX_BINS_EXTRA) and runs guest/ab-flags: ROUNDS rounds
# (BENCH_FLAGS_ROUNDS=8) of `tr-cat -j 1 FILE` and of a `tr-cat -o -t 4`
# while the same `dd bs=1` runs,
# with each build, in an order that rotates from round to round, so that
# the pairs share the host's load. This prints, per flag, the bytes it
# saves and the median over the rounds of (time with the flag / time
# without), for the decode's CPU and the recorder's CPU per MB, with the
# rounds' range. Under TCG absolute times say little: the ratios are the
# figures. Output: cross/out/bench-flags. Exit 1 when the board run fails.
set -euo pipefail
QEMU_DIR=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$QEMU_DIR/../.." && pwd)
board=${BENCH_FLAGS_BOARD:-aarch64}
rounds=${BENCH_FLAGS_ROUNDS:-8}
count=${BENCH_FLAGS_COUNT:-100000}
out=$REPO/cross/out/bench-flags
mkdir -p "$out"
read -r triple name < <(ARCH=$board KERNEL= bash -c '. "$1/common.sh" && echo "$TRIPLE $BOARD"' _ "$QEMU_DIR")
target=${CARGO_TARGET_DIR:-$REPO/target}
base=$target/$triple/release/trbox
[ -s "$base" ] || { echo "bench-flags: no $base: run make cross first (make bench does)" >&2; exit 1; }
names=${BENCH_FLAGS:-$(bash "$REPO/cross/rustflags.sh" --names "$triple" | tr '\n' ' ') +hpe}
extra=()
for n in $names; do
	d=$target/flags/$n
	echo "bench-flags: building $triple without $n (log: cross/out/bench-flags/build-$n.log)"
	case $n in
	+hpe) env RUSTFLAGS="-C llvm-args=-homogeneous-prolog-epilog" CARGO_TARGET_DIR="$d" TRBOX_CONFIG=full \
		bash "$REPO/cross/build.sh" "$triple" >"$out/build-$n.log" 2>&1 ;;
	*) env -u RUSTFLAGS CARGO_TARGET_DIR="$d" TRBOX_CONFIG=full TRBOX_DROP_FLAGS="$n" \
		bash "$REPO/cross/build.sh" "$triple" >"$out/build-$n.log" 2>&1 ;;
	esac || { echo "bench-flags: the build without $n failed (see $out/build-$n.log)" >&2; exit 1; }
	extra+=("$n=$d/$triple/release/trbox")
done
session=$out/session
echo "sh /etc/trbox/ab-flags $rounds $count $names ## expect: @@FLAG round=$rounds ## timeout: 7200 ## boards: all" >"$session"
rc=0
ARCH=$board KERNEL= SESSION=$session QEMU_OUT=$out TRBOX_BIN="$base" TRBOX_BINS_EXTRA="${extra[*]}" \
	"$QEMU_DIR/board.sh" test >"$out/board.log" 2>&1 || rc=$?
log=$out/$name/console.log
sizes=$(for x in "all=$base" "${extra[@]}"; do echo "${x%%=*} $(stat -c %s "${x#*=}")"; done)
python3 -c '
import sys, statistics
log, board = sys.argv[1], sys.argv[2]
size = dict((n, int(s)) for n, s in (l.split() for l in sys.stdin if l.strip()))
runs = {}
for line in open(log, errors="replace"):
    p = line.split()
    if not p or p[0] != "@@FLAG":
        continue
    f = dict(kv.split("=", 1) for kv in p[1:])
    cost = int(f["cpu_ms"]) / (int(f["bytes"]) / 1e6 if f["task"] == "record" else 1)
    runs[(f["round"], f["task"], f["name"])] = cost
if not runs:
    sys.exit("bench-flags: no figures from the board (see cross/out/bench-flags/board.log)")
rounds = sorted({r for r, _, _ in runs}, key=int)
print(f"\ncodegen flags on {board} (qemu TCG), {len(rounds)} rounds; time with the flag / without,")
print("median [range] of the rounds (decode: tr-cat -j 1 CPU; record: tr-cat -o CPU per MB)")
print("flag".ljust(10), "bytes saved".rjust(11), "", "decode".rjust(22), "", "record".rjust(22))
for n in [n for n in size if n != "all"]:
    cols = []
    for task in ("decode", "record"):
        rs = []
        for r in rounds:
            a, b = runs.get((r, task, "all")), runs.get((r, task, n))
            if a and b:
                # "all" has the flag, unless n adds one the build leaves out.
                rs.append(b / a if n.startswith("+") else a / b)
        cols.append(f"{statistics.median(rs):.3f} [{min(rs):.3f}, {max(rs):.3f}]" if rs else "-")
    saved = size[n] - size["all"] if not n.startswith("+") else size["all"] - size[n]
    print(f"{n:<10} {saved:>11}  {cols[0]:>22}  {cols[1]:>22}")
' "$log" "$board" <<<"$sizes" || rc=1
exit "$rc"
