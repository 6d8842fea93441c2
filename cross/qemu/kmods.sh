# A board kernel's loadable modules for the initramfs, shared by net.sh (the
# NIC) and disk.sh (the disk and its filesystems): Debian's board kernels
# build these as modules, and the busybox initramfs has no modprobe nor
# modules.dep, so the harness resolves the dependencies on the host and the
# guest insmods in that order. Sourced after common.sh.
#   kmods DIR LABEL "SUBTREES" MODULE...
#       MODULE... and what they depend on (the .modinfo depends= of each),
#       from the kernel's own package, once, into $CACHE/DIR: NAME.ko
#       (uncompressed) and `order` (dependencies first). SUBTREES: the
#       directories under the package's kernel/ that hold them (drivers,
#       net, fs, lib, crypto...), the only ones unpacked. LABEL prefixes
#       the progress lines.
#   kmods_install DIR ROOT
#       that cache into the initramfs tree ROOT, at /lib/modules/DIR.
kmods() {
	local dir=$1 label=$2 trees=$3
	shift 3
	[ -s "$CACHE/$dir/order" ] && return 0
	local kver pkg dl apt_opts=() a mods t globs=()
	kver=$(cut -d' ' -f1 "$CACHE/kver")
	pkg=linux-image-$kver
	# sid: the modules are in linux-modules-KVER.
	[ "$SUITE" != sid ] || pkg=linux-modules-$kver
	# Another suite's packages through the sources list fetch.sh made.
	if [ "$SUITE" != bookworm ]; then
		a=$CACHE_BASE/apt/$SUITE-$DEB_ARCH
		apt_opts=(-o "Dir::Etc::sourcelist=$a/sources.list" -o Dir::Etc::sourceparts=-
			-o "Dir::State::Lists=$a/lists" -o "Dir::Cache=$a/cache")
		[ "$SUITE" != sid ] || apt_opts+=(-o Acquire::Check-Valid-Until=false)
	fi
	dl=$(mktemp -d "$CACHE/.$dir.XXXXXX")
	say "$label: fetching $* from $pkg (once)"
	if ! (cd "$dl" && apt-get download -q "${apt_opts[@]}" "$pkg:$DEB_ARCH" 2>&1 |
		grep -v '^W: Download is performed unsandboxed' >&2; exit "${PIPESTATUS[0]}"); then
		rm -rf "$dl"
		die "$label: apt-get download $pkg:$DEB_ARCH failed (the board's modules come from it)"
	fi
	mkdir -p "$dl/x"
	# Under lib/modules (bullseye, bookworm) or usr/lib/modules (trixie, sid).
	mods=$(dpkg-deb -c "$dl"/*.deb | awk -v k="/modules/$kver/kernel/" '
		!m && (i = index($NF, k)) { m = substr($NF, 1, i + length(k) - 2) } END { print m }')
	[ -n "$mods" ] || { rm -rf "$dl"; die "$label: no modules of $kver in $pkg"; }
	for t in $trees; do globs+=("$mods/$t/*"); done
	dpkg-deb --fsys-tarfile "$dl"/*.deb | tar -x -C "$dl/x" --wildcards "${globs[@]}"
	# What is built in (read below), where the package has the list.
	dpkg-deb --fsys-tarfile "$dl"/*.deb | tar -x -C "$dl/x" "${mods%/kernel}/modules.builtin" 2>/dev/null || :
	local done=" " order=() m deps
	# Built into this kernel? Its modules.builtin says; a sid package
	# without the list: the old rule, sid builds what it lacks in.
	builtin() {
		local list=$dl/x/${mods%/kernel}/modules.builtin
		if [ -f "$list" ]; then grep -q "/$1\.ko\$" "$list"; else [ "$SUITE" = sid ]; fi
	}
	# Depth first: a module goes in after what it depends on.
	visit() {
		local m=$1 f d
		case "$done" in *" $m "*) return 0 ;; esac
		done+="$m "
		f=$(find "$dl/x" -name "$m.ko*" | head -n1)
		# Built in (modules.builtin: virtio and virtio_ring on 7.2,
		# virtio_pci from 6.12): nothing to load.
		[ -n "$f" ] || ! builtin "$m" || { say "$label: $m is built into $kver"; return 0; }
		[ -n "$f" ] || die "$label: no module $m in $pkg"
		case "$f" in
		*.ko.xz) xz -dc "$f" >"$dl/$m.ko" ;;
		*.ko.zst) zstd -qdc "$f" >"$dl/$m.ko" ;;
		*.ko.gz) gzip -dc "$f" >"$dl/$m.ko" ;;
		*) cp "$f" "$dl/$m.ko" ;;
		esac
		deps=$(grep -a -o 'depends=[a-z0-9_,-]*' "$dl/$m.ko" | head -n1)
		deps=${deps#depends=}
		for d in ${deps//,/ }; do visit "${d//-/_}"; done
		order+=("$m")
	}
	for m in "$@"; do visit "$m"; done
	rm -rf "${CACHE:?}/$dir"
	mkdir -p "$CACHE/$dir"
	for m in "${order[@]}"; do mv "$dl/$m.ko" "$CACHE/$dir/"; done
	printf '%s\n' "${order[@]}" >"$CACHE/$dir/order"
	rm -rf "$dl"
	say "$label: modules $(echo "${order[@]}") cached in ${CACHE#"$REPO"/}/$dir"
}

kmods_install() {
	mkdir -p "$2/lib/modules/$1"
	cp "$CACHE/$1/"*.ko "$CACHE/$1/order" "$2/lib/modules/$1/"
}
