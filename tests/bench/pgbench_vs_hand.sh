#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The pgbench phase beside pgbench run by hand against a cluster started by
# hand, on the same ext4 file system on a loop device (a file in BENCH_DIR,
# default /var/tmp). Both make a fresh cluster each round as the phase
# does (initdb -A trust, pg_ctl start with no TCP and the socket in the
# cluster's directory, pgbench -i -s SCALE), as the postgres account, then
# time `pgbench -c CLIENTS -j JOBS -T SECONDS -n`; the by-hand TPS is the
# one pgbench prints. ROUNDS interleaved rounds, alternating which goes
# first; prints each run's TPS, then the medians and the median ratio
# drivewatch / by hand. Needs root (losetup, mount) and postgresql-15.
#
#   tests/bench/pgbench_vs_hand.sh BUILD_DIR [ROUNDS=6] [SCALE=10] [CLIENTS=10] [SECONDS=20] \
#     [JOBS=1]
# HAND_LOG=1: pgbench by hand logs every transaction too (-l, to a file on
# the file system under test), which costs it about 7 % here; drivewatch
# reads its log through FIFOs, so nothing of it reaches the drive.
set -euo pipefail
build=$(realpath "$1")
rounds=${2:-6}
scale=${3:-10}
clients=${4:-10}
seconds=${5:-20}
jobs=${6:-1}
bin=$build/exporter/drivewatch
pg=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
base=${BENCH_DIR:-/var/tmp}
work=$(mktemp -d "$base/dw-pgbench-bench.XXXXXX")
chmod 755 "$work"
mnt=$work/mnt
loopdev=""
cleanup() {
  [[ -e $mnt/hand/cluster/postmaster.pid ]] &&
    runuser -u postgres -- "$pg/pg_ctl" -D "$mnt/hand/cluster" -m immediate stop >/dev/null 2>&1
  umount "$mnt" 2>/dev/null || true
  [[ -n $loopdev ]] && losetup -d "$loopdev" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

truncate -s 8G "$work/fs.img"
mkfs.ext4 -q -F "$work/fs.img" >/dev/null
loopdev=$(losetup --show -f "$work/fs.img")
mkdir -p "$mnt"
mount "$loopdev" "$mnt"
mkdir -p "$mnt/dw"
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
name = "pgbench"
kind = "pgbench"
target = "bench"
scale = $scale
clients = $clients
jobs = $jobs
run_time = "${seconds}s"
TOML

run_dw() {
  "$bin" phase run pgbench --config.file="$work/dw.toml" 2>/dev/null |
    python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["outcome"]=="completed", r; print(r["results"]["transaction_operations_per_second"])'
}
run_hand() {
  local dir=$mnt/hand
  rm -rf "$dir" && mkdir "$dir" && chown postgres: "$dir"
  local as=(runuser -u postgres --)
  "${as[@]}" "$pg/initdb" -D "$dir/cluster" -U drivewatch -A trust -E UTF8 --no-instructions >/dev/null
  "${as[@]}" "$pg/pg_ctl" -D "$dir/cluster" -l "$dir/server.log" -w -o \
    "-c listen_addresses='' -c unix_socket_directories='$dir' -p 5432" start >/dev/null
  local client=("$pg/pgbench" -h "$dir" -p 5432 -U drivewatch)
  "${as[@]}" "${client[@]}" -i -q -s "$scale" postgres >/dev/null 2>&1
  "${as[@]}" "${client[@]}" -c "$clients" -j "$jobs" -T "$seconds" -n ${HAND_LOG:+-l --log-prefix=$dir/tx} postgres 2>/dev/null |
    sed -n 's/^tps = \([0-9.]*\) .*/\1/p'
  "${as[@]}" "$pg/pg_ctl" -D "$dir/cluster" -m immediate stop >/dev/null
}

dw=() hand=()
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then
    a=$(run_dw); b=$(run_hand)
  else
    b=$(run_hand); a=$(run_dw)
  fi
  dw+=("$a") hand+=("$b")
  printf 'round %d: drivewatch %.1f TPS, by hand %.1f TPS\n' "$r" "$a" "$b"
done
python3 - "${dw[*]}" "${hand[*]}" <<'PY'
import statistics, sys
dw = [float(x) for x in sys.argv[1].split()]
hand = [float(x) for x in sys.argv[2].split()]
ratios = [a / b for a, b in zip(dw, hand)]
print(f"median: drivewatch {statistics.median(dw):.1f} TPS, by hand {statistics.median(hand):.1f} TPS, "
      f"ratio drivewatch/by hand {statistics.median(ratios):.3f} "
      f"(per round {', '.join(f'{x:.3f}' for x in ratios)})")
PY
