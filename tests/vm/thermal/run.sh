#!/usr/bin/env bash
# The "thermal" VM scenario on its own (ctest: vm_thermal): the real
# drivewatch in a QEMU guest, temperature thresholds, the temperature AEN
# path and unsupported features. See host.sh for the checks.
#
#   DRIVEWATCH_BIN=build/exporter/drivewatch tests/vm/thermal/run.sh
#
# Artefacts go to $DW_VM_OUT/thermal (default /tmp/drivewatch-vm-out).
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
	((rc == 0)) || echo "[dwvm] thermal FAILED (rc=$rc); artefacts in $OUT/thermal" >&2
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[[ -n ${DRIVEWATCH_BIN:-} ]] || { dw_die thermal "set DRIVEWATCH_BIN to the drivewatch binary"; exit 1; }
mkdir -p "$OUT"
rm -rf "$OUT/thermal"
BUILD_DIR=$(mktemp -d "${TMPDIR:-/tmp}/dwvm-thermal.XXXXXX")
t=$(dw_now)
vm_prepare with-prometheus
dw_log "prepare $(dw_elapsed "$t")s; kernel $DW_VM_KVER"
thermal_run "$OUT/thermal" "$BUILD_DIR"
echo "[dwvm] thermal PASSED; artefacts in $OUT/thermal" >&2
