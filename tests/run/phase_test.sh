#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Heavy phases through the real binary: `drivewatch phase run` (JSON on
# stdout, progress on stderr, exit statuses), SIGTERM and SIGKILL in the
# middle of a phase (recorded as aborted / interrupted, the history never
# corrupt), `drivewatch history` in every format, and the daemon starting
# a scheduled phase and exporting it, scraped with real curl.
#   usage: phase_test.sh DRIVEWATCH_BINARY
set -euo pipefail
bin=$(realpath "$1")
source "$(dirname "$0")/lib.sh"
json() { python3 -c "import json,sys; r=json.load(sys.stdin); print($1)"; }

mkdir -p "$work/data"
cat >"$work/dw.toml" <<TOML
[state]
directory = "$work/state"
[probes.read_latency]
enabled = false
[[aging.targets]]
name = "scratch"
directory = "$work/data"
file_size = "64MiB"
free_space_reserve = 0.01
[[aging.targets]]
name = "gone"
directory = "$work/missing"
[[aging.phases]]
name = "fill"
kind = "fill"
target = "scratch"
[[aging.phases]]
name = "slow"
kind = "reclaim"
target = "scratch"
reclaim_idle = ["1s", "1s"]
reclaim_write = "1s"
slc_sustain = "1s"
[[aging.phases]]
name = "nowhere"
kind = "fill"
target = "gone"
TOML

# --- phase run: result on stdout, a line per second on stderr -------------
"$bin" phase run fill --config.file="$work/dw.toml" >"$work/fill.json" 2>"$work/fill.err" ||
  fail "phase run fill exited $?: $(cat "$work/fill.err")"
[[ $(json 'r["outcome"]' <"$work/fill.json") == completed ]] || fail "fill: $(cat "$work/fill.json")"
[[ $(json 'r["results"]["written_bytes"]' <"$work/fill.json") == 33554432 ]] || fail "fill wrote the wrong amount"
pass "phase run fill: completed, 32 MiB written, JSON on stdout"
set +e
"$bin" phase run slow --config.file="$work/dw.toml" >"$work/slow.json" 2>"$work/slow.err"
rc=$?
set -e
((rc == 0)) || fail "phase run slow exited $rc"
grep -qE '^phase slow: [0-9.]+% idle_1s .* elapsed 00:0[0-9] ETA ' "$work/slow.err" ||
  fail "no progress line per second on a non-terminal: $(head -3 "$work/slow.err")"
pass "a plain progress line per second when stderr is not a terminal"

set +e
"$bin" phase run nowhere --config.file="$work/dw.toml" >"$work/nowhere.json" 2>"$work/nowhere.err"
rc=$?
"$bin" phase run nosuch --config.file="$work/dw.toml" >/dev/null 2>"$work/nosuch.err"
rc2=$?
set -e
((rc == 2)) || fail "refused phase exited $rc, expected 2"
[[ $(json 'r["outcome"]' <"$work/nowhere.json") == refused ]] || fail "nowhere not refused"
grep -q "$work/missing" "$work/nowhere.err" || fail "refusal does not name the directory: $(cat "$work/nowhere.err")"
n=$(grep -c "$work/missing" "$work/nowhere.err")
((n == 1)) || fail "the refusal is printed $n times, not once: $(cat "$work/nowhere.err")"
((rc2 == 2)) && grep -q 'no phase "nosuch" in \[\[aging.phases\]\] (expected one of: fill, slow, nowhere)' "$work/nosuch.err" ||
  fail "unknown phase: exit $rc2: $(cat "$work/nosuch.err")"
pass "refusals exit 2, name what is wrong, and are said once"

# --- help of one subcommand; where an empty history was looked for ----------
"$bin" phase run --help >"$work/help.txt" || fail "phase run --help exited $?"
grep -q '^usage: drivewatch phase run NAME' "$work/help.txt" && grep -q -- '--target=NAME' "$work/help.txt" ||
  fail "phase run --help: $(head -3 "$work/help.txt")"
! grep -qE 'drivewatch (history|report|collect)|--baseline' "$work/help.txt" ||
  fail "phase run --help prints other commands' help: $(cat "$work/help.txt")"
mkdir -p "$work/empty-state"
printf '[state]\ndirectory = "%s"\n' "$work/empty-state" >"$work/empty.toml"
"$bin" history --config.file="$work/empty.toml" >"$work/empty.out" 2>"$work/empty.err" || fail "history of an empty state exited $?"
grep -qF "no runs on record in $work/empty-state/history.log" "$work/empty.err" ||
  fail "an empty history does not say where it looked: $(cat "$work/empty.err")"
pass "phase run --help is that command's help; an empty history says which file it read"

# --- SIGTERM: aborted, recorded ---------------------------------------------
"$bin" phase run slow --config.file="$work/dw.toml" >"$work/term.json" 2>/dev/null &
pid=$!
# Once its checkpoint exists the phase runs (and SIGTERM is handled).
for _ in $(seq 300); do [[ -f $work/state/phases/slow.checkpoint ]] && break; sleep 0.05; done
sleep 0.3
kill -TERM "$pid"
set +e
wait "$pid"
rc=$?
set -e
pid=""
((rc == 1)) || fail "SIGTERM: exit $rc, expected 1: $(cat "$work/term.json")"
[[ $(json 'r["outcome"]' <"$work/term.json") == aborted ]] || fail "SIGTERM: $(cat "$work/term.json")"
pass "SIGTERM during a phase: recorded as aborted, exit 1"

# --- SIGKILL at random moments: interrupted, never corrupt -------------------
kills=8
for ((i = 0; i < kills; i++)); do
  "$bin" phase run slow --config.file="$work/dw.toml" >/dev/null 2>&1 &
  pid=$!
  sleep "$(python3 -c "import random; print(round(random.uniform(0.05, 3.2), 2))")"
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=""
done
# The next run records what the killed ones left behind.
"$bin" phase run fill --config.file="$work/dw.toml" >/dev/null 2>"$work/recover.err" || fail "fill after kills"
"$bin" history --config.file="$work/dw.toml" --format=json >"$work/history.jsonl" 2>"$work/history.err"
[[ ! -s $work/history.err ]] || fail "history after SIGKILLs is not clean: $(cat "$work/history.err")"
python3 - "$work/history.jsonl" "$kills" <<'PY' || fail "history after SIGKILLs"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
slow = [r for r in records if r["phase"] == "slow"]
# 1 completed + 1 aborted + at most one record per kill: interrupted, or
# completed when the kill came after the run ended; none when it came
# before the run started. Never one run twice.
assert 2 < len(slow) <= 2 + int(sys.argv[2]), [r["outcome"] for r in slow]
assert len({r["run"] for r in slow}) == len(slow), [r["run"] for r in slow]
assert all(r["outcome"] in ("interrupted", "completed") for r in slow[2:]), [r["outcome"] for r in slow]
assert any(r["outcome"] == "interrupted" for r in slow), "no kill landed mid-run"
for r in slow:
    if r["outcome"] == "interrupted":
        assert "crash, SIGKILL or power cut" in r["reason"], r["reason"]
print("ok: %s SIGKILLs: %s" % (sys.argv[2], ", ".join(r["outcome"] for r in slow[2:])))
PY
ls "$work/state/phases/"*.checkpoint >/dev/null 2>&1 && fail "a checkpoint was left behind"
pass "SIGKILL mid-phase: each run recorded as interrupted, history intact"

# --- history formats and filters --------------------------------------------
"$bin" history --config.file="$work/dw.toml" --phase=fill >"$work/table.txt"
head -1 "$work/table.txt" | grep -q "PHASE" || fail "table header: $(head -1 "$work/table.txt")"
[[ $(grep -c ' fill ' "$work/table.txt") == 2 ]] || fail "--phase=fill: $(cat "$work/table.txt")"
"$bin" history --config.file="$work/dw.toml" --format=csv >"$work/h.csv"
python3 -c "import csv,sys; rows=list(csv.DictReader(open(sys.argv[1]))); assert rows and 'outcome' in rows[0], rows[:1]" "$work/h.csv" ||
  fail "csv: $(head -2 "$work/h.csv")"
pass "history: table, csv and json, filtered by phase"

# --- the daemon runs a scheduled phase and exports it ------------------------
# Another state directory knows none of the files made above: the daemon
# gets a directory of its own.
mkdir -p "$work/data2"
cat >"$work/daemon.toml" <<TOML
[state]
directory = "$work/state2"
[probes.read_latency]
enabled = false
[[aging.targets]]
name = "scratch"
directory = "$work/data2"
file_size = "64MiB"
free_space_reserve = 0.01
[[aging.phases]]
name = "monthly-fill"
kind = "fill"
target = "scratch"
interval = "30d"
[[aging.phases]]
name = "long"
kind = "reclaim"
target = "scratch"
reclaim_idle = ["1h"]
TOML
start_daemon "$work/daemon.log" --config.file="$work/daemon.toml"
scrape_until 60 'drivewatch_phase_runs_total\{.*outcome="completed".*phase="monthly-fill".*\} 1' || fail "the daemon did not run the due phase: $(tail -5 "$work/daemon.log")"
grep -q 'drivewatch_phase_result_bytes{.*measure="written".*phase="monthly-fill".*} 33554432' "$work/metrics.txt" ||
  fail "no result metric: $(grep phase_result "$work/metrics.txt" | head -3)"
grep -q 'drivewatch_phase_state{.*phase="long".*state="idle".*} 1' "$work/metrics.txt" || fail "manual phase state"
if command -v promtool >/dev/null; then
  promtool check metrics <"$work/metrics.txt" || fail "promtool check metrics"
fi
stop_daemon
pass "the daemon ran the due phase once and exports its results (promtool clean)"
