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
qemu=("$QEMU_BIN" "${QEMU_MACHINE[@]}" -m "$QEMU_MEM" -smp "$QEMU_SMP"
	-kernel "$CACHE/vmlinuz" -initrd "$OUT/initramfs.gz"
	-append "$(kernel_append "$mode")$NET_APPEND" "${nic[@]}")
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

case "$mode" in
fixtures) log=$OUT/fixtures-console.log limit=${QEMU_TIMEOUT:-900} ;;
demo) log=$OUT/console.log limit=${QEMU_TIMEOUT:-180} ;;
tour) log=$OUT/tour-console.log limit=${QEMU_TIMEOUT:-300} ;;
*) log=$OUT/console.log limit=${QEMU_TIMEOUT:-600} ;;
esac
mkdir -p "$OUT"
: >"$log"

say "booting $(cut -d' ' -f1 "$CACHE/kver") on $QEMU_BIN ($QEMU_SMP CPUs, TCG), limit ${limit}s"
start=$EPOCHREALTIME
# Seconds since start with one decimal, from bash's microsecond clock.
elapsed() {
	local us=$((${EPOCHREALTIME/./} - ${start/./}))
	printf '%d.%d' $((us / 1000000)) $((us / 100000 % 10))
}

# qemu's serial console on stdout, read line by line (no buffering), CRs stripped; every line goes to the log,
# and in demo and tour modes a readable rendering of it to the terminal.
show=0
case "$mode" in demo | tour) show=1 ;; esac
set +e
timeout -k 10 "$limit" "${qemu[@]}" -display none -monitor none -serial stdio </dev/null 2>&1 | {
	while IFS= read -r l || [ -n "$l" ]; do
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
		@@CMD*)
			if [ "$mode" = tour ]; then
				printf 'trbox-board:~# %s\n' "${l#@@CMD * }"
			elif [ "$show" = 1 ]; then
				printf '\ntrbox-board:~# %s\n' "${l#@@CMD * }"
			fi
			;;
		@@RC*)
			set -- $l
			[ "$show" = 1 ] && [ "$3" != 0 ] && printf '[exit status %s]\n' "$3"
			;;
		@@SESSION-DONE* | @@FILE* | @@FIXTURE*) ;;
		@@END*)
			[ "$show" = 1 ] && printf '\n=== %s done in %ss; powering off ===\n' "$([ "$mode" = tour ] && echo tour || echo session)" "$(elapsed)"
			;;
		*) [ "$show" = 1 ] && printf '%s\n' "$l" ;;
		esac
	done
}
rc=${PIPESTATUS[0]}
set -e
net_stop
printf '%s\n' "$(elapsed)" >"$OUT/run-seconds"
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
	say "time limit (${limit}s) reached: qemu killed"
	rc=124
fi
say "qemu exited ($rc) after $(cat "$OUT/run-seconds")s; transcript in ${log#"$REPO"/}"
exit "$rc"
