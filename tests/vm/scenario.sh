#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs one self-contained VM scenario on its own: the real drivewatch in a
# QEMU guest, checked by tests/vm/NAME/host.sh, whose NAME_run does the work.
# ctest runs each as vm_NAME.
#
#   DRIVEWATCH_BIN=build/exporter/drivewatch tests/vm/scenario.sh NAME
#
# NAME: thermal (temperature thresholds, the temperature AEN path,
# unsupported features), latency (read latency on emulated namespaces, one
# failing reads through blkdebug, one too slow for the timeout through
# null-co), power (power at 10 IOPS and idle from the power state estimate),
# smartd (self-test, error log and persistent event log probes), aging
# (heavy phases by hand: identity interlocks, SLC cache, abort on warning),
# retention (a data-retention study across a guest power-off: write in
# boot 1, blocks damaged on the host, the daemon's verify in boot 2).
# liveproof: every dashboard and rule expression against a real Prometheus.
# unplug: a controller hot-unplugged mid SMART read and mid read-latency
# probe, several times (fault 1 of docs/faults.md).
# Artefacts go to $DW_VM_OUT/NAME (default /tmp/drivewatch-vm-out).
set -euo pipefail
name=${1:?usage: scenario.sh NAME (thermal, latency, power or smartd)}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
[[ -f $here/$name/host.sh ]] || { echo "scenario.sh: no scenario $here/$name/host.sh" >&2; exit 2; }
# shellcheck source=lib.sh
. "$here/lib.sh"
vm_priority
# shellcheck disable=SC1090
. "$here/$name/host.sh"

if [[ -z ${DRIVEWATCH_BIN:-} && -x ${DW_BUILD_DIR:-$repo/build}/exporter/drivewatch ]]; then
	DRIVEWATCH_BIN=${DW_BUILD_DIR:-$repo/build}/exporter/drivewatch
fi
OUT=${DW_VM_OUT:-${TMPDIR:-/tmp}/drivewatch-vm-out}
BUILD_DIR=
cleanup() {
	local rc=$?
	vm_stop || true
	prom_stop || true
	[[ -n $BUILD_DIR ]] && rm -rf "$BUILD_DIR"
	((rc == 0)) || echo "[dwvm] $name FAILED (rc=$rc); artefacts in $OUT/$name" >&2
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[[ -n ${DRIVEWATCH_BIN:-} ]] || { dw_die "$name" "set DRIVEWATCH_BIN to the drivewatch binary"; exit 1; }
mkdir -p "$OUT"
rm -rf "${OUT:?}/$name"
BUILD_DIR=$(mktemp -d "${TMPDIR:-/tmp}/dwvm-$name.XXXXXX")
t=$(dw_now)
vm_prepare with-prometheus
dw_log "prepare $(dw_elapsed "$t")s; kernel $DW_VM_KVER"
"${name}_run" "$OUT/$name" "$BUILD_DIR"
echo "[dwvm] $name PASSED; artefacts in $OUT/$name" >&2
