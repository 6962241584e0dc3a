#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The read latency probe's CPU cost, side by side with fio and the floor,
# in one run (issue "The paced read probe at its floor"):
#   daemon  the real drivewatch daemon at the default config, its read
#           latency probe reading TARGETS file targets (10 IOPS for 60 s,
#           100 IOPS for 60 s, 30 s idle: 44 reads/s per target on average);
#   fio     TARGETS jobs on the same files, io_uring, O_DIRECT, 4 KiB random
#           reads at queue depth 1, rate_iops=44;
#   floor   build/tests/paced_floor_bench: TARGETS threads waking on the
#           default schedule with clock_nanosleep, no I/O;
#   I/O floor  build/tests/paced_floor_bench given the daemon's files: one
#           thread and one bare ring reading them on the default schedule,
#           4 KiB O_DIRECT, every file's read submitted together, on the CPU
#           the daemon's log says its reactor runs on: what any reader of
#           these files at these rates pays on this machine (the I/O and the
#           wake-ups), with nothing of drivewatch's around the reads.
# Each runs SECONDS (180 by default) per round; the rounds interleave the
# four (daemon, fio, floor, I/O floor, daemon, ...), so the machine's drift
# hits all alike. CPU is user + system time of the whole process tree (the daemon's
# every thread; fio's parent and job processes), per minute of the run;
# RSS is the largest process's peak. Printed per round, then the medians
# and the median of the per-round ratios daemon/floor, daemon/fio,
# daemon/I-O floor and I-O floor/floor.
# With DW_BENCH_BASELINE=/path/to/another/drivewatch, that binary runs as a
# fourth column in every round (an older build, for before/after).
# With SECONDS >= 150 it also counts the wake-ups of the daemon's read
# reactor thread (voluntary context switches, /proc) inside the idle turn
# [125 s, 145 s): the goal is none.
#   usage (root): tests/bench/paced_probe_vs_fio.sh BUILD_DIR [SECONDS] [ROUNDS] [TARGETS]
#   e.g.          tests/bench/paced_probe_vs_fio.sh build 180 5 8
set -euo pipefail
build=$(realpath "${1:?usage: $0 BUILD_DIR [SECONDS] [ROUNDS] [TARGETS]}")
seconds=${2:-180}
rounds=${3:-5}
targets=${4:-8}
[[ -x $build/exporter/drivewatch && -x $build/tests/paced_floor_bench ]] ||
  { echo "$0: build drivewatch and paced_floor_bench in $build first" >&2; exit 2; }
command -v fio >/dev/null || { echo "$0: fio is not installed" >&2; exit 2; }
work=$(mktemp -d /var/tmp/dw-paced-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "$targets targets, $seconds s per run, $rounds rounds; $(uname -r); $(fio --version); $(nproc) CPUs"
python3 - "$build" "$seconds" "$rounds" "$targets" "$work" "${DW_BENCH_BASELINE:-}" <<'PY'
import os, re, resource, signal, socket, statistics, subprocess, sys, time

build, seconds, rounds, targets, work = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
baseline = sys.argv[6] if len(sys.argv) > 6 and sys.argv[6] else None
tick = os.sysconf("SC_CLK_TCK")
files = [f"{work}/data/drivewatch-t{i}.dat" for i in range(targets)]
os.makedirs(f"{work}/data")

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

config = f"{work}/drivewatch.toml"
with open(config, "w") as f:
    f.write(f'[state]\ndirectory = "{work}/state"\n[probes.read_latency]\ntargets = [\n')
    for i in range(targets):
        f.write(f'  {{ name = "t{i}", directory = "{work}/data", file_size = "64MiB" }},\n')
    f.write("]\n")

def tree_cpu(pid):
    """user + system seconds of pid and its live descendants, every thread."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            for t in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in open(f"/proc/{p}/task/{t}/children").read().split()]
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total

def rss_kib(pid):
    try:
        m = re.search(r"VmHWM:\s+(\d+)", open(f"/proc/{pid}/status").read())
        return int(m.group(1)) if m else 0
    except FileNotFoundError:
        return 0

def reactor_switches(pid):
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            if open(f"/proc/{pid}/task/{t}/comm").read().strip() == "dw-read-reactor":
                s = open(f"/proc/{pid}/task/{t}/status").read()
                return int(re.search(r"voluntary_ctxt_switches:\s+(\d+)", s).group(1)) + \
                       int(re.search(r"nonvoluntary_ctxt_switches:\s+(\d+)", s).group(1))
        except FileNotFoundError:
            pass
    return None

def run_daemon(binary):
    port = free_port()
    log = open(f"{work}/daemon.log", "a")
    p = subprocess.Popen([binary, f"--config.file={config}",
                          f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=log)
    t0 = time.monotonic()
    cpu0 = tree_cpu(p.pid)
    idle = None
    if seconds >= 150:
        time.sleep(max(0, t0 + 125 - time.monotonic()))
        a = reactor_switches(p.pid)
        time.sleep(max(0, t0 + 145 - time.monotonic()))
        b = reactor_switches(p.pid)
        idle = None if a is None or b is None else (b - a) / 20
    time.sleep(max(0, t0 + seconds - time.monotonic()))
    cpu = tree_cpu(p.pid) - cpu0
    rss = rss_kib(p.pid)
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)
    return cpu, rss, idle

def run_fio():
    cmd = ["fio", "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=4k", "--iodepth=1",
           "--rate_iops=44", "--time_based=1", f"--runtime={int(seconds)}", "--norandommap",
           "--randrepeat=0", "--output=/dev/null"]
    for i, f in enumerate(files):
        cmd += [f"--name=t{i}", f"--filename={f}", "--size=64M"]
    p = subprocess.Popen(cmd)
    t0 = time.monotonic()
    rss = 0
    while p.poll() is None:  # the peak RSS of the largest process of the tree
        todo = [p.pid]
        while todo:
            q = todo.pop()
            try:
                rss = max(rss, rss_kib(q))
                for t in os.listdir(f"/proc/{q}/task"):
                    todo += [int(c) for c in open(f"/proc/{q}/task/{t}/children").read().split()]
            except (FileNotFoundError, ProcessLookupError):
                pass
        time.sleep(0.5)
    # CPU: fio and the job processes it waited for, from this process's
    # waited-for children (the caller takes the difference).
    return resource.getrusage(resource.RUSAGE_CHILDREN), rss, time.monotonic() - t0

def run_floor(io=False):
    cmd = [f"{build}/tests/paced_floor_bench", f"--targets={targets}", f"--seconds={seconds}"]
    if io:  # where the daemon put its reactor, when it said so
        m = re.findall(r"the reactor runs on CPU (\d+)", open(f"{work}/daemon.log").read())
        cmd = (["taskset", "-c", m[-1]] if m else []) + cmd + files
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    cpu, count, rss = out.stdout.split()
    return float(cpu), int(rss)

# Lay the files out once (the daemon writes its test files; fio reuses them).
warm = subprocess.Popen([f"{build}/exporter/drivewatch", "collect", "--once", f"--config.file={config}"],
                        stdout=subprocess.DEVNULL, stderr=open(f"{work}/layout.log", "w"))
warm.wait()
missing = [f for f in files if not os.path.exists(f)]
if missing:
    sys.exit(f"the daemon did not lay out {missing[0]}: see {work}/layout.log")

rows = []
per_min = lambda cpu: cpu * 1e3 * 60 / seconds
for r in range(1, rounds + 1):
    d_cpu, d_rss, idle = run_daemon(f"{build}/exporter/drivewatch")
    b_cpu = run_daemon(baseline)[0] if baseline else None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    ru, f_rss, f_secs = run_fio()
    f_cpu = (ru.ru_utime + ru.ru_stime) - (before.ru_utime + before.ru_stime)
    fl_cpu, fl_rss = run_floor()
    io_cpu = run_floor(io=True)[0]
    row = dict(daemon=per_min(d_cpu), fio=f_cpu * 1e3 * 60 / f_secs, floor=per_min(fl_cpu),
               io=per_min(io_cpu),
               d_rss=d_rss, f_rss=f_rss, fl_rss=fl_rss, idle=idle,
               base=per_min(b_cpu) if baseline else None)
    rows.append(row)
    print(f"round {r}: daemon {row['daemon']:7.0f} ms/min ({d_rss/1024:5.1f} MB)  "
          f"fio {row['fio']:7.0f} ms/min ({f_rss/1024:5.1f} MB)  floor {row['floor']:6.0f} ms/min  "
          f"I/O floor {row['io']:6.0f} ms/min  daemon/floor {row['daemon']/row['floor']:.2f}  "
          f"daemon/fio {row['daemon']/row['fio']:.2f}  daemon/I-O floor {row['daemon']/row['io']:.2f}  "
          f"I-O floor/floor {row['io']/row['floor']:.2f}"
          + ("" if idle is None else f"  reactor wake-ups/s in the idle turn {idle:.2f}")
          + ("" if not baseline else f"  baseline {row['base']:7.0f} ms/min (daemon/baseline {row['daemon']/row['base']:.2f})"),
          flush=True)

med = lambda k: statistics.median(x[k] for x in rows)
print(f"\nmedians over {rounds} rounds ({targets} targets, {seconds:.0f} s each):")
print(f"  daemon {med('daemon'):7.0f} ms CPU per minute, {med('d_rss')/1024:.1f} MB RSS")
print(f"  fio    {med('fio'):7.0f} ms CPU per minute, {med('f_rss')/1024:.1f} MB RSS (largest process)")
print(f"  floor  {med('floor'):7.0f} ms CPU per minute")
print(f"  I/O floor {med('io'):4.0f} ms CPU per minute")
print(f"  daemon/floor: median of per-round ratios {statistics.median(x['daemon']/x['floor'] for x in rows):.2f} (goal <= 1.5)")
print(f"  daemon/fio:   median of per-round ratios {statistics.median(x['daemon']/x['fio'] for x in rows):.2f} (goal <= 0.5)")
print(f"  daemon/I-O floor: median of per-round ratios {statistics.median(x['daemon']/x['io'] for x in rows):.2f}")
print(f"  I-O floor/floor:  median of per-round ratios {statistics.median(x['io']/x['floor'] for x in rows):.2f}")
if baseline:
    print(f"  baseline {med('base'):7.0f} ms CPU per minute ({baseline}); daemon/baseline: median of "
          f"per-round ratios {statistics.median(x['daemon']/x['base'] for x in rows):.2f}")
idles = [x["idle"] for x in rows if x["idle"] is not None]
if idles:
    print(f"  reactor wake-ups per second in the idle turn: median {statistics.median(idles):.2f} (goal 0)")
PY
