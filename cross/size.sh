#!/usr/bin/env bash
# Size table of the `make cross` binaries, as markdown for the README.
#
#   cross/size.sh LIMIT_KIB [TRIPLE...]
#
# Fails (exit 1) if the aarch64 binary is larger than LIMIT_KIB, or a binary is
# missing or not stripped.
set -euo pipefail
cd "$(dirname "$0")/.."

LIMIT_KIB=${1:-400}
shift || true
TARGETS=${*:-"x86_64-unknown-linux-musl aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf"}
TARGET_DIR=${CARGO_TARGET_DIR:-target}

status=0
echo "| target | bytes | KiB |"
echo "|---|---:|---:|"
for t in $TARGETS; do
    bin=$TARGET_DIR/$t/release/trbox
    if [ ! -f "$bin" ]; then
        echo "size: $bin missing (make cross)" >&2
        status=1
        continue
    fi
    bytes=$(stat -c %s "$bin")
    kib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1024 }')
    echo "| \`$t\` | $bytes | $kib |"
    # Stripped, or further: no section headers at all (cross/build.sh).
    desc=$(file -b "$bin")
    if [[ $desc != *", stripped"* && $desc != *"no section header"* ]]; then
        echo "size: $bin is not stripped ([profile.release] strip = true?)" >&2
        status=1
    fi
    if [[ $t == aarch64-* ]] && [ "$bytes" -gt $((LIMIT_KIB * 1024)) ]; then
        echo "size: FAIL: $t is $kib KiB, over the $LIMIT_KIB KiB limit" >&2
        status=1
    fi
done
echo
echo "Static musl, release profile (opt-level z, LTO, 1 CGU, panic=abort, stripped, no section headers)," \
    "std rebuilt with -Zbuild-std ($(rustc "+${TRBOX_NIGHTLY:-nightly}" --version 2>/dev/null | cut -d' ' -f2-))."
exit $status
