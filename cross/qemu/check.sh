#!/usr/bin/env bash
# Judge one board run: read cross/out/BOARD/console.log against the session
# that was in the initramfs (cross/out/BOARD/root/etc/trbox/session).
# Usage: check.sh QEMU_EXIT_STATUS
# Prints one line per check (boot, each command, power-off), the reason for
# each failure with the command's output, and on failure the transcript's
# tail. Writes "PASSED FAILED SKIPPED" to cross/out/BOARD/check-result
# (SKIPPED: the live tests among the passed that skipped, live.sh); exits 1
# on any failure.
set -uo pipefail
. "$(dirname "$0")/common.sh"
qrc=${1:-0}
log=$OUT/console.log
session=$OUT/root/etc/trbox/session
pass=0 fail=0 skipped=0

ok() { pass=$((pass + 1)); printf '[qemu %s] ok    %s\n' "$BOARD" "$*"; }
bad() { fail=$((fail + 1)); printf '[qemu %s] FAIL  %s\n' "$BOARD" "$*"; }
# The output of command N: the lines between its @@CMD and @@RC markers.
output_of() { awk -v n="$1" '$1 == "@@CMD" && $2 == n { on = 1; next } $1 == "@@RC" && $2 == n { exit } $1 == "@@CMD" { if (on) exit } on' "$log"; }
indent() { head -n "${1:-15}" | sed 's/^/        | /'; }

why_stopped() {
	if [ -s "$OUT/stopped" ]; then
		# run.sh's watchdog or time limit, with the check it stopped in.
		cat "$OUT/stopped"
	elif [ "$qrc" = 124 ]; then
		echo "the run hit its time limit and qemu was killed"
	elif grep -q 'Kernel panic' "$log"; then
		echo "the kernel panicked: $(grep -m1 'Kernel panic' "$log" | sed 's/^\[[^]]*\] //')"
	else
		echo "qemu exited with status $qrc"
	fi
}

[ -f "$log" ] || { bad "no transcript at ${log#"$REPO"/}"; echo "0 1" >"$OUT/check-result"; exit 1; }

boot=$(grep -m1 '^@@BOOT ' "$log")
if [ -n "$boot" ]; then
	set -- $boot
	ok "boot: Linux $2 $3, ${4#cpus=} CPUs, in $(cat "$OUT/boot-seconds" 2>/dev/null || echo '?')s"
else
	bad "boot: no @@BOOT marker on the console: $(why_stopped)"
fi
while IFS= read -r e; do
	bad "guest: ${e#@@ERROR }"
done < <(grep '^@@ERROR' "$log")
# The lines a binary of another configuration skipped (features.sh).
. "$QEMU_DIR/features.sh"
features_report

# The session, parsed as the guest's run-session parses it.
n=0
while IFS= read -r line; do
	case "$line" in '' | '#'*) continue ;; esac
	n=$((n + 1))
	cmd=${line%% ## *}
	want_rc=0
	expects=()
	rest=$line
	while [[ $rest == *' ## '* ]]; do
		rest=${rest#* ## }
		note=${rest%% ## *}
		case "$note" in
		'rc: '*) want_rc=${note#rc: } ;;
		'expect: '*) expects+=("${note#expect: }") ;;
		esac
	done
	label="#$n $cmd"
	# A live test's name is kept whole (live.sh).
	[ ${#label} -le 72 ] || [[ $cmd == 'live-test '* ]] || label="${label:0:69}..."
	if ! grep -q "^@@CMD $n " "$log"; then
		bad "$label: not reached ($( [ -n "$boot" ] && echo "the session stopped before it: $(why_stopped)" || echo "no boot"))"
		continue
	fi
	rcline=$(grep -m1 "^@@RC $n " "$log")
	if [ -z "$rcline" ]; then
		bad "$label: no exit status (the guest stopped during this command: $(why_stopped))"
		output_of "$n" | tail -n 15 | indent
		continue
	fi
	set -- $rcline
	rc=$3 took=${4:-?}
	out=$(output_of "$n")
	reasons=()
	if [ "$rc" != "$want_rc" ]; then
		case "$rc" in
		143) reasons+=("killed by the guest's per-command timeout (status 143)") ;;
		126) reasons+=("exit status 126: the program cannot execute (bad binary?)") ;;
		127) reasons+=("exit status 127: command or applet not found") ;;
		*) reasons+=("exit status $rc, wanted $want_rc") ;;
		esac
	fi
	for x in "${expects[@]}"; do
		grep -qF -- "$x" <<<"$out" || reasons+=("output lacks '$x'")
	done
	if [ ${#reasons[@]} = 0 ]; then
		# A live test that skipped (live.sh, common::skip_tool and
		# skip_absent) passes, and says why.
		why=$(grep -m1 '^SKIP' <<<"$out")
		if [[ $cmd == 'live-test '* ]] && [ -n "$why" ]; then
			skipped=$((skipped + 1))
			ok "$label (${took}s): ${why:0:160}"
		else
			ok "$label (${took}s)"
		fi
	else
		bad "$label (${took}s): $(IFS=';'; echo "${reasons[*]}" | sed 's/;/; /g')"
		printf '%s\n' "$out" | indent 15
	fi
done <"$session"

# trace-cmd interop: the board's `tr-cat -o` file (with the board's tr-cat
# text of it) read by the host's trace-cmd report: the same events (CPU,
# timestamp, pid, name) in the same order; then trace-cmd's own rewrite of it
# (`trace-cmd convert`, file version 7) read by the host's tr-cat, when
# there is a host build (TRBOX_HOST_BIN, common.sh).
. "$QEMU_DIR/events.sh"
# "NAME PID" per event of such a text, the pids renamed p1, p2... in order
# of first appearance: two runs of the same workload give the same lines.
shape_of() {
	events_of "$1" | awk '{ if (!($3 in id)) id[$3] = "p" (++n); print $4, id[$3] }'
}
# line_with TEXT: the number of the session's first command holding TEXT.
line_with() {
	awk -v s="$1" '/^(#|$)/ { next } { n++ } index($0, s) { print n; exit }' "$session"
}
# line_marked NOTE: the number of the session's command marked '## NOTE'.
line_marked() { line_with "## $1"; }
# recorded NAME: what the board's tr-cat said of /tmp/NAME.dat when it
# recorded it (its summary line and, on a failure, its error), for a
# failure's message: the transcript's tail may not reach that command.
recorded() {
	local n
	n=$(line_with "-o /tmp/$1.dat ")
	[ -n "$n" ] && output_of "$n" | grep -m2 -E "/tmp/$1\.dat: |^tr-cat: " | tr '\n' ' ' | sed 's/ $//'
}
# interop_file DIR NAME: DIR/NAME.dat and the board's DIR/NAME.txt.
interop_file() {
	local d=$1 f=$2 n host what
	what="trace-cmd interop ($f.dat)"
	cp "$d/$f.dat" "$OUT/$f.dat"
	events_of "$d/$f.txt" >"$d/$f.board"
	if ! trace-cmd report -i "$d/$f.dat" >"$d/$f.report" 2>"$d/$f.err"; then
		bad "$what: trace-cmd report failed on the board's tr-cat -o file ($(head -n1 "$d/$f.err"))"
	else
		events_of "$d/$f.report" >"$d/$f.tc"
		n=$(wc -l <"$d/$f.board")
		if [ "$n" -gt 0 ] && cmp -s "$d/$f.board" "$d/$f.tc"; then
			ok "$what: trace-cmd report of the board's tr-cat -o file: the same $n events as tr-cat"
		else
			bad "$what: trace-cmd report and the board's tr-cat differ ($n vs $(wc -l <"$d/$f.tc") events)"
			{ echo "the board recorded it: $(recorded "$f")"; diff "$d/$f.board" "$d/$f.tc" | head -n 10; } | indent
		fi
		# The file's page size is the board's sub-buffer: its page (16 KiB
		# on the 16k board), 32 KiB for sb.dat (buffer_subbuf_size_kb 32).
		local want=4096 got
		case "$KFLAVOUR" in *-16k) want=16384 ;; esac
		[ "$f" = sb ] && want=32768
		got=$(trace-cmd dump -i "$d/$f.dat" --summary 2>/dev/null | awk '/\[Page size/ { print $1; exit }')
		if [ "$got" = "$want" ]; then
			ok "$what: page size $got bytes in the file, as the board's sub-buffer"
		else
			bad "$what: page size ${got:-unknown} in the file, the board's sub-buffer is $want bytes"
		fi
	fi
	host=$TRBOX_HOST_BIN
	if [ ! -x "$host" ]; then
		bad "$what: no host binary $host to read trace-cmd's v7 rewrite (make qemu-test builds it)"
	elif trace-cmd convert -i "$d/$f.dat" -o "$d/$f.v7" --file-version 7 --compression none >/dev/null 2>&1; then
		"$host" tr-cat "$d/$f.v7" >"$d/$f.v7.txt" 2>"$d/$f.v7.err"
		events_of "$d/$f.v7.txt" >"$d/$f.host"
		if [ -s "$d/$f.host" ] && cmp -s "$d/$f.board" "$d/$f.host"; then
			ok "$what: the host's tr-cat of trace-cmd's v7 rewrite: the same $(wc -l <"$d/$f.host") events"
		else
			bad "$what: tr-cat of trace-cmd's v7 rewrite differs from the board's tr-cat"
			{ head -n 3 "$d/$f.v7.err"; diff "$d/$f.board" "$d/$f.host" | head -n 10; } | indent
		fi
	fi
}
interop() {
	local hdr tmp
	hdr=$(grep -m1 '^@@FILE-BEGIN t.tgz ' "$log" | tr -d '\r') && [ -n "$hdr" ] || return 0
	if ! command -v trace-cmd >/dev/null; then
		ok "trace-cmd interop: skipped (no trace-cmd on the host)"
		return 0
	fi
	tmp=$(mktemp -d "$OUT/.interop.XXXXXX")
	set -- $hdr
	# guest/send-file: through the virtio port (OUT/port.bin, at an offset
	# and size), or base64 lines in the transcript.
	if [ "${4:-}" = port ]; then
		tail -c "+$(($5 + 1))" "$OUT/port.bin" 2>/dev/null | head -c "$6" >"$tmp/t.tgz"
	else
		sed -n '/^@@FILE-BEGIN t.tgz /,/^@@FILE-END/p' "$log" | sed '1d;$d' | tr -d '\r' | base64 -d >"$tmp/t.tgz" 2>/dev/null
	fi
	if [ "$(md5sum <"$tmp/t.tgz" | cut -d' ' -f1)" != "$3" ] || ! tar -xzf "$tmp/t.tgz" -C "$tmp"; then
		bad "trace-cmd interop: the recording did not come through the console intact"
		rm -rf "$tmp"
		return 0
	fi
	for f in t sb; do
		[ -f "$tmp/$f.dat" ] && interop_file "$tmp" "$f"
	done
	# From 6.8 every kernel has buffer_subbuf_size_kb: the session must have
	# recorded with larger sub-buffers there (its line passes without on
	# older kernels).
	local v=${boot#@@BOOT }
	v=${v%% *}
	case "$v" in [0-5].* | 6.[0-7].*) ;; *)
		if [ -f "$tmp/sb.dat" ]; then
			ok "sub-buffers: kernel $v recorded with 32 KiB sub-buffers (sb.dat)"
		else
			bad "sub-buffers: kernel $v has buffer_subbuf_size_kb, but the board sent no sb.dat"
		fi ;;
	esac
	rm -rf "$tmp"
}
interop
# The console form (tr-cat -o - --console): what the board printed on its
# serial console, taken from the transcript and rebuilt by the host's trbox
# (tr-cat --from-console), holds the events the board's summary counted.
n=0 cn=
while IFS= read -r line; do
	case "$line" in '' | '#'*) continue ;; esac
	n=$((n + 1))
	[[ $line == *'--console'* ]] && { cn=$n; break; }
done <"$session"
host_bin=$TRBOX_HOST_BIN
if [ -n "$cn" ] && grep -q "^@@RC $cn " "$log"; then
	rec=$OUT/console-recording.log
	output_of "$cn" >"$rec"
	want=$(grep -o 'standard output: [0-9]* events' "$rec" | grep -o '[0-9][0-9]*' | head -n 1)
	if [ ! -x "$host_bin" ]; then
		bad "console recording: not rebuilt: no host binary $host_bin (make qemu-test builds it)"
	elif got=$("$host_bin" tr-cat --from-console "$rec" 2>"$rec.err") &&
		[ -n "$want" ] && [ "$(grep -vc 'LOST' <<<"$got")" = "$want" ] &&
		grep -q 'sched_process_exec: filename=/bin/busybox' <<<"$got"; then
		ok "console recording rebuilt on the host: $want events, as the board counted"
		# The same events (names, pids) as the board's local tr-cat -o of
		# the same workload, the line marked 'console: local'.
		ln=$(line_marked 'console: local')
		if [ -n "$ln" ]; then
			printf '%s\n' "$got" >"$rec.txt"
			output_of "$ln" >"$rec.local"
			if [ -s "$rec.local" ] && [ "$(shape_of "$rec.local")" = "$(shape_of "$rec.txt")" ]; then
				ok "console recording: the same $want events (names, pids) as the board's tr-cat -o"
			else
				bad "console recording: not the events of the board's tr-cat -o of the same command"
				diff <(shape_of "$rec.local") <(shape_of "$rec.txt") | head -n 10 | indent
			fi
		fi
	else
		bad "console recording: the host read $(grep -vc 'LOST' <<<"$got") events, the board counted '${want}'"
		indent 10 <"$rec.err"
	fi
fi

# The network boards: what the host's listeners received (net.sh).
. "$QEMU_DIR/net.sh"
net_check

if grep -q '^@@SESSION-DONE' "$log" && grep -q '^@@END' "$log" && [ "$qrc" = 0 ]; then
	ok "power-off: qemu exited cleanly after $(cat "$OUT/run-seconds" 2>/dev/null || echo '?')s"
else
	bad "power-off: the session did not finish cleanly: $(why_stopped)"
fi

echo "$pass $fail $skipped" >"$OUT/check-result"
if [ "$fail" -gt 0 ]; then
	echo "[qemu $BOARD] --- last 40 lines of ${log#"$REPO"/} ---"
	tail -n 40 "$log" | sed 's/^/    /'
	echo "[qemu $BOARD] --- end of transcript ---"
	exit 1
fi
exit 0
