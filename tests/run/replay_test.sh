#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The replay phase through the real binary, on traces made by
# tests/tools/make_trace.py: check-config reads each replay's trace (a
# writing trace on a device without destroy_data, and a damaged trace, are
# refused with their lines; a trace of reads is not), and `phase run`
# replays one with its recorded timing, its progress on stderr and its
# result on stdout and in the history (~5 s).
#   usage: replay_test.sh DRIVEWATCH_BINARY SOURCE_DIR
set -euo pipefail
bin=$(realpath "$1")
src=$(realpath "$2")
source "$(dirname "$0")/lib.sh"
python=python3
[[ -x /usr/bin/python3 ]] && python=/usr/bin/python3
json() { "$python" -c "import json,sys; r=json.load(sys.stdin); print($1)"; }
trace() { "$python" "$src/tests/tools/make_trace.py" --capacity $((16 << 20)) "$@"; }

mkdir -p "$work/data"
trace --format iolog3 --out "$work/writes.log" --ios 150 --mix 60,40,0 --think-us 10000 \
  --max-size 131072
trace --format blkparse --out "$work/reads.txt" --ios 50 --mix 100,0,0
config() {  # TRACE TARGET
  cat <<TOML
[state]
directory = "$work/state"
[probes.read_latency]
enabled = false
[[aging.targets]]
name = "dev"
block_device = "/dev/dw-replay-test-absent"
serial = "S1"
[[aging.targets]]
name = "dir"
directory = "$work/data"
file_size = "16MiB"
free_space_reserve = 0.01
[[aging.phases]]
name = "r"
kind = "replay"
target = "$2"
trace = "$1"
TOML
}

# --- check-config reads the trace --------------------------------------------
config "$work/writes.log" dev >"$work/bad.toml"
set +e
"$bin" check-config "$work/bad.toml" >/dev/null 2>"$work/bad.err"
rc=$?
set -e
((rc == 2)) || fail "check-config of a writing trace without destroy_data exited $rc"
grep -qF "bad.toml:17:10: aging.phases.target: phase kind \"replay\" writes target \"dev\" (trace $work/writes.log writes or trims from line " "$work/bad.err" ||
  fail "the refusal does not name the trace: $(cat "$work/bad.err")"
config "$work/reads.txt" dev >"$work/reads.toml"
"$bin" check-config "$work/reads.toml" >/dev/null 2>"$work/reads.err" ||
  fail "a trace of reads needs no destroy_data: $(cat "$work/reads.err")"
sed '10i not an event' "$work/reads.txt" >"$work/damaged.txt"
config "$work/damaged.txt" dir >"$work/damaged.toml"
set +e
"$bin" check-config "$work/damaged.toml" >/dev/null 2>"$work/damaged.err"
rc=$?
set -e
((rc == 2)) && grep -qF "damaged.toml:18:9: aging.phases.trace: $work/damaged.txt:10: \"not an event\" is not a blkparse event" "$work/damaged.err" ||
  fail "a damaged trace: exit $rc: $(cat "$work/damaged.err")"
pass "check-config: a writing trace without destroy_data and a damaged trace refused, a trace of reads not"

# --- phase run: recorded timing, progress, the record -------------------------
config "$work/writes.log" dir >"$work/run.toml"
"$bin" phase run r --config.file="$work/run.toml" >"$work/run.json" 2>"$work/run.err" ||
  fail "phase run exited $?: $(cat "$work/run.err")"
[[ $(json 'r["outcome"]' <"$work/run.json") == completed ]] || fail "$(cat "$work/run.json")"
[[ $(json 'r["results"]["replayed_ios"]' <"$work/run.json") == 150 ]] || fail "not every I/O replayed"
[[ $(json 'int(r["results"]["replay_duration_seconds"] >= r["results"]["recorded_span_seconds"] > 1)' <"$work/run.json") == 1 ]] ||
  fail "recorded timing finished before the trace's span: $(cat "$work/run.json")"
grep -qE '^phase r: [0-9]+\.[0-9]% replay ' "$work/run.err" ||
  fail "no progress line: $(head -3 "$work/run.err")"
"$bin" history --config.file="$work/run.toml" --format=json | grep -q '"kind":"replay"' ||
  fail "the run is not in the history"
pass "phase run: the trace replayed with its timing, progress on stderr, the record on stdout and in the history"
