# Cross builds, size table and cross tests (included from the top-level Makefile).
#
#   make cross            static musl binaries -> target/<triple>/release/trbox
#                         (local route: cross/build.sh, nightly -Zbuild-std + rust-lld)
#   make cross CROSS=1    the same with `cross` (Docker/Podman), config cross/Cross.toml
#   make size             markdown table of the stripped sizes; fails if aarch64 > 512 KiB
#   make cross-test       `file` says static; --list and tr-on -T tests/data/tree-basic
#                         under qemu-{aarch64,arm}-static give the host build's output
#
# Prerequisites on a fresh Debian machine: bash cross/setup.sh

CROSS_TARGETS ?= x86_64-unknown-linux-musl aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf
# Ceiling for the aarch64 binary (the developers' guide: at most 512 KiB).
SIZE_LIMIT_KIB ?= 512
# Toolchain for -Zbuild-std (cross/build.sh, CROSS=1).
TRBOX_NIGHTLY ?= nightly
export TRBOX_NIGHTLY

.PHONY: cross cross-test size

ifeq ($(CROSS),1)
# Flags shared with cross/build.sh, passed into the container by Cross.toml.
cross: export RUSTFLAGS := -C force-unwind-tables=no -C relocation-model=static -C llvm-args=-machine-outliner-reruns=3 -C llvm-args=-enable-global-merge-func=true $(if $(filter 0,$(TRBOX_IMMEDIATE_ABORT)),,-Zunstable-options -Cpanic=immediate-abort -Zlocation-detail=none -Zfmt-debug=none) $(RUSTFLAGS)
cross: export CROSS_CONFIG := cross/Cross.toml
cross:
	@command -v cross >/dev/null || { echo "make cross CROSS=1: 'cross' not found (cargo install cross; needs Docker or Podman)" >&2; exit 1; }
	rustup component add rust-src --toolchain $(TRBOX_NIGHTLY)
	set -e; for t in $(CROSS_TARGETS); do \
	  case $$t in aarch64-*) tf="-C target-feature=-outline-atomics -C code-model=tiny -C llvm-args=-homogeneous-prolog-epilog";; *) tf=;; esac; \
	  RUSTFLAGS="$$RUSTFLAGS $$tf" cross +$(TRBOX_NIGHTLY) build --release --target $$t \
	    -Zbuild-std=std,panic_abort -Zbuild-std-features=optimize_for_size \
	    --no-default-features --features "$${TRBOX_BOARD_FEATURES:-std}"; \
	done
	@# As cross/build.sh: a stripped binary loses its section headers too.
	for t in $(CROSS_TARGETS); do b=target/$$t/release/trbox; \
	  if file $$b | grep -q ', stripped'; then llvm-objcopy --strip-sections $$b || exit 1; fi; \
	done
else
cross:
	bash cross/build.sh $(CROSS_TARGETS)
endif

size: cross
	bash cross/size.sh $(SIZE_LIMIT_KIB) $(CROSS_TARGETS)

# The host build is the reference output.
cross-test: cross build
	bash cross/test.sh $(CROSS_TARGETS)
