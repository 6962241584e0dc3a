#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A damaged retention study record through the real binary: a study is
# written on a file target, then its record is damaged as the issue's
# reporter did (version 1 bytes, "block_size": 0, "length": -1 / 0 / 1e30),
# and a byte of a version 2 record is changed. `retention report` and
# `retention list` say DAMAGED and exit non-zero, `phase run verify` refuses,
# and the daemon with the verify scheduled stays up and exports
# drivewatch_retention_study_damaged 1, scraped with real curl (~15 s).
#   usage: retention_damage_test.sh DRIVEWATCH_BINARY
set -euo pipefail
bin=$(realpath "$1")
source "$(dirname "$0")/lib.sh"

mkdir -p "$work/data"
cat >"$work/dw.toml" <<TOML
[state]
directory = "$work/state"
study_register = "$work/register"
[probes.read_latency]
enabled = false
[[aging.targets]]
name = "scratch"
directory = "$work/data"
file_size = "16MiB"
free_space_reserve = 0.01
[[aging.phases]]
name = "write"
kind = "retention-write"
target = "scratch"
study = "s"
block_size = "4KiB"
[[aging.phases]]
name = "verify"
kind = "retention-verify"
target = "scratch"
study = "s"
block_size = "4KiB"
interval = "30d"
TOML
study=$work/state/retention/s.json

"$bin" phase run write --config.file="$work/dw.toml" >"$work/write.json" 2>"$work/write.err" ||
  fail "retention-write failed: $(tail -3 "$work/write.err")"
head -c 16 "$study" | grep -q '"crc32c": "' || fail "the record has no checksum line: $(head -2 "$study")"
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["version"] == 2 and s["state"] == "active", s["state"]' "$study" || fail "the record is not plain JSON, version 2, active"
"$bin" retention report s --config.file="$work/dw.toml" >"$work/ok.txt" || fail "report of a sound study"
# The baseline is intact; its reads are timed on a file of this host, where
# a loaded machine (tests run beside this one) can take one over 100 ms:
# that verdict says so, and names no bad block.
if ! grep -q '^WAITING: baseline intact' "$work/ok.txt"; then
  grep -Eq '^FAIL: ([0-9]+ reads?|a read) over 100 ms \(max [^;]*\)$' "$work/ok.txt" ||
    fail "sound study: $(head -2 "$work/ok.txt")"
  echo "note: sound study: $(grep -m1 '^FAIL' "$work/ok.txt") (a loaded host; no bad block)"
fi
cp "$study" "$work/good.json"
pass "a written study carries its checksum and reports"

# --- a verify that finds a bad block exits 3 -----------------------------------
# A clean verify exits 0; one byte changed in the target's file makes the
# block read back wrong: exit 3 (completed, data damaged), said once.
"$bin" phase run verify --config.file="$work/dw.toml" >"$work/clean.json" 2>"$work/clean.err" ||
  fail "a verify of an intact study exited $?: $(tail -2 "$work/clean.err")"
file=$work/data/drivewatch-aging-scratch.dat
[[ -f $file ]] || fail "no target file $file"
# The byte is flipped, not overwritten with a constant: the pattern is
# random, and one byte in 256 already is any constant.
at=$((1048576 + 100))
byte=$(dd if="$file" bs=1 skip="$at" count=1 status=none | od -An -tu1 | tr -d ' ')
printf "\\x$(printf %02x $((byte ^ 0xff)))" | dd of="$file" bs=1 seek="$at" conv=notrunc status=none
[[ $(dd if="$file" bs=1 skip="$at" count=1 status=none | od -An -tu1 | tr -d ' ') == $((byte ^ 0xff)) ]] ||
  fail "the byte at $at was not changed"
rc=0
"$bin" phase run verify --config.file="$work/dw.toml" >"$work/bad.json" 2>"$work/bad.err" || rc=$?
((rc == 3)) || fail "a verify that found a bad block exited $rc, expected 3: $(tail -2 "$work/bad.err")"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["outcome"] == "completed" and r["results"]["bad_bytes"] == 4096, r["results"]' "$work/bad.json" ||
  fail "the verify's record: $(head -c 400 "$work/bad.json")"
grep -qF "the verify found 4096 bytes that no longer read back as written (exit status 3" "$work/bad.err" ||
  fail "the verify does not say it found damage: $(tail -2 "$work/bad.err")"
pass "a verify that finds a bad block exits 3 and says so; a clean one exits 0"

# --- version 1 bytes with one value changed ----------------------------------
damage_v1() {  # FIELD VALUE: the record as version 1 (no checksum) with region.FIELD = VALUE
  python3 - "$work/good.json" "$study" "$1" "$2" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
del s["crc32c"]
s["version"] = 1
s["region"][sys.argv[3]] = json.loads(sys.argv[4])
json.dump(s, open(sys.argv[2], "w"), indent=2)
PY
}
for damage in "block_size 0 region.block_size is 0 (expected 4096)" \
              "length -1 region.length is -1 (expected" \
              "length 0 region.length is 0 (expected" \
              "length 1e30 region.length is 1e+30 (expected"; do
  read -r field value message <<<"$damage"
  damage_v1 "$field" "$value"
  for format in text json html; do
    rc=0
    "$bin" retention report s --config.file="$work/dw.toml" --format=$format >"$work/r.$format" 2>"$work/r.err" || rc=$?
    ((rc == 1)) || fail "$field=$value: report --format=$format exited $rc, expected 1"
    grep -qF "DAMAGED: $study: damaged retention study record: $message" "$work/r.$format" ||
      fail "$field=$value --format=$format: $(head -3 "$work/r.$format")"
    grep -q PASS "$work/r.$format" && fail "$field=$value --format=$format says PASS"
  done
  rc=0
  "$bin" phase run verify --config.file="$work/dw.toml" >"$work/v.json" 2>"$work/v.err" || rc=$?
  ((rc != 0 && rc < 128)) || fail "$field=$value: phase run verify exited $rc (expected a refusal, not a crash)"
  grep -qF "damaged retention study record: $message" "$work/v.err" "$work/v.json" ||
    fail "$field=$value: the verify does not say why: $(tail -2 "$work/v.err")"
done
pass "block_size 0 and length -1/0/1e30: DAMAGED in every report format, the verify refuses"

# A record sound in itself whose region is larger than the target (16 MiB):
# only the open target can tell, and the verify refuses it as damaged.
python3 - "$work/good.json" "$study" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
del s["crc32c"]
s["version"] = 1
s["region"]["length"] = s["written"]["next_offset"] = 1 << 30
s["baseline"]["blocks"] = s["baseline"]["ok"] = s["baseline"]["checked"] = (1 << 30) // 4096
s["baseline"]["latency_method"]["region_blocks"] = (1 << 30) // 4096
json.dump(s, open(sys.argv[2], "w"), indent=2)
PY
"$bin" retention report s --config.file="$work/dw.toml" >"$work/big.txt" || fail "the big record does not load by itself"
rc=0
"$bin" phase run verify --config.file="$work/dw.toml" >"$work/v.json" 2>"$work/v.err" || rc=$?
((rc != 0 && rc < 128)) || fail "a verify of a region past the target exited $rc"
grep -qF 'damaged retention study record: region [0, +1073741824) ends past target scratch' "$work/v.err" "$work/v.json" ||
  fail "the verify does not say the region is past the target: $(tail -2 "$work/v.err")"
pass "a region past the end of the target is refused as damaged when the verify opens it"

# The write phase does not take a damaged study over either.
damage_v1 block_size 0
before=$(sha256sum "$study")
rc=0
"$bin" phase run write --config.file="$work/dw.toml" >"$work/w.json" 2>"$work/w.err" || rc=$?
((rc != 0 && rc < 128)) || fail "phase run write on a damaged study exited $rc"
grep -qF "damaged retention study record" "$work/w.err" "$work/w.json" ||
  fail "the write does not say why: $(tail -2 "$work/w.err")"
[[ $(sha256sum "$study") == "$before" ]] || fail "the refused write changed the damaged record"
pass "retention-write refuses a damaged study and leaves its record as it is"

# --- a changed byte under a version 2 checksum ---------------------------------
sed 's/"ok": 4096/"ok": 4095/' "$work/good.json" >"$study"
cmp -s "$study" "$work/good.json" && fail "the test did not change the record"
rc=0
"$bin" retention list --config.file="$work/dw.toml" >"$work/list.txt" 2>"$work/list.err" || rc=$?
((rc == 1)) || fail "retention list exited $rc with a damaged study"
grep -Eq '^s +DAMAGED ' "$work/list.txt" || fail "list: $(cat "$work/list.txt")"
grep -q 'checksum [0-9a-f]\{8\} does not match the recorded crc32c' "$work/list.txt" ||
  fail "list does not say why: $(cat "$work/list.txt")"
pass "a changed byte fails the checksum: retention list shows DAMAGED"

# --- the daemon with the verify scheduled -------------------------------------
# A fresh state directory holding only the damaged study, so the verify is
# due at once (the runs above are in the first one's history).
damage_v1 block_size 0
mkdir -p "$work/state2/retention"
cp "$study" "$work/state2/retention/s.json"
study=$work/state2/retention/s.json
sed "s|^directory = \"$work/state\"|directory = \"$work/state2\"|" "$work/dw.toml" >"$work/daemon.toml"
grep -q state2 "$work/daemon.toml" || fail "daemon config"
start_daemon "$work/daemon.log" --config.file="$work/daemon.toml"
scrape_until 30 'drivewatch_phase_runs_total\{.*outcome="failed".*phase="verify".*\} 1' \
  '^drivewatch_retention_study_damaged\{study="s"\} 1$' || fail "no failed verify and damaged study in /metrics: $(grep -E 'retention_study_damaged|phase_runs_total' "$work/metrics.txt" | head -5); $(tail -5 "$work/daemon.log")"
sleep 1
kill -0 "$pid" || fail "the daemon died"
curl -sf "$url" >"$work/metrics.txt" || fail "the daemon stopped answering"
grep -q '^drivewatch_state_directory_writable 1$' "$work/metrics.txt" || fail "state directory gauge"
grep -q '^drivewatch_history_damaged_records 0$' "$work/metrics.txt" || fail "history gauge"
grep -q 'damaged retention study record: region.block_size is 0' "$work/daemon.log" ||
  fail "the daemon did not log the damage: $(tail -5 "$work/daemon.log")"
if command -v promtool >/dev/null; then
  promtool check metrics <"$work/metrics.txt" || fail "promtool check metrics"
fi
stop_daemon
pass "the daemon's scheduled verify meets the damaged record: it stays up, exports damaged 1"
