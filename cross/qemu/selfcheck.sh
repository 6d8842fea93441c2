#!/usr/bin/env bash
# make qemu-selfcheck: the harness must catch broken boards. Runs qemu-test
# on one board (ARCH, default aarch64) once per kind of breakage and wants
# each run to fail, within its time limit, with the reason it should give:
#   bin   trbox replaced by random bytes
#   cmd   a failing command and an unmet expectation added to the session
#   hang  a command that never ends (host limit QEMU_TIMEOUT, here 45 s)
#   stuck a command the guest cannot stop at its limit: run.sh's watchdog
#         ends the board and names it
#   boot  no /init: the kernel panics before the session
set -uo pipefail
QEMU_DIR=$(cd "$(dirname "$0")" && pwd)
arch=${ARCH:-aarch64}
pass=0 fail=0
for b in bin cmd hang stuck boot; do
	limit=45
	case $b in
	bin) want="/bin/trbox is not an ELF executable" ;;
	cmd) want="output lacks 'this text is never printed'" ;;
	hang) want="time limit" ;;
	# The watchdog stops the board 30 s past the command's 5 s.
	stuck) want="past its own limit of 5s, and the guest did not end it" limit=120 ;;
	boot) want="no @@BOOT marker" ;;
	esac
	t0=$SECONDS
	out=$(BREAK=$b QEMU_TIMEOUT=$limit QEMU_LIVE_BOARDS=none "$QEMU_DIR/test.sh" "$arch" 2>&1)
	rc=$?
	took=$((SECONDS - t0))
	if [ "$rc" != 0 ] && grep -qF -- "$want" <<<"$out" && grep -q '^[0-9]* passed, [1-9][0-9]* failed$' <<<"$out"; then
		pass=$((pass + 1))
		echo "selfcheck ok    BREAK=$b: qemu-test failed as it should in ${took}s, saying:"
		grep -F -m1 -- "$want" <<<"$out" | sed 's/^/      /'
	else
		fail=$((fail + 1))
		echo "selfcheck FAIL  BREAK=$b: qemu-test exit $rc after ${took}s; wanted a failure mentioning \"$want\". Its output:"
		tail -n 30 <<<"$out" | sed 's/^/      /'
	fi
done
echo "selfcheck: $pass passed, $fail failed"
[ "$fail" = 0 ]
