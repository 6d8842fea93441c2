#!/usr/bin/env bash
# make qemu-lastboot: the persistent ring buffer across a crash and a warm
# reboot (issue 30 §1), on each board given (default: aarch64:7.2
# aarch64:6.12, the kernels with last_boot_info).
#   cross/qemu/lastboot.sh [BOARD...]
# Two qemu runs per board on one RAM file: the kernel command line adds
# 'reserve_mem=12M:4096:trace trace_instance=boot_mapped@trace panic=1'.
# The first boot runs session-lastboot-first (trbox enables events in
# boot_mapped, a command marks the buffer and writes 'c' to
# /proc/sysrq-trigger); the panic resets the board and ends that qemu, the
# next qemu boots on the same RAM, and the second boot (guest/init finds
# the marker) runs session-lastboot, checked by check.sh. Transcripts in
# cross/out/lastboot/BOARD/: first-console.log (the first boot) and
# console.log (the second), and what the board sent back (lb.tgz: the
# kernel's text and tr-cat -o's trace.dat, read here by the host's tr-cat
# and by trace-cmd 3.4). LASTBOOT_COPY=1: the board sends a tracefs copy of
# the instance instead (tests/data/lastboot). The boots are without
# nokaslr (LASTBOOT_KASLR=0 puts it back): the kernel moves between them,
# and the second boot's session checks that it did (a zero shift fails).
# Prints "N passed, M failed";
# exits 1 on any failure.
set -uo pipefail
QEMU_DIR=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$QEMU_DIR/../.." && pwd)
boards=("$@")
[ ${#boards[@]} -gt 0 ] || boards=(aarch64:7.2 aarch64:6.12)
export QEMU_OUT=${QEMU_LASTBOOT_OUT:-$REPO/cross/out/lastboot} QEMU_NET_BOARDS=none
pass=0 fail=0
. "$QEMU_DIR/events.sh"
# dat_check DIR: the board's tr-cat -o file DIR/lb.dat read on the host by
# tr-cat (the host build) and by trace-cmd 3.4 (Debian sid's, in the sid
# chroot SID_ROOT, default /var/tmp/sid, made by cross/sid-root.sh when
# missing).
dat_check() {
	local d=$1 host=$TRBOX_HOST_BIN sid=${SID_ROOT:-/var/tmp/sid} n tmp
	grep -v '^#' "$d/k" >"$d/k.lines"
	if [ ! -x "$host" ]; then
		bad "no host binary $host to read the board's trace.dat (make qemu-lastboot builds it)"
	else
		"$host" tr-cat "$d/lb.dat" -v >"$d/host.txt" 2>"$d/host.err"
		grep -v '^#' "$d/host.txt" >"$d/host.lines"
		if [ -s "$d/host.lines" ] && cmp -s "$d/k.lines" "$d/host.lines"; then
			ok "the host's tr-cat of the board's tr-cat -o file: the kernel's text, $(wc -l <"$d/host.lines") lines"
		else
			bad "the host's tr-cat of the board's tr-cat -o file differs from the kernel's text"
			{ head -n 3 "$d/host.err"; diff "$d/k.lines" "$d/host.lines" | head -n 10; } | sed 's/^/        | /'
		fi
		if grep -q 'LAST_BOOT_INFO, option 24' "$d/host.err"; then
			ok "the file holds LAST_BOOT_INFO (option 24): $(grep -m1 'LAST_BOOT_INFO' "$d/host.err" | sed 's/.*: records/records/' | cut -c1-70)"
		else
			bad "the file holds no LAST_BOOT_INFO (option 24)"
		fi
	fi
	if ! SID_ROOT=$sid "$REPO/cross/sid-root.sh" >"$d/sid-root.log" 2>&1; then
		bad "trace-cmd 3.4: no sid chroot at $sid, and cross/sid-root.sh could not make one:"
		tail -n 3 "$d/sid-root.log" | sed 's/^/        | /'
		return
	fi
	tmp=$(mktemp -d "$sid/tmp/trbox-lastboot.XXXXXX")
	cp "$d/lb.dat" "$tmp/"
	chroot "$sid" trace-cmd report -i "/tmp/${tmp##*/}/lb.dat" >"$d/tc.txt" 2>"$d/tc.err"
	chroot "$sid" trace-cmd dump --options -i "/tmp/${tmp##*/}/lb.dat" >"$d/tc.options" 2>&1
	rm -rf "$tmp"
	events_of "$d/k.lines" | cut -d" " -f1-3 >"$d/k.events"
	events_of "$d/tc.txt" | cut -d" " -f1-3 >"$d/tc.events"
	n=$(wc -l <"$d/k.events")
	# libtraceevent 1.9 (sid's, under trace-cmd 3.4) reads last_boot_info's
	# `ADDR\t[kernel]` lines only: 6.12's `text delta:` of a moved kernel
	# leaves the previous boot's functions unnamed there (the addresses
	# printed as they were).
	if grep -q '^text delta:' "$d/k.info" 2>/dev/null && ! grep -q '^text delta:[[:space:]]*0$' "$d/k.info" &&
		[ "$n" -gt 0 ] && cmp -s "$d/k.events" "$d/tc.events" && ! grep -q '__handle_sysrq' "$d/tc.txt"; then
		ok "trace-cmd 3.4 report of the board's file: the same $n events (CPU, time, pid) as the kernel's text; the functions unnamed (libtraceevent 1.9 does not apply 6.12's text delta)"
	elif [ "$n" -gt 0 ] && cmp -s "$d/k.events" "$d/tc.events" && grep -q '__handle_sysrq' "$d/tc.txt" &&
		grep -q 'write_sysrq_trigger' "$d/tc.txt"; then
		ok "trace-cmd 3.4 report of the board's file: the same $n events (CPU, time, pid) as the kernel's text, the functions named"
	else
		bad "trace-cmd 3.4 report of the board's file differs ($n vs $(wc -l <"$d/tc.events") events)"
		{ head -n 3 "$d/tc.err"; diff "$d/k.events" "$d/tc.events" | head -n 10; } | sed 's/^/        | /'
	fi
	if grep -q 'LAST_BOOT_INFO' "$d/tc.options"; then
		ok "trace-cmd 3.4 dump: $(grep -m1 -A1 'LAST_BOOT_INFO' "$d/tc.options" | tr '\n\t' '  ' | cut -c1-80)"
	else
		bad "trace-cmd 3.4 dump shows no LAST_BOOT_INFO option"
	fi
}
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
	log=$out/console.log
	# Two qemu runs on one RAM file (QEMU_RAM_FILE): the first boot's
	# panic (panic=1) resets the board and ends qemu (-no-reboot); a new
	# qemu on the same RAM boots again with a new kaslr-seed, so the
	# kernel moves (a reset of one qemu keeps its seed: the base did not
	# move, measured on both boards). LASTBOOT_RESET=1: one qemu, the
	# reset in it (QEMU_REBOOT=1), as before.
	ram=/dev/shm/trbox-lastboot-$name.$$
	boot() {
		ARCH=$b KERNEL= QEMU_KASLR=${LASTBOOT_KASLR:-1} QEMU_TIMEOUT=${QEMU_TIMEOUT:-420} \
			QEMU_APPEND="reserve_mem=12M:4096:trace trace_instance=boot_mapped@trace panic=1${LASTBOOT_COPY:+ trbox.lastboot=copy}${QEMU_APPEND:+ $QEMU_APPEND}" \
			"$QEMU_DIR/run.sh" test
	}
	if [ "${LASTBOOT_RESET:-0}" = 1 ]; then
		QEMU_REBOOT=1 boot || rc=$?
	else
		rm -f "$ram"
		QEMU_RAM_FILE=$ram boot >/dev/null 2>&1
		mv -f "$log" "$out/boots.log"
		QEMU_RAM_FILE=$ram boot || rc=$?
		cat "$log" >>"$out/boots.log" && mv -f "$out/boots.log" "$log"
		rm -f "$ram"
	fi
	# The first boot: up to the second @@BOOT.
	awk '/^@@BOOT / { n++ } n == 1' "$log" >"$out/first-console.log"
	awk '/^@@BOOT / { n++ } n >= 2' "$log" >"$out/second.log"
	f=$out/first-console.log
	if grep -q '^@@PHASE first' "$f"; then
		ok "first boot: $(grep -m1 '^@@BOOT ' "$f" | cut -d' ' -f2-3), the persistent instance empty"
	else
		bad "first boot: no '@@PHASE first' (was the board booted with the instance? $(grep -c '^@@BOOT ' "$log") boots)"
	fi
	if grep -q '^persistent  boot_mapped: empty (0); last_boot_info:' "$f"; then
		ok "first boot: tr-on -B boot_mapped: $(grep -m1 -A1 '^persistent ' "$f" | cut -c13- | tr '\t\n' '  ')"
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
	# What the board sent: lb.tgz, the kernel's text (k) and tr-cat -o's
	# extract (lb.dat), or with LASTBOOT_COPY=1 the tracefs copy (lb/).
	hdr=$(grep -m1 '^@@FILE-BEGIN lb.tgz ' "$log")
	rm -rf "$out/sent"
	if [ -n "$hdr" ]; then
		sed -n '/^@@FILE-BEGIN lb.tgz /,/^@@FILE-END/p' "$log" | sed '1d;$d' | base64 -d >"$out/lb.tgz" 2>/dev/null
		set -- $hdr
		if [ "$(md5sum <"$out/lb.tgz" | cut -d' ' -f1)" = "$3" ] && mkdir -p "$out/sent" && tar xzf "$out/lb.tgz" -C "$out/sent"; then
			ok "what the board sent came through the console intact ($4 bytes, ${out#"$REPO"/}/lb.tgz)"
		else
			bad "what the board sent did not come through the console intact"
		fi
	else
		bad "the board sent nothing back"
	fi
	[ -f "$out/sent/lb.dat" ] && dat_check "$out/sent"
	if [ -s "$out/check-result" ]; then
		read -r p f _ <"$out/check-result"
		pass=$((pass + p)) fail=$((fail + f))
	else
		bad "no check result"
	fi
	echo "[qemu $name] lastboot: $((SECONDS - t0)) s"
done
echo "lastboot: $pass passed, $fail failed"
[ "$fail" = 0 ]
