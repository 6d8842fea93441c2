#!/usr/bin/env bash
# After the tour (make qemu, and make test through qemu-tour): show what the
# host's listener received from the board's `tr-cat -N`, then judge the
# run: booted, no @@ERROR, every command of the tour ran and exited 0, the
# board powered off, at most TOUR_MAX_LINES (250) lines of board output.
# Usage: tour-check.sh QEMU_EXIT_STATUS; exits 1 on any failure.
set -uo pipefail
. "$(dirname "$0")/common.sh"
. "$QEMU_DIR/net.sh"
qrc=${1:-0}
log=$OUT/tour-console.log
tour=$OUT/root/etc/trbox/tour
fail=0
bad() { fail=$((fail + 1)); say "tour: FAIL: $*"; }

[ -s "$log" ] || { bad "no transcript at ${log#"$REPO"/}"; exit 1; }
# The host's side of the -N line.
if [ "$NET" = 1 ]; then
	f=$(tour_net_file)
	printf '\n# on the host: what tr-cat --listen received from the board'\''s tr-cat -N\n'
	if [ -n "$f" ] && printf 'host$ tr-cat %s\n' "${f#"$REPO"/}" &&
		"$NET_HOST_BIN" tr-cat "$f" >"$NET_DIR/tour.txt" 2>"$NET_DIR/tour.err" && [ -s "$NET_DIR/tour.txt" ]; then
		cat "$NET_DIR/tour.txt"
	else
		bad "the host's listener has no readable recording ($(tail -n 2 "$NET_DIR/tour.err" "$NET_DIR/tb.log" 2>/dev/null | tr '\n' ' '))"
	fi
fi

grep -q '^@@BOOT ' "$log" || bad "the board did not boot (qemu status $qrc)"
while IFS= read -r e; do bad "guest: ${e#@@ERROR }"; done < <(grep '^@@ERROR' "$log")
# The commands the guest ran: the tour's, less the '## net' line where the
# board has no network (as the guest's init does).
want=$(grep -v '^\(#\|$\)' "$tour" | { if [ -s "$OUT/root/lib/modules/net/order" ]; then cat; else grep -v ' ## net'; fi; } | wc -l)
ran=$(grep -c '^@@RC ' "$log")
[ "$ran" = "$want" ] || bad "$ran of the tour's $want commands ran"
while read -r _ n rc _; do
	[ "$rc" = 0 ] || bad "command $n exited $rc: $(grep -m1 "^@@CMD $n " "$log" | cut -d' ' -f3-)"
done < <(grep '^@@RC ' "$log")
grep -q '^@@END' "$log" || bad "the tour did not reach its end"
[ "$qrc" = 0 ] || bad "qemu exited with status $qrc"
# What the terminal showed of the board: its lines, the '# ' notes and the
# commands (markers of the harness aside).
lines=$(sed -n '/^@@BOOT/,/^@@END/p' "$log" | grep -cv '^@@\(BOOT\|RC\|SESSION-DONE\|END\)')
max=${TOUR_MAX_LINES:-250}
[ "$lines" -le "$max" ] || bad "$lines lines of board output, more than $max"
if [ "$fail" = 0 ]; then
	say "tour: ok: $ran commands, every one exit 0; $lines lines of board output"
	exit 0
fi
say "tour: $fail failure(s); transcript in ${log#"$REPO"/}"
exit 1
