# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Host side of the "power" VM scenario (guest side: power/guest.sh).
# Source after tests/vm/lib.sh, then call power_run OUTDIR WORKDIR.
#
# The real drivewatch runs in the guest with the read latency probe taking
# 6 s turns at 10 and 100 IOPS and then 6 s idle (power/drivewatch.toml); a
# real Prometheus scrapes it every second. QEMU reports no power of its own
# and has one power state (MP 25 W, no idle power), so the only source is
# the power state estimate. Checks:
#   W1 DWSN0001 (one namespace) gets drivewatch_power_at_load_watts{rate="10",
#      source="psd_estimate"} 25 from a window about one rate_period long
#      with a sample a second, and no measured source is claimed
#   W2 it gets drivewatch_idle_power_watts{source="psd_estimate"} 25 from the
#      idle turns; the host command counters moved only by drivewatch's own
#      reads (no window rejected as host_io)
#   W3 DWSN0002 (two namespaces sharing the drive's rate, round-robin) gets
#      its 10-IOPS window and idle power, and both namespaces' histograms
#      fill; every probe run succeeded
# Results: OUTDIR/assertions.txt, OUTDIR/measurements.txt.

POWER_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
POWER_ONE_NS=DWSN0001
POWER_TWO_NS=DWSN0002
POWER_RATE_PERIOD=6  # rate_period and idle_period of power/drivewatch.toml

# pw_check ID EXPR WANT TIMEOUT: prom_wait, failing ID with its output.
pw_check() {
	local out
	out=$(prom_wait "$2" "$3" "$4" 2>&1) || { vm_fail "$1" "$2 != $3: $out"; return 1; }
	echo "$out"
}

# ---------------------------------------------------------------- W1
power_at_load() {
	local ok=1 sn=$POWER_ONE_NS t0 out
	t0=$(dw_now)
	pw_check W1 "drivewatch_power_at_load_watts{serial=\"$sn\",rate=\"10\",source=\"psd_estimate\"}" 25 90 >/dev/null || ok=0
	vm_measure "boot done -> first 10-IOPS power value (s)" "$(dw_elapsed "$t0")"
	# The first window may start before the drive's first probe runs are
	# done; judge the sampling on a later one.
	pw_check W1 "drivewatch_power_windows_total{serial=\"$sn\",rate=\"10\",result=\"reported\"} >= bool 2" 1 60 >/dev/null || ok=0
	pw_check W1 "drivewatch_power_window_samples{serial=\"$sn\",rate=\"10\"} >= bool $((POWER_RATE_PERIOD - 2))" 1 5 >/dev/null || ok=0
	pw_check W1 "drivewatch_power_window_duration_seconds{serial=\"$sn\",rate=\"10\"} >= bool $((POWER_RATE_PERIOD - 2))" 1 5 >/dev/null || ok=0
	pw_check W1 "drivewatch_power_window_duration_seconds{serial=\"$sn\",rate=\"10\"} <= bool $((POWER_RATE_PERIOD + 1))" 1 5 >/dev/null || ok=0
	pw_check W1 "drivewatch_power_at_load_watts{source!=\"psd_estimate\"}" absent 2 >/dev/null || ok=0
	pw_check W1 "drivewatch_read_latency_window_samples{serial=\"$sn\",rate=\"10\",window=\"1m\"} > bool 0" 1 5 >/dev/null || ok=0
	out=$(prom_query "drivewatch_power_window_samples{serial=\"$sn\"} or drivewatch_power_window_duration_seconds{serial=\"$sn\"}" |
		dw_python "$DW_VM_DIR/vmctl.py" jsonpath data.result 2>/dev/null | tr -d '\n ' | head -c 600)
	vm_log "windows: $out"
	vm_measure "power_draw run duration, max over 1 min (s)" "$(prom_value 'max(max_over_time(drivewatch_probe_duration_seconds{probe="power_draw"}[1m]))')"
	vm_measure "10-IOPS window samples / duration (s), $sn" "$(prom_value "drivewatch_power_window_samples{serial=\"$sn\",rate=\"10\"}") / $(prom_value "drivewatch_power_window_duration_seconds{serial=\"$sn\",rate=\"10\"}")"
	((ok)) && vm_pass W1 "$sn: drivewatch_power_at_load_watts{rate=\"10\",source=\"psd_estimate\"} 25 (QEMU's one 25 W state), window ~${POWER_RATE_PERIOD}s with >= $((POWER_RATE_PERIOD - 2)) samples; no measured source claimed"
	return 0
}

# ---------------------------------------------------------------- W2
power_idle() {
	local ok=1 sn=$POWER_ONE_NS n
	pw_check W2 "drivewatch_idle_power_watts{serial=\"$sn\",source=\"psd_estimate\"}" 25 60 >/dev/null || ok=0
	pw_check W2 "drivewatch_power_window_duration_seconds{serial=\"$sn\",rate=\"0\"} >= bool $((POWER_RATE_PERIOD - 2))" 1 5 >/dev/null || ok=0
	# A few windows have passed (W1); none may have been rejected.
	n=$(prom_value "sum(drivewatch_power_windows_total{serial=\"$sn\",result=\"host_io\"})")
	if [[ -n $n && $n != 0 ]]; then
		vm_fail W2 "$sn: $n window(s) rejected as host_io although the guest does no I/O of its own: $(prom_query 'drivewatch_power_windows_total' | head -c 800)"
		ok=0
	fi
	vm_measure "$sn windows by result" "$(prom_query "drivewatch_power_windows_total{serial=\"$sn\"}" | dw_python "$DW_VM_DIR/vmctl.py" jsonpath data.result 2>/dev/null | tr -d '\n ' | head -c 400)"
	((ok)) && vm_pass W2 "$sn: drivewatch_idle_power_watts{source=\"psd_estimate\"} 25 over ~${POWER_RATE_PERIOD}s idle turns; no window rejected as host_io"
	return 0
}

# ---------------------------------------------------------------- W3
power_two_namespaces() {
	local ok=1 sn=$POWER_TWO_NS v
	pw_check W3 "drivewatch_idle_power_watts{serial=\"$sn\",source=\"psd_estimate\"}" 25 30 >/dev/null || ok=0
	# The rate is the drive's, dealt round-robin over its two namespaces
	# (5 IOPS each): the drive runs at 10 IOPS, so its 10-IOPS window is
	# reported as a one-namespace drive's is (at 20 IOPS it never was).
	pw_check W3 "drivewatch_power_at_load_watts{serial=\"$sn\",rate=\"10\",source=\"psd_estimate\"}" 25 60 >/dev/null || ok=0
	pw_check W3 "drivewatch_power_windows_total{serial=\"$sn\",rate=\"10\",result=\"reported\"} >= bool 1" 1 5 >/dev/null || ok=0
	pw_check W3 "drivewatch_power_window_duration_seconds{serial=\"$sn\",rate=\"10\"} >= bool $((POWER_RATE_PERIOD - 2))" 1 5 >/dev/null || ok=0
	# Both namespaces read, each with its own histogram.
	pw_check W3 "count(drivewatch_read_latency_window_samples{serial=\"$sn\",rate=\"10\",window=\"1m\"} > 0)" 2 30 >/dev/null || ok=0
	v=$(prom_value "sum(drivewatch_power_windows_total{serial=\"$sn\",rate=\"10\",result=\"too_short\"})")
	vm_measure "$sn 10-IOPS windows rejected as too_short" "${v:-0}"
	vm_measure "10-IOPS window samples / duration (s), $sn" "$(prom_value "drivewatch_power_window_samples{serial=\"$sn\",rate=\"10\"}") / $(prom_value "drivewatch_power_window_duration_seconds{serial=\"$sn\",rate=\"10\"}")"
	pw_check W3 'count(drivewatch_probe_success == 0)' absent 5 >/dev/null || ok=0
	pw_check W3 'count(drivewatch_probe_success{probe="power_draw"} == 1)' 2 5 >/dev/null || ok=0
	((ok)) && vm_pass W3 "$sn (2 namespaces sharing the drive's 10 IOPS): 10-IOPS power 25 W from a ~${POWER_RATE_PERIOD}s window, both namespaces' histograms filled, idle power 25 W; every probe run succeeded"
	return 0
}

power_log() {
	local log=$PW_OUT/files/service.log
	if [[ ! -s $log ]]; then
		vm_fail "W3 log" "no service.log from the guest"
	elif grep -qE '(^|[ >])(error|warn):' "$log"; then
		vm_fail "W3 log" "warnings or errors in service.log: $(grep -E '(^|[ >])(error|warn):' "$log" | head -n 3 | tr '\n' '|')"
	else
		vm_pass "W3 log" "no warnings or errors in service.log"
	fi
}

# ---------------------------------------------------------------- driver
# power_run OUTDIR WORKDIR: the whole scenario; returns 1 if any check
# failed (listed in OUTDIR/assertions.txt).
power_run() {
	vm_assert_init power "$1"
	PW_OUT=$VM_ASSERT_OUT
	local work=$2 t0
	t0=$(dw_now)
	vm_boot_scenario "$POWER_DIR" no-fragments "$work/power.cpio.gz" || return 1
	power_at_load
	power_idle
	power_two_namespaces
	vm_guest_finish power-done
	power_log
	vm_measure "power scenario wall time (s)" "$(dw_elapsed "$t0")"
	vm_assert_result
}
