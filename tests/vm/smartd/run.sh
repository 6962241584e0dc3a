#!/usr/bin/env bash
# The "smartd" VM scenario on its own (ctest: vm_smartd): the real
# drivewatch in a QEMU guest with the self-test, error log and persistent
# event log probes. See host.sh for the checks.
#
#   DRIVEWATCH_BIN=build/exporter/drivewatch tests/vm/smartd/run.sh
#
# Artefacts go to $DW_VM_OUT/smartd (default /tmp/drivewatch-vm-out).
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
	((rc == 0)) || echo "[dwvm] smartd FAILED (rc=$rc); artefacts in $OUT/smartd" >&2
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[[ -n ${DRIVEWATCH_BIN:-} ]] || { dw_die smartd "set DRIVEWATCH_BIN to the drivewatch binary"; exit 1; }
mkdir -p "$OUT"
rm -rf "$OUT/smartd"
BUILD_DIR=$(mktemp -d "${TMPDIR:-/tmp}/dwvm-smartd.XXXXXX")
t=$(dw_now)
vm_prepare with-prometheus
dw_log "prepare $(dw_elapsed "$t")s; kernel $DW_VM_KVER"
smartd_run "$OUT/smartd" "$BUILD_DIR"
echo "[dwvm] smartd PASSED; artefacts in $OUT/smartd" >&2
