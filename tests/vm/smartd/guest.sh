# SPDX-License-Identifier: Apache-2.0
# Guest side of the "smartd" VM scenario (host side: tests/vm/smartd/host.sh).
# Sourced by /init (busybox ash, set -e, /etc/dwvm/lib.sh loaded).
#
# drivewatch runs as the daemon. On the host's word:
#   provoke  tries to make QEMU record Error Information log entries on
#            $SMARTD_SERIAL: a read past the namespace end (nvme read), an
#            admin command with a reserved opcode (nvme admin-passthru), and
#            a device self-test (QEMU lacks it, so `drivewatch selftest run`
#            must refuse it cleanly); then sends nvme-cli's own
#            view of the error log and the commands' output (provoke.txt)
#   restart  stops drivewatch with SIGTERM and starts it again (the first
#            run's log is kept as service-1.log), listing the state directory
#   finish   stops drivewatch

SMARTD_SERIAL=${DWVM_SMARTD_SERIAL:-DWSN0001}

dw_drivewatch_start
c=$(dw_ctrl_by_serial "$SMARTD_SERIAL") || { dw_fail "smartd no controller $SMARTD_SERIAL"; exit 1; }
ns=$(dw_ns_of_ctrl "$c" | head -n 1)
dw_mark smartd-ctrl "$c $ns"

dw_wait_host provoke 120
nsze=$(cat "/sys/block/$ns/size")  # 512-byte units; DWSN0001 has 512 B blocks
{
	echo "== nvme error-log before"
	nvme error-log "/dev/$c" -e 1 -o json 2>&1 || true
	echo "== nvme read /dev/$ns -s $nsze (one block past the end)"
	nvme read "/dev/$ns" -s "$nsze" -c 0 -z 512 -d /tmp/read.out 2>&1; echo "rc=$?"
	echo "== nvme admin-passthru /dev/$c --opcode=0xbf (reserved)"
	nvme admin-passthru "/dev/$c" --opcode=0xbf 2>&1; echo "rc=$?"
	echo "== nvme device-self-test /dev/$c -s 1"
	nvme device-self-test "/dev/$c" -s 1 2>&1; echo "rc=$?"
	echo "== drivewatch selftest run --drive $SMARTD_SERIAL --type short --wait"
	drivewatch selftest run --drive "$SMARTD_SERIAL" --type short --wait 2>&1; echo "rc=$?"
	echo "== nvme error-log after"
	nvme error-log "/dev/$c" -e 1 -o json 2>&1 || true
} >/tmp/provoke.txt 2>&1 || true
dw_send_file provoke.txt /tmp/provoke.txt
dw_mark provoke-done "$(dw_uptime)"

dw_wait_host restart 120
dw_service_stop TERM 20
cp /tmp/service.log /tmp/service-1.log
dw_send_file service-1.log /tmp/service-1.log
dw_mark state-dir "$(ls /var/lib/drivewatch | tr '\n' ' ')"
dw_drivewatch_start
dw_mark restarted "$(dw_uptime)"

dw_wait_host finish 120
dw_service_stop TERM 20
dw_mark smartd-done
