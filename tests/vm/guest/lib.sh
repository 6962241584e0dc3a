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
