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
#   fio lat   from when fio prepared the request to the completion: starts
#             before the submitting system call, as drivewatch's interval
#             does (ReadOutcome::submitted is taken just before
#             io_uring_enter), but earlier, so it also counts some of fio's
#             own user-space work (docs/read-latency.md);
#   fio clat  from after io_uring_enter returned: leaves out the submission
#             (fio reports that part as slat), so it is smaller by the cost
#             of one io_uring_enter that issues the read.
# and, from a second fio job with the psync engine (DW_BENCH_PSYNC, default
# 1; 0 leaves it out):
#   psync clat from just before the pread(2) to its return: fio stamps a
#             synchronous engine's issue time before the call, so this is
#             the probe's interval exactly (one system call that submits
#             the read and waits for it), with pread in place of
#             io_uring_enter: fio's service latency for the probe's
#             interval.
#
# Placement (DW_BENCH_PLACE). A read's latency on these targets depends as
# much on where the work lands as on the reader: a loop device's reads are
# done by an unbound kworker, and when the scheduler puts that kworker on
# another CPU than the reader, every read pays two cross-CPU wake-ups
# (measured here: 15 us a read on one CPU, 66-72 us across two, for either
# reader). The scheduler keeps each where it last ran, so one run of either
# reader can land together and the next apart, and a comparison then
# measures luck. So by default (DW_BENCH_PLACE=same) both readers run on
# one CPU (DW_BENCH_CPU, default the last), and the kernel's unbound
# workqueues (/sys/devices/virtual/workqueue/cpumask, restored at exit) are
# held to it as well: the same place for both, as on an NVMe drive, whose
# completions come back to the CPU that submitted. DW_BENCH_PLACE=apart
# puts the workqueues on another CPU (every read crosses CPUs, for both);
# DW_BENCH_PLACE=free leaves all to the scheduler.
#
# The floor (tests/bench/read_latency_floor.cc) times the same interval as
# the probe (from just before the io_uring_enter that submits a read and
# waits for it to just after it returns) with the same ring and nothing of
# drivewatch's around the read; each repetition runs it last, and the last
# table gives drivewatch/floor. fio's io_uring figures bracket that
# interval without matching it; fio's psync clat matches the interval with
# another system call; the floor matches both.
#
# DW_BENCH_TOGETHER=1 runs each repetition's readers at the same time on
# the target (the one to start first turns) instead of one after the
# other: the per-run ratios then compare runs that met the same machine,
# at the price of sharing it (a read of one now and then meets a read of
# another: at 100 IOPS and ~20 us a read, about 1 in 100). The readers
# together are 4 x RATE reads a second (3 x without psync). On the test
# machine this is the mode that shows anything: its speed flips, for
# seconds to minutes at a time, between two states (the floor's p50 11 us
# with 21 us of CPU per read, or 55-90 us with 54-92 us of CPU: the same
# code, a slower CPU), so runs one after the other compare states, not
# readers.
#   usage (root): tests/bench/read_latency_vs_fio.sh BUILD_DIR [RATE] [READS] [REPS]
#   e.g.          tests/bench/read_latency_vs_fio.sh build 100 2000 5
set -euo pipefail
build=$(realpath "${1:?usage: $0 BUILD_DIR [RATE] [READS] [REPS]}")
rate=${2:-100}
reads=${3:-2000}
reps=${4:-5}
bench="$build/tests/read_latency_bench"
floor="$build/tests/read_latency_floor"
for b in "$bench" "$floor"; do
  [[ -x $b ]] || { echo "read_latency_vs_fio.sh: $b is not built (configure with -DDRIVEWATCH_BUILD_BENCHMARKS=ON, then build)" >&2; exit 2; }
done
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
spinners=() spin_cpus=()
place=${DW_BENCH_PLACE:-same}
ncpu=$(nproc)
cpu=${DW_BENCH_CPU:-$((ncpu - 1))}
wq_mask_file=/sys/devices/virtual/workqueue/cpumask
wq_mask_was=""
# Where the readers run (pin), where the unbound workqueues go (wq_cpu;
# empty: left alone), in words for the header (where).
pin=() wq_cpu=""
where="readers and workqueues where the scheduler puts them"
case $place in
  same | apart)
    if ! [[ $cpu =~ ^[0-9]+$ ]] || ((cpu >= ncpu)); then
      echo "read_latency_vs_fio.sh: DW_BENCH_CPU='$cpu' is not a CPU of this machine (0..$((ncpu - 1)))" >&2
      exit 2
    fi
    pin=(taskset -c "$cpu")
    wq_cpu=$cpu
    where="readers and unbound workqueues on CPU $cpu"
    if [[ $place == apart ]]; then
      ((ncpu >= 2)) || { echo "read_latency_vs_fio.sh: DW_BENCH_PLACE=apart needs two CPUs" >&2; exit 2; }
      wq_cpu=$(((cpu + 1) % ncpu))
      where="readers on CPU $cpu, unbound workqueues on CPU $wq_cpu"
    fi
    ;;
  free) ;;
  *) echo "read_latency_vs_fio.sh: unknown DW_BENCH_PLACE '$place' (expected same, apart, free)" >&2; exit 2 ;;
esac
cleanup() {
  [[ -n $wq_mask_was ]] && echo "$wq_mask_was" >"$wq_mask_file" 2>/dev/null || true
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
run_fio() {  # ENGINE TARGET -> "lat_p50 lat_p99 lat_p999 clat_p50 clat_p99 clat_p999 cpu_us_per_io n"
  local engine=$1 opts=()
  [[ $engine == io_uring && -n $fio_fixedbufs ]] && opts=("$fio_fixedbufs")
  "${pin[@]}" fio --name=randread --filename="$2" --ioengine="$engine" --direct=1 "${opts[@]}" \
    --rw=randread --bs=4k --iodepth=1 --rate_iops="$rate" --number_ios="$reads" \
    --size=256M --time_based=0 --runtime=3600 --norandommap --randrepeat=0 \
    --lat_percentiles=1 --clat_percentiles=1 \
    --percentile_list=50:99:99.9 --output-format=json --output="$work/fio-$engine.json" >/dev/null
  python3 - "$work/fio-$engine.json" <<'PY'
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

# The readers of one repetition, in the order they run (or start, together).
readers=(fio dw floor)
[[ ${DW_BENCH_PSYNC:-1} == 1 ]] && readers=(fio dw psync floor)
run_reader() {  # READER KIND PATH -> one line of figures on stdout
  case $1 in
    fio) run_fio io_uring "$3" ;;
    psync) run_fio psync "$3" ;;
    dw) "${pin[@]}" "$bench" "$2" "$3" "$rate" "$reads" ;;
    floor) "${pin[@]}" "$floor" "$3" "$rate" "$reads" ;;
  esac
}

compare() {  # LABEL KIND PATH
  local label=$1 kind=$2 path=$3 i r
  for r in fio dw psync floor; do : >"$work/$r.txt"; done
  # One warm-up read pass, not counted: the first run on a target pays for
  # write-back of the layout and cold metadata.
  run_fio io_uring "$path" >/dev/null
  for ((i = 0; i < reps; i++)); do
    if [[ ${DW_BENCH_TOGETHER:-0} == 1 ]]; then
      # All at once, each to its own file; which starts first turns.
      local pids=() k n=${#readers[@]} all=1
      for ((k = 0; k < n; k++)); do
        r=${readers[(i + k) % n]}
        run_reader "$r" "$kind" "$path" >"$work/$r.one" &
        pids+=($!)
      done
      wait "${pids[@]}"
      # A round counts only when every reader finished it: the ratios pair runs.
      for r in "${readers[@]}"; do [[ -s $work/$r.one ]] || all=0; done
      if ((all)); then
        for r in "${readers[@]}"; do cat "$work/$r.one" >>"$work/$r.txt"; done
      fi
      rm -f "$work"/*.one
    else
      for r in "${readers[@]}"; do run_reader "$r" "$kind" "$path" >>"$work/$r.txt"; done
    fi
  done
  python3 - "$label" "$work" "$reps" <<'PY'
import os, statistics, sys
label, work, reps = sys.argv[1:]
def rows(name):
    with open(os.path.join(work, name + ".txt")) as f:
        return [list(map(float, l.split())) for l in f if l.strip()]
dw, fio, psync, floor = rows("dw"), rows("fio"), rows("psync"), rows("floor")
med = lambda rows, i: statistics.median(r[i] for r in rows)
how = "side-by-side" if os.environ.get("DW_BENCH_TOGETHER") == "1" else "interleaved"
print(f"\n{label}: {reps} {how} runs each, {int(dw[0][4])} reads per run; medians over the runs")
def vs(rows, di, oi):  # "median (min..max)" of the per-run ratios drivewatch/other
    rs = sorted(a[di] / b[oi] for a, b in zip(dw, rows))
    return f"{statistics.median(rs):.3f} ({rs[0]:.3f}..{rs[-1]:.3f})"
print(f"{'':9}{'drivewatch':>12}{'fio lat':>12}{'ratio':>8}{'fio clat':>12}{'ratio':>8}   per-run ratio, median (min..max): to lat; to clat")
for name, di, li, ci in (("p50", 0, 0, 3), ("p99", 1, 1, 4), ("p99.9", 2, 2, 5)):
    d, l, c = med(dw, di), med(fio, li), med(fio, ci)
    print(f"{name:9}{d*1e6:>9.1f} us{l*1e6:>9.1f} us{d/l:>8.3f}{c*1e6:>9.1f} us{d/c:>8.3f}   "
          f"{vs(fio, di, li)}; {vs(fio, di, ci)}")
d, f = med(dw, 3), med(fio, 6)
print(f"{'cpu/read':9}{d:>9.2f} us{f:>9.2f} us{d/f:>8.3f}")
# Each other reader: (title, rows, column of p50/p99/p99.9, column of cpu/read).
others = [("psync clat", psync, (3, 4, 5), 6), ("floor", floor, (0, 1, 2), 3)]
for title, other, cols, cpu in others:
    if not other:
        continue
    print(f"\n{'':9}{'drivewatch':>12}{title:>12}{'ratio':>8}   per-run ratio: median (min..max)   ({title}: {len(other)} runs)")
    for name, i, oi in zip(("p50", "p99", "p99.9"), (0, 1, 2), cols):
        d, f = med(dw, i), med(other, oi)
        print(f"{name:9}{d*1e6:>9.1f} us{f*1e6:>9.1f} us{d/f:>8.3f}   {vs(other, i, oi)}")
    d, f = med(dw, 3), med(other, cpu)
    print(f"{'cpu/read':9}{d:>9.2f} us{f:>9.2f} us{d/f:>8.3f}")
PY
}

# A spinner (DW_BENCH_SPIN, default 1; 0 runs without) keeps the readers'
# CPU from halting: a busy loop at SCHED_IDLE, which yields to any other
# task at once. On a virtual machine a CPU with nothing to run halts, and
# waking it for a read's completion costs the hypervisor tens of
# microseconds, more or less at random, on all readers alike. Only the
# readers' CPU gets one: on the 2-CPU test machine a busy loop on the
# *other* CPU made reads on this one 3-5 times slower (the floor's p50 11 us
# with a spinner on the readers' CPU alone, 18-20 us with none, 48-59 us
# with one on the other CPU; its CPU time per read 17, 24 and 58-72 us: the
# two virtual CPUs share the host's capacity). With DW_BENCH_PLACE=free,
# where the readers run on any CPU, every CPU gets one (and that cost).
# CPU times are per process, so a spinner's time is in nobody's figure.
if [[ ${DW_BENCH_SPIN:-1} == 1 ]]; then
  spin_cpus=("$cpu")
  [[ $place == free ]] && mapfile -t spin_cpus < <(seq 0 $((ncpu - 1)))
  for c in "${spin_cpus[@]}"; do
    taskset -c "$c" chrt --idle 0 bash -c 'while :; do :; done' &
    spinners+=($!)
  done
fi
if [[ -n $wq_cpu ]]; then
  if ! wq_mask_was=$(cat "$wq_mask_file" 2>/dev/null) || ! printf '%x\n' $((1 << wq_cpu)) >"$wq_mask_file" 2>/dev/null; then
    echo "read_latency_vs_fio.sh: cannot hold the unbound workqueues to CPU $wq_cpu through $wq_mask_file (root and a kernel with it are needed; DW_BENCH_PLACE=free runs without)" >&2
    wq_mask_was=""
    exit 2
  fi
fi
echo "rate ${rate} IOPS, ${reads} reads per run, ${reps} runs; $(uname -r); fio $(fio --version); ${ncpu} CPUs; spinners: ${#spinners[@]}${spin_cpus:+ (CPU ${spin_cpus[*]})}; ${where}"
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
