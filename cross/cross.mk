# Cross builds (owned by the cross-build work). Placeholder targets.
.PHONY: cross cross-test size
cross:
cross-test:
size:
