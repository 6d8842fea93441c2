# trbox — top-level make targets. See README.md.
#   make            host binary (target/release/trbox)
#   make test       everything CI runs
#   make cross      static musl binaries for x86_64, aarch64, armv7   (cross/cross.mk)
#                   CONFIG=full (default) | minimal, or FEATURES="..."
#   make size       size table: configuration x target, each feature's cost
#                                                                     (cross/cross.mk)
#   make qemu       boot an arm64 board and tour trbox's applets      (cross/qemu.mk)
#   make bench      benchmarks against trace-cmd                       (benches/)
#   make pictures   the README's pictures: Chromium's rendering of the flame
#                   graph, a recording in KernelShark (docs/pictures.sh)
#   make docs       the --help blocks of docs/applets/*.md, docs/man/*.1 and
#                   completions/, from the binary

CARGO ?= cargo
export CARGO_TERM_COLOR ?= never

.PHONY: all build setup test test-host test-host-build test-host-run test-host-compile test-chain-host test-chain-build test-chain-build-steps package check-nostd lint apidoc example bench clean docs pictures fuzz fuzz-check

all: build

build:
	$(CARGO) build --release

# The core (src/ outside src/sys/) must build without std (README, "Layout").
check-nostd:
	$(CARGO) build --lib --no-default-features

# The formatting and lint contract: rustfmt.toml's style, clippy with no
# warning, for every target (library, binary, tests, benches), and for the
# binary of each named configuration (Cargo.toml: minimal, full), whose
# left-out features are cfg'd away.
lint:
	$(CARGO) fmt --check
	$(CARGO) clippy --release --all-targets -- -D warnings
	$(CARGO) clippy --release --lib --no-default-features -- -D warnings
	$(CARGO) clippy --release --bins --no-default-features --features minimal -- -D warnings
	$(CARGO) clippy --release --bins --no-default-features --features full -- -D warnings

# The library's API documentation: every public item documented
# (#![warn(missing_docs)]), no broken link (rustdoc's warnings are errors).
# --release: on the dependencies' metadata that lint's clippy built.
apidoc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --release --no-deps --lib

# The library as a host tool uses it (examples/event_counts.rs), on a
# recorded trace.dat: its counts are tr-cat --stats' ones.
# make test runs the one its test build made (EXAMPLE_RUN).
EXAMPLE_RUN ?= $(CARGO) run --release --quiet --example event_counts
example:
	$(EXAMPLE_RUN) tests/data/tracedat/v6-inst.dat \
		| diff -u tests/data/examples/event_counts-v6-inst.txt -

# The host's tests are the build the live boards run (cross/qemu/live.sh):
# profile board-tests (Cargo.toml: release without whole-program LTO), static
# musl executables of this machine's architecture, in target/board-tests, so
# make test compiles the suite once for both. The shipped, size-tuned binary
# is what cross-test and the boards test.
HOST_TEST_TRIPLE := $(shell uname -m)-unknown-linux-musl
BOARD_TESTS_DIR := $(abspath $(or $(CARGO_TARGET_DIR),target))/board-tests
HOST_TESTS = CARGO_TARGET_DIR=$(BOARD_TESTS_DIR) $(CARGO) test --profile board-tests --target $(HOST_TEST_TRIPLE)
test-host: test-host-build
	@$(MAKE) --no-print-directory test-host-run

test-host-build: check-nostd lint apidoc
	$(CARGO) build --release
	@$(MAKE) --no-print-directory example
	@$(MAKE) --no-print-directory test-host-compile

# The tests are the library's unit tests: cargo builds no trbox binary for
# them, so this does (they run the one beside their deps/).
test-host-compile:
	CARGO_TARGET_DIR=$(BOARD_TESTS_DIR) $(CARGO) build --profile board-tests --target $(HOST_TEST_TRIPLE) --bin trbox
	$(HOST_TESTS) --no-run

# '+': cargo shares make's job slots when make test runs this beside the
# cross builds (make -j2), instead of warning that it cannot.
test-host-run:
	+$(HOST_TESTS) --no-fail-fast

# The crate as crates.io would take it (Cargo.toml's include list): packed,
# then built from the package alone (in a target directory of its own: it
# shares nothing with the others, and make test runs it beside them).
package:
	+CARGO_TARGET_DIR=$(abspath $(or $(CARGO_TARGET_DIR),target))/package-check $(CARGO) package --allow-dirty --quiet

# The applet pages quote each applet's --help (docs/applets/tr-*.md, between
# <!-- help --> markers), and docs/man/*.1 and completions/ hold what
# `trbox --man NAME` and `trbox --completions SHELL` print; tests/applets/docs.rs
# fails when one differs from the binary, and this rewrites them from the
# binary just built.
docs:
	$(CARGO) build --release --bin trbox
	TRBOX_BLESS=1 $(CARGO) test --release --lib applets_tests::docs::

# docs/img/tr-graph-flame.png and docs/img/kernelshark.png (root: it records).
pictures: build
	bash docs/pictures.sh

# What the build and the tests need (apt packages, rustup targets, the nightly
# with rust-src, the board harness's qemu): installed when missing, a quiet
# check of about a second when everything is there. `make qemu` and
# `make test` run it first, so a fresh clone needs no other step.
setup:
	@bash cross/setup.sh

include cross/cross.mk
include cross/qemu.mk

# Every fuzz target (fuzz/, entries in src/fuzz_entry) built with cargo
# fuzz (the nightly and cargo-fuzz come from `make setup`) and run
# FUZZ_SECONDS each, starting from the real inputs the library's tests
# run them over (src/fuzz_entry/seeds.rs); a crash fails, its input in
# fuzz/artifacts/TARGET/. Longer runs: `make fuzz FUZZ_SECONDS=600
# FUZZ_TARGETS=page` (fuzz/README.md keeps the log of runs).
FUZZ_SECONDS ?= 3
FUZZ_TARGETS ?= btf elf format graph lat msg page printfmt stream tracedat
fuzz:
	@bash fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# What make test does of fuzzing: every target type-checked with cargo
# fuzz (a full sanitizer build takes ~10 min on 2 cores); their bodies run
# over the real inputs and their mutations in the library's tests
# (fuzz_entry::seeds, in test-host). `make fuzz` runs libFuzzer itself.
fuzz-check:
	@command -v cargo-fuzz >/dev/null || { echo "fuzz: cargo-fuzz is missing: make setup installs it" >&2; exit 1; }
	+@cd fuzz && cargo +$${TRBOX_NIGHTLY:-nightly} fuzz check --features zlib

# Order: two chains at once, on different cargo target directories, so
# that neither waits on the other's lock (each step's output is printed
# whole when it ends):
# - the host's tests: their build, then the run, the fuzz targets and the
#   package. Its build comes first: the other chain runs at a lower
#   priority (nice), so it gets what the build leaves and what the tests,
#   which wait on windows and locks more than on the CPU, leave idle;
# - the lints and the API docs (one build of the dependencies' metadata:
#   apidoc after lint, both --release; lint's clippy of the library
#   without default features is check-nostd's check), the board binaries
#   (cross-configs: the three triples at once), the other architectures
#   under qemu-user, the size table and the tour.
# Four job slots for the two chains: the spare two let the three triples
# build at once and cargo use them where a chain waits on tests. The tests
# must pass on a loaded machine anyway.
# The host binary that reads what the boards recorded, cross-test's
# reference and the tour's listener is the test build's (TRBOX_HOST_BIN):
# the same features and code as `make build`'s, without a second
# whole-program link of everything (Parquet included).
# Then the boards, two at a time: qemu-test's, then the boards of their
# own (-o cross-configs: on the configurations just built).
test: export TRBOX_HOST_BIN := $(BOARD_TESTS_DIR)/$(HOST_TEST_TRIPLE)/board-tests/trbox
test: setup
	@$(MAKE) --no-print-directory -j4 --output-sync=target test-chain-host test-chain-build
	@$(MAKE) --no-print-directory -o build -o cross-configs CROSS_CONFIGS_BUILT=1 qemu-test
	@$(MAKE) --no-print-directory -o build -o cross-configs CROSS_CONFIGS_BUILT=1 -j2 --output-sync=target qemu-minimal qemu-boot-test qemu-lastboot

# make test's two chains. The example is the one the test build made.
test-chain-host:
	+@$(MAKE) --no-print-directory test-host-compile
	+@$(MAKE) --no-print-directory example EXAMPLE_RUN=$(BOARD_TESTS_DIR)/$(HOST_TEST_TRIPLE)/board-tests/examples/event_counts
	+@$(MAKE) --no-print-directory test-host-run
	+@$(MAKE) --no-print-directory fuzz-check
	+@$(MAKE) --no-print-directory package
test-chain-build:
	+@nice -n 10 $(MAKE) --no-print-directory test-chain-build-steps
test-chain-build-steps:
	+@$(MAKE) --no-print-directory lint
	+@$(MAKE) --no-print-directory apidoc
	+@$(MAKE) --no-print-directory cross-configs
	@# The host binary (TRBOX_HOST_BIN): cargo waits for the other chain's build of it.
	+@$(MAKE) --no-print-directory test-host-compile
	+@$(MAKE) --no-print-directory -o build -o cross-configs CROSS_CONFIGS_BUILT=1 cross-test size SIZE_FEATURES=0 qemu-tour

# trbox against trace-cmd on the same data (benches/bench.rs).
# Its own target dir: the bench profile (opt-level 3) must not replace
# target/release/trbox, the shipped (size-tuned) binary whose text output
# the bench times against trace-cmd.
# Then the board part (cross/qemu/bench.sh): rtla against tr-lat on the
# PREEMPT_RT arm64 boards (6.1-rt with rtla 6.1, 7.2-rt with rtla 7.2),
# each collector's CPU time and peak RSS, then 12 alternated rounds at
# 1 ms (about 6 minutes a board);
# BENCH_BOARD= (empty) leaves it out. Last (cross/qemu/bench-decode.sh):
# `tr-cat FILE` against Debian's `trace-cmd report` on the boards' own CPUs;
# BENCH_DECODE_BOARDS= (empty) leaves it out. Then (cross/qemu/bench-flags.sh)
# what each codegen flag of cross/rustflags.sh costs in decode and record
# speed on the board's CPU, A/B in one boot (a build without each flag:
# about 2 minutes each); BENCH_FLAGS_BOARD= (empty) leaves it out. Then
# (cross/qemu/bench-record.sh) `tr-cat -o` against `trace-cmd record` on
# the disk board's ext4, f2fs and vfat and on /tmp, recorder CPU per MB
# (3 rounds, about 8 minutes); BENCH_RECORD_BOARD= (empty) leaves it out.
BENCH_BOARD ?= aarch64:6.1-rt aarch64:7.2-rt
BENCH_DECODE_BOARDS ?= aarch64 armv7
BENCH_FLAGS_BOARD ?= aarch64
BENCH_RECORD_BOARD ?= aarch64
bench:
	$(CARGO) build --release
	$(CARGO) bench --bench bench --target-dir target/bench
ifneq ($(BENCH_BOARD),)
	$(MAKE) --no-print-directory cross CROSS_TARGETS=$(QEMU_TRIPLE_$(firstword $(subst :, ,$(BENCH_BOARD))))
	BENCH_BOARD=$(BENCH_BOARD) bash cross/qemu/bench.sh
endif
ifneq ($(BENCH_DECODE_BOARDS),)
	$(MAKE) --no-print-directory cross CROSS_TARGETS="$(foreach b,$(BENCH_DECODE_BOARDS),$(QEMU_TRIPLE_$(firstword $(subst :, ,$(b)))))"
	BENCH_DECODE_BOARDS="$(BENCH_DECODE_BOARDS)" bash cross/qemu/bench-decode.sh
endif
ifneq ($(BENCH_FLAGS_BOARD),)
	$(MAKE) --no-print-directory cross CROSS_TARGETS=$(QEMU_TRIPLE_$(BENCH_FLAGS_BOARD))
	BENCH_FLAGS_BOARD=$(BENCH_FLAGS_BOARD) bash cross/qemu/bench-flags.sh
endif
ifneq ($(BENCH_RECORD_BOARD),)
	$(MAKE) --no-print-directory cross CROSS_TARGETS=$(QEMU_TRIPLE_$(firstword $(subst :, ,$(BENCH_RECORD_BOARD))))
	BENCH_RECORD_BOARD=$(BENCH_RECORD_BOARD) bash cross/qemu/bench-record.sh
endif

clean:
	$(CARGO) clean
