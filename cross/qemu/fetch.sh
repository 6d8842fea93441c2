#!/usr/bin/env bash
# Fetch (once) Debian's kernel and static busybox for ARCH into
# ~/.cache/trbox/qemu/ARCH (QEMU_CACHE): vmlinuz, config, busybox, kver.
# A warm cache costs nothing (no network). QEMU_REFRESH=1 fetches the newest
# kernel again; KERNEL_PKG=linux-image-6.1.0-NN-FLAVOUR pins one.
set -euo pipefail
. "$(dirname "$0")/common.sh"

if [ -z "${QEMU_REFRESH:-}" ] && [ -s "$CACHE/vmlinuz" ] && [ -s "$CACHE/busybox" ] && [ -s "$CACHE/kver" ]; then
	exit 0
fi

"$QEMU_DIR/setup.sh"
command -v apt-get >/dev/null || die "apt-get not found: the harness fetches Debian's kernels with it"

mkdir -p "$CACHE"
dl=$(mktemp -d "$CACHE/.dl.XXXXXX")
trap 'rm -rf "$dl"' EXIT

pkg=${KERNEL_PKG:-}
if [ -z "$pkg" ]; then
	# The flavour's metapackage depends on the current ABI's image package.
	pkg=$(apt-cache depends "linux-image-$KFLAVOUR:$DEB_ARCH" 2>/dev/null |
		sed -n "s/^ *Depends: \(linux-image-[0-9][^:]*-$KFLAVOUR\)\(:$DEB_ARCH\)\?\$/\1/p" | head -n1)
	[ -n "$pkg" ] || die "cannot resolve linux-image-$KFLAVOUR:$DEB_ARCH (did cross/qemu/setup.sh run apt-get update?)"
fi

say "downloading $pkg:$DEB_ARCH and busybox-static:$DEB_ARCH (about 60 MB, once)"
for try in 1 2 3; do
	if (cd "$dl" && apt-get download -q -o Acquire::Retries=3 "$pkg:$DEB_ARCH" "busybox-static:$DEB_ARCH" 2>&1 |
		grep -v '^W: Download is performed unsandboxed' >&2; exit "${PIPESTATUS[0]}"); then
		break
	fi
	[ "$try" = 3 ] && die "apt-get download $pkg:$DEB_ARCH busybox-static:$DEB_ARCH failed 3 times"
	say "apt-get download failed (try $try of 3); again in 5 s"
	sleep 5
done

say "unpacking"
mkdir -p "$dl/x"
for deb in "$dl"/*.deb; do
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dl/x" --wildcards './boot/*' './bin/busybox' 2>/dev/null || true
done
vmlinuz=$(ls "$dl"/x/boot/vmlinuz-* 2>/dev/null | head -n1)
[ -n "$vmlinuz" ] || die "no boot/vmlinuz-* in $pkg"
[ -x "$dl/x/bin/busybox" ] || die "no bin/busybox in busybox-static:$DEB_ARCH"

kver=${vmlinuz##*/vmlinuz-}
mv -f "$vmlinuz" "$CACHE/vmlinuz"
mv -f "$dl/x/boot/config-$kver" "$CACHE/config" 2>/dev/null || true

mv -f "$dl/x/bin/busybox" "$CACHE/busybox"
pkgver=$(dpkg-deb -f "$dl/$(cd "$dl" && ls "${pkg}"_*.deb | head -n1)" Version 2>/dev/null || echo '?')
printf '%s %s\n' "$kver" "$pkgver" >"$CACHE/kver"
say "kernel $kver ($pkgver) cached in ${CACHE#"$REPO"/}"
