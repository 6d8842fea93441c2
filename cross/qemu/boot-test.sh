#!/usr/bin/env bash
# make qemu-boot-test (make test runs it): issue 30's two checks that need
# a board of their own, on BOOT_BOARD (default aarch64:7.2):
#   1. tracing from boot: the board boots with the kernel command line that
#      the host build's `tr-on --boot`, `tr-event --boot` and `tr-graph
#      --boot` print, and session-boot checks (check.sh) that the tracer,
#      filter, event, trigger and instance were set up, with events from
#      before init ran;
#   2. a persistent instance from boot: the line of `tr-event --boot -B
#      boot_mapped --persist 12`, checked by session-persist;
#   3. the oops dump: session-oops arms `tr-on --dump-on-oops all` and
#      panics the board (sysrq c); the host's `tr-cat --from-console` reads
#      the dump back from the console log: the panic, the events, both CPUs.
# Prints one line per check, "N passed, M failed"; exits 1 on a failure.
set -uo pipefail
# (grep -q reads a here-string, not a pipe: under pipefail, printf's
# SIGPIPE when grep stops at its first match failed a check that held.)
QEMU_DIR=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$QEMU_DIR/../.." && pwd)
board=${BOOT_BOARD:-aarch64:7.2}
host=${TRBOX_HOST_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/trbox}
out=$root/cross/out/boot-test
pass=0 fail=0
ok() { pass=$((pass + 1)); printf '[boot-test %s] ok    %s\n' "$board" "$*"; }
bad() { fail=$((fail + 1)); printf '[boot-test %s] FAIL  %s\n' "$board" "$*"; }
[ -x "$host" ] || { echo "boot-test: no host build at $host (make build)" >&2; exit 2; }
mkdir -p "$out"

# boot_with NAME WHAT LINE: boot with the kernel command line LINE and run
# session-NAME on it, judged by check.sh.
boot_with() {
	local name=$1 what=$2 line=$3
	echo "[boot-test $board] booting with: $line"
	if QEMU_APPEND="$line" SESSION=$QEMU_DIR/session-$name QEMU_OUT=$out/$name ARCH=$board KERNEL= \
		"$QEMU_DIR/board.sh" test >"$out/$name.log" 2>&1; then
		ok "$what: its $(cut -d' ' -f1 "$out/$name"/*/check-result) checks passed"
	else
		bad "$what; the board's checks:"
		grep -E 'FAIL|error' "$out/$name.log" | head -20 | sed 's/^/        | /'
	fi
}

# 1. The line --boot prints (its second line is the kernel command line).
line=$("$host" tr-on --boot function -l vfs_read -b 64 | sed -n 2p)
line+=" $("$host" tr-event --boot sched:sched_process_exec -R stacktrace | sed -n 2p)"
line+=" $("$host" tr-event --boot -B foo sched:sched_switch | sed -n 2p)"
boot_with boot "a boot with --boot's line" "$line"

# 2. A persistent instance from boot (--persist), recording from boot.
boot_with persist "a persistent instance from --boot --persist's line" \
	"$("$host" tr-event --boot -B boot_mapped --persist 12 sched:sched_switch | sed -n 2p)"

# 3. A panic with the dump armed, read back on the host.
rc=0
( set -e
	ARCH=$board KERNEL= "$QEMU_DIR/fetch.sh" >/dev/null
	SESSION=$QEMU_DIR/session-oops QEMU_OUT=$out/oops ARCH=$board KERNEL= "$QEMU_DIR/mkinitramfs.sh"
	QEMU_TIMEOUT=400 SESSION=$QEMU_DIR/session-oops QEMU_OUT=$out/oops ARCH=$board KERNEL= "$QEMU_DIR/run.sh" test
) >"$out/oops.log" 2>&1 || rc=$?
log=$(ls "$out"/oops/*/console.log 2>/dev/null | head -1)
if [ -z "$log" ] || ! grep -q 'Dumping ftrace buffer:' "$log"; then
	bad "no ftrace dump on the console (run status $rc); see ${out#"$root"/}/oops.log"
	tail -20 "${log:-$out/oops.log}" | sed 's/^/        | /'
else
	stats=$("$host" tr-cat --from-console "$log" --stats 2>&1)
	text=$("$host" tr-cat --from-console "$log" 2>&1)
	events=$(printf '%s\n' "$stats" | sed -n 's/^\([0-9]*\) events,.*/\1/p')
	if grep -q '^dumped at: Kernel panic - not syncing: sysrq triggered crash$' <<<"$stats"; then
		ok "the dump is read back after the panic that caused it"
	else
		bad "no 'dumped at: Kernel panic' in tr-cat --from-console --stats:"
		printf '%s\n' "$stats" | head -5 | sed 's/^/        | /'
	fi
	if [ "${events:-0}" -gt 0 ] && grep -qE '^ +0 +[0-9]+' <<<"$stats" &&
		grep -qE '^ +1 +[0-9]+' <<<"$stats"; then
		ok "$events events from both CPUs' buffers"
	else
		bad "the dump's events per CPU:"
		printf '%s\n' "$stats" | head -8 | sed 's/^/        | /'
	fi
	# Each of the kernel's event lines, as the kernel printed it.
	want=$(awk '/Dumping ftrace buffer:$/ { at = 1; next }
		at && / ---------------------------------$/ { if (at++ == 2) exit; next }
		at == 2 { n++ } END { print n + 0 }' "$log")
	got=$(printf '%s\n' "$text" | sed -n '/^# the dump:$/,/^# after the dump:$/p' | sed '1d;$d' | grep -c .)
	if [ "$want" -gt 0 ] && [ "$want" = "$got" ] && grep -q ' sched_switch: prev_comm=' <<<"$text"; then
		ok "the text holds the dump's $got lines (sched_switch among them)"
	else
		bad "the text has $got of the dump's $want lines"
	fi
fi
echo "[boot-test $board] $pass passed, $fail failed"
[ "$fail" = 0 ]
