#!/usr/bin/env bash
# README command 1: install what is needed, build, and run drivewatch with
# its built-in default config. Stop it with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
echo
echo "drivewatch is starting; its metrics will be at http://localhost:9647/metrics"
echo
exec "${DW_BUILD_DIR:-build}/exporter/drivewatch" "$@"
