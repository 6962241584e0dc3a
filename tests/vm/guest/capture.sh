# SPDX-License-Identifier: Apache-2.0
# Guest scenario "capture": run nvme-cli against every controller and
# namespace and ship the outputs to the host as fixture files.
# Sourced by /init (busybox ash, set -e, /etc/dwvm/lib.sh loaded).

dw_mark capture-start "$(dw_uptime)"

dw_run_send list.txt nvme list
dw_run_send list.json nvme list -o json

for c in $(dw_ctrls); do
	sn=$(dw_attr /sys/class/nvme/$c/serial)
	dev=/dev/$c
	dw_run_send "id-ctrl-$sn.bin" nvme id-ctrl "$dev" -b
	dw_run_send "id-ctrl-$sn.json" nvme id-ctrl "$dev" -o json
	dw_run_send "smart-log-$sn.bin" nvme smart-log "$dev" -b
	dw_run_send "smart-log-$sn.json" nvme smart-log "$dev" -o json
	dw_run_send "error-log-$sn.bin" nvme error-log "$dev" -b
	dw_run_send "error-log-$sn.json" nvme error-log "$dev" -o json
	for ns in $(dw_ns_of_ctrl "$c"); do
		nsid=$(dw_attr /sys/block/$ns/nsid)
		dw_run_send "id-ns-$sn-n$nsid.bin" nvme id-ns "/dev/$ns" -b
		dw_run_send "id-ns-$sn-n$nsid.json" nvme id-ns "/dev/$ns" -o json
	done
	dw_mark "captured $sn $c $(dw_ns_of_ctrl "$c" | tr '\n' ' ')"
done

# ---- sysfs.txt: what the guest's sysfs looks like (kernel 6.1, QEMU 7.2)
lsl() { # ls -l without the timestamp column (keeps the fixture stable)
	ls -l "$@" 2>/dev/null | sed 's/ [A-Z][a-z][a-z] [ 0-9][0-9] [0-9:]\{4,5\} / /'
}

dump_attrs() { # dump_attrs DIR: "name = value" (first line) per attribute file
	# Shell builtins only: a fork+exec costs ~10 ms under TCG and there are
	# hundreds of attributes.
	for _df in "$1"/*; do
		[ -f "$_df" ] || continue
		_db=${_df##*/}
		[ "$_db" = uevent ] && continue
		_dv=
		if { read -r _dv <"$_df"; } 2>/dev/null || [ -n "$_dv" ]; then
			echo "$_db = $_dv"
		else
			echo "$_db = <empty or write-only>"
		fi
	done
}

{
	echo "# sysfs of a QEMU $(dw_attr /sys/class/nvme/nvme0/firmware_rev) NVMe guest, kernel $(uname -r)"
	echo "# Controllers are mapped to serials here; the nvmeX numbering depends on"
	echo "# probe order, so tests must key on serial, not on the name."
	echo "# QEMU controllers without subsys= report CMIC=0 (namespaces not shared),"
	echo "# so although Debian sets CONFIG_NVME_MULTIPATH=y there are no hidden"
	echo "# nvmeXcYnZ path nodes: disks are nvme<ctrl-instance>n<head-instance>"
	echo "# directly under /sys/class/nvme/nvmeX, with ngXnY generic char devices."
	echo "# /sys/block/*/size is in 512-byte sectors whatever the LBA size."
	echo
	for c in $(dw_ctrls); do
		echo "## /sys/class/nvme/$c -> $(readlink /sys/class/nvme/$c)"
		echo "\$ ls -l /sys/class/nvme/$c/   (dates removed)"
		lsl /sys/class/nvme/$c/
		echo
		echo "### attributes of /sys/class/nvme/$c"
		dump_attrs /sys/class/nvme/$c
		echo
		for p in /sys/class/nvme/$c/nvme*; do
			[ -d "$p" ] || continue
			echo "### $p (namespace node under the controller)"
			lsl "$p/"
			dump_attrs "$p"
			echo
		done
		for h in /sys/class/nvme/$c/hwmon*; do
			[ -d "$h" ] || continue
			echo "### $h (hwmon; temps in millidegrees C)"
			dump_attrs "$h"
			echo
		done
	done
	echo "## /sys/class/nvme-subsystem"
	for s in /sys/class/nvme-subsystem/*; do
		[ -e "$s" ] || continue
		echo "### $s"
		lsl "$s/"
		dump_attrs "$s"
		echo
	done
	echo "## /sys/block"
	lsl /sys/block/
	echo
	for b in /sys/block/nvme*; do
		[ -e "$b" ] || continue
		echo "### $b -> $(readlink "$b")"
		lsl "$b/"
		dump_attrs "$b"
		echo "#### $b/device -> $(readlink "$b/device" 2>/dev/null)"
		echo "#### $b/queue (selected)"
		for q in logical_block_size physical_block_size minimum_io_size optimal_io_size hw_sector_size max_hw_sectors_kb rotational discard_granularity discard_max_bytes write_cache nr_requests scheduler; do
			echo "queue/$q = $(cat "$b/queue/$q" 2>/dev/null)"
		done
		echo
	done
	echo "## /sys/class/hwmon"
	for h in /sys/class/hwmon/*; do
		[ -e "$h" ] || continue
		echo "### $h -> $(readlink "$h")"
		dump_attrs "$h"
		echo
	done
	echo "## /dev entries"
	lsl /dev/nvme* /dev/ng*
	echo
	for c in $(dw_ctrls); do
		echo "## nvme get-feature /dev/$c -f 4 -H   (serial $(dw_attr /sys/class/nvme/$c/serial))"
		nvme get-feature /dev/$c -f 4 -H 2>&1 || echo "(exit $?)"
		echo
	done
	echo "## nvme get-feature /dev/nvme0 -f 4 --cdw11=0x100000 -H   (THSEL=1: under-temperature threshold)"
	nvme get-feature /dev/nvme0 -f 4 --cdw11=0x100000 -H 2>&1 || echo "(exit $?)"
	echo
	echo "## /proc/partitions"
	cat /proc/partitions
} >/tmp/sysfs.txt 2>&1
dw_send_file sysfs.txt /tmp/sysfs.txt

dw_mark capture-done "$(dw_uptime)"
