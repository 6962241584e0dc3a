# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Host side of the "latency" VM scenario (guest side: latency/guest.sh).
# Source after tests/vm/lib.sh, then call latency_run OUTDIR WORKDIR.
#
# The real drivewatch runs in the guest with the read latency probe on every
# namespace at 50 IOPS, timeout 1 s (latency/drivewatch.toml); a real
# Prometheus scrapes it every second. Besides the harness' DWSN0001 and
# DWSN0002 the guest has two more controllers:
#   DWSN0003  one 256 KiB namespace: raw over QEMU blkdebug over a file;
#             reads covering 4 of its 64 blocks fail (latency/blkdebug.conf)
#   DWSN0004  one 64 MiB namespace on QEMU null-co: every read takes 3 s
#             (latency-ns), zeros
# Checks:
#   L1 the probe runs on an emulated namespace through the kernel's NVMe
#      driver: DWSN0001's read count grows at the configured 50 IOPS
#      (+-10%, measured between publishes on /metrics), the histogram and
#      the window gauges are in Prometheus, the target is a namespace, and
#      no identity was refused (the guest's sysfs identities are recorded)
#   L2 blkdebug's errors on DWSN0003 are counted by errno name, no other
#      drive has any, and reading goes on: its count still grows after
#      errors were counted, the target stays up
#   L3 DWSN0004's reads time out and are counted while /metrics keeps
#      answering quickly: 20 scrapes from the host with curl, max well
#      under 1 s (LATENCY_SCRAPE_MAX); DWSN0001 keeps reading meanwhile;
#      Prometheus' own scrapes never failed
#   L4 the daemon stayed up throughout and exits 0 on SIGTERM
# Results: OUTDIR/assertions.txt, OUTDIR/measurements.txt.

LATENCY_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LATENCY_RATE=50               # rates of latency/drivewatch.toml
LATENCY_SLOW_NS=3000000000    # null-co latency of DWSN0004's reads
LATENCY_SCRAPE_MAX=${LATENCY_SCRAPE_MAX:-0.5}  # seconds

lt_check() { dw_python "$LATENCY_DIR/check.py" "$@"; }
lt_metrics_url() { echo "http://127.0.0.1:$VM_HOSTPORT/metrics"; }

# The extra QEMU arguments: DWSN0003 (blkdebug) and DWSN0004 (null-co).
latency_qemu_args() {
	local w=$1
	truncate -s 256K "$w/n3.img"
	LATENCY_QEMU_ARGS=(
		-blockdev "driver=file,filename=$w/n3.img,node-name=n3-file"
		-blockdev "driver=blkdebug,node-name=n3-dbg,config=$LATENCY_DIR/blkdebug.conf,image=n3-file"
		-blockdev "driver=raw,file=n3-dbg,node-name=n3"
		-device "nvme,id=c2,serial=DWSN0003,drive=n3"
		-blockdev "driver=null-co,node-name=n4,size=67108864,latency-ns=$LATENCY_SLOW_NS,read-zeroes=on"
		-device "nvme,id=c3,serial=DWSN0004,drive=n4"
	)
}

# ---------------------------------------------------------------- L1
latency_rate() {
	local ok=1 out r v sn=DWSN0001 ids
	# The probe started with the daemon; let the first publish land.
	out=$(prom_wait "drivewatch_read_latency_target_up{serial=\"$sn\",nsid=\"1\"}" 1 30 2>&1) || {
		vm_fail "L1 probe on a namespace" "target not up: $out"
		return 0
	}
	out=$(lt_check rate "$(lt_metrics_url)" drivewatch_read_latency_seconds_count \
		"serial=$sn,nsid=1,rate=$LATENCY_RATE" 16) || true
	vm_measure "DWSN0001 achieved read rate (IOPS, configured $LATENCY_RATE)" "$out"
	r=$(sed -n 's/^rate=\([^ ]*\).*/\1/p' <<<"$out")
	if ! awk -v r="$r" -v w="$LATENCY_RATE" 'BEGIN{exit !(r > w * 0.9 && r < w * 1.1)}'; then
		vm_fail "L1 probe on a namespace" "DWSN0001 nsid 1 read at $out, wanted $LATENCY_RATE IOPS +-10%"
		ok=0
	fi
	for v in "drivewatch_read_latency_seconds_bucket{serial=\"$sn\",nsid=\"1\",rate=\"$LATENCY_RATE\",le=\"10\"}" \
		"drivewatch_read_latency_window_seconds{serial=\"$sn\",nsid=\"1\",rate=\"$LATENCY_RATE\",window=\"1m\",percentile=\"50\"}" \
		"drivewatch_read_latency_window_seconds{serial=\"$sn\",nsid=\"1\",rate=\"$LATENCY_RATE\",window=\"1m\",percentile=\"99\"}" \
		"drivewatch_read_latency_window_max_seconds{serial=\"$sn\",nsid=\"1\",rate=\"$LATENCY_RATE\",window=\"1m\"}" \
		"drivewatch_read_latency_window_samples{serial=\"$sn\",nsid=\"1\",rate=\"$LATENCY_RATE\",window=\"1m\"}"; do
		out=$(prom_value "$v" 2>/dev/null) || out=
		if ! awk -v a="${out:-0}" 'BEGIN{exit !(a > 0)}'; then
			vm_fail "L1 probe on a namespace" "$v is '${out:-absent}' in Prometheus, wanted > 0"
			ok=0
		fi
	done
	vm_measure "DWSN0001 p50 / p99 over 1m (s)" "$(prom_value "drivewatch_read_latency_window_seconds{serial=\"$sn\",nsid=\"1\",window=\"1m\",percentile=\"50\"}") / $(prom_value "drivewatch_read_latency_window_seconds{serial=\"$sn\",nsid=\"1\",window=\"1m\",percentile=\"99\"}")"
	# Five namespaces: DWSN0001, DWSN0002 (two), DWSN0003, DWSN0004. The
	# slow one opens only after the kernel's partition scan (3 s a read).
	ids=$(vm_markers | sed -n 's/^DWVM-MARK: ns-identity //p' | tr '\n' ';')
	vm_measure "guest sysfs identities (name maj:min serial nsid)" "$ids"
	out=$(prom_wait 'count(drivewatch_read_latency_target_up == 1 and on(serial, nsid) drivewatch_read_latency_target_info{kind="namespace"})' 5 60 2>&1) || {
		vm_fail "L1 probe on a namespace" "not all 5 namespace targets up: $out; guest sysfs: $ids"
		ok=0
	}
	vm_measure "all 5 namespaces open (s waited after L1's rate check)" "${out%% *}"
	out=$(prom_value "sum(drivewatch_read_latency_identity_mismatches_total)")
	if [[ $out != 0 ]]; then
		vm_fail "L1 probe on a namespace" "identity mismatches '$out' (want 0); guest sysfs: $ids"
		ok=0
	fi
	((ok)) && vm_pass "L1 probe on a namespace" "DWSN0001 nsid 1 read at ${r} IOPS (configured $LATENCY_RATE); histogram and 1m window gauges in Prometheus; all 5 namespaces up with their sysfs identity verified"
	return 0
}

# ---------------------------------------------------------------- L2
latency_errors() {
	local ok=1 out sn=DWSN0003 c1 c2 e1 e2 name
	out=$(prom_wait "count(drivewatch_read_errors_total{serial=\"$sn\"} > 0)" 1 30 2>&1) || {
		vm_fail "L2 blkdebug errors" "no error counted on $sn within 30 s: $out"
		return 0
	}
	name=$(prom_query "drivewatch_read_errors_total{serial=\"$sn\"}" |
		dw_python "$DW_VM_DIR/vmctl.py" jsonpath data.result.0.metric.error)
	vm_measure "DWSN0003 error label for blkdebug's EIO" "$name"
	# The kernel turns the controller's Unrecovered Read Error (QEMU's
	# answer to an EIO from its block layer, NVMe 2.0 status 02h/81h) into
	# BLK_STS_MEDIUM, which reaches user space as ENODATA, not EIO.
	if [[ $name != ENODATA && $name != EIO ]]; then
		vm_fail "L2 blkdebug errors" "$sn's errors are labelled '$name', wanted an errno name (ENODATA or EIO)"
		ok=0
	fi
	c1=$(lt_check value "$(lt_metrics_url)" drivewatch_read_latency_seconds_count "serial=$sn,nsid=1")
	e1=$(lt_check value "$(lt_metrics_url)" drivewatch_read_errors_total "serial=$sn,error=$name")
	sleep 11 # two publishes
	c2=$(lt_check value "$(lt_metrics_url)" drivewatch_read_latency_seconds_count "serial=$sn,nsid=1")
	e2=$(lt_check value "$(lt_metrics_url)" drivewatch_read_errors_total "serial=$sn,error=$name")
	vm_measure "DWSN0003 reads / errors, 11 s apart" "$c1 -> $c2 / $e1 -> $e2"
	if ! awk -v a="${c1:-0}" -v b="${c2:-0}" -v e="${e1:-0}" -v f="${e2:-0}" 'BEGIN{exit !(b > a + 100 && f > e && e > 0)}'; then
		vm_fail "L2 blkdebug errors" "$sn: reads $c1 -> $c2, errors $e1 -> $e2 over 11 s: reading did not go on after errors"
		ok=0
	fi
	# 4 of 64 blocks fail: about 6% of the reads.
	if ! awk -v c="$c2" -v e="$e2" 'BEGIN{r = e / (c + e); exit !(r > 0.02 && r < 0.12)}'; then
		vm_fail "L2 blkdebug errors" "$sn: $e2 errors for $c2 good reads; 4/64 = 6% expected"
		ok=0
	fi
	out=$(prom_value "count(drivewatch_read_errors_total{serial!=\"$sn\"} > 0)")
	if [[ -n $out ]]; then
		vm_fail "L2 blkdebug errors" "errors counted on drives without injected errors: $(prom_query "drivewatch_read_errors_total{serial!=\"$sn\"} > 0" | head -c 400)"
		ok=0
	fi
	out=$(prom_wait "drivewatch_read_latency_target_up{serial=\"$sn\"}" 1 5 2>&1) || {
		vm_fail "L2 blkdebug errors" "$sn target not up: $out"
		ok=0
	}
	((ok)) && vm_pass "L2 blkdebug errors" "$sn: $e2 reads failed with $name (blkdebug EIO), reads kept growing ($c1 -> $c2 in 11 s), target up, no errors elsewhere"
	return 0
}

# ---------------------------------------------------------------- L3
latency_timeouts() {
	local ok=1 out sn=DWSN0004 t1 t2 times=() i t max med c1 c2
	out=$(prom_wait "count(drivewatch_read_timeouts_total{serial=\"$sn\"} >= 2)" 1 60 2>&1) || {
		vm_fail "L3 timeouts" "fewer than 2 timeouts counted on $sn within 60 s: $out"
		return 0
	}
	t1=$(lt_check value "$(lt_metrics_url)" drivewatch_read_timeouts_total "serial=$sn")
	c1=$(lt_check value "$(lt_metrics_url)" drivewatch_read_latency_seconds_count "serial=DWSN0001,nsid=1")
	for i in $(seq 20); do
		t=$(curl -fsS -o /dev/null --max-time 5 -w '%{time_total}' "$(lt_metrics_url)") || t=5
		times+=("$t")
		sleep 0.4
	done
	t2=$(lt_check value "$(lt_metrics_url)" drivewatch_read_timeouts_total "serial=$sn")
	c2=$(lt_check value "$(lt_metrics_url)" drivewatch_read_latency_seconds_count "serial=DWSN0001,nsid=1")
	max=$(printf '%s\n' "${times[@]}" | sort -g | tail -n 1)
	med=$(printf '%s\n' "${times[@]}" | sort -g | sed -n 10p)
	vm_measure "scrape time under a hung namespace, 20 curls: median / max (s)" "$med / $max"
	vm_measure "DWSN0004 timeouts during the scrapes" "$t1 -> $t2"
	if ! awk -v m="$max" -v b="$LATENCY_SCRAPE_MAX" 'BEGIN{exit !(m < b)}'; then
		vm_fail "L3 timeouts" "slowest of 20 scrapes took ${max}s (median ${med}s), wanted < ${LATENCY_SCRAPE_MAX}s"
		ok=0
	fi
	if ! awk -v a="$t1" -v b="$t2" 'BEGIN{exit !(b > a)}'; then
		vm_fail "L3 timeouts" "$sn timeouts did not grow while scraping: $t1 -> $t2"
		ok=0
	fi
	if ! awk -v a="$c1" -v b="$c2" 'BEGIN{exit !(b > a)}'; then
		vm_fail "L3 timeouts" "DWSN0001 stopped reading while DWSN0004 hung: $c1 -> $c2"
		ok=0
	fi
	# Since the daemon was up (before, the guest was still booting).
	local since=$(($(date +%s) - LT_UP_AT - 1))
	out=$(prom_value "max_over_time(scrape_duration_seconds{job=\"drivewatch\"}[${since}s])")
	vm_measure "Prometheus' slowest scrape since the daemon was up (s)" "$out"
	out=$(prom_value "min_over_time(up{job=\"drivewatch\"}[${since}s])")
	if [[ $out != 1 ]]; then
		vm_fail "L3 timeouts" "a Prometheus scrape failed during the run (min up = '$out')"
		ok=0
	fi
	out=$(prom_value "drivewatch_read_latency_window_max_seconds{serial=\"$sn\",window=\"1m\"}")
	vm_measure "DWSN0004 window max (s; +Inf after a timeout)" "$out"
	((ok)) && vm_pass "L3 timeouts" "$sn (reads take 3 s, timeout 1 s): timeouts $t1 -> $t2 while 20 scrapes took median ${med}s, max ${max}s (< ${LATENCY_SCRAPE_MAX}s); DWSN0001 kept reading; every Prometheus scrape succeeded"
	return 0
}

# ---------------------------------------------------------------- driver
# latency_run OUTDIR WORKDIR: the whole scenario; returns 1 if any check
# failed (listed in OUTDIR/assertions.txt).
latency_run() {
	vm_assert_init latency "$1"
	LT_OUT=$VM_ASSERT_OUT
	local work=$2 t0 wall rc
	t0=$(dw_now)
	latency_qemu_args "$work"
	vm_boot_scenario "$LATENCY_DIR" drivewatch.d "$work/latency.cpio.gz" "${LATENCY_QEMU_ARGS[@]}" || return 1
	LT_UP_AT=$(date +%s)
	latency_rate
	latency_errors
	latency_timeouts
	vm_wait_marker wait-host-finish 60 >/dev/null
	vm_send finish
	rc=$(vm_wait_marker service-exit 40) || rc=missing
	vm_wait_marker latency-done 30 >/dev/null
	wall=$(vm_wait_exit 60)
	vm_measure "QEMU start -> exit (s)" "$wall"
	vm_measure "guest daemon CPU seconds / age (s)" "$(vm_wait_marker daemon-cpu 1) / $(vm_wait_marker daemon-age 1)"
	if [[ $rc == 0 ]]; then
		vm_pass "L4 daemon" "up throughout, exit 0 on SIGTERM"
	else
		vm_fail "L4 daemon" "exit status on SIGTERM: $rc"
	fi
	vm_extract_files "$VM_LOG" "$LT_OUT/files" >"$LT_OUT/files.list" || true
	vm_measure "latency scenario wall time (s)" "$(dw_elapsed "$t0")"
	vm_assert_result
}
