#!/usr/bin/env bash
# Install what the qemu board harness needs on a Debian (bookworm) host:
# qemu for arm and x86, cpio, python3 (net.sh's free ports, fdt-idle.py's
# device tree), and the dpkg foreign architectures that let
# `apt-get download` fetch the arm64/armhf kernels and busyboxes.
# Idempotent; does nothing when everything is there. Needs root (or sudo).
set -euo pipefail

SUDO=
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

need=()
for pair in qemu-system-aarch64:qemu-system-arm qemu-system-arm:qemu-system-arm \
	qemu-system-x86_64:qemu-system-x86 cpio:cpio python3:python3; do
	cmd=${pair%%:*} pkg=${pair#*:}
	command -v "$cmd" >/dev/null 2>&1 || need+=("$pkg")
done
# qemu-system-x86 needs the SeaBIOS image to boot a PC.
[ -e /usr/share/seabios/bios-256k.bin ] || need+=(seabios)

added=0
foreign=" $(dpkg --print-foreign-architectures | tr '\n' ' ') "
for a in arm64 armhf; do
	if [[ $foreign != *" $a "* ]]; then
		echo "[qemu setup] dpkg --add-architecture $a" >&2
		$SUDO dpkg --add-architecture "$a"
		added=1
	fi
done

# One refresh when we changed the architectures or have to install; a
# partial failure (a mirror mid-sync) is not fatal: what we need is usually
# in the lists that did download.
if [ "$added" = 1 ] || [ ${#need[@]} -gt 0 ] || ! apt-cache show linux-image-arm64:arm64 >/dev/null 2>&1; then
	echo "[qemu setup] apt-get update" >&2
	$SUDO apt-get update -q >&2 || echo "[qemu setup] warning: apt-get update reported errors; going on" >&2
fi

if [ ${#need[@]} -gt 0 ]; then
	mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
	echo "[qemu setup] apt-get install ${need[*]}" >&2
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >&2
fi
