# A board binary of another configuration than full (make cross
# CONFIG=minimal; make test boots one): the session lines that need a
# feature it leaves out are skipped, and said. Sourced after common.sh by
# mkinitramfs.sh (features_filter) and check.sh (features_report).
#
# What a line needs: the applets it runs (tr-graph, tr-stack, tr-lat), the
# options of a feature (config.rs's table: --raw, --json, --stats,
# --follow: decode; --kprobe and the like: probe; --console; tr-cat -N:
# net), reading a recording (`tr-cat FILE`: decode), tr-lat's timerlat,
# osnoise and hwnoise (rtla), and what a line says itself with
# '## needs: FEATURE...' (e.g. decode where a line wants the command's
# name on its records: without the decoder the kernel's own text says
# <...> for a task whose comm it did not save).

SKIPPED=$OUT/skipped-lines

# The binary's features, from its --version ("trbox V (configuration NAME:
# FEATURE...)"), run under qemu-user for another architecture; nothing
# when it cannot say (every line is kept then).
binary_features() {
	local run=
	case "$ARCH" in
	aarch64) [ "$(uname -m)" = aarch64 ] || run=qemu-aarch64-static ;;
	armv7) run=qemu-arm-static ;;
	x86_64) [ "$(uname -m)" = x86_64 ] || run=qemu-x86_64-static ;;
	esac
	$run "$TRBOX_BIN" --version 2>/dev/null | sed -n 's/^trbox [^ ]* (configuration \([^:]*\): \(.*\))$/\1: \2/p'
}

# Rewrite the session FILE without the lines whose needs the binary lacks;
# list them in $SKIPPED ("NEEDED|CONFIGURATION|COMMAND").
features_filter() {
	local file=$1 have config
	rm -f "$SKIPPED"
	have=$(binary_features)
	[ -n "$have" ] || return 0
	config=${have%%:*}
	have=" ${have#*: } "
	awk -v have="$have" -v config="$config" -v skipped="$SKIPPED" '
	/^(#|$)/ { print; next }
	{
		cmd = $0; sub(/ ## .*/, "", cmd)
		n = 0; delete need
		if (cmd ~ /tr-graph/) need[++n] = "tr-graph"
		if (cmd ~ /tr-stack/) need[++n] = "tr-stack"
		if (cmd ~ /tr-lat/) need[++n] = "tr-lat"
		if (cmd ~ /tr-lat (timerlat|osnoise|hwnoise)/) need[++n] = "rtla"
		if (cmd ~ /vs-rtla/) { need[++n] = "tr-lat"; need[++n] = "rtla" }
		if (cmd ~ /vs-trace-cmd/) need[++n] = "decode"
		if (cmd ~ /--(raw|json|stats|follow)/ || cmd ~ /tr-cat +[^- |;&<>]/) need[++n] = "decode"
		if (cmd ~ /--(kprobe|kretprobe|uprobe|uretprobe)/) need[++n] = "probe"
		if (cmd ~ /--console/) need[++n] = "console"
		if (cmd ~ /tr-cat( [^|;&]*)? -N /) need[++n] = "net"
		i = index($0, "## needs: ")
		if (i) {
			m = split(substr($0, i + 10), w, " ")
			for (j = 1; j <= m && w[j] != "##"; j++) need[++n] = w[j]
		}
		missing = ""
		for (j = 1; j <= n; j++)
			if (index(have, " " need[j] " ") == 0 && index(" " missing " ", " " need[j] " ") == 0)
				missing = missing (missing == "" ? "" : " ") need[j]
		if (missing == "") { print; next }
		print missing "|" config "|" cmd > skipped
	}' "$file" >"$file.tmp"
	mv -f "$file.tmp" "$file"
}

# check.sh: one line per skipped session line, and how many.
features_report() {
	[ -s "$SKIPPED" ] || return 0
	local missing config cmd n=0
	while IFS='|' read -r missing config cmd; do
		n=$((n + 1))
		[ ${#cmd} -le 60 ] || cmd="${cmd:0:57}..."
		printf '[qemu %s] skip  %s (configuration %s, without %s)\n' "$BOARD" "$cmd" "$config" "$missing"
	done <"$SKIPPED"
	printf '[qemu %s] skip  %s session lines: their features are not in this binary\n' "$BOARD" "$n"
}
