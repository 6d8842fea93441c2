#!/usr/bin/env bash
# One board, start to end: fetch the kernel and busybox (cached), build the
# initramfs around the trbox binary for ARCH, boot it in MODE (see run.sh).
#   ARCH=armv7 cross/qemu/board.sh tour|demo|test|shell|fixtures
# The trbox binary comes from `make cross` (override with TRBOX_BIN=...).
set -euo pipefail
. "$(dirname "$0")/common.sh"
mode=${1:-tour}
"$QEMU_DIR/fetch.sh"
"$QEMU_DIR/mkinitramfs.sh"
rc=0
"$QEMU_DIR/run.sh" "$mode" || rc=$?
if [ "$mode" = test ]; then
	"$QEMU_DIR/check.sh" "$rc"
	exit $?
fi
if [ "$mode" = tour ]; then
	"$QEMU_DIR/tour-check.sh" "$rc"
	exit $?
fi
exit "$rc"
