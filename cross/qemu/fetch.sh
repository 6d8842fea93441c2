#!/usr/bin/env bash
# Fetch (once) Debian's kernel and static busybox for the board (ARCH,
# KERNEL; see common.sh) into ~/.cache/trbox/qemu/BOARD (QEMU_CACHE):
# vmlinuz, config, busybox, kver. A warm cache costs nothing (no network).
# QEMU_REFRESH=1 fetches the newest kernel again;
# KERNEL_PKG=linux-image-VERSION-FLAVOUR pins one.
# bookworm kernels come through the host's own apt sources. Another suite's
# (bullseye, trixie) through a sources list and apt state of its own in
# ~/.cache/trbox/qemu/apt/SUITE-DEBARCH, on the host's Debian mirror; the
# host's sources are never changed. busybox is always bookworm's
# busybox-static (it runs on every board kernel).
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

# apt options for the kernel's suite: none for bookworm (the host's own),
# else a sources list and state directories of the suite's own.
apt_opts=()
if [ "$SUITE" != bookworm ]; then
	# The host's Debian mirror (deb822 .sources or one-line sources.list);
	# deb.debian.org if there is none.
	mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
		sed -n 's,^URIs: *\([^ ]*/debian\)/\?\( .*\)\?$,\1,p' | head -n1)
	[ -n "$mirror" ] || mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		sed -n 's,^deb \(\[[^]]*\] \)\?\([^ ]*/debian\)/\? .*,\2,p' | head -n1)
	mirror=${mirror:-http://deb.debian.org/debian}
	apt_dir=$CACHE_BASE/apt/$SUITE-$DEB_ARCH
	mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
	key=/usr/share/keyrings/debian-archive-keyring.gpg
	{
		echo "deb [arch=$DEB_ARCH signed-by=$key] $mirror $SUITE main"
		# trixie's kernels move on through its security suite; bullseye's
		# (past its LTS) are all in main.
		[ "$SUITE" = bullseye ] || echo "deb [arch=$DEB_ARCH signed-by=$key] $mirror-security $SUITE-security main"
	} >"$apt_dir/sources.list"
	apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o Dir::Etc::sourceparts=-
		-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache")
	if [ -n "${QEMU_REFRESH:-}" ] || ! ls "$apt_dir"/lists/*_dists_"${SUITE}"_InRelease >/dev/null 2>&1; then
		say "apt-get update for $SUITE ($DEB_ARCH) into ${apt_dir#"$CACHE_BASE"/}"
		# A partial failure (an index mid-sync) is not fatal, as in setup.sh.
		apt-get "${apt_opts[@]}" update -q 2>&1 | grep -v '^\(Get\|Hit\|Ign\):\|^W: Download is performed unsandboxed' >&2 ||
			say "warning: apt-get update for $SUITE reported errors; going on"
	fi
fi

pkg=${KERNEL_PKG:-}
if [ -z "$pkg" ]; then
	# The flavour's metapackage depends on the current ABI's image package.
	pkg=$(apt-cache "${apt_opts[@]}" depends "linux-image-$KFLAVOUR:$DEB_ARCH" 2>/dev/null |
		sed -n "s/^ *Depends: \(linux-image-[0-9][^:]*-$KFLAVOUR\)\(:$DEB_ARCH\)\?\$/\1/p" | head -n1)
	[ -n "$pkg" ] || die "cannot resolve linux-image-$KFLAVOUR:$DEB_ARCH in $SUITE (did cross/qemu/setup.sh run apt-get update?)"
fi

# apt-get download, three tries.
download() {
	local try
	for try in 1 2 3; do
		if (cd "$dl" && apt-get download -q -o Acquire::Retries=3 "$@" 2>&1 |
			grep -v '^W: Download is performed unsandboxed' >&2; exit "${PIPESTATUS[0]}"); then
			return 0
		fi
		[ "$try" = 3 ] && die "apt-get download ${*: -1} failed 3 times"
		say "apt-get download failed (try $try of 3); again in 5 s"
		sleep 5
	done
}
say "downloading $pkg:$DEB_ARCH ($SUITE) and busybox-static:$DEB_ARCH (about 60 MB, once)"
download "${apt_opts[@]}" "$pkg:$DEB_ARCH"
download "busybox-static:$DEB_ARCH"

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
