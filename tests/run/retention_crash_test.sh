#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Retention studies survive SIGKILL: kill `drivewatch phase run` at fixed
# moments while it writes a study (and reads its baseline), then while it
# verifies it; after each kill the study file must parse and be in a
# consistent state, the next run must resume (write) or start over
# (verify), and the final results must be right: every block intact, one
# baseline, one verify per completed run.
#   usage: retention_crash_test.sh DRIVEWATCH_BINARY
set -euo pipefail
bin=$(realpath "$1")
source "$(dirname "$0")/lib.sh"

mkdir -p "$work/data"
cat >"$work/dw.toml" <<TOML
[state]
directory = "$work/state"
study_register = "$work/register"
[[aging.targets]]
name = "scratch"
directory = "$work/data"
file_size = "192MiB"
free_space_reserve = 0.01
[[aging.phases]]
name = "write"
kind = "retention-write"
target = "scratch"
study = "crash"
block_size = "4KiB"
queue_depth = 2
[[aging.phases]]
name = "verify"
kind = "retention-verify"
target = "scratch"
study = "crash"
block_size = "4KiB"
queue_depth = 2
TOML
study=$work/state/retention/crash.json

check_study() {  # the study file parses and its state is one we know
  python3 - "$study" <<'PY' || fail "study file inconsistent after a kill"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["state"] in ("writing", "baseline", "active"), s["state"]
w = s["written"]
assert w["next_offset"] % (256 << 20) == 0 or w["next_offset"] == s["region"]["length"], w
if s["state"] != "writing":
    assert w["next_offset"] == s["region"]["length"] and "end" in w
if s["state"] == "active":
    assert s["baseline"]["bad"] == {"unreadable": 0, "wrong_content": 0, "misplaced": 0, "stale": 0}
PY
}

kill_after() {  # PHASE SECONDS
  "$bin" phase run "$1" --config.file="$work/dw.toml" >/dev/null 2>&1 &
  pid=$!
  sleep "$2"
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=""
}

# Kills at fixed times spread over the write and its baseline (the same
# points on every run, so a failure is the same failure when repeated):
# each resumed run goes further, so later kills land in later parts.
for delay in 0.05 0.6 1.2 1.8 2.5; do
  kill_after write "$delay"
  [[ -f $study ]] && check_study
done
state=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["state"])' "$study" 2>/dev/null || echo none)
if [[ $state == active ]]; then
  # A kill came only after the write and its baseline had finished (a quiet,
  # fast machine): a study is written once, so a further write is refused
  # and says why, and the study stays as it was.
  before=$(sha256sum "$study")
  if "$bin" phase run write --config.file="$work/dw.toml" >"$work/write.json" 2>"$work/write.err"; then
    fail "a write of the already active study was not refused"
  fi
  grep -q 'already exists' "$work/write.err" || fail "refusal does not say why: $(tail -3 "$work/write.err")"
  [[ $(sha256sum "$study") == "$before" ]] || fail "the refused write changed the study file"
  echo '{"results": {"resumed_at_bytes": "none: it had completed before a kill"}}' >"$work/write.json"
else
  "$bin" phase run write --config.file="$work/dw.toml" >"$work/write.json" 2>"$work/write.err" ||
    fail "write after kills: $(tail -3 "$work/write.err")"
fi
check_study
python3 - "$study" "$work/write.json" <<'PY' || fail "final write"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["state"] == "active", s["state"]
assert s["baseline"]["ok"] == s["region"]["length"] // 4096, s["baseline"]["ok"]
print("ok: write killed 5 times, resumed (%s), baseline clean: %d blocks" % (
    json.load(open(sys.argv[2]))["results"].get("resumed_at_bytes", "at 0"), s["baseline"]["ok"]))
PY

for delay in 0.05 0.5 1.0 1.5; do
  kill_after verify "$delay"
  check_study
done
"$bin" phase run verify --config.file="$work/dw.toml" >/dev/null 2>"$work/verify.err" ||
  fail "verify after kills: $(tail -3 "$work/verify.err")"
python3 - "$study" <<'PY' || fail "final verify"
import json, sys
s = json.load(open(sys.argv[1]))
v = s["verifies"]
# A killed verify leaves nothing; each completed one is whole.
assert len(v) >= 1, len(v)
for x in v:
    assert x["ok"] == s["region"]["length"] // 4096 and x["checked"] == x["blocks"], x
    assert sum(x["bad"].values()) == 0, x["bad"]
print("ok: verify killed 4 times, restarted; %d complete verifies, every block intact" % len(v))
PY
"$bin" history --config.file="$work/dw.toml" --format=json >"$work/history.jsonl" 2>"$work/history.err"
[[ ! -s $work/history.err ]] || fail "history: $(cat "$work/history.err")"
echo "ok: history intact ($(wc -l <"$work/history.jsonl") records)"

# The active study holds its target's file: a fill there (in a config that
# no longer lists the study's phases) is refused, naming the study, until
# `drivewatch retention end`; the ended study is verified no more.
cat >"$work/fill.toml" <<TOML
[state]
directory = "$work/state"
study_register = "$work/register"
[[aging.targets]]
name = "scratch"
directory = "$work/data"
file_size = "192MiB"
free_space_reserve = 0.01
[[aging.phases]]
name = "fill"
kind = "fill"
target = "scratch"
TOML
before=$(sha256sum "$work/data/drivewatch-aging-scratch.dat")
rc=0
"$bin" phase run fill --config.file="$work/fill.toml" >"$work/fill.json" 2>"$work/fill.err" || rc=$?
((rc == 2)) || fail "a fill on the study's file exited $rc, expected 2 (refused): $(tail -2 "$work/fill.err")"
grep -q 'overlap the region \[0B, 192MiB) held by retention study \\"crash\\" (active' "$work/fill.json" ||
  fail "the refusal does not name the study: $(cat "$work/fill.json")"
[[ $(sha256sum "$work/data/drivewatch-aging-scratch.dat") == "$before" ]] || fail "the refused fill wrote"
"$bin" retention end crash --config.file="$work/dw.toml" >"$work/end.out" 2>&1 ||
  fail "retention end exited $?: $(cat "$work/end.out")"
grep -qx 'retention study "crash" ended: its region may be written again' "$work/end.out" ||
  fail "retention end said: $(cat "$work/end.out")"
python3 - "$study" <<'PY' || fail "ended study"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["state"] == "ended" and s["ended_at"] > 0 and s["verifies"], s["state"]
PY
rc=0
"$bin" phase run verify --config.file="$work/dw.toml" >"$work/verify2.json" 2>&1 || rc=$?
((rc != 0)) && grep -q 'retention study \\"crash\\" is ended' "$work/verify2.json" ||
  fail "a verify of an ended study: exit $rc: $(cat "$work/verify2.json")"
rc=0
"$bin" retention end nosuch --config.file="$work/dw.toml" >"$work/end2.out" 2>&1 || rc=$?
((rc == 2)) && grep -q 'no retention study "nosuch"' "$work/end2.out" ||
  fail "retention end of a missing study: exit $rc: $(cat "$work/end2.out")"
"$bin" phase run fill --config.file="$work/fill.toml" >/dev/null 2>"$work/fill2.err" ||
  fail "fill after the study ended: $(tail -2 "$work/fill2.err")"
echo "ok: the study's file refused to a fill until retention end; then written"
