#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The workload engine beside fio, same target, block size and queue depth,
# on every cell of the Phoronix preset (4 KiB random read/write at QD1 and
# QD32; 2 MiB sequential read at QD1, QD8, QD32; 2 MiB sequential write at
# QD8) plus the perf phase's default 128 KiB sequential write at QD32 and
# retention-verify's 128 KiB sequential read at QD32, on a
# loop device backed by a file in /var/tmp and on a plain file in /var/tmp.
# Rounds are interleaved (every cell once per round, which tool goes first
# alternating), and the summary gives per-cell medians of MB/s and of the
# per-round engine/fio ratio. Keep ROUNDS even: on the loop device the
# second of a pair of random-write runs is often faster than the first
# (ratios 0.90-0.93 with the engine first, 1.05-1.06 with fio first, in
# one 5-round run), and an odd count lets one order decide the median.
# Needs root (losetup) and fio.
#
#   tests/bench/workload_vs_fio.sh BUILD_DIR [SECONDS=10] [ROUNDS=6] [CELLS=regex]
#
# CELLS picks cells by a regex over their labels ("loop sr2m-qd8", ...).
# fio runs with ioengine=io_uring, direct=1, registerfiles=1, fixedbufs=1,
# time_based. The loop device runs with direct I/O to its backing file
# (LOOP_DIRECT_IO=off to change): a buffered loop measures whatever of the
# 2 GiB happens to be in the page cache, and runs differ by 5x.
# CPU per I/O: ours is getrusage(RUSAGE_SELF) user+sys of the
# whole workload_bench process (setup included); fio's is
# (usr_cpu + sys_cpu)% x job_runtime from --output-format=json, the job
# thread only. Work the loop driver or the file system does in kernel
# threads is in neither.
# FIO_EXTRA="--iomem=mmaphuge": more fio arguments. With that one (and
# huge pages reserved: echo 128 >/proc/sys/vm/nr_hugepages) fio's buffers
# are 2 MiB pages too, as the engine's are (docs/aging.md "Buffers"), and
# the comparison is of the I/O paths alone.
set -euo pipefail
read -ra fio_extra <<<"${FIO_EXTRA:-}"

build=${1:?usage: $0 BUILD_DIR [SECONDS] [ROUNDS] [CELLS]}
seconds=${2:-10}
repeat=${3:-6}
cells_re=${4:-.}
bench=$build/tests/workload_bench
size=$((2 * 1024 * 1024 * 1024))
dir=${WORKLOAD_BENCH_DIR:-/var/tmp}
loop_file=$dir/dw_wvf_loop.$$.img
plain_file=$dir/dw_wvf_file.$$.img
loop=

cleanup() {
  [[ -n $loop ]] && losetup -d "$loop" 2>/dev/null || true
  rm -f "$loop_file" "$plain_file"
}
trap cleanup EXIT

command -v fio >/dev/null || { echo "fio not found" >&2; exit 1; }
[[ -x $bench ]] || { echo "$bench not built" >&2; exit 1; }
fallocate -l $size "$loop_file"
fallocate -l $size "$plain_file"
loop=$(losetup -f --show --direct-io="${LOOP_DIRECT_IO:-on}" "$loop_file")
# Written once, so reads hit allocated blocks on both targets.
for t in "$loop" "$plain_file"; do
  "$bench" --path "$t" --rw write --access seq --bs 1048576 --qd 16 --size $size >/dev/null
done

results=$(mktemp)
trap 'cleanup; rm -f "$results"' EXIT

run_pair() {  # target label rw(fio) rw(ours) access bs qd round
  local target=$1 label=$2 fio_rw=$3 rw=$4 access=$5 bs=$6 qd=$7 round=$8
  local ours fio_json
  [[ $label =~ $cells_re ]] || return 0
  # Alternate which goes first so neither always gets the warmer cache.
  if (( round % 2 )); then
    ours=$("$bench" --path "$target" --rw "$rw" --access "$access" --bs "$bs" --qd "$qd" --time "$seconds")
  fi
  fio_json=$(fio "${fio_extra[@]}" --name=dw --filename="$target" --ioengine=io_uring --direct=1 \
    --registerfiles=1 --fixedbufs=1 --rw="$fio_rw" --bs="$bs" --iodepth="$qd" \
    --size=$size --time_based --runtime="$seconds" --output-format=json)
  if (( round % 2 == 0 )); then
    ours=$("$bench" --path "$target" --rw "$rw" --access "$access" --bs "$bs" --qd "$qd" --time "$seconds")
  fi
  python3 - "$label" "$fio_rw" "$ours" "$fio_json" >>"$results" <<'PY'
import json, sys
label, rw, ours, fio = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
job = fio["jobs"][0]
d = job["write" if "write" in rw else "read"]
fio_ios = d["total_ios"]
fio_s = d["runtime"] / 1000.0
fio_mbps = d["bw_bytes"] / 1e6
fio_cpu = (job["usr_cpu"] + job["sys_cpu"]) / 100.0 * job["job_runtime"] / 1000.0
our_cpu = ours["cpu_user_s"] + ours["cpu_sys_s"]
print(json.dumps(dict(label=label,
  ours=dict(mbps=ours["mb_per_s"], iops=ours["iops"], cpu_us=our_cpu / ours["ios"] * 1e6),
  fio=dict(mbps=fio_mbps, iops=d["iops"], cpu_us=fio_cpu / fio_ios * 1e6))))
PY
}

for round in $(seq 1 "$repeat"); do
  for target in loop file; do
    path=$loop; [[ $target == file ]] && path=$plain_file
    run_pair "$path" "$target rr4k-qd1" randread read rand 4096 1 "$round"
    run_pair "$path" "$target rr4k-qd32" randread read rand 4096 32 "$round"
    run_pair "$path" "$target rw4k-qd1" randwrite write rand 4096 1 "$round"
    run_pair "$path" "$target rw4k-qd32" randwrite write rand 4096 32 "$round"
    run_pair "$path" "$target sr2m-qd1" read read seq 2097152 1 "$round"
    run_pair "$path" "$target sr2m-qd8" read read seq 2097152 8 "$round"
    run_pair "$path" "$target sr2m-qd32" read read seq 2097152 32 "$round"
    run_pair "$path" "$target sw2m-qd8" write write seq 2097152 8 "$round"
    run_pair "$path" "$target sw128k-qd32" write write seq 131072 32 "$round"
    run_pair "$path" "$target sr128k-qd32" read read seq 131072 32 "$round"
  done
done

python3 - "$results" "$seconds" <<'PY'
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"{sys.argv[2]} s per run")
hdr = f"{'cell':20} {'engine MB/s':>11} {'fio MB/s':>9} {'engine IOPS':>11} {'fio IOPS':>9} {'thr ratio':>9} {'engine cpu/io us':>16} {'fio cpu/io us':>13} {'cpu ratio':>9}"
print(hdr)
by = collections.defaultdict(list)
for r in rows:
    o, f = r["ours"], r["fio"]
    by[r["label"]].append(r)
    print(f"{r['label']:20} {o['mbps']:11.1f} {f['mbps']:9.1f} {o['iops']:11.0f} {f['iops']:9.0f} "
          f"{o['mbps']/f['mbps']:9.3f} {o['cpu_us']:16.2f} {f['cpu_us']:13.2f} {o['cpu_us']/f['cpu_us']:9.3f}")
print(f"\nmedians over {len(rows) // max(1, len(by))} rounds (thr ratio: median of per-round engine/fio)")
print(hdr)
def med(v):
    v = sorted(v)
    return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2
for label, rs in by.items():
    o = {k: med([r["ours"][k] for r in rs]) for k in ("mbps", "iops", "cpu_us")}
    f = {k: med([r["fio"][k] for r in rs]) for k in ("mbps", "iops", "cpu_us")}
    tr = med([r["ours"]["mbps"] / r["fio"]["mbps"] for r in rs])
    cr = med([r["ours"]["cpu_us"] / r["fio"]["cpu_us"] for r in rs])
    print(f"{label:20} {o['mbps']:11.1f} {f['mbps']:9.1f} {o['iops']:11.0f} {f['iops']:9.0f} "
          f"{tr:9.3f} {o['cpu_us']:16.2f} {f['cpu_us']:13.2f} {cr:9.3f}")
PY
