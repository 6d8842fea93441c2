#!/usr/bin/env bash
# make bench, board part: `tr-cat FILE` against Debian's `trace-cmd report`
# on the boards' own CPUs (BENCH_DECODE_BOARDS, default "aarch64 armv7";
# trace-cmd comes from cross/qemu/debs). Each board runs one session line,
# guest/vs-trace-cmd COUNT (BENCH_DECODE_COUNT=20000: a recording of
# raw_syscalls during `dd bs=1 count=COUNT`), and this prints each reader's
# wall time, CPU time and peak RSS, and the ratios. Under TCG the absolute
# times say little: the ratio is the figure. Its own output directory
# (cross/out/bench-decode/BOARD). Exit 1 when a board run fails.
set -euo pipefail
QEMU_DIR=$(cd "$(dirname "$0")" && pwd)
count=${BENCH_DECODE_COUNT:-20000}
out=$(cd "$QEMU_DIR/../.." && pwd)/cross/out/bench-decode
mkdir -p "$out"
session=$out/session
echo "sh /etc/trbox/vs-trace-cmd $count ## expect: @@BENCH tr-cat-j1 ## timeout: 900 ## boards: all" >"$session"
rc=0
for board in ${BENCH_DECODE_BOARDS:-aarch64 armv7}; do
	b=0
	ARCH=$board KERNEL= SESSION=$session QEMU_OUT=$out "$QEMU_DIR/board.sh" test >"$out/board.log" 2>&1 || b=$?
	name=$(ARCH=$board KERNEL= bash -c '. "$1/common.sh" && echo "$BOARD"' _ "$QEMU_DIR")
	log=$out/$name/console.log
	awk -v board="$board" '
	$1 == "@@BENCH" { for (i = 3; i <= NF; i++) { split($i, kv, "="); f[$2, kv[1]] = kv[2] } seen[$2] = 1 }
	END {
		if (!seen["trace-cmd"] || !seen["tr-cat"] || !seen["tr-cat-j1"]) { print "bench-decode: no figures from " board " (see cross/out/bench-decode/board.log)"; exit 1 }
		printf "\ndecoding a trace.dat on %s (qemu TCG, 2 vCPUs), to /dev/null, best of 2\n", board
		printf "%-22s %10s %10s %10s %10s\n", "", "lines", "wall ms", "CPU ms", "peak RSS"
		split("trace-cmd tr-cat tr-cat-j1", t, " ")
		split("trace-cmd report|tr-cat FILE|tr-cat -j 1 FILE", label, "|")
		for (j = 1; j <= 3; j++)
			printf "%-22s %10d %10d %10d %6d KiB\n", label[j], f[t[j], "lines"], f[t[j], "ms"], f[t[j], "cpu_ms"], f[t[j], "rss_kib"]
		printf "tr-cat is %.1fx as fast as trace-cmd report (-j 1: %.1fx), with %.2fx its peak RSS\n",
			f["trace-cmd", "ms"] / f["tr-cat", "ms"], f["trace-cmd", "ms"] / f["tr-cat-j1", "ms"], f["tr-cat", "rss_kib"] / f["trace-cmd", "rss_kib"]
	}' "$log" || b=1
	[ "$b" = 0 ] || rc=1
done
exit "$rc"
