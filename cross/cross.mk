# Cross builds, size table and cross tests (included from the top-level Makefile).
#
#   make cross            static musl binaries -> target/<triple>/release/trbox
#                         (local route: cross/build.sh, nightly -Zbuild-std + rust-lld)
#   make cross CONFIG=minimal
#                         a named configuration (full, the default; minimal)
#   make cross FEATURES="tr-cat net"
#                         a custom one: std and these Cargo features
#   make cross CROSS=1    the same with `cross` (Docker/Podman), config cross/Cross.toml
#   make size             the configurations x targets table; fails when a
#                         configuration's aarch64 binary is over its budget;
#                         then each feature's cost on aarch64 (SIZE_FEATURES=0:
#                         not, as make test does)
#   make cross-test       each configuration's binaries under qemu-user against
#                         the host build (cross/test.sh)
#
# Prerequisites on a fresh Debian machine: bash cross/setup.sh

CROSS_TARGETS ?= x86_64-unknown-linux-musl aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf
CONFIG ?= full
FEATURES ?=
# The configurations make size and make cross-test build and check
# (target/configs/NAME/<triple>/trbox); full goes last, so that
# target/<triple>/release/trbox is full afterwards: the boards run it.
CONFIGS := minimal full
# Each configuration's aarch64 budget in KiB (docs/size.md).
SIZE_LIMIT_full ?= 576
SIZE_LIMIT_minimal ?= 256
SIZE_FEATURES ?= 1
# Toolchain for -Zbuild-std (cross/build.sh, CROSS=1).
TRBOX_NIGHTLY ?= nightly
export TRBOX_NIGHTLY

.PHONY: cross cross-configs cross-test size $(addprefix cross-configs-,$(CROSS_TARGETS))

ifeq ($(CROSS),1)
# The flags of cross/rustflags.sh (per target), passed into the container
# by Cross.toml, as is TRBOX_CONFIG (the name the binary gives).
cross: export CROSS_CONFIG := cross/Cross.toml
cross:
	@command -v cross >/dev/null || { echo "make cross CROSS=1: 'cross' not found (cargo install cross; needs Docker or Podman)" >&2; exit 1; }
	rustup component add rust-src --toolchain $(TRBOX_NIGHTLY)
	set -e; if [ -n "$(FEATURES)" ]; then c=custom f="std $(FEATURES)"; else c=$(CONFIG) f=$(CONFIG); fi; \
	for t in $(CROSS_TARGETS); do \
	  TRBOX_CONFIG=$$c RUSTFLAGS="$$(bash cross/rustflags.sh $$t) $(RUSTFLAGS)" cross +$(TRBOX_NIGHTLY) build --release --target $$t \
	    -Zbuild-std=std,panic_abort -Zbuild-std-features=optimize_for_size \
	    --no-default-features --features "$$f"; \
	done
	@# As cross/build.sh: a stripped binary loses its section headers too.
	for t in $(CROSS_TARGETS); do b=target/$$t/release/trbox; \
	  if file $$b | grep -q ', stripped'; then llvm-objcopy --strip-sections $$b || exit 1; fi; \
	done
else
cross:
	TRBOX_CONFIG=$(CONFIG) TRBOX_FEATURES="$(FEATURES)" bash cross/build.sh $(CROSS_TARGETS)
endif

# Every configuration of CONFIGS, full last.
# One job per triple (each has a target directory of its own, so make -j
# builds them at once), each configuration of it in turn.
cross-configs: $(addprefix cross-configs-,$(CROSS_TARGETS))
$(addprefix cross-configs-,$(CROSS_TARGETS)): cross-configs-%:
	+set -e; for c in $(CONFIGS); do TRBOX_CONFIG=$$c bash cross/build.sh $*; done

size: cross-configs
	SIZE_LIMITS="$(foreach c,$(CONFIGS),$(c)=$(SIZE_LIMIT_$(c)))" bash cross/size.sh $(CROSS_TARGETS)
ifneq ($(SIZE_FEATURES),0)
	bash cross/size-features.sh aarch64-unknown-linux-musl
endif

# The host build is the reference output.
cross-test: cross-configs build
	rc=0; for c in $(CONFIGS); do CONFIG=$$c bash cross/test.sh $(CROSS_TARGETS) || rc=1; done; exit $$rc
