# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Host side of the "smartd" VM scenario (guest side: smartd/guest.sh).
# Source after tests/vm/lib.sh, then call smartd_run OUTDIR WORKDIR.
#
# The real drivewatch runs in the guest with the self_test, error_log and
# persistent_event_log probes every 2 s (smartd/drivewatch.toml), scraped by
# a real Prometheus every second. Checks:
#   S1 QEMU lacks device self-test (OACS bit 4 clear), the persistent
#      event log (LPA bit 4 clear) and the OCP SMART extended log (C0h is
#      answered Invalid Field): drivewatch_feature_supported 0 for each
#      on both drives, every run of the three probes succeeds, and no
#      self-test is started although the schedule is due
#   S2 the error log is read: drivewatch_error_log_newest_sequence matches
#      nvme-cli's error-log view before and after commands that fail on the
#      drive (a read past the namespace end, a reserved admin opcode, a
#      device self-test); if QEMU records an entry the counters must move,
#      if it does not the evidence is kept in provoke.txt and reported
#      `drivewatch selftest run` refuses the drive (no self-test) with exit
#      status 2 and a message naming OACS bit 4
#   S3 a daemon restart (SIGTERM, start again) keeps every error-log
#      counter where it was, and the state file is in the state directory
#   S4 each "does not support" line is logged exactly once per drive and
#      daemon run; nothing else at warn or error level
# Results: OUTDIR/assertions.txt, OUTDIR/measurements.txt.

SMARTD_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SMARTD_SERIAL=DWSN0001
SMARTD_OTHER=DWSN0002


# The error-log series of a drive on /metrics, sorted, one per line.
sm_error_series() {
	curl -fsS --max-time 2 "http://127.0.0.1:$VM_HOSTPORT/metrics" |
		grep -E "^drivewatch_error_log_(new_entries_total|missed_entries_total|newest_sequence)\{.*serial=\"$1\"" | sort
}

# nvme-cli's highest error_count in an `nvme error-log -o json` section of
# provoke.txt ("before" or "after").
sm_cli_count() {
	awk -v want="== nvme error-log $1" '
		$0 == want { on = 1; next }
		/^== / { on = 0 }
		on && /"error_count"/ { gsub(/[^0-9]/, "", $0); if ($0 + 0 > max) max = $0 + 0 }
		END { print max + 0 }' "$SM_OUT/files/provoke.txt"
}

# ---------------------------------------------------------------- S1
smartd_unsupported() {
	local ok=1 sn f p out
	for sn in $SMARTD_SERIAL $SMARTD_OTHER; do
		for f in self_test persistent_event_log ocp_smart_extended; do
			out=$(prom_wait "drivewatch_feature_supported{serial=\"$sn\",feature=\"$f\"}" 0 20 2>&1) || {
				vm_fail "S1 unsupported" "$sn $f: $out"
				ok=0
			}
		done
		for p in self_test error_log persistent_event_log ocp_smart; do
			out=$(prom_wait "drivewatch_probe_success{serial=\"$sn\",probe=\"$p\"}" 1 20 2>&1) || {
				vm_fail "S1 unsupported" "$sn probe $p: $out"
				ok=0
			}
		done
		v=$(prom_value "changes(drivewatch_probe_last_success_timestamp_seconds{probe=\"self_test\",serial=\"$sn\"}[5m])")
		if ! awk -v a="${v:-0}" 'BEGIN{exit !(a >= 2)}'; then
			vm_fail "S1 unsupported" "$sn: the self_test probe ran only $((${v:-0} + 1)) times; 'logged once' needs several runs"
			ok=0
		fi
	done
	out=$(prom_wait 'absent(drivewatch_self_test_in_progress)' 1 2 2>&1) || {
		vm_fail "S1 unsupported" "self-test series exported for a drive without self-test: $out"
		ok=0
	}
	out=$(prom_wait 'absent(drivewatch_ocp_physical_media_written_bytes_total)' 1 2 2>&1) || {
		vm_fail "S1 unsupported" "OCP C0h series exported for a drive without the log: $out"
		ok=0
	}
	((ok)) && vm_pass "S1 unsupported" "feature_supported{self_test,persistent_event_log,ocp_smart_extended} 0 on both drives; self_test, error_log, persistent_event_log and ocp_smart probes succeed, self_test ran >= 3 times each"
	return 0
}

# ---------------------------------------------------------------- S2
SM_BEFORE=
smartd_error_log() {
	local ok=1 out before after cli_before cli_after seq
	out=$(prom_wait "drivewatch_error_log_newest_sequence{serial=\"$SMARTD_SERIAL\"}" 0 20 2>&1) || {
		vm_fail "S2 error log" "QEMU's empty error log should read as sequence 0: $out"
		ok=0
	}
	before=$(sm_error_series "$SMARTD_SERIAL")
	printf '%s\n' "$before" >"$SM_OUT/error-series-before.txt"
	vm_wait_marker wait-host-provoke 60 >/dev/null
	vm_send provoke
	vm_wait_marker provoke-done 60 >/dev/null
	vm_extract_files "$VM_LOG" "$SM_OUT/files" provoke.txt >/dev/null
	cli_before=$(sm_cli_count before)
	cli_after=$(sm_cli_count after)
	vm_measure "nvme-cli error_count before / after provoking" "$cli_before / $cli_after"
	if ! grep -q 'does not support device self-test (Identify Controller OACS bit 4 is clear)' "$SM_OUT/files/provoke.txt" ||
		! awk '/^== drivewatch selftest run/ {on = 1; next} /^== / {on = 0} on && /^rc=/ {print}' "$SM_OUT/files/provoke.txt" | grep -qx 'rc=2'; then
		vm_fail "S2 selftest run" "drivewatch selftest run did not refuse the drive with exit status 2: $(awk '/^== drivewatch selftest run/ {on = 1; next} /^== / {on = 0} on' "$SM_OUT/files/provoke.txt" | tr '\n' '|')"
		ok=0
	fi
	# Two probe intervals for drivewatch to catch up.
	sleep 5
	after=$(sm_error_series "$SMARTD_SERIAL")
	printf '%s\n' "$after" >"$SM_OUT/error-series-after.txt"
	seq=$(awk '/^drivewatch_error_log_newest_sequence/ {print $2}' <<<"$after")
	if [[ $seq != "$cli_after" ]]; then
		vm_fail "S2 error log" "drivewatch_error_log_newest_sequence is '$seq', nvme-cli's error-log says $cli_after"
		ok=0
	fi
	if ((cli_after > cli_before)); then
		if ! grep -q '^drivewatch_error_log_new_entries_total' <<<"$after"; then
			vm_fail "S2 error log" "QEMU recorded $((cli_after - cli_before)) entries but no new_entries_total series appeared"
			ok=0
		fi
		SM_PROVOKED="QEMU recorded $((cli_after - cli_before)) entries and the counters moved: $(grep new_entries_total <<<"$after" | tr '\n' ' ')"
	else
		SM_PROVOKED="QEMU 7.2 recorded no Error Information log entry for a read past the namespace end, a reserved admin opcode or an unsupported self-test (nvme-cli error_count stays $cli_after; the commands' statuses are in provoke.txt), so the counters cannot move here"
	fi
	vm_measure "error log provoking" "$SM_PROVOKED"
	SM_BEFORE=$after
	((ok)) && vm_pass "S2 error log" "read on every run; sequence $seq = nvme-cli's $cli_after; $SM_PROVOKED; 'drivewatch selftest run' refused the drive (exit 2, OACS bit 4 clear)"
	return 0
}

# ---------------------------------------------------------------- S3
smartd_restart() {
	local ok=1 after state
	vm_wait_marker wait-host-restart 60 >/dev/null
	vm_send restart
	vm_wait_marker restarted 60 >/dev/null
	state=$(vm_wait_marker state-dir 5)
	vm_measure "state directory after the first run" "$state"
	if [[ $state != *"error-log-$SMARTD_SERIAL.state"* || $state != *"error-log-$SMARTD_OTHER.state"* ]]; then
		vm_fail "S3 restart" "no error-log state files in /var/lib/drivewatch: '$state'"
		ok=0
	fi
	# The restarted daemon's probes have run (fresh last-success stamps).
	prom_wait "count(drivewatch_probe_success{probe=\"error_log\"} == 1)" 2 20 >/dev/null || true
	sleep 5
	after=$(sm_error_series "$SMARTD_SERIAL")
	printf '%s\n' "$after" >"$SM_OUT/error-series-restarted.txt"
	if [[ -z $after || $after != "$SM_BEFORE" ]]; then
		vm_fail "S3 restart" "error-log series changed across the restart: before [$(tr '\n' ' ' <<<"$SM_BEFORE")] after [$(tr '\n' ' ' <<<"$after")]"
		ok=0
	fi
	((ok)) && vm_pass "S3 restart" "error-log series identical across a SIGTERM restart ($(tr '\n' ' ' <<<"$after")); state files: $state"
	return 0
}

# ---------------------------------------------------------------- S4
smartd_log_once() {
	local ok=1 sn what n log
	for log in "$SM_OUT/files/service-1.log" "$SM_OUT/files/service.log"; do
		if [[ ! -s $log ]]; then
			vm_fail "S4 logged once" "no ${log##*/} from the guest"
			ok=0
			continue
		fi
		for sn in $SMARTD_SERIAL $SMARTD_OTHER; do
			for what in "device self-test" "the persistent event log"; do
				n=$(grep -c "drive serial=$sn does not support $what" "$log" || true)
				if [[ $n != 1 ]]; then
					vm_fail "S4 logged once" "${log##*/}: $sn: \"does not support $what\" logged $n times, wanted once"
					ok=0
				fi
			done
		done
		if grep -E '(^|[ >])(error|warn):' "$log" | grep -qv 'error log entry'; then
			vm_fail "S4 logged once" "${log##*/}: warnings or errors: $(grep -E '(^|[ >])(error|warn):' "$log" | head -n 3 | tr '\n' '|')"
			ok=0
		fi
		if grep -q 'self-test' "$log" && grep -q 'started the scheduled' "$log"; then
			vm_fail "S4 logged once" "${log##*/}: a scheduled self-test was started on a drive without self-test"
			ok=0
		fi
	done
	((ok)) && vm_pass "S4 logged once" "self-test and persistent event log missing logged exactly once per drive in each daemon run; no warnings or errors"
	return 0
}

# ---------------------------------------------------------------- driver
smartd_run() {
	vm_assert_init smartd "$1"
	SM_OUT=$VM_ASSERT_OUT
	local work=$2 t0
	t0=$(dw_now)
	DW_VM_APPEND="${DW_VM_APPEND:-} DWVM_SMARTD_SERIAL=$SMARTD_SERIAL" \
		vm_boot_scenario "$SMARTD_DIR" drivewatch.d "$work/smartd.cpio.gz" || return 1
	# A few runs of the 2 s probes before judging "logged once".
	sleep 4
	smartd_unsupported
	smartd_error_log
	smartd_restart
	vm_guest_finish smartd-done
	smartd_log_once
	vm_measure "smartd scenario wall time (s)" "$(dw_elapsed "$t0")"
	vm_assert_result
}
