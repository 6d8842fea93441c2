#!/usr/bin/env bash
# make qemu-fixtures: boot each board in fixtures mode (guest/record-fixtures),
# bring the recorded trees back over the serial console (base64 tar.gz with
# an md5), cut /proc/kallsyms down to the symbols each scenario's trace text
# mentions (plus the symbol after each, so offsets and sizes work), and
# replace tests/fixtures/BOARD/ with the result (BOARD: ARCH for the 6.1
# kernels, ARCH-KERNEL for the others; see common.sh). Writes
# tests/fixtures/BOARD/INFO.
#   cross/qemu/fixtures.sh [ARCH[:KERNEL]...]
set -euo pipefail
QEMU_DIR=$(cd "$(dirname "$0")" && pwd)
archs=("$@")
[ ${#archs[@]} -gt 0 ] || archs=(aarch64 armv7 x86_64)

for a in "${archs[@]}"; do
	(
		export ARCH=$a KERNEL=
		. "$QEMU_DIR/common.sh"
		"$QEMU_DIR/fetch.sh"
		"$QEMU_DIR/mkinitramfs.sh"
		"$QEMU_DIR/run.sh" fixtures
		log=$OUT/fixtures-console.log
		grep '^@@FIXTURE' "$log" | sed "s/^/[qemu $ARCH] /" >&2
		if grep -q '^@@FIXTURE-WARN\|^@@ERROR' "$log"; then
			die "the guest reported problems (above); fixtures not replaced"
		fi
		hdr=$(grep -m1 '^@@FILE-BEGIN fx.tar.gz ' "$log") || die "no @@FILE-BEGIN in ${log#"$REPO"/}"
		set -- $hdr
		want_md5=$3
		tmp=$(mktemp -d "$OUT/.fx.XXXXXX")
		trap 'rm -rf "$tmp"' EXIT
		sed -n '/^@@FILE-BEGIN fx.tar.gz /,/^@@FILE-END/p' "$log" | sed '1d;$d' | base64 -d >"$tmp/fx.tar.gz"
		got_md5=$(md5sum <"$tmp/fx.tar.gz" | cut -d' ' -f1)
		[ "$got_md5" = "$want_md5" ] || die "transfer damaged: md5 $got_md5, guest said $want_md5"
		tar -xzf "$tmp/fx.tar.gz" -C "$tmp"
		fx=$tmp/fx
		LC_ALL=C sort -s -k1,1 "$fx/kallsyms.full" >"$tmp/kallsyms.sorted"
		for d in "$fx"/*/; do
			d=${d%/}
			# Every identifier-like word of the kernel's text is a candidate name.
			# The core kernel's section bounds and the [__builtin__*] pages
			# (ftrace trampolines, kprobe slots) always stay: they decide
			# which addresses the kernel leaves unresolved (src/kallsyms.rs).
			LC_ALL=C awk '
				FNR == NR { gsub(/[^A-Za-z0-9_.$]/, " "); for (i = 1; i <= NF; i++) want[$i] = 1; next }
				{
					addr[++n] = $1; line[n] = $0; name[n] = $3
					if ((NF == 3 && $3 ~ /^_(stext|etext|sinittext|einittext|end)$/) || $4 ~ /^\[__builtin__/) keep[n] = 1
				}
				END {
					for (i = 1; i <= n; i++) {
						if (!(name[i] in want)) continue
						keep[i] = 1
						for (j = i + 1; j <= n; j++) if (addr[j] != addr[i]) { keep[j] = 1; break }
					}
					for (i = 1; i <= n; i++) if (i in keep) print line[i]
				}' "$d/trace" "$tmp/kallsyms.sorted" >"$d/kallsyms"
		done
		rm -f "$fx/kallsyms.full"
		kver=$(cut -d' ' -f1 "$CACHE/kver")
		ev=$fx/events
		subbuf=$(grep -m1 '^@@FIXTURE kernel ' "$log" | sed 's/.*subbuf=\([0-9]*\).*/\1/')
		{
			echo "arch: $ARCH"
			[ "$KERNEL" = 6.1 ] || echo "board kernel: $KERNEL ($SUITE)"
			echo "kernel: $(cut -d' ' -f2 "$CACHE/kver") (Debian linux-image-$kver)"
			echo "uname: $(head -n1 "$fx/uname")"
			echo "long (header_page commit size): $(sed -n 's/.*local_t commit;.*size:\([0-9]*\);.*/\1/p' "$ev/events/header_page")"
			echo "sub-buffer: $subbuf"
			echo "clock: $(sed 's/.*\[\(.*\)\].*/\1/' "$ev/trace_clock")"
			echo "cpus: $(ls -d "$ev"/per_cpu/cpu* | wc -l)"
			echo "qemu: $QEMU_BIN ${QEMU_MACHINE[*]} -smp $QEMU_SMP -m $QEMU_MEM"
			echo
			printf '%-22s %8s %6s %9s %9s\n' scenario entries pages bytes kallsyms
			for d in "$fx"/*/; do
				d=${d%/}
				ent=$(cat "$d"/per_cpu/cpu*/stats | awk '$1 == "entries:" { n += $2 } END { print n + 0 }')
				pages=$(($(cat "$d"/per_cpu/cpu*/trace_pipe_raw | wc -c) / subbuf))
				bytes=$(find "$d" -type f -exec cat {} + | wc -c)
				printf '%-22s %8s %6s %9s %9s\n' "${d##*/}" "$ent" "$pages" "$bytes" "$(wc -l <"$d/kallsyms")"
			done
			echo
			echo "Records by kind in each scenario's trace text (the kernel's own rendering):"
			for d in "$fx"/*/; do
				d=${d%/}
				printf '\n%s:\n' "${d##*/}"
				# Event name after the timestamp; graph lines by shape.
				awk '
					/^#/ { next }
					/<stack trace>/ { n["kernel_stack"]++; next }
					/^ *[0-9]+\)/ { if ($0 ~ /\/\*/) n["(graph comment)"]++; else if ($0 ~ /\);/) n["(graph leaf)"]++; else if ($0 ~ /\{ *$/) n["(graph entry)"]++; else if ($0 ~ /\} *$/ || $0 ~ /\} \/\*/) n["(graph exit)"]++; else n["(graph other)"]++; next }
					{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { e = $(i + 1); k = ""; if ($(i + 2) == "->") k = " (exit)"; else if (e ~ /^sys_.*\(/) k = " (entry)"; sub(/[(:].*/, "", e); n[e k]++; break } }
					END { for (k in n) printf "  %6d %s\n", n[k], k }' "$d/trace" | sort -k1,1nr -k2
			done
		} >"$fx/INFO"
		dest=$REPO/tests/fixtures/$BOARD
		rm -rf "$dest"
		mkdir -p "$dest"
		for d in "$fx"/*/; do cp -r "${d%/}" "$dest/"; done
		cp "$fx/uname" "$fx/INFO" "$dest/"
		cat "$dest/INFO" >&2
		say "fixtures in ${dest#"$REPO"/}: $(($(find "$dest" -type f -exec cat {} + | wc -c) / 1024)) KiB in $(find "$dest" -type f | wc -l) files"
	)
done
