#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The perf matrix through the real binary: check-config on cells (a located
# refusal), `drivewatch phase run` of the Phoronix preset with 1 s cells on
# a small file (the JSON on stdout, the MB/s and IOPS table on stderr), the
# history keeping series.cells, and the daemon running a scheduled matrix
# with steady state and exporting every cell as measure="<cell>" (~15 s).
#   usage: perf_matrix_test.sh DRIVEWATCH_BINARY
set -euo pipefail
bin=$(realpath "$1")
source "$(dirname "$0")/lib.sh"
json() { python3 -c "import json,sys; r=json.load(sys.stdin); print($1)"; }

mkdir -p "$work/data"
# The state and the target both configs share.
common="[state]
directory = \"$work/state\"
[probes.read_latency]
enabled = false
[[aging.targets]]
name = \"scratch\"
directory = \"$work/data\"
file_size = \"64MiB\"
free_space_reserve = 0.01"
cat >"$work/dw.toml" <<TOML
$common
[[aging.phases]]
name = "phoronix"
kind = "perf"
target = "scratch"
preset = "phoronix"
perf_duration = "1s"
runs = 1
[[aging.phases.cells]]
name = "rand_read_4k_100iops"
access = "random"
operation = "read"
block_size = "4KiB"
rate_iops = 100
bytes = "400KiB"
TOML

# --- check-config: the matrix, and a cell it refuses -------------------------
"$bin" check-config "$work/dw.toml" >"$work/check.out" 2>&1 || fail "check-config: $(cat "$work/check.out")"
sed -e 's/^rate_iops = 100$/rate_iops = 100\njobs = 2/' "$work/dw.toml" >"$work/bad.toml"
set +e
"$bin" check-config "$work/bad.toml" >/dev/null 2>"$work/bad.err"
rc=$?
set -e
((rc == 2)) || fail "check-config of a paced cell with 2 jobs exited $rc"
grep -qF "$work/bad.toml:22:13: aging.phases.cells[0].rate_iops: a paced cell runs one job, not 2 (expected jobs = 1 with rate_iops)" "$work/bad.err" ||
  fail "check-config message: $(cat "$work/bad.err")"
pass "check-config reads the matrix and locates a refused cell"

# --- phase run: the JSON on stdout, the table on stderr -----------------------
"$bin" phase run phoronix --config.file="$work/dw.toml" >"$work/run.json" 2>"$work/run.err" ||
  fail "phase run phoronix: $(tail -5 "$work/run.err")"
[[ $(json 'r["outcome"]' <"$work/run.json") == completed ]] || fail "phoronix: $(cat "$work/run.json")"
python3 - "$work/run.json" <<'PY' || fail "phoronix record"
import json, sys
r = json.load(open(sys.argv[1]))
cells = r["series"]["cells"]
names = [c["name"] for c in cells]
assert names == ["rand_read_4k_qd1", "rand_read_4k_qd32", "rand_write_4k_qd1", "rand_write_4k_qd32",
                 "seq_read_2m_qd1", "seq_read_2m_qd8", "seq_read_2m_qd32", "seq_write_2m_qd8",
                 "rand_read_4k_100iops"], names
for c in cells:
    n = c["name"]
    assert r["results"][n + "_bytes_per_second"] > 0, n
    assert r["results"][n + "_iops"] > 0, n
    assert r["results"]["%s_%s_p99_9_seconds" % (n, c["operation"])] > 0, n
    assert r["results"]["%s_%s_ios" % (n, c["operation"])] > 0, n  # the samples under them
# A cell of 409600 bytes of 4 KiB reads: its quantiles rest on 100 reads.
assert r["results"]["rand_read_4k_100iops_read_ios"] == 100, r["results"]
assert cells[0]["duration_seconds"] == 1.0 and cells[8]["bytes"] == 409600, cells
assert cells[8]["rate_iops"] == 100, cells[8]
PY
# The table: a header and one line per cell, with MB/s, MiB/s and IOPS.
grep -qE '^cell +MB/s +MiB/s +IOPS +read p99\.9 +write p99\.9$' "$work/run.err" ||
  fail "no table header on stderr: $(tail -12 "$work/run.err")"
for cell in rand_read_4k_qd1 rand_read_4k_qd32 rand_write_4k_qd1 rand_write_4k_qd32 \
            seq_read_2m_qd1 seq_read_2m_qd8 seq_read_2m_qd32 seq_write_2m_qd8 rand_read_4k_100iops; do
  grep -qE "^$cell +[0-9]+\.[0-9] +[0-9]+\.[0-9] +[0-9]+ " "$work/run.err" ||
    fail "no table line for $cell: $(tail -12 "$work/run.err")"
done
# MB/s is 10^6 bytes/s, as the record's bytes/s says.
python3 - "$work/run.json" "$work/run.err" <<'PY' || fail "table figures"
import json, re, sys
r = json.load(open(sys.argv[1]))["results"]
for line in open(sys.argv[2]):
    m = re.match(r"^(seq_read_2m_qd8) +([0-9.]+) +([0-9.]+) +([0-9]+) ", line)
    if m:
        assert abs(float(m.group(2)) - r["seq_read_2m_qd8_bytes_per_second"] / 1e6) <= 0.05, line
        assert abs(float(m.group(3)) - r["seq_read_2m_qd8_bytes_per_second"] / 2**20) <= 0.05, line
        assert abs(int(m.group(4)) - r["seq_read_2m_qd8_iops"]) <= 0.5, line
        break
else:
    sys.exit("no seq_read_2m_qd8 line")
PY
pass "phase run phoronix: 9 cells in the JSON, and the MB/s, MiB/s and IOPS table on stderr"

"$bin" history --config.file="$work/dw.toml" --format=json >"$work/history.jsonl"
python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])][-1]; assert len(r['series']['cells']) == 9, r" \
  "$work/history.jsonl" || fail "history: $(tail -c 300 "$work/history.jsonl")"
pass "the history keeps the cells' definitions"

# --- the daemon runs a scheduled matrix and exports each cell ----------------
cat >"$work/daemon.toml" <<TOML
$common
[[aging.phases]]
name = "phoronix"
kind = "perf"
target = "scratch"
preset = "phoronix"
[[aging.phases]]
name = "nightly"
kind = "perf"
target = "scratch"
interval = "1d"
steady_state = true
max_rounds = 8
[[aging.phases.cells]]
name = "paced_read"
access = "random"
operation = "read"
block_size = "4KiB"
rate_iops = 400
bytes = "160KiB"
[[aging.phases.cells]]
name = "mix_70_30"
access = "random"
operation = "mix"
read_percent = 70
block_size = "16KiB"
queue_depth = 4
bytes = "2MiB"
TOML
start_daemon "$work/daemon.log" --config.file="$work/daemon.toml"
scrape_until 60 'drivewatch_phase_runs_total\{.*outcome="completed".*phase="nightly".*\} 1' || fail "the daemon did not run the scheduled matrix: $(tail -5 "$work/daemon.log")"
for pattern in \
  'drivewatch_phase_result_iops{.*measure="paced_read".*phase="nightly".*}' \
  'drivewatch_phase_result_bytes_per_second{.*measure="mix_70_30".*phase="nightly".*}' \
  'drivewatch_phase_result_seconds{.*measure="mix_70_30_write_p99_9".*phase="nightly".*}' \
  'drivewatch_phase_result_ratio{.*measure="paced_read_steady_state".*phase="nightly".*} [01]$' \
  'drivewatch_phase_result_iops{.*measure="rand_read_4k_qd1".*phase="phoronix".*}' \
  'drivewatch_phase_result_bytes_per_second{.*measure="seq_write_2m_qd8".*phase="phoronix".*}'; do
  grep -qE "$pattern" "$work/metrics.txt" || fail "no $pattern: $(grep phase_result "$work/metrics.txt" | head -5)"
done
if command -v promtool >/dev/null; then
  promtool check metrics <"$work/metrics.txt" || fail "promtool check metrics"
fi
stop_daemon
pass "the daemon ran the scheduled matrix and exports each cell as measure=\"<cell>\" (promtool clean)"
