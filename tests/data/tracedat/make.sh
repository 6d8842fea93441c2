#!/bin/bash
# Regenerates the trace.dat fixtures written by trace-cmd (3.1.6 here):
#
#   v6-inst.dat        trace-cmd record --file-version 6
#   v7-none-inst.dat   trace-cmd record --file-version 7 --compression none
#   v7-zstd-inst.dat   trace-cmd record --file-version 7 --compression zstd
#   v7-zlib-inst.dat   v6-inst.dat converted (./make.sh --zlib, see below)
#   v6-only-fx.dat     trace-cmd record --file-version 6 -B fx: the instance
#                      "fx" is the only buffer with data (v6 still writes an
#                      empty flyrecord table for the top buffer)
#   v7-only-fx.dat     v6-only-fx.dat converted by trace-cmd convert
#                      --file-version 7 --compression none (same events; v7
#                      has no top buffer at all)
#   v6-no-events.dat   trace-cmd record --file-version 6 -B fx with only
#                      sched:sched_process_hang enabled: buffers, no events
#   *.counts           events per (instance, CPU) as `trace-cmd report` shows
#                      them: "INSTANCE CPU COUNT", "-" for the top buffer
#   v7-zlib-inst.report  `trace-cmd report -N` of v7-zlib-inst.dat, the
#                      reference tests/applets/tr_cat_file.rs uses where the system
#                      trace-cmd cannot read zlib
#
# Each *-inst.dat records sched:sched_switch + sched:sched_wakeup in the top
# buffer and sched:sched_switch in an instance "inst1" (-B inst1) while
# running `ls` 20 times; v6-only-fx.dat records sched:sched_switch in "fx"
# only while running `ls` 5 times. `./make.sh --only-instance` remakes just
# the three instance-only files.
#
# v7+zlib: Debian's trace-cmd 3.1.6 is built without zlib (`trace-cmd list -c`
# shows only zstd), so v7-zlib-inst.dat was made by trace-cmd 3.1.6 built from
# source with zlib, outside the repo, without recording:
#   apt-get install libtraceevent-dev libtracefs-dev zlib1g-dev libzstd-dev pkg-config
#   git clone https://github.com/rostedt/trace-cmd && cd trace-cmd
#   mkdir -p /work/tools/trace-cmd-src
#   git archive 0a68daed | tar -x -C /work/tools/trace-cmd-src  # "trace-cmd: Version 3.1.6"
#   make -C /work/tools/trace-cmd-src trace-cmd   # `tracecmd/trace-cmd list -c`: zstd, zlib
#   ZLIB_TRACE_CMD=/work/tools/trace-cmd-src/tracecmd/trace-cmd ./make.sh --zlib
# which runs `$ZLIB_TRACE_CMD convert -i v6-inst.dat -o v7-zlib-inst.dat
# --file-version 7 --compression zlib` and writes its .counts and .report with
# that build (same events as v6-inst.dat; --zlib touches no tracefs).
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
    "${TC:-trace-cmd}" report "$1" 2>/dev/null | awk '
        /^cpus=/ { next }
        {
            inst = "-"; i = 1
            if ($1 ~ /:$/ && $1 !~ /\[/) { inst = substr($1, 1, length($1) - 1) }
            for (i = 1; i <= NF; i++) if ($i ~ /^\[[0-9]+\]$/) { cpu = substr($i, 2, length($i) - 2) + 0; break }
            n[inst " " cpu]++
        }
        END { for (k in n) print k, n[k] }' | sort
}

if [ "${1:-}" = "--zlib" ]; then
    TC=${ZLIB_TRACE_CMD:?set ZLIB_TRACE_CMD to a trace-cmd built with zlib}
    "$TC" list -c | grep -qw zlib || { echo "$TC has no zlib (list -c)" >&2; exit 1; }
    rm -f v7-zlib-inst.dat
    "$TC" convert -i v6-inst.dat -o v7-zlib-inst.dat --file-version 7 --compression zlib
    counts v7-zlib-inst.dat > v7-zlib-inst.counts
    "$TC" report -N v7-zlib-inst.dat > v7-zlib-inst.report
    echo "v7-zlib-inst.dat: $(stat -c %s v7-zlib-inst.dat) bytes, $(awk '{s+=$3} END {print s+0}' v7-zlib-inst.counts) events"
    exit
fi

state() {
    cat "$T/tracing_on" "$T/current_tracer" "$T/trace_clock" "$T/set_event" "$T/buffer_size_kb"
    ls "$T/instances"
}

summary() { # FILE
    counts "$1" > "${1%.dat}.counts"
    echo "$1: $(stat -c %s "$1") bytes, $(awk '{s+=$3} END {print s+0}' "${1%.dat}.counts") events"
}

record_in() { # INSTANCE LOOPS OUTPUT ARGS...
    local inst=$1 loops=$2 out=$3; shift 3
    mkdir "$T/instances/$inst"
    rc=0
    unshare -m "$0" --inner trace-cmd record -q -o "$PWD/$out" "$@" \
        sh -c "for i in \$(seq $loops); do ls / >/dev/null; done" >/dev/null 2>&1 || rc=$?
    # trace-cmd removes the instance itself when it succeeds.
    if [ -d "$T/instances/$inst" ]; then
        echo 0 > "$T/instances/$inst/events/enable" || true
        rmdir "$T/instances/$inst"
    fi
    [ "$rc" = 0 ] || { echo "trace-cmd record failed ($rc) for $out" >&2; exit 1; }
    summary "$out"
}

record() { # OUTPUT ARGS...
    local out=$1; shift
    record_in inst1 20 "$out" "$@" \
        -e sched:sched_switch -e sched:sched_wakeup -B inst1 -e sched:sched_switch
}

only_instance() {
    record_in fx 5 v6-only-fx.dat --file-version 6 -B fx -e sched:sched_switch
    rm -f v7-only-fx.dat
    trace-cmd convert -i v6-only-fx.dat -o v7-only-fx.dat --file-version 7 --compression none >/dev/null 2>&1
    summary v7-only-fx.dat
    record_in fx 1 v6-no-events.dat --file-version 6 -B fx -e sched:sched_process_hang
}

exec 9>"$LOCK"
flock 9
before=$(state)
if [ "${1:-}" = "--only-instance" ]; then
    only_instance
else
    record v6-inst.dat --file-version 6
    record v7-none-inst.dat --file-version 7 --compression none
    record v7-zstd-inst.dat --file-version 7 --compression zstd
    only_instance
fi
# trace-cmd leaves tracing off; put back what we found.
echo 1 > "$T/tracing_on"
after=$(state)
if [ "$before" != "$after" ]; then
    echo "tracefs state changed:" >&2
    diff <(echo "$before") <(echo "$after") >&2 || true
    exit 1
fi
