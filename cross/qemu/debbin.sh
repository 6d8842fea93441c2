#!/usr/bin/env bash
# Put Debian programs with their shared libraries and the dynamic loader
# into a board's initramfs tree: the lines of cross/qemu/debs (DEBS=FILE)
# for this board (ARCH, KERNEL as in common.sh).
#   cross/qemu/debbin.sh ROOT
# Each package is fetched once, with the packages it depends on (apt-get
# download, the board's Debian architecture; bookworm: the host's own apt
# sources and its foreign architectures, set up by setup.sh; another suite
# (sid's rtla 7.2 for the 7.2 boards): the sources list and state of that
# suite's own that fetch.sh made for the board's kernel), into
# ~/.cache/trbox/qemu/debs/DEBARCH/PACKAGE/ (other suites:
# debs/SUITE-DEBARCH/PACKAGE/; QEMU_CACHE moves it;
# QEMU_REFRESH=1 fetches again): the listed files and, found through their
# ELF NEEDED entries and PT_INTERP (readelf), every library they load, at
# the paths the packages give them. Copying that tree into ROOT costs no
# network. Prints nothing for a board without lines.
set -euo pipefail
. "$(dirname "$0")/common.sh"

root=${1:?usage: debbin.sh ROOT}
list=${DEBS:-$QEMU_DIR/debs}

# PACKAGE PATH... for this board.
wanted=$(awk -v board="$ARCH:$KERNEL" -v name="$BOARD" '
/^(#|$)/ { next }
$1 == "all" || $1 == board || $1 == name { $1 = ""; sub(/^ +/, ""); print }' "$list")
[ -n "$wanted" ] || exit 0

# The file NAME among the unpacked packages' library directories.
find_lib() {
	local d
	for d in lib/"$MULTIARCH" usr/lib/"$MULTIARCH" lib usr/lib; do
		if [ -e "$1/$d/$2" ]; then
			echo "$d/$2"
			return 0
		fi
	done
	return 1
}

# The packages are the board's, not the host's: without the host's dpkg
# status, whose installed versions (say a point release, libpcre2-8-0
# 10.42-1+deb12u1 on a bookworm host) would be the candidates, although
# no source of the board's suite has them to download.
apt_opts=(-o Dir::State::status=/dev/null)
debs=$CACHE_BASE/debs/$DEB_ARCH
if [ "$SUITE" != bookworm ]; then
	apt_dir=$CACHE_BASE/apt/$SUITE-$DEB_ARCH
	[ -f "$apt_dir/sources.list" ] || die "no apt state for $SUITE ($apt_dir): cross/qemu/fetch.sh makes it with the board's kernel"
	apt_opts+=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o Dir::Etc::sourceparts=-
		-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o Acquire::Check-Valid-Until=false)
	debs=$CACHE_BASE/debs/$SUITE-$DEB_ARCH
fi

# fetch PACKAGE PATH...: the cache tree for PACKAGE.
fetch() {
	local pkg=$1 dir=$debs/$1 dl x f rel src lib todo seen
	shift
	if [ -z "${QEMU_REFRESH:-}" ] && [ -f "$dir/files" ] && [ "$(cat "$dir/files")" = "$*" ]; then
		return 0
	fi
	command -v readelf >/dev/null || die "readelf not found (binutils): debbin.sh reads the libraries a program needs with it"
	mkdir -p "$debs"
	dl=$(mktemp -d "$debs/.dl.XXXXXX")
	# The package and what it depends on, without virtual packages (<name>).
	local deps
	deps=$(apt-cache "${apt_opts[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
		--no-replaces --no-enhances "$pkg:$DEB_ARCH" 2>/dev/null | grep -v '^[ <]' | sort -u) ||
		true
	[ -n "$deps" ] || die "apt-cache knows no $pkg:$DEB_ARCH (did cross/qemu/setup.sh add the architecture $DEB_ARCH and run apt-get update?)"
	say "downloading $pkg:$DEB_ARCH and its dependencies ($(echo $deps | sed "s/:$DEB_ARCH//g"); once)"
	# shellcheck disable=SC2086
	(cd "$dl" && apt-get "${apt_opts[@]}" download -q -o Acquire::Retries=3 $deps 2>&1 |
		grep -v '^W: Download is performed unsandboxed\|^Get:\|^Fetched ' >&2; exit "${PIPESTATUS[0]}") ||
		{ rm -rf "$dl"; die "apt-get download of $pkg:$DEB_ARCH and its dependencies failed"; }
	x=$dl/x
	mkdir -p "$x" "$dl/root"
	for f in "$dl"/*.deb; do
		dpkg-deb -x "$f" "$x"
	done
	# The listed files, then every library named by a NEEDED entry or the
	# PT_INTERP of a file taken, until nothing new comes.
	todo=("$@")
	seen=" "
	while [ ${#todo[@]} -gt 0 ]; do
		rel=${todo[0]#/}
		todo=("${todo[@]:1}")
		case "$seen" in *" $rel "*) continue ;; esac
		seen="$seen$rel "
		# Merged /usr (trixie on): /lib/ld-linux… is shipped as usr/lib/…;
		# it lands at the path the program asks for.
		src=$x/$rel
		[ -e "$src" ] || src=$x/usr/$rel
		[ -e "$src" ] || { rm -rf "$dl"; die "$pkg:$DEB_ARCH has no /$rel (nor its dependencies)"; }
		mkdir -p "$dl/root/$(dirname "$rel")"
		cp -L "$src" "$dl/root/$rel"
		# (A script, such as ldd, is no ELF: readelf fails, nothing to follow.)
		f=$(readelf -l "$src" 2>/dev/null | sed -n 's/.*\[Requesting program interpreter: \(.*\)\]/\1/p') || f=
		[ -z "$f" ] || todo+=("$f")
		for lib in $(readelf -d "$src" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
			f=$(find_lib "$x" "$lib") || { rm -rf "$dl"; die "no package of $pkg:$DEB_ARCH's dependencies has $lib (needed by /$rel)"; }
			todo+=("$f")
		done
	done
	dpkg-deb -f "$dl/$(cd "$dl" && ls "${pkg}"_*.deb | head -n1)" Version >"$dl/root/.version" 2>/dev/null || true
	rm -rf "$dir"
	mv "$dl/root" "$dir"
	printf '%s\n' "$*" >"$dir/files"
	rm -rf "$dl"
	say "$pkg $(cat "$dir/.version") cached: $(cd "$dir" && find . -type f ! -name files ! -name .version | sed 's,^\.,,' | tr '\n' ' ')"
}

case "$DEB_ARCH" in
arm64) MULTIARCH=aarch64-linux-gnu ;;
armhf) MULTIARCH=arm-linux-gnueabihf ;;
amd64) MULTIARCH=x86_64-linux-gnu ;;
esac

while read -r pkg paths; do
	# shellcheck disable=SC2086
	fetch "$pkg" $paths
	(cd "$debs/$pkg" && find . -type f ! -name files ! -name .version | cpio -pdm --quiet "$root")
done <<<"$wanted"
