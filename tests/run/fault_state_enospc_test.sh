#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fault: the state directory's filesystem fills up. The state directory is
# a tiny ext4 on a loop device (root, as in CI); the phase's data target is
# elsewhere. Checks, through the real binary (`drivewatch phase run`):
#   E1 with the state filesystem full, the phase fails with a clear error
#      naming "No space left on device" (exit status non-zero, no crash),
#      and the data target is not written (the phase does not start), or
#      it is recorded as aborted once space is back;
#   E2 the history written before the fs filled parses and is unchanged,
#      byte for byte, after the failure and after space comes back;
#   E3 once space is freed, the next run completes and is appended.
# (tests/integration/history_enospc_test.cc covers HistoryFile appends on a
# full fs record by record.)
#   usage: fault_state_enospc_test.sh DRIVEWATCH_BINARY
set -euo pipefail
bin=$(realpath "$1")
[[ $(id -u) == 0 ]] || { echo "skip: needs root for a loop mount"; exit 77; }
command -v mkfs.ext4 >/dev/null || { echo "skip: no mkfs.ext4"; exit 77; }
mounted=0
on_exit() { if ((mounted)); then umount "$work/state"; fi; }
source "$(dirname "$0")/lib.sh"

mkdir -p "$work/data" "$work/state"
truncate -s 8M "$work/state.img"
mkfs.ext4 -q -F -m 0 "$work/state.img"
mount -o loop "$work/state.img" "$work/state" || { echo "skip: cannot mount a loop device"; exit 77; }
mounted=1
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
[[aging.phases]]
name = "fill"
kind = "fill"
target = "scratch"
TOML

"$bin" phase run fill --config.file="$work/dw.toml" >"$work/first.json" 2>"$work/first.err" ||
  fail "first fill on a roomy state fs: $(cat "$work/first.err")"
"$bin" phase run fill --config.file="$work/dw.toml" >/dev/null 2>&1 || fail "second fill"
"$bin" history --config.file="$work/dw.toml" --format=json >"$work/h-before.jsonl"
[[ $(wc -l <"$work/h-before.jsonl") == 2 ]] || fail "expected 2 records: $(cat "$work/h-before.jsonl")"
cp -a "$work/state" "$work/state-before"

# Fill the state filesystem to the last block.
dd if=/dev/zero of="$work/state/ballast" bs=64K status=none 2>/dev/null || true
# ...and the last blocks with small files (a 1 KiB-block fs keeps a few).
mkdir -p "$work/state/ballast.d"
for ((i = 0; i < 4096; i++)); do
  head -c 1024 /dev/zero >"$work/state/ballast.d/$i" 2>/dev/null || break
done
sync
avail=$(df --output=avail -B1 "$work/state" | tail -n 1 | tr -d ' ')
echo "state fs free after ballast: $avail bytes"
data_before=$(python3 -c "import os,sys; print(max(os.stat(os.path.join(sys.argv[1], f)).st_mtime_ns for f in os.listdir(sys.argv[1])))" "$work/data")

set +e
"$bin" phase run fill --config.file="$work/dw.toml" >"$work/full.json" 2>"$work/full.err"
rc=$?
set -e
echo "phase run on a full state fs: exit $rc; stderr: $(tr '\n' ' ' <"$work/full.err" | head -c 400)"
((rc != 0)) || fail "E1: phase run succeeded although the state fs is full"
((rc < 128)) || fail "E1: phase run died of a signal ($rc)"
grep -qi "no space left" "$work/full.err" "$work/full.json" ||
  fail "E1: the error does not say 'No space left on device': $(cat "$work/full.err")"
data_after=$(python3 -c "import os,sys; print(max(os.stat(os.path.join(sys.argv[1], f)).st_mtime_ns for f in os.listdir(sys.argv[1])))" "$work/data")
if [[ $data_after != "$data_before" ]]; then
  echo "note: the data file was touched (mtime $data_before -> $data_after); the record must then say aborted"
  started=1
else
  started=0
fi
pass "E1 full state fs: phase run fails (exit $rc) with 'No space left on device'; data target written: $started"

"$bin" history --config.file="$work/dw.toml" --format=json >"$work/h-full.jsonl" 2>"$work/h-full.err" ||
  fail "E2: history on the full fs: $(cat "$work/h-full.err")"
cmp -s <(head -n 2 "$work/h-full.jsonl") "$work/h-before.jsonl" || fail "E2: earlier records changed while full"
pass "E2 history parses on the full fs; the 2 earlier records are unchanged"

rm -rf "$work/state/ballast" "$work/state/ballast.d"
sync
"$bin" phase run fill --config.file="$work/dw.toml" >"$work/after.json" 2>"$work/after.err" ||
  fail "E3: fill after space came back: $(cat "$work/after.err")"
"$bin" history --config.file="$work/dw.toml" --format=json >"$work/h-after.jsonl" 2>"$work/h-after.err"
[[ ! -s $work/h-after.err ]] || fail "E3: history not clean: $(cat "$work/h-after.err")"
cmp -s <(head -n 2 "$work/h-after.jsonl") "$work/h-before.jsonl" || fail "E3: earlier records changed"
python3 - "$work/h-after.jsonl" <<'PY' >"$work/later.txt" || fail "E3 records"
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
later = r[2:]
assert later and later[-1]["outcome"] == "completed", [x["outcome"] for x in r]
assert all(x["outcome"] != "completed" for x in later[:-1]), [x["outcome"] for x in later]
print(" ".join(x["outcome"] for x in later[:-1]))
PY
pass "E3 space back: the next fill completes and is appended; earlier history intact"
# E1b, judged last so that E2/E3 always run: a phase that cannot save its
# checkpoint must not write the drive (DESIGN.md decision 7), or, if it
# did, its run must be accounted for (aborted/interrupted) once space is
# back, never silently missing.
if ((started)) && [[ -z $(cat "$work/later.txt") ]]; then
  fail "E1b: with the state fs full the phase still wrote the data target (checkpoint save failed with only a warning) and its run left no history record"
fi
pass "E1b the phase did not write without a checkpoint, or its run is recorded ($(cat "$work/later.txt"))"
