#!/usr/bin/env bash
# README command 2: install what is needed, build, and run every test
# (unit, golden, run, and the QEMU end-to-end stage).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ctest --test-dir "${DW_BUILD_DIR:-build}" --output-on-failure --timeout 900 "$@"
