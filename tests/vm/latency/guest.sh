# SPDX-License-Identifier: Apache-2.0
# Guest side of the "latency" VM scenario (host side: tests/vm/latency/host.sh).
# Sourced by /init (busybox ash, set -e, /etc/dwvm/lib.sh loaded).
#
# Four controllers: the harness' DWSN0001 and DWSN0002 plus DWSN0003 (reads
# of some blocks fail, QEMU blkdebug) and DWSN0004 (every read takes 3 s,
# QEMU null-co). /init only waited for the harness' two.
dw_wait_nvme 4 5 60 || exit 1
# The sysfs view drivewatch's identity check relies on: for each namespace,
# /sys/dev/block/MAJ:MIN/device/serial and .../nsid.
for _b in /sys/block/nvme*n*; do
	_n=$(basename "$_b")
	_d=$(dw_attr "$_b/dev")
	dw_mark ns-identity "$_n $_d $(dw_attr /sys/dev/block/$_d/device/serial) $(dw_attr /sys/dev/block/$_d/nsid)"
done
dw_drivewatch_start
dw_wait_host finish 240
dw_daemon_stats "$DW_SERVICE_PID"
dw_service_stop TERM 20
dw_mark latency-done
