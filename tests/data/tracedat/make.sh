#!/bin/bash
# Regenerates the trace.dat fixtures written by trace-cmd (3.1.6 here):
#
#   v6-inst.dat        trace-cmd record --file-version 6
#   v7-none-inst.dat   trace-cmd record --file-version 7 --compression none
#   v7-zstd-inst.dat   trace-cmd record --file-version 7 --compression zstd
#   *.counts           events per (instance, CPU) as `trace-cmd report` shows
#                      them: "INSTANCE CPU COUNT", "-" for the top buffer
#
# Each records sched:sched_switch + sched:sched_wakeup in the top buffer and
# sched:sched_switch in an instance "inst1" (-B inst1) while running `ls` 20
# times. (This trace-cmd build has no zlib, so there is no v7+zlib fixture;
# tests/tracedat_synth.rs builds zlib files itself.)
#
# The development kernel refuses dynamic ftrace (EPERM on
# /proc/sys/kernel/ftrace_enabled, set_ftrace_filter, set_ftrace_pid…), and
# trace-cmd record gives up on those. So trace-cmd runs in a private mount
# namespace (unshare -m) where those files are shadowed by bind mounts of
# writable temp files, and where /proc/kallsyms is shadowed by its first 40
# lines to keep the files small. "inst1" is created beforehand so that its
# control files can be shadowed too, and removed afterwards.
#
# Needs root, a live tracefs at /sys/kernel/tracing, trace-cmd, util-linux.
# Takes the shared tracefs lock (/tmp/trbox-tracefs.lock) like the tests, and
# leaves tracefs as it found it (checked at the end).
set -euo pipefail
cd "$(dirname "$0")"
T=/sys/kernel/tracing
LOCK=/tmp/trbox-tracefs.lock

if [ "${1:-}" = "--inner" ]; then
    shift
    tmp=$(mktemp -d)
    echo 1 > "$tmp/ftrace_enabled"
    : > "$tmp/filter"
    head -n 40 /proc/kallsyms > "$tmp/kallsyms"
    mount --bind "$tmp/ftrace_enabled" /proc/sys/kernel/ftrace_enabled
    mount --bind "$tmp/kallsyms" /proc/kallsyms
    for d in "$T" "$T"/instances/*; do
        for f in set_ftrace_filter set_ftrace_notrace set_graph_function set_graph_notrace \
                 set_ftrace_pid set_ftrace_notrace_pid; do
            if [ -e "$d/$f" ]; then mount --bind "$tmp/filter" "$d/$f"; fi
        done
    done
    "$@"
    exit
fi

counts() { # FILE -> "INSTANCE CPU COUNT" lines
    trace-cmd report "$1" 2>/dev/null | awk '
        /^cpus=/ { next }
        {
            inst = "-"; i = 1
            if ($1 ~ /:$/ && $1 !~ /\[/) { inst = substr($1, 1, length($1) - 1) }
            for (i = 1; i <= NF; i++) if ($i ~ /^\[[0-9]+\]$/) { cpu = substr($i, 2, length($i) - 2) + 0; break }
            n[inst " " cpu]++
        }
        END { for (k in n) print k, n[k] }' | sort
}

state() {
    cat "$T/tracing_on" "$T/current_tracer" "$T/trace_clock" "$T/set_event" "$T/buffer_size_kb"
    ls "$T/instances"
}

record() { # OUTPUT ARGS...
    local out=$1; shift
    mkdir "$T/instances/inst1"
    rc=0
    unshare -m "$0" --inner trace-cmd record -q -o "$PWD/$out" "$@" \
        -e sched:sched_switch -e sched:sched_wakeup -B inst1 -e sched:sched_switch \
        sh -c 'for i in $(seq 20); do ls / >/dev/null; done' >/dev/null 2>&1 || rc=$?
    # trace-cmd removes inst1 itself when it succeeds.
    if [ -d "$T/instances/inst1" ]; then
        echo 0 > "$T/instances/inst1/events/enable" || true
        rmdir "$T/instances/inst1"
    fi
    [ "$rc" = 0 ] || { echo "trace-cmd record failed ($rc) for $out" >&2; exit 1; }
    counts "$out" > "${out%.dat}.counts"
    echo "$out: $(stat -c %s "$out") bytes, $(awk '{s+=$3} END {print s}' "${out%.dat}.counts") events"
}

exec 9>"$LOCK"
flock 9
before=$(state)
record v6-inst.dat --file-version 6
record v7-none-inst.dat --file-version 7 --compression none
record v7-zstd-inst.dat --file-version 7 --compression zstd
# trace-cmd leaves tracing off; put back what we found.
echo 1 > "$T/tracing_on"
after=$(state)
if [ "$before" != "$after" ]; then
    echo "tracefs state changed:" >&2
    diff <(echo "$before") <(echo "$after") >&2 || true
    exit 1
fi
