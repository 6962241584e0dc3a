#!/usr/bin/env bash
# The "latency" VM scenario on its own (ctest: vm_latency): the real
# drivewatch's read latency probe in a QEMU guest on emulated namespaces,
# one of them failing reads (blkdebug), one too slow for the timeout
# (null-co). See host.sh for the checks.
#
#   DRIVEWATCH_BIN=build/exporter/drivewatch tests/vm/latency/run.sh
#
# Artefacts go to $DW_VM_OUT/latency (default /tmp/drivewatch-vm-out).
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
	((rc == 0)) || echo "[dwvm] latency FAILED (rc=$rc); artefacts in $OUT/latency" >&2
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[[ -n ${DRIVEWATCH_BIN:-} ]] || { dw_die latency "set DRIVEWATCH_BIN to the drivewatch binary"; exit 1; }
mkdir -p "$OUT"
rm -rf "$OUT/latency"
BUILD_DIR=$(mktemp -d "${TMPDIR:-/tmp}/dwvm-latency.XXXXXX")
t=$(dw_now)
vm_prepare with-prometheus
dw_log "prepare $(dw_elapsed "$t")s; kernel $DW_VM_KVER"
latency_run "$OUT/latency" "$BUILD_DIR"
echo "[dwvm] latency PASSED; artefacts in $OUT/latency" >&2
