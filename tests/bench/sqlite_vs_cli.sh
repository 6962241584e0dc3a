#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The sqlite phase beside the same workload run by hand through the sqlite3
# command-line shell, on the same ext4 file system on a loop device (a file
# in BENCH_DIR, default /var/tmp): `drivewatch phase run` of a sqlite phase
# (THREADS threads, INSERTS rows each, WAL and synchronous FULL), and
# THREADS sqlite3 processes at once, each on a database of its own made
# beforehand with the same table, index and journal mode, fed the same
# number of autocommitted INSERTs (rows of the same sizes) after PRAGMA
# synchronous = FULL; timed from their start to the last one's end.
# ROUNDS interleaved rounds, alternating which goes first; prints each
# run's inserts per second, then the medians and the median ratio
# drivewatch / sqlite3. Needs root (losetup, mount) and sqlite3.
#
#   tests/bench/sqlite_vs_cli.sh BUILD_DIR [ROUNDS=6] [INSERTS=7500] [THREADS=1]
set -euo pipefail
build=$(realpath "$1")
rounds=${2:-6}
inserts=${3:-7500}
threads=${4:-1}
bin=$build/exporter/drivewatch
base=${BENCH_DIR:-/var/tmp}
work=$(mktemp -d "$base/dw-sqlite-bench.XXXXXX")
mnt=$work/mnt
loopdev=""
cleanup() {
  umount "$mnt" 2>/dev/null || true
  [[ -n $loopdev ]] && losetup -d "$loopdev" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
command -v sqlite3 >/dev/null || { echo "needs the sqlite3 shell (apt install sqlite3)" >&2; exit 2; }

truncate -s 2G "$work/fs.img"
mkfs.ext4 -q -F "$work/fs.img" >/dev/null
loopdev=$(losetup --show -f "$work/fs.img")
mkdir -p "$mnt"
mount "$loopdev" "$mnt"
mkdir -p "$mnt/dw" "$mnt/cli"
cat >"$work/dw.toml" <<TOML
[state]
directory = "$work/state"
[probes.read_latency]
enabled = false
[[aging.targets]]
name = "bench"
directory = "$mnt/dw"
file_size = "16MiB"
free_space_reserve = 0.01
[[aging.phases]]
name = "sqlite"
kind = "sqlite"
target = "bench"
threads = $threads
inserts = $inserts
journal_mode = "wal"
synchronous = "full"
TOML

# The shell's input: the same statements the phase runs, its rows of the
# same sizes (letters, 4 and 16 of them).
python3 - "$inserts" >"$work/inserts.sql" <<'PY'
import random, sys
rng = random.Random(7)
letters = "abcdefghijklmnopqrstuvwxyz"
print("PRAGMA synchronous = FULL;")
for i in range(int(sys.argv[1])):
    f1 = "".join(rng.choice(letters) for _ in range(4))
    f2 = "".join(rng.choice(letters) for _ in range(16))
    print(f"INSERT INTO pts1 (I, F1, F2) VALUES ({i % 32768}, '{f1}', '{f2}');")
PY
schema="PRAGMA journal_mode = WAL;
CREATE TABLE pts1 (I SMALLINT NOT NULL, DT TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  F1 VARCHAR(4) NOT NULL, F2 VARCHAR(16) NOT NULL);
CREATE INDEX pts1_i ON pts1 (I);"

run_dw() {
  "$bin" phase run sqlite --config.file="$work/dw.toml" 2>/dev/null |
    python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["outcome"]=="completed", r; print(r["results"]["insert_operations_per_second"])'
}
run_cli() {
  rm -rf "$mnt/cli" && mkdir "$mnt/cli"
  local t
  for ((t = 0; t < threads; t++)); do sqlite3 "$mnt/cli/thread-$t.db" "$schema" >/dev/null; done
  sync
  local start end
  start=$(date +%s.%N)
  for ((t = 0; t < threads; t++)); do sqlite3 "$mnt/cli/thread-$t.db" <"$work/inserts.sql" & done
  wait
  end=$(date +%s.%N)
  python3 -c "print($threads * $inserts / ($end - $start))"
}

dw=() cli=()
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then
    a=$(run_dw); b=$(run_cli)
  else
    b=$(run_cli); a=$(run_dw)
  fi
  dw+=("$a") cli+=("$b")
  printf 'round %d: drivewatch %.1f inserts/s, sqlite3 %.1f inserts/s\n' "$r" "$a" "$b"
done
python3 - "${dw[*]}" "${cli[*]}" <<'PY'
import statistics, sys
dw = [float(x) for x in sys.argv[1].split()]
cli = [float(x) for x in sys.argv[2].split()]
ratios = [a / b for a, b in zip(dw, cli)]
print(f"median: drivewatch {statistics.median(dw):.1f} inserts/s, "
      f"sqlite3 {statistics.median(cli):.1f} inserts/s, "
      f"ratio drivewatch/sqlite3 {statistics.median(ratios):.3f} "
      f"(per round {', '.join(f'{x:.3f}' for x in ratios)})")
PY
