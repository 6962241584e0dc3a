# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Host side of the "thermal" VM scenario (guest side: thermal/guest.sh).
# Source after tests/vm/lib.sh, then call thermal_run OUTDIR WORKDIR.
#
# The real drivewatch runs in the guest with the health and thermal probes
# polling once a minute (thermal/drivewatch.toml) and asynchronous events
# on; a real Prometheus scrapes it every second. Checks:
#   T1 QEMU's WCTEMP/CCTEMP and the composite over/under thresholds
#      (feature 04h) read back through Prometheus, on both controllers;
#      the AEN machinery is armed (listener up, feature 0Bh bits 7:0 set)
#   T2 changing a threshold in the guest (nvme set-feature 04h) changes the
#      metric through the temperature AEN, measured from the host's command
#      to the changed value on /metrics, and must be far below the 60 s
#      poll interval; a change that raises no event (restore-over) must NOT
#      show before the next poll, which shows the speed came from the AEN
#   T3 APST and HCTM report unsupported (drivewatch_feature_supported 0),
#      every probe run still succeeds, and each is logged once per drive
#      although the power probe ran many times
# Results: OUTDIR/assertions.txt, OUTDIR/measurements.txt.

THERMAL_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
THERMAL_SERIAL=DWSN0002
THERMAL_OTHER=DWSN0001
THERMAL_POLL=60  # health/thermal interval of thermal/drivewatch.toml
THERMAL_BOUND=${THERMAL_BOUND:-10}  # seconds an AEN-driven change may take


# th_metric_value SERIES: the value of one series (exact name{labels} as
# drivewatch writes it, labels sorted) on the guest's /metrics, or empty.
th_metric_value() {
	# awk reads to the end: stopping at the match would leave curl writing
	# into a closed pipe (exit 23), and pipefail would make that the result.
	curl -fsS --max-time 2 "http://127.0.0.1:$VM_HOSTPORT/metrics" 2>/dev/null |
		awk -v s="$1" '!found && index($0, s " ") == 1 {print $2; found = 1}'
}

# th_wait_metric SERIES WANT TIMEOUT_S: poll /metrics every 50 ms until
# SERIES equals WANT (numerically, to 0.001); prints the value seen last.
th_wait_metric() {
	local series=$1 want=$2 to=$3 end v=
	end=$(awk -v t="$(dw_now)" -v d="$to" 'BEGIN{printf "%.3f", t + d}')
	while awk -v a="$(dw_now)" -v b="$end" 'BEGIN{exit !(a < b)}'; do
		v=$(th_metric_value "$series")
		if [[ -n $v ]] && awk -v a="$v" -v b="$want" 'BEGIN{d=a-b; exit !(d < 0.001 && d > -0.001)}'; then
			echo "$v"
			return 0
		fi
		sleep 0.05
	done
	echo "${v:-absent}"
	return 1
}

th_threshold() { # SERIAL THRESHOLD [SENSOR]: the series name on /metrics
	if [[ -n ${3:-} ]]; then
		echo "drivewatch_temperature_threshold_celsius{sensor=\"$3\",serial=\"$1\",threshold=\"$2\"}"
	else
		echo "drivewatch_temperature_threshold_celsius{serial=\"$1\",threshold=\"$2\"}"
	fi
}

# ---------------------------------------------------------------- T1
thermal_thresholds() {
	local sn v ok=1 out
	for sn in $THERMAL_OTHER $THERMAL_SERIAL; do
		for v in 'threshold="wctemp"} 69.85' 'threshold="cctemp"} 99.85' \
			'threshold="over",sensor="composite"} 69.85' \
			'threshold="under",sensor="composite"} -273.15'; do
			out=$(prom_wait "drivewatch_temperature_threshold_celsius{serial=\"$sn\",${v% *}" "${v##* }" 30 2>&1) || {
				vm_fail "T1 thresholds" "$sn: $out"
				ok=0
			}
		done
		for v in "drivewatch_async_event_smart_enabled_raw{serial=\"$sn\"} 255" \
			"drivewatch_feature_supported{serial=\"$sn\",feature=\"temperature_threshold\"} 1" \
			"drivewatch_feature_supported{serial=\"$sn\",feature=\"async_event_config\"} 1"; do
			out=$(prom_wait "${v% *}" "${v##* }" 30 2>&1) || {
				vm_fail "T1 thresholds" "$sn: $out"
				ok=0
			}
		done
	done
	out=$(prom_wait 'drivewatch_async_event_listener_up' 1 10 2>&1) || {
		vm_fail "T1 thresholds" "listener: $out"
		ok=0
	}
	((ok)) && vm_pass "T1 thresholds" "WCTEMP 69.85, CCTEMP 99.85, composite over 69.85 / under -273.15 (0 K) on $THERMAL_OTHER and $THERMAL_SERIAL via Prometheus; AEN listener up, 0Bh bits 7:0 set on both"
	return 0
}

# ---------------------------------------------------------------- T2
# thermal_aen_step TOKEN SERIES WANT: the guest changes a threshold; the new
# value must reach /metrics well before the next poll.
TH_DELAYS=()
thermal_aen_step() {
	local token=$1 series=$2 want=$3 t0 r v d
	vm_wait_marker "wait-host-$token" 60 >/dev/null
	t0=$(dw_now)
	vm_send "$token"
	if v=$(th_wait_metric "$series" "$want" "$THERMAL_BOUND"); then
		d=$(dw_elapsed "$t0")
		TH_DELAYS+=("$d")
		r=$(vm_wait_marker "$token-done" 10)
		vm_log "$token: $series = $v after ${d}s (guest: $r)"
		vm_measure "AEN delay, set-feature ($token) -> /metrics (s)" "$d"
		return 0
	fi
	r=$(vm_wait_marker "$token-done" 10 || true)
	vm_fail "T2 AEN ($token)" "$series is '$v', not $want, ${THERMAL_BOUND}s after the guest's set-feature ($r); poll interval is ${THERMAL_POLL}s"
	return 1
}

thermal_aen() {
	local ok=1 sn=$THERMAL_SERIAL over under out t0 v
	over=$(th_threshold "$sn" over composite)
	under=$(th_threshold "$sn" under composite)
	# Let the probes' first runs settle, so a change cannot be a first run.
	sleep 1
	thermal_aen_step over-low "$over" 26.85 || ok=0
	# The health probe ran with it: the temperature warning bit is set.
	out=$(prom_wait "drivewatch_critical_warning{serial=\"$sn\",bit=\"temperature\"}" 1 5 2>&1) || {
		vm_fail "T2 AEN (health ran)" "$out"
		ok=0
	}
	thermal_aen_step under-high "$under" 56.85 || ok=0
	thermal_aen_step restore-under "$under" -273.15 || ok=0
	# Negative control: 343 K crosses nothing, so QEMU raises no event and
	# the metric must keep its old value until the next poll, ~60 s away.
	vm_wait_marker wait-host-restore-over 60 >/dev/null
	t0=$(dw_now)
	vm_send restore-over
	vm_wait_marker restore-over-done 10 >/dev/null
	sleep 3
	v=$(th_metric_value "$over")
	if ! awk -v a="$v" 'BEGIN{exit !(a > 26.84 && a < 26.86)}'; then
		vm_fail "T2 AEN (no event, no change)" "$over changed to '$v' within $(dw_elapsed "$t0")s although no event was raised: something other than the AEN re-ran the probe"
		ok=0
	fi
	out=$(prom_wait "drivewatch_async_events_total{serial=\"$sn\",type=\"smart\",event=\"temperature\"}" 3 10 2>&1) || {
		vm_fail "T2 AEN (event count)" "$out"
		ok=0
	}
	out=$(prom_wait "absent(drivewatch_async_events_total{serial=\"$THERMAL_OTHER\"})" 1 5 2>&1) || {
		vm_fail "T2 AEN (event count)" "events counted for $THERMAL_OTHER, which raised none: $out"
		ok=0
	}
	local sorted
	sorted=$(printf '%s\n' "${TH_DELAYS[@]}" | sort -n | tr '\n' ' ')
	vm_measure "AEN delays min..max (s), poll interval ${THERMAL_POLL}s" "$sorted"
	((ok)) && vm_pass "T2 AEN" "over 300 K, under 330 K, under 0 K each reached /metrics in ${sorted}s (poll interval ${THERMAL_POLL}s; bound ${THERMAL_BOUND}s); 3 temperature events counted; 343 K (no event) unchanged after 3 s"
	return 0
}

# ---------------------------------------------------------------- T3
thermal_unsupported_metrics() {
	local ok=1 sn out v
	for sn in $THERMAL_OTHER $THERMAL_SERIAL; do
		for v in apst host_thermal_management; do
			out=$(prom_wait "drivewatch_feature_supported{serial=\"$sn\",feature=\"$v\"}" 0 20 2>&1) || {
				vm_fail "T3 unsupported" "$sn $v: $out"
				ok=0
			}
		done
		# QEMU has one power state, and does implement feature 02h
		# (tests/fixtures/qemu/features-*.txt relies on this).
		out=$(prom_wait "drivewatch_current_power_state{serial=\"$sn\"}" 0 10 2>&1) || {
			vm_fail "T3 unsupported" "$sn current power state: $out"
			ok=0
		}
		v=$(prom_value "changes(drivewatch_probe_last_success_timestamp_seconds{probe=\"power\",serial=\"$sn\"}[5m])")
		vm_log "$sn: power probe last-success changed $v times while watched"
		if ! awk -v a="${v:-0}" 'BEGIN{exit !(a >= 3)}'; then
			vm_fail "T3 unsupported" "$sn: the power probe ran only $((${v:-0} + 1)) times; 'logged once' needs several runs"
			ok=0
		fi
	done
	out=$(prom_wait 'count(drivewatch_probe_success == 0)' absent 5 2>&1) || {
		vm_fail "T3 unsupported" "a probe run failed: $(prom_query 'drivewatch_probe_success == 0' | head -c 500)"
		ok=0
	}
	((ok)) && vm_pass "T3 unsupported (metrics)" "drivewatch_feature_supported{feature=apst|host_thermal_management} 0 on both drives, every probe run succeeded, power probe ran >= 4 times each"
	return 0
}

thermal_unsupported_log() {
	local ok=1 sn what n log=$TH_OUT/files/service.log
	if [[ ! -s $log ]]; then
		vm_fail "T3 unsupported (log)" "no service.log from the guest"
		return 0
	fi
	for sn in $THERMAL_OTHER $THERMAL_SERIAL; do
		for what in "autonomous power state transitions" "host controlled thermal management"; do
			n=$(grep -c "drive serial=$sn does not support $what" "$log" || true)
			if [[ $n != 1 ]]; then
				vm_fail "T3 unsupported (log)" "$sn: \"does not support $what\" logged $n times, wanted once"
				ok=0
			fi
		done
	done
	if grep -qE '(^|[ >])(error|warn):' "$log"; then
		vm_fail "T3 unsupported (log)" "warnings or errors in service.log: $(grep -E '(^|[ >])(error|warn):' "$log" | head -n 3 | tr '\n' '|')"
		ok=0
	fi
	n=$(grep -c 'raised asynchronous event' "$log" || true)
	vm_log "service.log: $n asynchronous event lines"
	((ok)) && vm_pass "T3 unsupported (log)" "APST and HCTM missing logged exactly once per drive; no warnings or errors"
	return 0
}

# ---------------------------------------------------------------- driver
# thermal_run OUTDIR WORKDIR: the whole scenario; returns 1 if any check
# failed (listed in OUTDIR/assertions.txt).
thermal_run() {
	vm_assert_init thermal "$1"
	TH_OUT=$VM_ASSERT_OUT
	local work=$2 t0
	t0=$(dw_now)
	DW_VM_APPEND="${DW_VM_APPEND:-} DWVM_THERMAL_SERIAL=$THERMAL_SERIAL" \
		vm_boot_scenario "$THERMAL_DIR" drivewatch.d "$work/thermal.cpio.gz" || return 1
	thermal_thresholds
	thermal_aen
	thermal_unsupported_metrics
	vm_guest_finish thermal-done
	thermal_unsupported_log
	vm_measure "thermal scenario wall time (s)" "$(dw_elapsed "$t0")"
	vm_assert_result
}
