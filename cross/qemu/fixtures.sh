#!/usr/bin/env bash
# make qemu-fixtures: boot each board in fixtures mode (guest/record-fixtures),
# bring the recorded trees back over the serial console (base64 tar.gz with
# an md5), cut /proc/kallsyms down to the symbols each scenario's trace text
# mentions (plus the symbol after each, so offsets and sizes work), and
# replace tests/fixtures/BOARD/ with the result (BOARD: ARCH for the 6.1
# kernels, ARCH-KERNEL for the others, common.sh). Writes its INFO.
#   cross/qemu/fixtures.sh [ARCH[:KERNEL]...]
# FIXTURES="a b": record only these scenarios and replace only their
# directories; the other trees stay as they are (INFO is redone over all).
set -euo pipefail
QEMU_DIR=$(cd "$(dirname "$0")" && pwd)
archs=("$@")
[ ${#archs[@]} -gt 0 ] || archs=(aarch64 armv7 x86_64)

for a in "${archs[@]}"; do
	(
		export ARCH=$a
		. "$QEMU_DIR/common.sh"
		# common.sh split ARCH:KERNEL; the scripts below read both.
		export KERNEL
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
			# The kretprobe trampoline stays where a return probe was set or
			# the text says a return address was one (`[unknown/kretprobe'd]`).
			kret=0
			if grep -q '^r' "$d/kprobe_events" 2>/dev/null || grep -q "kretprobe'd" "$d/trace"; then kret=1; fi
			LC_ALL=C awk -v kret=$kret '
				FNR == 1 && NR == 1 && kret { want["__kretprobe_trampoline"] = want["arch_rethook_trampoline"] = want["kretprobe_trampoline"] = 1 }
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
		# Each tree carries the kernel's uname (tr-cat reads the version there).
		for d in "$fx"/*/; do cp "$fx/uname" "$d"; done
		dest=$REPO/tests/fixtures/$BOARD
		if [ -n "${FIXTURES:-}" ]; then
			mkdir -p "$dest"
			for d in "$fx"/*/; do
				d=${d%/}
				rm -rf "${dest:?}/${d##*/}"
				cp -r "$d" "$dest/"
			done
		else
			rm -rf "$dest"
			mkdir -p "$dest"
			for d in "$fx"/*/; do cp -r "${d%/}" "$dest/"; done
		fi
		cp "$fx/uname" "$dest/"
		kver=$(cut -d' ' -f1 "$CACHE/kver")
		# Any tree has the ftrace formats, header_page and trace_clock.
		ev=$(ls -d "$dest"/*/ | head -n1)
		ev=${ev%/}
		subbuf=$(grep -m1 '^@@FIXTURE kernel ' "$log" | sed 's/.*subbuf=\([0-9]*\).*/\1/')
		{
			echo "arch: $ARCH"; echo "board: $BOARD"
			echo "kernel: $(cut -d' ' -f2 "$CACHE/kver") (Debian linux-image-$kver)"
			echo "uname: $(head -n1 "$fx/uname")"
			echo "long (header_page commit size): $(sed -n 's/.*local_t commit;.*size:\([0-9]*\);.*/\1/p' "$ev/events/header_page")"
			echo "sub-buffer: $subbuf"
			echo "qemu: $QEMU_BIN ${QEMU_MACHINE[*]} -smp $QEMU_SMP -m $QEMU_MEM${FIXTURES:+ (recording $FIXTURES)}"
			echo
			# CPUs and clock per tree: trees recorded apart (FIXTURES) may differ.
			printf '%-22s %8s %6s %9s %9s %4s %s\n' scenario entries pages bytes kallsyms cpus clock
			for d in "$dest"/*/; do
				d=${d%/}
				ent=$(cat "$d"/per_cpu/cpu*/stats | awk '$1 == "entries:" { n += $2 } END { print n + 0 }')
				pages=$(($(cat "$d"/per_cpu/cpu*/trace_pipe_raw | wc -c) / subbuf))
				# (without the uname copy, which the first trees lacked)
				bytes=$(find "$d" -type f ! -name uname -exec cat {} + | wc -c)
				printf '%-22s %8s %6s %9s %9s %4s %s\n' "${d##*/}" "$ent" "$pages" "$bytes" "$(wc -l <"$d/kallsyms")" \
					"$(ls -d "$d"/per_cpu/cpu* | wc -l)" "$(sed 's/.*\[\(.*\)\].*/\1/' "$d/trace_clock")"
			done
			echo
			echo "Records by kind in each scenario's trace text (the kernel's own rendering):"
			for d in "$dest"/*/; do
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
		} >"$tmp/INFO"
		mv "$tmp/INFO" "$dest/INFO"
		cat "$dest/INFO" >&2
		say "fixtures in ${dest#"$REPO"/}: $(($(find "$dest" -type f -exec cat {} + | wc -c) / 1024)) KiB in $(find "$dest" -type f | wc -l) files"
	)
done
