#!/usr/bin/env bash
# make qemu-test: run the board session on each board, check it on the host
# (check.sh) and print "N passed, M failed" over all checks, with each
# board's boot and run time. Exits 1 on any failure.
#   cross/qemu/test.sh [BOARD...]      BREAK=bin|cmd|hang|stuck|boot for a broken board
# A board is ARCH or ARCH:KERNEL (aarch64, armv7:5.10, aarch64:6.12-16k, ...;
# the list is in common.sh and README.md).
# QEMU_JOBS boards run at a time (default 2): a session spends much of its
# time in timed runs (-t S, sleeps) that leave the CPU idle, so two boards
# on two cores take about 60% of the time of one after the other. Three
# gained nothing (2026-11-29: the 14 boards in 2,298 s, each about twice
# as slow as beside one other) and made the RT boards' timing checks
# flaky. Each board's output is printed whole when it ends.
set -uo pipefail
QEMU_DIR=$(cd "$(dirname "$0")" && pwd)
boards=("$@")
[ ${#boards[@]} -gt 0 ] || boards=(aarch64 armv7 x86_64)
jobs=${QEMU_JOBS:-2}
root=$(cd "$QEMU_DIR/../.." && pwd)

start=$SECONDS
# The live suites are shared out over the live boards of this run: the
# boards of common.sh's LIVE_ALL among those given, unless QEMU_LIVE_BOARDS
# says which (a live board not run would take its share of the tests with
# it).
if [ -z "${QEMU_LIVE_BOARDS+set}" ]; then
	live=
	for b in "${boards[@]}"; do
		live+=$(ARCH=$b KERNEL= bash -c '. "$1/common.sh" && case " $LIVE_ALL " in *" $ARCH:$KERNEL "*) echo " $ARCH:$KERNEL" ;; esac' _ "$QEMU_DIR" 2>/dev/null)
	done
	export QEMU_LIVE_BOARDS=${live# }
	[ -n "$QEMU_LIVE_BOARDS" ] || QEMU_LIVE_BOARDS=none
fi
# Fetch every kernel first, one at a time: boards of one Debian suite share
# its apt state.
for b in "${boards[@]}"; do
	ARCH=$b KERNEL= "$QEMU_DIR/fetch.sh" >/dev/null 2>&1 || true
done
# The live boards' test binaries, built once before the boards start
# (live.sh; each board's mkinitramfs.sh then finds them fresh).
for b in "${boards[@]}"; do
	if ARCH=$b KERNEL= bash -c '. "$1/common.sh" && . "$1/live.sh" && [ "$LIVE" = 1 ]' _ "$QEMU_DIR" 2>/dev/null; then
		ARCH=$b KERNEL= bash -c '. "$1/common.sh" && . "$1/live.sh" && live_build' _ "$QEMU_DIR" || true
		break
	fi
done

# One board, start to end, its output in its own log.
run_board() { # BOARD NAME
	local b=$1 name=$2 out=$root/cross/out/$2 t0=$SECONDS rc=0
	mkdir -p "$out"
	rm -f "$out/check-result" "$out/boot-seconds" "$out/run-seconds" "$out/board-status"
	ARCH=$b KERNEL= "$QEMU_DIR/board.sh" test >"$out/test.log" 2>&1 || rc=$?
	echo "$rc $((SECONDS - t0))" >"$out/board-status"
}

names=()
for b in "${boards[@]}"; do
	# The board's directory name (cross/out/NAME), from common.sh.
	names+=("$(ARCH=$b KERNEL= bash -c '. "$1/common.sh" && echo "$BOARD"' _ "$QEMU_DIR" 2>/dev/null)")
done

pass=0 fail=0 skipped=0 broken=() times=()
report() { # INDEX
	local b=${boards[$1]} name=${names[$1]} out=$root/cross/out/${names[$1]} rc secs p f s=0
	cat "$out/test.log"
	read -r rc secs <"$out/board-status"
	if [ -s "$out/check-result" ]; then
		read -r p f s <"$out/check-result"
		s=${s:-0}
	else
		# The board could not even be built or booted: count it as one failure.
		echo "[qemu $name] FAIL  board setup failed (status $rc) before the checks; see above"
		p=0 f=1
	fi
	pass=$((pass + p)) fail=$((fail + f)) skipped=$((skipped + s))
	[ "$f" = 0 ] && [ "$rc" = 0 ] || broken+=("$b")
	times+=("$(printf '%-18s boot %5ss  qemu %6ss  all %4ss  %3s passed %2s failed%s  %s' "$name" \
		"$(cat "$out/boot-seconds" 2>/dev/null || echo '?')" "$(cat "$out/run-seconds" 2>/dev/null || echo '?')" \
		"$secs" "$p" "$f" "$([ "$s" = 0 ] || echo " ($s skipped)")" "$([ "$f" = 0 ] && [ "$rc" = 0 ] && echo ok || echo FAILED)")")
}

declare -A running=() # pid -> board index
for i in "${!boards[@]}"; do
	if [ -z "${names[$i]}" ]; then
		echo "[qemu ${boards[$i]}] FAIL  no such board"
		fail=$((fail + 1)) broken+=("${boards[$i]}")
		continue
	fi
	while [ ${#running[@]} -ge "$jobs" ]; do
		wait -n
		for pid in "${!running[@]}"; do
			kill -0 "$pid" 2>/dev/null && continue
			report "${running[$pid]}"
			unset "running[$pid]"
		done
	done
	run_board "${boards[$i]}" "${names[$i]}" &
	running[$!]=$i
	echo "[qemu ${names[$i]}] started"
done
for pid in "${!running[@]}"; do
	wait "$pid"
	report "${running[$pid]}"
done

echo
# The failed checks again, each with the first lines of what it printed:
# a CI log is often read from its end only.
for i in "${!boards[@]}"; do
	log=$root/cross/out/${names[$i]}/test.log
	[ -n "${names[$i]}" ] && [ -f "$log" ] || continue
	grep -A 6 '\] FAIL ' "$log" | cut -c1-300 | head -n 30
done
printf '%s\n' "${times[@]}"
echo "qemu-test: ${#boards[@]} boards in $((SECONDS - start))s (${jobs} at a time)${broken:+, failing: ${broken[*]}}"
if [ "$skipped" = 0 ]; then
	echo "$pass passed, $fail failed"
else
	echo "$pass passed ($skipped of them live tests that skipped), $fail failed"
fi
[ "$fail" = 0 ] && [ ${#broken[@]} = 0 ]
