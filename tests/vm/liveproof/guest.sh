# SPDX-License-Identifier: Apache-2.0
# Guest side of the "liveproof" VM scenario (host side: tests/vm/liveproof/host.sh).
# Sourced by /init (busybox ash, set -e, /etc/dwvm/lib.sh loaded).
#
# The harness' two controllers (DWSN0001, DWSN0002 with two namespaces);
# drivewatch runs as the guest's daemon with liveproof/drivewatch.toml
# until the host has evaluated every dashboard and rule expression.
dw_drivewatch_start
dw_wait_host finish 600
dw_daemon_stats "$DW_SERVICE_PID"
dw_service_stop TERM 20
dw_mark liveproof-done
