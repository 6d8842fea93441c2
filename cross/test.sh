#!/usr/bin/env bash
# Cross tests: the static binaries from `make cross` against the host build.
#
#   cross/test.sh [TRIPLE...]
#
# For each target: `file` must say "statically linked"; then each case below is
# run under qemu-<arch>-static (natively for the host's own architecture) and its
# stdout and exit status must equal the host build's (target/release/trbox).
# Ends with "N passed, M failed"; exits 1 on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."

TARGETS=${*:-"x86_64-unknown-linux-musl aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf"}
TARGET_DIR=${CARGO_TARGET_DIR:-target}
HOST_BIN=$TARGET_DIR/release/trbox
TREE=tests/data/tree-basic

# name|args|required exit status ("" = whatever the host build returns)
CASES=(
    "list|--list|0"
    "tr-on-tree|tr-on -T $TREE|0"
    "banner||0"
    "unknown-applet|no-such-applet|"
    "tracedat-v6|tr-cat tests/data/tracedat/v6-inst.dat|0"
    "tracedat-v7|tr-cat -B inst1 tests/data/tracedat/v7-none-inst.dat|0"
)
# Every board fixture, decoded by every target as by the host: 64-bit values
# through 32-bit arithmetic (armv7), the threaded renderer under qemu-user.
for d in tests/fixtures/*/*/; do
    d=${d%/}
    n=${d#tests/fixtures/}
    [ -d "$d/per_cpu" ] && CASES+=("fixture-${n//\//-}|tr-cat --raw -j 2 -T $d|0")
done
# Also dispatch on argv[0]: a symlink named tr-on.
LINK_CASES=(
    "link-tr-on|tr-on|-T $TREE|0"
)

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS  $*"; }
ko() { fail=$((fail + 1)); echo "FAIL  $*"; }

runner_for() {
    local arch
    case $1 in
    x86_64-*) arch=x86_64 ;;
    aarch64-*) arch=aarch64 ;;
    armv7-*) arch=arm ;;
    *) return 1 ;;
    esac
    if [ "$arch" = "$(uname -m)" ] || { [ "$arch" = arm ] && [ "$(uname -m)" = armv7l ]; }; then
        echo ""
    elif command -v "qemu-$arch-static" >/dev/null; then
        echo "qemu-$arch-static"
    else
        echo "missing:qemu-$arch-static"
    fi
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ ! -x "$HOST_BIN" ]; then
    echo "FAIL  host build $HOST_BIN missing (make build)"
    echo "0 passed, 1 failed"
    exit 1
fi
if [ ! -d "$TREE" ]; then
    echo "FAIL  test tree $TREE missing"
    echo "0 passed, 1 failed"
    exit 1
fi

# Reference outputs from the host build.
declare -A REF_RC
run_ref() { # name bin args...
    local name=$1 bin=$2
    shift 2
    "$bin" "$@" >"$work/ref.$name.raw" 2>"$work/ref.$name.err" </dev/null
    REF_RC[$name]=$?
    host_only <"$work/ref.$name.raw" >"$work/ref.$name.out"
}
# The host build's help without its host-only options (a row whose text
# starts "host build:", and the row's continuation lines): the board
# builds leave them out (Cargo feature "host").
host_only() {
    awk '/^ +-.* host build:/ { skip = 1; next }
        skip && /^                    / { next }
        { skip = 0; print }'
}
mkdir -p "$work/host-links"
ln -s "$(realpath "$HOST_BIN")" "$work/host-links/tr-on"
for c in "${CASES[@]}"; do
    IFS='|' read -r name args want <<<"$c"
    # shellcheck disable=SC2086
    run_ref "$name" "$HOST_BIN" $args
done
for c in "${LINK_CASES[@]}"; do
    IFS='|' read -r name link args want <<<"$c"
    # shellcheck disable=SC2086
    run_ref "$name" "$work/host-links/$link" $args
done

check() { # target name want rc  (outputs in $work/out.*)
    local t=$1 name=$2 want=$3 rc=$4 why=""
    if [ -n "$want" ] && [ "$rc" != "$want" ]; then
        why="exit $rc, want $want"
    elif [ "$rc" != "${REF_RC[$name]}" ]; then
        why="exit $rc, host build exits ${REF_RC[$name]}"
    elif ! cmp -s "$work/ref.$name.out" "$work/out.$name"; then
        why="stdout differs from the host build:"
    fi
    if [ -z "$why" ]; then
        ok "$t $name"
    else
        ko "$t $name: $why"
        if [ "$why" = "stdout differs from the host build:" ]; then
            diff -u "$work/ref.$name.out" "$work/out.$name" | head -20 | sed 's/^/      /'
        fi
        if [ -s "$work/err.$name" ]; then
            echo "      stderr:"
            head -5 "$work/err.$name" | sed 's/^/      /'
        fi
    fi
}

for t in $TARGETS; do
    bin=$TARGET_DIR/$t/release/trbox
    if [ ! -f "$bin" ]; then
        ko "$t build: $bin missing (make cross)"
        continue
    fi
    desc=$(file -b "$bin")
    if [[ $desc == *"statically linked"* ]]; then
        ok "$t static ($(stat -c %s "$bin") bytes)"
    else
        ko "$t static: file says: $desc"
    fi
    runner=$(runner_for "$t")
    if [[ $runner == missing:* ]]; then
        ko "$t run: ${runner#missing:} not found (bash cross/setup.sh)"
        continue
    fi
    for c in "${CASES[@]}"; do
        IFS='|' read -r name args want <<<"$c"
        # shellcheck disable=SC2086
        $runner "$bin" $args >"$work/out.$name" 2>"$work/err.$name" </dev/null
        check "$t" "$name" "$want" $?
    done
    rm -rf "$work/links" && mkdir -p "$work/links"
    for c in "${LINK_CASES[@]}"; do
        IFS='|' read -r name link args want <<<"$c"
        ln -sfn "$(realpath "$bin")" "$work/links/$link"
        # shellcheck disable=SC2086
        $runner "$work/links/$link" $args >"$work/out.$name" 2>"$work/err.$name" </dev/null
        check "$t" "$name" "$want" $?
    done
done

echo "cross-test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
