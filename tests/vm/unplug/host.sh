# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Host side of the "unplug" VM scenario (guest side: unplug/guest.sh).
# Source after tests/vm/lib.sh, then call unplug_run OUTDIR WORKDIR.
#
# Fault 1 of docs/faults.md: a controller hot-unplugged while drivewatch is
# in the middle of a SMART read and of a read-latency probe. The real
# drivewatch runs in the guest (unplug/drivewatch.toml): every admin probe
# of DWSN0001 every 1 s (the shortest interval allowed), SMART AENs on, and
# the read latency probe at 100 IOPS on every namespace (DWSN0001 nsid 1,
# DWSN0002 nsid 1 and 2). A real Prometheus scrapes it every second, and a
# host watcher (check.py watch) reads /metrics every 0.2 s all along.
#
# Each cycle lands the unplug in the middle of DWSN0001's work by
# construction, not by racing the guest kernel for it:
#   1. a blkdebug break (QMP human-monitor-command "qemu-io -d c0 break
#      read_aio") holds the next read of c0's backing node n0 in QEMU: the
#      read latency probe's read is in flight, and the guest checks it is
#      held (/sys/block/NS/inflight);
#   2. in the guest, unplug_hold (unplug/hold.cc, ptrace) holds the daemon's
#      discovery at the start of its next scan, and the health or thermal
#      probe of DWSN0001 right after its Identify Controller succeeded and
#      before its Get Log Page 02h (the SMART log) goes out;
#   3. device_del c0: the kernel marks the controller deleting and waits,
#      in the namespace's removal, for the held read; the guest lets the
#      probe's SMART read go, which the kernel fails (0x370), and waits for
#      the daemon to log it;
#   4. the held read is resumed; the removal ends (DEVICE_DELETED), and the
#      read latency probe's next read fails (discovery, still held, has not
#      stopped it); the guest waits for that log line, then lets discovery
#      go, which sees the drive gone;
#   5. UNPLUG_DOWN s unplugged; device_add with the same serial and backing
#      node.
# UNPLUG_CYCLES (4) cycles. Checks:
#   U1 /metrics answers during every unplug: every watcher scrape from
#      device_del until the drive is back succeeded, median under
#      UNPLUG_SCRAPE_MEDIAN s, slowest under UNPLUG_SCRAPE_MAX s; no watcher
#      scrape (5 s timeout) failed during the whole run (Prometheus' own
#      min up over each unplug is measured)
#   U2 DWSN0001's drivewatch_drive_up drops to 0 after DEVICE_DELETED and
#      is 1 again after device_add, with one drive_info under the same
#      serial carrying the guest's new kernel name, 2 drives up
#   U3 read latency resumes: DWSN0001 nsid 1's target is up again and its
#      read count grows across two publishes after the re-plug (the first
#      UNPLUG_CYCLES cycles; later ones check that it counts again)
#   U4 DWSN0002 is untouched: its read count grows over every cycle, no
#      read error and no timeout ever, its health probe never failed
#      (Prometheus min_over_time)
#   U5 the unplug hit work in flight. drivewatch exports no per-command
#      error counter (U9 counts failed runs, not which command failed), and
#      a failed run's probe_success 0 is replaced within a discovery
#      interval by the drive's removal, so the evidence is the
#      daemon's "probe P on drive ... failed: DEVICE: COMMAND: ERROR" line
#      (the daemon's log up to each unplug is shipped as service-N.log):
#      a  in every cycle: the health or thermal probe (the two that read
#         the SMART log) failed on the open controller with the error the
#         kernel returned for a command sent while it removed the
#         controller (NVMe status 0x370 Host Pathing Error, ENODEV, EIO),
#         not a failed open of a node already gone; and the read latency
#         probe on DWSN0001 was reading when its namespace went (a read
#         failed: "reopening the target" with its errno name, or read
#         errors published before drive_up went 0)
#      b  in every cycle: a SMART read itself was hit, i.e. the health or
#         thermal probe failed at "get log page 02h" in a run whose
#         Identify Controller, sent just before, had succeeded: the
#         controller began going away between the two commands of one run
#   U6 nothing leaks: once the drive is down the daemon holds no file of a
#      deleted /dev/nvme* node (guest /proc/PID/fd), so the kernel can
#      reuse the name
#   U9 the faults are counted: drivewatch_probe_failures_total of
#      DWSN0001's health and thermal probes is at least the number of their
#      failures the daemon logged over all cycles (logged once until the
#      probe recovers, so each line is one failed run at least; U5a: one in
#      each cycle at least), DWSN0002's is 0
#   U10 the reads that failed at the unplugs stay counted: the sum of
#      DWSN0001's drivewatch_read_errors_total is at least the number of
#      cycles whose read was hit (its counts continue across the re-plug)
#   U7 the daemon never restarted (same PID at every check, alive) and
#      exits 0 on SIGTERM
#   U8 nothing lost: the state directory parses (known-drives.tsv: header,
#      one 4-field line for each drive; *.state line kinds; no temporary
#      file) and the daemon started again on it reads it back: both drives
#      up at once, no warning about its state files, exit 0 again
# Results: OUTDIR/assertions.txt, OUTDIR/measurements.txt, OUTDIR/cycles.txt
# (one JSON line per cycle: timings, log evidence, watcher summary),
# OUTDIR/scrapes.jsonl (every watcher scrape), files/ (service.log,
# service-N.log, service2.log, state.tar, dmesg.txt).

UNPLUG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
UNPLUG_SERIAL=DWSN0001
UNPLUG_OTHER=DWSN0002
UNPLUG_ADD='"driver":"nvme","id":"c0","serial":"DWSN0001","drive":"n0"'
UNPLUG_CYCLES=${UNPLUG_CYCLES:-4}
UNPLUG_DOWN=${UNPLUG_DOWN:-3}                    # seconds unplugged
# /metrics answers from device_del until the drive is back (seconds): the
# median must be fast; the slowest may take longer, as the re-plugged
# controller's probe and partition scan keep the guest's one TCG CPU busy
# and a loaded CI host stalls it (1-2 s seen at load 11 on 2 cores).
UNPLUG_SCRAPE_MEDIAN=${UNPLUG_SCRAPE_MEDIAN:-0.5}
UNPLUG_SCRAPE_MAX=${UNPLUG_SCRAPE_MAX:-3.0}

up_check() { dw_python "$UNPLUG_DIR/check.py" "$@"; }
up_url() { echo "http://127.0.0.1:$VM_HOSTPORT/metrics"; }
up_value() { up_check value "$(up_url)" "$@" 2>/dev/null || true; }
up_json() { dw_python -c 'import json,sys; v=json.load(sys.stdin); print(eval(sys.argv[1], {}, {"v": v}))' "$1"; }
up_gt() { awk -v a="${1:-}" -v b="${2:-}" 'BEGIN{exit !(a != "" && b != "" && a + 0 > b + 0)}'; }

# up_failures SERIAL PROBE_REGEX: the drive's failed probe runs, summed.
up_failures() {
	prom_value "sum(drivewatch_probe_failures_total{serial=\"$1\",probe=~\"$2\"})"
}
# up_failures_at_least N: DWSN0001's health+thermal failures >= N, DWSN0002's 0.
up_failures_at_least() {
	local v
	v=$(up_failures "$UNPLUG_SERIAL" 'health|thermal')
	! up_gt "$1" "${v:-0}" && [[ -n $v && $(up_failures "$UNPLUG_OTHER" '.*') == 0 ]]
}

# up_poll TIMEOUT_S CMD...: retry CMD every 0.2 s; prints seconds waited.
up_poll() {
	local to=$1 t0
	shift
	t0=$(dw_now)
	while ! "$@"; do
		if ! up_gt "$to" "$(dw_elapsed "$t0")"; then
			return 1
		fi
		sleep 0.2
	done
	dw_elapsed "$t0"
}
# up_is NAME LABELS WANT: the series' value on /metrics is WANT.
up_is() { [[ $(up_value "$1" "$2") == "$3" ]]; }
up_above() { up_gt "$(up_value "$1" "$2")" "$3"; }

# up_guest CMD MARKER TIMEOUT: send a command to the guest, print the
# marker's value. Sends again every 10 s until the marker comes (a line can
# get lost on the control port; the guest ignores a command it handled).
up_guest() {
	local end=$(($(date +%s) + $3))
	while :; do
		vm_send "$1" || return 1
		vm_wait_marker "$2" 10 2>/dev/null && return 0
		vm_running || { vm_wait_marker "$2" 1; return 1; }
		if (($(date +%s) >= end)); then
			vm_wait_marker "$2" 1
			return 1
		fi
		vm_log "no $2 from the guest yet; sending '$1' again"
	done
}

# up_io COMMAND [vmctl options]: a qemu-io command on c0's block backend
# (blkdebug's break, resume, remove_break), through QMP's
# human-monitor-command; prints what it printed, fails if it said anything
# but nothing (qemu-io reports its errors as text).
up_io() {
	local cmd=$1 reply text
	shift
	reply=$(vm_qmp "$(dw_python -c 'import json,sys; print(json.dumps({"execute": "human-monitor-command", "arguments": {"command-line": "qemu-io -d c0 \"%s\"" % sys.argv[1]}}))' "$cmd")" "$@") ||
		{ vm_log "qemu-io $cmd: no answer: $reply"; return 1; }
	text=$(head -n 1 <<<"$reply" | dw_python "$DW_VM_DIR/vmctl.py" jsonpath return)
	[[ -z ${text//[[:space:]]/} ]] || { vm_log "qemu-io $cmd: $text"; return 1; }
}

# ---------------------------------------------------------------- one cycle
# unplug_cycle N: one unplug/re-plug of c0; appends to cycles.txt.
unplug_cycle() {
	local n=$1 ok=1 out armed struck t_del t_deleted c1a c1b gone back name ns pid alive fds scan win
	local ns_before=$UP_NS d_down d_up d_read read_hit errs t_cycle steps
	t_cycle=$(dw_now)
	vm_log "---- cycle $n: hold a read of $ns_before and DWSN0001's probe at its SMART read, device_del c0 ($UNPLUG_SERIAL at $UP_NAME)"
	c1a=$(up_value sum:drivewatch_read_latency_seconds_count "serial=$UNPLUG_OTHER")
	# 1. The guest holds the daemon's discovery and its probe.
	armed=$(up_guest "arm $n $UNPLUG_SERIAL $ns_before" "armed-$n" 90) || armed=
	if [[ $armed != ready* ]]; then
		vm_fail "U5 cycle $n" "the guest could not hold the daemon's discovery and probe: '$armed'"
		return 1
	fi
	steps="armed $(dw_elapsed "$t_cycle")"
	# 2. The next read of n0 waits in QEMU until "resume"; the guest sees it
	# in flight.
	up_io "break read_aio unplug$n" || {
		vm_fail "U5 cycle $n" "QMP: blkdebug break on c0 failed"
		return 1
	}
	if [[ $(vm_wait_marker "read-held-$n" 60) != 1 ]]; then
		vm_fail "U5 cycle $n" "no read of $ns_before held in QEMU (guest: '$(vm_wait_marker "read-held-$n" 1)')"
		up_io "remove_break unplug$n" || true
		return 1
	fi
	steps+=" read-held $(dw_elapsed "$t_cycle")"
	# 3. The unplug, while the read is held and the probe is between its
	# two commands.
	t_del=$(dw_now)
	vm_qmp '{"execute":"device_del","arguments":{"id":"c0"}}' >/dev/null || {
		vm_fail "U2 cycle $n" "QMP device_del of c0 failed"
		return 1
	}
	struck=$(vm_wait_marker "struck-$n" 90) || struck=
	steps+=" struck $(dw_elapsed "$t_cycle")"
	[[ $struck == *logged=1* ]] || vm_log "cycle $n: the guest saw no SMART read fail: '$struck'"
	# 4. The held read goes on, and the removal ends.
	up_io "resume unplug$n" --timeout 60 --wait-event DEVICE_DELETED --event-device c0 || {
		vm_fail "U2 cycle $n" "no DEVICE_DELETED for c0 within 60 s of resuming the held read (guest: '$struck')"
		return 1
	}
	t_deleted=$(dw_now)
	steps+=" deleted $(dw_elapsed "$t_cycle")"
	gone=$(up_guest "gone $n $UNPLUG_SERIAL $ns_before" "gone-$n" 90) || gone=
	steps+=" gone $(dw_elapsed "$t_cycle")"
	if ! d_down=$(up_poll 30 up_is drivewatch_drive_up "serial=$UNPLUG_SERIAL" 0.0); then
		vm_fail "U2 cycle $n" "drivewatch_drive_up{serial=$UNPLUG_SERIAL} not 0 within 30 s of DEVICE_DELETED"
		ok=0
	fi
	d_down=$(dw_elapsed "$t_deleted")
	pid=$(sed -n 's/.*pid=\([0-9]*\).*/\1/p' <<<"$gone")
	alive=$(sed -n 's/.*alive=\([01]\).*/\1/p' <<<"$gone")
	fds=$(sed -n 's/.*fds=\(.*\)$/\1/p' <<<"$gone")
	if [[ $alive != 1 || $pid != "$UP_PID" ]]; then
		vm_fail "U7 cycle $n" "daemon after the unplug: '$gone' (want alive=1 pid=$UP_PID)"
		ok=0
	fi
	if [[ -z $gone || $fds == *deleted* ]]; then
		vm_fail "U6 cycle $n" "the daemon still holds a deleted NVMe node after the unplug: '$gone' (what held it: files/gone-$n.diag)"
		ok=0
	fi
	local name_before=$UP_NAME
	vm_extract_files "$VM_LOG" "$UP_OUT/files" "service-$n.log" >/dev/null || true
	scan=$(up_check logscan "$UP_OUT/files/service-$n.log" "$UNPLUG_SERIAL" "$n" 2>&1) || scan='{}'
	# Stay unplugged a while: DWSN0002 goes on reading without its peer.
	while ! up_gt "$(dw_elapsed "$t_deleted")" "$UNPLUG_DOWN"; do sleep 0.2; done

	vm_device_add "$UNPLUG_ADD" || {
		vm_fail "U2 cycle $n" "QMP device_add of c0 failed"
		return 1
	}
	local t_add
	t_add=$(dw_now)
	back=$(up_guest "back $n $UNPLUG_SERIAL" "back-$n" 60) || back=
	name=$(sed -n 's/.*name=\([^ ]*\).*/\1/p' <<<"$back")
	ns=$(sed -n 's/.*ns=\([^ ]*\).*/\1/p' <<<"$back")
	# Nothing held the old controller: the kernel gives its name back.
	if [[ $name != "$name_before" ]]; then
		vm_fail "U6 cycle $n" "the re-plugged controller is $name, not $name_before: something still held the old one (guest after the unplug: $gone)"
		ok=0
	fi
	if ! d_up=$(up_poll 40 up_is drivewatch_drive_up "serial=$UNPLUG_SERIAL" 1.0); then
		vm_fail "U2 cycle $n" "drivewatch_drive_up{serial=$UNPLUG_SERIAL} not back to 1 within 40 s of device_add (guest: $back)"
		ok=0
	fi
	d_up=$(dw_elapsed "$t_add")
	if ! out=$(up_poll 20 up_is drivewatch_drive_info "serial=$UNPLUG_SERIAL,kernel_name=$name" 1.0) ||
		! up_is drivewatch_drives state=up 2.0; then
		vm_fail "U2 cycle $n" "after the re-plug: drive_info{serial=$UNPLUG_SERIAL,kernel_name=$name} '$(up_value drivewatch_drive_info "serial=$UNPLUG_SERIAL")', drives up '$(up_value drivewatch_drives state=up)' (want 1 and 2)"
		ok=0
	fi
	# U3: the new namespace is read again (the first publish comes within
	# 5 s of the target opening; then it must grow).
	local r1 r2
	if ! d_read=$(up_poll 40 up_above drivewatch_read_latency_seconds_count "serial=$UNPLUG_SERIAL,nsid=1" 0); then
		vm_fail "U3 cycle $n" "no read counted on $UNPLUG_SERIAL nsid 1 within 40 s of the re-plug (target_up '$(up_value drivewatch_read_latency_target_up "serial=$UNPLUG_SERIAL,nsid=1")')"
		ok=0
	else
		d_read=$(dw_elapsed "$t_add")
		r1=$(up_value drivewatch_read_latency_seconds_count "serial=$UNPLUG_SERIAL,nsid=1")
		# Growth across a second publish: in the first UNPLUG_CYCLES cycles
		# (the later ones only look for U5's SMART evidence).
		if ((n <= UNPLUG_CYCLES)) && ! up_poll 20 up_above drivewatch_read_latency_seconds_count "serial=$UNPLUG_SERIAL,nsid=1" "$r1" >/dev/null ||
			! up_is drivewatch_read_latency_target_up "serial=$UNPLUG_SERIAL,nsid=1" 1.0; then
			vm_fail "U3 cycle $n" "$UNPLUG_SERIAL nsid 1 read count stuck at $r1 after the re-plug (target_up '$(up_value drivewatch_read_latency_target_up "serial=$UNPLUG_SERIAL,nsid=1")')"
			ok=0
		fi
		r2=$(up_value drivewatch_read_latency_seconds_count "serial=$UNPLUG_SERIAL,nsid=1")
	fi
	# U4: the other drive.
	c1b=$(up_value sum:drivewatch_read_latency_seconds_count "serial=$UNPLUG_OTHER")
	if ! up_gt "$c1b" "$c1a"; then
		vm_fail "U4 cycle $n" "$UNPLUG_OTHER read count did not grow over the cycle: $c1a -> $c1b"
		ok=0
	fi
	errs=$(up_value sum:drivewatch_read_errors_total "serial=$UNPLUG_OTHER")/$(up_value sum:drivewatch_read_timeouts_total "serial=$UNPLUG_OTHER")
	if [[ $errs != /0.0 && $errs != 0.0/0.0 ]]; then
		vm_fail "U4 cycle $n" "$UNPLUG_OTHER has read errors/timeouts: $errs"
		ok=0
	fi
	# U1 for this cycle: the watcher's scrapes from device_del until it saw
	# the drive back (plus 1 s), and Prometheus' over the same span.
	local t_back prom_up
	win=$(up_check window "$UP_OUT/scrapes.jsonl" "$t_del" "$(dw_now)")
	t_back=$(up_json 'v["drive_up1_at"] or 0' <<<"$win")
	up_gt "$t_back" 0 || t_back=$(dw_now)
	t_back=$(awk -v t="$t_back" 'BEGIN{printf "%.3f", t + 1}')
	win=$(up_check window "$UP_OUT/scrapes.jsonl" "$t_del" "$t_back")
	prom_up=$(up_check prom-min "$PROM_URL" 'up{job="drivewatch"}' "$t_del" "$t_back" 2>&1) || true
	if [[ $(up_json 'v["failures"]' <<<"$win") != 0 ]] || ! up_gt "$UNPLUG_SCRAPE_MAX" "$(up_json 'v["max_dur"]' <<<"$win")" ||
		! up_gt "$UNPLUG_SCRAPE_MEDIAN" "$(up_json 'v["median_dur"]' <<<"$win")" || [[ $(up_json 'v["n"]' <<<"$win") -lt 5 ]]; then
		vm_fail "U1 cycle $n" "/metrics from device_del until the drive was back: $win (want no failure, median < ${UNPLUG_SCRAPE_MEDIAN}s, slowest < ${UNPLUG_SCRAPE_MAX}s)"
		ok=0
	fi
	UP_PROM_UP+="$n:${prom_up:-?} "
	win=$(up_check window "$UP_OUT/scrapes.jsonl" "$t_del" "$(dw_now)")
	# U5 per cycle: the read latency probe was reading when the namespace went.
	read_hit=$(up_json "'yes' if [g for g in v.get('read_gone', []) if g[0] == '/dev/$ns_before'] else 'no'" <<<"$scan")
	local pub
	pub=$(up_json 'v["err0_before_down"] or ""' <<<"$win")
	[[ -n $pub && $pub != "{}" ]] && read_hit=yes
	local admin_hit
	admin_hit=$(up_json "'yes' if [f for f in v.get('probe_failures', []) if f[0] in ('health', 'thermal') and ': open: ' not in f[2]] else 'no'" <<<"$scan")
	UP_ADMIN_HITS+=("$n:$admin_hit")
	# U9's floor: each logged health/thermal failure (a probe's error is
	# logged once until it recovers, so each line is one failed run at least).
	UP_FAIL_LINES=$((UP_FAIL_LINES + $(up_json "len([f for f in v.get('probe_failures', []) if f[0] in ('health', 'thermal')])" <<<"$scan")))
	local smart_hit=no
	if [[ $(up_json 'v.get("smart_in_flight")' <<<"$scan") == True ]]; then
		smart_hit=yes
		UP_SMART_CYCLES+="$n "
	fi
	UP_SMART_HITS+=("$n:$smart_hit")
	UP_READ_HITS+=("$n:$read_hit")
	if [[ $read_hit == yes && $admin_hit == yes ]]; then
		UP_HIT_CYCLES=$((UP_HIT_CYCLES + 1))
	fi
	steps+=" end $(dw_elapsed "$t_cycle")"
	printf '{"cycle": %d, "steps_s": "%s", "prom_min_up": "%s", "armed": "%s", "struck": "%s", "drive_up0_after_deleted_s": %s, "drive_up1_after_add_s": %s, "reads_after_add_s": "%s", "name_before": "%s", "name_after": "%s", "ns_before": "%s", "ns_after": "%s", "guest_gone": "%s", "reads_hit": "%s", "published_errors_before_down": "%s", "log": %s, "scrapes": %s, "other_reads": "%s -> %s", "reads_after": "%s -> %s"}\n' \
		"$n" "$steps" "$prom_up" "$armed" "$struck" "$d_down" "$d_up" "${d_read:-}" "$UP_NAME" "$name" "$ns_before" "$ns" "$gone" "$read_hit" "$pub" "$scan" "$win" "$c1a" "$c1b" "${r1:-}" "${r2:-}" >>"$UP_OUT/cycles.txt"
	vm_log "cycle $n: steps (s from its start) $steps; drive_up 0 ${d_down}s after DEVICE_DELETED, 1 ${d_up}s after device_add; $UP_NAME -> $name; reads hit: $read_hit; log: $(up_json '"smart_in_flight=%s failures=%s read_gone=%s" % (v.get("smart_in_flight"), v.get("probe_failures"), v.get("read_gone"))' <<<"$scan")"
	UP_NAMES+="$UP_NAME->$name "
	UP_NAME=$name
	UP_NS=$ns
	((ok)) && UP_CYCLES_OK=$((UP_CYCLES_OK + 1))
	return 0
}

# ---------------------------------------------------------------- driver
unplug_run() {
	vm_assert_init unplug "$1"
	UP_OUT=$VM_ASSERT_OUT
	local work=$2 t0 wall rc rc2 out n v since watcher
	: >"$UP_OUT/cycles.txt"
	: >"$UP_OUT/scrapes.jsonl"
	UP_PROM_UP='' UP_SMART_CYCLES='' UP_SMART_HITS=() UP_READ_HITS=() UP_ADMIN_HITS=() UP_NAMES='' UP_CYCLES_OK=0
	UP_HIT_CYCLES=0 UP_FAIL_LINES=0
	t0=$(dw_now)
	# Four cycles of 30 s each, and of two minutes on a host loaded ten
	# times over: more than lib.sh's default deadline, within ctest's 900 s.
	((DW_VM_TIMEOUT >= 840)) || DW_VM_TIMEOUT=840
	# The guest's thread holder (unplug/hold.cc; ctest passes the build's);
	# c0's backing node n0 goes through blkdebug, whose break holds a read.
	local hold=${DW_UNPLUG_HOLD:-${DW_BUILD_DIR:-$DW_VM_DIR/../../build}/tests/unplug_hold}
	[[ -x $hold ]] || {
		vm_fail "U5 setup" "no unplug_hold binary at $hold (build the unplug_hold target, or set DW_UNPLUG_HOLD)"
		return 1
	}
	DW_VM_EXTRA_FILES="${DW_VM_EXTRA_FILES:-} $hold:/usr/bin/unplug_hold" DW_VM_BLKDEBUG=n0 \
		vm_boot_scenario "$UNPLUG_DIR" drivewatch.d "$work/unplug.cpio.gz" || return 1
	UP_PID=$(vm_wait_marker service-up 5 | sed -n 's/.*pid=\([0-9]*\).*/\1/p')
	UP_NAME=$(tr ' ' '\n' <<<"$DW_VM_SERIALS" | sed -n "s/^$UNPLUG_SERIAL=//p")
	vm_wait_marker cmd-ready 30 >/dev/null || return 1
	# Every namespace read and published before the first unplug.
	out=$(prom_wait 'count(drivewatch_read_latency_target_up == 1)' 3 60 2>&1) || {
		vm_fail "U3 setup" "not all 3 namespaces read: $out"
		return 1
	}
	if ! up_poll 30 up_above drivewatch_read_latency_seconds_count "serial=$UNPLUG_SERIAL,nsid=1" 0 >/dev/null; then
		vm_fail "U3 setup" "no read counted on $UNPLUG_SERIAL before the first unplug"
		return 1
	fi
	UP_NS=$(dw_python -c '
import json,sys
for r in json.load(sys.stdin)["data"]["result"]:
    print(r["metric"]["path"].rsplit("/",1)[-1]); break' < <(prom_query "drivewatch_read_latency_target_info{serial=\"$UNPLUG_SERIAL\",nsid=\"1\"}"))
	vm_measure "daemon PID / DWSN0001 controller / namespace at boot" "$UP_PID / $UP_NAME / $UP_NS"
	UP_T_FIRST=$(date +%s)
	rm -f "$work/stop-watch"
	dw_python "$UNPLUG_DIR/check.py" watch "$(up_url)" "$UP_OUT/scrapes.jsonl" "$work/stop-watch" &
	watcher=$!

	n=0
	while ((n < UNPLUG_CYCLES)); do
		n=$((n + 1))
		unplug_cycle "$n" || break
	done
	touch "$work/stop-watch"
	wait "$watcher" 2>/dev/null || true
	vm_measure "cycles run / all checks passed in" "$n / $UP_CYCLES_OK"
	vm_measure "DWSN0001 kernel names across the cycles" "$UP_NAMES"
	vm_measure "cycles whose SMART read was hit (U5b)" "${UP_SMART_CYCLES:-none}"
	vm_measure "cycles whose read latency probe hit the unplug" "${UP_READ_HITS[*]}"
	vm_measure "cycles whose health/thermal failed on the open controller" "${UP_ADMIN_HITS[*]}"
	vm_measure "watcher scrapes (all / failed / slowest s)" "$(up_check window "$UP_OUT/scrapes.jsonl" 0 1e12 | up_json '"%d / %d / %.3f" % (v["n"], v["failures"], v["max_dur"] or 0)')"

	# U1 over the whole run: the watcher never failed (5 s timeout).
	# Prometheus' 1 s scrape timeout trips when the loaded host stalls the
	# guest for a second: its min up over each unplug is only measured.
	vm_measure "Prometheus min up over each unplug (cycle:value)" "$UP_PROM_UP"
	since=$(($(date +%s) - UP_T_FIRST + 2))
	out=$(up_check window "$UP_OUT/scrapes.jsonl" 0 1e12)
	if [[ $(up_json 'v["failures"]' <<<"$out") != 0 ]]; then
		vm_fail "U1 /metrics answers" "a watcher scrape failed: $out"
	fi
	vm_measure "Prometheus scrapes failed / slowest (s) during the cycles" "$(prom_value "count_over_time((up{job=\"drivewatch\"} == 0)[${since}s:1s])" || true) / $(prom_value "max_over_time(scrape_duration_seconds{job=\"drivewatch\"}[${since}s])")"
	[[ " ${VM_FAILED[*]} " == *" U1 "* ]] || vm_pass "U1 /metrics answers" "every watcher scrape (every 0.2 s, $(up_json 'v["n"]' <<<"$out") in all) succeeded; during each of the $n unplugs the median took < ${UNPLUG_SCRAPE_MEDIAN}s, the slowest < ${UNPLUG_SCRAPE_MAX}s"
	# U4 over the whole run: DWSN0002's health probe never failed.
	v=$(prom_value "min_over_time(drivewatch_probe_success{probe=\"health\",serial=\"$UNPLUG_OTHER\"}[${since}s])")
	if [[ $v != 1 ]]; then
		vm_fail "U4 other drive" "min_over_time(drivewatch_probe_success{health,$UNPLUG_OTHER}) = '$v' during the cycles"
	fi
	out=$(up_check window "$UP_OUT/scrapes.jsonl" 0 1e12)
	if [[ $(up_json 'v["err1_max"]' <<<"$out") != 0 || $(up_json 'v["to1_max"]' <<<"$out") != 0 ]]; then
		vm_fail "U4 other drive" "$UNPLUG_OTHER read errors/timeouts seen by the watcher: $out"
	fi
	# U5: every cycle, by construction (unplug_cycle's steps 1-4).
	if ((UP_HIT_CYCLES < UNPLUG_CYCLES)); then
		vm_fail "U5a work in flight" "only $UP_HIT_CYCLES of $UNPLUG_CYCLES cycles' unplugs hit DWSN0001's probes while they ran ($n run): reads ${UP_READ_HITS[*]}; health/thermal on the open controller ${UP_ADMIN_HITS[*]}"
	else
		vm_pass "U5a work in flight" "all $n cycles: a read of DWSN0001's namespace failed at the unplug (${UP_READ_HITS[*]}) and the health or thermal probe failed on the open controller (${UP_ADMIN_HITS[*]})"
	fi
	if [[ $(wc -w <<<"$UP_SMART_CYCLES") -lt $UNPLUG_CYCLES ]]; then
		vm_fail "U5b SMART read in flight" "the health or thermal probe failed at its SMART read right after its Identify in cycles '${UP_SMART_CYCLES% }' only, of $UNPLUG_CYCLES (${UP_SMART_HITS[*]}; cycles.txt, files/service-N.log)"
	else
		vm_pass "U5b SMART read in flight" "all $n cycles: a Get Log Page 02h failed right after the same run's Identify Controller succeeded (files/service-N.log)"
	fi
	# U9: every failed health/thermal run on DWSN0001 that the daemon
	# logged (one line per probe and cycle at least: logged once until it
	# recovers; U5a: one in each cycle at least) is counted in
	# drivewatch_probe_failures_total, which the drive keeps across the
	# unplug; DWSN0002 has none.
	local want9=$UP_FAIL_LINES
	((want9 >= UP_HIT_CYCLES)) || want9=$UP_HIT_CYCLES
	((want9 > 0)) || want9=1
	if up_poll 30 up_failures_at_least "$want9" >/dev/null; then
		vm_pass "U9 faults counted" "drivewatch_probe_failures_total{serial=$UNPLUG_SERIAL,probe=~health|thermal} = $(up_failures "$UNPLUG_SERIAL" 'health|thermal') after $n cycles, $UP_FAIL_LINES failures logged; $UNPLUG_OTHER: $(up_failures "$UNPLUG_OTHER" '.*')"
	else
		vm_fail "U9 faults counted" "drivewatch_probe_failures_total{serial=$UNPLUG_SERIAL,probe=~health|thermal} = '$(up_failures "$UNPLUG_SERIAL" 'health|thermal')' after $n cycles (want >= $want9: the health/thermal failures logged, $UP_FAIL_LINES, and at least one per cycle that hit, $UP_HIT_CYCLES); $UNPLUG_OTHER: '$(up_failures "$UNPLUG_OTHER" '.*')' (want 0)"
	fi
	# U10: the reads that failed at each unplug (U5a) stay counted: the
	# namespace's probe is kept through the grace period and its counts go
	# on after the re-plug, so its errors are exported once it is back.
	local reads_hit
	reads_hit=$(tr ' ' '\n' <<<"${UP_READ_HITS[*]}" | grep -c ':yes$' || true)
	v=$(prom_value "sum(drivewatch_read_errors_total{serial=\"$UNPLUG_SERIAL\"})")
	if up_gt "$reads_hit" "${v:-0}" || ! up_gt "${v:-0}" 0; then
		vm_fail "U10 read errors counted" "sum(drivewatch_read_errors_total{serial=$UNPLUG_SERIAL}) = '${v}' after $n cycles, $reads_hit of them with a failed read (want >= $reads_hit)"
	else
		vm_pass "U10 read errors counted" "sum(drivewatch_read_errors_total{serial=$UNPLUG_SERIAL}) = $v after $n cycles, $reads_hit of them with a failed read: $(prom_query "drivewatch_read_errors_total{serial=\"$UNPLUG_SERIAL\"}" | dw_python -c 'import json,sys; print(", ".join(r["metric"].get("error","?")+"="+r["value"][1] for r in json.load(sys.stdin)["data"]["result"]))')"
	fi
	for v in U2 U3 U4 U6 U7; do
		[[ " ${VM_FAILED[*]} " == *" $v "* ]] || vm_pass "$v" "all $n cycles"
	done

	# U7 + U8: stop, state, restart on the state.
	up_guest finish restart-up 120 >/dev/null || vm_fail "U8 state" "the daemon did not start again on its state"
	rc=$(vm_wait_marker service-exit 1) || rc=missing
	vm_measure "guest daemon CPU seconds / age (s)" "$(vm_wait_marker daemon-cpu 1) / $(vm_wait_marker daemon-age 1)"
	vm_measure "guest daemon VmRSS / VmHWM (kB) / threads" "$(vm_wait_marker daemon-rss 1) / $(vm_wait_marker daemon-hwm 1) / $(vm_wait_marker daemon-threads 1)"
	if [[ $rc == 0 ]]; then
		vm_pass "U7 daemon" "same PID $UP_PID at every check, exit 0 on SIGTERM"
	else
		vm_fail "U7 daemon" "exit status on SIGTERM: $rc"
	fi
	local ok8=1 t_r
	t_r=$(dw_now)
	for v in "$UNPLUG_SERIAL" "$UNPLUG_OTHER"; do
		up_poll 30 up_is drivewatch_drive_up "serial=$v" 1.0 >/dev/null || {
			vm_fail "U8 state" "after the restart drivewatch_drive_up{serial=$v} is '$(up_value drivewatch_drive_up "serial=$v")'"
			ok8=0
		}
	done
	vm_measure "restart -> both drives up (s)" "$(dw_elapsed "$t_r")"
	up_guest stop2 unplug-done 60 >/dev/null || true
	rc2=$(vm_wait_marker service-exit 1 2) || rc2=missing
	wall=$(vm_wait_exit 60) || wall=
	vm_measure "QEMU start -> exit (s)" "$wall"
	vm_extract_files "$VM_LOG" "$UP_OUT/files" >"$UP_OUT/files.list" || true
	[[ $rc2 == 0 ]] || { vm_fail "U8 state" "the restarted daemon's exit status on SIGTERM: $rc2"; ok8=0; }
	if out=$(up_check state "$UP_OUT/files/state.tar" "$UNPLUG_SERIAL,$UNPLUG_OTHER" 2>&1); then
		vm_measure "state directory" "$(up_json '"; ".join(v["files"])' <<<"$out")"
	else
		vm_fail "U8 state" "state directory: $out"
		ok8=0
	fi
	if out=$(grep -E '(warn|error): .*(ignored|malformed|cannot|starting with no known|state)' "$UP_OUT/files/service2.log" 2>&1); then
		vm_fail "U8 state" "the restarted daemon complained about its state: $out"
		ok8=0
	elif [[ ! -s $UP_OUT/files/service2.log ]]; then
		vm_fail "U8 state" "no log of the restarted daemon"
		ok8=0
	fi
	((ok8)) && vm_pass "U8 state" "known-drives.tsv and the probes' state files parse, no temporary file; restarted on them, both drives up, no complaint, exit 0"
	if out=$(grep -E '^[^ ]+ error: ' "$UP_OUT/files/service.log"); then
		vm_log "error lines in the daemon's log (for the record): $out"
	fi
	vm_measure "unplug scenario wall time (s)" "$(dw_elapsed "$t0")"
	vm_assert_result
}
