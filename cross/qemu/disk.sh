# A disk for the boards in QEMU_DISK_BOARDS (default: aarch64, names as in
# test.sh; 'all'; 'none' for none): the board's /tmp is its initramfs (no
# extents to move), so without a disk the recorder's per-CPU regions
# (src/sys/record/regions.rs: ext4, xfs, f2fs) and its pool on FAT never
# run on a board. Three small images made fresh on the host for each run,
# one per filesystem, each a virtio-blk disk whose serial names it; the
# guest (guest/disk-up) loads the modules and mounts them at /mnt/ext4,
# /mnt/vfat and /mnt/f2fs. Sourced after common.sh by mkinitramfs.sh and
# run.sh, each calling one function of this file:
#   disk_initramfs ROOT  the modules of the disk and its filesystems,
#                        /etc/trbox/disk-up and the lines of session-disk
#                        (the default session only)
#   disk_start           the images, in cross/out/BOARD/disk (sparse)
#   disk_qemu_args       qemu's options for them
# The other boards are untouched (DISK=0: every function does nothing).

# A run with a session of its own (SESSION: bench.sh, boot-test.sh...) has
# no disk unless QEMU_DISK_BOARDS names its board, and then not the lines
# of session-disk: its session runs guest/disk-up (bench-record.sh).
DISK=0
disk_default=aarch64
[ -z "${SESSION:-}" ] || disk_default=none
for b in ${QEMU_DISK_BOARDS-$disk_default}; do
	case "$b" in all | "$BOARD" | "$ARCH:$KERNEL") DISK=1 ;; esac
done
DISK_DIR=$OUT/disk
# The filesystems, each an image of this many MiB: room for a few
# recordings (sparse: only what is written takes host space).
DISK_FS="ext4 vfat f2fs"
DISK_MIB=${QEMU_DISK_MIB:-128}
# The disk's transport as net.sh's NIC (MMIO on the virt machines, PCI on
# pc), then the filesystems: the checksums ext4 (crc32c) and f2fs (crc32)
# ask the crypto API for by name (a soft dependency, not in depends=);
# vfat's default codepage 437 and iocharset ascii (the kernels' config).
case "${QEMU_MACHINE[1]}" in
virt) DISK_DEVICE=virtio-blk-device DISK_MODS="virtio_mmio virtio_blk" ;;
*) DISK_DEVICE=virtio-blk-pci DISK_MODS="virtio_pci virtio_blk" ;;
esac
DISK_MODS+=" crc32c_generic ext4 crc32_generic f2fs nls_cp437 nls_ascii vfat"

. "$QEMU_DIR/kmods.sh"

disk_initramfs() {
	[ "$DISK" = 1 ] || return 0
	local root=$1
	kmods disk disk "drivers fs lib crypto" $DISK_MODS
	kmods_install disk "$root"
	install -m 0755 "$QEMU_DIR/guest/disk-up" "$root/etc/trbox/disk-up"
	# A session of its own (bench-record.sh) runs disk-up itself.
	[ -n "${SESSION:-}" ] || grep -v '^\(#\|$\)' "$QEMU_DIR/session-disk" >>"$root/etc/trbox/session"
}

# mkfs.PROGRAM of Debian PACKAGE for the host: mkfs.ext4 is the host's own
# (e2fsprogs is essential), mkfs.fat (dosfstools) and mkfs.f2fs (f2fs-tools)
# are downloaded once and unpacked into the cache, not installed: the host
# stays as it was. Their libraries (libc, libuuid, libblkid) are the host's.
disk_tool() { # PROGRAM PACKAGE
	local dir=$CACHE_BASE/host-tools/$(dpkg --print-architecture)/$2 dl
	if [ ! -x "$dir/sbin/$1" ]; then
		dl=$(mktemp -d "$CACHE_BASE/.tools.XXXXXX")
		say "disk: fetching $2 for the host's $1 (once)"
		(cd "$dl" && apt-get download -q -o Dir::State::status=/dev/null "$2" 2>&1 |
			grep -v '^W: Download is performed unsandboxed' >&2; exit "${PIPESTATUS[0]}") ||
			{ rm -rf "$dl"; die "disk: apt-get download $2 failed"; }
		rm -rf "$dir"
		mkdir -p "$dir"
		dpkg-deb -x "$dl"/*.deb "$dir"
		rm -rf "$dl"
		[ -x "$dir/sbin/$1" ] || die "disk: no sbin/$1 in $2"
	fi
	echo "$dir/sbin/$1"
}

disk_start() {
	[ "$DISK" = 1 ] || return 0
	local fs img fat f2fs
	fat=$(disk_tool mkfs.fat dosfstools) && f2fs=$(disk_tool mkfs.f2fs f2fs-tools) || exit 2
	command -v mkfs.ext4 >/dev/null || PATH=$PATH:/sbin:/usr/sbin
	rm -rf "$DISK_DIR"
	mkdir -p "$DISK_DIR"
	for fs in $DISK_FS; do
		img=$DISK_DIR/$fs.img
		truncate -s "${DISK_MIB}M" "$img"
		case "$fs" in
		# Inode tables and journal written now, not by the guest's
		# ext4lazyinit thread after the mount, whose writes would weigh
		# on the first recordings (bench-record.sh: a third more CPU).
		ext4) mkfs.ext4 -q -F -L ext4 -E lazy_itable_init=0,lazy_journal_init=0 "$img" ;;
		vfat) "$fat" -n VFAT "$img" >/dev/null ;;
		f2fs) "$f2fs" -q -f -l f2fs "$img" ;;
		esac || die "disk: mkfs for $fs failed"
	done
	say "disk: ${DISK_FS// /, } images of $DISK_MIB MiB in ${DISK_DIR#"$REPO"/}"
}

# Each image a raw virtio-blk disk, its serial the filesystem's name
# (guest/disk-up mounts by it: the vdX order follows the transport's slots,
# not this command line). cache=unsafe: the images are thrown away after
# the run, so qemu need not flush them to the host's disk.
disk_qemu_args() {
	[ "$DISK" = 1 ] || return 0
	local fs
	for fs in $DISK_FS; do
		printf '%s\n' -drive "if=none,id=d$fs,file=$DISK_DIR/$fs.img,format=raw,cache=unsafe" \
			-device "$DISK_DEVICE,drive=d$fs,serial=$fs"
	done
}
