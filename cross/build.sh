#!/usr/bin/env bash
# Static musl release builds of trbox, the local route (no Docker):
#
#   cross/build.sh [TRIPLE...]      default: all of $TRBOX_CROSS_TARGETS
#
# Each binary lands at $CARGO_TARGET_DIR/<triple>/release/trbox (default target/).
#
# How (see also .cargo/config.toml and DEVELOPERS.md):
#   * nightly cargo with -Zbuild-std=std,panic_abort and the std feature
#     `optimize_for_size` only: std is rebuilt with our release profile (z, LTO,
#     panic=abort) and without its backtrace symbolizer (gimli/addr2line/miniz),
#     which alone is ~170 KiB of the stripped binary. Panic messages are kept.
#   * -C force-unwind-tables=no (no .eh_frame: nothing unwinds with panic=abort),
#     -C relocation-model=static (plain static ELF, not static-pie).
#   * -Zlocation-detail=none with immediate-abort (below): a panic traps
#     without a message, and nothing calls Location::caller, so the file:line
#     records of panic sites are dead weight (-0.6 KiB on aarch64).
#   * aarch64: -C target-feature=-outline-atomics: atomics are inline ARMv8.0
#     exclusive loads/stores instead of calls to helpers that pick LSE
#     instructions after a CPU probe at startup; drops the helpers and std's
#     probe (-2.2 KiB). Atomics are rare here (Once, locks), LSE's speed under
#     contention on many cores is not what a board needs. (rustc warns that
#     the feature is unstable: expected, these are nightly builds anyway.)
#   * aarch64: -C code-model=tiny: an address is one ADR (+-1 MiB of the
#     code) instead of ADRP + ADD, for every string, table and vtable the
#     code takes the address of: -12,416 bytes (522,768 -> 510,352). The
#     whole image (text, rodata, data, bss: about 530 KB) must stay within
#     1 MiB; past that the link fails (relocation out of range), loudly.
#   * aarch64: -C llvm-args=-homogeneous-prolog-epilog: a function's saving
#     and restoring of callee-saved registers (the stp/ldp pairs of its
#     prologue and epilogue) becomes a call to one shared helper per register
#     set (OUTLINED_FUNCTION_PROLOG_*/EPILOG_*), as LLVM does for minsize code
#     when asked (it was written for mobile apps' size): -17.5 KB. The
#     helpers move the stack pointer before they store and after they load,
#     as a normal prologue does (nothing below sp, which a signal frame may
#     overwrite); nothing unwinds here (immediate-abort, no unwind tables).
#   * armv7: -C target-feature=+thumb-mode: Thumb-2 code (16/32-bit
#     instructions) instead of ARM mode: -15% (455 -> 385 KB). Every ARMv7-A
#     core runs Thumb-2, and musl/libgcc from Debian armhf are Thumb-2 too.
#   * --icf=all: the linker folds sections of identical machine code (generic
#     copies that came out the same, e.g. Vec<T>::push for two T of one size;
#     identical outlined sequences): -2 KiB. Safe for this binary: rustc marks
#     every Rust function unnamed_addr ("function addresses in Rust are never
#     significant") and LLVM already merges identical functions at the IR
#     level; ICF does the same after codegen. --icf=safe folds nothing here
#     (it needs address-significance tables, which rustc does not emit). Of
#     musl only the empty weak-alias stubs (`dummy`) fold, which are called,
#     never compared; RUSTFLAGS=-Clink-arg=--print-icf-sections lists it all.
#   * -C llvm-args=-machine-outliner-reruns=3: LLVM's machine outliner (on
#     for minsize code, i.e. opt-level z) runs again over its own output,
#     folding repeats that only show once the first round's calls are in;
#     three rounds reach the fixed point (eight give the same bytes):
#     -1,152 bytes on aarch64, for a slower link of the crate.
#   * -C llvm-args=-enable-global-merge-func=true: LLVM's global function
#     merging (LLVM 20+, MergeFunctions' sibling for size): functions that
#     differ only in some constants become one body that takes those
#     constants as parameters, and thin callers (argh's slot fillers, the
#     per-type from_arg_value, drop glue of look-alike types): -1,400 bytes
#     on aarch64; cross-test and the boards run it.
#   * section headers dropped after the link (llvm-objcopy --strip-sections,
#     like OpenWrt's sstrip): -1.2 KiB, see the loop below.
#   * linked by rust-lld as ld.lld, with link-self-contained=no: the musl C
#     library and crt objects are given explicitly from a per-target link
#     directory ($CARGO_TARGET_DIR/cross-link/<triple>) of symlinks:
#       x86_64, aarch64: musl from rustup's own rust-std for the target
#                        (lib/self-contained of a toolchain that has it, usually
#                        stable after `rustup target add`).
#       armv7:           rustup has no prebuilt std for armv7-unknown-linux-musleabihf
#                        here: musl from Debian's musl-dev:armhf, libgcc from
#                        gcc-arm-linux-gnueabihf, and libunwind.a -> libgcc_eh.a
#                        (std's unwind crate asks for -lunwind; nothing calls it).
#
# Environment:
#   TRBOX_NIGHTLY   rustup toolchain used for build-std (default: nightly)
#   TRBOX_CROSS_TARGETS  default target list
#   TRBOX_IMMEDIATE_ABORT=0  keep panic messages (file:line) in the board
#                   binaries. By default (1) they are built with
#                   -Cpanic=immediate-abort: a panic becomes a bare trap, and
#                   every panic site shrinks to one instruction — about 110 KiB
#                   less on aarch64, which keeps the binary under the 448 KiB
#                   budget. The core is built and fuzzed not to panic on any
#                   input; the host build (make) keeps the messages.
#   TRBOX_BOARD_FEATURES  cargo features of the board binaries (default
#                   "std"): the decoders for compressed trace.dat v7 (zstd,
#                   ruzstd ~20 KiB on aarch64; zlib, miniz_oxide's inflater
#                   ~7.5 KiB) and the `host` feature (reading streams and
#                   console logs, converting, Perfetto, --listen) are left out
#                   to keep the binary under its 448 KiB budget; boards record
#                   v6 and write streams, and compressed files are read on the
#                   desktop (the host build has it all) or after `trace-cmd
#                   convert --compression none`. "std,zlib,zstd" puts the
#                   decoders back.
#   RUSTFLAGS       appended to the flags above
#   CROSS_CARGO_ARGS  extra cargo build arguments
set -euo pipefail
cd "$(dirname "$0")/.."

NIGHTLY=${TRBOX_NIGHTLY:-nightly}
TARGETS=${TRBOX_CROSS_TARGETS:-"x86_64-unknown-linux-musl aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf"}
[ $# -gt 0 ] && TARGETS="$*"
TARGET_DIR=${CARGO_TARGET_DIR:-target}
mkdir -p "$TARGET_DIR"
TARGET_DIR=$(cd "$TARGET_DIR" && pwd)

die() { echo "cross/build.sh: $*" >&2; exit 1; }

# A toolchain's lib/self-contained for $1 (the musl that rustup ships), or "".
self_contained_dir() {
    local t=$1 tc sysroot
    for tc in "$NIGHTLY" stable ""; do
        if [ -n "$tc" ]; then
            sysroot=$(rustc "+$tc" --print sysroot 2>/dev/null) || continue
        else
            sysroot=$(rustc --print sysroot 2>/dev/null) || continue
        fi
        if [ -f "$sysroot/lib/rustlib/$t/lib/self-contained/libc.a" ]; then
            echo "$sysroot/lib/rustlib/$t/lib/self-contained"
            return
        fi
    done
}

# Fill $TARGET_DIR/cross-link/$1 with crt1.o crti.o crtn.o libc.a libunwind.a.
prepare_link_dir() {
    local t=$1 dir="$TARGET_DIR/cross-link/$1" src f
    mkdir -p "$dir"
    case $t in
    x86_64-unknown-linux-musl | aarch64-unknown-linux-musl)
        src=$(self_contained_dir "$t")
        [ -n "$src" ] || die "no musl for $t: run 'rustup target add $t' (or bash cross/setup.sh)"
        for f in crt1.o crti.o crtn.o libc.a libunwind.a; do
            ln -sfn "$src/$f" "$dir/$f"
        done
        ;;
    armv7-unknown-linux-musleabihf)
        src=/usr/lib/arm-linux-musleabihf
        [ -f $src/libc.a ] || die "no $src/libc.a: apt-get install musl-dev:armhf (or bash cross/setup.sh)"
        command -v arm-linux-gnueabihf-gcc >/dev/null ||
            die "no arm-linux-gnueabihf-gcc: apt-get install gcc-arm-linux-gnueabihf (or bash cross/setup.sh)"
        for f in crt1.o crti.o crtn.o libc.a; do
            ln -sfn "$src/$f" "$dir/$f"
        done
        ln -sfn "$(arm-linux-gnueabihf-gcc -print-file-name=libgcc_eh.a)" "$dir/libunwind.a"
        ln -sfn "$(arm-linux-gnueabihf-gcc -print-libgcc-file-name)" "$dir/libgcc.a"
        ;;
    *) die "unknown target $t (known: x86_64-unknown-linux-musl aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf)" ;;
    esac
    echo "$dir"
}

rustup run "$NIGHTLY" rustc --version >/dev/null 2>&1 ||
    die "no '$NIGHTLY' toolchain: rustup toolchain install $NIGHTLY --profile minimal -c rust-src"
[ -d "$(rustc "+$NIGHTLY" --print sysroot)/lib/rustlib/src/rust/library" ] ||
    die "no rust-src in '$NIGHTLY': rustup component add rust-src --toolchain $NIGHTLY"

# llvm-objcopy (Debian's llvm), under any of its names.
OBJCOPY=
for o in llvm-objcopy $(compgen -c llvm-objcopy- | sort -rV); do
    command -v "$o" >/dev/null && { OBJCOPY=$o; break; }
done
[ -n "$OBJCOPY" ] || die "no llvm-objcopy: apt-get install llvm (or bash cross/setup.sh)"

USER_RUSTFLAGS=${RUSTFLAGS:-}
for t in $TARGETS; do
    L=$(prepare_link_dir "$t")
    flags="-C force-unwind-tables=no -C relocation-model=static -C llvm-args=-machine-outliner-reruns=3 -C llvm-args=-enable-global-merge-func=true"
    [ "${TRBOX_IMMEDIATE_ABORT:-1}" = 1 ] && flags+=" -Zunstable-options -Cpanic=immediate-abort -Zlocation-detail=none -Zfmt-debug=none"
    flags+=" -C linker=rust-lld -C linker-flavor=ld.lld -C link-self-contained=no -C link-arg=--icf=all -L $L"
    flags+=" -Z pre-link-arg=$L/crt1.o -Z pre-link-arg=$L/crti.o -C link-arg=$L/crtn.o"
    [ "$t" = armv7-unknown-linux-musleabihf ] && flags+=" -C link-arg=$L/libgcc.a -C target-feature=+thumb-mode"
    [ "$t" = aarch64-unknown-linux-musl ] && flags+=" -C target-feature=-outline-atomics -C code-model=tiny -C llvm-args=-homogeneous-prolog-epilog"
    echo "cross/build.sh: $t"
    # RUSTFLAGS with --target applies to the target only, not to build scripts.
    RUSTFLAGS="$flags $USER_RUSTFLAGS" CARGO_TARGET_DIR="$TARGET_DIR" \
        cargo "+$NIGHTLY" build --release --target "$t" \
        -Zbuild-std=std,panic_abort -Zbuild-std-features=optimize_for_size \
        --no-default-features --features "${TRBOX_BOARD_FEATURES:-std}" ${CROSS_CARGO_ARGS:-}
    bin="$TARGET_DIR/$t/release/trbox"
    # A stripped binary loses its section headers too, as OpenWrt's sstrip
    # does: the kernel loads a program by its program headers alone, and a
    # stripped one has no symbols for the headers to find (-1.2 KiB:
    # 15 headers, their names, .comment). Unstripped builds are kept whole.
    if file "$bin" | grep -q ', stripped'; then
        "$OBJCOPY" --strip-sections "$bin" || die "$OBJCOPY --strip-sections $bin failed"
    fi
    file "$bin"
done
