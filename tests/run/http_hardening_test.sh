#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The HTTP endpoint under hostile and odd peers, on the real drivewatch
# binary with real sockets on 127.0.0.1, curl as the honest scraper and
# tests/run/http_peers.py as the others:
#   1. 1,000 idle + 64 header-dripping connections, plain and TLS: every
#      honest scrape is answered and none waits behind a peer (p99 under
#      500 ms; see "Bounds" below);
#   2. a header bomb: 431, RSS growth under 5 MiB;
#   3. 32 loops of wrong passwords at bcrypt cost 12: a cached correct
#      credential's scrapes never pay for a bcrypt (each faster than the
#      first, uncached scrape of the same run);
#   4. three pipelined GETs answered in order; gzip;q=0 honoured; a head
#      dripping a byte every 0.5 s is closed at the 10 s head deadline;
#   5. SIGHUP while out of file descriptors says so;
#   6. 1,000 TLS handshakes that stall after 60 bytes of a ClientHello: RSS
#      grows under 20 MiB while they are open and is back within 5 MiB of
#      where it was once they are closed, twice over; honest TLS scrapes
#      are answered meanwhile; 1,000 that stall after a whole ClientHello
#      also grow RSS under 20 MiB.
#   usage: http_hardening_test.sh DRIVEWATCH_BINARY SOURCE_DIR
set -euo pipefail
bin=$(realpath "$1")
src=$(realpath "$2")
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$src/tests/run/lib.sh"
peers="$src/tests/run/http_peers.py"
# The peers hold over a thousand sockets; the daemon raises its own limit.
ulimit -n 8192
# Under scripts/sanitize.sh (ASAN_OPTIONS set) every check runs, but the
# time and RSS bounds are reported rather than asserted: ASan's allocator
# keeps freed memory in quarantine and its checks slow every request.
sanitized=""
[[ -n ${ASAN_OPTIONS:-} ]] && sanitized=yes
# Bounds. A latency bound in a test fails by chance on a loaded machine
# (a p99 of 157 ms was seen while two compilers ran beside it), so each
# bound here tells the failure it guards against from noise by a wide
# margin: a scrape that waited behind a dripping peer waits for its next
# byte (1 s) or the 10 s head deadline, hence 500 ms; a cached credential
# that still paid for bcrypt takes as long as the first, uncached scrape.
# The p50/p99 are printed for the record; the 100 ms goal on a quiet
# machine is read off them, not asserted.
# within NAME VALUE BOUND: fails unless VALUE < BOUND (see above).
within() {
  if awk -v v="$2" -v b="$3" 'BEGIN {exit !(v < b)}'; then return 0; fi
  [[ -n $sanitized ]] || fail "$1: $2, expected below $3"
  echo "note: $1: $2 (bound $3 not asserted under sanitizers)"
}
helpers=()
on_exit() {
  for h in "${helpers[@]}"; do kill "$h" 2>/dev/null || true; done
}

cat >"$work/dw.toml" <<TOML
[state]
directory = "$work/state"
[discovery]
interval = "1s"
TOML

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$pid/status"; }

# N honest scrapes 50 ms apart; every one must be a 200. Prints the sorted
# times in ms to $work/times and the p50/p99 in $p50/$p99.
honest_scrapes() {
  local n=$1
  shift
  : >"$work/times"
  for _ in $(seq "$n"); do
    local out
    out=$(curl -sS -o /dev/null --max-time 10 -w '%{http_code} %{time_total}' "$@" "$url") \
      || fail "an honest scrape failed: $out"
    [[ ${out%% *} == 200 ]] || fail "an honest scrape got ${out%% *}"
    awk '{printf "%.1f\n", $2 * 1000}' <<<"$out" >>"$work/times"
    sleep 0.05
  done
  sort -n "$work/times" -o "$work/times"
  p50=$(awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}' "$work/times")
  p99=$(awk '{a[NR]=$1} END {i=int(NR*0.99+0.999); print a[i]}' "$work/times")
}

# --- certificates for the TLS runs -------------------------------------------
cd "$work"
ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
openssl req -x509 "${ec[@]}" -keyout server.key -out server.crt -days 2 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1 2>/dev/null
chmod 0600 server.key
printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n' >"$work/tls.yml"

# --- 1. idle and dripping peers ----------------------------------------------
starve_run() {
  local name=$1
  shift
  local scheme_args=()
  [[ $name == tls ]] && scheme_args=(--cacert server.crt)
  start_daemon "$work/$name.log" --config.file="$work/dw.toml" "$@"
  local tls_flag=""
  [[ $name == tls ]] && tls_flag=--tls
  python3 "$peers" hold "$port" 1000 64 $tls_flag >"$work/hold.out" 2>"$work/hold.err" &
  local holder=$!
  helpers+=("$holder")
  for _ in $(seq 100); do
    grep -q ready "$work/hold.out" 2>/dev/null && break
    sleep 0.1
  done
  grep -q ready "$work/hold.out" || fail "$name: the peers never connected: $(cat "$work/hold.err")"
  local open
  open=$(ls "/proc/$pid/fd" | wc -l)
  # 100 scrapes over about 12 s: past the 10 s head deadline, so idle and
  # dripping peers are also closed and reconnect while scrapes go on.
  honest_scrapes 100 "${scheme_args[@]}"
  kill "$holder"
  wait "$holder" 2>/dev/null || true
  within "$name: honest scrape p99 in ms with 1000 idle + 64 dripping peers (p50 ${p50})" "$p99" 500
  pass "$name: 100 honest scrapes with 1000 idle + 64 dripping peers ($open descriptors open): all 200, p50 ${p50} ms, p99 ${p99} ms"
  stop_daemon
}
starve_run plain
starve_run tls --web.config.file="$work/tls.yml"

# --- 2. header bomb -----------------------------------------------------------
printf 'basic_auth_users:\n  alice: %s\n' \
  "$(python3 -W ignore -c 'import crypt; print(crypt.crypt("wonderland", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=4096)))')" \
  >"$work/auth.yml"
grep -q '^  alice: \$2b\$12\$' "$work/auth.yml" || fail "no cost-12 hash: $(cat "$work/auth.yml")"
for setup in plain auth; do
  if [[ $setup == auth ]]; then
    start_daemon "$work/bomb-$setup.log" --config.file="$work/dw.toml" --web.config.file="$work/auth.yml"
  else
    start_daemon "$work/bomb-$setup.log" --config.file="$work/dw.toml"
  fi
  curl -fsS -o /dev/null -u alice:wonderland "$url" || fail "$setup: first scrape"
  before=$(rss_kib)
  python3 "$peers" bomb "$port" 4 2000000 >"$work/bomb.out"
  after=$(rss_kib)
  [[ $(grep -c '^HTTP/1.1 431 ' "$work/bomb.out") -eq 4 ]] \
    || fail "$setup: header bomb answers: $(cat "$work/bomb.out")"
  growth=$((after - before))
  within "$setup: RSS growth in KiB under the header bomb (from ${before} to ${after})" "$growth" 5120
  kill -0 "$pid" || fail "$setup: the daemon died under the header bomb"
  pass "$setup: 4 header bombs got $(head -1 "$work/bomb.out"); RSS ${before} -> ${after} KiB (+${growth} KiB)"
  stop_daemon
done

# --- 3. wrong-password flood at cost 12 --------------------------------------
start_daemon "$work/flood.log" --config.file="$work/dw.toml" --web.config.file="$work/auth.yml"
first=$(curl -fsS -o /dev/null -w '%{time_total}' -u alice:wonderland "$url") \
  || fail "the first correct scrape failed"
python3 "$peers" flood "$port" 32 alice:wrong >"$work/flood.out" 2>&1 &
helpers+=($!)
flooder=$!
sleep 2
honest_scrapes 40 -u alice:wonderland
wrong=$(curl -s -o /dev/null -w '%{http_code}' -u alice:wrong "$url" || true)
kill "$flooder"
max=$(tail -1 "$work/times")
first_ms=$(awk -v s="$first" 'BEGIN {printf "%.1f", s * 1000}')
within "slowest cached correct scrape in ms under the flood (p50 ${p50}), against the first, uncached one" "$max" "$first_ms"
[[ $wrong == 401 || $wrong == 503 ]] || fail "a wrong password during the flood got $wrong"
pass "32 wrong-password loops at cost 12: 40 cached correct scrapes, p50 ${p50} ms, max ${max} ms (the first, uncached: ${first} s; a wrong one: $wrong)"
stop_daemon

# --- 4. pipelining, content coding, the head deadline ------------------------
start_daemon "$work/pipe.log" --config.file="$work/dw.toml"
took=$(python3 "$peers" deadline "$port")
awk -v t="$took" 'BEGIN {exit !(t >= 9 && t < 14)}' \
  || fail "a request head dripping a byte every 0.5 s was closed after ${took} s (expected about 10 s)"
pass "a request head dripping a byte every 0.5 s is closed after ${took} s: the 10 s deadline covers the whole head"
python3 "$peers" pipeline "$port" >"$work/pipe.out" || fail "pipelining: $(cat "$work/pipe.out")"
mapfile -t answers <"$work/pipe.out"
[[ ${#answers[@]} -eq 3 ]] || fail "pipelining: ${#answers[@]} answers: ${answers[*]}"
[[ ${answers[0]} == "/-/healthy 200 drivewatch is healthy." ]] || fail "pipelining 1st: ${answers[0]}"
[[ ${answers[1]} == "/metrics 200 # HELP "* ]] || fail "pipelining 2nd: ${answers[1]}"
[[ ${answers[2]} == "/ 200 <!DOCTYPE html>" ]] || fail "pipelining 3rd: ${answers[2]}"
pass "3 pipelined GETs answered in order: ${answers[*]}"

curl -sS -D "$work/h0" -o /dev/null -H 'Accept-Encoding: gzip;q=0' "$url"
! grep -qi '^Content-Encoding:' "$work/h0" || fail "gzip;q=0 got $(grep -i '^Content-Encoding' "$work/h0")"
curl -sS -D "$work/h1" -o "$work/body.gz" -H 'Accept-Encoding: gzip' "$url"
grep -qi '^Content-Encoding: gzip' "$work/h1" || fail "gzip was not used for Accept-Encoding: gzip"
gzip -dc "$work/body.gz" | grep -q '^drivewatch_build_info{' || fail "the gzip body does not decode"
curl -sS -D "$work/h2" -o /dev/null -H 'Accept-Encoding: *;q=0.5, gzip;q=0' "$url"
! grep -qi '^Content-Encoding:' "$work/h2" || fail "an explicit gzip;q=0 lost to *"
pass "Accept-Encoding: gzip gets gzip; gzip;q=0 (alone or after *) gets identity"

# --- 5. out of file descriptors on SIGHUP -------------------------------------
# Connections of the tests above may still be closing: wait until the
# daemon's descriptor count holds still for a second, then leave it no room.
# A descriptor takes the lowest free number, so the soft limit is set to the
# lowest number not in use: every number below it is taken. A connection
# that closes in between frees one below it, and then the reload does find
# a descriptor; that attempt did not test anything, so it is made again
# (at most 5 times).
settle_descriptors() {
  local open now
  open=$(ls "/proc/$pid/fd" | wc -l)
  for _ in $(seq 30); do
    sleep 1
    now=$(ls "/proc/$pid/fd" | wc -l)
    ((now == open)) && break
    open=$now
  done
}
hard=$(prlimit --pid "$pid" --nofile --noheadings --output HARD)
for attempt in 1 2 3 4 5; do
  settle_descriptors
  lowest=0
  while [[ -e /proc/$pid/fd/$lowest ]]; do lowest=$((lowest + 1)); done
  reloads=$(grep -c 'SIGHUP: reloaded' "$work/pipe.log" || true)
  # The soft limit only: raising a hard limit again needs CAP_SYS_RESOURCE.
  prlimit --pid "$pid" --nofile="$lowest":"$hard" || fail "prlimit"
  kill -HUP "$pid"
  for _ in $(seq 50); do
    grep -q 'run out of file descriptors' "$work/pipe.log" && break 2
    (($(grep -c 'SIGHUP: reloaded' "$work/pipe.log" || true) > reloads)) && break
    sleep 0.1
  done
  echo "attempt $attempt: a descriptor below $lowest was freed before the reload; again"
  prlimit --pid "$pid" --nofile="$hard":"$hard"
done
grep -q "SIGHUP: cannot open $work/dw.toml: drivewatch has run out of file descriptors" "$work/pipe.log" \
  || fail "SIGHUP without descriptors: $(grep SIGHUP "$work/pipe.log")"
! grep -q 'is invalid' "$work/pipe.log" || fail "a valid config was called invalid: $(grep 'is invalid' "$work/pipe.log")"
prlimit --pid "$pid" --nofile="$hard":"$hard"
reloads=$(grep -c 'SIGHUP: reloaded' "$work/pipe.log" || true)
kill -HUP "$pid"
for _ in $(seq 50); do
  (($(grep -c 'SIGHUP: reloaded' "$work/pipe.log" || true) > reloads)) && break
  sleep 0.1
done
(($(grep -c 'SIGHUP: reloaded' "$work/pipe.log" || true) > reloads)) \
  || fail "no reload once descriptors were back"
curl -fsS -o /dev/null "$url" || fail "no scrape once descriptors were back"
pass "SIGHUP out of descriptors: $(grep -o 'SIGHUP: cannot open.*' "$work/pipe.log" | head -1 | sed "s|$work/||")"
stop_daemon

# --- 6. stalled TLS handshakes -------------------------------------------------
# Each round: 1,000 peers send BYTES of a real ClientHello and go silent.
# RSS is read once the daemon has read every byte they sent (the peers
# check its ends in /proc/net/tcp), and again once it holds no more
# descriptors than before them, so no reading depends on a sleep.
start_daemon "$work/stall.log" --config.file="$work/dw.toml" --web.config.file="$work/tls.yml"
curl -fsS --cacert server.crt -o /dev/null "$url" || fail "stall: the first TLS scrape failed"
descriptors() { ls "/proc/$pid/fd" | wc -l; }
idle_descriptors=$(descriptors)
baseline=$(rss_kib)
# stall_round NAME BYTES CLOSER: CLOSER is "daemon" (the head deadline
# closes them) or "peers" (they hang up once measured). Sets $during and
# $after, RSS in KiB.
stall_round() {
  local name=$1 bytes=$2 closer=$3
  python3 "$peers" stall "$port" 1000 "$bytes" >"$work/stall.out" 2>"$work/stall.err" &
  local staller=$!
  helpers+=("$staller")
  for _ in $(seq 600); do
    grep -q '^ready' "$work/stall.out" && break
    kill -0 "$staller" 2>/dev/null || break
    sleep 0.1
  done
  grep -q '^ready' "$work/stall.out" \
    || fail "$name: the stalling peers never got ready: $(cat "$work/stall.out" "$work/stall.err")"
  during=$(rss_kib)
  honest_scrapes 10 --cacert server.crt
  kill -0 "$staller" 2>/dev/null || fail "$name: the peers were closed before the scrapes ended"
  if [[ $closer == daemon ]]; then
    for _ in $(seq 300); do
      grep -q '^closed' "$work/stall.out" && break
      sleep 0.1
    done
    local took
    took=$(awk '/^closed after/ {print $3}' "$work/stall.out")
    [[ -n $took ]] || fail "$name: the daemon had not closed the stalled peers 30 s after they were ready"
    awk -v t="$took" 'BEGIN {exit !(t >= 9)}' \
      || fail "$name: stalled handshakes closed after ${took} s, before the 10 s head deadline"
    within "$name: seconds until the daemon closed 1000 stalled handshakes" "$took" 15
  else
    kill "$staller"
  fi
  wait "$staller" 2>/dev/null || true
  local now
  for _ in $(seq 100); do
    now=$(descriptors)
    ((now <= idle_descriptors)) && break
    sleep 0.1
  done
  ((now <= idle_descriptors)) \
    || fail "$name: the daemon still holds $now descriptors 10 s after the peers went (before them: $idle_descriptors)"
  after=$(rss_kib)
  within "$name: RSS growth in KiB with the peers open (from ${baseline} to ${during})" \
    $((during - baseline)) 20480
  within "$name: honest TLS scrape p99 in ms beside the peers (p50 ${p50})" "$p99" 500
}
stall_summary() {
  echo "RSS ${baseline} KiB before, ${during} KiB with them open (+$((during - baseline)) KiB), ${after} KiB once the $1 closed them (+$((after - baseline)) KiB); honest TLS scrapes meanwhile p50 ${p50} ms, p99 ${p99} ms"
}
for round in 1 2; do
  closer=daemon
  ((round == 2)) && closer=peers
  name="1000 handshakes stalled after 60 bytes, round $round"
  stall_round "$name" 60 "$closer"
  within "$name: RSS in KiB above the ${baseline} before, once the $closer closed them (${after})" \
    $((after - baseline)) 5120
  pass "$name: $(stall_summary "$closer")"
done
# A whole ClientHello makes the TLS state; max_tls_handshakes bounds it.
name="1000 handshakes stalled after a whole ClientHello"
stall_round "$name" all peers
pass "$name: $(stall_summary peers)"
stop_daemon
echo "http hardening test: all checks passed"
