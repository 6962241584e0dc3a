#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds drivewatch into ./build (or $DW_BUILD_DIR).
# A new tree uses Ninja when it is installed (install-deps.sh --tests
# installs it; the package test's tree then uses it too); an existing tree
# keeps the generator it was made with.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${DW_BUILD_DIR:-build}
source scripts/ccache.sh
dw_ccache "$PWD"
generator=()
if [[ ! -f $build/CMakeCache.txt ]] && command -v ninja >/dev/null; then
  generator=(-G Ninja)
fi
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=${DW_BUILD_TYPE:-RelWithDebInfo} "${DW_CCACHE_ARGS[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
