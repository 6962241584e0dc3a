# SPDX-License-Identifier: Apache-2.0
# Guest side of tests/bench/collect_once_vs_smartctl.sh (busybox ash, sourced
# by /init with /etc/dwvm/lib.sh loaded; /etc/dwvm/bench.env sets ROUNDS
# and RUNS). Per round: RUNS one-shot health collections, RUNS
# `smartctl -j -x` on the same controller, RUNS `drivewatch --version` and
# RUNS `smartctl --version` (start-up and exit alone: loading and
# initialising their libraries), then check-config, collect --once without
# probes and, with BASELINE set, the same health collection and --version
# of /usr/bin/drivewatch-baseline, each
# timed as a batch by
# /proc/uptime (10 ms ticks: a batch of RUNS keeps that under 1 ms a run).
. /etc/dwvm/bench.env
dev=/dev/$(dw_ctrls | head -1)
# An installed system has /etc/ld.so.cache; without one the loader probes
# every hwcaps directory for each library, which would charge the binary
# with more libraries for an artefact of the initramfs.
[ -x /sbin/ldconfig ] || dw_fail "no /sbin/ldconfig in the guest"
/sbin/ldconfig || dw_fail "ldconfig failed"
[ -s /etc/ld.so.cache ] || dw_fail "ldconfig wrote no /etc/ld.so.cache"
cat >/tmp/health.toml <<'TOML'
[state]
directory = "/tmp/dw-state"
[probes.thermal]
enabled = false
[probes.power]
enabled = false
[probes.read_latency]
enabled = false
[probes.self_test]
enabled = false
[probes.error_log]
enabled = false
[probes.persistent_event_log]
enabled = false
TOML
# The same with the health probe off too: start-up, config, discovery and
# the exposition, without a single admin command.
{ cat /tmp/health.toml; printf '[probes.health]\nenabled = false\n'; } >/tmp/none.toml
once() { drivewatch collect --once --config.file=/tmp/health.toml; }
none() { drivewatch collect --once --config.file=/tmp/none.toml; }
config() { drivewatch check-config /tmp/health.toml; }
# Each must work before it is timed.
config >/dev/null 2>&1 || dw_fail "check-config /tmp/health.toml failed"
none >/dev/null 2>&1 || dw_fail "collect --once without probes failed"
once >/tmp/once.prom 2>/tmp/once.err || dw_fail "collect --once failed: $(head -c 300 /tmp/once.err)"
grep -q '^drivewatch_probe_success{probe="health".*} 1$' /tmp/once.prom ||
	dw_fail "collect --once: no successful health probe: $(head -c 300 /tmp/once.err)"
if [ -n "$BASELINE" ]; then
	drivewatch-baseline collect --once --config.file=/tmp/health.toml >/tmp/base.prom 2>&1 ||
		dw_fail "the baseline's collect --once failed: $(head -c 300 /tmp/base.prom)"
fi
# smartctl's exit status is a bit mask of drive findings; its JSON must parse.
smartctl -j -x "$dev" >/tmp/smart.json || true
grep -q '"nvme_smart_health_information_log"' /tmp/smart.json || dw_fail "smartctl -j -x $dev: no SMART log in its output"
dw_send_file once.prom /tmp/once.prom
dw_send_file once.err /tmp/once.err
batch() {  # batch CMD...: milliseconds per run over RUNS runs
	_t0=$(cut -d' ' -f1 /proc/uptime)
	_i=0
	while [ "$_i" -lt "$RUNS" ]; do
		"$@" >/dev/null 2>&1 || true
		_i=$((_i + 1))
	done
	_t1=$(cut -d' ' -f1 /proc/uptime)
	awk -v a="$_t0" -v b="$_t1" -v n="$RUNS" 'BEGIN {printf "%.1f", (b - a) * 1000 / n}'
}
base_once() { drivewatch-baseline collect --once --config.file=/tmp/health.toml; }
r=1
while [ "$r" -le "$ROUNDS" ]; do
	# The baseline's batch sits next to this binary's of the same kind, first
	# in even rounds and second in odd ones, so neither gains from its place.
	if [ -n "$BASELINE" ] && [ $((r % 2)) -eq 0 ]; then
		bd=$(batch base_once)
		d=$(batch once)
	else
		d=$(batch once)
		[ -n "$BASELINE" ] && bd=$(batch base_once)
	fi
	s=$(batch smartctl -j -x "$dev")
	if [ -n "$BASELINE" ] && [ $((r % 2)) -eq 0 ]; then
		bv=$(batch drivewatch-baseline --version)
		v=$(batch drivewatch --version)
	else
		v=$(batch drivewatch --version)
		[ -n "$BASELINE" ] && bv=$(batch drivewatch-baseline --version)
	fi
	sv=$(batch smartctl --version)
	c=$(batch config)
	n=$(batch none)
	if [ -n "$BASELINE" ]; then
		dw_mark bench-round "$r" "$d" "$s" "$v" "$sv" "$c" "$n" "$bd" "$bv"
	else
		dw_mark bench-round "$r" "$d" "$s" "$v" "$sv" "$c" "$n"
	fi
	r=$((r + 1))
done
# Where a one-shot run's time goes, when strace was copied in.
if [ -x /usr/bin/strace ]; then
	strace -f -c -o /tmp/strace-c.txt drivewatch collect --once --config.file=/tmp/health.toml >/dev/null 2>&1 || true
	strace -f -tt -T -o /tmp/strace-tt.txt drivewatch collect --once --config.file=/tmp/health.toml >/dev/null 2>&1 || true
	dw_send_file strace-c.txt /tmp/strace-c.txt
	dw_send_file strace-tt.txt /tmp/strace-tt.txt
fi
if [ -x /usr/bin/valgrind.bin ]; then
	export VALGRIND_LIB=/usr/libexec/valgrind
	valgrind.bin --tool=callgrind --dump-instr=yes --callgrind-out-file=/tmp/callgrind.drivewatch \
		drivewatch collect --once --config.file=/tmp/health.toml >/dev/null 2>&1 || true
	valgrind.bin --tool=callgrind --dump-instr=yes --callgrind-out-file=/tmp/callgrind.smartctl \
		smartctl -j -x "$dev" >/dev/null 2>&1 || true
	for f in callgrind.drivewatch callgrind.smartctl; do
		[ -s "/tmp/$f" ] && dw_send_file "$f" "/tmp/$f"
	done
fi
dw_mark bench-done
