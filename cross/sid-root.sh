#!/usr/bin/env bash
# A Debian sid chroot with trace-cmd 3.4 (its libc is newer than this
# machine's, so 3.4 cannot run here directly): made once, when missing.
#   cross/sid-root.sh [DIR]      default: $SID_ROOT, else /var/tmp/sid
# Used by cross/qemu/lastboot.sh (trace-cmd 3.4 reads the trace.dat that
# the board extracted, option 24) and tests/data/tracedat/make-3.4.sh.
# debootstrap (cross/setup.sh installs it) from the host's Debian mirror;
# the machine's own apt sources are only read, never changed.
set -euo pipefail
root=${1:-${SID_ROOT:-/var/tmp/sid}}
[ -x "$root/usr/bin/trace-cmd" ] && exit 0
# Two boards' checks may ask at once: one makes it, the other waits.
exec 9>"$root.lock"
flock 9
[ -x "$root/usr/bin/trace-cmd" ] && exit 0
command -v debootstrap >/dev/null || { echo "sid-root: no debootstrap (apt-get install debootstrap, or bash cross/setup.sh)" >&2; exit 2; }
mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
	sed -n 's,^URIs: *\([^ ]*/debian\)/\?\( .*\)\?$,\1,p' | head -n1)
[ -n "$mirror" ] || mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
	sed -n 's,^deb \(\[[^]]*\] \)\?\([^ ]*/debian\)/\? .*,\2,p' | head -n1)
mirror=${mirror:-http://deb.debian.org/debian}
echo "sid-root: debootstrap sid (with trace-cmd) into $root from $mirror; a few minutes, once" >&2
tmp=$root.partial
rm -rf "$tmp"
debootstrap --variant=minbase --include=trace-cmd sid "$tmp" "$mirror" >"$tmp.log" 2>&1 ||
	{ echo "sid-root: debootstrap failed; the end of $tmp.log:" >&2; tail -5 "$tmp.log" >&2; exit 2; }
rm -f "$tmp.log"
mv "$tmp" "$root"
# (--version prints the version and the usage, and exits 255.)
v=$(chroot "$root" trace-cmd --version 2>&1 || true)
grep -q 'trace-cmd version 3' <<<"$v" || { echo "sid-root: trace-cmd does not run in $root" >&2; exit 2; }
