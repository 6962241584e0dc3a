#!/usr/bin/env bash
# The "power" VM scenario on its own (ctest: vm_power): the real
# drivewatch in a QEMU guest reading its namespaces in short rate turns;
# power at 10 IOPS and idle from the power state estimate. See host.sh for
# the checks.
#
#   DRIVEWATCH_BIN=build/exporter/drivewatch tests/vm/power/run.sh
#
# Artefacts go to $DW_VM_OUT/power (default /tmp/drivewatch-vm-out).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
# shellcheck source=../lib.sh
. "$here/../lib.sh"
# shellcheck source=host.sh
. "$here/host.sh"

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
	((rc == 0)) || echo "[dwvm] power FAILED (rc=$rc); artefacts in $OUT/power" >&2
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[[ -n ${DRIVEWATCH_BIN:-} ]] || { dw_die power "set DRIVEWATCH_BIN to the drivewatch binary"; exit 1; }
mkdir -p "$OUT"
rm -rf "$OUT/power"
BUILD_DIR=$(mktemp -d "${TMPDIR:-/tmp}/dwvm-power.XXXXXX")
t=$(dw_now)
vm_prepare with-prometheus
dw_log "prepare $(dw_elapsed "$t")s; kernel $DW_VM_KVER"
power_run "$OUT/power" "$BUILD_DIR"
echo "[dwvm] power PASSED; artefacts in $OUT/power" >&2
