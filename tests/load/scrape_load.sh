#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Bounded scrape load: wrk with 64 connections against /metrics of the real
# HttpServer + MetricStore holding 16 drives' worth of series
# (tests/load/scrape_server.cc), on 127.0.0.1. Passes when every request
# succeeded (no socket error, no non-2xx) and the server's RSS grew by at
# most 1 MiB between the end of a warm-up run and the end of the measured
# run. Prints requests/s and p50/p99 latency.
#   usage: scrape_load.sh SCRAPE_SERVER_BINARY [SECONDS=60] [CONNECTIONS=64] [DRIVES=16]
set -euo pipefail
server=$(realpath "$1")
seconds=${2:-60}
conns=${3:-64}
drives=${4:-16}
command -v wrk >/dev/null || { echo "skip: wrk is not installed (apt-get install wrk)"; exit 77; }
work=$(mktemp -d)
pid=""
cleanup() {
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$server" --drives="$drives" >"$work/server.out" 2>"$work/server.err" &
pid=$!
for _ in $(seq 100); do
  grep -q '^listening' "$work/server.out" && break
  kill -0 "$pid" 2>/dev/null || fail "server died: $(cat "$work/server.err")"
  sleep 0.1
done
read -r _ port info <"$work/server.out" || fail "server did not start"
url="http://127.0.0.1:$port/metrics"
series=$(curl -fsS "$url" | grep -vc '^#')
echo "server: $info, $series series per scrape"
# A listening socket's Send-Q is its accept backlog: with a backlog of 5,
# 64 clients connecting at once lose SYNs and wait 1-3 s to retry.
backlog=$(ss -Hltn "sport = :$port" | awk '{print $3}' | head -1)
(( ${backlog:-0} >= conns )) || fail "listen backlog is ${backlog:-unknown}, want at least $conns"
echo "server: listen backlog $backlog"
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$pid/status"; }

threads=$(( $(nproc) < 4 ? $(nproc) : 4 ))
warm=$(( seconds < 15 ? 15 : seconds ))
wrk -t"$threads" -c"$conns" -d"${warm}s" "$url" >"$work/warm.txt" 2>&1 || fail "wrk warm-up: $(cat "$work/warm.txt")"
rss0=$(rss)
wrk -t"$threads" -c"$conns" -d"${seconds}s" --latency "$url" >"$work/run.txt" 2>&1 || fail "wrk: $(cat "$work/run.txt")"
rss1=$(rss)
cat "$work/run.txt"
kill -0 "$pid" 2>/dev/null || fail "server died under load"

rps=$(awk '/^Requests\/sec:/ {print $2}' "$work/run.txt")
p50=$(awk '$1 == "50%" {print $2}' "$work/run.txt")
p99=$(awk '$1 == "99%" {print $2}' "$work/run.txt")
requests=$(awk '/requests in/ {print $1}' "$work/run.txt")
echo "RESULT drives=$drives connections=$conns seconds=$seconds requests=$requests req/s=$rps p50=$p50 p99=$p99 rss_after_warmup=${rss0}KiB rss_end=${rss1}KiB growth=$((rss1 - rss0))KiB"
if grep -q 'Socket errors' "$work/run.txt"; then fail "socket errors: $(grep 'Socket errors' "$work/run.txt")"; fi
if grep -q 'Non-2xx' "$work/run.txt"; then fail "non-2xx responses: $(grep 'Non-2xx' "$work/run.txt")"; fi
[[ ${requests:-0} -gt 0 ]] || fail "no requests completed"
((rss1 - rss0 <= 1024)) || fail "RSS grew by $((rss1 - rss0)) KiB (> 1 MiB) after warm-up"
echo "ok: $requests scrapes, zero errors, RSS growth $((rss1 - rss0)) KiB"
