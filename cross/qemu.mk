# qemu board harness: Debian's arm64 / armhf (armmp) / amd64 kernels booted
# under qemu (TCG) with an initramfs holding busybox and the static trbox from
# `make cross`. Scripts and notes: cross/qemu/ (README.md there).
#
#   make qemu [ARCH=aarch64|armv7|x86_64] [KERNEL=6.1|5.10|6.12|6.12-16k|6.1-rt|7.2|7.2-rt]
#                                           the tour: boot, show each applet (cross/qemu/tour),
#                                           power off; fails on any command's non-zero status
#   make qemu-tour [ARCH=...] [KERNEL=...]  the same with the board binary of `make cross`
#                                           (make test runs it)
#   make qemu-shell [ARCH=...] [KERNEL=...] interactive board shell (Ctrl-A x quits)
#   make qemu-test [QEMU_BOARDS="..."]      the session on make test's boards, checked on the host
#   make qemu-test-all                      the same on all fourteen boards
#   make qemu-boot-test                     a boot with --boot's line; a panic's ftrace dump read back
#   make qemu-lastboot [QEMU_LASTBOOT_BOARDS="..."]
#                                           persistent ring buffer: crash, warm reboot,
#                                           read the previous boot (make test runs it)
#   make qemu-selfcheck                     broken boards must make qemu-test fail
#   make qemu-fixtures [FIXTURES="a b"]     re-record tests/fixtures/ARCH/ (maintainers;
#                                           FIXTURES: only those scenarios, the rest kept)
#   make qemu-setup                         install qemu, cpio; add dpkg architectures
#
# Kernels and busyboxes are fetched once into ~/.cache/trbox/qemu (shared by
# every clone; QEMU_CACHE=DIR moves it); transcripts,
# initramfs images and timings land in cross/out/BOARD/ (BOARD: ARCH for the
# 6.1 kernels, ARCH-KERNEL for the others).

ARCH ?= aarch64
KERNEL ?= 6.1
# A board is ARCH (Debian 12's 6.1) or ARCH:KERNEL (cross/qemu/common.sh);
# QEMU_ARCHS is the old name of the list and still works.
# make test (and qemu-test) runs QEMU_TEST_BOARDS, which fits its 30-minute
# budget on 2 cores: every architecture, every kernel the harness has at
# least once (5.10, 6.1, 6.1-rt, 6.12 with 16 KiB pages, 7.2, 7.2-rt), the
# 7.2-rt board's rtla parity, and the live test suites on two x86_64
# kernels (7.2 and 6.1, each test on one of them; the second runs no
# session line: QEMU_LIVE_ONLY_BOARDS). aarch64 runs the whole session
# (QEMU_FULL_BOARDS), the others the short one (the lines marked
# '## boards: all'; tr-lat's RT lines on the RT boards); two boards at a
# time (QEMU_JOBS), the longest first. qemu-test-all runs every board
# (QEMU_ALL_BOARDS: the seven others add aarch64 6.1-rt's rtla 6.1
# parity, arm64 7.2 and 6.12 with 4 KiB pages, armv7 5.10, 6.1 and 7.2, and
# x86_64 6.12 as a third live board), each x86_64 kernel with its session:
# 1,651 s of boards against make test's 1,009 (cross/qemu/README.md: timings).
QEMU_ALL_BOARDS := aarch64:7.2-rt x86_64:7.2 x86_64:6.12 x86_64 aarch64:7.2 aarch64:6.1-rt aarch64:6.12 aarch64:6.12-16k armv7:6.1-rt armv7:7.2 aarch64 armv7 armv7:5.10 aarch64:5.10
QEMU_TEST_BOARDS := aarch64:7.2-rt x86_64:7.2 x86_64 aarch64 armv7:6.1-rt aarch64:6.12-16k aarch64:5.10
QEMU_ARCHS ?= $(QEMU_TEST_BOARDS)
QEMU_BOARDS ?= $(QEMU_ARCHS)
# Only in make test's set: a list of boards of your own runs each whole.
# There the live tests are all shared out over the two x86_64 boards, each
# test on one kernel (QEMU_LIVE_SHARE=2; the host's tests run them all on
# its own), and the 6.1 board runs only its live tests.
ifeq ($(strip $(QEMU_BOARDS)),$(strip $(QEMU_TEST_BOARDS)))
QEMU_LIVE_ONLY_BOARDS ?= x86_64
QEMU_LIVE_SHARE ?= 2
endif
export QEMU_LIVE_ONLY_BOARDS QEMU_LIVE_SHARE
QEMU_SH := cross/qemu
QEMU_TRIPLE_aarch64 := aarch64-unknown-linux-musl
QEMU_TRIPLE_armv7 := armv7-unknown-linux-musleabihf
QEMU_TRIPLE_x86_64 := x86_64-unknown-linux-musl
QEMU_TRIPLE = $(or $(QEMU_TRIPLE_$(ARCH)),$(error ARCH=$(ARCH): use aarch64, armv7 or x86_64))

.PHONY: qemu qemu-tour qemu-shell qemu-test qemu-test-all qemu-minimal qemu-boot-test qemu-lastboot qemu-selfcheck qemu-fixtures qemu-setup qemu-fetch

qemu-setup:
	$(QEMU_SH)/setup.sh

qemu-fetch:
	for a in $(QEMU_BOARDS); do ARCH=$$a KERNEL= $(QEMU_SH)/fetch.sh || exit 1; done

# The demo's binary. QEMU_BUILD=quick (default): a plain `cargo build
# --release --target T` with the stable toolchain's prebuilt std into
# target/demo — about 30 s on a fresh clone, so the board shows trbox within
# a minute; it is ~2x the size of the board binary (std's backtrace code).
# QEMU_BUILD=cross, or a target without a prebuilt std (armv7): `make cross`
# for that target only (nightly build-std, ~2 min on a fresh clone).
QEMU_BUILD ?= quick
QEMU_DEMO_DIR := $(CURDIR)/target/demo
# Whether the stable toolchain has a prebuilt std (with musl) for the board:
# asked in the recipe, after `setup` may have just added the target.
QEMU_HAS_STD = test -f "$$(rustc --print sysroot)/lib/rustlib/$(QEMU_TRIPLE)/lib/self-contained/libc.a"

# The tour's transcripts and initramfs go apart from the session's
# (cross/out/tour/BOARD), so that a tour never replaces a test's transcript.
QEMU_TOUR_OUT := $(CURDIR)/cross/out/tour

# The host binary too: the host's side of the tour (the listener for
# tr-cat -N, reading what the board sent) runs it.
qemu: setup build
ifeq ($(QEMU_BUILD),quick)
	@if $(QEMU_HAS_STD); then \
	  echo "make qemu: quick demo build (QEMU_BUILD=cross for the size-optimised board binary)"; \
	  CARGO_TARGET_DIR=$(QEMU_DEMO_DIR) $(CARGO) build --release --target $(QEMU_TRIPLE) || exit 1; \
	  bin=$(QEMU_DEMO_DIR)/$(QEMU_TRIPLE)/release/trbox; \
	else \
	  $(MAKE) --no-print-directory cross CROSS_TARGETS=$(QEMU_TRIPLE) || exit 1; \
	  bin=; \
	fi; \
	QEMU_OUT=$(QEMU_TOUR_OUT) ARCH=$(ARCH) KERNEL=$(KERNEL) BREAK='$(BREAK)' TRBOX_BIN=$$bin $(QEMU_SH)/board.sh tour
else
	@$(MAKE) --no-print-directory cross CROSS_TARGETS=$(QEMU_TRIPLE)
	QEMU_OUT=$(QEMU_TOUR_OUT) ARCH=$(ARCH) KERNEL=$(KERNEL) BREAK='$(BREAK)' $(QEMU_SH)/board.sh tour
endif

# The tour on the board binary of `make cross`, checked (make test): every
# command exits 0, the board powers off, at most 250 lines of board output.
qemu-tour: setup build
	@$(MAKE) --no-print-directory cross CROSS_TARGETS=$(QEMU_TRIPLE)
	QEMU_OUT=$(QEMU_TOUR_OUT) ARCH=$(ARCH) KERNEL=$(KERNEL) $(QEMU_SH)/board.sh tour

qemu-shell: setup
	@$(MAKE) --no-print-directory cross CROSS_TARGETS=$(QEMU_TRIPLE)
	ARCH=$(ARCH) KERNEL=$(KERNEL) $(QEMU_SH)/board.sh shell

qemu-test: setup build cross
	BREAK='$(BREAK)' $(QEMU_SH)/test.sh $(QEMU_BOARDS)

qemu-test-all:
	@$(MAKE) --no-print-directory qemu-test QEMU_BOARDS='$(QEMU_ALL_BOARDS)' QEMU_LIVE_ONLY_BOARDS= QEMU_LIVE_SHARE=1

# One board with the minimal configuration's binary (make test): the
# short session on aarch64 (6.1), without the network, the lines that need
# what minimal leaves out skipped and listed (cross/qemu/features.sh);
# transcript in cross/out/minimal/aarch64. Afterwards
# target/<triple>/release/trbox is full again (from cargo's cache).
QEMU_MINIMAL_BOARD ?= aarch64
# make test has built both configurations (CROSS_CONFIGS_BUILT=1).
qemu-minimal: setup build
ifneq ($(CROSS_CONFIGS_BUILT),1)
	@$(MAKE) --no-print-directory cross CONFIG=minimal CROSS_TARGETS=$(QEMU_TRIPLE_$(firstword $(subst :, ,$(QEMU_MINIMAL_BOARD))))
	@$(MAKE) --no-print-directory cross CROSS_TARGETS=$(QEMU_TRIPLE_$(firstword $(subst :, ,$(QEMU_MINIMAL_BOARD))))
endif
	ARCH=$(QEMU_MINIMAL_BOARD) KERNEL= QEMU_OUT=$(CURDIR)/cross/out/minimal QEMU_FULL_BOARDS=none QEMU_NET_BOARDS=none QEMU_DISK_BOARDS=none \
	  TRBOX_BIN=$(or $(CARGO_TARGET_DIR),$(CURDIR)/target)/configs/minimal/$(QEMU_TRIPLE_$(firstword $(subst :, ,$(QEMU_MINIMAL_BOARD))))/trbox \
	  $(QEMU_SH)/board.sh test

# Issue 30's boots of their own (cross/qemu/boot-test.sh): a boot with
# --boot's kernel command line, and a panic whose ftrace dump the host
# reads back from the console log.
qemu-boot-test: setup build
	@$(MAKE) --no-print-directory cross CROSS_TARGETS=aarch64-unknown-linux-musl
	$(QEMU_SH)/boot-test.sh

# The persistent ring buffer across a crash and a warm reboot (issue 30):
# one qemu run per board, ~40-50 s each (cross/qemu/lastboot.sh).
QEMU_LASTBOOT_BOARDS ?= aarch64:7.2 aarch64:6.12
qemu-lastboot: setup build cross
	$(QEMU_SH)/lastboot.sh $(QEMU_LASTBOOT_BOARDS)

qemu-selfcheck: cross
	$(QEMU_SH)/selfcheck.sh

# Fixtures are recorded on the three 6.1 boards, arm64 with each other
# kernel, and armv7 with 5.10 and 7.2 (tests/fixtures/BOARD).
QEMU_FIXTURE_ARCHS ?= aarch64 armv7 x86_64 aarch64:5.10 armv7:5.10 aarch64:6.1-rt aarch64:6.12 aarch64:6.12-16k x86_64:6.12 aarch64:7.2 armv7:7.2 aarch64:7.2-rt
qemu-fixtures: setup cross
	FIXTURES='$(FIXTURES)' $(QEMU_SH)/fixtures.sh $(QEMU_FIXTURE_ARCHS)
