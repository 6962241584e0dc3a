# SPDX-License-Identifier: Apache-2.0
# Guest side of the "unplug" VM scenario (host side: tests/vm/unplug/host.sh).
# Sourced by /init (busybox ash, set -e, /etc/dwvm/lib.sh loaded).
#
# drivewatch runs as the guest's daemon; the host hot-unplugs and re-plugs
# DWSN0001 over QMP and asks, on the control port, for what only the guest
# can see or do. One command per line, each answered by a marker:
#   arm N SERIAL NS hold two of the daemon's threads with unplug_hold (see
#                   unplug/hold.cc): its discovery scan, and the health or
#                   thermal probe of SERIAL's controller between its
#                   Identify Controller and its Get Log Page 02h; mark
#                   "armed-N ready discovery=TID probe=TID waited=S". Then
#                   wait until a read of NS is held in QEMU (the host sets a
#                   blkdebug break on that marker) and mark "read-held-N
#                   0|1"; then, once the host's device_del has the kernel
#                   removing the controller (state "deleting", kept there by
#                   the held read), let the probe's SMART read go, wait
#                   until the daemon logs its failure, and mark "struck-N
#                   state=STATE logged=0|1"
#   gone N SERIAL NS  wait until the daemon logs a failed read of NS (it
#                   reads on: its discovery is still held), let discovery
#                   go, wait until SERIAL's controller is out of sysfs and
#                   the daemon holds no file of a deleted /dev/nvme* node (a
#                   leaked descriptor keeps the kernel from reusing the
#                   name); mark "gone-N alive=0|1 pid=P waited=S fds=..."
#                   and send the daemon's log so far as service-N.log (and
#                   gone-N.diag, what held it, if it did not settle)
#   back N SERIAL   wait until SERIAL's controller is live with a namespace
#                   block device; mark "back-N name=nvmeX ns=nvmeXnY
#                   alive=0|1 pid=P"
#   finish          daemon stats, SIGTERM (service-exit RC), the state
#                   directory as state.tar; then the daemon is started
#                   again on that directory ("restart-up pid=P"), for the
#                   host to read its /metrics
#   stop2           stops it (service-exit RC again), sends its log as
#                   service2.log, marks unplug-done and ends the scenario
# A command already handled is ignored: the host sends again when its
# marker is slow to come (a line can be lost on the control port).

dw_drivewatch_start
UNPLUG_PID=$DW_SERVICE_PID

# The daemon's open files on NVMe nodes, "path[ (deleted)]" comma-separated.
unplug_fds() {
	for _f in /proc/"$UNPLUG_PID"/fd/*; do
		_t=$(readlink "$_f" 2>/dev/null) || continue
		case $_t in /dev/nvme* | /dev/ng*) printf '%s,' "$_t" ;; esac
	done
}

unplug_alive() {
	if kill -0 "$UNPLUG_PID" 2>/dev/null; then echo 1; else echo 0; fi
}

# SERIAL's controller is out of sysfs and the daemon holds no deleted node.
unplug_settled() {
	! dw_ctrl_by_serial "$1" >/dev/null && ! unplug_fds | grep -q deleted
}

# A failed health or thermal run on the controller at its SMART read, as
# the daemon logs it (tests/vm/unplug/check.py HEALTH_FAIL).
unplug_smart_failed() { # SERIAL
	grep -qE "probe (health|thermal) on drive serial=$1 .*: get log page 02h.*\(logged once" /tmp/service.log
}

# A failed read of the namespace, as the read latency probe logs it
# (check.py READ_GONE).
unplug_read_failed() { # NS
	grep -q "read latency: /dev/$1: .*; reopening the target" /tmp/service.log
}

# NS has a read in flight (the block layer's count of started reads).
unplug_read_inflight() { # NS
	read -r _r _w <"/sys/block/$1/inflight" 2>/dev/null && [ "${_r:-0}" -gt 0 ]
}

# Held if it stays in flight for 0.5 s: a read here takes well under 10 ms.
unplug_read_held() { # NS
	_h=0
	while [ $_h -lt 5 ]; do
		unplug_read_inflight "$1" || return 1
		usleep 100000
		_h=$((_h + 1))
	done
}

unplug_hold_line() { # WORD: the unplug_hold report line starting with WORD
	grep "^$1 " /tmp/hold.out 2>/dev/null | tail -n 1
}

unplug_arm() { # N SERIAL NS
	_t0=$(dw_uptime)
	_c=$(dw_ctrl_by_serial "$2") || _c=
	rm -f /tmp/hold.in /tmp/hold.out
	mkfifo /tmp/hold.in
	/usr/bin/unplug_hold "$UNPLUG_PID" "/dev/$_c" 30 </tmp/hold.in >/tmp/hold.out 2>&1 &
	UNPLUG_HOLD_PID=$!
	# Keep the command pipe open for the whole cycle: its end lets go of
	# every held thread.
	exec 4>/tmp/hold.in
	dw_poll 40 eval 'unplug_hold_line ready | grep -q . || ! kill -0 $UNPLUG_HOLD_PID 2>/dev/null' || true
	_ready=$(unplug_hold_line ready)
	dw_mark "armed-$1" "${_ready:-not-ready: $(tr '\n' '|' </tmp/hold.out)} waited=$(awk -v a="$_t0" -v b="$(dw_uptime)" 'BEGIN{printf "%.1f", b - a}')"
	if [ -z "$_ready" ]; then
		exec 4>&-
		wait "$UNPLUG_HOLD_PID" 2>/dev/null || true
		return 0
	fi
	# The host sets its blkdebug break now: the read latency probe's next
	# read stays in QEMU. The kernel gives up on an I/O after the queue's
	# io_timeout (30 s) and then disables the controller, whose queue
	# deletion QEMU cannot finish with a request held: QEMU would hang. A
	# loaded host can stretch the hold that far, so the namespace's
	# timeout is 10 min here: the read is in flight, not timed out.
	echo 600000 >"/sys/block/$3/queue/io_timeout"
	_held=0
	dw_poll 30 unplug_read_held "$3" && _held=1
	dw_mark "read-held-$1" "$_held"
	if [ $_held = 0 ]; then
		exec 4>&-
		wait "$UNPLUG_HOLD_PID" 2>/dev/null || true
		return 0
	fi
	# The host unplugs now. The kernel marks the controller deleting, then
	# waits in the namespace's removal for the held read.
	_st=
	_i=0
	while [ $_i -lt 600 ]; do
		_st=$(dw_attr "/sys/class/nvme/$_c/state")
		case $_st in deleting*) break ;; esac
		usleep 100000
		_i=$((_i + 1))
	done
	echo probe >&4
	dw_poll 20 unplug_smart_failed "$2" || true
	dw_mark "struck-$1" "state=$(echo "$_st" | tr ' ' _) logged=$(unplug_smart_failed "$2" && echo 1 || echo 0)"
}

unplug_gone() { # N SERIAL NS
	# Discovery is still held: the read latency probe reads on, into the
	# namespace the kernel removed. Its failed read logged, let it go.
	dw_poll 20 unplug_read_failed "$3" || true
	if [ -n "${UNPLUG_HOLD_PID:-}" ]; then
		echo discovery >&4 || true
		exec 4>&-
		wait "$UNPLUG_HOLD_PID" 2>/dev/null || true
		UNPLUG_HOLD_PID=
		cp /tmp/hold.out "/tmp/hold-$1.out"
		dw_send_file "hold-$1.out" "/tmp/hold-$1.out"
	fi
	_t0=$(dw_uptime)
	_i=0
	while [ $_i -lt 150 ]; do
		if unplug_settled "$2"; then
			break
		fi
		usleep 200000
		_i=$((_i + 1))
	done
	_w=$(awk -v a="$_t0" -v b="$(dw_uptime)" 'BEGIN{printf "%.1f", b - a}')
	_fds=$(unplug_fds)
	cp /tmp/service.log "/tmp/service-$1.log"
	# Not settled: what held it, for the record (gone-N.diag): the
	# controller's state, the daemon's NVMe files, each thread's kernel
	# wait and stack, the kernel's last words.
	if ! unplug_settled "$2"; then
		_c=$(dw_ctrl_by_serial "$2") || _c=
		{
			echo "gone $1 after ${_w}s: controller '${_c:-none}' state '$(dw_attr "/sys/class/nvme/$_c/state")' fds $(unplug_fds)"
			for _t in /proc/"$UNPLUG_PID"/task/*; do
				echo "task ${_t##*/} $(cat "$_t/comm" 2>/dev/null) wchan=$(cat "$_t/wchan" 2>/dev/null)"
				cat "$_t/stack" 2>/dev/null
			done
			dmesg 2>/dev/null | tail -n 40
		} >"/tmp/gone-$1.diag" 2>&1
		dw_send_file "gone-$1.diag" "/tmp/gone-$1.diag"
	fi
	dw_send_file "service-$1.log" "/tmp/service-$1.log"
	dw_mark "gone-$1" "alive=$(unplug_alive) pid=$UNPLUG_PID waited=$_w fds=${_fds:-none}"
}

unplug_back() { # N SERIAL
	_i=0 _c='' _ns=''
	while [ $_i -lt 150 ]; do
		if _c=$(dw_ctrl_by_serial "$2") && [ "$(dw_attr "/sys/class/nvme/$_c/state")" = live ]; then
			_ns=$(dw_ns_of_ctrl "$_c" | head -n 1)
			[ -n "$_ns" ] && [ -b "/dev/$_ns" ] && break
		fi
		usleep 200000
		_i=$((_i + 1))
	done
	dw_mark "back-$1" "name=${_c:-none} ns=${_ns:-none} alive=$(unplug_alive) pid=$UNPLUG_PID"
}

unplug_finish() {
	dw_daemon_stats "$UNPLUG_PID"
	dw_service_stop TERM 20
	ls -la /var/lib/drivewatch >/tmp/state-ls.txt 2>&1 || true
	dw_send_file state-ls.txt /tmp/state-ls.txt
	tar -cf /tmp/state.tar -C /var/lib/drivewatch .
	dw_send_file state.tar /tmp/state.tar
	# The same daemon again, on the state it left: it reads the known
	# drives and the probes' state files back (and says so if it cannot).
	cp /tmp/service.log /tmp/service1.log
	dw_service_start
	if ! dw_wait_tcp "${DWVM_PORT:-9647}" 30; then
		dw_fail "restarted drivewatch does not listen: $(tail -n 5 /tmp/service.log | tr '\n' '|')"
		return 1
	fi
	dw_mark restart-up "pid=$DW_SERVICE_PID"
}

unplug_stop2() {
	dw_service_stop TERM 20
	cp /tmp/service.log /tmp/service2.log
	dw_send_file service2.log /tmp/service2.log
	# /init ships /tmp/service.log at the end: the first run's.
	cp /tmp/service1.log /tmp/service.log
}

dw_mark cmd-ready
_done='|'
_end=$(($(cut -d. -f1 /proc/uptime) + 900))
while [ "$(cut -d. -f1 /proc/uptime)" -lt "$_end" ]; do
	read -r -t 1 _line <&3 || continue
	_line=$(echo "$_line" | tr -d '\r')
	case $_done in *"|$_line|"*) continue ;; esac
	# shellcheck disable=SC2086 # split the command into words
	set -- $_line
	case ${1:-} in
	arm) unplug_arm "$2" "$3" "$4" ;;
	gone) unplug_gone "$2" "$3" "$4" ;;
	back) unplug_back "$2" "$3" ;;
	finish) unplug_finish ;;
	stop2)
		unplug_stop2
		dw_mark unplug-done
		_end=0
		;;
	*)
		[ -z "${1:-}" ] || dw_mark unknown-command "$_line"
		continue
		;;
	esac
	_done="$_done$_line|"
done
[ "$_end" = 0 ] || dw_fail "unplug: no stop2 from the host within 900 s"
