# SPDX-License-Identifier: Apache-2.0
# Guest side of the "e2e" scenario (host side: tests/vm/e2e/host.sh).
# Sourced by /init (busybox ash, set -e, /etc/dwvm/lib.sh loaded).
#
# drivewatch runs as this guest's daemon; the host drives QMP and asserts on
# what Prometheus scraped.  This side only does what needs the guest, each
# step when the host says so (dw_wait_host TOKEN):
#   dump-N / recheck-N   nvme-cli JSON of every controller (health-dump-N.tar),
#                        then the SMART logs again (smart-recheck-N.tar)
#   temp-low / temp-restore   nvme set-feature 04h (over-temperature
#                        threshold) of $E2E_TEMP_SERIAL to 300 K / 343 K
#   unplug / replug      wait until the host's device_del / device_add of
#                        $E2E_HOTPLUG_SERIAL shows in sysfs, report its name
#   finish               daemon RSS/CPU, then stop it with SIGTERM
# Unsupported features (APST 0Ch, HCTM 10h, the self-test log; and power
# management 02h for comparison) are queried at the start and shipped as
# unsupported.txt.

E2E_TEMP_SERIAL=${DWVM_E2E_TEMP_SERIAL:-DWSN0002}
E2E_HOTPLUG_SERIAL=${DWVM_E2E_HOTPLUG_SERIAL:-DWSN0001}
E2E_WAIT=${DWVM_E2E_WAIT:-180}

dw_drivewatch_start

# ---- some real I/O first, so that A1 compares non-zero data and command
# counters (written ones are all 0 at boot).  Different amounts per
# namespace, and read != written, so that a swapped field shows.  O_DIRECT:
# every byte reaches the controller.  Done before any dump; the host checks
# that the SMART logs do not move during its comparisons.
e2e_io() { # SERIAL NSID WRITE_64K_BLOCKS READ_64K_BLOCKS
	_c=$(dw_ctrl_by_serial "$1") || { dw_fail "e2e io no controller $1"; return 1; }
	for _ns in $(dw_ns_of_ctrl "$_c"); do
		[ "$(dw_attr "/sys/block/$_ns/nsid")" = "$2" ] || continue
		dd if=/dev/urandom of="/dev/$_ns" bs=64k count="$3" oflag=direct conv=fsync 2>/dev/null ||
			{ dw_fail "e2e io write /dev/$_ns"; return 1; }
		dd if="/dev/$_ns" of=/dev/null bs=64k count="$4" skip=64 iflag=direct 2>/dev/null ||
			{ dw_fail "e2e io read /dev/$_ns"; return 1; }
		dw_mark io "$1 nsid=$2 /dev/$_ns wrote $(($3 * 64)) KiB read $(($4 * 64)) KiB"
		return 0
	done
	dw_fail "e2e io $1 has no nsid $2"
}
e2e_io DWSN0001 1 48 96
e2e_io DWSN0002 1 16 32
e2e_io DWSN0002 2 40 48

# ---- facts for later probes: what QEMU answers for features it lacks.
# One marker per query: "unsupported SERIAL WHAT rc=N first-line".
: >/tmp/unsupported.txt
for c in $(dw_ctrls); do
	sn=$(dw_attr /sys/class/nvme/$c/serial)
	for q in "get-feature -f 0x0c" "get-feature -f 0x10" "self-test-log" "get-feature -f 0x02"; do
		rc=0
		# shellcheck disable=SC2086 # $q is a list of words on purpose
		nvme $q "/dev/$c" >/tmp/uq.out 2>&1 || rc=$?
		{
			echo "## $sn ($c): nvme $q /dev/$c -> exit $rc"
			cat /tmp/uq.out
			echo
		} >>/tmp/unsupported.txt
		dw_mark unsupported "$sn $(echo "$q" | tr " " _) rc=$rc $(head -n 1 /tmp/uq.out)"
	done
done
dw_send_file unsupported.txt /tmp/unsupported.txt

# dump N: nvme-cli reference dump, then mark the guest's Unix time after it
# (the host compares with probe runs that started later).
e2e_dump() {
	dw_wait_host "dump-$1" "$E2E_WAIT"
	dw_health_dump "/tmp/dump-$1"
	_t=$(date +%s)
	dw_send_dir "health-dump-$1.tar" "/tmp/dump-$1"
	dw_mark "dump-done-$1" "$_t"
	dw_wait_host "recheck-$1" "$E2E_WAIT"
	dw_health_dump "/tmp/recheck-$1" smart
	dw_send_dir "smart-recheck-$1.tar" "/tmp/recheck-$1"
	dw_mark "recheck-done-$1" "$(date +%s)"
}

e2e_dump 1

# ---- over-temperature threshold (feature 04h) from inside the guest
set_temp_threshold() { # TOKEN KELVIN
	dw_wait_host "$1" "$E2E_WAIT"
	_c=$(dw_ctrl_by_serial "$E2E_TEMP_SERIAL") || { dw_fail "e2e no controller with serial $E2E_TEMP_SERIAL"; return 1; }
	_rc=0
	nvme set-feature "/dev/$_c" -f 4 -v "$2" >/tmp/sf.out 2>&1 || _rc=$?
	dw_mark "$1-done" "rc=$_rc $_c $(head -n 1 /tmp/sf.out)"
}
set_temp_threshold temp-low 300
set_temp_threshold temp-restore 343

# ---- hot-plug
dw_wait_host unplug "$E2E_WAIT"
gone() { ! dw_ctrl_by_serial "$E2E_HOTPLUG_SERIAL" >/dev/null; }
dw_poll 30 gone || dw_fail "e2e $E2E_HOTPLUG_SERIAL still present after device_del: $(dw_ctrls | tr '\n' ' ')"
dw_mark unplugged "$(dw_uptime) ctrls=$(dw_ctrls | tr '\n' ',')"
# Which NVMe device files the daemon holds (an fd kept on the removed
# controller keeps the kernel from reusing its instance number).
dw_mark daemon-nvme-fds "$(for f in /proc/$DW_SERVICE_PID/fd/*; do readlink "$f"; done 2>/dev/null | grep nvme | tr '\n' ',')"

dw_wait_host replug "$E2E_WAIT"
back() {
	_b=$(dw_ctrl_by_serial "$E2E_HOTPLUG_SERIAL") &&
		[ "$(dw_attr "/sys/class/nvme/$_b/state")" = live ] &&
		[ -n "$(dw_ns_of_ctrl "$_b")" ]
}
dw_poll 30 back || dw_fail "e2e $E2E_HOTPLUG_SERIAL did not come back after device_add: $(dw_ctrls | tr '\n' ' ')"
c=$(dw_ctrl_by_serial "$E2E_HOTPLUG_SERIAL")
dw_mark replugged "$c $(dw_uptime) ns=$(dw_ns_of_ctrl "$c" | tr '\n' ',') ctrls=$(dw_ctrls | tr '\n' ',')"

e2e_dump 2

# ---- end: the daemon's footprint, then a clean stop
dw_wait_host finish "$E2E_WAIT"
if dw_service_alive; then
	dw_mark daemon-alive yes
	dw_daemon_stats "$DW_SERVICE_PID"
else
	dw_mark daemon-alive no
fi
dw_service_stop TERM 10
dw_mark e2e-done "$(dw_uptime)"
