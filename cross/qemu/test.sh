#!/usr/bin/env bash
# make qemu-test: run the board session on each architecture (default: all
# three, one after the other), check it on the host (check.sh) and print
# "N passed, M failed" over all checks. Exits 1 on any failure.
#   cross/qemu/test.sh [ARCH...]      BREAK=bin|cmd|hang|boot for a broken board
set -uo pipefail
QEMU_DIR=$(cd "$(dirname "$0")" && pwd)
archs=("$@")
[ ${#archs[@]} -gt 0 ] || archs=(aarch64 armv7 x86_64)

pass=0 fail=0 broken=()
start=$SECONDS
for a in "${archs[@]}"; do
	out=$(cd "$QEMU_DIR/../.." && pwd)/cross/out/$a
	rm -f "$out/check-result"
	ARCH=$a "$QEMU_DIR/board.sh" test
	rc=$?
	if [ -s "$out/check-result" ]; then
		read -r p f <"$out/check-result"
	else
		# The board could not even be built or booted: count it as one failure.
		echo "[qemu $a] FAIL  board setup failed (status $rc) before the checks; see above"
		p=0 f=1
	fi
	pass=$((pass + p)) fail=$((fail + f))
	[ "$f" = 0 ] && [ "$rc" = 0 ] || broken+=("$a")
done

echo
echo "qemu-test: ${#archs[@]} boards in $((SECONDS - start))s${broken:+, failing: ${broken[*]}}"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ ${#broken[@]} = 0 ]
