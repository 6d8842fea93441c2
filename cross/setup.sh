#!/usr/bin/env bash
# Install everything the build and tests need on a fresh Debian (bookworm)
# machine; called by .ci/run before `make test`.
# Idempotent and quick when everything is there: each item is checked first.
# Non-interactive. Needs root (or sudo) only when something has to be installed.
#
#   apt:    strace (order tests), qemu-user-static (qemu-aarch64-static, qemu-arm-static: called
#           explicitly, no binfmt needed), file, trace-cmd, llvm (llvm-objcopy), and for the armv7
#           build musl-dev:armhf (crt objects, libc.a) + gcc-arm-linux-gnueabihf
#           (libgcc, libgcc_eh), debootstrap (cross/sid-root.sh: sid's trace-cmd 3.4),
#           musl-tools (musl-gcc: the zstd C library in the host musl test build),
#           openjdk-17-jre-headless (Spark's Java, when no java is there).
#   PyPI:   perfetto and protobuf, duckdb, pyspark (the output checks of tests/applets).
#   rustup: x86_64/aarch64-unknown-linux-musl on the default toolchain (musl's
#           libc.a and crt objects for cross/build.sh), rustfmt and clippy
#           (make test checks both), a nightly toolchain with
#           rust-src (-Zbuild-std; armv7 has no prebuilt std), cargo-fuzz
#           (`make fuzz`, part of make test: every fuzz target built and run).
#   then:   cross/qemu/setup.sh (the board harness's own packages), if present.
set -euo pipefail
cd "$(dirname "$0")/.."

NIGHTLY=${TRBOX_NIGHTLY:-nightly}
MUSL_TARGETS=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl)

# Quiet when everything is there: the closing line only after an install.
did=
say() { did=1; echo "[setup] $*" >&2; }
die() { echo "[setup] error: $*" >&2; exit 1; }

SUDO=
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
# Wait for another apt/dpkg (e.g. a parallel setup script) instead of failing.
APT=(apt-get -y -q -o DPkg::Lock::Timeout=600 -o Acquire::Retries=3)

# ---- apt ----------------------------------------------------------------
installed() { # pkg[:arch]
    [ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null)" = "ii " ]
}

need=()
for p in qemu-user-static file trace-cmd strace gcc-arm-linux-gnueabihf musl-dev:armhf python3 python3-pip debootstrap; do
    installed "$p" || need+=("$p")
done
# musl-gcc: the host test build (musl, make test-host) compiles the zstd C
# library of tr-cat --compression zstd with it (the cc crate looks for
# musl-gcc for a *-linux-musl target).
command -v musl-gcc >/dev/null || need+=(musl-tools)
# Java 17+: Spark (pyspark, below) runs on it.
command -v java >/dev/null || need+=(openjdk-17-jre-headless)
# llvm-objcopy: cross/build.sh drops the board binaries' section headers.
command -v llvm-objcopy >/dev/null || compgen -c llvm-objcopy- >/dev/null || need+=(llvm)

if [ ${#need[@]} -gt 0 ]; then
    command -v apt-get >/dev/null || die "no apt-get: install ${need[*]} by hand"
    if [[ " $(dpkg --print-foreign-architectures | tr '\n' ' ') " != *" armhf "* ]]; then
        say "dpkg --add-architecture armhf"
        $SUDO dpkg --add-architecture armhf
    fi
    # A partial failure (a mirror mid-sync, one index of one architecture) is not
    # fatal: the install below says whether what we need was in the lists.
    say "apt-get update"
    for try in 1 2 3; do
        if $SUDO "${APT[@]}" update >&2; then break; fi
        say "apt-get update reported errors (try $try of 3)"
        [ "$try" = 3 ] || sleep 5
    done
    say "apt-get install ${need[*]}"
    $SUDO "${APT[@]}" install --no-install-recommends "${need[@]}" >&2 ||
        die "apt-get install ${need[*]} failed"
fi

# ---- rustup -------------------------------------------------------------
command -v rustup >/dev/null || die "rustup not found (the build needs rustup's toolchains)"

installed_targets=" $(rustup target list --installed | tr '\n' ' ') "
missing=()
for t in "${MUSL_TARGETS[@]}"; do
    [[ $installed_targets == *" $t "* ]] || missing+=("$t")
done
if [ ${#missing[@]} -gt 0 ]; then
    say "rustup target add ${missing[*]}"
    rustup target add "${missing[@]}" >&2 || die "rustup target add ${missing[*]} failed"
fi

for c in rustfmt clippy; do
    if ! cargo "${c/rustfmt/fmt}" --version >/dev/null 2>&1; then
        say "rustup component add $c"
        rustup component add "$c" >&2 || die "rustup component add $c failed (make test runs cargo fmt --check and cargo clippy)"
    fi
done

if ! rustup run "$NIGHTLY" rustc --version >/dev/null 2>&1; then
    say "rustup toolchain install $NIGHTLY (minimal, with rust-src)"
    rustup toolchain install "$NIGHTLY" --profile minimal --component rust-src >&2 ||
        die "rustup toolchain install $NIGHTLY failed: make cross needs a nightly for -Zbuild-std (armv7 has no prebuilt std)"
fi
if [ ! -f "$(rustc "+$NIGHTLY" --print sysroot)/lib/rustlib/src/rust/library/std/Cargo.toml" ]; then
    say "rustup component add rust-src --toolchain $NIGHTLY"
    rustup component add rust-src --toolchain "$NIGHTLY" >&2 ||
        die "rustup component add rust-src --toolchain $NIGHTLY failed"
fi

# make test builds and runs every fuzz target (make fuzz, fuzz/run.sh) with
# cargo fuzz on the nightly above. --locked: the versions cargo-fuzz was
# released with.
if ! command -v cargo-fuzz >/dev/null; then
    say "cargo install cargo-fuzz (make fuzz; a few minutes, once)"
    cargo install --locked cargo-fuzz >&2 || die "cargo install cargo-fuzz failed (make test runs the fuzz targets)"
fi

# ---- Perfetto's schema ----------------------------------------------------
# tests/applets/perfetto_check.py parses trbox's .pftrace files with Perfetto's own
# compiled protos (the `perfetto` wheel) and protobuf, from PyPI.
if ! python3 -c 'import perfetto.protos.perfetto.trace.perfetto_trace_pb2, google.protobuf.unknown_fields' 2>/dev/null; then
    say "pip install perfetto protobuf"
    python3 -m pip install -q perfetto protobuf >&2 ||
        python3 -m pip install -q --break-system-packages perfetto protobuf >&2 ||
        die "pip install perfetto protobuf failed (the Perfetto tests need them)"
fi

# ---- DuckDB ----------------------------------------------------------------
# tests/applets/parquet_check.py reads trbox's Parquet output (tr-cat -o
# X.parquet) with DuckDB's embedded engine, from PyPI.
if ! python3 -c 'import duckdb' 2>/dev/null; then
    say "pip install duckdb"
    python3 -m pip install -q duckdb >&2 ||
        python3 -m pip install -q --break-system-packages duckdb >&2 ||
        die "pip install duckdb failed (the Parquet tests need it)"
fi

# ---- Spark -----------------------------------------------------------------
# tests/applets/spark_check.py reads a fleet directory (tr-cat A.dat B.dat …
# -o X.parquet) with Spark in local mode, from PyPI (it brings its own jars;
# the Java it runs on is the apt package above).
if ! python3 -c 'import pyspark' 2>/dev/null; then
    say "pip install pyspark"
    python3 -m pip install -q pyspark >&2 ||
        python3 -m pip install -q --break-system-packages pyspark >&2 ||
        die "pip install pyspark failed (the Spark test needs it)"
fi

# ---- tracefs -------------------------------------------------------------
# The live tests run on this machine's own tracefs; a fresh machine may not
# have it mounted (trbox mounts it for a run by itself, the tests' reference
# reads of the kernel's text need it mounted).
if ! grep -qs ' /sys/kernel/tracing tracefs ' /proc/mounts && [ -d /sys/kernel/tracing ]; then
    say "mount -t tracefs nodev /sys/kernel/tracing"
    $SUDO mount -t tracefs nodev /sys/kernel/tracing || say "warning: cannot mount tracefs: the live tests will say so"
fi

# ---- the board harness --------------------------------------------------
if [ -f cross/qemu/setup.sh ]; then
    bash cross/qemu/setup.sh
fi

[ -z "$did" ] || say "ok: $(rustc --version | cut -d' ' -f1-2), $(rustc "+$NIGHTLY" --version | cut -d' ' -f1-2)," \
    "$(qemu-aarch64-static --version | head -1 | cut -d' ' -f1-3)"
