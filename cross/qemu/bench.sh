#!/usr/bin/env bash
# make bench, board part: rtla against tr-lat on the PREEMPT_RT arm64 boards
# (BENCH_BOARD, a list, default aarch64:6.1-rt with rtla 6.1 and
# aarch64:7.2-rt with rtla 7.2, both with user-space threads there; rtla
# comes from cross/qemu/debs), one board after the other.
# Boots the board with a session of one line, guest/vs-rtla SECONDS PERIOD_US
# (BENCH_SECONDS=10, BENCH_PERIOD_US=1000): the kernel alone, then `rtla
# timerlat top` and `tr-lat timerlat`, each under busybox time -v; prints
# each collector's CPU time (user+sys) and peak RSS, and tr-lat's share of
# rtla's. Then, in the same boot, guest/ab-lat SECONDS PERIOD_US ROUNDS
# (BENCH_ROUNDS=12): the two alternated, so that each pair shares the
# host's load (one sequential run of each moves by 10% with it under TCG):
# the medians of their sample counts, the rounds where tr-lat counted at
# least rtla's, the rounds where tr-lat read every timer IRQ the kernel
# took (by sequence number), and each collector's own CPU. Its own output
# directory (cross/out/bench/BOARD, BOARD.log), so the test board's
# transcript is left alone. Exit 1 when the board run fails.
set -euo pipefail
QEMU_DIR=$(cd "$(dirname "$0")" && pwd)
boards=${BENCH_BOARD:-aarch64:6.1-rt aarch64:7.2-rt}
secs=${BENCH_SECONDS:-10}
period=${BENCH_PERIOD_US:-1000}
rounds=${BENCH_ROUNDS:-12}
out=$(cd "$QEMU_DIR/../.." && pwd)/cross/out/bench
mkdir -p "$out"
rc=0
for board in $boards; do
	session=$out/session
	{
		echo "sh /etc/trbox/vs-rtla $secs $period ## expect: max-same-order: ## timeout: $((secs * 20)) ## boards: all"
		echo "sh /etc/trbox/ab-lat $secs $period $rounds ## expect: @@AB-DONE ## timeout: $((secs * rounds * 20)) ## boards: all"
	} >"$session"
	name=$(ARCH=$board KERNEL= bash -c '. "$1/common.sh" && echo "$BOARD"' _ "$QEMU_DIR")
	ARCH=$board KERNEL= SESSION=$session QEMU_OUT=$out "$QEMU_DIR/board.sh" test >"$out/$name.log" 2>&1 || rc=$?
	log=$out/$name/console.log
	grep -E '^(kernel|rtla|tr-lat) +[0-9]+ IRQ samples|^samples-within|^max-same-order' "$log" || true
	awk -v secs="$secs" -v period="$period" -v board="$board" '
	$1 == "@@BENCH" { for (i = 3; i <= NF; i++) { split($i, kv, "="); f[$2, kv[1]] = kv[2] } seen[$2] = 1 }
	END {
		if (!seen["rtla"] || !seen["tr-lat"]) { print "bench: no figures from the board (see cross/out/bench/BOARD.log)"; exit 1 }
		printf "\ntimerlat collectors on %s, %d s at a %d us period (busybox time -v)\n", board, secs, period
		printf "%-8s %10s %10s %10s\n", "", "CPU ms", "peak RSS", "samples"
		for (j = 1; j <= 2; j++) {
			t = j == 1 ? "rtla" : "tr-lat"
			printf "%-8s %10d %7d KiB %10d\n", t, f[t, "cpu_ms"], f[t, "rss_kib"], f[t, "samples"]
		}
		c = f["rtla", "cpu_ms"] ? f["tr-lat", "cpu_ms"] / f["rtla", "cpu_ms"] : 0
		m = f["rtla", "rss_kib"] ? f["tr-lat", "rss_kib"] / f["rtla", "rss_kib"] : 0
		printf "tr-lat / rtla: CPU %.2fx, peak RSS %.2fx (kernel alone: %d samples of %d wanted)\n", c, m, f["kernel", "samples"], f["kernel", "want"]
	}' "$log" || rc=1
	# The alternated rounds: @@AB TOOL samples=N max_thread_us=N [taken=N] ...
	awk -v secs="$secs" -v period="$period" -v rounds="$rounds" '
	function median(a, n,  i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	$1 == "@@AB" && ($2 == "rtla" || $2 == "tr-lat") {
		for (i = 3; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		if ($2 == "rtla") { r[++nr] = v["samples"]; ro[nr] = v["own_s"] }
		else { t[++nt] = v["samples"]; to[nt] = v["own_s"]; if (v["samples"] == v["taken"]) all++ }
	}
	END {
		if (!nr || !nt) { print "bench: no alternated rounds from the board (ab-lat)"; exit 1 }
		# Round k of each tool: a pair that shared the load of the host.
		for (k = 1; k <= nt && k <= nr; k++) if (t[k] >= r[k]) won++
		mr = median(r, nr); mt = median(t, nt)
		printf "alternated, %d rounds of %d s at %d us: median samples rtla %d, tr-lat %d (%.3fx); tr-lat >= rtla in %d of %d rounds; tr-lat read every timer IRQ the kernel took in %d of %d rounds; collector CPU (median) rtla %.2f s, tr-lat %.2f s; tr-lat >= rtla: %s\n",
			nt, secs, period, mr, mt, (mr ? mt / mr : 0), won, nt, all, nt, median(ro, nr), median(to, nt), (mt >= mr ? "yes" : "no")
	}' "$log" || rc=1
done
exit "$rc"
