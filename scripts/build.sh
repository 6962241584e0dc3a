#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds drivewatch into ./build (or $DW_BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${DW_BUILD_DIR:-build}
source scripts/ccache.sh
dw_ccache "$PWD"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=${DW_BUILD_TYPE:-RelWithDebInfo} "${DW_CCACHE_ARGS[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
