#!/bin/bash
# Regenerates the trace.dat files written by trace-cmd 3.4 (the version that
# added options 23 BTF_FILE, 24 LAST_BOOT_INFO, 25 MODULES_FILE), and the
# `trace-cmd report` text of 3.4 beside them (CI has no 3.4):
#
#   v7-3.4-extract.dat  trace-cmd extract -B t34 of an instance "t34" with
#                       timer:hrtimer_start, sched:sched_switch and
#                       writeback:writeback_dirty_inode enabled while a file
#                       is written 5 times: extract always stores the BTF
#                       (option and section 23)
#   v7-3.4-record.dat   trace-cmd record -B t34 -e sched:sched_switch -e
#                       timer:hrtimer_start while running `ls` 5 times (no
#                       BTF: record stores it only for function arguments)
#   *.report            trace-cmd 3.4's `report -N` of each (since 3.3 it
#                       prints the 5-character latency column after [CPU])
#
# trace-cmd 3.4 needs a newer libc than Debian 12's, so it runs in a Debian
# sid chroot (SID_ROOT, default /var/tmp/sid), made once by
# cross/sid-root.sh (debootstrap from the host's Debian mirror). Inside a private mount namespace the
# chroot gets this machine's /proc and /sys (and so its tracefs), with
# - /proc/kallsyms shadowed by the core kernel's text symbols of timers and
#   wakeups (what hrtimer_start's function= names), each with the symbol
#   after it (which ends it), and _stext/_etext: small files that still
#   name every callback,
# - /sys/kernel/btf/vmlinux shadowed by a small BTF (small-btf.py: only the
#   enums that the print fmts of hrtimer_start and writeback_dirty_inode
#   name, taken from this machine's BTF), so that the stored BTF is a few
#   KB, not megabytes,
# - the dynamic ftrace files trace-cmd record writes shadowed by temp files
#   (this kernel answers EPERM; see make.sh).
# Options 24 and 25 need an instance with a persistent buffer
# (`last_boot_info`: 6.12+ booted with reserve_mem= and trace_instance=):
# this machine has none, so no file here has them.
#
# Needs root, a live tracefs at /sys/kernel/tracing, util-linux, python3.
# Takes the shared tracefs lock and leaves tracefs as it found it.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=${SID_ROOT:-/var/tmp/sid}
T=/sys/kernel/tracing
LOCK=/tmp/trbox-tracefs.lock

if [ "${1:-}" = "--inner" ]; then
    shift
    tmp=$(mktemp -d)
    re='hrtimer|tick_sched|tick_nohz|watchdog|_timer_fn|wakeup|it_real_fn|period_timer|perf_mux|_timerfn'
    sort /proc/kallsyms | awk -v re="$re" 'NF == 3 && $2 ~ /^[tT]$/ {
        m = ($3 ~ re || $3 == "_stext" || $3 == "_etext"); if (m || prev) print; prev = m }' > "$tmp/kallsyms"
    echo 1 > "$tmp/ftrace_enabled"
    : > "$tmp/filter"
    python3 small-btf.py /sys/kernel/btf/vmlinux "$tmp/btf" \
        $(grep -oh '[{ ]\(HRTIMER_MODE\|I\)_[A-Z_]*,' $T/events/timer/hrtimer_start/format \
            $T/events/writeback/writeback_dirty_inode/format | tr -d '{ ,' | sort -u)
    mount --bind /proc "$ROOT/proc"
    mount --rbind /sys "$ROOT/sys"
    mount --bind "$tmp/kallsyms" "$ROOT/proc/kallsyms"
    mount --bind "$tmp/ftrace_enabled" "$ROOT/proc/sys/kernel/ftrace_enabled"
    mount --bind "$tmp/btf" "$ROOT/sys/kernel/btf/vmlinux"
    for d in "$ROOT$T" "$ROOT$T"/instances/*; do
        for f in set_ftrace_filter set_ftrace_notrace set_graph_function set_graph_notrace \
                 set_ftrace_pid set_ftrace_notrace_pid; do
            if [ -e "$d/$f" ]; then mount --bind "$tmp/filter" "$d/$f"; fi
        done
    done
    mkdir -p "$ROOT/out"
    mount --bind "$PWD" "$ROOT/out"
    chroot "$ROOT" "$@"
    exit
fi

state() {
    cat "$T/tracing_on" "$T/current_tracer" "$T/trace_clock" "$T/set_event" "$T/buffer_size_kb"
    ls "$T/instances"
}

remove_instance() {
    if [ -d "$T/instances/t34" ]; then
        echo 0 > "$T/instances/t34/events/enable" || true
        rmdir "$T/instances/t34"
    fi
}

report() { # NAME
    unshare -m "$0" --inner trace-cmd report -N "/out/$1.dat" > "$1.report" 2>/dev/null
    echo "$1.dat: $(stat -c %s "$1.dat") bytes, $(grep -vc '^cpus=' "$1.report") events"
}

exec 9>"$LOCK"
flock 9
before=$(state)
trap remove_instance EXIT

rm -f v7-3.4-extract.dat v7-3.4-record.dat
mkdir "$T/instances/t34"
echo 1 > "$T/instances/t34/events/timer/hrtimer_start/enable"
echo 1 > "$T/instances/t34/events/sched/sched_switch/enable"
echo 1 > "$T/instances/t34/events/writeback/writeback_dirty_inode/enable"
for i in $(seq 5); do echo "$i" >> /var/tmp/trbox-t34-write; sync /var/tmp/trbox-t34-write; sleep 0.02; done
rm -f /var/tmp/trbox-t34-write
echo 0 > "$T/instances/t34/tracing_on"
unshare -m "$0" --inner trace-cmd extract -B t34 -o /out/v7-3.4-extract.dat > /dev/null 2>&1
remove_instance
report v7-3.4-extract

mkdir "$T/instances/t34"
timeout 120 unshare -m "$0" --inner trace-cmd record -o /out/v7-3.4-record.dat -B t34 \
    -e sched:sched_switch -e timer:hrtimer_start \
    sh -c 'for i in $(seq 5); do ls / >/dev/null; done' > /dev/null 2>&1
remove_instance
report v7-3.4-record

# trace-cmd leaves tracing off; put back what we found.
echo 1 > "$T/tracing_on"
after=$(state)
if [ "$before" != "$after" ]; then
    echo "tracefs state changed:" >&2
    diff <(echo "$before") <(echo "$after") >&2 || true
    exit 1
fi
