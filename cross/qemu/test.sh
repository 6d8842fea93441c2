#!/usr/bin/env bash
# make qemu-test: run the board session on each board (default: the three
# 6.1 boards), one after the other, check it on the host (check.sh) and
# print "N passed, M failed" over all checks, with each board's boot and
# run time. Exits 1 on any failure.
#   cross/qemu/test.sh [BOARD...]      BREAK=bin|cmd|hang|boot for a broken board
# A board is ARCH or ARCH:KERNEL (aarch64, armv7:5.10, aarch64:6.12-16k, ...;
# the list is in common.sh and README.md).
set -uo pipefail
QEMU_DIR=$(cd "$(dirname "$0")" && pwd)
boards=("$@")
[ ${#boards[@]} -gt 0 ] || boards=(aarch64 armv7 x86_64)

pass=0 fail=0 broken=() times=()
start=$SECONDS
for b in "${boards[@]}"; do
	# The board's directory name (cross/out/NAME), from common.sh.
	name=$(ARCH=$b KERNEL= bash -c '. "$1/common.sh" && echo "$BOARD"' _ "$QEMU_DIR") || {
		echo "[qemu $b] FAIL  no such board"
		fail=$((fail + 1)) broken+=("$b")
		continue
	}
	out=$(cd "$QEMU_DIR/../.." && pwd)/cross/out/$name
	rm -f "$out/check-result" "$out/boot-seconds" "$out/run-seconds"
	t0=$SECONDS
	ARCH=$b KERNEL= "$QEMU_DIR/board.sh" test
	rc=$?
	if [ -s "$out/check-result" ]; then
		read -r p f <"$out/check-result"
	else
		# The board could not even be built or booted: count it as one failure.
		echo "[qemu $name] FAIL  board setup failed (status $rc) before the checks; see above"
		p=0 f=1
	fi
	pass=$((pass + p)) fail=$((fail + f))
	[ "$f" = 0 ] && [ "$rc" = 0 ] || broken+=("$b")
	times+=("$(printf '%-18s boot %5ss  qemu %6ss  all %4ss  %s' "$name" \
		"$(cat "$out/boot-seconds" 2>/dev/null || echo '?')" "$(cat "$out/run-seconds" 2>/dev/null || echo '?')" \
		"$((SECONDS - t0))" "$([ "$f" = 0 ] && [ "$rc" = 0 ] && echo ok || echo FAILED)")")
done

echo
printf '%s\n' "${times[@]}"
echo "qemu-test: ${#boards[@]} boards in $((SECONDS - start))s${broken:+, failing: ${broken[*]}}"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ ${#broken[@]} = 0 ]
