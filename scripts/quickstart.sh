#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README command 1: install what building and running need (not the test
# tools), build the daemon alone (no tests, no benchmarks) into its own
# build directory, and run it with the built-in defaults plus one read
# latency target: a small test file in a temporary directory, so that even
# a machine without NVMe drives shows real latency metrics (the production
# default creates no files). Stop it with Ctrl-C; the temporary directory is
# removed then. Extra arguments go to drivewatch.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Apart from build/ (scripts/build.sh, scripts/test.sh), which builds the
# tests: configuring one directory both ways would rebuild it every time.
# -O2 as RelWithDebInfo but without -g: debug info is a third of the
# compile time.
build=${DW_QUICKSTART_BUILD_DIR:-build-quickstart}
cmake -S . -B "$build" -DDRIVEWATCH_BUILD_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" >/dev/null
cmake --build "$build" -j"$(nproc)" --target drivewatch
# /var/tmp rather than /tmp: O_DIRECT needs a disk file system (tmpfs takes
# it only from kernel 6.6 on).
work=$(mktemp -d /var/tmp/drivewatch-quickstart.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat >"$work/quickstart.toml" <<TOML
# Written by scripts/quickstart.sh: the built-in defaults plus a 64 MiB
# test file read at 10 and 100 IOPS, 15 s each.
[state]
directory = "$work/state"

[probes.read_latency]
rate_period = "15s"
targets = [
  { name = "quickstart", directory = "$work", file_size = "64MiB" },
]
TOML
echo
echo "drivewatch is starting with $work/quickstart.toml;"
echo "its metrics will be at http://localhost:9647/metrics"
echo "(read latency: curl -s localhost:9647/metrics | grep drivewatch_read_latency_window_seconds)"
echo
"$build/exporter/drivewatch" --config.file="$work/quickstart.toml" "$@"
