# Shared settings for the qemu board harness; sourced by the other scripts.
# Input: ARCH (aarch64 | armv7 | x86_64). Sets the Debian names, the qemu
# command line pieces and the paths of the kernel cache and cross/out.

QEMU_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$QEMU_DIR/../.." && pwd)
ARCH=${ARCH:-aarch64}

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

# The kernel cache is shared by every clone on the machine (a fresh clone
# boots without downloading again).
CACHE=${QEMU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trbox/qemu}/$ARCH
OUT=${QEMU_OUT:-$REPO/cross/out}/$ARCH
# The static binary from `make cross` (which honours CARGO_TARGET_DIR).
TRBOX_BIN=${TRBOX_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/$TRIPLE/release/trbox}
QEMU_MEM=${QEMU_MEM:-512}
QEMU_SMP=${QEMU_SMP:-${DEFAULT_SMP:-2}}

# Prefix every progress line so it is easy to tell from guest output.
say() { printf '[qemu %s] %s\n' "$ARCH" "$*" >&2; }
die() { say "error: $*"; exit 2; }

# The kernel command line. nokaslr keeps addresses stable between boots
# (fixtures, kallsyms); quiet keeps kernel chatter off the console.
# FIXTURES="a b" (fixtures mode) records only those scenarios.
kernel_append() {
	printf 'console=%s rdinit=/init panic=-1 quiet nokaslr trbox.mode=%s' "$CONSOLE" "$1"
	if [ "$1" = fixtures ] && [ -n "${FIXTURES:-}" ]; then
		printf ' trbox.fixtures=%s' "$(echo $FIXTURES | tr ' ' ',')"
	fi
}
