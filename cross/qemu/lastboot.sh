#!/usr/bin/env bash
# make qemu-lastboot: the persistent ring buffer across a crash and a warm
# reboot (issue 30 §1), on each board given (default: aarch64:7.2
# aarch64:6.12, the kernels with last_boot_info).
#   cross/qemu/lastboot.sh [BOARD...]
# One qemu run per board, without -no-reboot (QEMU_REBOOT=1): the kernel
# command line adds 'reserve_mem=12M:4096:trace
# trace_instance=boot_mapped@trace panic=1'. The first boot runs
# session-lastboot-first (trbox enables events in boot_mapped, a command
# marks the buffer and writes 'c' to /proc/sysrq-trigger); the panic resets
# the board, qemu keeps its RAM, and the second boot (guest/init finds the
# marker) runs session-lastboot, checked by check.sh. Transcripts in
# cross/out/lastboot/BOARD/: first-console.log (the first boot) and
# console.log (the second). Prints "N passed, M failed"; exits 1 on any
# failure.
set -uo pipefail
QEMU_DIR=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$QEMU_DIR/../.." && pwd)
boards=("$@")
[ ${#boards[@]} -gt 0 ] || boards=(aarch64:7.2 aarch64:6.12)
export QEMU_OUT=${QEMU_LASTBOOT_OUT:-$REPO/cross/out/lastboot} QEMU_NET_BOARDS=none
pass=0 fail=0
for b in "${boards[@]}"; do
	t0=$SECONDS
	out=$QEMU_OUT/$(ARCH=$b KERNEL= bash -c '. "$1/common.sh" && echo "$BOARD"' _ "$QEMU_DIR")
	name=${out##*/}
	ok() { pass=$((pass + 1)); printf '[qemu %s] ok    %s\n' "$name" "$*"; }
	bad() { fail=$((fail + 1)); printf '[qemu %s] FAIL  %s\n' "$name" "$*"; }
	mkdir -p "$out"
	rm -f "$out/check-result" "$out/first-console.log"
	if ! ARCH=$b KERNEL= "$QEMU_DIR/fetch.sh" >/dev/null ||
		! ARCH=$b KERNEL= SESSION="$QEMU_DIR/session-lastboot" SESSION_FIRST="$QEMU_DIR/session-lastboot-first" \
			"$QEMU_DIR/mkinitramfs.sh"; then
		bad "board setup failed"
		continue
	fi
	rc=0
	ARCH=$b KERNEL= QEMU_REBOOT=1 QEMU_TIMEOUT=${QEMU_TIMEOUT:-420} \
		QEMU_APPEND="reserve_mem=12M:4096:trace trace_instance=boot_mapped@trace panic=1${QEMU_APPEND:+ $QEMU_APPEND}" \
		"$QEMU_DIR/run.sh" test || rc=$?
	log=$out/console.log
	# The first boot: up to the second @@BOOT.
	awk '/^@@BOOT / { n++ } n == 1' "$log" >"$out/first-console.log"
	awk '/^@@BOOT / { n++ } n >= 2' "$log" >"$out/second.log"
	f=$out/first-console.log
	if grep -q '^@@PHASE first' "$f"; then
		ok "first boot: $(grep -m1 '^@@BOOT ' "$f" | cut -d' ' -f2-3), the persistent instance empty"
	else
		bad "first boot: no '@@PHASE first' (was the board booted with the instance? $(grep -c '^@@BOOT ' "$log") boots)"
	fi
	if grep -q '^persistent  boot_mapped: empty (0); last_boot_info: ' "$f"; then
		ok "first boot: tr-on -B boot_mapped: $(grep -m1 '^persistent ' "$f" | cut -c13- | tr '\t' ' ')"
	else
		bad "first boot: tr-on -B boot_mapped did not say the persistent instance is empty"
	fi
	n=$(grep -c '^@@CMD ' "$f")
	if grep -q "^@@CMD $n .*sysrq-trigger" "$f" && ! grep -q "^@@RC $n " "$f" &&
		grep -qE 'sysrq: Trigger a crash|Kernel panic' "$f"; then
		ok "first boot: the crash ($(grep -m1 -E 'Kernel panic' "$f" | sed 's/^\[[^]]*\] //' | cut -c1-60))"
	else
		bad "first boot: the command writing to /proc/sysrq-trigger did not crash the kernel"
		tail -n 20 "$f" | sed 's/^/        | /'
	fi
	if grep -q '^@@PHASE second' "$out/second.log"; then
		ok "second boot: the first boot's marker found in boot_mapped"
	else
		bad "second boot: $( [ -s "$out/second.log" ] && echo "the first boot's marker is not in boot_mapped" || echo "the board did not boot again")"
	fi
	mv -f "$out/second.log" "$log"
	ARCH=$b KERNEL= "$QEMU_DIR/check.sh" "$rc"
	# The copy of the instance (lastboot-send): lb.tgz, for fixtures.
	hdr=$(grep -m1 '^@@FILE-BEGIN lb.tgz ' "$log")
	if [ -n "$hdr" ]; then
		sed -n '/^@@FILE-BEGIN lb.tgz /,/^@@FILE-END/p' "$log" | sed '1d;$d' | base64 -d >"$out/lb.tgz" 2>/dev/null
		set -- $hdr
		if [ "$(md5sum <"$out/lb.tgz" | cut -d' ' -f1)" = "$3" ]; then
			ok "the copy of boot_mapped came through the console intact ($4 bytes, ${out#"$REPO"/}/lb.tgz)"
		else
			bad "the copy of boot_mapped did not come through the console intact"
		fi
	fi
	if [ -s "$out/check-result" ]; then
		read -r p f <"$out/check-result"
		pass=$((pass + p)) fail=$((fail + f))
	else
		bad "no check result"
	fi
	echo "[qemu $name] lastboot: $((SECONDS - t0)) s"
done
echo "lastboot: $pass passed, $fail failed"
[ "$fail" = 0 ]
