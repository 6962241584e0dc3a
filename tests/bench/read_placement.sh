#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Where the paced reader runs, and what it costs its latency: drivewatch's
# read latency probe (tests/read_latency_bench) and fio's same job (io_uring,
# O_DIRECT, 4 KiB random, QD1, rate_iops) on an ext4 file, each left to the
# scheduler and each pinned (taskset) to every CPU in turn, interleaved over
# REPS rounds; medians of p50/p99 per placement, and the ratio drivewatch /
# fio lat. Then one run of each, unpinned, under `perf record` (scheduler
# and interrupt tracepoints, all CPUs) to say for the thread that waits for
# the reads: how many of its wake-ups came from another CPU than the one it
# then ran on, how often it moved, how long a wake-up took to run it, and on
# which CPUs the disk's interrupts landed. Not run by ctest.
#   usage (root): tests/bench/read_placement.sh BUILD_DIR [RATE] [READS] [REPS]
#   e.g.          tests/bench/read_placement.sh build 100 2000 5
set -euo pipefail
build=$(realpath "${1:?usage: $0 BUILD_DIR [RATE] [READS] [REPS]}")
rate=${2:-100}
reads=${3:-2000}
reps=${4:-5}
bench="$build/tests/read_latency_bench"
work=$(mktemp -d /var/tmp/dw-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
ncpu=$(nproc)

file="$work/drivewatch-bench.dat"
"$bench" file "$file" "$rate" 1 256 >/dev/null
sync

fio_job() {  # PREFIX... : fio's job, with PREFIX before it (taskset, perf)
  "$@" fio --name=randread --filename="$file" --ioengine=io_uring --direct=1 \
    --rw=randread --bs=4k --iodepth=1 --rate_iops="$rate" --number_ios="$reads" \
    --size=256M --time_based=0 --runtime=3600 --norandommap --randrepeat=0 \
    --lat_percentiles=1 --clat_percentiles=1 --percentile_list=50:99 \
    --output-format=json --output="$work/fio.json" >/dev/null
}
fio_figures() {  # -> "lat_p50 lat_p99"
  python3 - "$work/fio.json" <<'PY'
import json, sys
lat = json.load(open(sys.argv[1]))["jobs"][0]["read"]["lat_ns"]["percentile"]
print(lat["50.000000"] / 1e9, lat["99.000000"] / 1e9)
PY
}
dw_job() { "$@" "$bench" file "$file" "$rate" "$reads"; }

placements=(any)
for ((c = 0; c < ncpu; c++)); do placements+=("cpu$c"); done
prefix() { [[ $1 == any ]] && return 0; echo "taskset -c ${1#cpu}"; }

echo "rate $rate IOPS, $reads reads per run, $reps rounds; $(uname -r); fio $(fio --version); $ncpu CPUs"
fio_job >/dev/null  # warm-up, not counted
: >"$work/results.txt"
for ((i = 0; i < reps; i++)); do
  for p in "${placements[@]}"; do
    # shellcheck disable=SC2046
    fio_job $(prefix "$p")
    echo "$p fio $(fio_figures)" >>"$work/results.txt"
    # shellcheck disable=SC2046
    read -r d50 d99 _ <<<"$(dw_job $(prefix "$p"))"
    echo "$p dw $d50 $d99" >>"$work/results.txt"
  done
done
python3 - "$work/results.txt" "${placements[@]}" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
print(f"\n{'placement':10}{'dw p50':>10}{'fio p50':>10}{'ratio':>7}{'dw p99':>10}{'fio p99':>10}{'ratio':>7}   per-round p50 ratio: median (min..max)")
for p in sys.argv[2:]:
    dw = [(float(r[2]), float(r[3])) for r in rows if r[0] == p and r[1] == "dw"]
    fio = [(float(r[2]), float(r[3])) for r in rows if r[0] == p and r[1] == "fio"]
    m = lambda xs, i: statistics.median(x[i] for x in xs)
    rs = sorted(a[0] / b[0] for a, b in zip(dw, fio))
    print(f"{p:10}{m(dw,0)*1e6:>7.1f} us{m(fio,0)*1e6:>7.1f} us{m(dw,0)/m(fio,0):>7.3f}"
          f"{m(dw,1)*1e6:>7.1f} us{m(fio,1)*1e6:>7.1f} us{m(dw,1)/m(fio,1):>7.3f}"
          f"   {statistics.median(rs):.3f} ({rs[0]:.3f}..{rs[-1]:.3f})")
PY

# One traced run of each, unpinned.
trace() {  # LABEL THREAD_COMM JOB (fio_job or dw_job)
  local label=$1 comm=$2 job=$3
  "$job" perf record -q -a -o "$work/perf.data" \
    -e sched:sched_switch -e sched:sched_wakeup -e sched:sched_migrate_task \
    -e irq:irq_handler_entry -- >/dev/null 2>"$work/perf.err" || {
    cat "$work/perf.err" >&2
    return 1
  }
  perf script -i "$work/perf.data" -F cpu,time,event,trace 2>/dev/null >"$work/perf.txt"
  python3 - "$label" "$comm" "$work/perf.txt" <<'PY'
import collections, re, statistics, sys
label, comm, path = sys.argv[1:]
line_re = re.compile(r"\[(\d+)\]\s+([\d.]+):\s+([\w:]+):\s+(.*)")
kv = lambda s: dict(re.findall(r"(\w+)=(\S+)", s))
events = []
for line in open(path):
    m = line_re.search(line)
    if m:
        events.append((int(m.group(1)), float(m.group(2)), m.group(3), m.group(4)))
# The waiting thread: the one with this name woken most often.
woken = collections.Counter()
for cpu, t, ev, rest in events:
    if ev == "sched:sched_wakeup":
        a = kv(rest)
        if a.get("comm") == comm:
            woken[a["pid"]] += 1
if not woken:
    print(f"{label}: no wake-ups of a thread named {comm}")
    sys.exit(0)
pid = woken.most_common(1)[0][0]
pending = None
delays, remote, local, moves, irqs = [], 0, 0, 0, collections.Counter()
oncpu = collections.Counter()
last_in = None
for cpu, t, ev, rest in events:
    a = kv(rest)
    if ev == "sched:sched_wakeup" and a.get("pid") == pid:
        target = int(a["target_cpu"])
        if target == cpu:
            local += 1
        else:
            remote += 1
        pending = t
    elif ev == "sched:sched_switch":
        if a.get("next_pid") == pid:
            if pending is not None:
                delays.append((t - pending) * 1e6)
                pending = None
            last_in = (cpu, t)
        elif a.get("prev_pid") == pid and last_in:
            oncpu[last_in[0]] += t - last_in[1]
            last_in = None
    elif ev == "sched:sched_migrate_task" and a.get("pid") == pid:
        moves += 1
    elif ev == "irq:irq_handler_entry" and re.match(r"(virtio|nvme|ahci)", a.get("name", "")):
        irqs[(a["name"], cpu)] += 1
n = local + remote
q = statistics.quantiles(delays, n=100) if len(delays) >= 2 else [0] * 99
total = sum(oncpu.values()) or 1
print(f"{label}: thread {comm} (pid {pid}): {n} wake-ups, {remote} from another CPU "
      f"({100 * remote / max(n, 1):.0f} %), {moves} moves between CPUs; wake-up to running "
      f"p50 {q[49]:.1f} us, p99 {q[98]:.1f} us; time on CPU: "
      + ", ".join(f"cpu{c} {100 * s / total:.0f} %" for c, s in sorted(oncpu.items())))
print(f"{label}: disk interrupts: " + ", ".join(f"{k[0]} on cpu{k[1]}: {v}" for k, v in sorted(irqs.items())))
PY
}
echo
trace "fio" fio fio_job
trace "drivewatch" dw-read-reactor dw_job
