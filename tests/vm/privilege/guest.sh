# SPDX-License-Identifier: Apache-2.0
# Guest side of the "privilege" VM scenario (host side: privilege/host.sh).
# Sourced by /init (busybox ash, set -e, /etc/dwvm/lib.sh loaded).
#
# The service fragment (host.sh) starts drivewatch through util-linux's
# setpriv with CAP_SYS_ADMIN removed from the bounding and inheritable sets,
# so root keeps ownership of /dev/nvme* (DAC) but every NVMe admin
# passthrough ioctl fails with EACCES. Marks:
#   caps      the daemon's CapEff/CapBnd (bit 21 = CAP_SYS_ADMIN must be 0)
#   hwmon     the hwmon directories of each controller and temp1_input
#   nvme-cli  whether nvme-cli, run the same way, is refused (sanity)
# On the host's word "finish" drivewatch is stopped and its log sent.

dw_drivewatch_start
dw_mark caps "$(grep -E '^Cap(Eff|Bnd)' "/proc/$DW_SERVICE_PID/status" | tr '\t\n' ' ') comm=$(cat "/proc/$DW_SERVICE_PID/comm")"
for c in $(dw_ctrls); do
	for h in "/sys/class/nvme/$c"/hwmon* "/sys/class/nvme/$c"/device/hwmon/hwmon*; do
		[ -e "$h/temp1_input" ] || continue
		dw_mark hwmon "$(dw_attr "/sys/class/nvme/$c/serial") $h $(cat "$h/temp1_input")"
	done
done
if /usr/bin/setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin nvme id-ctrl "/dev/$(dw_ctrls | head -n 1)" >/tmp/nvme-cli.txt 2>&1; then
	dw_mark nvme-cli "allowed"
else
	dw_mark nvme-cli "refused $(tail -n 1 /tmp/nvme-cli.txt)"
fi

dw_wait_host finish 300
dw_service_stop TERM 20
dw_send_file service.log /tmp/service.log
dw_mark privilege-done
