#!/usr/bin/env bash
# Fetch (once) Debian's kernel and static busybox for the board (ARCH,
# KERNEL; see common.sh) into ~/.cache/trbox/qemu/BOARD (QEMU_CACHE):
# vmlinuz, config, busybox, kver. A warm cache costs nothing (no network).
# QEMU_REFRESH=1 fetches the newest kernel again;
# KERNEL_PKG=linux-image-VERSION-FLAVOUR pins one.
# bookworm kernels come through the host's own apt sources. Another suite's
# (bullseye, trixie) through a sources list and apt state of its own in
# ~/.cache/trbox/qemu/apt/SUITE-DEBARCH, on the host's Debian mirror; the
# host's sources are never changed. busybox is bookworm's busybox-static
# (it runs on every board kernel), sid's on the sid boards.
# sid's kernels (7.2) are packaged anew: linux-image-KVER-FLAVOUR is an
# empty package that depends on linux-binary-* (usr/lib/modules/KVER/vmlinuz,
# no boot/), linux-modules-* and linux-base-* (usr/lib/modules/KVER/config);
# sid's busybox-static installs usr/bin/busybox.
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
		# (past its LTS) and sid's are all in main.
		[ "$SUITE" = bullseye ] || [ "$SUITE" = sid ] || echo "deb [arch=$DEB_ARCH signed-by=$key] $mirror-security $SUITE-security main"
	} >"$apt_dir/sources.list"
	apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o Dir::Etc::sourceparts=-
		-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache")
	# sid's Release file carries a Valid-Until that the mirror's copy may
	# have passed; apt refuses such a suite without this.
	[ "$SUITE" != sid ] || apt_opts+=(-o Acquire::Check-Valid-Until=false)
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
# sid's image package is empty: the kernel and its config are in the
# linux-binary and linux-base packages it depends on (the modules, not
# needed to boot, in linux-modules: net.sh fetches them).
parts=$(apt-cache "${apt_opts[@]}" depends "$pkg:$DEB_ARCH" 2>/dev/null |
	sed -n "s/^ *Depends: \(linux-\(binary\|base\)-[0-9][^:]*\)\(:$DEB_ARCH\)\?\$/\1/p")
get=("$pkg")
[ -z "$parts" ] || get=($parts)
bb_opts=()
[ "$SUITE" != sid ] || bb_opts=("${apt_opts[@]}")
say "downloading ${get[*]/%/:$DEB_ARCH} ($SUITE) and busybox-static:$DEB_ARCH (about 60 MB, once)"
for p in "${get[@]}"; do
	download "${apt_opts[@]}" "$p:$DEB_ARCH"
done
download "${bb_opts[@]}" "busybox-static:$DEB_ARCH"

say "unpacking"
mkdir -p "$dl/x"
for deb in "$dl"/*.deb; do
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dl/x" --wildcards './boot/*' './bin/busybox' \
		'./usr/bin/busybox' './usr/lib/modules/*/vmlinuz' './usr/lib/modules/*/config' 2>/dev/null || true
done
# boot/vmlinuz-KVER and boot/config-KVER, or (sid) usr/lib/modules/KVER/.
vmlinuz=$(ls "$dl"/x/boot/vmlinuz-* "$dl"/x/usr/lib/modules/*/vmlinuz 2>/dev/null | head -n1 || true)
[ -n "$vmlinuz" ] || die "no boot/vmlinuz-* nor usr/lib/modules/*/vmlinuz in ${get[*]}"
case "$vmlinuz" in
*/boot/vmlinuz-*) kver=${vmlinuz##*/vmlinuz-} config=$dl/x/boot/config-$kver ;;
*) kver=${vmlinuz%/vmlinuz} kver=${kver##*/} config=$dl/x/usr/lib/modules/$kver/config ;;
esac
busybox=$dl/x/bin/busybox
[ -x "$busybox" ] || busybox=$dl/x/usr/bin/busybox
[ -x "$busybox" ] || die "no bin/busybox nor usr/bin/busybox in busybox-static:$DEB_ARCH"

mv -f "$vmlinuz" "$CACHE/vmlinuz"
mv -f "$config" "$CACHE/config" 2>/dev/null || true

mv -f "$busybox" "$CACHE/busybox"
pkgver=$(dpkg-deb -f "$dl/$(cd "$dl" && ls "${get[0]}"_*.deb | head -n1)" Version 2>/dev/null || echo '?')
printf '%s %s\n' "$kver" "$pkgver" >"$CACHE/kver"
say "kernel $kver ($pkgver) cached in ${CACHE#"$REPO"/}"
