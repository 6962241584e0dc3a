#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fault: SIGKILL at 20 random moments while `drivewatch phase run` writes
# (fill, with its checkpoints and state updates) and while it idles/writes
# through the reclaim phase. After every kill: `drivewatch history` parses
# with no error, every record that existed before the kill is still there,
# byte for byte (nothing earlier is lost), the killed run is recorded as
# interrupted (or completed when the kill came after it ended), and the
# state directory holds no torn temp file. A killed run that changed its
# target file is always on record. Extends tests/run/phase_test.sh
# (8 kills, one check at the end) to 20 kills checked one by one.
#   usage: fault_sigkill_test.sh DRIVEWATCH_BINARY [KILLS]
set -euo pipefail
bin=$(realpath "$1")
kills=${2:-20}
source "$(dirname "$0")/lib.sh"

mkdir -p "$work/data" "$work/big"
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
name = "big"
directory = "$work/big"
file_size = "1GiB"
free_space_reserve = 0.01
[[aging.phases]]
name = "fill"
kind = "fill"
target = "scratch"
[[aging.phases]]
name = "bigfill"
kind = "fill"
target = "big"
[[aging.phases]]
name = "slow"
kind = "reclaim"
target = "scratch"
reclaim_idle = ["1s", "1s"]
reclaim_write = "1s"
slc_sustain = "1s"
TOML

history() {
  "$bin" history --config.file="$work/dw.toml" --format=json >"$1" 2>"$1.err" ||
    fail "history exited $?: $(cat "$1.err")"
  [[ ! -s $1.err ]] || fail "history is not clean: $(cat "$1.err")"
}

"$bin" phase run fill --config.file="$work/dw.toml" >/dev/null 2>&1 || fail "first fill"
history "$work/h0.jsonl"
prev="$work/h0.jsonl"
for ((i = 1; i <= kills; i++)); do
  # Alternate a writing phase long enough to be hit mid-write (bigfill:
  # 1 GiB of data with checkpoints, about 0.6 s on a fast disk) and the
  # reclaim phase (idles and writes of 1 s each, state updates between
  # steps). Each kill lands at a random moment after the run took its
  # checkpoint (it takes one before it writes anything), not at a random
  # moment after its start: how soon a loaded machine starts a process is
  # no part of what is tested. A slow kill lands within 2 s of the
  # checkpoint, before the idles and the write (3 s of waiting at least)
  # are over: always mid-run.
  phase=bigfill range="0, 0.3"
  ((i % 2 == 0)) && phase=slow range="0, 2.0"
  data_file=$work/big/drivewatch-aging-big.dat
  [[ $phase == slow ]] && data_file=$work/data/drivewatch-aging-scratch.dat
  checkpoint=$work/state/phases/$phase.checkpoint
  touched_before=$(stat -c '%y %s' "$data_file" 2>/dev/null || echo none)
  checkpoint_before=$(stat -c "%i %y" "$checkpoint" 2>/dev/null || echo none)
  launched=$(date +%s.%N)
  "$bin" phase run "$phase" --config.file="$work/dw.toml" >/dev/null 2>&1 &
  pid=$!
  # Until this run's checkpoint is there (written atomically: a new inode,
  # not one a killed run left) or the run has ended (a zombie counts).
  while [[ $(stat -c "%i %y" "$checkpoint" 2>/dev/null || echo none) == "$checkpoint_before" ]] &&
    [[ $(ps -o stat= -p "$pid" 2>/dev/null) != Z* ]] && kill -0 "$pid" 2>/dev/null; do
    sleep 0.005
  done
  sleep "$(python3 -c "import random; print(round(random.uniform($range), 3))")"
  kill -KILL "$pid" 2>/dev/null || true
  rc=0
  wait "$pid" 2>/dev/null || rc=$?
  pid=""
  # 137: killed; 0: it ended first (then it is on record as completed).
  ((rc == 137 || rc == 0)) || fail "kill $i: $phase exited $rc before the kill"
  [[ $phase == bigfill ]] || ((rc == 137)) || fail "kill $i: the slow phase ended within 2 s of its checkpoint"
  # The next command records what the killed one left behind; history must
  # parse and keep every earlier record.
  history "$work/h$i.jsonl"
  python3 - "$prev" "$work/h$i.jsonl" <<'PY' || fail "kill $i: history lost or changed a record"
import json, sys
before = open(sys.argv[1]).read().splitlines()
after = open(sys.argv[2]).read().splitlines()
for l in after: json.loads(l)
assert after[:len(before)] == before, (len(before), len(after))
PY
  # A run that changed its file (created, allocated, wrote or trimmed it)
  # is on record: its own record, or the checkpoint it takes before it
  # writes anything, which the next run records as interrupted.
  if [[ $(stat -c '%y %s' "$data_file" 2>/dev/null || echo none) != "$touched_before" ]]; then
    [[ -e $work/state/phases/$phase.checkpoint ]] ||
      python3 -c 'import json, sys; r = [json.loads(l) for l in open(sys.argv[1])]; sys.exit(not (r and r[-1]["phase"] == sys.argv[2] and r[-1]["start"] >= float(sys.argv[3]) - 1))' \
        "$work/h$i.jsonl" "$phase" "$launched" ||
      fail "kill $i: $phase changed $data_file but left neither its record nor its checkpoint"
  fi
  # A temp file may exist only until the next writer replaces it; report it.
  for tmp in "$work"/state/*.tmp* "$work"/state/*/*.tmp*; do
    [[ -e $tmp ]] && echo "note: kill $i left a temp file: ${tmp#"$work"/}"
  done
  prev="$work/h$i.jsonl"
done
# One more run settles the last kill's record.
"$bin" phase run fill --config.file="$work/dw.toml" >/dev/null 2>"$work/final.err" || fail "fill after $kills kills: $(cat "$work/final.err")"
history "$work/final.jsonl"
python3 - "$work/final.jsonl" "$kills" <<'PY' || fail "final history"
import collections, json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
kills = int(sys.argv[2])
# A run is identified by its phase and start time: recorded twice means a
# kill landed between a history append and the checkpoint's removal.
runs = collections.Counter((r.get("phase"), r.get("start")) for r in records)
twice = [(k, n) for k, n in runs.items() if n > 1]
for (phase, start), n in twice:
    print("run %s started %s recorded %d times: %s" % (phase, start, n,
          [r["outcome"] for r in records if (r.get("phase"), r.get("start")) == (phase, start)]))
assert not twice, "%d run(s) recorded more than once" % len(twice)
# first fill + one record per killed run (each was killed after its
# checkpoint, or ended on its own) + the final fill
assert len(records) == kills + 2, (len(records), [r["outcome"] for r in records])
killed = records[1:-1]
assert all(r["outcome"] in ("interrupted", "completed") for r in killed), [r["outcome"] for r in killed]
# every slow run was killed mid-run (checked above, run by run)
slow = [r for r in killed if r["phase"] == "slow"]
assert len(slow) == kills // 2 and all(r["outcome"] == "interrupted" for r in slow), [r["outcome"] for r in slow]
assert records[-1]["outcome"] == "completed"
print("ok: %d SIGKILLs: %s" % (kills, " ".join(r["outcome"][0] for r in killed)))
PY
ls "$work/state/phases/"*.checkpoint >/dev/null 2>&1 && fail "a checkpoint was left behind"
pass "SIGKILL x$kills during writing phases: history parses after each, nothing earlier lost"
