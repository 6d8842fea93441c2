#!/usr/bin/env bash
# Recording to a file on the board: `tr-cat -o` against Debian's `trace-cmd
# record` on the disk board's ext4, f2fs and vfat (disk.sh) and on /tmp.
# One board (BENCH_RECORD_BOARD, default aarch64; trace-cmd comes from
# cross/qemu/debs) runs guest/vs-record COUNT (BENCH_RECORD_COUNT=100000:
# raw_syscalls during `dd bs=1 count=COUNT`), and this prints each run's
# CPU time per MB of file. The CPU time includes dd's (timed alone too):
# under TCG the absolute times say little, compare the tools. Not part of
# make bench. Its own output directory (cross/out/bench-record/BOARD).
# Exit 1 when the board run fails.
set -euo pipefail
QEMU_DIR=$(cd "$(dirname "$0")" && pwd)
count=${BENCH_RECORD_COUNT:-100000}
board=${BENCH_RECORD_BOARD:-aarch64}
out=$(cd "$QEMU_DIR/../.." && pwd)/cross/out/bench-record
mkdir -p "$out"
session=$out/session
{
	echo "sh /etc/trbox/disk-up ## expect: disk-up: all mounted ## timeout: 60 ## boards: all"
	echo "sh /etc/trbox/vs-record $count ## expect: @@BENCH trace-cmd-v6 tmp ## timeout: 1800 ## boards: all"
} >"$session"
rc=0
QEMU_DISK_BOARDS=$board QEMU_NET_BOARDS=none ARCH=$board KERNEL= SESSION=$session QEMU_OUT=$out "$QEMU_DIR/board.sh" test >"$out/board.log" 2>&1 || rc=$?
name=$(ARCH=$board KERNEL= bash -c '. "$1/common.sh" && echo "$BOARD"' _ "$QEMU_DIR")
awk -v board="$board" -v count="$count" '
$1 == "@@BENCH" { for (i = 4; i <= NF; i++) { split($i, kv, "="); f[$2, $3, kv[1]] = kv[2] } seen[$2, $3] = 1 }
END {
	if (!seen["trace-cmd-v6", "tmp"]) { print "bench-record: no figures from " board " (see cross/out/bench-record/board.log)"; exit 1 }
	printf "recording raw_syscalls of dd bs=1 count=%d on %s (qemu TCG, 2 vCPUs); dd alone: CPU %d ms\n", count, board, f["dd", "-", "cpu_ms"]
	printf "%-6s %-13s %7s %8s %8s %8s %10s %12s\n", "fs", "tool", "MB", "events", "wall ms", "CPU ms", "CPU ms/MB", "CPU ms/100k"
	split("ext4 f2fs vfat tmp", fs, " ")
	split("tr-cat trace-cmd trace-cmd-v6", t, " ")
	for (i = 1; i <= 4; i++)
		for (j = 1; j <= 3; j++) {
			n = f[t[j], fs[i], "events"]
			printf "%-6s %-13s %7.1f %8d %8d %8d %10d %12d\n", fs[i], t[j], f[t[j], fs[i], "bytes"] / 1048576, n,
				f[t[j], fs[i], "ms"], f[t[j], fs[i], "cpu_ms"], f[t[j], fs[i], "cpu_ms_per_mb"], n ? f[t[j], fs[i], "cpu_ms"] * 100000 / n : 0
		}
	print "(trace-cmd: its default file, version 7 with zstd; trace-cmd-v6: --file-version 6, uncompressed, as tr-cat writes)"
}' "$out/$name/console.log" || rc=1
exit "$rc"
