# SPDX-License-Identifier: Apache-2.0
# Guest side of the "power" VM scenario (host side: tests/vm/power/host.sh).
# Sourced by /init (busybox ash, set -e, /etc/dwvm/lib.sh loaded).
# drivewatch runs as the daemon and reads every namespace in turns; the
# guest itself does no I/O, so every host command the drives count is
# drivewatch's own.

dw_drivewatch_start
dw_wait_host finish 240
dw_service_stop TERM 20
dw_mark power-done
