#!/usr/bin/env bash
# Cross tests: the static binaries from `make cross` against the host build.
#
#   cross/test.sh [TRIPLE...]
#   CONFIG=minimal cross/test.sh ...   a configuration's binaries
#                                      (target/configs/NAME/<triple>/trbox)
#
# For each target: `file` must say "statically linked"; then each case below is
# run under qemu-<arch>-static (natively for the host's own architecture) and its
# stdout and exit status must equal the host build's (target/release/trbox),
# which has every feature: the applets a configuration leaves out are taken
# out of the host's --list and banner. A case that needs a feature the
# binary lacks (its --version names its features) must instead exit 2 and
# say it is not in this trbox; those are listed as left out.
# Ends with "N passed, M failed"; exits 1 on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."

TARGETS=${*:-"x86_64-unknown-linux-musl aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf"}
TARGET_DIR=${CARGO_TARGET_DIR:-target}
HOST_BIN=${TRBOX_HOST_BIN:-$TARGET_DIR/release/trbox}
TREE=tests/data/tree-basic
CONFIG=${CONFIG:-}

# name|args|required exit status ("" = whatever the host build returns)|the
# features it needs (Cargo.toml)
CASES=(
    "list|--list|0|"
    "tr-on-tree|tr-on -T $TREE|0|tr-on"
    "banner||0|"
    "unknown-applet|no-such-applet||"
    "events-list|tr-event -T $TREE --list|0|tr-event"
    "tracedat-v6|tr-cat tests/data/tracedat/v6-inst.dat|0|tr-cat decode"
    "tracedat-v7|tr-cat -B inst1 tests/data/tracedat/v7-none-inst.dat|0|tr-cat decode"
    "graph-folded|tr-graph --folded -T tests/fixtures/aarch64/function_graph|0|tr-graph"
    "net|tr-cat -N 127.0.0.1:1 --raw|1|tr-cat net decode"
    "probe|tr-event -T $TREE --kprobe r:|2|tr-event probe"
    "lat|tr-lat wakeup -r -T $TREE|0|tr-lat"
)
# Every board fixture, decoded by every target as by the host: 64-bit values
# through 32-bit arithmetic (armv7), the threaded renderer under qemu-user.
for d in tests/fixtures/*/*/; do
    d=${d%/}
    n=${d#tests/fixtures/}
    [ -d "$d/per_cpu" ] && CASES+=("fixture-${n//\//-}|tr-cat --raw -j 2 -T $d|0|tr-cat decode")
done
# Also dispatch on argv[0]: a symlink named tr-on.
LINK_CASES=(
    "link-tr-on|tr-on|-T $TREE|0|tr-on"
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
    IFS='|' read -r name args want needs <<<"$c"
    # shellcheck disable=SC2086
    run_ref "$name" "$HOST_BIN" $args
done
for c in "${LINK_CASES[@]}"; do
    IFS='|' read -r name link args want needs <<<"$c"
    # shellcheck disable=SC2086
    run_ref "$name" "$work/host-links/$link" $args
done

# The features of the binary under test (`trbox --version`: "trbox V
# (configuration NAME: FEATURE...)"), and what it lacks of $1.
FEATURES=
lacks() {
    local f
    for f in $1; do
        [[ " $FEATURES " == *" $f "* ]] || { echo "$f"; return; }
    done
}
# The host's --list and banner without the applets this binary leaves out.
without_absent() {
    local a pat=
    for a in tr-on tr-event tr-cat tr-graph tr-stack tr-lat; do
        [ -z "$(lacks "$a")" ] || pat+="${pat:+|}$a"
    done
    if [ -n "$pat" ]; then grep -Ev "^($pat)\$|^  ($pat) " || true; else cat; fi
}

check() { # target name want rc needs (outputs in $work/out.*)
    local t=$1 name=$2 want=$3 rc=$4 needs=$5 why="" missing
    missing=$(lacks "$needs")
    if [ -n "$missing" ]; then
        # Left out of this configuration: one line that says so, exit 2.
        if [ "$rc" = 2 ] && grep -q "is not in this trbox (configuration $CONFIG" "$work/err.$name"; then
            ok "$t $name: left out (no $missing), says so"
            left_out+=("$name")
        else
            ko "$t $name: needs $missing, which this build lacks: want exit 2 and 'is not in this trbox (configuration $CONFIG'; exit $rc"
            head -3 "$work/err.$name" | sed 's/^/      /'
        fi
        return
    fi
    if [[ $name == list || $name == banner ]]; then
        without_absent <"$work/ref.$name.out" >"$work/ref.$name.want"
    else
        cp "$work/ref.$name.out" "$work/ref.$name.want"
    fi
    if [ -n "$want" ] && [ "$rc" != "$want" ]; then
        why="exit $rc, want $want"
    elif [ "$rc" != "${REF_RC[$name]}" ]; then
        why="exit $rc, host build exits ${REF_RC[$name]}"
    elif ! cmp -s "$work/ref.$name.want" "$work/out.$name"; then
        why="stdout differs from the host build:"
    fi
    if [ -z "$why" ]; then
        ok "$t $name"
    else
        ko "$t $name: $why"
        if [ "$why" = "stdout differs from the host build:" ]; then
            diff -u "$work/ref.$name.want" "$work/out.$name" | head -20 | sed 's/^/      /'
        fi
        if [ -s "$work/err.$name" ]; then
            echo "      stderr:"
            head -5 "$work/err.$name" | sed 's/^/      /'
        fi
    fi
}

for t in $TARGETS; do
    bin=$TARGET_DIR/$t/release/trbox
    [ -n "$CONFIG" ] && bin=$TARGET_DIR/configs/$CONFIG/$t/trbox
    if [ ! -f "$bin" ]; then
        ko "$t build: $bin missing (make cross${CONFIG:+ CONFIG=$CONFIG})"
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
    # Its configuration and features, as it names them.
    version=$($runner "$bin" --version 2>&1)
    FEATURES=$(sed -n 's/^trbox [^ ]* (configuration [^:]*: \(.*\))$/\1/p' <<<"$version")
    named=$(sed -n 's/^trbox [^ ]* (configuration \([^:]*\):.*/\1/p' <<<"$version")
    if [ -n "$named" ] && { [ -z "$CONFIG" ] || [ "$named" = "$CONFIG" ]; }; then
        ok "$t version: configuration $named: $FEATURES"
    else
        ko "$t version: want 'trbox V (configuration ${CONFIG:-NAME}: FEATURES...)', got: $version"
    fi
    CONFIG=${CONFIG:-$named}
    left_out=()
    for c in "${CASES[@]}"; do
        IFS='|' read -r name args want needs <<<"$c"
        # shellcheck disable=SC2086
        $runner "$bin" $args >"$work/out.$name" 2>"$work/err.$name" </dev/null
        check "$t" "$name" "$want" $? "$needs"
    done
    # Each applet this build leaves out says so (exit 2), not "applet not found".
    for a in tr-on tr-event tr-cat tr-graph tr-stack tr-lat; do
        [ -n "$(lacks "$a")" ] || continue
        $runner "$bin" "$a" >/dev/null 2>"$work/err.absent" </dev/null
        rc=$?
        if [ "$rc" = 2 ] && [ "$(cat "$work/err.absent")" = "$a is not in this trbox (configuration $CONFIG)" ]; then
            ok "$t $a: not in this trbox"
        else
            ko "$t $a: want exit 2 and '$a is not in this trbox (configuration $CONFIG)'; exit $rc: $(head -1 "$work/err.absent")"
        fi
    done
    rm -rf "$work/links" && mkdir -p "$work/links"
    for c in "${LINK_CASES[@]}"; do
        IFS='|' read -r name link args want needs <<<"$c"
        ln -sfn "$(realpath "$bin")" "$work/links/$link"
        # shellcheck disable=SC2086
        $runner "$work/links/$link" $args >"$work/out.$name" 2>"$work/err.$name" </dev/null
        check "$t" "$name" "$want" $? "$needs"
    done
    if [ ${#left_out[@]} -gt 0 ]; then
        fixtures=$(printf '%s\n' "${left_out[@]}" | grep -c '^fixture-')
        others=$(printf '%s\n' "${left_out[@]}" | grep -v '^fixture-' | tr '\n' ' ')
        [ "$fixtures" = 0 ] && fixtures= || fixtures="$fixtures fixtures"
        echo "      $t: left out of configuration $CONFIG, checked to say so: $others$fixtures"
    fi
done

echo "cross-test${CONFIG:+ ($CONFIG)}: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
