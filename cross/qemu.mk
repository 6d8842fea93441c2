# qemu board harness (owned by the board-harness work). Placeholder targets.
.PHONY: qemu qemu-shell qemu-test
qemu:
qemu-shell:
qemu-test:
