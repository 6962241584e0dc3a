#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A history with records no reader should take whole, between good ones
# (aging/history/history.h), through the real binary: a record of 200,000 result
# keys (about 3.8 MB, past the 1 MiB bound on a record), one of 12,000 keys
# (under 1 MiB, past the 10,000 members an object may have) and a 64 MiB
# line of garbage. `drivewatch history`, `drivewatch report` and the daemon
# each finish in seconds, stay under 100 MB of peak RSS, show every good
# record (a legal one of 9,000 result keys among them) and name each bad
# one as damaged with its line and offset; the daemon exports
# drivewatch_history_damaged_records 3. Before the bounds, the 200k-key
# record alone took minutes to parse (quadratic in keys) and the garbage
# line was held whole, as was every file `report` was given.
#   usage: history_bounds_test.sh DRIVEWATCH_BINARY SOURCE_DIR
set -euo pipefail
bin=$(realpath "$1")
src=$(realpath "$2")
source "$(dirname "$0")/lib.sh"

rss_limit_kb=100000  # 100 MB; a run reading as it should peaks near 20 MB
time_limit=20        # seconds; a run takes about 1 s
# Under scripts/sanitize.sh (ASAN_OPTIONS set) every check runs, but the time
# and RSS bounds are reported rather than asserted: ASan's allocator keeps
# freed memory in quarantine (a run peaks near 135 MB there) and its checks
# slow every read. The records, the damage and its messages are asserted.
sanitized=""
[[ -n ${ASAN_OPTIONS:-} ]] && sanitized=yes
# bound WHAT VALUE LIMIT: fails unless VALUE < LIMIT (see above).
bound() {
  if awk -v v="$2" -v b="$3" 'BEGIN {exit !(v < b)}'; then return 0; fi
  [[ -n $sanitized ]] || fail "$1 ${2} (expected under $3)"
  echo "note: $1 $2 (bound $3 not asserted under sanitizers)"
}
mkdir -p "$work/state"
history=$work/state/history.log
printf '[state]\ndirectory = "%s"\n' "$work/state" >"$work/dw.toml"

# The history, and what each reader must say about it (expected.json).
python3 - "$src/tests/fixtures/report/host-a.dwh" "$history" "$work/expected.json" <<'PY'
import json, sys

CRC_TABLE = []
for n in range(256):
    crc = n
    for _ in range(8):
        crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    CRC_TABLE.append(crc)

def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = (crc >> 8) ^ CRC_TABLE[(crc ^ b) & 0xFF]
    return crc ^ 0xFFFFFFFF

def frame(record):
    body = json.dumps(record, separators=(",", ":")).encode()
    return b"DWH1 %d %08x " % (len(body), crc32c(body)) + body + b"\n"

fixture, path, expected = sys.argv[1:]
runs = [json.loads(l.split(b" ", 3)[3]) for l in open(fixture, "rb")][:6]

def with_keys(record, keys):
    record = dict(record, results=dict(record["results"]))
    for i in range(keys - len(record["results"])):
        record["results"]["extra_%06d_ratio" % i] = 0.5
    assert len(record["results"]) == keys
    return record

lines = [
    ("good", frame(runs[0])),
    ("size", frame(with_keys(runs[1], 200000))),
    ("good", frame(runs[2])),
    ("keys", frame(with_keys(runs[3], 12000))),
    ("good", frame(runs[4])),
    ("garbage", None),
    ("good", frame(with_keys(runs[5], 9000))),
]
garbage = 64 << 20
offset, good, damaged = 0, [], []
with open(path, "wb") as f:
    for number, (kind, line) in enumerate(lines, 1):
        where = "line %d (offset %d): " % (number, offset)
        if kind == "garbage":
            chunk = b"\x8f garbage, no record \x00" * 4096
            left = garbage
            while left:
                f.write(chunk[:left])
                left -= min(left, len(chunk))
            f.write(b"\n")
            damaged.append(where + 'not a record header (expected "DWH1 <length> <crc32c> "); '
                           "skipped %d bytes" % (garbage + 1))
            offset += garbage + 1
            continue
        f.write(line)
        body = line.split(b" ", 3)[3][:-1]
        if kind == "good":
            good.append(json.loads(body)["run"])
        elif kind == "size":
            assert len(body) > 1 << 20
            damaged.append(where + "record of %d bytes, larger than a record may be "
                           "(expected at most 1048576 bytes)" % len(body))
        else:
            assert len(body) < 1 << 20
            column = body.index(b'"extra_%06d_ratio"' % (10000 - len(runs[3]["results"]))) + 1
            damaged.append(where + "JSON: column %d: more than 10000 members in one object "
                           "(expected at most 10000)" % column)
        offset += len(line)
last_key = list(with_keys(runs[5], 9000)["results"])[-1]
json.dump({"good": good, "damaged": damaged, "last_key": last_key}, open(expected, "w"))
PY
mapfile -t good < <(python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["good"]))' "$work/expected.json")
mapfile -t damaged < <(python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["damaged"]))' "$work/expected.json")
((${#good[@]} == 4 && ${#damaged[@]} == 3)) || fail "the generator wrote ${#good[@]} good and ${#damaged[@]} bad records"
echo "history: $(stat -c %s "$history") bytes, ${#good[@]} good records, ${#damaged[@]} bad"

# measure NAME ARGS...: runs drivewatch ARGS with a bounded wait; stdout and
# stderr to NAME.out and NAME.err; fails when it does not exit 0 in time or
# peaks over the RSS bound.
measure() {
  local name=$1 rc=0
  shift
  /usr/bin/time -f '%e %M' -o "$work/$name.time" timeout 60 "$bin" "$@" \
    >"$work/$name.out" 2>"$work/$name.err" || rc=$?
  ((rc != 124)) || fail "drivewatch $1 was still running after 60 s"
  ((rc == 0)) || fail "drivewatch $1 exited $rc: $(head -c 600 "$work/$name.err")"
  read -r seconds rss_kb <"$work/$name.time"
  echo "$name (drivewatch $1): ${seconds} s, max RSS ${rss_kb} KB"
  bound "drivewatch $1 took (s)" "$seconds" "$time_limit"
  bound "drivewatch $1 peaked at (KB)" "$rss_kb" "$rss_limit_kb"
}

# expect_damaged NAME PREFIX: NAME.err says each bad record, and nothing else.
expect_damaged() {
  local name=$1 prefix=$2 d
  for d in "${damaged[@]}"; do
    grep -qxF -- "drivewatch: $history: $prefix: $d" "$work/$name.err" ||
      fail "$name: not said on stderr: \"$prefix: $d\"; stderr: $(head -c 800 "$work/$name.err")"
  done
  (($(wc -l <"$work/$name.err") == ${#damaged[@]})) ||
    fail "$name: more on stderr than the damaged records: $(head -c 800 "$work/$name.err")"
}

# --- drivewatch history -----------------------------------------------------------
measure history history --config.file="$work/dw.toml" --format=json
expect_damaged history "damaged record skipped"
python3 - "$work/history.out" "${good[@]}" <<'PY' || fail "history --format=json: not the good records"
import json, sys
shown = [json.loads(l) for l in open(sys.argv[1])]
assert [r["run"] for r in shown] == sys.argv[2:], [r["run"] for r in shown]
assert len(shown[-1]["results"]) == 9000, len(shown[-1]["results"])
PY
measure table history --config.file="$work/dw.toml"
(($(wc -l <"$work/table.out") == ${#good[@]} + 1)) || fail "history table: $(wc -l <"$work/table.out") lines"
last=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["last_key"])' "$work/expected.json")
grep -q " $last=50.0%\$" "$work/table.out" || fail "history table: the 9000-key record's last result $last"
measure csv history --config.file="$work/dw.toml" --format=csv
(($(wc -l <"$work/csv.out") == ${#good[@]} + 1)) || fail "history csv: $(wc -l <"$work/csv.out") lines"
pass "history: the ${#good[@]} good records in every format, the 3 bad ones named by line and offset"

# --- drivewatch report, given the file ----------------------------------------------
measure report report --format=json "$history"
expect_damaged report "damaged record left out"
python3 - "$work/report.out" "$work/expected.json" <<'PY' || fail "report --format=json: not the runs and damage expected"
import json, sys
report, expected = (json.load(open(p)) for p in sys.argv[1:])
[source] = report["sources"]
assert source["runs"] == len(expected["good"]), source
assert source["damaged"] == expected["damaged"], source["damaged"]
PY
measure report_text report "$history"
grep -qxF "  $history: ${#good[@]} runs, 0 steps" "$work/report_text.out" ||
  fail "report: the runs read: $(grep -F "$history:" "$work/report_text.out" | head -3)"
grep -qxF "damaged, so left out (never a result):" "$work/report_text.out" || fail "report: no damaged section"
pass "report: ${#good[@]} runs, the 3 bad records listed as damaged"

# --- the daemon: phase metrics and drivewatch_history_damaged_records -----------
start_daemon "$work/daemon.log" --config.file="$work/dw.toml"
# Two services read the history on their own threads: the state-health one
# exports the count, the phase service logs each damaged record. Neither waits
# for the other, so the test waits for both.
all_logged() {
  local d
  for d in "${damaged[@]}"; do
    grep -qF -- "$history: damaged record skipped: $d" "$work/daemon.log" || return 1
  done
}
ok=0
for _ in $(seq 300); do
  if curl -sf "$url" >"$work/metrics.txt" &&
     grep -q '^drivewatch_history_damaged_records 3$' "$work/metrics.txt" && all_logged; then
    ok=1; break
  fi
  kill -0 "$pid" 2>/dev/null || fail "the daemon exited: $(tail -5 "$work/daemon.log")"
  sleep 0.1
done
((ok)) || all_logged || fail "not every damaged record logged in 30 s: $(grep -F 'damaged record' "$work/daemon.log")"
((ok)) || fail "no drivewatch_history_damaged_records 3 in 30 s: $(grep history_ "$work/metrics.txt"); $(tail -5 "$work/daemon.log")"
grep -q '^drivewatch_history_readable 1$' "$work/metrics.txt" || fail "history readable gauge"
for d in "${damaged[@]}"; do
  grep -qF -- "$history: damaged record skipped: $d" "$work/daemon.log" ||
    fail "the daemon did not log: $d"
done
hwm_kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")
echo "daemon: peak RSS ${hwm_kb} KB"
bound "the daemon peaked at (KB)" "$hwm_kb" "$rss_limit_kb"
stop_daemon
pass "daemon: drivewatch_history_damaged_records 3, each logged, under the RSS bound"
echo "all history bounds checks passed"
