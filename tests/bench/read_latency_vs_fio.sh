#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# drivewatch's read latency probe against fio on the same target, at the
# same rate, for the same number of reads: an ext4 file, a loop device
# with --direct-io=on over it, and a loop device over a copy in tmpfs
# (/dev/shm): a device with no medium behind it, whose reads take the same
# few microseconds each time, so that what differs between the two readers
# is theirs and not the disk's (DW_BENCH_TMPFS=0 leaves it out;
# DW_BENCH_TARGETS picks any of "file loop tmpfs"). Runs REPS interleaved
# repetitions per target (fio, drivewatch, fio, drivewatch, ...: drift of
# the machine hits both alike)
# and prints the median over the repetitions of p50/p99/p99.9 and CPU time
# (user+sys) per read, with the ratios drivewatch/fio. Not run by ctest.
#
# Two fio numbers are compared, because they start the clock at different
# points:
#   fio lat   from before the submitting system call to the completion:
#             what drivewatch measures (ReadOutcome::submitted is taken just
#             before io_uring_enter), so this is the like-for-like ratio;
#   fio clat  from after io_uring_enter returned: leaves out the submission
#             (fio reports that part as slat), so it is smaller by the cost
#             of one io_uring_enter that issues the read.
#
# DW_BENCH_TOGETHER=1 runs each repetition's fio and drivewatch at the same
# time on the target (the one to start first alternates) instead of one
# after the other: the per-run ratio then compares two runs that met the
# same machine (its drift, a neighbour's load), at the price of the two
# sharing it. The two together are 2 x RATE reads a second.
#   usage (root): tests/bench/read_latency_vs_fio.sh BUILD_DIR [RATE] [READS] [REPS]
#   e.g.          tests/bench/read_latency_vs_fio.sh build 100 2000 5
set -euo pipefail
build=$(realpath "${1:?usage: $0 BUILD_DIR [RATE] [READS] [REPS]}")
rate=${2:-100}
reads=${3:-2000}
reps=${4:-5}
bench="$build/tests/read_latency_bench"
targets=" ${DW_BENCH_TARGETS:-file loop tmpfs} "
[[ ${DW_BENCH_TMPFS:-1} == 1 ]] || targets=${targets/ tmpfs / }
for t in $targets; do
  case $t in
    file | loop | tmpfs) ;;
    *) echo "read_latency_vs_fio.sh: unknown target '$t' in DW_BENCH_TARGETS (expected file, loop, tmpfs)" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d /var/tmp/dw-bench.XXXXXX)
loop="" shm=""
spinners=()
cleanup() {
  ((${#spinners[@]} == 0)) || kill "${spinners[@]}" 2>/dev/null || true
  [[ -n $loop ]] && losetup -d "$loop" 2>/dev/null || true
  [[ -n $shm ]] && rm -rf "$shm"
  rm -rf "$work"
}
trap cleanup EXIT

# A 256 MiB file of real data, laid out by drivewatch (it reads only a
# test file of its own; fio reads any).
file="$work/drivewatch-bench.dat"
"$bench" file "$file" "$rate" 1 256 >/dev/null
sync

# drivewatch reads into buffers registered with its ring (a read-fixed
# submission pins nothing); fio's --fixedbufs does the same. Without it
# fio's submission pins its buffer's page at every read, which its `lat`
# counts and drivewatch's reads do not pay. DW_BENCH_FIO_FIXEDBUFS=0 leaves
# it out.
fio_fixedbufs=--fixedbufs=1
[[ ${DW_BENCH_FIO_FIXEDBUFS:-1} == 0 ]] && fio_fixedbufs=""
run_fio() {  # TARGET -> "lat_p50 lat_p99 lat_p999 clat_p50 clat_p99 clat_p999 cpu_us_per_io n"
  fio --name=randread --filename="$1" --ioengine=io_uring --direct=1 $fio_fixedbufs \
    --rw=randread --bs=4k --iodepth=1 --rate_iops="$rate" --number_ios="$reads" \
    --size=256M --time_based=0 --runtime=3600 --norandommap --randrepeat=0 \
    --lat_percentiles=1 --clat_percentiles=1 \
    --percentile_list=50:99:99.9 --output-format=json --output="$work/fio.json" >/dev/null
  python3 - "$work/fio.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
lat = j["read"]["lat_ns"]["percentile"]
clat = j["read"]["clat_ns"]["percentile"]
n = j["read"]["total_ios"]
cpu_us = (j["usr_cpu"] + j["sys_cpu"]) / 100 * j["job_runtime"] * 1e3  # job_runtime ms
keys = ("50.000000", "99.000000", "99.900000")
print(*(lat[k] / 1e9 for k in keys), *(clat[k] / 1e9 for k in keys), cpu_us / n, n)
PY
}

compare() {  # LABEL KIND PATH
  local label=$1 kind=$2 path=$3 i
  : >"$work/fio.txt"
  : >"$work/dw.txt"
  # One warm-up read pass of each, not counted: the first run on a target
  # pays for write-back of the layout and cold metadata.
  run_fio "$path" >/dev/null
  for ((i = 0; i < reps; i++)); do
    if [[ ${DW_BENCH_TOGETHER:-0} == 1 ]]; then
      local pid
      if ((i % 2 == 0)); then
        run_fio "$path" >"$work/fio.one" &
        pid=$!
        "$bench" "$kind" "$path" "$rate" "$reads" >>"$work/dw.txt"
      else
        "$bench" "$kind" "$path" "$rate" "$reads" >"$work/dw.one" &
        pid=$!
        run_fio "$path" >"$work/fio.one"
      fi
      wait "$pid"
      [[ -s $work/fio.one ]] && cat "$work/fio.one" >>"$work/fio.txt"
      [[ -s $work/dw.one ]] && cat "$work/dw.one" >>"$work/dw.txt"
      rm -f "$work/fio.one" "$work/dw.one"
    else
      run_fio "$path" >>"$work/fio.txt"
      "$bench" "$kind" "$path" "$rate" "$reads" >>"$work/dw.txt"
    fi
  done
  python3 - "$label" "$work/dw.txt" "$work/fio.txt" "$reps" <<'PY'
import os, statistics, sys
label, dw_file, fio_file, reps = sys.argv[1:]
dw = [list(map(float, l.split())) for l in open(dw_file) if l.strip()]
fio = [list(map(float, l.split())) for l in open(fio_file) if l.strip()]
med = lambda rows, i: statistics.median(r[i] for r in rows)
how = "side-by-side" if os.environ.get("DW_BENCH_TOGETHER") == "1" else "interleaved"
print(f"\n{label}: {reps} {how} runs each, {int(dw[0][4])} reads per run; medians over the runs")
print(f"{'':9}{'drivewatch':>12}{'fio lat':>12}{'ratio':>8}{'fio clat':>12}{'ratio':>8}   per-run ratio to fio lat: median (min..max)")
for name, di, li, ci in (("p50", 0, 0, 3), ("p99", 1, 1, 4), ("p99.9", 2, 2, 5)):
    d, l, c = med(dw, di), med(fio, li), med(fio, ci)
    rs = sorted(a[di] / b[li] for a, b in zip(dw, fio))
    print(f"{name:9}{d*1e6:>9.1f} us{l*1e6:>9.1f} us{d/l:>8.3f}{c*1e6:>9.1f} us{d/c:>8.3f}   {statistics.median(rs):.3f} ({rs[0]:.3f}..{rs[-1]:.3f})")
d, f = med(dw, 3), med(fio, 6)
print(f"{'cpu/read':9}{d:>9.2f} us{f:>9.2f} us{d/f:>8.3f}")
PY
}

# DW_BENCH_SPIN=1 keeps every CPU busy with a loop at SCHED_IDLE, which
# yields to any other task at once: on a virtual machine a CPU with nothing
# to run halts, and waking it for a read's completion costs the hypervisor
# tens of microseconds, more or less at random, on both readers alike:
# noise well above the 5 % the two are compared to. With the spinners no
# CPU halts (the readers' CPU times are theirs alone: per process).
if [[ ${DW_BENCH_SPIN:-0} == 1 ]]; then
  for ((c = 0; c < $(nproc); c++)); do
    taskset -c "$c" chrt --idle 0 bash -c 'while :; do :; done' &
    spinners+=($!)
  done
fi
echo "rate ${rate} IOPS, ${reads} reads per run, ${reps} runs; $(uname -r); fio $(fio --version); $(nproc) CPUs; spinners: ${#spinners[@]}"
if [[ $targets == *" file "* ]]; then
  compare "ext4 file ($file)" file "$file"
fi
if [[ $targets == *" loop "* ]]; then
  loop=$(losetup --direct-io=on --show -f "$file")
  compare "loop device $loop (--direct-io=on)" block "$loop"
  losetup -d "$loop"
  loop=""
fi
if [[ $targets == *" tmpfs "* ]]; then
  shm=$(mktemp -d /dev/shm/dw-bench.XXXXXX)
  cp "$file" "$shm/"
  loop=$(losetup --direct-io=on --show -f "$shm/$(basename "$file")")
  compare "loop device $loop over tmpfs (--direct-io=on $(cat "/sys/block/$(basename "$loop")/loop/dio"))" block "$loop"
fi
