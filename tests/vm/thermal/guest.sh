# SPDX-License-Identifier: Apache-2.0
# Guest side of the "thermal" VM scenario (host side: tests/vm/thermal/host.sh).
# Sourced by /init (busybox ash, set -e, /etc/dwvm/lib.sh loaded).
#
# drivewatch runs as the daemon. Each step, when the host says so, changes
# the composite temperature thresholds (feature 04h) of $THERMAL_SERIAL with
# nvme-cli; QEMU's composite temperature is a fixed 323 K, so
#   over-low       over-threshold 300 K   -> temperature AEN
#   under-high     under-threshold 330 K  -> temperature AEN
#   restore-under  under-threshold 0 K    -> temperature AEN (still over 300 K)
#   restore-over   over-threshold 343 K   -> no event (nothing crossed)
# Each step marks "<step>-done rc=N <uptime before> <uptime after>".

THERMAL_SERIAL=${DWVM_THERMAL_SERIAL:-DWSN0002}

dw_drivewatch_start
c=$(dw_ctrl_by_serial "$THERMAL_SERIAL") || { dw_fail "thermal no controller $THERMAL_SERIAL"; exit 1; }
dw_mark thermal-ctrl "$c"

thermal_step() { # TOKEN CDW11
	dw_wait_host "$1" 120
	_before=$(dw_uptime)
	_rc=0
	nvme set-feature "/dev/$c" -f 4 -v "$2" >/tmp/step.out 2>&1 || _rc=$?
	dw_mark "$1-done" "rc=$_rc $_before $(dw_uptime) $(head -n 1 /tmp/step.out)"
}
thermal_step over-low 300
thermal_step under-high $(((1 << 20) | 330))
thermal_step restore-under $((1 << 20))
thermal_step restore-over 343

dw_wait_host finish 120
dw_service_stop TERM 20
dw_mark thermal-done
