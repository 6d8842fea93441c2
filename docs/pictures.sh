#!/usr/bin/env bash
# The README's two pictures, made again (make pictures):
#   docs/img/tr-graph-flame.png  docs/img/tr-graph-flame.svg (tr-graph --svg)
#                                as Chromium renders it (headless --screenshot)
#   docs/img/kernelshark.png     a trace.dat written by `tr-cat -o` on this
#                                machine's live tracefs, opened in KernelShark
#                                under Xvfb (screenshot by xwd)
# Needs Debian's chromium, xvfb, kernelshark, x11-apps (xwd), imagemagick and
# optipng (apt-get install --no-install-recommends ...; from the machine's own
# sources), root for the recording, and the host build (make).
set -euo pipefail
cd "$(dirname "$0")/.."
img=docs/img
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for t in chromium Xvfb kernelshark xwd convert optipng setpriv; do
	command -v "$t" >/dev/null || { echo "pictures: $t missing" >&2; exit 1; }
done

# 1. The flame graph, at its own size (1200 x the SVG's height).
h=$(sed -n 's/.*<svg [^>]*height="\([0-9]*\)".*/\1/p' $img/tr-graph-flame.svg | head -1)
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,"$h" \
	--screenshot="$tmp/flame.png" "file://$PWD/$img/tr-graph-flame.svg" >/dev/null 2>&1
optipng -quiet -o5 -out $img/tr-graph-flame.png "$tmp/flame.png"
echo "pictures: $img/tr-graph-flame.png ($(chromium --version))"

# 2. A recording of one second of a busy machine (scheduler and IRQ events),
#    in KernelShark. The tests' lock keeps other trbox runs off the buffer.
( dd if=/dev/zero of=/dev/null bs=512 count=2000000 status=none & sleep 1; wait ) &
flock /tmp/trbox-tracefs.lock target/release/trbox tr-cat -o "$tmp/trace.dat" \
	-e sched:sched_switch,sched:sched_wakeup,irq:irq_handler_entry,irq:irq_handler_exit -t 1
wait
chmod 755 "$tmp"; chmod 644 "$tmp/trace.dat"
mkdir -m 777 "$tmp/home"
Xvfb :77 -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 &
x=$!
sleep 2
# Not as root: KernelShark would open with a warning about it.
DISPLAY=:77 HOME=$tmp/home XDG_RUNTIME_DIR=$tmp/home setpriv --reuid=65534 --regid=65534 --clear-groups \
	kernelshark "$tmp/trace.dat" >/dev/null 2>&1 &
k=$!
sleep 12
DISPLAY=:77 xwd -root -silent -out "$tmp/ks.xwd"
kill $k
kill $x
# The window (at the screen's top left) only.
convert "$tmp/ks.xwd" -crop 648x436+0+0 +repage "$tmp/ks.png"
optipng -quiet -o5 -out $img/kernelshark.png "$tmp/ks.png"
echo "pictures: $img/kernelshark.png (kernelshark $(dpkg-query -W -f '${Version}' kernelshark))"
