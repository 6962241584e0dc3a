# SPDX-License-Identifier: Apache-2.0
# Guest-side helpers for the drivewatch VM harness (busybox ash).
# Sourced by /init and by scenario scripts (installed as /etc/dwvm/lib.sh).
#
# Protocol on the serial console (ttyS0, the host reads it from console.log):
#   DWVM-MARK: <name> [value...]                       a marker line
#   DWVM-FILE-BEGIN <name> <size> <sha256> gzip        then base64(gzip) lines,
#   DWVM-FILE-END <name>                        then this (host: vm_extract_files)
# Host -> guest: lines written to /dev/ttyS1 (vm_send on the host), read here
# by dw_wait_host through fd 3, which /init opens once at boot.

dw_mark() {
	echo "DWVM-MARK: $*"
}

# Report a failure marker and make the scenario fail.
dw_fail() {
	echo "DWVM-MARK: fail $*"
	return 1
}

dw_uptime() {
	cut -d' ' -f1 /proc/uptime
}

# dw_send_file NAME FILE: copy a file to the host over the console.
dw_send_file() {
	_n=$1 _f=$2
	if [ ! -f "$_f" ]; then
		dw_fail "send-file $_n missing $_f"
		return 1
	fi
	_sz=$(wc -c <"$_f")
	_sum=$(sha256sum "$_f" | cut -d' ' -f1)
	# gzip first: fewer bytes through the emulated UART.
	echo "DWVM-FILE-BEGIN $_n $_sz $_sum gzip"
	gzip -c "$_f" | base64
	echo "DWVM-FILE-END $_n"
}

# dw_run_send NAME CMD...: run a command, send its stdout as file NAME.
# stderr and the exit code are reported in a marker; returns the exit code.
dw_run_send() {
	_n=$1
	shift
	_rc=0
	"$@" >/tmp/dw_out 2>/tmp/dw_err || _rc=$?
	dw_send_file "$_n" /tmp/dw_out
	if [ "$_rc" != 0 ]; then
		dw_mark "cmd-rc $_n $_rc $(head -c 200 /tmp/dw_err | tr '\n' ' ')"
	fi
	return $_rc
}

# dw_wait_host TOKEN [TIMEOUT_S]: block until the host sends a line TOKEN
# on the control port.  Prints a "wait-host TOKEN" marker first so the host
# knows the guest is listening.
dw_wait_host() {
	_tok=$1 _to=${2:-60}
	dw_mark "wait-host-$_tok"
	_end=$(($(cut -d. -f1 /proc/uptime) + _to))
	while [ "$(cut -d. -f1 /proc/uptime)" -lt "$_end" ]; do
		if read -r -t 1 _line <&3; then
			_line=$(echo "$_line" | tr -d '\r')
			[ "$_line" = "$_tok" ] && { dw_mark "got-host-$_tok"; return 0; }
		fi
	done
	dw_fail "wait-host $_tok timeout ${_to}s"
}

# dw_poll TIMEOUT_S CMD...: retry CMD every 0.2 s until it succeeds.
dw_poll() {
	_to=$1
	shift
	_i=0
	while [ $_i -lt $((_to * 5)) ]; do
		"$@" && return 0
		usleep 200000
		_i=$((_i + 1))
	done
	return 1
}

# Trimmed contents of a sysfs attribute.
dw_attr() {
	sed -e 's/[[:space:]]*$//' -e 's/^[[:space:]]*//' "$1" 2>/dev/null
}

# dw_ctrls: list controller names (nvme0 nvme1 ...) currently in sysfs.
dw_ctrls() {
	for _c in /sys/class/nvme/nvme*; do
		[ -e "$_c" ] && basename "$_c"
	done
}

# dw_ctrl_by_serial SERIAL: print the controller name with that serial.
dw_ctrl_by_serial() {
	for _c in $(dw_ctrls); do
		if [ "$(dw_attr /sys/class/nvme/$_c/serial)" = "$1" ]; then
			echo "$_c"
			return 0
		fi
	done
	return 1
}

# dw_ns_of_ctrl CTRL: print the namespace block devices (nvmeXnY) of a
# controller.  With CONFIG_NVME_MULTIPATH=y (Debian), /sys/class/nvme/nvmeX/
# holds the hidden path nodes nvmeXcZnY; the visible block device is the
# head node nvme<subsys-instance>n<head-instance>: nvmeXcZnY -> nvmeXnY.
# The Y is NOT necessarily the NSID: read /sys/block/nvmeXnY/nsid.
dw_ns_of_ctrl() {
	for _p in /sys/class/nvme/$1/nvme*c*n* /sys/class/nvme/$1/nvme*n*; do
		[ -e "$_p" ] || continue
		_b=$(basename "$_p")
		case $_b in
		*c*n*) echo "$_b" | sed 's/^nvme\([0-9]*\)c[0-9]*n\([0-9]*\)$/nvme\1n\2/' ;;
		*) echo "$_b" ;;
		esac
	done | sort -u
}

# dw_nvme_count: number of controllers in state "live".
dw_nvme_live() {
	_n=0
	for _c in $(dw_ctrls); do
		[ "$(dw_attr /sys/class/nvme/$_c/state)" = live ] && _n=$((_n + 1))
	done
	echo $_n
}

# dw_wait_nvme NCTRL NNS TIMEOUT: wait for NCTRL live controllers and NNS
# namespace block devices.
dw_wait_nvme() {
	_wc=$1 _wn=$2 _to=${3:-30}
	_i=0
	while [ $_i -lt $((_to * 5)) ]; do
		_nns=$(ls -d /sys/block/nvme*n* 2>/dev/null | wc -l)
		if [ "$(dw_nvme_live)" -ge "$_wc" ] && [ "$_nns" -ge "$_wn" ]; then
			return 0
		fi
		usleep 200000
		_i=$((_i + 1))
	done
	dw_fail "nvme-wait want ${_wc} ctrls ${_wn} ns, have $(dw_nvme_live) live, $(ls /sys/block | tr '\n' ' ')"
}

# dw_service_start: start the caller's service fragment (/etc/dwvm/service.sh,
# e.g. 'exec drivewatch --config ...') in the background; output goes to
# /tmp/service.log (shipped to the host at the end as service.log).
# Sets DW_SERVICE_PID (the daemon's PID when the fragment uses exec).
dw_service_start() {
	if [ ! -s /etc/dwvm/service.sh ]; then
		dw_fail "service no fragment given"
		return 1
	fi
	sh /etc/dwvm/service.sh >/tmp/service.log 2>&1 </dev/null &
	DW_SERVICE_PID=$!
	echo "$DW_SERVICE_PID" >/run/dwvm-service.pid
	dw_mark service-started "$(dw_uptime) pid=$DW_SERVICE_PID"
}

dw_service_alive() {
	[ -n "${DW_SERVICE_PID:-}" ] && kill -0 "$DW_SERVICE_PID" 2>/dev/null
}

# dw_service_stop [SIGNAL] [TIMEOUT_S]: signal the service (TERM), wait for
# it to exit (KILL after the timeout) and mark "service-exit RC".
dw_service_stop() {
	_sig=${1:-TERM} _to=${2:-10}
	dw_service_alive || { dw_mark service-exit "not-running"; return 0; }
	kill "-$_sig" "$DW_SERVICE_PID" 2>/dev/null
	dw_poll "$_to" eval '! dw_service_alive' || kill -KILL "$DW_SERVICE_PID" 2>/dev/null
	_rc=0
	wait "$DW_SERVICE_PID" || _rc=$?
	dw_mark service-exit "$_rc"
	DW_SERVICE_PID=
	return 0
}

# dw_wait_tcp PORT TIMEOUT: wait until something listens on PORT
# (any address, IPv4 or IPv6).
dw_wait_tcp() {
	_hex=$(printf '%04X' "$1")
	dw_poll "${2:-20}" grep -q ":$_hex [0-9A-F]*:0000 0A" /proc/net/tcp /proc/net/tcp6
}

# ---------------------------------------------------------------- drivewatch

# dw_drivewatch_start: start drivewatch (the service fragment) and wait until
# it listens; marks "service-up", one "ctrl SERIAL NAME" per controller and
# "ctrl-count N" (the host's vm_boot_drivewatch waits for these).
dw_drivewatch_start() {
	dw_service_start
	if ! dw_wait_tcp "${DWVM_PORT:-9647}" 30; then
		dw_fail "drivewatch does not listen on :${DWVM_PORT:-9647} after 30 s: $(tail -n 5 /tmp/service.log | tr '\n' '|')"
		return 1
	fi
	dw_mark service-up "$(dw_uptime) pid=$DW_SERVICE_PID"
	_n=0
	for _c in $(dw_ctrls); do
		dw_mark ctrl "$(dw_attr /sys/class/nvme/$_c/serial) $_c"
		_n=$((_n + 1))
	done
	dw_mark ctrl-count "$_n"
}

# dw_health_dump DIR: nvme-cli's view of every controller, as JSON, for the
# host to compare with drivewatch: DIR/manifest ("ctrl SERIAL NAME TRANSPORT
# ADDRESS", "ns SERIAL NSID BLOCKDEV" lines), id-ctrl-SERIAL.json,
# smart-log-SERIAL.json, id-ns-SERIAL-nNSID.json.  Admin commands only (no
# I/O, so the SMART data counters do not move); Identify Namespace goes to
# the controller with -n, without opening the block device.
# With "smart" as second argument only the SMART logs are dumped.
dw_health_dump() {
	_d=$1 _what=${2:-all}
	rm -rf "$_d"
	mkdir -p "$_d"
	: >"$_d/manifest"
	for _c in $(dw_ctrls); do
		_sn=$(dw_attr /sys/class/nvme/$_c/serial)
		echo "ctrl $_sn $_c $(dw_attr /sys/class/nvme/$_c/transport) $(dw_attr /sys/class/nvme/$_c/address)" >>"$_d/manifest"
		if ! nvme smart-log "/dev/$_c" -o json >"$_d/smart-log-$_sn.json" 2>"$_d/stderr"; then
			dw_fail "health-dump nvme smart-log /dev/$_c: $(cat "$_d/stderr")"
			return 1
		fi
		[ "$_what" = smart ] && continue
		if ! nvme id-ctrl "/dev/$_c" -o json >"$_d/id-ctrl-$_sn.json" 2>"$_d/stderr"; then
			dw_fail "health-dump nvme id-ctrl /dev/$_c: $(cat "$_d/stderr")"
			return 1
		fi
		for _ns in $(dw_ns_of_ctrl "$_c"); do
			_nsid=$(dw_attr "/sys/block/$_ns/nsid")
			echo "ns $_sn $_nsid $_ns" >>"$_d/manifest"
			if ! nvme id-ns "/dev/$_c" -n "$_nsid" -o json >"$_d/id-ns-$_sn-n$_nsid.json" 2>"$_d/stderr"; then
				dw_fail "health-dump nvme id-ns /dev/$_c -n $_nsid: $(cat "$_d/stderr")"
				return 1
			fi
		done
	done
	rm -f "$_d/stderr"
}

# dw_send_dir NAME DIR: send a directory as one tar file (fewer forks and
# console framing than one file each).
dw_send_dir() {
	tar -cf "/tmp/$1" -C "$2" . && dw_send_file "$1" "/tmp/$1"
}

# dw_daemon_stats PID: memory and CPU of a process, as markers:
#   daemon-rss KB, daemon-hwm KB (peak RSS), daemon-cpu SECONDS (user+system),
#   daemon-age SECONDS (since it started), daemon-threads N
dw_daemon_stats() {
	_p=$1
	[ -r "/proc/$_p/stat" ] || { dw_fail "daemon-stats no process $_p"; return 1; }
	dw_mark daemon-rss "$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' /proc/$_p/status)"
	dw_mark daemon-hwm "$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\).*/\1/p' /proc/$_p/status)"
	dw_mark daemon-threads "$(sed -n 's/^Threads:[[:space:]]*\([0-9]*\).*/\1/p' /proc/$_p/status)"
	# Fields after "(comm) ": state is $1, so utime (14) is $12, stime (15)
	# $13, starttime (22) $20; USER_HZ is 100 on x86-64.
	sed 's/^.*) //' "/proc/$_p/stat" | awk -v up="$(dw_uptime)" '{
		printf "DWVM-MARK: daemon-cpu %.2f\n", ($12 + $13) / 100
		printf "DWVM-MARK: daemon-age %.1f\n", up - $20 / 100 }'
}
