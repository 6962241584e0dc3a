# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Host side of the "privilege" VM scenario (guest side: privilege/guest.sh).
# Source after tests/vm/lib.sh, then call privilege_run OUTDIR WORKDIR.
#
# The real drivewatch runs in the guest without CAP_SYS_ADMIN (util-linux
# setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin, copied into the
# initramfs with its libraries), scraped every second by a real Prometheus.
# On Linux 6.1 every NVMe admin passthrough then fails with EACCES. Checks:
#   P1 the daemon really runs without CAP_SYS_ADMIN (CapEff/CapBnd bit 21
#      clear) and nvme-cli run the same way is refused
#   P2 /metrics answers (up == 1) and every controller has
#      drivewatch_admin_commands_permitted 0 and a successful thermal probe
#   P3 drivewatch_hwmon_temperature_celsius{sensor="composite"} equals the
#      guest's hwmon temp1_input (QEMU: 323 K = 49.85 °C); the hwmon
#      thresholds are exported; drivewatch_temperature_celsius (admin) is not
#   P4 read latency works: every namespace has
#      drivewatch_read_latency_target_up 1 and its read count grows
#   P5 the health probe is marked failed (probe_success 0), not hidden
#   P6 "admin passthrough denied" is logged exactly once per drive
# Results: OUTDIR/assertions.txt, OUTDIR/measurements.txt.

PRIVILEGE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)


# Like vm_boot_drivewatch, but waits for the thermal probe: the health probe
# cannot succeed without CAP_SYS_ADMIN.
privilege_boot() {
	local out=$1 initrd=$2 setpriv_libs lib extra
	mkdir -p "$out" || return 1
	vm_drivewatch_config "$out/drivewatch.toml" || return 1
	command -v setpriv >/dev/null || { dw_die privilege "no setpriv on the host (util-linux)"; return 1; }
	extra="$(command -v setpriv):/usr/bin/setpriv"
	# setpriv's libraries besides libc (drivewatch brings libc): libcap-ng.
	setpriv_libs=$(ldd "$(command -v setpriv)" | awk '/=> \//{print $3}')
	for lib in $setpriv_libs; do extra+=" $lib:$lib"; done
	DW_VM_EXTRA_FILES="${DW_VM_EXTRA_FILES:-} $extra $out/drivewatch.toml:/etc/drivewatch/drivewatch.toml" \
		vm_build_initramfs "$initrd" "$PRIVILEGE_DIR/guest.sh" \
		"exec /usr/bin/setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin drivewatch --config.file=/etc/drivewatch/drivewatch.toml --web.listen-address=0.0.0.0:\${DWVM_PORT:-9647}" || return 1
	vm_start "$out" "$initrd" || return 1
	prom_start "$out" "127.0.0.1:$VM_HOSTPORT" 1s || return 1
	vm_wait_marker service-up 120 >/dev/null || return 1
	prom_wait_up 60 || return 1
	DW_VM_NCTRL_SEEN=$(vm_wait_marker ctrl-count 10) || return 1
	DW_VM_BOOT_SECONDS=$(dw_elapsed "$VM_T0")
}

privilege_caps() {
	local caps cli
	caps=$(vm_wait_marker caps 20)
	cli=$(vm_wait_marker nvme-cli 20)
	vm_measure "daemon capabilities" "$caps"
	vm_measure "nvme-cli id-ctrl without CAP_SYS_ADMIN" "$cli"
	local eff bnd
	eff=$(sed -n 's/.*CapEff:[[:space:]]*\([0-9a-f]*\).*/\1/p' <<<"$caps")
	bnd=$(sed -n 's/.*CapBnd:[[:space:]]*\([0-9a-f]*\).*/\1/p' <<<"$caps")
	if [[ -z $eff || -z $bnd ]] || (((16#$eff >> 21) & 1)) || (((16#$bnd >> 21) & 1)); then
		vm_fail "P1 no CAP_SYS_ADMIN" "CapEff=$eff CapBnd=$bnd ($caps)"
	elif [[ $cli != refused* ]]; then
		vm_fail "P1 no CAP_SYS_ADMIN" "nvme-cli was not refused: $cli"
	else
		vm_pass "P1 no CAP_SYS_ADMIN" "CapEff=$eff CapBnd=$bnd (bit 21 clear); nvme-cli: $cli"
	fi
}

privilege_metrics() {
	local n=$DW_VM_NCTRL_SEEN out ok=1 line sn dir milli want got
	out=$(prom_wait 'count(drivewatch_admin_commands_permitted == 0)' "$n" 30 2>&1) || {
		vm_fail "P2 marked" "admin_commands_permitted 0 on $n controllers: $out"
		ok=0
	}
	out=$(prom_wait 'count(drivewatch_probe_success{probe="thermal"} == 1)' "$n" 30 2>&1) || {
		vm_fail "P2 marked" "thermal probe success on $n controllers: $out"
		ok=0
	}
	((ok)) && vm_pass "P2 marked" "/metrics answers (up 1); drivewatch_admin_commands_permitted 0 and thermal probe success 1 on all $n controllers"

	ok=1
	local seen=0
	while read -r line; do
		# "DWVM-MARK: hwmon SERIAL DIR MILLIDEGREES"
		read -r _ _ sn dir milli <<<"$line"
		seen=$((seen + 1))
		want=$(awk -v m="$milli" 'BEGIN{printf "%.2f", m/1000}')
		got=$(prom_value "drivewatch_hwmon_temperature_celsius{serial=\"$sn\",sensor=\"composite\"}")
		got=$(awk -v g="${got:-nan}" 'BEGIN{printf "%.2f", g}')
		vm_measure "hwmon composite $sn ($dir)" "guest ${want} °C, drivewatch ${got} °C"
		if [[ $got != "$want" ]]; then
			vm_fail "P3 hwmon" "$sn: drivewatch_hwmon_temperature_celsius $got, guest temp1_input $want"
			ok=0
		fi
	done < <(vm_markers | grep '^DWVM-MARK: hwmon ')
	if ((seen != n)); then
		vm_fail "P3 hwmon" "the guest has $seen hwmon devices for $n controllers"
		ok=0
	fi
	out=$(prom_wait 'count(drivewatch_hwmon_temperature_threshold_celsius{threshold="over"})' "$n" 10 2>&1) || {
		vm_fail "P3 hwmon" "hwmon over-thresholds: $out"
		ok=0
	}
	out=$(prom_wait 'absent(drivewatch_temperature_celsius)' 1 2 2>&1) || {
		vm_fail "P3 hwmon" "drivewatch_temperature_celsius exported without passthrough: $out"
		ok=0
	}
	((ok)) && vm_pass "P3 hwmon" "composite temperature from hwmon on all $n controllers equals the guest's temp1_input; over-thresholds exported; no admin temperature series"

	ok=1
	out=$(prom_wait 'count(drivewatch_read_latency_target_up == 1)' "${DW_VM_NNS:-3}" 60 2>&1) || {
		vm_fail "P4 read latency" "target_up 1 on ${DW_VM_NNS:-3} namespaces: $out"
		ok=0
	}
	sleep 5
	got=$(prom_value 'count(increase(drivewatch_read_latency_seconds_count[30s]) > 0)')
	vm_measure "namespaces whose read count grew over 30 s" "${got:-0}"
	if [[ ${got:-0} != "${DW_VM_NNS:-3}" ]]; then
		vm_fail "P4 read latency" "read count grew on ${got:-0} of ${DW_VM_NNS:-3} namespaces"
		ok=0
	fi
	((ok)) && vm_pass "P4 read latency" "all ${DW_VM_NNS:-3} namespaces up and reading without CAP_SYS_ADMIN"

	if ! out=$(prom_wait 'count(drivewatch_probe_success{probe="health"} == 0)' "$n" 10 2>&1); then
		vm_fail "P5 health marked failed" "$out"
	else
		vm_pass "P5 health marked failed" "drivewatch_probe_success{probe=\"health\"} 0 on all $n controllers"
	fi
}

privilege_log_once() {
	local log=$PV_OUT/files/service.log sn n ok=1
	[[ -s $log ]] || { vm_fail "P6 logged once" "no service.log from the guest"; return 0; }
	for sn in DWSN0001 DWSN0002; do
		n=$(grep -c "drive serial=$sn (.*): admin passthrough denied (needs CAP_SYS_ADMIN on Linux 6.1)" "$log" || true)
		if [[ $n != 1 ]]; then
			vm_fail "P6 logged once" "$sn: warning logged $n times, wanted once"
			ok=0
		fi
	done
	grep 'admin passthrough denied' "$log" | head -n 2 >"$PV_OUT/warning.txt"
	((ok)) && vm_pass "P6 logged once" "one 'admin passthrough denied' warning per drive: $(head -n 1 "$PV_OUT/warning.txt")"
	return 0
}

privilege_run() {
	vm_assert_init privilege "$1"
	PV_OUT=$VM_ASSERT_OUT
	local work=$2 t0
	t0=$(dw_now)
	DW_VM_DRIVEWATCH_CONFIG=$PRIVILEGE_DIR/drivewatch.toml \
		DW_VM_DRIVEWATCH_FRAGMENTS=$PRIVILEGE_DIR/drivewatch.d \
		privilege_boot "$PV_OUT" "$work/privilege.cpio.gz" || return 1
	vm_measure "QEMU start -> /metrics scraped (s)" "$DW_VM_BOOT_SECONDS"
	sleep 6 # a few 2 s health/thermal runs before judging "logged once"
	privilege_caps
	privilege_metrics
	curl -fsS --max-time 5 "http://127.0.0.1:$VM_HOSTPORT/metrics" >"$PV_OUT/metrics.txt" || vm_fail "P2 marked" "final scrape failed"
	vm_guest_finish privilege-done
	privilege_log_once
	vm_measure "privilege scenario wall time (s)" "$(dw_elapsed "$t0")"
	vm_assert_result
}
