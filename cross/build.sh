#!/usr/bin/env bash
# Static musl release builds of trbox, the local route (no Docker):
#
#   cross/build.sh [TRIPLE...]      default: all of $TRBOX_CROSS_TARGETS
#
# Each binary lands at $CARGO_TARGET_DIR/<triple>/release/trbox (default target/).
# Each triple builds in a target directory of its own
# ($CARGO_TARGET_DIR/by-triple/<triple>): cargo locks a target directory for
# a whole build (the host's build scripts too), so one shared directory
# would build the three triples one after the other even when make runs
# them at once (make test, cross-configs).
#
# Configurations (busybox's defconfigs; Cargo.toml's features):
#   TRBOX_CONFIG=NAME       full (default: everything a board can use) or
#                           minimal (tr-on, tr-event, tr-cat: record, read,
#                           -o -); a Cargo feature of that name
#   TRBOX_FEATURES="A B"    a custom configuration (named custom): std and
#                           these features (tr-cat net zlib ...)
# The binary names its configuration (`trbox --version`); a copy of it is
# kept as $CARGO_TARGET_DIR/configs/NAME/<triple>/trbox, for the size table
# (cross/size.sh) and the cross tests of each configuration.
#
# How (see also .cargo/config.toml and DEVELOPERS.md):
#   * nightly cargo with -Zbuild-std=std,panic_abort and the std feature
#     `optimize_for_size` only: std is rebuilt with our release profile (z, LTO,
#     panic=abort) and without its backtrace symbolizer (gimli/addr2line/miniz),
#     which alone is ~170 KiB of the stripped binary.
#   * the codegen flags: cross/rustflags.sh, each with why and what it is
#     worth (TRBOX_DROP_FLAGS leaves some out, to measure them).
#   * --icf=all: the linker folds sections of identical machine code (generic
#     copies that came out the same, e.g. Vec<T>::push for two T of one size;
#     identical outlined sequences): -2 KiB. Safe for this binary: rustc marks
#     every Rust function unnamed_addr ("function addresses in Rust are never
#     significant") and LLVM already merges identical functions at the IR
#     level; ICF does the same after codegen. --icf=safe folds nothing here
#     (it needs address-significance tables, which rustc does not emit). Of
#     musl only the empty weak-alias stubs (`dummy`) fold, which are called,
#     never compared; RUSTFLAGS=-Clink-arg=--print-icf-sections lists it all.
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
#                   binaries (cross/rustflags.sh: abort)
#   TRBOX_DROP_FLAGS  codegen flags to leave out, by name (cross/rustflags.sh)
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

CONFIG=${TRBOX_CONFIG:-full}
if [ -n "${TRBOX_FEATURES:-}" ]; then
    CONFIG=custom
    FEATURES="std ${TRBOX_FEATURES//,/ }"
else
    case $CONFIG in
    full | minimal) FEATURES=$CONFIG ;;
    *) die "no configuration '$CONFIG' (full, minimal; or TRBOX_FEATURES=\"...\" for a custom one)" ;;
    esac
fi

USER_RUSTFLAGS=${RUSTFLAGS:-}
for t in $TARGETS; do
    L=$(prepare_link_dir "$t")
    flags="$(bash cross/rustflags.sh "$t")"
    flags+=" -C linker=rust-lld -C linker-flavor=ld.lld -C link-self-contained=no -C link-arg=--icf=all -L $L"
    flags+=" -Z pre-link-arg=$L/crt1.o -Z pre-link-arg=$L/crti.o -C link-arg=$L/crtn.o"
    [ "$t" = armv7-unknown-linux-musleabihf ] && flags+=" -C link-arg=$L/libgcc.a"
    echo "cross/build.sh: $t, configuration $CONFIG ($FEATURES)"
    # RUSTFLAGS with --target applies to the target only, not to build scripts.
    # TRBOX_CONFIG is the name the binary gives (applets/config.rs).
    TRBOX_CONFIG=$CONFIG RUSTFLAGS="$flags $USER_RUSTFLAGS" CARGO_TARGET_DIR="$TARGET_DIR/by-triple/$t" \
        cargo "+$NIGHTLY" build --release --target "$t" \
        -Zbuild-std=std,panic_abort -Zbuild-std-features=optimize_for_size \
        --no-default-features --features "$FEATURES" ${CROSS_CARGO_ARGS:-}
    bin="$TARGET_DIR/by-triple/$t/$t/release/trbox"
    # A stripped binary loses its section headers too, as OpenWrt's sstrip
    # does: the kernel loads a program by its program headers alone, and a
    # stripped one has no symbols for the headers to find (-1.2 KiB:
    # 15 headers, their names, .comment). Unstripped builds are kept whole.
    if file "$bin" | grep -q ', stripped'; then
        "$OBJCOPY" --strip-sections "$bin" || die "$OBJCOPY --strip-sections $bin failed"
    fi
    file "$bin"
    mkdir -p "$TARGET_DIR/$t/release" "$TARGET_DIR/configs/$CONFIG/$t"
    cp "$bin" "$TARGET_DIR/$t/release/trbox"
    cp "$bin" "$TARGET_DIR/configs/$CONFIG/$t/trbox"
done
