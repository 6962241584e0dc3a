# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Host side of the "aging" VM scenario (guest side: aging/guest.sh).
# Source after tests/vm/lib.sh, then call aging_run OUTDIR WORKDIR.
#
# The real drivewatch runs heavy phases by hand in the guest
# (`drivewatch phase run`, no daemon) on emulated namespaces. Besides the
# harness' DWSN0001 (c0, 128 MiB) and DWSN0002 (c1) the guest has:
#   DWSN0003  c2, one 1 GiB namespace (sparse raw file, discard=unmap): the
#             drive the fills run on
#   n5        a 128 MiB backing node with no device at boot: S2 plugs it in
#             as DWSN0005 (c5)
#   DWSN0006  c6, one 64 MiB namespace on QEMU null-co: every read takes
#             AGING_STALL_NS, 500 ms (S7's stalled drive)
# Checks:
#   S1 the identity check against the emulated controller: a target naming
#      serial WRONGSN for DWSN0001's namespace is refused (exit 2, outcome
#      refused, the reason names the device, WRONGSN and DWSN0001), so is
#      one naming namespace 2 (the reason says 2 configured, 1 found);
#      nothing was written (QMP query-blockstats wr_bytes of c0 unchanged)
#   S2 a renamed device: device_del c0 (DWSN0001), the kernel drops it,
#      device_add DWSN0005; a target that still says serial DWSN0001 and
#      names the path DWSN0005's namespace now has (the kernel re-uses the
#      freed name when nothing holds it) is refused, naming both serials,
#      and nothing is written to DWSN0005
#   S3 the SLC cache model: in the guest, slc_throttle (slc_throttle.cc)
#      limits the fill's writes to DWSN0003's namespace with the kernel's
#      blk-throttle (cgroup v2 io.max): the fill runs in a cgroup limited to
#      AGING_FAST_BPS; slc_throttle polls the bytes the kernel completed
#      (/sys/block/NS/stat) every 20 ms and, once the fill wrote
#      AGING_TRIGGER_BYTES, moves it to a cgroup limited to AGING_SLOW_BPS
#      (the "cache" ran out). The truth is the first polled count >= the
#      trigger; slop (written between that poll and the move) and
#      the knee of the polled curve are reported (aging.py analyze).
#      results.slc_cache_bytes must be within 5% of the truth, the fill's
#      written_bytes must equal QEMU's wr_bytes delta (the trim wrote
#      nothing) and the before/after levels must match the two limits
#      (AGING_LEVEL_TOLERANCE). The throughput series is kept as
#      OUTDIR/vm_fill_series.txt (tests/fixtures/slc/ format; with
#      AGING_RECORD_FIXTURE=1 it is also written to
#      ${DW_FIXTURE_OUT:-tests/fixtures}/slc/vm_fill_series.txt). (S3 used
#      QEMU's block_set_io_throttle before; slc_throttle.cc says why not.)
#   S4 a critical warning aborts a running fill: qom-set c2
#      smart_critical_warning 4 while it writes -> outcome aborted, exit 1,
#      the reason says "critical warning", and the fill wrote at most
#      AGING_ABORT_MAX_FRACTION of what it had left after the qom-set (the
#      delay from the qom-set to the guest's marker is measured)
#   S5 the power-states phase on DWSN0003 through the kernel's driver:
#      QEMU lists one state and refuses Set Features 02h (Feature Not
#      Changeable) -> that state recorded unsupported, no restore tried,
#      idle power measured, completed, QEMU's wr_bytes unchanged
#   S7 service latency as fio times it, on a stalled drive: a perf cell
#      paced at 100 IOPS on DWSN0006 (every read takes AGING_STALL_NS) and
#      fio's same job (io_uring, O_DIRECT, 4 KiB random, QD1, rate_iops=100)
#      on the same namespace, started before the phase and stopped after it
#      (null-co serves the two side by side, each read its own 500 ms). Over
#      the reads fio completed while the cell ran (its per-read log, less a
#      second at each end, where the phase's start or end shares the guest's
#      CPU), the cell's service p50 and p99 are within AGING_STALL_TOLERANCE
#      (5 %) of fio's clat p50 and p99, and its response latency reports the
#      stall (p99 at least 5 times its service p99, and over a second: the
#      reads fell further behind their times). Each p99 is the slowest read
#      of its side, and when the whole guest stands still (its vCPU or
#      QEMU's main loop kept waiting) each read due meanwhile is delayed by
#      a different amount: stall_witness (stall_witness.cc) logs every such
#      stall over 5 ms in the guest, and the p99s may differ by the longest
#      one in the cell on top of the 5 %. QEMU runs 10 niceness steps above
#      the scenario for S7, so that the host's other work waits instead
#   S6 the history: `drivewatch history --format json` has one record per
#      run, in order, with its outcome (refused x3, completed, aborted,
#      completed, completed)
# Results: OUTDIR/assertions.txt, OUTDIR/measurements.txt; every run's
# record, stderr and config in OUTDIR/files/, slc_throttle's samples in
# OUTDIR/trigger-samples.txt and their analysis in OUTDIR/trigger.json.

AGING_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
AGING_NS_SIZE=${AGING_NS_SIZE:-1G}
AGING_FILL_PERCENT=${AGING_FILL_PERCENT:-90}
AGING_FAST_BPS=${AGING_FAST_BPS:-67108864}          # 64 MiB/s: the "SLC cache"
AGING_SLOW_BPS=${AGING_SLOW_BPS:-20971520}          # 20 MiB/s: after it
AGING_TRIGGER_BYTES=${AGING_TRIGGER_BYTES:-536870912} # 512 MiB
AGING_S4_AFTER_BYTES=${AGING_S4_AFTER_BYTES:-33554432} # qom-set once S4 wrote this
AGING_ABORT_MAX_FRACTION=${AGING_ABORT_MAX_FRACTION:-0.25} # of the fill left at the warning
AGING_LEVEL_TOLERANCE=${AGING_LEVEL_TOLERANCE:-0.15}
AGING_NEW_SERIAL=DWSN0005
# 500 ms a read on DWSN0006: long beside the few ms a loaded host (or the
# guest's one vCPU, shared by the two readers) can add to a read, so the
# tolerance is about the definition, not the host.
AGING_STALL_NS=${AGING_STALL_NS:-500000000}
AGING_STALL_TOLERANCE=${AGING_STALL_TOLERANCE:-0.05}

ag_py() { dw_python "$AGING_DIR/aging.py" "$@"; }
ag_wr() { ag_py wr "$VM_QMP" "$1"; }
# ag_get NAME PATH: a value of run NAME's record (files/NAME.json).
ag_get() { ag_py get "$AG_OUT/files/$1.json" "$2" 2>/dev/null || true; }
# ag_run_marker NAME: "RC START END" of the guest's "run NAME ..." marker.
ag_run_marker() { vm_markers | sed -n "s/^DWVM-MARK: run $1 //p" | head -n 1; }
ag_files() { vm_extract_files "$VM_LOG" "$AG_OUT/files" "$@" >/dev/null; }
ag_awk() { awk "BEGIN{$1}" </dev/null; }
# Bytes the host file system holds for DWSN0003's image (the trim punches holes).
ag_alloc() { echo $(($(stat -c '%b * %B' "$AG_WORK/n3.img"))); }

# The extra QEMU arguments: DWSN0003 with a 1 GiB namespace, and a spare
# backing node for S2's device_add.
aging_qemu_args() {
	local w=$1
	truncate -s "$AGING_NS_SIZE" "$w/n3.img" && truncate -s 128M "$w/n5.img" || return 1
	AGING_QEMU_ARGS=(
		-blockdev "driver=file,filename=$w/n3.img,node-name=n3-file,discard=unmap"
		-blockdev "driver=raw,file=n3-file,node-name=n3,discard=unmap"
		-device "nvme,id=c2,serial=DWSN0003,drive=n3"
		-blockdev "driver=file,filename=$w/n5.img,node-name=n5-file,discard=unmap"
		-blockdev "driver=raw,file=n5-file,node-name=n5,discard=unmap"
		-blockdev "driver=null-co,node-name=n6,size=67108864,latency-ns=$AGING_STALL_NS,read-zeroes=on"
		-device "nvme,id=c6,serial=DWSN0006,drive=n6"
		-msg timestamp=on -D "$AG_OUT/qemu-trace.log"
	)
}

# ag_trace on|off: QEMU's NVMe trace events (log backend, into
# OUTDIR/qemu-trace.log, each line "PID@SECONDS:event ...") while S3 fills:
# what the controller saw of every command of the fill (doorbell writes,
# shadow doorbells and event indexes, fetches, writes, completions,
# interrupts, resets). About ten lines a command; the per-page PRP mapping
# and the raw register accesses (already told by the doorbell events) are
# left out.
ag_trace() {
	local on=false e
	[[ $1 == on ]] && on=true
	vm_qmp "{\"execute\":\"trace-event-set-state\",\"arguments\":{\"name\":\"pci_nvme_*\",\"enable\":$on}}" >/dev/null || return 1
	[[ $on == true ]] || return 0
	for e in pci_nvme_map_addr pci_nvme_map_prp pci_nvme_dma_read pci_nvme_mmio_write; do
		vm_qmp "{\"execute\":\"trace-event-set-state\",\"arguments\":{\"name\":\"$e\",\"enable\":false}}" >/dev/null || return 1
	done
}

# ag_trace_gap: where the I/O queues stood still longest, the part that
# tells a stall: the events counted by name, the longest gap between two
# events of an I/O queue (sqid/cqid/vector 1 and up: the admin queue's
# once-a-second polling goes on through a stall), counting the stretch from
# the last one to the trace's end, and the 30 lines before and after its
# start (the last I/O queue event before it),
# into OUTDIR/s3-trace-gap.txt; prints the counts and the gap on one line.
# A lost doorbell (tests/vm/lib.sh, DW_VM_MAXCPUS) reads: the last sqid 1
# doorbell, its commands fetched and completed, then nothing on sqid 1.
ag_trace_gap() {
	local log=$AG_OUT/qemu-trace.log
	[[ -s $log ]] || { echo "no QEMU trace"; return 0; }
	awk -F'[@: ]' '
		{ n[$3]++; line[NR] = $0; t = $2 + 0; last = t
		  if ($0 ~ /(sqid|cqid|vector) [1-9]/) {
			if (seen && t - prev > gap) { gap = t - prev; at = prev_line }
			prev = t; prev_line = NR; seen = 1
		  } }
		END {
			if (seen && last - prev > gap) { gap = last - prev; at = prev_line }
			for (k in n) printf "%s=%d ", k, n[k]
			printf "; I/O queues: longest gap %.3f s after line %d of %d\n", gap, at, NR
			for (i = (at > 30 ? at - 30 : 1); i <= at + 30 && i <= NR; i++) print line[i]
		}' "$log" >"$AG_OUT/s3-trace-gap.txt"
	head -n 1 "$AG_OUT/s3-trace-gap.txt"
}

# ag_check_refused ID NAME WANT_TEXT...: run NAME must have exited 2 with
# outcome "refused" and a reason containing every WANT_TEXT. Returns 1 (and
# reports) otherwise.
ag_check_refused() {
	local id=$1 name=$2 m rc outcome reason t ok=1
	shift 2
	m=$(ag_run_marker "$name")
	rc=${m%% *}
	outcome=$(ag_get "$name" outcome)
	reason=$(ag_get "$name" reason)
	vm_measure "$name: exit status, outcome" "$rc $outcome"
	vm_measure "$name: reason" "$reason"
	if [[ $rc != 2 || $outcome != refused ]]; then
		vm_fail "$id" "$name: exit $rc, outcome '$outcome' (wanted 2, refused); reason '$reason'; stderr: $(tail -n 3 "$AG_OUT/files/$name.err" 2>/dev/null | tr '\n' '|')"
		ok=0
	fi
	for t in "$@"; do
		if [[ $reason != *"$t"* ]]; then
			vm_fail "$id" "$name: the reason does not mention '$t': '$reason'"
			ok=0
		fi
	done
	((ok))
}

# ---------------------------------------------------------------- S1
aging_s1() {
	local ok=1 w0 w1 t0
	w0=$(ag_wr c0)
	t0=$(dw_now)
	vm_wait_marker wait-host-s1 60 >/dev/null || return 1
	vm_send s1
	vm_wait_marker s1-done 60 >/dev/null || return 1
	vm_measure "S1 two refused runs (s)" "$(dw_elapsed "$t0")"
	ag_files s1-wrongsn.json s1-wrongsn.err s1-ns2.json s1-ns2.err || true
	w1=$(ag_wr c0)
	vm_measure "S1 DWSN0001 wr_bytes before / after" "$w0 / $w1"
	ag_check_refused "S1 serial check" s1-wrongsn "/dev/$AG_NS1" WRONGSN DWSN0001 || ok=0
	ag_check_refused "S1 serial check" s1-ns2 "/dev/$AG_NS1" "namespace 2" || ok=0
	if [[ -z $w0 || $w0 != "$w1" ]]; then
		vm_fail "S1 serial check" "DWSN0001's wr_bytes moved from '$w0' to '$w1': a refused run wrote"
		ok=0
	fi
	((ok)) && vm_pass "S1 serial check" "WRONGSN and namespace 2 on /dev/$AG_NS1 (DWSN0001) refused with exit 2, the reasons name the device and the serials/namespaces; wr_bytes stayed $w1"
	return 0
}

# ---------------------------------------------------------------- S2
aging_s2() {
	local ok=1 w0 w1 t0 new path
	vm_wait_marker wait-host-s2-unplugged 60 >/dev/null || return 1
	t0=$(dw_now)
	vm_device_del c0 30 || return 1
	vm_measure "S2 device_del c0 -> DEVICE_DELETED (s)" "$(dw_elapsed "$t0")"
	vm_send s2-unplugged
	vm_measure "S2 guest block devices after the unplug" "$(vm_wait_marker s2-gone 30)"
	vm_device_add "\"driver\":\"nvme\",\"id\":\"c5\",\"serial\":\"$AGING_NEW_SERIAL\",\"drive\":\"n5\"" || return 1
	w0=$(ag_wr c5)
	vm_wait_marker wait-host-s2-plugged 60 >/dev/null || return 1
	vm_send s2-plugged
	new=$(vm_wait_marker s2-new 40) || return 1
	path=${new%% *}           # "nvmeX/nvmeXnY was=... nsid=N"
	path=/dev/${path#*/}
	vm_measure "S2 $AGING_NEW_SERIAL's controller/namespace (DWSN0001's before)" "$new"
	if [[ $path == "/dev/$AG_NS1" ]]; then
		vm_measure "S2 kernel name of the unplugged drive re-used" "yes: $path was DWSN0001's, is $AGING_NEW_SERIAL's"
	else
		vm_measure "S2 kernel name of the unplugged drive re-used" "no: DWSN0001 was /dev/$AG_NS1, $AGING_NEW_SERIAL is $path (the config names $path)"
	fi
	vm_wait_marker s2-done 60 >/dev/null || return 1
	ag_files s2-renamed.json s2-renamed.err || true
	w1=$(ag_wr c5)
	vm_measure "S2 $AGING_NEW_SERIAL wr_bytes after device_add / after the run" "$w0 / $w1"
	ag_check_refused "S2 renamed device" s2-renamed "$path" DWSN0001 "$AGING_NEW_SERIAL" || ok=0
	if [[ -z $w0 || $w0 != "$w1" ]]; then
		vm_fail "S2 renamed device" "$AGING_NEW_SERIAL's wr_bytes moved from '$w0' to '$w1': the refused run wrote to the other drive"
		ok=0
	fi
	((ok)) && vm_pass "S2 renamed device" "after device_del DWSN0001 / device_add $AGING_NEW_SERIAL, a target saying DWSN0001 at $path was refused (exit 2, both serials named); $AGING_NEW_SERIAL's wr_bytes stayed $w1"
	return 0
}

# ---------------------------------------------------------------- S3
aging_s3() {
	local ok=1 base trig t0 m rc outcome slc lb before after written wend truth err how fixture
	base=$(ag_wr c2)
	vm_measure "S3 DWSN0003 wr_bytes before the fill (boot reads only)" "$base"
	vm_measure "S3 DWSN0003 image allocated on the host before (bytes)" "$(ag_alloc)"
	vm_wait_marker wait-host-s3 60 >/dev/null || return 1
	ag_trace on || return 1
	t0=$(dw_now)
	vm_send s3
	m=$(vm_wait_marker slc-ready 60) || return 1
	vm_measure "S3 slc_throttle ready (MAJ:MIN, base, io.max)" "$m"
	if ! vm_wait_marker s3-done 180 >/dev/null; then
		# slc_throttle gave up at 120 s and wrote what the guest's kernel
		# held for the device and its log to the console (the whole log is
		# in console.log).
		ag_trace off || true
		vm_measure "S3 QEMU trace (the gap: s3-trace-gap.txt)" "$(ag_trace_gap)"
		vm_fail "S3 SLC cache" "the fill did not end within 180 s; $(vm_markers | sed -n 's/^DWVM-MARK: slc-diag \(inflight\|stat\) /\1 /p' | tr '\n' ';'); kernel: $(vm_markers | sed -n 's/^DWVM-MARK: slc-diag kmsg [^;]*;//p' | grep -i nvme | tail -n 8 | tr '\n' '|')"
		return 1
	fi
	vm_measure "S3 fill run (s, host)" "$(dw_elapsed "$t0")"
	ag_trace off || return 1
	ag_files s3.json s3.err s3.toml trigger-samples.txt || true
	cp "$AG_OUT/files/trigger-samples.txt" "$AG_OUT/trigger-samples.txt" 2>/dev/null || true
	m=$(vm_markers | sed -n 's/^DWVM-MARK: slc-throttle //p' | head -n 1)
	vm_measure "S3 slc_throttle exit (stderr)" "$m"
	if ! ag_py analyze "$AG_OUT/trigger-samples.txt" "$AGING_TRIGGER_BYTES" >"$AG_OUT/trigger.json" 2>"$AG_OUT/trigger.err"; then
		vm_fail "S3 SLC cache" "no crossing of the trigger: $(cat "$AG_OUT/trigger.err"); slc_throttle: '$m'; fill: exit '$(ag_run_marker s3)' reason '$(ag_get s3 reason)'"
		return 0
	fi
	trig=$(cat "$AG_OUT/trigger.json")
	vm_measure "S3 trigger (JSON)" "$trig"
	truth=$(ag_py get "$AG_OUT/trigger.json" truth)
	vm_measure "S3 truth: first polled bytes written >= $AGING_TRIGGER_BYTES" "$truth (prev poll $(ag_py get "$AG_OUT/trigger.json" prev))"
	vm_measure "S3 slop: crossing poll -> bytes written once the fill was moved" "$(ag_py get "$AG_OUT/trigger.json" slop_bytes) bytes (poll every $(ag_py get "$AG_OUT/trigger.json" poll_ms_mean) ms, max $(ag_py get "$AG_OUT/trigger.json" poll_ms_max) ms; the move $(ag_py get "$AG_OUT/trigger.json" cmd_ms) ms)"
	vm_measure "S3 knee of wr_bytes (slow line at cmd return) - truth" "$(ag_py get "$AG_OUT/trigger.json" knee_minus_truth) bytes"
	vm_measure "S3 rates the guest's block layer completed fast / slow (B/s)" "$(ag_py get "$AG_OUT/trigger.json" fast_bps) / $(ag_py get "$AG_OUT/trigger.json" slow_bps)"
	wend=$(ag_wr c2)
	vm_measure "S3 DWSN0003 blockstats after the fill" "$(ag_py stats "$VM_QMP" c2)"
	vm_measure "S3 DWSN0003 image allocated on the host after (bytes)" "$(ag_alloc)"
	m=$(ag_run_marker s3)
	rc=${m%% *}
	outcome=$(ag_get s3 outcome)
	slc=$(ag_get s3 results.slc_cache_bytes)
	lb=$(ag_get s3 results.slc_cache_lower_bound_bytes)
	before=$(ag_get s3 results.before_cache_bytes_per_second)
	after=$(ag_get s3 results.after_cache_bytes_per_second)
	written=$(ag_get s3 results.written_bytes)
	vm_measure "S3 run: exit, outcome, duration (s)" "$rc $outcome $(ag_get s3 duration_seconds)"
	vm_measure "S3 written_bytes / QEMU wr_bytes delta" "$written / $((wend - base))"
	vm_measure "S3 slc_cache_bytes detected / truth" "${slc:-none (lower bound $lb)} / $truth"
	if [[ -n $slc ]]; then
		err=$(ag_awk "printf \"%.3f\", ($slc - $truth) * 100 / $truth")
		vm_measure "S3 detected - truth (% of truth)" "$err %"
	fi
	vm_measure "S3 before / after cache (B/s), throttles" "$before / $after, $AGING_FAST_BPS / $AGING_SLOW_BPS"
	vm_measure "S3 series (B/s)" "$(ag_get s3 series.throughput_bytes_per_second | tr ',' ' ' | awk '{for (i = 1; i <= NF; i++) printf "%.1f ", $i / 1048576; print "MiB/s"}')"
	if [[ $rc != 0 || $outcome != completed ]]; then
		vm_fail "S3 SLC cache" "the fill exited $rc, outcome '$outcome', reason '$(ag_get s3 reason)'; stderr: $(tail -n 3 "$AG_OUT/files/s3.err" | tr '\n' '|')"
		ok=0
	fi
	if [[ -z $slc ]]; then
		vm_fail "S3 SLC cache" "no slc_cache_bytes (no sustained drop found; lower bound '$lb'), truth $truth"
		ok=0
	elif ! ag_awk "exit !(($slc - $truth) <= 0.05 * $truth && ($truth - $slc) <= 0.05 * $truth)"; then
		vm_fail "S3 SLC cache" "slc_cache_bytes $slc is not within 5% of the truth $truth ($err %)"
		ok=0
	fi
	if [[ -z $written || $written != "$((wend - base))" ]]; then
		vm_fail "S3 SLC cache" "written_bytes '$written' but QEMU counted $((wend - base)) written bytes (did the trim write?)"
		ok=0
	fi
	if ! ag_awk "exit !(\"$before\" != \"\" && $before + 0 >= $AGING_FAST_BPS * (1 - $AGING_LEVEL_TOLERANCE) && $before + 0 <= $AGING_FAST_BPS * (1 + $AGING_LEVEL_TOLERANCE))"; then
		vm_fail "S3 SLC cache" "before_cache_bytes_per_second '$before' is not the fast throttle $AGING_FAST_BPS +-$AGING_LEVEL_TOLERANCE"
		ok=0
	fi
	if ! ag_awk "exit !(\"$after\" != \"\" && $after + 0 >= $AGING_SLOW_BPS * (1 - $AGING_LEVEL_TOLERANCE) && $after + 0 <= $AGING_SLOW_BPS * (1 + $AGING_LEVEL_TOLERANCE))"; then
		vm_fail "S3 SLC cache" "after_cache_bytes_per_second '$after' is not the slow throttle $AGING_SLOW_BPS +-$AGING_LEVEL_TOLERANCE"
		ok=0
	fi
	if [[ -s $AG_OUT/files/s3.json && -n $truth ]]; then
		how="Recorded by tests/vm/aging (S3): drivewatch phase run (fill, 128 KiB, QD32) on a QEMU 7.2 TCG guest's emulated NVMe namespace ($AGING_NS_SIZE raw file, discard=unmap, filled to $AGING_FILL_PERCENT%),
limited by the guest kernel's blk-throttle (cgroup v2 io.max) to wbps=$AGING_FAST_BPS from the start and moved to a cgroup with wbps=$AGING_SLOW_BPS once /sys/block/NS/stat (polled every 20 ms) showed $AGING_TRIGGER_BYTES bytes written;
The truth above is the first polled count at or above that; the count polled right after the move was $(ag_py get "$AG_OUT/trigger.json" slop_bytes) bytes higher, and the slow level's line meets the fast one $(ag_py get "$AG_OUT/trigger.json" knee_minus_truth) bytes after the truth.
One bytes/second value per line (results.series.throughput_bytes_per_second), oldest first."
		ag_py series "$AG_OUT/files/s3.json" "$truth" "$AG_OUT/vm_fill_series.txt" "$how" ||
			vm_fail "S3 SLC cache" "cannot write the series file"
		if [[ ${AGING_RECORD_FIXTURE:-0} == 1 ]]; then
			fixture=${DW_FIXTURE_OUT:-$AGING_DIR/../../fixtures}/slc
			mkdir -p "$fixture" && cp "$AG_OUT/vm_fill_series.txt" "$fixture/vm_fill_series.txt" &&
				vm_log "fixture written: $fixture/vm_fill_series.txt"
		fi
	fi
	if ((ok)); then
		vm_pass "S3 SLC cache" "slc_cache_bytes $slc vs truth $truth ($err %); before $before B/s, after $after B/s; written_bytes = QEMU's wr_bytes delta $written"
		vm_measure "S3 QEMU trace (the gap)" "$(ag_trace_gap | sed 's/.*; I\/O/I\/O/')"
		rm -f "$AG_OUT/qemu-trace.log" "$AG_OUT/s3-trace-gap.txt"
	else
		vm_measure "S3 QEMU trace (the gap: s3-trace-gap.txt)" "$(ag_trace_gap)"
	fi
	return 0
}

# ---------------------------------------------------------------- S4
aging_s4() {
	local ok=1 base w wq wend tq tq1 tend end m rc outcome reason delay size left
	base=$(ag_wr c2)
	vm_wait_marker wait-host-s4 60 >/dev/null || return 1
	vm_send s4
	end=$(($(date +%s) + 90))
	while :; do
		w=$(ag_wr c2)
		((w - base >= AGING_S4_AFTER_BYTES)) && break
		if (($(date +%s) > end)) || [[ -n $(ag_run_marker s4) ]]; then
			vm_fail "S4 critical warning" "the long fill did not write $AGING_S4_AFTER_BYTES bytes (wr_bytes delta $((w - base)); run marker '$(ag_run_marker s4)')"
			vm_wait_marker s4-done 120 >/dev/null || return 1
			return 0
		fi
		sleep 0.1
	done
	tq=$(dw_now)
	vm_qom_set c2 smart_critical_warning 4 || return 1
	tq1=$(dw_now)
	wq=$(ag_wr c2)
	end=$(($(date +%s) + 60))
	while [[ -z $(ag_run_marker s4) ]]; do
		(($(date +%s) > end)) && break
		sleep 0.05
	done
	tend=$(dw_now)
	delay=$(ag_awk "printf \"%.2f\", $tend - $tq")
	vm_wait_marker s4-done 120 >/dev/null || return 1
	wend=$(ag_wr c2)
	ag_files s4.json s4.err || true
	m=$(ag_run_marker s4)
	rc=${m%% *}
	outcome=$(ag_get s4 outcome)
	reason=$(ag_get s4 reason)
	vm_measure "S4 qom-set command (s)" "$(ag_awk "printf \"%.3f\", $tq1 - $tq")"
	vm_measure "S4 qom-set -> run ended (guest marker seen, s)" "$delay"
	vm_measure "S4 bytes written by the fill before / after the warning" "$((wq - base)) / $((wend - wq))"
	vm_measure "S4 run: exit, outcome, duration (s)" "$rc $outcome $(ag_get s4 duration_seconds)"
	vm_measure "S4 reason" "$reason"
	vm_measure "S4 DWSN0003 blockstats after the run" "$(ag_py stats "$VM_QMP" c2)"
	vm_measure "S4 DWSN0003 image allocated on the host (trim, then the bytes above)" "$(ag_alloc)"
	if [[ $rc != 1 || $outcome != aborted || $reason != *"critical warning"* ]]; then
		vm_fail "S4 critical warning" "exit $rc, outcome '$outcome', reason '$reason' (wanted 1, aborted, 'critical warning ...')"
		ok=0
	fi
	# How soon is measured, not asserted: the host clock from the qom-set to
	# the guest's marker includes a TCG guest's scheduling, which tests run
	# beside it stretch (3.65 s once against a 3 s bound, with no byte
	# written after the warning). What is asserted cannot depend on the
	# host's load: the fill stopped at the warning, far short of its end
	# (the whole namespace): it wrote less after the qom-set than
	# AGING_ABORT_MAX_FRACTION of what was left.
	size=$(numfmt --from=iec "$AGING_NS_SIZE")
	left=$((size - (wq - base)))
	if ! ag_awk "exit !($((wend - wq)) <= $AGING_ABORT_MAX_FRACTION * $left)"; then
		vm_fail "S4 critical warning" "the fill wrote $((wend - wq)) bytes after the qom-set, of $left left (wanted <= $AGING_ABORT_MAX_FRACTION of it)"
		ok=0
	fi
	((ok)) && vm_pass "S4 critical warning" "smart_critical_warning 0x04 during the fill -> aborted in ${delay}s, $((wend - wq)) bytes after it: '$reason'"
	return 0
}

# ---------------------------------------------------------------- S5
# power-states on DWSN0003 through the kernel's NVMe driver: QEMU's one
# power state (NPSS 0, no APST) entered with Set Features 02h, confirmed
# with Get Features 02h, its exit timed by real reads; nothing written.
aging_s5() {
	local m rc outcome before after err idle ok=1
	vm_wait_marker wait-host-s5 60 >/dev/null || return 1
	before=$(ag_wr c2)
	vm_send s5
	vm_wait_marker s5-done 180 >/dev/null || return 1
	after=$(ag_wr c2)
	ag_files s5.json s5.err || true
	m=$(ag_run_marker s5)
	rc=${m%% *}
	outcome=$(ag_get s5 outcome)
	err=$(ag_get s5 series.power_states.0.error)
	idle=$(ag_get s5 results.idle_power_psd_estimate_watts)
	vm_measure "S5 run: exit, outcome, duration (s)" "$rc $outcome $(ag_get s5 duration_seconds)"
	vm_measure "S5 ps0: supported, error; supported ratio; idle / 10-IOPS power (W)" \
		"$(ag_get s5 series.power_states.0.supported), '$err'; $(ag_get s5 results.power_states_supported_ratio); $idle / $(ag_get s5 results.at_10_iops_power_psd_estimate_watts)"
	vm_measure "S5 DWSN0003 bytes written during the run" "$((after - before))"
	if [[ $rc != 0 || $outcome != completed ]]; then
		vm_fail "S5 power-states" "exit $rc, outcome '$outcome' (wanted 0, completed): $(head -c 300 "$AG_OUT/files/s5.err" 2>/dev/null | tr '\n' '|')"
		ok=0
	fi
	# QEMU answers Get Features 02h but refuses Set Features 02h (Feature
	# Not Changeable): its one state is recorded as unsupported, the phase
	# goes on to idle and 10-IOPS power, and nothing is restored.
	if [[ $(ag_get s5 series.power_states.0.supported) != False || $err != *"Feature Not Changeable"* ||
		$(ag_get s5 results.power_states_supported_ratio) != 0 || -z $idle ]]; then
		vm_fail "S5 power-states" "ps0 supported '$(ag_get s5 series.power_states.0.supported)', error '$err', ratio '$(ag_get s5 results.power_states_supported_ratio)', idle power '$idle' (wanted False, Feature Not Changeable, 0, a figure)"
		ok=0
	fi
	if [[ -n $(ag_get s5 series.power_states.1) ]]; then
		vm_fail "S5 power-states" "a second power state on a controller with NPSS 0"
		ok=0
	fi
	if grep -q "cannot restore" "$AG_OUT/files/s5.err" 2>/dev/null; then
		vm_fail "S5 power-states" "it tried to restore a state it never changed: $(grep "cannot restore" "$AG_OUT/files/s5.err" | head -c 300)"
		ok=0
	fi
	if ((after != before)); then
		vm_fail "S5 power-states" "the phase wrote $((after - before)) bytes to its target"
		ok=0
	fi
	((ok)) && vm_pass "S5 power-states" "QEMU's single state ps0: Set Features 02h refused (Feature Not Changeable), recorded unsupported, idle power ${idle} W, completed, 0 bytes written"
	return 0
}

# ---------------------------------------------------------------- S7
# ag_qemu_nice N: every thread of the guest's QEMU at niceness N.
ag_qemu_nice() {
	local qemu
	# VM_PID is timeout(1), QEMU its only child (a comm is 15 characters:
	# "qemu-system-x86").
	qemu=$(pgrep -P "$VM_PID" | head -n 1)
	[[ -n $qemu ]] || { vm_log "no QEMU process under $VM_PID to renice"; return 0; }
	# shellcheck disable=SC2046 # one TID a word
	renice -n "$1" -p $(ls "/proc/$qemu/task") >/dev/null 2>&1 || vm_log "renice of QEMU ($qemu) to $1 failed"
	echo "QEMU $qemu threads at niceness: $(ps -L -o ni= -p "$qemu" | sort -n | uniq -c | awk '{printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1}')"
}

aging_s7() {
	local out m
	vm_wait_marker wait-host-s7 60 >/dev/null || return 1
	# S7 compares slowest reads, each the only one of its side in the window
	# (about 26 a side): a host that keeps the guest's vCPU or QEMU's main
	# loop waiting adds tens of ms to whichever read completes meanwhile and
	# not to the other side's (70 ms was seen, with another guest and the
	# timing tests beside this one). For S7, QEMU's threads run 10 niceness
	# steps above the scenario's, so that the machine's other work waits
	# instead.
	vm_measure "S7 during the cell" "$(ag_qemu_nice $(($(nice) - 10)))"
	vm_send s7
	vm_wait_marker s7-done 180 >/dev/null || { ag_qemu_nice "$(nice)" >/dev/null; return 1; }
	vm_measure "S7 after the cell" "$(ag_qemu_nice "$(nice)")"
	ag_files s7.json s7.err s7-fio.json s7-fio.err s7-fio-clat.log s7-fio-lat.log s7-stalls.txt || true
	vm_measure "S7 the guest's stalls (stall_witness)" "$(head -n 1 "$AG_OUT/files/s7-stalls.txt" 2>/dev/null); $(($(wc -l <"$AG_OUT/files/s7-stalls.txt" 2>/dev/null || echo 1) - 1)) over 5 ms"
	m=$(ag_run_marker s7)
	vm_measure "S7 run: exit, outcome; fio exit" "${m%% *} $(ag_get s7 outcome); $(vm_wait_marker fio-rc 5)"
	if out=$(ag_py stall "$AG_OUT/files/s7.json" "$AG_OUT/files/s7-fio-clat.log" \
		"$AG_OUT/files/s7-fio-lat.log" paced_read_4k_read \
		"$AGING_STALL_TOLERANCE" "$AG_OUT/files/s7-stalls.txt" 2>&1); then
		vm_measure "S7 service vs fio, response" "$out"
		vm_pass "S7 service latency vs fio" "$out"
	else
		vm_measure "S7 service vs fio, response" "$out"
		vm_fail "S7 service latency vs fio" "$(tr '\n' '|' <<<"$out"); run stderr: $(tail -n 3 "$AG_OUT/files/s7.err" 2>/dev/null | tr '\n' '|'); fio: $(tail -n 3 "$AG_OUT/files/s7-fio.err" 2>/dev/null | tr '\n' '|')"
	fi
	return 0
}

# ---------------------------------------------------------------- S6
aging_history() {
	local out m
	vm_wait_marker wait-host-finish 60 >/dev/null || return 1
	vm_send finish
	vm_wait_marker aging-done 60 >/dev/null || return 1
	m=$(vm_wait_marker history-rc 5)
	ag_files history.jsonl state.txt || true
	vm_measure "S6 drivewatch history exit" "$m"
	if out=$(ag_py history "$AG_OUT/files/history.jsonl" fill:refused fill:refused fill:refused \
		slcfill:completed longfill:aborted pstates:completed stall:completed 2>&1); then
		vm_pass "S6 history" "one record per run: fill refused x3 (S1, S1, S2), slcfill completed, longfill aborted, pstates completed, stall completed"
	else
		vm_fail "S6 history" "$(tr '\n' '|' <<<"$out") (history rc $m)"
	fi
	return 0
}

# ---------------------------------------------------------------- driver
aging_run() {
	vm_assert_init aging "$1"
	AG_OUT=$VM_ASSERT_OUT
	local work=$2 t0 wall devices err
	AG_WORK=$work
	t0=$(dw_now)
	[[ -n ${DRIVEWATCH_BIN:-} && -x $DRIVEWATCH_BIN ]] ||
		{ dw_die aging "DRIVEWATCH_BIN='${DRIVEWATCH_BIN:-}' is not an executable (build the drivewatch target)"; return 1; }
	local slc=${DW_SLC_THROTTLE:-${DW_BUILD_DIR:-$DW_VM_DIR/../../build}/tests/slc_throttle}
	[[ -x $slc ]] ||
		{ dw_die aging "no slc_throttle binary at '$slc' (build the slc_throttle target, or set DW_SLC_THROTTLE)"; return 1; }
	local witness=${DW_STALL_WITNESS:-${DW_BUILD_DIR:-$DW_VM_DIR/../../build}/tests/stall_witness}
	[[ -x $witness ]] ||
		{ dw_die aging "no stall_witness binary at '$witness' (build the stall_witness target, or set DW_STALL_WITNESS)"; return 1; }
	# The guest's configs, checked here first (what ag_config builds).
	{
		sed "s/@FILL_PERCENT@/$AGING_FILL_PERCENT/" "$AGING_DIR/drivewatch.toml"
		printf '\n[[aging.targets]]\nname = "scratch"\nblock_device = "/dev/nvme0n1"\nserial = "DWSN0001"\nnamespace = 1\ndestroy_data = true\n'
	} >"$AG_OUT/drivewatch.toml"
	err=$("$DRIVEWATCH_BIN" check-config "$AG_OUT/drivewatch.toml" 2>&1) ||
		{ dw_die aging "check-config of the guest config: $err"; return 1; }
	aging_qemu_args "$work" || return 1
	command -v fio >/dev/null || dw_need_pkgs fio || return 1
	DW_VM_EXTRA_FILES="${DW_VM_EXTRA_FILES:-} $AGING_DIR/drivewatch.toml:/etc/drivewatch/aging.toml" \
		DW_VM_EXTRA_BINS="${DW_VM_EXTRA_BINS:-} $(command -v fio):/usr/bin/fio $slc:/usr/bin/slc_throttle $witness:/usr/bin/stall_witness" \
		vm_build_initramfs "$work/aging.cpio.gz" "$AGING_DIR/guest.sh" '' || return 1
	DW_VM_APPEND="${DW_VM_APPEND:-} DWVM_AGING_FILL_PERCENT=$AGING_FILL_PERCENT DWVM_AGING_NEW_SERIAL=$AGING_NEW_SERIAL DWVM_AGING_FAST_BPS=$AGING_FAST_BPS DWVM_AGING_SLOW_BPS=$AGING_SLOW_BPS DWVM_AGING_TRIGGER_BYTES=$AGING_TRIGGER_BYTES" \
		vm_start "$AG_OUT" "$work/aging.cpio.gz" "${AGING_QEMU_ARGS[@]}" || return 1
	devices=$(vm_wait_marker aging-devices 120) || return 1
	vm_measure "QEMU start -> guest ready (s)" "$(dw_elapsed "$VM_T0")"
	vm_measure "guest devices" "$devices"
	AG_NS1=$(sed -n 's/.*DWSN0001=[^/]*\/\([^ ]*\).*/\1/p' <<<"$devices")
	aging_s1 || return 1
	aging_s2 || return 1
	aging_s3 || return 1
	aging_s4 || return 1
	aging_s5 || return 1
	aging_s7 || return 1
	aging_history || return 1
	wall=$(vm_wait_exit 60) || return 1
	vm_measure "QEMU start -> exit (s)" "$wall"
	vm_extract_files "$VM_LOG" "$AG_OUT/files" >"$AG_OUT/files.list" || true
	vm_measure "aging scenario wall time (s)" "$(dw_elapsed "$t0")"
	vm_assert_result
}
