#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Driver of the drivewatch VM harness.
#
#   tests/vm/run.sh capture    boot, run nvme-cli in the guest, save fixtures
#                              into tests/fixtures/qemu/ (DW_FIXTURE_OUT)
#   tests/vm/run.sh selftest   boot, check hostfwd + Prometheus scrape of a
#                              guest httpd, QMP qom-set smart_critical_warning,
#                              QMP device_del/device_add of a controller
#   tests/vm/run.sh e2e        the real drivewatch (DRIVEWATCH_BIN) as the
#                              guest's daemon, scraped by a real Prometheus;
#                              assertions A1-A5 of e2e/host.sh
#   tests/vm/run.sh all        all three (default)
#
# Artefacts (console.log, qemu.stderr, qemu.cmdline, dmesg.txt, decoded
# files, prometheus.log, timings.txt) go to $DW_VM_OUT/<scenario>
# (default /tmp/drivewatch-vm-out).  Other knobs: see lib.sh.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
vm_priority

scenario=${1:-all}
# The drivewatch binary for "e2e" (ctest passes it; else the default build).
if [[ -z ${DRIVEWATCH_BIN:-} && -x ${DW_BUILD_DIR:-$repo/build}/exporter/drivewatch ]]; then
	DRIVEWATCH_BIN=${DW_BUILD_DIR:-$repo/build}/exporter/drivewatch
fi
OUT=${DW_VM_OUT:-${TMPDIR:-/tmp}/drivewatch-vm-out}
FIXTURES=${DW_FIXTURE_OUT:-$repo/tests/fixtures/qemu}
GUEST_SERVICE=${DW_VM_GUEST_SERVICE:-'exec httpd -f -v -p 0.0.0.0:${DWVM_PORT:-9647} -h /www'}

cleanup() {
	local rc=$?
	vm_stop || true
	prom_stop || true
	rm -rf "${BUILD_DIR:-/nonexistent-dwvm}"
	if ((rc != 0)); then
		[[ -n ${E2E_STEP:-} ]] && echo "[dwvm] e2e stopped during step: $E2E_STEP" >&2
		echo "[dwvm] run.sh $scenario FAILED (rc=$rc); artefacts in $OUT" >&2
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

timing() { # timing KEY VALUE
	printf '%-28s %s\n' "$1" "$2" | tee -a "$OUT/timings.txt" >&2
}

# boot_log_times DIR: guest-side uptime markers -> timings.txt
boot_log_times() {
	local m v
	for m in init-start modules-loaded net-up nvme-ready poweroff; do
		v=$(vm_markers | sed -n "s/^DWVM-MARK: $m \([0-9.]*\).*/\1/p" | head -n1)
		[[ -n $v ]] && timing "  guest uptime at $m" "${v}s"
	done
	return 0
}

check_rc() { # check_rc: the guest scenario must have reported rc 0
	local rc
	rc=$(vm_markers | sed -n 's/^DWVM-MARK: scenario-rc \([0-9]*\).*/\1/p' | head -n1)
	[[ $rc == 0 ]] || { dw_die "$1" "guest scenario rc='${rc:-none}'; failures: $(vm_markers | grep -a '^DWVM-MARK: fail' | head -n 3 | tr '\n' '|')"; return 1; }
}

run_capture() {
	local out=$OUT/capture t0 wall f n
	rm -rf "$out"
	mkdir -p "$out"
	t0=$(dw_now)
	vm_build_initramfs "$BUILD_DIR/capture.cpio.gz" "$here/guest/capture.sh" ""
	timing "capture: initramfs build" "$(dw_elapsed "$t0")s"
	vm_start "$out" "$BUILD_DIR/capture.cpio.gz"
	vm_wait_marker nvme-ready 120 >/dev/null
	timing "capture: boot to nvme-ready" "$(dw_elapsed "$VM_T0")s"
	vm_wait_marker capture-done 120 >/dev/null
	wall=$(vm_wait_exit 60)
	timing "capture: qemu start->exit" "${wall}s"
	boot_log_times
	check_rc capture
	vm_extract_files "$VM_LOG" "$out/files" >"$out/files.list"
	mkdir -p "$FIXTURES"
	n=0
	while read -r f; do
		case $f in
		id-ctrl-* | id-ns-* | smart-log-* | error-log-* | list.* | sysfs.txt)
			cp "$out/files/$f" "$FIXTURES/$f"
			n=$((n + 1))
			;;
		esac
	done <"$out/files.list"
	# The fixtures other tests depend on must all be there.
	for f in id-ctrl-DWSN0001.bin:4096 id-ctrl-DWSN0002.bin:4096 smart-log-DWSN0001.bin:512 \
		smart-log-DWSN0002.bin:512 id-ns-DWSN0001-n1.bin:4096 id-ns-DWSN0002-n1.bin:4096 \
		id-ns-DWSN0002-n2.bin:4096; do
		[[ $(stat -c %s "$FIXTURES/${f%%:*}" 2>/dev/null) == "${f#*:}" ]] ||
			{ dw_die capture "fixture ${f%%:*} missing or not ${f#*:} bytes"; return 1; }
	done
	for f in "$FIXTURES"/*.json; do
		dw_python -c 'import json,sys; json.load(open(sys.argv[1]))' "$f" ||
			{ dw_die capture "$f is not valid JSON"; return 1; }
	done
	dw_log "capture: $n fixture files in $FIXTURES"
	vm_stop
}

run_selftest() {
	local out=$OUT/selftest t0 v wall url
	rm -rf "$out"
	mkdir -p "$out"
	t0=$(dw_now)
	vm_build_initramfs "$BUILD_DIR/selftest.cpio.gz" "$here/guest/selftest.sh" "$GUEST_SERVICE"
	timing "selftest: initramfs build" "$(dw_elapsed "$t0")s"
	vm_start "$out" "$BUILD_DIR/selftest.cpio.gz"
	# Start Prometheus while the guest boots: its first scrape only lands
	# about 5 s after start (discovery is batched), so this hides that delay.
	prom_start "$out" "127.0.0.1:$VM_HOSTPORT" 1s

	# 1. port forward + NIC modules: fetch a page from the guest httpd
	vm_wait_marker service-up 120 >/dev/null
	timing "selftest: boot to service-up" "$(dw_elapsed "$VM_T0")s"
	url=http://127.0.0.1:$VM_HOSTPORT
	v=$(curl -fsS --max-time 10 --retry 3 --retry-connrefused "$url/index.html") ||
		{ dw_die hostfwd "curl $url/index.html failed"; return 1; }
	[[ $v == "dwvm httpd ok"* ]] || { dw_die hostfwd "unexpected page: $v"; return 1; }
	dw_log "hostfwd ok: $v"

	# 1b. real Prometheus on 127.0.0.1 scraping the guest every second
	t0=$(dw_now)
	prom_wait_up 30
	timing "selftest: service-up->prom up=1" "$(dw_elapsed "$t0")s"
	prom_wait_value 'dwvm_critical_warning{serial="DWSN0001"}' 0 15

	# 2. qom-set smart_critical_warning (0x04: reliability degraded)
	vm_wait_marker wait-host-qom-set 60 >/dev/null
	vm_qom_set c0 smart_critical_warning 4
	vm_send qom-set
	v=$(vm_wait_marker smart-cw 30)
	[[ $v == 4 ]] || { dw_die qom-set "guest smart-log critical_warning is '$v', wanted 4"; return 1; }
	t0=$(dw_now)
	prom_wait_value 'dwvm_critical_warning{serial="DWSN0001"}' 4 15
	timing "selftest: cw change->prometheus" "$(dw_elapsed "$t0")s"
	dw_log "qom-set ok: guest reads critical_warning=$v (was $(vm_wait_marker smart-cw-before 1))"

	# 3. device_del / device_add of controller c0
	vm_wait_marker wait-host-unplug 60 >/dev/null
	t0=$(dw_now)
	vm_device_del c0 30
	timing "selftest: device_del->DELETED" "$(dw_elapsed "$t0")s"
	vm_send unplug
	v=$(vm_wait_marker unplugged 40)
	dw_log "device_del ok: guest sees $v"
	prom_wait_value dwvm_controllers 1 15
	vm_wait_marker wait-host-replug 60 >/dev/null
	vm_device_add '"driver":"nvme","id":"c0","serial":"DWSN0001","drive":"n0"'
	vm_send replug
	v=$(vm_wait_marker replugged 40)
	dw_log "device_add ok: guest sees $v"
	[[ $v == *"cw=4"* ]] && dw_log "note: re-plugged controller kept critical_warning=4"
	prom_wait_value dwvm_controllers 2 15

	vm_wait_marker wait-host-finish 60 >/dev/null
	vm_send finish
	vm_wait_marker selftest-done 30 >/dev/null
	wall=$(vm_wait_exit 60)
	timing "selftest: qemu start->exit" "${wall}s"
	boot_log_times
	check_rc selftest
	vm_extract_files "$VM_LOG" "$out/files" >"$out/files.list"
	prom_query 'dwvm_critical_warning[1m]' >"$out/prom-cw-series.json"
	prom_stop
	vm_stop
}

run_e2e() {
	local out=$OUT/e2e rc=0
	rm -rf "$out"
	mkdir -p "$out"
	[[ -n ${DRIVEWATCH_BIN:-} ]] || { dw_die e2e "set DRIVEWATCH_BIN to the drivewatch binary (cmake --build ... --target drivewatch)"; return 1; }
	# shellcheck source=e2e/host.sh
	. "$here/e2e/host.sh"
	e2e_run "$out" "$BUILD_DIR" || rc=$?
	sed 's/^/e2e: /' "$out/measurements.txt" >>"$OUT/timings.txt"
	prom_stop
	vm_stop
	return $rc
}

case $scenario in
capture | selftest | e2e | all) ;;
*)
	echo "usage: $0 [capture|selftest|e2e|all]" >&2
	exit 2
	;;
esac

mkdir -p "$OUT"
: >"$OUT/timings.txt"
T_ALL=$(dw_now)
BUILD_DIR=$(mktemp -d "${TMPDIR:-/tmp}/dwvm-build.XXXXXX")
t=$(dw_now)
if [[ $scenario == capture ]]; then vm_prepare; else vm_prepare with-prometheus; fi
timing "prepare (apt + kernel)" "$(dw_elapsed "$t")s"
dw_log "kernel $DW_VM_KVER from $DW_VM_KERNEL"

if [[ $scenario == capture || $scenario == all ]]; then run_capture; fi
if [[ $scenario == selftest || $scenario == all ]]; then run_selftest; fi
if [[ $scenario == e2e || $scenario == all ]]; then run_e2e; fi
timing "total" "$(dw_elapsed "$T_ALL")s"
echo "[dwvm] run.sh $scenario PASSED; artefacts in $OUT" >&2
