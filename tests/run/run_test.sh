#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run test: the real drivewatch binary on a machine with no NVMe controller,
# scraped with real curl and linted by the real promtool.
#   usage: run_test.sh DRIVEWATCH_BINARY SOURCE_DIR
set -euo pipefail
bin=$(realpath "$1")
src=$(realpath "$2")
notify_pid=""
on_exit() { if [[ -n $notify_pid ]]; then kill "$notify_pid" 2>/dev/null || true; fi; }
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$src/tests/run/lib.sh"

fail() {
  echo "FAIL: $*" >&2
  if [[ -f $work/daemon.log ]]; then
    echo "--- daemon log ---" >&2
    cat "$work/daemon.log" >&2
  fi
  exit 1
}
pass() { echo "ok: $*"; }

if ls /sys/class/nvme/nvme* >/dev/null 2>&1; then
  echo "note: this machine has NVMe controllers; the no-NVMe checks still run"
  no_nvme=0
else
  no_nvme=1
fi

cat >"$work/good.toml" <<TOML
[state]
directory = "$work/state"
[discovery]
interval = "1s"
TOML

# --- check-config -----------------------------------------------------------
"$bin" check-config "$work/good.toml" >"$work/out" || fail "check-config rejected a good file"
grep -qx "$work/good.toml: OK" "$work/out" || fail "check-config did not say OK: $(cat "$work/out")"
"$bin" check-config "$src/config/drivewatch.toml" >/dev/null || fail "the example config does not validate"
pass "check-config accepts good files"

printf '[probes.health]\nintervall = "30s"\n' >"$work/bad.toml"
set +e
"$bin" check-config "$work/bad.toml" 2>"$work/err"
status=$?
set -e
[[ $status -eq 2 ]] || fail "check-config on a bad file exited $status, expected 2"
grep -q "^$work/bad.toml:2:1: probes.health.intervall: unknown key" "$work/err" \
  || fail "check-config error not located: $(cat "$work/err")"
pass "check-config rejects a bad file with exit 2 and a located message: $(head -1 "$work/err")"

set +e
"$bin" --config.file="$work/missing.toml" 2>"$work/err"
status=$?
set -e
[[ $status -eq 2 ]] || fail "a missing config file exited $status, expected 2"
grep -q "missing.toml" "$work/err" || fail "missing-file error does not name the file"
pass "a missing config file exits 2: $(head -1 "$work/err")"

set +e
"$bin" --no-such-flag 2>"$work/err"
status=$?
set -e
[[ $status -eq 2 ]] || fail "an unknown flag exited $status, expected 2"
pass "an unknown flag exits 2"

"$bin" --version | grep -q "^drivewatch " || fail "--version"
help=$("$bin" --help) || fail "--help exited $?"
grep -q -- "--web.listen-address" <<<"$help" || fail "--help"

# A command's --help: its usage lines and its flags, not the others'.
phase_help=$("$bin" phase run --help) || fail "phase run --help exited $?"
[[ $phase_help == "usage: drivewatch phase run NAME --config.file=FILE"* ]] \
  || fail "phase run --help does not start with phase's usage: $phase_help"
grep -q -- "--target=NAME" <<<"$phase_help" || fail "phase run --help lacks --target: $phase_help"
! grep -qE -- "drivewatch (history|report)|--baseline|--wait" <<<"$phase_help" \
  || fail "phase run --help shows other commands' usage or flags: $phase_help"
report_help=$("$bin" report --help --no-such-flag) || fail "report --help exited $?"
[[ $report_help == "usage: drivewatch report "* ]] \
  || fail "report --help does not start with report's usage: $report_help"
for flag in --drive=SERIAL --baseline=SERIAL --runs=LIST --output=FILE --format=FORMAT; do
  grep -q -- "$flag" <<<"$report_help" || fail "report --help lacks $flag: $report_help"
done
! grep -qE -- "drivewatch (phase|selftest)|--target|--wait|--once" <<<"$report_help" \
  || fail "report --help shows other commands' usage or flags: $report_help"
[[ $report_help != "$help" && ${#report_help} -lt ${#help} ]] || fail "report --help is the whole help"
pass "phase run --help and report --help show their command's help alone"

# Flags in the wrong place: exit 2 and a message that names the flag.
set +e
"$bin" history --target=x 2>"$work/err"
status=$?
set -e
[[ $status -eq 2 ]] || fail "history --target exited $status, expected 2"
grep -qx "drivewatch: --target goes with phase run" "$work/err" || fail "history --target: $(cat "$work/err")"
pass "a flag of another command exits 2: $(cat "$work/err")"

# --- collect --once ---------------------------------------------------------
"$bin" collect --once --config.file="$work/good.toml" >"$work/collect.prom" 2>"$work/collect.log" \
  || fail "collect --once failed: $(cat "$work/collect.log")"
grep -q '^drivewatch_discovery_success 1$' "$work/collect.prom" || fail "collect output lacks discovery_success 1"
lint=$(promtool check metrics <"$work/collect.prom" 2>&1) || fail "promtool on collect output: $lint"
[[ -z $lint ]] || fail "promtool complains about collect output: $lint"
[[ ! -e $work/state ]] || fail "collect --once must not write the state directory"
pass "collect --once prints a clean exposition"

# collect --once with a read latency file target: a burst of 100 real reads.
lat_dir=$work/latency-target  # under /var/tmp: O_DIRECT works there
mkdir -p "$lat_dir"
cat >"$work/latency.toml" <<TOML
[state]
directory = "$work/state"
[probes.read_latency]
targets = [ { name = "run_test", directory = "$lat_dir", file_size = "8MiB" } ]
TOML
"$bin" collect --once --config.file="$work/latency.toml" >"$work/latency.prom" 2>"$work/latency.log" \
  || fail "collect --once with a file target failed: $(cat "$work/latency.log")"
grep -Eq '^drivewatch_read_latency_seconds_count\{rate="100",target="run_test"\} 100$' "$work/latency.prom" \
  || fail "collect --once did not record 100 reads: $(grep read_latency_seconds_count "$work/latency.prom")"
grep -q '^drivewatch_read_latency_window_seconds{percentile="99",rate="100",target="run_test",window="15m"} ' "$work/latency.prom" \
  || fail "collect --once lacks the p99 gauge"
lint=$(promtool check metrics <"$work/latency.prom" 2>&1) || fail "promtool on latency output: $lint"
[[ -z $lint ]] || fail "promtool complains about latency output: $lint"
pass "collect --once with a file target reads 100 times and exports latency"

# --- the daemon -------------------------------------------------------------
# A stand-in for systemd's notify socket records READY=1 and the watchdog
# pings (WATCHDOG_USEC=400 ms asks for a ping at least every 200 ms).
python3 - "$work/notify.sock" "$work/notify.log" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(30)
with open(sys.argv[2], "a", buffering=1) as log:
    end = time.time() + 30
    while time.time() < end:
        try:
            log.write(s.recv(4096).decode() + "\n")
        except socket.timeout:
            break
PY
notify_pid=$!
for _ in $(seq 50); do [[ -S $work/notify.sock ]] && break; sleep 0.1; done
NOTIFY_SOCKET=$work/notify.sock WATCHDOG_USEC=400000 \
  start_daemon "$work/daemon.log" --config.file="$work/good.toml"
[[ $url == http://127.0.0.1:* ]] || fail "expected http://127.0.0.1:PORT/metrics, got $url"

curl -fsS "$url" >"$work/scrape.prom" || fail "curl $url"
grep -q '^drivewatch_build_info{' "$work/scrape.prom" || fail "no build_info"
grep -q '^drivewatch_config_last_reload_successful 1$' "$work/scrape.prom" || fail "no reload metric"
lint=$(promtool check metrics <"$work/scrape.prom" 2>&1) || fail "promtool: $lint"
[[ -z $lint ]] || fail "promtool complains: $lint"
pass "GET /metrics answers and passes promtool check metrics"

curl -fsS "$base/" | grep '<a href="metrics">' >/dev/null || fail "landing page"
curl -fsS "$base/-/healthy" | grep -q healthy || fail "/-/healthy"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$base/metrics")
[[ $code != 200 ]] || fail "POST /metrics must not succeed"
pass "landing page and /-/healthy answer; POST is refused ($code)"

sleep 1
grep -q '^READY=1' "$work/notify.log" || fail "no READY=1 on the notify socket: $(cat "$work/notify.log")"
pings=$(grep -c '^WATCHDOG=1' "$work/notify.log" || true)
[[ $pings -ge 4 ]] || fail "expected at least 4 watchdog pings in ~1 s, got $pings"
pass "sd_notify: READY=1, then $pings watchdog pings so far (one per 200 ms asked)"

# Gzip, as Prometheus asks for it.
curl -fsS --compressed "$url" | grep '^drivewatch_build_info{' >/dev/null || fail "gzip scrape"

if [[ $no_nvme -eq 1 ]]; then
  sleep 2.5  # a few discovery passes at 1 s
  curl -fsS "$url" | grep '^drivewatch_drives{state="up"} 0$' >/dev/null || fail "expected no drives up"
  n=$(grep -c "no NVMe controllers found" "$work/daemon.log" || true)
  [[ $n -eq 1 ]] || fail "'no NVMe controllers found' logged $n times, expected once"
  pass "with no NVMe present: logged once, exporter metrics still served"
fi

# SIGHUP with a broken file keeps the old config.
cp "$work/good.toml" "$work/good.toml.orig"
printf 'this is not toml = = =\n' >"$work/good.toml"
kill -HUP "$pid"
for _ in $(seq 50); do
  curl -fsS "$url" | grep '^drivewatch_config_last_reload_successful 0$' >/dev/null && break
  sleep 0.1
done
curl -fsS "$url" | grep '^drivewatch_config_last_reload_successful 0$' >/dev/null || fail "bad reload not reported"
kill -0 "$pid" || fail "the daemon died on a bad reload"
grep -q "keeping the running config" "$work/daemon.log" || fail "bad reload not logged"
pass "SIGHUP with a broken config is rejected and the old one keeps running"

cp "$work/good.toml.orig" "$work/good.toml"
kill -HUP "$pid"
for _ in $(seq 50); do
  curl -fsS "$url" | grep '^drivewatch_config_last_reload_successful 1$' >/dev/null && break
  sleep 0.1
done
curl -fsS "$url" | grep '^drivewatch_config_last_reload_successful 1$' >/dev/null || fail "good reload not reported"
pass "SIGHUP with a good config reloads"

# A second daemon on the same port fails clearly.
port=${base##*:}
set +e
timeout 10 "$bin" --config.file="$work/good.toml" --web.listen-address="127.0.0.1:$port" 2>"$work/err2"
status=$?
set -e
[[ $status -eq 1 ]] || fail "a busy port exited $status, expected 1"
grep -q "cannot listen on 127.0.0.1:$port" "$work/err2" || fail "busy-port message: $(cat "$work/err2")"
pass "a busy port exits 1: $(grep -o 'cannot listen.*' "$work/err2")"

kill -TERM "$pid"
for _ in $(seq 50); do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then fail "the daemon did not stop within 5 s of SIGTERM"; fi
wait "$pid" && status=0 || status=$?
pid=""
[[ $status -eq 0 ]] || fail "the daemon exited $status after SIGTERM"
grep -q "stopped" "$work/daemon.log" || fail "no clean stop in the log"
grep -q '^STOPPING=1' "$work/notify.log" || fail "no STOPPING=1 on the notify socket"
kill "$notify_pid" 2>/dev/null || true
pass "SIGTERM stops the daemon cleanly (exit 0)"
echo "run test: all checks passed"
