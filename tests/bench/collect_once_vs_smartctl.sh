#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What one `drivewatch collect --once` with only the health probe costs, per
# process, against one `smartctl -j -x` on the same controller: both run in
# a QEMU guest (tests/vm harness, TCG) with one emulated controller and one
# namespace, interleaved in ROUNDS rounds of RUNS runs each (drivewatch,
# smartctl, drivewatch, ...), so drift of the machine hits both alike.
# Prints each round, the medians and the ratio drivewatch/smartctl, and
# what `drivewatch --version` (start-up alone) costs the same way. With a
# BASELINE_BIN (say, main's build copied to /tmp) that binary runs in the
# same rounds too, so a change is compared with what it replaces on the
# same noisy machine. With strace on the host it is copied in and one run
# of each kind is traced (strace-c.txt, strace-tt.txt in the output
# directory); with valgrind, one run of each is profiled (callgrind.*,
# summarised by code_footprint.py). Not run by ctest.
#   usage (root): tests/bench/collect_once_vs_smartctl.sh DRIVEWATCH_BIN [ROUNDS] [RUNS] [BASELINE_BIN]
#   e.g.          tests/bench/collect_once_vs_smartctl.sh build/exporter/drivewatch 5 10 /tmp/drivewatch-main
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DRIVEWATCH_BIN=$(realpath "${1:?usage: $0 DRIVEWATCH_BIN [ROUNDS] [RUNS] [BASELINE_BIN]}")
rounds=${2:-5}
runs=${3:-10}
baseline=${4:+$(realpath "$4")}
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
printf 'ROUNDS=%s\nRUNS=%s\nBASELINE=%s\n' "$rounds" "$runs" "${baseline:+1}" >"$work/bench.env"
extra="$work/bench.env:/etc/dwvm/bench.env"
# ldconfig goes where the guest script looks for it: without the cache it
# writes, the loader probes every hwcaps directory for each library.
ldconfig_bin=$(command -v ldconfig || echo /sbin/ldconfig)
[[ -x $ldconfig_bin ]] || { echo "no ldconfig on the host" >&2; exit 1; }
for pair in "$(command -v smartctl):/usr/bin/smartctl" "$(command -v strace || true):/usr/bin/strace" \
	"$ldconfig_bin:/sbin/ldconfig" "${baseline:-}:/usr/bin/drivewatch-baseline"; do
	bin=${pair%%:*}
	[[ -n $bin ]] || continue
	extra+=" $pair"
	for lib in $(ldd "$bin" | awk '/=> \//{print $3}'); do extra+=" $lib:$lib"; done
done
# With valgrind on the host, one run of each is profiled with callgrind in
# the guest: under TCG a short process costs about its distinct code (all
# of it translated afresh per process) plus its executed instructions.
vg_lib=/usr/libexec/valgrind
if [[ -x /usr/bin/valgrind.bin && -x $vg_lib/callgrind-amd64-linux ]]; then
	for f in /usr/bin/valgrind.bin $vg_lib/callgrind-amd64-linux $vg_lib/vgpreload_core-amd64-linux.so \
		$vg_lib/default.supp; do
		extra+=" $f:$f"
	done
fi
DW_VM_EXTRA_FILES="$extra" vm_build_initramfs "$work/initrd.gz" "$here/collect_once_guest.sh" ""
vm_start "$out" "$work/initrd.gz"
per_run=3; [[ -z $baseline ]] || per_run=5
vm_wait_marker bench-done $((120 + rounds * runs * per_run)) >/dev/null
vm_wait_exit 60 >/dev/null || true
vm_extract_files "$VM_LOG" "$out" >/dev/null || true

tr -d '\r' <"$VM_LOG" | sed -n 's/.*DWVM-MARK: bench-round //p' | awk -v runs="$runs" '
	{ r[NR] = $1; d[NR] = $2; s[NR] = $3; v[NR] = $4; sv[NR] = $5; c[NR] = $6; n[NR] = $7
	  base = (NF >= 9); bd[NR] = $8; bv[NR] = $9
	  printf "round %d: collect --once %7.1f ms   smartctl -j -x %7.1f ms   ratio %.2f   (--version: drivewatch %7.1f ms, smartctl %7.1f ms)", $1, $2, $3, $2 / $3, $4, $5
	  if (base) printf "   baseline: collect --once %7.1f ms, ratio %.2f, --version %7.1f ms", $8, $8 / $3, $9
	  printf "\n" }
	function median(a, n,   i, j, t, b) {
		for (i = 1; i <= n; i++) b[i] = a[i]
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t }
		return (n % 2) ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2
	}
	END {
		if (NR == 0) { print "no rounds measured"; exit 1 }
		dm = median(d, NR); sm = median(s, NR); vm = median(v, NR); svm = median(sv, NR)
		cm = median(c, NR); nm = median(n, NR)
		printf "median over %d rounds of %d runs: collect --once %.1f ms, smartctl -j -x %.1f ms\n", NR, runs, dm, sm
		printf "RATIO drivewatch collect --once / smartctl -j -x = %.2f (below 1.00: the one-shot costs less than one smartctl run)\n", dm / sm
		printf "drivewatch by stage: --version %.1f ms, check-config %.1f ms, collect --once without probes %.1f ms, with the health probe %.1f ms\n", vm, cm, nm, dm
		printf "start-up alone (--version): drivewatch %.1f ms, %.0f%% of collect --once; smartctl %.1f ms, %.0f%% of smartctl -j -x\n", vm, 100 * vm / dm, svm, 100 * svm / sm
		if (base) {
			bdm = median(bd, NR); bvm = median(bv, NR)
			printf "baseline: collect --once %.1f ms (ratio to smartctl %.2f), --version %.1f ms; this binary / baseline: collect --once %.2f, --version %.2f\n", bdm, bdm / sm, bvm, dm / bdm, vm / bvm
		}
	}'
for f in callgrind.drivewatch callgrind.smartctl; do
	[[ -s $out/$f ]] && python3 "$here/code_footprint.py" "$out/$f" 0
done
echo "artefacts (once.prom, once.err, strace-*.txt, callgrind.*, console.log) in $out"
