# SPDX-License-Identifier: Apache-2.0
# Guest side of the "liveproof" VM scenario (host side: tests/vm/liveproof/host.sh).
# Sourced by /init (busybox ash, set -e, /etc/dwvm/lib.sh loaded).
#
# The harness' two controllers (DWSN0001, DWSN0002 with two namespaces);
# drivewatch runs as the guest's daemon with liveproof/drivewatch.toml
# until the host has evaluated every dashboard and rule expression. Before
# it starts, the power-states phase runs by hand on DWSN0001's namespace
# (QEMU's one power state, whose Set Features 02h QEMU refuses; idle and
# 10-IOPS power from the descriptor), so the daemon exports its results
# from the history for the aging dashboard's power panels.
_c=$(dw_ctrl_by_serial DWSN0001) || { dw_fail "liveproof no controller DWSN0001"; exit 1; }
_ns=$(dw_ns_of_ctrl "$_c" | head -n 1)
cat >>/etc/drivewatch/drivewatch.toml <<EOF

[[aging.targets]]
name = "qemu"
block_device = "/dev/$_ns"
serial = "DWSN0001"
namespace = 1

[[aging.phases]]
name = "power"
kind = "power-states"
target = "qemu"
dwell = "1s"
exit_samples = 1
settle = "200ms"
EOF
_rc=0
drivewatch phase run power --config.file=/etc/drivewatch/drivewatch.toml >/tmp/power.json 2>/tmp/power.err || _rc=$?
dw_mark power-states "rc=$_rc"
[ "$_rc" = 0 ] || dw_fail "liveproof power-states on /dev/$_ns exited $_rc: $(tail -c 300 /tmp/power.err | tr '\n' ' ')"
dw_drivewatch_start
dw_wait_host finish 600
dw_daemon_stats "$DW_SERVICE_PID"
dw_service_stop TERM 20
dw_mark liveproof-done
