# SPDX-License-Identifier: Apache-2.0
# Guest side of the "doorbell" VM scenario (host side: doorbell/host.sh).
# Sourced by /init (busybox ash, set -e, /etc/dwvm/lib.sh loaded).
#
# fio writes DWSN0001's namespace as fast as the emulated controller takes
# it (4 KiB random writes, queue depth 32, DB_SECONDS long): tens of
# thousands of submission queue doorbells, each through the shadow doorbell
# buffer. Marks:
#   doorbell-start  the namespace written
#   doorbell-fio    fio's exit status
# fio's JSON report goes to the host (fio.json); /init sends the kernel log
# (dmesg.txt), where a lost doorbell shows as "I/O ... timeout, aborting".

db_ns=""
for c in $(dw_ctrls); do
	if [ "$(dw_attr "/sys/class/nvme/$c/serial")" = DWSN0001 ]; then
		db_ns=$(ls -d "/sys/class/nvme/$c/${c}n"* 2>/dev/null | head -n 1)
	fi
done
[ -n "$db_ns" ] || { dw_fail "doorbell: no namespace of DWSN0001 ($(dw_ctrls | tr '\n' ' '))"; exit 1; }
db_dev=/dev/$(basename "$db_ns")
dw_mark doorbell-start "$(dw_uptime) $db_dev"
db_rc=0
fio --name=doorbell --filename="$db_dev" --ioengine=libaio --direct=1 --rw=randwrite \
	--bs=4k --iodepth=32 --time_based --runtime="${DB_SECONDS:-45}" \
	--output-format=json --output=/tmp/fio.json >/tmp/fio.out 2>&1 || db_rc=$?
dw_mark doorbell-fio "$db_rc"
dw_send_file fio.json /tmp/fio.json
dw_send_file fio.out /tmp/fio.out
