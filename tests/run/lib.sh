# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced by the tests in tests/run/ after `set -euo pipefail`:
#   work     a fresh directory under /var/tmp (O_DIRECT works there; /tmp may
#            be tmpfs), removed at exit
#   pid      set it to the drivewatch under test; killed at exit if alive
#   on_exit  define it before sourcing for more clean-up (unmount...), run
#            first at exit
#   fail MSG / pass MSG
work=$(mktemp -d "/var/tmp/dw-$(basename "$0" .sh).XXXXXX")
pid=""
dw_run_test_cleanup() {
  if declare -F on_exit >/dev/null; then on_exit || true; fi
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
  rm -rf "$work"
}
trap dw_run_test_cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

# The daemon under test. `bin` is the drivewatch binary.
#
#   start_daemon LOG [ARG...]
#     Runs "$bin" ARG... with stdout and stderr in LOG, listening on
#     127.0.0.1 on a port the kernel picks (unless an ARG gives
#     --web.listen-address), and waits for the line saying where it serves.
#     Sets pid, url (http(s)://HOST:PORT/metrics, 127.0.0.1 for localhost),
#     base (url without /metrics) and port. Fails, with the log's end, when
#     the daemon exits first or says nothing within 10 s. A port picked by
#     the kernel at bind time cannot be taken by another process in between,
#     as one picked beforehand can.
#   stop_daemon
#     SIGTERM, then fails unless the daemon exits 0 within 30 s (a hang
#     guard: how fast it stops is run_test.sh's to check).
#   scrape_until SECONDS PATTERN...
#     Scrapes $url into $work/metrics.txt until every PATTERN (grep -E) has a
#     line; returns 1 when that does not happen within SECONDS or the daemon
#     exits.
# shellcheck disable=SC2034,SC2154  # bin is the test's; pid, url, base, port are for it
start_daemon() {
  local log=$1 arg
  shift
  local listen=(--web.listen-address=127.0.0.1:0)
  for arg in "$@"; do
    [[ $arg == --web.listen-address=* ]] && listen=()
  done
  "$bin" "$@" "${listen[@]}" >"$log" 2>&1 &
  pid=$!
  url=""
  for _ in $(seq 100); do
    url=$(grep -o 'https\?://[^ ]*/metrics' "$log" 2>/dev/null | head -1 || true)
    [[ -n $url ]] && break
    kill -0 "$pid" 2>/dev/null || fail "the daemon exited at start: $(tail -5 "$log")"
    sleep 0.1
  done
  [[ -n $url ]] || fail "the daemon never said where it serves: $(tail -5 "$log")"
  url=${url/localhost/127.0.0.1}
  base=${url%/metrics}
  port=${base##*:}
}

stop_daemon() {
  local status=0
  kill -TERM "$pid"
  for _ in $(seq 300); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null && fail "the daemon did not stop within 30 s of SIGTERM"
  wait "$pid" || status=$?
  pid=""
  ((status == 0)) || fail "the daemon exited $status after SIGTERM"
}

scrape_until() {
  local deadline=$((SECONDS + $1)) pattern missing
  shift
  while ((SECONDS <= deadline)); do
    if curl -sf "$url" >"$work/metrics.txt"; then
      missing=0
      for pattern in "$@"; do
        grep -qE -- "$pattern" "$work/metrics.txt" || { missing=1; break; }
      done
      ((missing == 0)) && return 0
    fi
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}
