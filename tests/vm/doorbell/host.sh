# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Host side of the "doorbell" VM scenario (guest side: doorbell/guest.sh).
# Source after tests/vm/lib.sh, then call doorbell_run OUTDIR WORKDIR.
#
# The guest's NVMe driver and QEMU's NVMe code share the shadow doorbell
# buffer: the driver writes a queue's new tail to memory and rings the
# doorbell register only when the controller's event index says it is not
# looking; each side orders its write before its read with a full barrier.
# QEMU 7.2's TCG drops the guest's barriers on a machine that can only
# ever have one CPU, and then a doorbell is lost now and then: the queue
# stands still until the driver's 30 s timeout (tests/vm/lib.sh,
# DW_VM_MAXCPUS, tells the whole story). This scenario writes a namespace
# as fast as the controller takes it for DOORBELL_SECONDS (45) and checks:
#   D1 the guest's kernel logged no NVMe I/O timeout and no controller
#      reset during the run
#   D2 fio finished on time (exit 0) and wrote: its IOPS and the number of
#      writes are measured (each a submission through the shadow doorbell)
# `DW_VM_MAXCPUS=1 tests/vm/scenario.sh doorbell` runs the guest as a
# one-CPU machine, the way that loses doorbells.
# Results: OUTDIR/assertions.txt, OUTDIR/measurements.txt.

DOORBELL_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DOORBELL_SECONDS=${DOORBELL_SECONDS:-45}

doorbell_run() {
	vm_assert_init doorbell "$1"
	DB_OUT=$VM_ASSERT_OUT
	local work=$2 t0 rc dev wall timeouts resets writes iops
	t0=$(dw_now)
	command -v fio >/dev/null || { dw_die doorbell "no fio on the host (package fio)"; return 1; }
	DW_VM_EXTRA_BINS="${DW_VM_EXTRA_BINS:-} $(command -v fio):/usr/bin/fio" \
		vm_build_initramfs "$work/doorbell.cpio.gz" "$DOORBELL_DIR/guest.sh" || return 1
	DW_VM_APPEND="${DW_VM_APPEND:-} DB_SECONDS=$DOORBELL_SECONDS" \
		vm_start "$DB_OUT" "$work/doorbell.cpio.gz" || return 1
	vm_measure "guest CPUs online / slots (-smp)" "$DW_VM_SMP / $DW_VM_MAXCPUS"
	dev=$(vm_wait_marker doorbell-start 120) || return 1
	vm_measure "doorbell: written (uptime s, device)" "$dev"
	# fio's runtime, and two of the driver's 30 s timeouts with a reset,
	# before giving up on it.
	rc=$(vm_wait_marker doorbell-fio $((DOORBELL_SECONDS + 120))) || rc="none"
	wall=$(vm_wait_exit 60) || wall="not exited"
	vm_measure "QEMU start -> exit (s)" "$wall"
	vm_extract_files "$VM_LOG" "$DB_OUT/files" >"$DB_OUT/files.list"

	timeouts=$(grep -c 'timeout, aborting' "$DB_OUT/files/dmesg.txt" 2>/dev/null) || true
	resets=$(grep -c -i 'resetting controller\|reset controller' "$DB_OUT/files/dmesg.txt" 2>/dev/null) || true
	vm_measure "doorbell: NVMe I/O timeouts / resets in the kernel log" "${timeouts:-?} / ${resets:-?}"
	if [[ ! -s $DB_OUT/files/dmesg.txt ]]; then
		vm_fail "D1 no lost doorbell" "the guest sent no kernel log (dmesg.txt)"
	elif ((timeouts > 0 || resets > 0)); then
		vm_fail "D1 no lost doorbell" "$timeouts I/O timeouts, $resets resets: $(grep -i 'nvme.*\(timeout\|reset\|abort\)' "$DB_OUT/files/dmesg.txt" | head -n 4 | tr '\n' '|')"
	else
		vm_pass "D1 no lost doorbell" "no NVMe I/O timeout or controller reset in $DOORBELL_SECONDS s of writes"
	fi

	writes=$(dw_python -c 'import json, sys; w = json.load(open(sys.argv[1]))["jobs"][0]["write"]; print(w["total_ios"], round(w["iops"]))' \
		"$DB_OUT/files/fio.json" 2>/dev/null) || writes=""
	iops=${writes#* }
	writes=${writes%% *}
	vm_measure "doorbell: fio exit, writes, IOPS" "$rc ${writes:-none} ${iops:-none}"
	if [[ $rc == 0 && ${writes:-0} -gt 0 ]]; then
		vm_pass "D2 fio" "exit 0, $writes writes of 4 KiB at $iops IOPS (QD32)"
	else
		vm_fail "D2 fio" "exit '$rc', writes '${writes:-none}'; fio: $(tail -n 3 "$DB_OUT/files/fio.out" 2>/dev/null | tr '\n' '|')"
	fi
	vm_measure "doorbell scenario wall time (s)" "$(dw_elapsed "$t0")"
	vm_assert_result
}
