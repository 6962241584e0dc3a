# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Host side of the "liveproof" VM scenario (guest side: liveproof/guest.sh).
# Source after tests/vm/lib.sh, then call liveproof_run OUTDIR WORKDIR.
#
# The live proof of the shipped dashboards and rules: a real Prometheus
# scrapes two real drivewatch daemons every second and loads
# dashboards/rules/*.rules.yml (evaluation every second):
#   drivewatch-guest  the QEMU guest (the harness' two emulated controllers,
#                     the kernel's NVMe driver) with every probe on
#                     (liveproof/drivewatch.toml)
#   drivewatch-host   a drivewatch on this host with file targets in the
#                     work dir (liveproof/host-drivewatch.toml): the read
#                     latency probe on a directory target, and every heavy
#                     phase kind plus a retention study on a directory
#                     target, run by hand before the daemon starts (fill,
#                     perf, reclaim, trim, endurance, replay (a synthetic
#                     trace), retention-write,
#                     retention-verify, and sqlite and pgbench on an ext4
#                     loop device of their own), so the daemon exports their
#                     results from the history and the study file; the
#                     guest runs power-states on DWSN0001 the same way
# Then liveproof/check.py substitutes the dashboards' variables with real
# label values and evaluates every dashboard expression, every recorded
# series, every alert expression and every selector inside the rules:
# OK / EMPTY (allowlisted, with the reason) / FAIL. Any FAIL fails the
# scenario. Results: OUTDIR/liveproof.txt (the table), liveproof.json,
# measurements.txt, host/ (the host daemon's config, phase records, log,
# /metrics), metrics-guest.txt, files/ (the guest's service.log, dmesg).

LIVEPROOF_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LP_REPO=$(cd "$LIVEPROOF_DIR/../../.." && pwd)
LP_PHASES=(fill perf reclaim trim endurance replay retention-write retention-verify inserts tpcb)
# How long check.py keeps re-evaluating while rows still have no data
# (rates need two scrapes, the power draw probe a closed 10-IOPS window).
LP_SETTLE=${LP_SETTLE:-120}
LP_HOST_PID=
LP_APPS_LOOP=
LP_APPS_DIR=


# lp_host_phases WORK: the host daemon's config, and every phase by hand.
lp_host_phases() {
	local work=$1 p t rc
	LP_HOST=$LP_OUT/host
	mkdir -p "$LP_HOST" "$work/host/state" "$work/host/read" "$work/host/aging" "$work/host/study" \
		"$work/host/apps"
	# The application phases (sqlite, pgbench) run on a file system of
	# their own, over a block device: ext4 on a loop device, unmounted once
	# they ran (the daemon exports them from the history). PostgreSQL's
	# account must reach it.
	truncate -s 512M "$work/host/apps.img"
	mkfs.ext4 -q -F "$work/host/apps.img" ||
		{ dw_die host-apps "mkfs.ext4 $work/host/apps.img failed"; return 1; }
	LP_APPS_LOOP=$(losetup --show -f "$work/host/apps.img") ||
		{ dw_die host-apps "losetup failed"; return 1; }
	LP_APPS_DIR=$work/host/apps
	mount "$LP_APPS_LOOP" "$LP_APPS_DIR" || { dw_die host-apps "mount failed"; return 1; }
	chmod 755 "$work" "$work/host" "$work/host/apps"
	sed -e "s|@DIR@|$work/host|g" -e "s|@STATE@|$work/host/state|g" \
		"$LIVEPROOF_DIR/host-drivewatch.toml" >"$LP_HOST/drivewatch.toml"
	python3 "$LIVEPROOF_DIR/../../tools/make_trace.py" --format iolog3 --out "$work/host/trace.log" \
		--capacity $((256 << 20)) --ios 200 --mix 60,30,10 --think-us 5000 --max-size 131072 ||
		{ dw_die host-trace "tests/tools/make_trace.py failed"; return 1; }
	"$DRIVEWATCH_BIN" check-config "$LP_HOST/drivewatch.toml" >&2 ||
		{ dw_die host-config "$DRIVEWATCH_BIN check-config $LP_HOST/drivewatch.toml failed"; return 1; }
	for p in "${LP_PHASES[@]}"; do
		t=$(dw_now)
		rc=0
		"$DRIVEWATCH_BIN" phase run "$p" --config.file="$LP_HOST/drivewatch.toml" \
			>"$LP_HOST/phase-$p.json" 2>"$LP_HOST/phase-$p.log" </dev/null || rc=$?
		vm_measure "host phase $p by hand (s, exit status)" "$(dw_elapsed "$t") rc=$rc"
		((rc == 0)) || { dw_die "host phase $p" "exit $rc: $(tail -n 3 "$LP_HOST/phase-$p.log" | tr '\n' '|')"; return 1; }
	done
	lp_apps_release
}

# lp_apps_release: the application phases' file system unmounted and its
# loop device detached. Idempotent.
lp_apps_release() {
	[[ -n $LP_APPS_LOOP ]] || return 0
	umount "$LP_APPS_DIR" 2>/dev/null || umount -l "$LP_APPS_DIR" 2>/dev/null || true
	losetup -d "$LP_APPS_LOOP" 2>/dev/null || true
	LP_APPS_LOOP=
}

# lp_host_start: the host daemon on a free 127.0.0.1 port (LP_HOST_PORT).
lp_host_start() {
	LP_HOST_PORT=$(dw_free_port) || return 1
	timeout -k 5 "$DW_VM_TIMEOUT" "$DRIVEWATCH_BIN" --config.file="$LP_HOST/drivewatch.toml" \
		--web.listen-address="127.0.0.1:$LP_HOST_PORT" </dev/null >"$LP_HOST/service.log" 2>&1 &
	LP_HOST_PID=$!
	for _ in $(seq 100); do
		curl -fsS --max-time 1 "http://127.0.0.1:$LP_HOST_PORT/metrics" >/dev/null 2>&1 && {
			vm_log "host drivewatch pid $LP_HOST_PID on 127.0.0.1:$LP_HOST_PORT"
			return 0
		}
		kill -0 "$LP_HOST_PID" 2>/dev/null || break
		sleep 0.1
	done
	dw_die host-daemon "drivewatch on the host does not answer: $(tail -n 5 "$LP_HOST/service.log" | tr '\n' '|')"
}

# lp_host_stop: SIGTERM the host daemon; sets LP_HOST_RC. Idempotent.
lp_host_stop() {
	[[ -n $LP_HOST_PID ]] || return 0
	LP_HOST_RC=0
	if kill -0 "$LP_HOST_PID" 2>/dev/null; then
		kill -TERM "$LP_HOST_PID" 2>/dev/null
		local n=0
		while kill -0 "$LP_HOST_PID" 2>/dev/null && ((n++ < 100)); do sleep 0.1; done
		kill -KILL "$LP_HOST_PID" 2>/dev/null || true
	fi
	wait "$LP_HOST_PID" 2>/dev/null || LP_HOST_RC=$?
	LP_HOST_PID=
}

# lp_prom_start GUEST_TARGET HOST_TARGET: Prometheus scraping both every
# second as drivewatch-guest / drivewatch-host, with the shipped rule files.
# Sets PROM_PID and PROM_URL (lib.sh's prom_* and prom_stop use them).
lp_prom_start() {
	local guest=$1 host=$2 port f
	port=$(dw_free_port) || return 1
	{
		cat <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
EOF
		for f in "$LP_REPO"/dashboards/rules/*.rules.yml; do
			echo "  - '$f'"
		done
		cat <<EOF
scrape_configs:
  - job_name: drivewatch-guest
    static_configs:
      - targets: ['$guest']
  - job_name: drivewatch-host
    static_configs:
      - targets: ['$host']
EOF
	} >"$LP_OUT/prometheus.yml"
	promtool check config "$LP_OUT/prometheus.yml" >"$LP_OUT/promtool-check.txt" 2>&1 ||
		{ dw_die prom_start "promtool check config: $(tail -n 5 "$LP_OUT/promtool-check.txt")"; return 1; }
	rm -rf "$LP_OUT/prom-data"
	timeout -k 5 "${DW_PROM_TIMEOUT:-$DW_VM_TIMEOUT}" prometheus \
		--config.file="$LP_OUT/prometheus.yml" \
		--web.listen-address="127.0.0.1:$port" \
		--storage.tsdb.path="$LP_OUT/prom-data" \
		--log.level=warn </dev/null >"$LP_OUT/prometheus.log" 2>&1 &
	PROM_PID=$!
	PROM_URL=http://127.0.0.1:$port
	for _ in $(seq 100); do
		curl -fsS --max-time 1 "$PROM_URL/-/ready" >/dev/null 2>&1 && {
			vm_log "prometheus pid $PROM_PID at $PROM_URL scraping $guest (guest) and $host (host)"
			return 0
		}
		kill -0 "$PROM_PID" 2>/dev/null || break
		sleep 0.1
	done
	dw_die prom_start "prometheus not ready: $(tail -n 5 "$LP_OUT/prometheus.log")"
}

# liveproof_run OUTDIR WORKDIR: the whole scenario; returns 1 on any FAIL
# (listed at the top of OUTDIR/liveproof.txt).
liveproof_run() {
	vm_assert_init liveproof "$1"
	LP_OUT=$VM_ASSERT_OUT
	local work=$2 t0 n rc=0 grc wall
	# scenario.sh's cleanup stops QEMU and Prometheus; the host daemon too.
	# shellcheck disable=SC2154 # lp_rc is assigned inside the trap
	trap 'lp_rc=$?; lp_host_stop; lp_apps_release; (exit $lp_rc); cleanup' EXIT
	t0=$(dw_now)

	lp_host_phases "$work" || return 1
	lp_host_start || return 1

	DW_VM_DRIVEWATCH_CONFIG=$LIVEPROOF_DIR/drivewatch.toml \
		DW_VM_DRIVEWATCH_FRAGMENTS=$LIVEPROOF_DIR/no-fragments \
		vm_drivewatch_config "$LP_OUT/drivewatch.toml" || return 1
	DW_VM_EXTRA_FILES="${DW_VM_EXTRA_FILES:-} $LP_OUT/drivewatch.toml:/etc/drivewatch/drivewatch.toml" \
		vm_build_initramfs "$work/liveproof.cpio.gz" "$LIVEPROOF_DIR/guest.sh" "$DW_VM_DRIVEWATCH_SERVICE" || return 1
	vm_start "$LP_OUT" "$work/liveproof.cpio.gz" || return 1
	# Prometheus first: its first scrape lands ~5 s after it starts.
	lp_prom_start "127.0.0.1:$VM_HOSTPORT" "127.0.0.1:$LP_HOST_PORT" || return 1
	# The guest runs power-states by hand before its daemon starts (guest.sh).
	vm_wait_marker service-up 180 >/dev/null || return 1
	prom_wait 'count(up{job=~"drivewatch-.*"} == 1)' 2 60 >/dev/null ||
		{ dw_die scrape "Prometheus does not scrape both drivewatch daemons"; return 1; }
	n=$(vm_wait_marker ctrl-count 10) || return 1
	prom_wait 'count(drivewatch_probe_success{probe="health"} == 1)' "$n" 60 >/dev/null ||
		{ dw_die drivewatch "not all $n controllers have a successful health run"; return 1; }
	vm_measure "QEMU start -> all $n drives probed in Prometheus (s)" "$(dw_elapsed "$VM_T0")"

	local tc
	tc=$(dw_now)
	dw_python "$LIVEPROOF_DIR/check.py" --prom "$PROM_URL" --repo "$LP_REPO" --out "$LP_OUT" \
		--settle "$LP_SETTLE" >"$LP_OUT/check.txt" || rc=$?
	vm_measure "check.py (s, incl. waiting for data)" "$(dw_elapsed "$tc")"
	cat "$LP_OUT/check.txt" >&2
	curl -fsS --max-time 5 "http://127.0.0.1:$VM_HOSTPORT/metrics" >"$LP_OUT/metrics-guest.txt" 2>/dev/null || true
	curl -fsS --max-time 5 "http://127.0.0.1:$LP_HOST_PORT/metrics" >"$LP_HOST/metrics.txt" 2>/dev/null || true

	vm_wait_marker wait-host-finish 60 >/dev/null || return 1
	vm_send finish
	grc=$(vm_wait_marker service-exit 40) || grc=missing
	vm_wait_marker liveproof-done 30 >/dev/null || true
	wall=$(vm_wait_exit 60) || wall=timeout
	vm_extract_files "$VM_LOG" "$LP_OUT/files" >"$LP_OUT/files.list" || true
	lp_host_stop
	vm_measure "QEMU start -> exit (s)" "$wall"
	vm_measure "daemon exit status on SIGTERM (guest, host)" "$grc, $LP_HOST_RC"
	vm_measure "liveproof scenario wall time (s)" "$(dw_elapsed "$t0")"
	if [[ $grc != 0 || $LP_HOST_RC != 0 ]]; then
		vm_log "a daemon did not exit 0 on SIGTERM (guest $grc, host $LP_HOST_RC)"
		rc=1
	fi
	if ((rc != 0)); then
		vm_log "FAILED: see $LP_OUT/liveproof.txt"
		return 1
	fi
	vm_log "every expression with data returns data, none errors ($LP_OUT/liveproof.txt)"
}
