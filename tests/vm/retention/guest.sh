# SPDX-License-Identifier: Apache-2.0
# Guest side of the "retention" VM scenario (host side:
# tests/vm/retention/host.sh). Sourced by /init (busybox ash, set -e,
# /etc/dwvm/lib.sh loaded). The same script runs in both boots; the host
# says which on the kernel command line (DWVM_RT_BOOT=1|2).
#
# Both boots mount /dev/vda (an ext4 image the host made, persistent across
# the boots) at /var/lib/drivewatch, drivewatch's state directory, find the
# namespaces of DWSN0001 and DWSN0002 by serial and write /tmp/rt.toml from
# /etc/drivewatch/retention.toml (retention/drivewatch.toml) with those
# paths.
#
# Boot 1 (no daemon): `drivewatch phase run rw` (study vmstudy on DWSN0001)
#   and `phase run ow` (study other on DWSN0002), sends each run's record,
#   stderr, the study files and nvme-cli's SMART logs, marks boot1-written,
#   waits for the host's "poweroff" (it reads QEMU's write counters first),
#   then syncs, unmounts the state and powers off (/init: sync, poweroff -f;
#   the kernel shuts the NVMe controllers down normally, CC.SHN).
# Boot 2: starts the daemon with /tmp/rt.toml (dw_drivewatch_start), which
#   runs the verify rv at once; on the host's "verified" sends nvme-cli's
#   SMART logs, stops the daemon (SIGTERM), and sends the study, `retention
#   list`, `retention report vmstudy` as text, json and html, the history
#   and the state directory's listing.

RT_BOOT=${DWVM_RT_BOOT:-1}
RT_STATE=/var/lib/drivewatch
RT_CONF=/tmp/rt.toml

# First namespace block device of the controller with this serial.
rt_ns() {
	_c=$(dw_ctrl_by_serial "$1") || return 1
	dw_ns_of_ctrl "$_c" | head -n 1
}

# rt_smart TAG: nvme-cli's SMART log of both controllers, as files
# smart-TAG-SERIAL.json (admin commands only).
rt_smart() {
	for _sn in DWSN0001 DWSN0002; do
		_c=$(dw_ctrl_by_serial "$_sn")
		nvme smart-log "/dev/$_c" -o json >"/tmp/smart-$1-$_sn.json" 2>/tmp/smart.err ||
			{ dw_fail "retention nvme smart-log /dev/$_c: $(cat /tmp/smart.err)"; return 1; }
		dw_send_file "smart-$1-$_sn.json" "/tmp/smart-$1-$_sn.json"
	done
}

# rt_cli NAME ARGS...: a drivewatch command; stdout and stderr sent as
# NAME and NAME.err, a "cli NAME RC" marker.
rt_cli() {
	_n=$1
	shift
	_rc=0
	drivewatch "$@" --config.file="$RT_CONF" >"/tmp/$_n" 2>"/tmp/$_n.err" || _rc=$?
	dw_mark cli "$_n $_rc"
	dw_send_file "$_n" "/tmp/$_n"
	dw_send_file "$_n.err" "/tmp/$_n.err"
}

# rt_run NAME PHASE: `drivewatch phase run PHASE`, record and stderr sent as
# NAME.json / NAME.err; marker "run NAME RC START END" (guest uptime).
rt_run() {
	_t0=$(dw_uptime)
	_rc=0
	# SIGTERM after RT_RUN_TIMEOUT s: the phase stops (outcome aborted) and
	# its record and stderr still reach the host.
	timeout -s TERM -k 10 "${DWVM_RT_RUN_TIMEOUT:-90}" drivewatch phase run "$2" --config.file="$RT_CONF" \
		>"/tmp/$1.json" 2>"/tmp/$1.err" || _rc=$?
	_t1=$(dw_uptime)
	dw_mark run "$1 $_rc $_t0 $_t1"
	dw_send_file "$1.json" "/tmp/$1.json"
	dw_send_file "$1.err" "/tmp/$1.err"
}

rt_send_studies() {
	for _s in vmstudy other; do
		if [ -f "$RT_STATE/retention/$_s.json" ]; then
			cp "$RT_STATE/retention/$_s.json" "/tmp/study-$_s-$1.json"
			dw_send_file "study-$_s-$1.json" "/tmp/study-$_s-$1.json"
		fi
	done
}

rt_finish() {
	ls -lR "$RT_STATE" >"/tmp/state-$RT_BOOT.txt" 2>&1 || true
	dw_send_file "state-$RT_BOOT.txt" "/tmp/state-$RT_BOOT.txt"
	sync
	umount "$RT_STATE" || { dw_fail "retention umount $RT_STATE: $(grep " $RT_STATE " /proc/mounts)"; return 1; }
	dw_mark state-unmounted "$(dw_uptime)"
}

mkdir -p "$RT_STATE"
if ! dw_poll 10 test -b /dev/vda; then
	dw_fail "retention no /dev/vda (state disk): $(ls /sys/block | tr '\n' ' ')"
	exit 1
fi
mount -t ext4 /dev/vda "$RT_STATE" 2>/tmp/mount.err ||
	{ dw_fail "retention mount /dev/vda: $(cat /tmp/mount.err) $(dmesg | tail -n 3 | tr '\n' '|')"; exit 1; }

c1=$(dw_ctrl_by_serial DWSN0001) || { dw_fail "retention no controller DWSN0001"; exit 1; }
c2=$(dw_ctrl_by_serial DWSN0002) || { dw_fail "retention no controller DWSN0002"; exit 1; }
ns1=$(rt_ns DWSN0001)
ns2=$(rt_ns DWSN0002)
[ -b "/dev/$ns1" ] && [ -b "/dev/$ns2" ] || { dw_fail "retention namespaces '$ns1' '$ns2' not found"; exit 1; }
sed -e "s#@SCRATCH_DEV@#/dev/$ns1#" -e "s#@OTHER_DEV@#/dev/$ns2#" /etc/drivewatch/retention.toml >"$RT_CONF"
dw_send_file "rt-$RT_BOOT.toml" "$RT_CONF"
dw_mark rt-devices "boot=$RT_BOOT DWSN0001=$c1/$ns1 DWSN0002=$c2/$ns2 nsid1=$(dw_attr "/sys/block/$ns1/nsid") size1=$(dw_attr "/sys/block/$ns1/size") pci1=$(basename "$(readlink -f "/sys/class/nvme/$c1/device")") pci2=$(basename "$(readlink -f "/sys/class/nvme/$c2/device")")"

if [ "$RT_BOOT" = 1 ]; then
	rt_smart b1-before
	rt_run rw rw
	rt_run ow ow
	rt_smart b1-written
	rt_send_studies b1
	rt_cli list-b1.txt retention list
	dw_mark boot1-written
	dw_wait_host poweroff 120
	rt_finish
else
	# The daemon, as /etc/dwvm/service.sh says (config $RT_CONF).
	dw_drivewatch_start
	dw_wait_host verified 240
	rt_smart b2-verified
	dw_daemon_stats "$DW_SERVICE_PID" || true
	dw_service_stop TERM 20
	rt_send_studies b2
	rt_cli list-b2.txt retention list
	rt_cli report.txt retention report vmstudy --format=text
	rt_cli report.json retention report vmstudy --format=json
	rt_cli report.html retention report vmstudy --format=html
	rt_cli history.jsonl history --format=json
	rt_finish
fi
dw_mark retention-done "$RT_BOOT"
