#!/usr/bin/env bash
# Build the board's initramfs (cpio newc, gzip) for ARCH:
#   /init, /bin/busybox, /bin/trbox, /etc/trbox/{session,tour,run-session,record-fixtures}
#   (and /bin/trbox-b with TRBOX_BIN_B=path: guest/ab-lat's second binary;
#   /bin/trbox-NAME for each NAME=PATH of TRBOX_BINS_EXTRA: guest/ab-flags's
#   builds without one codegen flag each)
# into cross/out/ARCH/initramfs.gz (the tree is kept in cross/out/ARCH/root).
# BREAK=bin|cmd|hang|stuck|boot builds a deliberately broken board for the
# harness's self-check (see README.md).
set -euo pipefail
. "$(dirname "$0")/common.sh"

[ -s "$CACHE/busybox" ] || die "no busybox in ${CACHE#"$REPO"/}: run cross/qemu/fetch.sh first"
[ -s "$TRBOX_BIN" ] || die "no trbox binary at ${TRBOX_BIN#"$REPO"/}: run 'make cross' first"
command -v cpio >/dev/null || die "cpio not found: run cross/qemu/setup.sh"

root=$OUT/root
rm -rf "$root"
mkdir -p "$root/bin" "$root/etc/trbox" "$root/root" "$root/tmp"
install -m 0755 "$CACHE/busybox" "$root/bin/busybox"
install -m 0755 "$TRBOX_BIN" "$root/bin/trbox"
install -m 0755 "$QEMU_DIR/guest/init" "$root/init"
install -m 0755 "$QEMU_DIR/guest/run-session" "$root/etc/trbox/run-session"
install -m 0644 "$QEMU_DIR/tour" "$root/etc/trbox/tour"
install -m 0755 "$QEMU_DIR/guest/record-fixtures" "$root/etc/trbox/record-fixtures"
install -m 0755 "$QEMU_DIR/guest/vs-rtla" "$root/etc/trbox/vs-rtla"
install -m 0755 "$QEMU_DIR/guest/vs-trace-cmd" "$root/etc/trbox/vs-trace-cmd"
install -m 0755 "$QEMU_DIR/guest/vs-record" "$root/etc/trbox/vs-record"
install -m 0755 "$QEMU_DIR/guest/send-file" "$root/etc/trbox/send-file"
install -m 0755 "$QEMU_DIR/guest/ab-lat" "$root/etc/trbox/ab-lat"
[ -z "${TRBOX_BIN_B:-}" ] || install -m 0755 "$TRBOX_BIN_B" "$root/bin/trbox-b"
for nb in ${TRBOX_BINS_EXTRA:-}; do
	install -m 0755 "${nb#*=}" "$root/bin/trbox-${nb%%=*}"
done
install -m 0755 "$QEMU_DIR/guest/ab-flags" "$root/etc/trbox/ab-flags"
# Debian programs for this board (cross/qemu/debs), with their libraries.
"$QEMU_DIR/debbin.sh" "$root"
# The whole session (SESSION_FULL) or the short one: comments, and the
# lines whose '## boards: LIST' names this board -- 'all', the board
# (aarch64:6.1-rt) or its kernel (6.1-rt: lines for what only that kernel
# has, such as the RT tracers); unmarked lines run in the whole session only.
# A live-only board (SESSION_NONE) keeps only the comments.
pick() {
awk -v full="$SESSION_FULL" -v none="$SESSION_NONE" -v board="$ARCH:$KERNEL" -v kernel="$KERNEL" '
/^(#|$)/ { print; next }
none == 1 { next }
{
	i = index($0, "## boards: ")
	if (!i) { if (full == 1) print; next }
	n = split(substr($0, i + 11), w, " ")
	for (j = 1; j <= n && w[j] != "##"; j++)
		if (w[j] == "all" || w[j] == board || w[j] == kernel) { print; next }
}' "$1"
}
pick "${SESSION:-$QEMU_DIR/session}" >"$root/etc/trbox/session"
# A first boot's session (the warm-reboot board, lastboot.sh): guest/init
# runs it when the persistent instance holds no previous boot.
[ -z "${SESSION_FIRST:-}" ] || pick "$SESSION_FIRST" >"$root/etc/trbox/session-first"
install -m 0755 "$QEMU_DIR/guest/lastboot-copy" "$QEMU_DIR/guest/lastboot-send" "$root/etc/trbox/"
# The network boards' modules, net-up and session-net lines (net.sh).
. "$QEMU_DIR/net.sh"
net_initramfs "$root"
# The disk boards' modules, disk-up and session-disk lines (disk.sh).
. "$QEMU_DIR/disk.sh"
disk_initramfs "$root"
# The live boards' test binaries, data and live-test lines (live.sh).
. "$QEMU_DIR/live.sh"
live_initramfs "$root"
# A binary of another configuration (make cross CONFIG=minimal): without
# the lines that need what it leaves out (features.sh).
. "$QEMU_DIR/features.sh"
features_filter "$root/etc/trbox/session"

case "${BREAK:-}" in
'' | 0) ;;
1 | bin) # a trbox that cannot execute
	head -c 4096 /dev/urandom >"$root/bin/trbox" ;;
cmd) # a command that fails and an expectation that is not met
	printf '%s\n' 'tr-on --no-such-option' 'echo all fine ## expect: this text is never printed' >>"$root/etc/trbox/session" ;;
hang) # a guest that never finishes: the host's time limit must end it
	printf '%s\n' 'sleep 100000 ## timeout: 100000' >>"$root/etc/trbox/session" ;;
stuck) # a first command whose limit the guest cannot keep (the session's
	# shell stopped): the host's watchdog (run.sh) must end the board
	sed -i '1i kill -STOP $PPID; sleep 100000 ## timeout: 5' "$root/etc/trbox/session" ;;
boot) # no init: the kernel panics before the session starts
	rm -f "$root/init" ;;
*) die "unknown BREAK=$BREAK (use bin, cmd, hang, stuck or boot)" ;;
esac

mkdir -p "$OUT"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --owner=0:0 --quiet) | gzip -1 >"$OUT/initramfs.gz.tmp"
mv -f "$OUT/initramfs.gz.tmp" "$OUT/initramfs.gz"
say "initramfs ${OUT#"$REPO"/}/initramfs.gz ($(($(stat -c %s "$OUT/initramfs.gz") / 1024)) KiB, $([ "$SESSION_NONE" = 1 ] && echo no || { [ "$SESSION_FULL" = 1 ] && echo full; } || echo short) session${BREAK:+, BREAK=$BREAK})"
