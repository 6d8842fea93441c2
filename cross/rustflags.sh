#!/usr/bin/env bash
# The codegen flags of the board binaries, for one target: the one list
# that both routes use (cross/build.sh; cross/cross.mk's CROSS=1).
#
#   cross/rustflags.sh TRIPLE          prints the RUSTFLAGS words
#   cross/rustflags.sh --names TRIPLE  prints the flags' names, one a line
#                                      (cross/qemu/bench-flags.sh)
#
# Each flag has a name (the first column below); TRBOX_DROP_FLAGS="NAME..."
# leaves those out: how each was measured, one build with and one without
# (docs/size.md, "What the codegen flags cost"; make bench measures them on
# the aarch64 board: cross/qemu/bench-flags.sh). Flags only go in here when
# they cost at most 2% of decode or record speed on aarch64.
#
#   nounwind   -C force-unwind-tables=no: no .eh_frame (nothing unwinds
#              with panic=abort).
#   static     -C relocation-model=static: a plain static ELF, not
#              static-pie.
#   reruns     -C llvm-args=-machine-outliner-reruns=3: LLVM's machine
#              outliner (on for minsize code, opt-level z) runs again over
#              its own output, folding repeats that only show once the first
#              round's calls are in; three rounds reach the fixed point.
#   mergefunc  -C llvm-args=-enable-global-merge-func=true: functions that
#              differ only in some constants become one body that takes
#              them as parameters (LLVM 20+).
#   abort      -Cpanic=immediate-abort: a panic is a bare trap, every panic
#              site one instruction (about a fifth of the binary). The core
#              is built and fuzzed not to panic on any input; the host build
#              keeps the messages. TRBOX_IMMEDIATE_ABORT=0 drops this and
#              `location` and `fmtdebug` too, for a board binary that says
#              where it panicked.
#   location   -Zlocation-detail=none: no file:line records of panic sites
#              (nothing prints them with immediate-abort).
#   fmtdebug   -Zfmt-debug=none: `{:?}` prints nothing, and the Debug impls
#              go; no message a person reads uses `{:?}`.
#   atomics    aarch64: -C target-feature=-outline-atomics: inline ARMv8.0
#              atomics instead of helpers that pick LSE after a CPU probe at
#              startup (rare here: Once, locks).
#   tiny       aarch64: -C code-model=tiny: an address is one ADR (+-1 MiB of
#              the code) instead of ADRP + ADD; the whole image must stay
#              within 1 MiB, else the link fails loudly.
#   mir0       aarch64: -Zmir-opt-level=0: none of rustc's optional MIR
#              optimisations; LLVM's minsize pipeline does the optimising.
#   thumb      armv7: -C target-feature=+thumb-mode: Thumb-2 code (16/32-bit
#              instructions), which every ARMv7-A core runs: -15%.
#
# Left out (measured): -C llvm-args=-homogeneous-prolog-epilog on aarch64
# (saves and restores of callee-saved registers as calls to shared helpers:
# -19.6 KB, but 1.12x the decode time on the board).
set -euo pipefail
names=0
if [ "${1:-}" = --names ]; then
    names=1
    shift
fi
t=${1:?usage: cross/rustflags.sh [--names] TRIPLE}

flags=(
    "nounwind -C force-unwind-tables=no"
    "static -C relocation-model=static"
    "reruns -C llvm-args=-machine-outliner-reruns=3"
    "mergefunc -C llvm-args=-enable-global-merge-func=true"
)
if [ "${TRBOX_IMMEDIATE_ABORT:-1}" = 1 ]; then
    flags+=(
        "abort -Zunstable-options -Cpanic=immediate-abort"
        "location -Zlocation-detail=none"
        "fmtdebug -Zfmt-debug=none"
    )
fi
case $t in
aarch64-*)
    flags+=(
        "atomics -C target-feature=-outline-atomics"
        "tiny -C code-model=tiny"
        "mir0 -Zmir-opt-level=0"
    )
    ;;
armv7-*) flags+=("thumb -C target-feature=+thumb-mode") ;;
esac

if [ "$names" = 1 ]; then
    for f in "${flags[@]}"; do echo "${f%% *}"; done
    exit 0
fi
drop=" ${TRBOX_DROP_FLAGS:-} "
out=()
for f in "${flags[@]}"; do
    name=${f%% *}
    [[ $drop == *" $name "* ]] || out+=("${f#* }")
done
echo "${out[*]}"
