# Shared settings for the qemu board harness; sourced by the other scripts.
# Input: ARCH (aarch64 | armv7 | x86_64) and KERNEL (6.1 | 5.10 | 6.12 |
# 6.12-16k | 6.1-rt | 7.2 | 7.2-rt; default 6.1), or ARCH=ARCH:KERNEL (a board's name as
# test.sh takes it). Sets the Debian names (suite, flavour), the qemu command
# line pieces and the paths of the kernel cache and cross/out.

QEMU_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$QEMU_DIR/../.." && pwd)
ARCH=${ARCH:-aarch64}
case "$ARCH" in *:*) KERNEL=${ARCH#*:} ARCH=${ARCH%%:*} ;; esac
KERNEL=${KERNEL:-6.1}
# Exported: board.sh runs fetch.sh, mkinitramfs.sh and run.sh, which source
# this file again (ARCH=armv7:6.1-rt alone would reach them as 6.1).
export ARCH KERNEL

case "$ARCH" in
aarch64 | arm64)
	ARCH=aarch64
	DEB_ARCH=arm64
	KFLAVOUR=arm64
	TRIPLE=aarch64-unknown-linux-musl
	QEMU_BIN=qemu-system-aarch64
	QEMU_MACHINE=(-M virt -cpu cortex-a57)
	CONSOLE=ttyAMA0
	;;
armv7 | arm | armhf)
	ARCH=armv7
	DEB_ARCH=armhf
	KFLAVOUR=armmp
	TRIPLE=armv7-unknown-linux-musleabihf
	QEMU_BIN=qemu-system-arm
	QEMU_MACHINE=(-M virt -cpu cortex-a15)
	CONSOLE=ttyAMA0
	;;
x86_64 | amd64)
	ARCH=x86_64
	DEB_ARCH=amd64
	KFLAVOUR=amd64
	TRIPLE=x86_64-unknown-linux-musl
	QEMU_BIN=qemu-system-x86_64
	QEMU_MACHINE=(-M pc -cpu max)
	CONSOLE=ttyS0
	# One CPU: with two, TCG x86_64 guests stall (RCU self-detected stall,
	# "timer wakeup didn't happen") within a few function_graph on/off
	# switches -- ftrace's text patching across vCPUs; 6 of 6 switches pass
	# with one. The other boards keep two CPUs for the per-CPU merge.
	DEFAULT_SMP=1
	;;
*)
	echo "qemu: unknown ARCH '$ARCH' (use aarch64, armv7 or x86_64)" >&2
	exit 2
	;;
esac

# The kernel: which Debian suite, which flavour (linux-image-FLAVOUR is the
# metapackage fetch.sh resolves). bookworm comes from the host's own apt
# sources (the host is bookworm); the other suites from sources lists and
# apt state of their own (fetch.sh).
SUITE=bookworm
case "$ARCH:$KERNEL" in
*:6.1) ;;
aarch64:5.10 | armv7:5.10) SUITE=bullseye ;;
aarch64:6.12 | x86_64:6.12) SUITE=trixie ;;
aarch64:6.12-16k)
	SUITE=trixie
	KFLAVOUR=arm64-16k
	# 16 KiB pages: cortex-a57 has only the 4 and 64 KiB granules. max has
	# them all; pauth-impdef=on swaps QARMA pointer authentication, which
	# TCG emulates slowly, for qemu's own cheap algorithm.
	QEMU_MACHINE=(-M virt -cpu max,pauth-impdef=on)
	;;
aarch64:6.1-rt | armv7:6.1-rt) KFLAVOUR=rt-$KFLAVOUR ;;
# sid: the newest kernel Debian ships (7.2; PREEMPT_RT on arm64 only).
aarch64:7.2 | armv7:7.2 | x86_64:7.2) SUITE=sid ;;
# 7.2-rt: with a PSCI idle state in its device tree (IDLE_STATES below),
# for tr-lat's --deepest-idle-state.
aarch64:7.2-rt) SUITE=sid KFLAVOUR=rt-$KFLAVOUR IDLE_STATES=1 ;;
*)
	echo "qemu: no board $ARCH:$KERNEL (boards: aarch64, armv7, x86_64 with 6.1;" \
		"aarch64 and armv7 with 5.10 and 6.1-rt; every arch with 7.2; aarch64 and x86_64 with 6.12; aarch64 with 6.12-16k and 7.2-rt)" >&2
	exit 2
	;;
esac
# IDLE_STATES=1: the board boots with qemu virt's device tree plus one PSCI
# standby idle state (run.sh, fdt-idle.py), so the kernel has cpuidle
# (state0 WFI, state1 the PSCI one); qemu's own tree has PSCI but no idle
# states, so the other boards have no /sys/devices/system/cpu/cpuN/cpuidle.
# QEMU_IDLE_STATES=1|0 turns it on or off for any aarch64 board (the arm64
# kernels from 6.1 on have the psci cpuidle driver; 5.10's and armmp's not).
IDLE_STATES=${QEMU_IDLE_STATES:-${IDLE_STATES:-0}}
[ "$ARCH" = aarch64 ] || IDLE_STATES=0
# The board's name: the architecture alone for the default 6.1 kernel (so
# the caches and cross/out paths of the first boards stay as they were),
# ARCH-KERNEL for the others.
BOARD=$ARCH
[ "$KERNEL" = 6.1 ] || BOARD=$ARCH-$KERNEL
# The whole session runs on the boards in QEMU_FULL_BOARDS (names as in
# test.sh; default: the aarch64 6.1 board, the arch most boards have;
# 'all' for every board); the others run the lines marked '## boards: all',
# which use every applet, so that `make test` fits its 30 minutes (README.md:
# timings; QEMU_FULL_BOARDS="aarch64 armv7 x86_64" was 1,032 s alone).
SESSION_FULL=0
for b in ${QEMU_FULL_BOARDS:-aarch64}; do
	case "$b" in all | "$BOARD" | "$ARCH:$KERNEL") SESSION_FULL=1 ;; esac
done
# The boards in QEMU_LIVE_ONLY_BOARDS run no session line, only their live
# tests (live.sh): make test's second x86_64 board (qemu.mk), whose kernel's
# session another board runs.
SESSION_NONE=0
for b in ${QEMU_LIVE_ONLY_BOARDS:-}; do
	case "$b" in "$BOARD" | "$ARCH:$KERNEL") SESSION_NONE=1 SESSION_FULL=0 ;; esac
done
# The live test suites (live.sh) run on the boards in QEMU_LIVE_BOARDS
# (default: the three x86_64 kernels, 7.2, 6.12 and 6.1; `all` is the same;
# a list for fewer, 'none' for none), with 1 GiB of RAM:
# the tests' recordings and listeners write to /tmp, a tmpfs of half the
# RAM, and `tr-cat --listen` takes a sender only with 256 MiB free there.
# LIVE_INDEX/LIVE_COUNT: this board's place among them (live.sh shares
# the applets' live tests out over the live boards).
LIVE=0 LIVE_INDEX=0 LIVE_COUNT=0
LIVE_ALL="x86_64:7.2 x86_64:6.12 x86_64:6.1"
live_boards=${QEMU_LIVE_BOARDS-$LIVE_ALL}
[ "$live_boards" != all ] || live_boards=$LIVE_ALL
for b in $live_boards; do
	[ "$b" != none ] || continue
	case "$b" in "$BOARD" | "$ARCH:$KERNEL") LIVE=1 LIVE_INDEX=$LIVE_COUNT DEFAULT_MEM=1024 ;; esac
	LIVE_COUNT=$((LIVE_COUNT + 1))
done

# The kernel cache is shared by every clone on the machine (a fresh clone
# boots without downloading again).
CACHE_BASE=${QEMU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trbox/qemu}
CACHE=$CACHE_BASE/$BOARD
OUT=${QEMU_OUT:-$REPO/cross/out}/$BOARD
# The static binary from `make cross` (which honours CARGO_TARGET_DIR).
TRBOX_BIN=${TRBOX_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/$TRIPLE/release/trbox}
# The host's trbox, which reads what a board recorded and listens for
# what it sends: `make build`'s, or another build of the default features
# (make test: its test build's).
TRBOX_HOST_BIN=${TRBOX_HOST_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/release/trbox}
QEMU_MEM=${QEMU_MEM:-${DEFAULT_MEM:-512}}
QEMU_SMP=${QEMU_SMP:-${DEFAULT_SMP:-2}}

# Prefix every progress line so it is easy to tell from guest output.
say() { printf '[qemu %s] %s\n' "$BOARD" "$*" >&2; }
die() { say "error: $*"; exit 2; }

# The kernel command line. nokaslr keeps addresses stable between boots
# (fixtures, kallsyms); QEMU_KASLR=1 leaves it out (lastboot.sh: qemu's
# virt board passes a kaslr-seed, new at each reset, so the kernel moves
# between the two boots); quiet keeps kernel chatter off the console.
# FIXTURES="a b" (fixtures mode) records only those scenarios.
# QEMU_APPEND adds parameters (e.g. the line of 'tr-on --boot').
kernel_append() {
	local kaslr=' nokaslr'
	[ "${QEMU_KASLR:-0}" != 1 ] || kaslr=
	printf 'console=%s rdinit=/init panic=-1 quiet%s trbox.mode=%s' "$CONSOLE" "$kaslr" "$1"
	[ -z "${QEMU_APPEND:-}" ] || printf ' %s' "$QEMU_APPEND"
	if [ "$1" = fixtures ] && [ -n "${FIXTURES:-}" ]; then
		printf ' trbox.fixtures=%s' "$(echo $FIXTURES | tr ' ' ',')"
	fi
}
