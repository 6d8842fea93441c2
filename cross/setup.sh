#!/usr/bin/env bash
# Install everything the build and tests need on a fresh Debian machine.
# Idempotent: skips what is already there.
set -euo pipefail
