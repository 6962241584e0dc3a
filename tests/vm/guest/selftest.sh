# SPDX-License-Identifier: Apache-2.0
# Guest scenario "selftest": proves the paths later stages rely on.
#  1. the service fragment listens on $DWVM_PORT and is reachable from the
#     host through the hostfwd (host curls it and Prometheus scrapes it);
#  2. host qom-set of smart_critical_warning shows up in nvme smart-log;
#  3. host device_del of controller c0 (DWSN0001) removes it from
#     /sys/class/nvme, and device_add brings it back.
# The default service is busybox httpd serving /www; this script keeps
# /www/metrics (Prometheus text format) up to date so the host can check
# the whole chain guest -> hostfwd -> Prometheus.

SN=DWSN0001
PORT=${DWVM_PORT:-9647}

cw_of() { # critical_warning from the SMART log of controller $1
	nvme smart-log "/dev/$1" -o json | sed -n 's/.*"critical_warning"[^0-9]*\([0-9][0-9]*\).*/\1/p' | head -n1
}

write_metrics() { # write_metrics CRITICAL_WARNING
	cat >/www/metrics.tmp <<EOF
# HELP dwvm_selftest_info Static page served from the VM guest.
# TYPE dwvm_selftest_info gauge
dwvm_selftest_info{kernel="$(uname -r)"} 1
# HELP dwvm_critical_warning SMART critical warning read by nvme-cli in the guest.
# TYPE dwvm_critical_warning gauge
dwvm_critical_warning{serial="$SN"} $1
# HELP dwvm_controllers NVMe controllers in /sys/class/nvme.
# TYPE dwvm_controllers gauge
dwvm_controllers $(dw_ctrls | wc -l)
EOF
	mv /www/metrics.tmp /www/metrics
}

mkdir -p /www
echo "dwvm httpd ok $(uname -r)" >/www/index.html
c=$(dw_ctrl_by_serial $SN) || dw_fail "selftest no controller with serial $SN"
write_metrics "$(cw_of "$c")"

dw_service_start
dw_wait_tcp "$PORT" 20 || dw_fail "selftest nothing listens on :$PORT: $(cat /tmp/service.log)"
dw_mark service-up "$PORT $(dw_uptime)"

# --- 2. qom-set smart_critical_warning from the host
dw_mark smart-cw-before "$(cw_of "$c")"
dw_wait_host qom-set 120
v=$(cw_of "$c")
write_metrics "$v"
dw_mark smart-cw "$v"

# --- 3. device_del / device_add of the controller
dw_wait_host unplug 120
gone() { ! dw_ctrl_by_serial $SN >/dev/null; }
dw_poll 30 gone || dw_fail "selftest $SN still present after device_del: $(dw_ctrls | tr '\n' ' ')"
write_metrics 0
dw_mark unplugged "$(dw_uptime) ctrls=$(dw_ctrls | tr '\n' ',') block=$(ls /sys/block | tr '\n' ',')"

dw_wait_host replug 120
back() { _b=$(dw_ctrl_by_serial $SN) && [ "$(dw_attr "/sys/class/nvme/$_b/state")" = live ]; }
dw_poll 30 back || dw_fail "selftest $SN did not come back after device_add: $(dw_ctrls | tr '\n' ' ')"
c=$(dw_ctrl_by_serial $SN)
dw_poll 10 test -n "$(dw_ns_of_ctrl "$c")" || true
v=$(cw_of "$c")
write_metrics "$v"
dw_mark replugged "$c cw=$v ns=$(dw_ns_of_ctrl "$c" | tr '\n' ',') ctrls=$(dw_ctrls | tr '\n' ',')"

dw_wait_host finish 120
dw_mark selftest-done "$(dw_uptime)"
