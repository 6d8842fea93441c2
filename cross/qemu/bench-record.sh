#!/usr/bin/env bash
# Recording to a file on the board: `tr-cat -o` against Debian's `trace-cmd
# record` on the disk board's ext4, f2fs and vfat (disk.sh) and on /tmp.
# One board (BENCH_RECORD_BOARD, default aarch64; trace-cmd comes from
# cross/qemu/debs) runs guest/vs-record COUNT ROUNDS (BENCH_RECORD_COUNT=
# 100000: raw_syscalls during `dd bs=1 count=COUNT`; BENCH_RECORD_ROUNDS=3),
# and this prints the medians of each run's CPU time per MB of file (the
# recorder's alone, timed while dd runs beside it), and tr-cat's against
# trace-cmd's version-6 file (uncompressed, as tr-cat writes it) per
# filesystem: issue 42 §2's goal is at most 0.6. Under TCG
# the absolute times say little, compare the tools. make bench runs it
# (BENCH_RECORD_BOARD= leaves it out). Its own output directory
# (cross/out/bench-record/BOARD). TRBOX_BIN_B=PATH: a second build's
# tr-cat too (tr-cat-b), for an A/B. Exit 1 when the board run fails.
set -euo pipefail
QEMU_DIR=$(cd "$(dirname "$0")" && pwd)
count=${BENCH_RECORD_COUNT:-100000}
rounds=${BENCH_RECORD_ROUNDS:-3}
board=${BENCH_RECORD_BOARD:-aarch64}
out=$(cd "$QEMU_DIR/../.." && pwd)/cross/out/bench-record
mkdir -p "$out"
session=$out/session
{
	echo "sh /etc/trbox/disk-up ## expect: disk-up: all mounted ## timeout: 60 ## boards: all"
	echo "sh /etc/trbox/vs-record $count $rounds ## expect: @@BENCH trace-cmd-v6 tmp ## timeout: $((rounds * 900)) ## boards: all"
} >"$session"
rc=0
QEMU_DISK_BOARDS=$board QEMU_NET_BOARDS=none ARCH=$board KERNEL= SESSION=$session QEMU_OUT=$out "$QEMU_DIR/board.sh" test >"$out/board.log" 2>&1 || rc=$?
name=$(ARCH=$board KERNEL= bash -c '. "$1/common.sh" && echo "$BOARD"' _ "$QEMU_DIR")
awk -v board="$board" -v count="$count" -v rounds="$rounds" '
# The median of the values of key k (a list "v v v" in vals[k]).
function median(k,    n, a, i, j, t) {
	n = split(vals[k], a, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n ? (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) : 0
}
$1 == "@@BENCH" {
	delete kv1
	for (i = 4; i <= NF; i++) { split($i, kv, "="); kv1[kv[1]] = kv[2] }
	k = $2 SUBSEP $3
	mb = kv1["bytes"] / 1048576
	vals[k, "mb"] = vals[k, "mb"] " " mb
	vals[k, "events"] = vals[k, "events"] " " kv1["events"]
	vals[k, "cpu"] = vals[k, "cpu"] " " kv1["cpu_ms"]
	vals[k, "rec"] = vals[k, "rec"] " " (mb ? kv1["cpu_ms"] / mb : 0)
	seen[k] = 1
}
END {
	if (!seen["trace-cmd-v6", "tmp"]) { print "bench-record: no figures from " board " (see cross/out/bench-record/board.log)"; exit 1 }
	printf "recording raw_syscalls while dd bs=1 count=%d runs on %s (qemu TCG, 2 vCPUs), medians of %d rounds\n", count, board, rounds
	printf "%-6s %-13s %7s %8s %8s %14s %14s\n", "fs", "tool", "MB", "events", "CPU ms", "recorder ms/MB", "vs trace-cmd-v6"
	split("ext4 f2fs vfat tmp", fs, " ")
	nt = split(seen["tr-cat-b", "tmp"] ? "tr-cat tr-cat-b trace-cmd trace-cmd-v6" : "tr-cat trace-cmd trace-cmd-v6", t, " ")
	for (i = 1; i <= 4; i++) {
		base = median("trace-cmd-v6" SUBSEP fs[i] SUBSEP "rec")
		for (j = 1; j <= nt; j++) {
			k = t[j] SUBSEP fs[i]
			rec = median(k SUBSEP "rec")
			printf "%-6s %-13s %7.1f %8d %8d %14.0f %14s\n", fs[i], t[j], median(k SUBSEP "mb"), median(k SUBSEP "events"),
				median(k SUBSEP "cpu"), rec, (t[j] ~ /^tr-cat/ && base > 0) ? sprintf("%.2f", rec / base) : ""
		}
	}
	print "(recorder ms/MB: CPU of the recorder and its children, dd not among them, per MB of file; trace-cmd: its default file, version 7 with zstd, MB of the compressed file; trace-cmd-v6: --file-version 6, uncompressed, as tr-cat writes)"
}' "$out/$name/console.log" || rc=1
exit "$rc"
