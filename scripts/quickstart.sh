#!/usr/bin/env bash
# README command 1: install what is needed, build, and run drivewatch with
# the built-in defaults plus one read latency target: a small test file in
# a temporary directory, so that even a machine without NVMe drives shows
# real latency metrics (the production default creates no files). Stop it
# with Ctrl-C; the temporary directory is removed then.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
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
"${DW_BUILD_DIR:-build}/exporter/drivewatch" --config.file="$work/quickstart.toml" "$@"
