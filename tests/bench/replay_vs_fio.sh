#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The replay phase beside fio's replay of the same trace on the same
# target: one iolog (version 3) from tests/tools/make_trace.py, replayed by
# `drivewatch phase run` (kind "replay") and by
#   fio --read_iolog=TRACE --replay_redirect=TARGET --ioengine=io_uring
#       --direct=1 --iodepth=QD [--replay_no_stall=1]
# on a loop device backed by a file in /var/tmp and on a plain file there
# (the directory target's own file, which fio is redirected to), with the
# recorded timing and as fast as the queue depth allows ("max", fio's
# replay_no_stall). ROUNDS interleaved rounds, alternating which goes
# first; prints every run, then the medians of the replay duration and of
# the ratio drivewatch/fio per case. Needs root (losetup) and fio.
#
#   tests/bench/replay_vs_fio.sh BUILD_DIR [ROUNDS=6] [IOS=20000] [THINK_US=100]
#   FIO=/path/to/fio (default: fio on PATH)
# FIO_EXTRA="--iomem=mmaphuge": more fio arguments. With that one (and
# huge pages reserved: echo 128 >/proc/sys/vm/nr_hugepages) fio's buffers
# are 2 MiB pages too, as the engine's are (docs/aging.md "Buffers"), and
# the comparison is of the I/O paths alone.
#   REPLAY_BENCH_DIR=/dev/shm: where the targets' files are (default
#   /var/tmp; tmpfs takes O_DIRECT on kernels 6.6 and later, and leaves the
#   replays' own cost without a shared disk's noise)
#   REPLAY_BENCH_MIB=1024: the targets' size
#
# The replay duration is drivewatch's replay_duration_seconds (the first
# I/O's submission to the last completion) and fio's job_runtime (its job
# from start to the last completion). The trace keeps to what both replay
# alike: reads and writes only (fio 3.33, Debian 12's, drops an iolog's
# trims: it replays them from 3.34 on), aligned, inside the target, at most
# 1 MiB (drivewatch splits above 2 MiB, fio does not), no syncs (drivewatch
# does not replay flushes), and its first I/O at a time other than 0 (fio
# skips the time between a line stamped 0 and the next).
#
# "max" compares the two replays' speed. "recorded" is printed beside the
# trace's own span: drivewatch keeps each I/O due at its recorded time from
# the start, while fio waits each recorded gap after its previous issue, so
# every late wake-up of its sleep adds up (here a 100 us nanosleep takes
# about 300 us), and fio 3.33 does not reap completions while it waits
# (fixed in 3.36): fio's recorded replay is no reference for the timing.
set -euo pipefail
read -ra fio_extra <<<"${FIO_EXTRA:-}"

build=${1:?usage: $0 BUILD_DIR [ROUNDS] [IOS] [THINK_US]}
rounds=${2:-6}
ios=${3:-20000}
think=${4:-100}
qd=32
src=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(realpath "$build/exporter/drivewatch")
size=$((${REPLAY_BENCH_MIB:-1024} << 20))
work=$(mktemp -d "${REPLAY_BENCH_DIR:-/var/tmp}/dw-rvf.XXXXXX")
loop=

cleanup() {
  [[ -n $loop ]] && losetup -d "$loop" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

fio=${FIO:-fio}
command -v "$fio" >/dev/null || { echo "$fio not found" >&2; exit 1; }
[[ -x $bin ]] || { echo "$bin not built" >&2; exit 1; }
python=python3
[[ -x /usr/bin/python3 ]] && python=/usr/bin/python3

mkdir -p "$work/data" "$work/state"
plain=$work/data/drivewatch-aging-file.dat
# Written once, so reads hit allocated blocks on both targets.
for f in "$work/loop.img" "$plain"; do
  dd if=/dev/urandom of="$f" bs=1M count=$((size >> 20)) oflag=direct status=none
done
loop=$(losetup -f --show --direct-io=on "$work/loop.img")
trace=$work/trace.log
"$python" "$src/tests/tools/make_trace.py" --format iolog3 --out "$trace" --ios "$ios" \
  --seed 11 --capacity $size --beyond 0 --unaligned 0 --mix 60,40,0 --think-us "$think" \
  --max-size $((1 << 20)) --file /dev/traced

config() {  # speed -> a config with a replay phase on each target
  cat <<TOML
[state]
directory = "$work/state"
[probes.read_latency]
enabled = false
[[aging.targets]]
name = "loop"
block_device = "$loop"
serial = "loop:$(realpath "$work/loop.img")"
destroy_data = true
[[aging.targets]]
name = "file"
directory = "$work/data"
file_size = "$((size >> 20))MiB"
free_space_reserve = 0.01
[[aging.phases]]
name = "loop"
kind = "replay"
target = "loop"
trace = "$trace"
queue_depth = $qd
replay_speed = "$1"
[[aging.phases]]
name = "file"
kind = "replay"
target = "file"
trace = "$trace"
queue_depth = $qd
replay_speed = "$1"
TOML
}
config recorded >"$work/recorded.toml"
config max >"$work/max.toml"

results=$work/results
ours() {  # speed target
  "$bin" phase run "$2" --config.file="$work/$1.toml" 2>/dev/null |
    "$python" -c 'import json,sys; r=json.load(sys.stdin); assert r["outcome"]=="completed", r; print(r["results"]["replay_duration_seconds"])'
}
theirs() {  # speed path
  local stall=()
  [[ $1 == max ]] && stall=(--replay_no_stall=1)
  "$fio" "${fio_extra[@]}" --name=replay --read_iolog="$trace" --replay_redirect="$2" --ioengine=io_uring \
    --direct=1 --iodepth=$qd "${stall[@]}" --output-format=json |
    "$python" -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["job_runtime"] / 1000)'
}

span=$("$python" -c "
import sys
t = [int(l.split()[0]) for l in open('$trace') if l.split()[2:3] in (['read'], ['write'])]
print((t[-1] - t[0]) / 1e6)")
echo "trace: $ios I/Os (60/40 read/write, 4 KiB to 1 MiB), recorded span ${span} s, QD$qd, $("$fio" --version)"
for round in $(seq 1 "$rounds"); do
  for speed in recorded max; do
    for target in loop file; do
      path=$loop
      [[ $target == file ]] && path=$plain
      if ((round % 2)); then
        a=$(ours $speed $target)
        b=$(theirs $speed "$path")
      else
        b=$(theirs $speed "$path")
        a=$(ours $speed $target)
      fi
      echo "$speed $target $a $b" | tee -a "$results"
    done
  done
done

"$python" - "$results" "$rounds" "$span" <<'PY'
import collections, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    speed, target, ours, fio = line.split()
    rows[(speed, target)].append((float(ours), float(fio)))
span = float(sys.argv[3])
def med(v):
    v = sorted(v)
    return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2
print(f"\nmedians of {sys.argv[2]} interleaved rounds (the trace's span: {span:.3f} s)")
print(f"{'case':16} {'drivewatch s':>12} {'fio s':>9} {'ratio':>7} {'drivewatch/span':>15} {'fio/span':>9}")
for (speed, target), v in rows.items():
    o, f = med([o for o, _ in v]), med([f for _, f in v])
    print(f"{speed + ' ' + target:16} {o:12.3f} {f:9.3f} {med([o / f for o, f in v]):7.3f} "
          f"{o / span:15.3f} {f / span:9.3f}")
PY
