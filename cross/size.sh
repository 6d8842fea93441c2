#!/usr/bin/env bash
# Size table of the configurations' board binaries (cross/build.sh keeps
# each as target/configs/NAME/<triple>/trbox), as markdown: a row per
# configuration, a column per target, and each configuration's aarch64
# budget.
#
#   cross/size.sh [TRIPLE...]
#   SIZE_LIMITS="full=576 minimal=256"   the aarch64 budgets in KiB
#
# Fails (exit 1) if a configuration's aarch64 binary is over its budget, or
# a binary is missing or not stripped.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=${*:-"x86_64-unknown-linux-musl aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf"}
TARGET_DIR=${CARGO_TARGET_DIR:-target}
LIMITS=${SIZE_LIMITS:-"full=576 minimal=256"}

# 589824 -> 589,824
commas() { sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$1"; }

status=0
head="| configuration |"
rule="|---|"
for t in $TARGETS; do
    head+=" \`${t%%-*}\` |"
    rule+="---:|"
done
echo "$head aarch64 budget |"
echo "$rule---:|"
for l in $LIMITS; do
    config=${l%%=*} limit_kib=${l#*=}
    row="| $config |"
    budget="-"
    for t in $TARGETS; do
        bin=$TARGET_DIR/configs/$config/$t/trbox
        if [ ! -f "$bin" ]; then
            echo "size: $bin missing (make cross CONFIG=$config)" >&2
            status=1
            row+=" - |"
            continue
        fi
        bytes=$(stat -c %s "$bin")
        row+=" $(commas "$bytes") |"
        # Stripped, or further: no section headers at all (cross/build.sh).
        desc=$(file -b "$bin")
        if [[ $desc != *", stripped"* && $desc != *"no section header"* ]]; then
            echo "size: $bin is not stripped ([profile.release] strip = true?)" >&2
            status=1
        fi
        if [[ $t == aarch64-* ]]; then
            limit=$((limit_kib * 1024))
            budget="$(commas "$limit") ($(commas $((limit - bytes))) left)"
            if [ "$bytes" -gt "$limit" ]; then
                echo "size: FAIL: $config on $t is $bytes bytes, over its budget of $limit_kib KiB ($limit)" >&2
                status=1
            fi
        fi
    done
    echo "$row $budget |"
done
echo
echo "Static musl, release profile (opt-level z, LTO, 1 CGU, panic=abort, stripped, no section headers)," \
    "std rebuilt with -Zbuild-std ($(rustc "+${TRBOX_NIGHTLY:-nightly}" --version 2>/dev/null | cut -d' ' -f2-))."
exit $status
