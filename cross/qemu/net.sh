# Off the board over the network (issue 16): the boards in QEMU_NET_BOARDS
# (default: aarch64, names as in test.sh; 'none' for none) boot with qemu's
# user-mode network instead of -nic none. The guest is 10.0.2.15 and reaches
# the host's loopback at 10.0.2.2 (slirp; nothing listens outside this
# machine, and the guest connects to nothing but 10.0.2.2). Sourced after
# common.sh by mkinitramfs.sh, run.sh and check.sh, each calling one
# function of this file:
#   net_initramfs ROOT  the NIC's modules (Debian's virtio-net is a module),
#                       /etc/trbox/net-up and the lines of session-net
#   net_start / net_stop  the host's listeners around the qemu run: Debian's
#                       `trace-cmd listen`, `tr-cat --listen`, and a
#                       `tr-cat --listen` that drops its sender mid-run;
#                       their ports go to the guest as trbox.net= on the
#                       kernel command line (with one nobody listens on)
#   net_check           what the listeners received, against the board's
#                       own `tr-cat -o` of the same workload
# The other boards are untouched (NET=0: every function does nothing).

NET=0
for b in ${QEMU_NET_BOARDS-aarch64}; do
	case "$b" in all | "$BOARD" | "$ARCH:$KERNEL") NET=1 ;; esac
done
NET_DIR=$OUT/net
# The NIC: virtio-net on the virt machines' MMIO transport, on PCI for pc.
case "${QEMU_MACHINE[1]}" in
virt) NET_DEVICE=virtio-net-device NET_MODS="virtio_mmio virtio_net" ;;
*) NET_DEVICE=virtio-net-pci NET_MODS="virtio_pci virtio_net" ;;
esac
# The host's trbox (listener, reader): common.sh's.
NET_HOST_BIN=$TRBOX_HOST_BIN

# The NIC's modules (kmods.sh), once, into $CACHE/net.
. "$QEMU_DIR/kmods.sh"
net_modules() { kmods net network "drivers net" $NET_MODS; }

net_initramfs() {
	[ "$NET" = 1 ] || return 0
	local root=$1
	net_modules
	kmods_install net "$root"
	install -m 0755 "$QEMU_DIR/guest/net-up" "$root/etc/trbox/net-up"
	grep -v '^\(#\|$\)' "$QEMU_DIR/session-net" >>"$root/etc/trbox/session"
}

# The qemu options and the kernel command line's addition.
net_qemu_args() {
	if [ "$NET" = 1 ]; then
		printf '%s\n' -netdev user,id=n0 -device "$NET_DEVICE,netdev=n0"
	else
		printf '%s\n' -nic none
	fi
}

# A free TCP port on the host (bound for a moment by the kernel's choice).
net_free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Wait until something accepts on PORT (10 s).
net_wait_port() {
	local i
	for i in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

NET_APPEND=
net_start() {
	[ "$NET" = 1 ] || return 0
	rm -rf "$NET_DIR"
	mkdir -p "$NET_DIR/tc" "$NET_DIR/tb" "$NET_DIR/drop"
	local tc tb drop dead
	tc=$(net_free_port) tb=$(net_free_port) drop=$(net_free_port) dead=$(net_free_port)
	: >"$NET_DIR/pids"
	if command -v trace-cmd >/dev/null; then
		trace-cmd listen -p "$tc" -d "$NET_DIR/tc" >"$NET_DIR/tc.log" 2>&1 &
		echo $! >>"$NET_DIR/pids"
	else
		tc=0
	fi
	if [ -x "$NET_HOST_BIN" ]; then
		"$NET_HOST_BIN" tr-cat --listen "127.0.0.1:$tb" -o "$NET_DIR/tb" >"$NET_DIR/tb.log" 2>&1 &
		echo $! >>"$NET_DIR/pids"
		# The link fails 4 s after the sender's first page arrived.
		TRBOX_LISTEN_DROP_MS=4000 "$NET_HOST_BIN" tr-cat --listen "127.0.0.1:$drop" -o "$NET_DIR/drop" >"$NET_DIR/drop.log" 2>&1 &
		echo $! >>"$NET_DIR/pids"
	else
		tb=0 drop=0
	fi
	for p in $tc $tb $drop; do
		[ "$p" = 0 ] || net_wait_port "$p" || say "network: nothing listens on port $p"
	done
	echo "$tc $tb $drop $dead" >"$NET_DIR/ports"
	NET_APPEND=" trbox.net=$tc,$tb,$drop,$dead"
	say "network: listeners on 127.0.0.1 (trace-cmd listen $tc, tr-cat --listen $tb, dropping $drop)"
}

net_stop() {
	[ "$NET" = 1 ] && [ -s "$NET_DIR/pids" ] || return 0
	local p i f whole
	# trace-cmd listen writes its file 2 s after its sender's end, later
	# on a loaded host (ci28 read one cut short at 2 s): wait until each
	# file it wrote reads whole, 20 s at most; no file: 2 s, as before.
	for i in $(seq 1 40); do
		sleep 0.5
		whole=1
		for f in "$NET_DIR"/tc/*.dat; do
			[ -e "$f" ] || { [ "$i" -ge 4 ] || whole=0; continue; }
			"$NET_HOST_BIN" tr-cat "$f" >/dev/null 2>&1 || whole=0
		done
		[ "$whole" = 0 ] || break
	done
	while read -r p; do kill -INT "$p" 2>/dev/null; done <"$NET_DIR/pids"
	# Ended by now, or killed.
	sleep 0.5
	while read -r p; do
		kill -0 "$p" 2>/dev/null && kill -KILL "$p"
		wait "$p" 2>/dev/null || true
	done <"$NET_DIR/pids"
	: >"$NET_DIR/pids"
}

# net_compare WHAT FILE READER: FILE as READER (report | trbox) reads it,
# against the board's local recording of the same workload.
net_compare() {
	local what=$1 f=$2 how=$3 txt=$NET_DIR/$1.txt
	if [ -z "$f" ] || [ ! -s "$f" ]; then
		bad "network: $what: no file from the listener (its log: $(tail -n 2 "$NET_DIR/${what%%-*}.log" 2>/dev/null | tr '\n' ' '))"
		return
	fi
	case "$how" in
	report) trace-cmd report -i "$f" >"$txt" 2>"$txt.err" ;;
	*) "$NET_HOST_BIN" tr-cat "$f" >"$txt" 2>"$txt.err" ;;
	esac || {
		bad "network: $what: reading ${f##*/} failed: $(head -n 2 "$txt.err")"
		return
	}
	shape_of "$txt" >"$txt.shape"
	if [ -s "$NET_DIR/local.shape" ] && cmp -s "$NET_DIR/local.shape" "$txt.shape"; then
		ok "network: $what: the same $(wc -l <"$txt.shape") events (names, pids) as the board's tr-cat -o"
	else
		bad "network: $what: not the events of the board's tr-cat -o ($(wc -l <"$txt.shape") vs $(wc -l <"$NET_DIR/local.shape"))"
		diff "$NET_DIR/local.shape" "$txt.shape" | head -n 10 | indent
	fi
}

net_check() {
	[ "$NET" = 1 ] && [ -d "$NET_DIR" ] || return 0
	local local_n f want got
	local_n=$(line_marked 'net: local')
	[ -n "$local_n" ] || return 0
	output_of "$local_n" >"$NET_DIR/local.txt"
	shape_of "$NET_DIR/local.txt" >"$NET_DIR/local.shape"
	if [ ! -s "$NET_DIR/local.shape" ]; then
		bad "network: the board's local recording has no events"
		return
	fi
	if command -v trace-cmd >/dev/null; then
		f=$(ls "$NET_DIR"/tc/trace.*.dat 2>/dev/null | head -n1)
		net_compare tc-report "$f" report
		net_compare tc-trcat "$f" trbox
	fi
	if [ -x "$NET_HOST_BIN" ]; then
		f=$(ls "$NET_DIR"/tb/trace.*.dat 2>/dev/null | head -n1)
		net_compare tb-trcat "$f" trbox
		command -v trace-cmd >/dev/null && net_compare tb-report "$f" report
		# The dropped link: what arrived reads, at most the events the
		# sender counted as sent (its summary, the line marked 'net: drop'):
		# what was in flight when the link failed (socket buffers) is lost,
		# which the sender cannot know.
		f=$(ls "$NET_DIR"/drop/trace.*.dat 2>/dev/null | head -n1)
		want=$(output_of "$(line_marked 'net: drop')" | grep -o ': [0-9]* events, ' | grep -o '[0-9][0-9]*' | head -n1)
		if [ -n "$f" ] && "$NET_HOST_BIN" tr-cat "$f" >"$NET_DIR/drop.txt" 2>"$NET_DIR/drop.err" &&
			got=$(events_of "$NET_DIR/drop.txt" | wc -l) && [ "$got" -gt 0 ] && [ "$got" -le "${want:-0}" ]; then
			ok "network: dropped link: the listener's file reads: $got of the $want events the sender sent"
		else
			bad "network: dropped link: ${got:-no} events read back, ${want:-?} sent ($(tail -n 2 "$NET_DIR/drop.log" | tr '\n' ' '))"
		fi
	fi
}

# The tour (make qemu): one `tr-cat --listen` on the host for its -N line,
# on the port given to the guest as the second of trbox.net= (NET_TB).
tour_net_start() {
	[ "$NET" = 1 ] || return 0
	rm -rf "$NET_DIR"
	mkdir -p "$NET_DIR/tb"
	: >"$NET_DIR/pids"
	[ -x "$NET_HOST_BIN" ] || die "no host trbox at ${NET_HOST_BIN#"$REPO"/} for the tour's listener: run 'make build'"
	local tb
	tb=$(net_free_port)
	"$NET_HOST_BIN" tr-cat --listen "127.0.0.1:$tb" -o "$NET_DIR/tb" >"$NET_DIR/tb.log" 2>&1 &
	echo $! >>"$NET_DIR/pids"
	net_wait_port "$tb" || say "network: nothing listens on port $tb"
	NET_APPEND=" trbox.net=0,$tb,0,0"
	say "network: tr-cat --listen 127.0.0.1:$tb on the host, 10.0.2.2:$tb from the board"
}

# What the tour's listener received (after net_stop): the file's name.
tour_net_file() {
	ls "$NET_DIR"/tb/trace.*.dat 2>/dev/null | head -n1
}
