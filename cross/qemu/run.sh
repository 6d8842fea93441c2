#!/usr/bin/env bash
# Boot the board for ARCH in qemu (TCG) with the initramfs from
# mkinitramfs.sh, in one of these modes (trbox.mode= on the kernel command line):
#   tour      run the tour (make qemu): each command's '# ' line, the command
#             and its output, like a terminal
#   demo      run the session, show it on the console like a terminal
#   test      run the session quietly; check.sh judges the transcript
#   fixtures  record tracefs fixtures (console.log holds them as base64)
#   shell     interactive busybox shell (Ctrl-A x quits qemu)
# The transcript always goes to cross/out/ARCH/console.log (fixtures mode:
# fixtures-console.log). QEMU_TIMEOUT bounds the run (seconds).
# Exit status: qemu's, or 124 when the time limit ended it.
set -euo pipefail
. "$(dirname "$0")/common.sh"
mode=${1:-demo}

[ -s "$CACHE/vmlinuz" ] || die "no kernel in ${CACHE#"$REPO"/}: run cross/qemu/fetch.sh"
[ -s "$OUT/initramfs.gz" ] || die "no initramfs: run cross/qemu/mkinitramfs.sh"
command -v "$QEMU_BIN" >/dev/null || die "$QEMU_BIN not found: run cross/qemu/setup.sh"

# The network boards' NIC and the host's listeners (net.sh); -nic none
# for the others.
. "$QEMU_DIR/net.sh"
case "$mode" in
test | demo) net_start && trap net_stop EXIT ;;
tour) tour_net_start && trap net_stop EXIT ;;
*) NET=0 ;;
esac
mapfile -t nic < <(net_qemu_args)
# The disk boards' images, fresh for each run (disk.sh).
. "$QEMU_DIR/disk.sh"
case "$mode" in
test | demo | shell) disk_start ;;
*) DISK=0 ;;
esac
mapfile -t disk < <(disk_qemu_args)
qemu=("$QEMU_BIN" "${QEMU_MACHINE[@]}" -m "$QEMU_MEM" -smp "$QEMU_SMP"
	-kernel "$CACHE/vmlinuz" -initrd "$OUT/initramfs.gz"
	-append "$(kernel_append "$mode")$NET_APPEND" "${nic[@]}" "${disk[@]}")
# The files a session sends to the host (guest/send-file): a virtio console
# port named trbox.files, whose bytes qemu writes to OUT/port.bin. The
# serial console carries about 15 KB/s under TCG; this, megabytes a second.
# A kernel whose virtio console is a module (before 6.12) leaves it unused.
rm -f "$OUT/port.bin"
qemu+=(-device virtio-serial-pci,id=files -chardev "file,id=files,path=$OUT/port.bin"
	-device virtserialport,bus=files.0,chardev=files,name=trbox.files)
# The idle-state boards (common.sh IDLE_STATES): the device tree qemu
# makes for this very command line (dumpdtb: qemu writes it and exits),
# plus a PSCI idle state (fdt-idle.py); qemu still writes /chosen and
# /memory into a -dtb.
if [ "$IDLE_STATES" = 1 ]; then
	mkdir -p "$OUT"
	"${qemu[@]}" -machine dumpdtb="$OUT/virt.dtb" -display none >"$OUT/dumpdtb.log" 2>&1 ||
		die "qemu could not dump its device tree: $(tail -n 1 "$OUT/dumpdtb.log")"
	python3 "$QEMU_DIR/fdt-idle.py" "$OUT/virt.dtb" "$OUT/idle.dtb" || die "fdt-idle.py failed on $OUT/virt.dtb"
	qemu+=(-dtb "$OUT/idle.dtb")
fi
# QEMU_REBOOT=1 (lastboot.sh): a panic or reboot resets the board, and the
# reset keeps guest RAM (a persistent ring buffer survives it).
[ "${QEMU_REBOOT:-0}" = 1 ] || qemu+=(-no-reboot)
# QEMU_RAM_FILE=F (lastboot.sh): guest RAM in file F, shared: the next
# qemu started on it finds what this one left in memory.
[ -z "${QEMU_RAM_FILE:-}" ] ||
	qemu+=(-object "memory-backend-file,id=ram,size=${QEMU_MEM}M,mem-path=$QEMU_RAM_FILE,share=on" -machine memory-backend=ram)

if [ "$mode" = shell ]; then
	say "interactive shell; 'poweroff' leaves, Ctrl-A x kills qemu"
	exec "${qemu[@]}" -nographic
fi

# Each command's own limit, as the guest's run-session takes it from the
# line ('## timeout: N', 120 s by default; '#' lines and blank ones are not
# commands): "N LIMIT" per command of a session FILE.
cmd_limits() {
	awk '/^(#|$)/ { next } { n++; t = 120; i = index($0, "## timeout: "); if (i) t = substr($0, i + 12) + 0; print n, t }' "$1"
}
# The boot's own allowance (kernel to the first marker) and the power-off's:
# more than 4x what a 2-core machine under a load average of 11 took (boot
# 2-66 s, power-off 1-3 s), so that a machine half as fast stays inside.
QEMU_BOOT_LIMIT=${QEMU_BOOT_LIMIT:-300}
sessions=()
case "$mode" in
test | demo)
	sessions=("$OUT/root/etc/trbox/session")
	[ ! -f "$OUT/root/etc/trbox/session-first" ] || sessions+=("$OUT/root/etc/trbox/session-first")
	;;
tour) sessions=("$OUT/root/etc/trbox/tour") ;;
esac
# A session's run is bounded by what its commands may take: the sum of
# their limits (the guest stops a command at its own), a boot and a
# power-off (two of each for a board that boots twice: session-first).
# What a check needs is sized on its line, with margin for a machine
# half as fast (README.md, "time limits"); the watchdog below stops a
# board much sooner when the guest does not keep a command's limit.
session_limit() {
	local f sum=0 n t
	for f in "${sessions[@]}"; do
		while read -r n t; do sum=$((sum + t)); done < <(cmd_limits "$f")
		sum=$((sum + 2 * QEMU_BOOT_LIMIT))
	done
	echo "$sum"
}
case "$mode" in
fixtures) log=$OUT/fixtures-console.log limit=${QEMU_TIMEOUT:-900} ;;
demo) log=$OUT/console.log limit=${QEMU_TIMEOUT:-$(session_limit)} ;;
tour) log=$OUT/tour-console.log limit=${QEMU_TIMEOUT:-300} ;;
*) log=$OUT/console.log limit=${QEMU_TIMEOUT:-$(session_limit)} ;;
esac
mkdir -p "$OUT"
: >"$log"
rm -f "$OUT/qemu.pid" "$OUT/stopped"

say "booting $(cut -d' ' -f1 "$CACHE/kver") on $QEMU_BIN ($QEMU_SMP CPUs, TCG), limit ${limit}s"
start=$EPOCHREALTIME
# Seconds since start with one decimal, from bash's microsecond clock.
elapsed() {
	local us=$((${EPOCHREALTIME/./} - ${start/./}))
	printf '%d.%d' $((us / 1000000)) $((us / 100000 % 10))
}
# NOW: whole seconds since start (no subshell: it runs for every line).
now() { NOW=$(((${EPOCHREALTIME/./} - ${start/./}) / 1000000)); }

# The watchdog (read from the console loop below, every few seconds):
# the boot must reach the guest's first marker, each command its @@RC within
# its own limit (the guest stops it there) plus a grace, the next command
# or the end must follow one. Past that the guest is stuck: the board says
# where, in the log and in cross/out/BOARD/stopped (check.sh quotes it),
# and qemu is stopped. A command past 60 s is reported once a minute.
declare -A lim=()
# The limits of the session the guest runs now (lastboot: session-first
# on the first boot, @@PHASE says which).
use_limits() {
	lim=()
	[ -n "${1:-}" ] && [ -f "$1" ] || return 0
	local n t
	while read -r n t; do lim[$n]=$t; done < <(cmd_limits "$1")
}
use_limits "${sessions[0]:-}"
w_state=boot w_t0=0 w_n= w_cmd= w_beat=60
stop_qemu() { # REASON
	say "$1"
	printf '%s\n' "$1" >"$OUT/stopped"
	[ -s "$OUT/qemu.pid" ] && kill "$(cat "$OUT/qemu.pid")" 2>/dev/null
	w_state=stopped
}
watch() {
	local ran t
	now
	ran=$((NOW - w_t0))
	case "$w_state" in
	boot)
		[ "$ran" -lt "$QEMU_BOOT_LIMIT" ] ||
			stop_qemu "stopped: no boot marker after ${ran}s (limit ${QEMU_BOOT_LIMIT}s, QEMU_BOOT_LIMIT): the kernel or /init is stuck"
		;;
	cmd)
		t=${lim[$w_n]:-60}
		if [ "$ran" -ge $((t + 30 + t / 4)) ]; then
			stop_qemu "stopped: check #$w_n ran ${ran}s, past its own limit of ${t}s, and the guest did not end it: ${w_cmd:0:160}"
		elif [ "$ran" -ge "$w_beat" ]; then
			say "check #$w_n still running after ${ran}s (its limit ${t}s): ${w_cmd:0:160}"
			w_beat=$((w_beat + 60))
		fi
		;;
	between)
		[ "$ran" -lt 120 ] ||
			stop_qemu "stopped: nothing from the guest for ${ran}s after $([ "$w_n" = 0 ] && echo "its boot" || echo "check #$w_n ended")"
		;;
	off)
		[ "$ran" -lt "$QEMU_BOOT_LIMIT" ] ||
			stop_qemu "stopped: the session ended ${ran}s ago and the board has not powered off"
		;;
	esac
}

# qemu's serial console on stdout, read line by line (no buffering), CRs stripped; every line goes to the log,
# and in demo and tour modes a readable rendering of it to the terminal.
show=0
case "$mode" in demo | tour) show=1 ;; esac
set +e
timeout -k 10 "$limit" "${qemu[@]}" -display none -monitor none -serial stdio -pidfile "$OUT/qemu.pid" </dev/null 2>&1 | {
	partial= eof=0
	while :; do
		# A line, or every 5 s the watchdog (read -t keeps what it got of
		# an unfinished line in l).
		if IFS= read -r -t 5 l; then
			l=$partial$l partial=
		elif [ $? -gt 128 ]; then
			partial+=$l
			[ "${#sessions[@]}" = 0 ] || watch
			continue
		else
			l=$partial$l partial= eof=1
			[ -n "$l" ] || break
		fi
		l=${l%$'\r'}
		# A line drawn over in place (a progress line on the console: `\r`,
		# then ESC[K clears the rest) is logged as the terminal shows it:
		# from the last `\r` on, without a clear at its start.
		case $l in *$'\r'*)
			l=${l##*$'\r'}
			l=${l#$'\e[K'}
			;;
		esac
		printf '%s\n' "$l" >>"$log"
		case "$l" in
		@@BOOT*)
			now
			w_state=between w_t0=$NOW w_n=0
			set -- $l
			t=$(elapsed)
			printf '%s\n' "$t" >"$OUT/boot-seconds"
			if [ "$show" = 1 ]; then
				printf '\n=== trbox board: Linux %s on %s, %s, booted in %ss ===\n' "$2" "$3" "${4#cpus=} CPUs" "$t"
			else
				say "booted in ${t}s"
			fi
			;;
		@@NOTE*) [ "$show" = 1 ] && printf '\n# %s\n' "${l#@@NOTE }" ;;
		@@PHASE\ first*) use_limits "${sessions[1]:-}" ;;
		@@PHASE*) use_limits "${sessions[0]:-}" ;;
		@@CMD*)
			now
			w_n=${l#@@CMD } w_state=cmd w_t0=$NOW w_cmd=${l#@@CMD * } w_beat=60
			w_n=${w_n%% *}
			printf '%s %s %s\n' "$w_n" "$w_t0" "$w_cmd" >"$OUT/current-check"
			if [ "$mode" = tour ]; then
				printf 'trbox-board:~# %s\n' "${l#@@CMD * }"
			elif [ "$show" = 1 ]; then
				printf '\ntrbox-board:~# %s\n' "${l#@@CMD * }"
			fi
			;;
		@@RC*)
			set -- $l
			now
			w_state=between w_t0=$NOW
			rm -f "$OUT/current-check"
			[ "$show" = 1 ] && [ "$3" != 0 ] && printf '[exit status %s]\n' "$3"
			;;
		@@SESSION-DONE* | @@FILE* | @@FIXTURE*) ;;
		@@END*)
			now
			w_state=off w_t0=$NOW
			[ "$show" = 1 ] && printf '\n=== %s done in %ss; powering off ===\n' "$([ "$mode" = tour ] && echo tour || echo session)" "$(elapsed)"
			;;
		*) [ "$show" = 1 ] && printf '%s\n' "$l" ;;
		esac
		[ "$eof" = 0 ] || break
		[ "${#sessions[@]}" = 0 ] || watch
	done
}
rc=${PIPESTATUS[0]}
set -e
net_stop
printf '%s\n' "$(elapsed)" >"$OUT/run-seconds"
if [ -s "$OUT/stopped" ]; then
	# The watchdog stopped it (and said why).
	rc=124
elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
	if [ -s "$OUT/current-check" ]; then
		read -r n t0 cmd <"$OUT/current-check"
		now
		why="time limit (${limit}s) reached during check #$n, which had run $((NOW - t0))s: ${cmd:0:160}"
	else
		why="time limit (${limit}s) reached"
	fi
	say "$why: qemu killed"
	printf '%s\n' "$why" >"$OUT/stopped"
	rc=124
fi
rm -f "$OUT/current-check" "$OUT/qemu.pid"
say "qemu exited ($rc) after $(cat "$OUT/run-seconds")s; transcript in ${log#"$REPO"/}"
exit "$rc"
