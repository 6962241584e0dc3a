#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What one `drivewatch collect --once` with only the health probe costs, per
# process, against one `smartctl -j -x` on the same controller: both run in
# a QEMU guest (tests/vm harness, TCG) with one emulated controller and one
# namespace, interleaved in ROUNDS rounds of RUNS runs each (drivewatch,
# smartctl, drivewatch, ...), so drift of the machine hits both alike.
# Prints each round, the medians and the ratio drivewatch/smartctl, and
# what `drivewatch --version` (start-up alone) costs the same way. With
# strace on the host it is copied in and one run of each kind is traced
# (strace-c.txt, strace-tt.txt in the output directory). Not run by ctest.
#   usage (root): tests/bench/collect_once_vs_smartctl.sh DRIVEWATCH_BIN [ROUNDS] [RUNS]
#   e.g.          tests/bench/collect_once_vs_smartctl.sh build/exporter/drivewatch 5 10
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DRIVEWATCH_BIN=$(realpath "${1:?usage: $0 DRIVEWATCH_BIN [ROUNDS] [RUNS]}")
rounds=${2:-5}
runs=${3:-10}
export DRIVEWATCH_BIN
# shellcheck source=../vm/lib.sh
. "$here/../vm/lib.sh"
command -v smartctl >/dev/null || dw_need_pkgs smartmontools
out=${DW_VM_OUT:-${TMPDIR:-/tmp}/drivewatch-vm-out}/collect_once_bench
work=$(mktemp -d "${TMPDIR:-/tmp}/dw-once-bench.XXXXXX")
trap 'vm_stop || true; rm -rf "$work"' EXIT
mkdir -p "$out"

# One controller with one namespace, as the comparison asks.
vm_disks() {
	truncate -s 64M "$1/n0.img"
	DW_VM_DEVICE_ARGS=(
		-blockdev "driver=file,filename=$1/n0.img,node-name=n0-file"
		-blockdev "driver=raw,file=n0-file,node-name=n0"
		-device "nvme,id=c0,serial=DWSN0001,drive=n0")
	DW_VM_NCTRL=1
	DW_VM_NNS=1
}

vm_prepare
printf 'ROUNDS=%s\nRUNS=%s\n' "$rounds" "$runs" >"$work/bench.env"
extra="$work/bench.env:/etc/dwvm/bench.env"
for bin in "$(command -v smartctl)" "$(command -v strace || true)" "$(command -v ldconfig || echo /sbin/ldconfig)"; do
	[[ -n $bin ]] || continue
	extra+=" $bin:/usr/bin/$(basename "$bin")"
	for lib in $(ldd "$bin" | awk '/=> \//{print $3}'); do extra+=" $lib:$lib"; done
done
DW_VM_EXTRA_FILES="$extra" vm_build_initramfs "$work/initrd.gz" "$here/collect_once_guest.sh" ""
vm_start "$out" "$work/initrd.gz"
vm_wait_marker bench-done $((120 + rounds * runs * 3)) >/dev/null
vm_wait_exit 60 >/dev/null || true
vm_extract_files "$VM_LOG" "$out" >/dev/null || true

tr -d '\r' <"$VM_LOG" | sed -n 's/.*DWVM-MARK: bench-round //p' | awk -v runs="$runs" '
	{ r[NR] = $1; d[NR] = $2; s[NR] = $3; v[NR] = $4; sv[NR] = $5; c[NR] = $6; n[NR] = $7
	  printf "round %d: collect --once %7.1f ms   smartctl -j -x %7.1f ms   ratio %.2f   (--version: drivewatch %7.1f ms, smartctl %7.1f ms)\n", $1, $2, $3, $2 / $3, $4, $5 }
	function median(a, n,   i, j, t, b) {
		for (i = 1; i <= n; i++) b[i] = a[i]
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t }
		return (n % 2) ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2
	}
	END {
		if (NR == 0) { print "no rounds measured"; exit 1 }
		dm = median(d, NR); sm = median(s, NR); vm = median(v, NR); svm = median(sv, NR)
		cm = median(c, NR); nm = median(n, NR)
		printf "median over %d rounds of %d runs: collect --once %.1f ms, smartctl -j -x %.1f ms, ratio drivewatch/smartctl %.2f\n", NR, runs, dm, sm, dm / sm
		printf "drivewatch by stage: --version %.1f ms, check-config %.1f ms, collect --once without probes %.1f ms, with the health probe %.1f ms\n", vm, cm, nm, dm
		printf "start-up alone (--version): drivewatch %.1f ms, %.0f%% of collect --once; smartctl %.1f ms, %.0f%% of smartctl -j -x\n", vm, 100 * vm / dm, svm, 100 * svm / sm
	}'
echo "artefacts (once.prom, once.err, strace-*.txt, console.log) in $out"
