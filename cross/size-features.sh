#!/usr/bin/env bash
# What each feature costs, in bytes of one target's board binary (default
# aarch64), as markdown: for a feature of the full configuration, full
# minus a build of full without it (and without what needs it, by
# Cargo.toml: tr-lat takes rtla along); for decode, which every analysis
# applet needs, also minimal plus decode minus minimal; for a feature
# outside full (zstd, zlib), full plus it minus full. One build each
# (cross/build.sh TRBOX_FEATURES=..., about a minute on 2 cores); at the
# end full is built again (from cargo's cache: seconds), so that
# target/<triple>/release/trbox is full again, the binary the boards run.
#
#   cross/size-features.sh [TRIPLE]
#
# Needs target/configs/{full,minimal}/TRIPLE/trbox (make size builds them).
set -euo pipefail
cd "$(dirname "$0")/.."

T=${1:-aarch64-unknown-linux-musl}
TARGET_DIR=${CARGO_TARGET_DIR:-target}

size_of() { stat -c %s "$TARGET_DIR/configs/$1/$T/trbox"; }
full=$(size_of full)
minimal=$(size_of minimal)

# One line per build: what is measured | the features of the build | the
# configuration it is compared with | +1: it adds the feature, -1: leaves
# it out. From Cargo.toml's [features]: what each configuration holds and
# what needs what.
plan=$(python3 - <<'EOF'
import tomllib
feats = tomllib.load(open("Cargo.toml", "rb"))["features"]
def closure(names):
    out, todo = set(), list(names)
    while todo:
        n = todo.pop()
        if n in out or n not in feats:
            continue
        out.add(n)
        todo += [d for d in feats[n] if not d.startswith("dep:") and "/" not in d]
    return out
marks = {"full", "minimal", "std", "host", "default"}
full = closure(["full"]) - marks
minimal = closure(["minimal"]) - marks
order = [f for f in feats if f not in marks]
for f in order:
    if f in full:
        needs = sorted(g for g in full if g != f and f in closure([g]))
        what = f + (" (with " + ", ".join(needs) + ": they need it)" if needs else "")
        keep = [g for g in order if g in full and g != f and g not in needs]
        print(f"{what}|{' '.join(keep)}|full|-1")
    else:
        print(f"{f} (not in full)|{' '.join(g for g in order if g in full | {f})}|full|1")
    if f == "decode":
        print(f"decode on minimal|{' '.join(g for g in order if g in minimal | {f})}|minimal|1")
EOF
)

echo "| feature | bytes |"
echo "|---|---:|"
while IFS='|' read -r what features base sign; do
    TRBOX_FEATURES="$features" bash cross/build.sh "$T" >"$TARGET_DIR/size-features.log" 2>&1 || {
        echo "size-features: the build without/with $what failed (TRBOX_FEATURES=\"$features\"):" >&2
        tail -20 "$TARGET_DIR/size-features.log" >&2
        exit 1
    }
    other=$(size_of custom)
    base_bytes=$([ "$base" = full ] && echo "$full" || echo "$minimal")
    echo "| $what | $((sign * (other - base_bytes))) |"
done <<<"$plan"
TRBOX_CONFIG=full bash cross/build.sh "$T" >"$TARGET_DIR/size-features.log" 2>&1
echo
echo "$T: full minus full without the feature, built with cross/build.sh TRBOX_FEATURES=...;" \
    "what needs the feature goes with it; features outside full: full with it minus full."
