#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Host-side helper of the "aging" VM scenario (stdlib only; QMP client from
tests/vm/vmctl.py).

Subcommands:
  wr SOCK QDEV
      Print the wr_bytes QEMU counted for the drive of device QDEV
      (query-blockstats; e.g. c2).
  stats SOCK QDEV
      Print QDEV's write and unmap (discard) counters: wr_bytes=...
      wr_operations=... unmap_bytes=... unmap_operations=...
  analyze SAMPLES N
      S3's SLC cache model, read from what tests/vm/aging/slc_throttle.cc
      wrote in the guest: every poll (guest monotonic time, bytes written
      since the base) and when the slow limit went on. Prints one JSON object:
        truth            the first polled bytes >= N (the "cache size")
        prev             the poll before it (< N)
        after_return     the bytes polled right after the fill was moved to
                         the slow cgroup
        slop_bytes       after_return - truth: written between the poll that
                         crossed N and the move
        knee_bytes       the slow level's line (a fit of the samples from 1 s
                         after the move) extrapolated back to the moment of
                         the move: where the series really bends
        fast_bps, slow_bps  rates measured before the crossing / after it
        poll_ms_mean, poll_ms_max, cmd_ms  polling period, the move's time
      Exits 1 if the samples have no crossing.
  get FILE PATH...
      Print the values at dotted PATHs of the JSON object in FILE, one per
      line (empty line if missing; lists joined with commas).
  series RESULT_JSON TRUTH OUT HOW
      Write the fill's throughput series (series.throughput_bytes_per_second)
      as the fixture format of tests/unit/aging/slc_cache_test.cc
      (RecordedVmFill): "# throttled_at_bytes TRUTH", a "#" line HOW, and one
      bytes/second value per line.
  stall RECORD FIO_CLAT_LOG FIO_LAT_LOG KEY TOLERANCE WITNESS_LOG
      S7: the run RECORD's KEY_service_p50/p99_seconds within TOLERANCE of
      fio's clat p50/p99 over the reads fio completed while the cell ran
      (FIO_*_LOG: fio --write_lat_log --log_avg_msec=0 --log_unix_epoch=1),
      and its response p99 (KEY_p99_seconds) at least 5 x its service p99
      and over 1 s. Each p99 is one side's slowest read: the p99 may differ
      by TOLERANCE plus the longest time the whole guest stood still while
      the cell ran (WITNESS_LOG: tests/vm/aging/stall_witness.cc), which
      delays the two sides' reads by different amounts. Prints the figures;
      exits 1 with the problems.
  history FILE PHASE:OUTCOME...
      FILE holds `drivewatch history --format json` (JSON Lines). Check that
      it has exactly one record per expected run, in that order, with that
      phase and outcome; print the problems (nothing if all is well) and
      exit 1 if there are any.
"""
import json
import math
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import vmctl  # noqa: E402


def die(msg):
    print("aging.py: " + msg, file=sys.stderr)
    sys.exit(1)


class Session:
    def __init__(self, sock, timeout):
        self.q = vmctl.Qmp(sock, time.monotonic() + timeout)
        greeting = self.q.read_obj()
        if "QMP" not in greeting:
            die("unexpected QMP greeting: %r" % greeting)
        self.events = []
        self.cmd({"execute": "qmp_capabilities"})

    def cmd(self, obj):
        self.q.send(obj)
        r = self.q.reply(self.events)
        if "return" not in r:
            die("QMP %s failed: %r" % (obj.get("execute"), r))
        return r["return"]

    def stats(self, qdev):
        for e in self.cmd({"execute": "query-blockstats"}):
            if e.get("qdev") == qdev or e.get("qdev", "").endswith("/" + qdev):
                return e["stats"]
        die("no blockstats for device %s" % qdev)

    def wr(self, qdev):
        return int(self.stats(qdev)["wr_bytes"])



def fit(points):
    """Least-squares line through (t, y) points: (slope, intercept)."""
    n = len(points)
    if n < 2:
        return 0.0, points[0][1] if points else 0.0
    mt = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    sxx = sum((p[0] - mt) ** 2 for p in points)
    if sxx == 0:
        return 0.0, my
    slope = sum((p[0] - mt) * (p[1] - my) for p in points) / sxx
    return slope, my - slope * mt


def read_samples(path):
    """(samples, sent, returned) of slc_throttle's SAMPLES file; sent and
    returned are None when its header says "(no crossing)"."""
    with open(path) as f:
        header = f.readline()
        rows = [line.split() for line in f if line.strip()]
    m = re.search(r"throttle command sent ([0-9.]+), returned ([0-9.]+)", header)
    if not header.startswith("# monotonic_s bytes_since_base"):
        die("%s: not slc_throttle's samples (header %r)" % (path, header.strip()))
    try:
        samples = [(float(t), int(b)) for t, b in rows]
    except ValueError:
        die("%s: a sample line is not 'SECONDS BYTES'" % path)
    if not samples:
        die("%s: no samples" % path)
    return samples, (float(m.group(1)) if m else None), (float(m.group(2)) if m else None)


def cmd_analyze(args):
    path, n = args[0], int(args[1])
    samples, c0, c1 = read_samples(path)
    if c0 is None:
        die("the fill wrote only %d of %d bytes before slc_throttle gave up (samples: %s)"
            % (samples[-1][1], n, path))
    i_cross = next((i for i, (t, w) in enumerate(samples) if w >= n), None)
    if i_cross is None or i_cross + 1 >= len(samples):
        die("%s: a limit change is recorded but no sample crosses %d with one after it" % (path, n))
    t_cross, truth = samples[i_cross]
    prev = samples[i_cross - 1][1] if i_cross > 0 else 0
    after_return = samples[i_cross + 1][1]
    # Fast level: the last second before the crossing.
    fast_pts = [p for p in samples[:i_cross + 1] if p[0] >= t_cross - 1.0 and p[1] > 0]
    fast_bps, _ = fit(fast_pts)
    # Slow level: from 1 s after the limit went on (the requests dispatched
    # under the fast limit are done by then).
    slow_pts = [p for p in samples if p[0] >= c1 + 1.0]
    slow_bps, icpt = fit(slow_pts)
    knee = slow_bps * c1 + icpt
    polls = [b[0] - a[0] for a, b in zip(samples[:i_cross], samples[1:i_cross + 1])]
    print(json.dumps({
        "n": n,
        "truth": truth, "prev": prev, "after_return": after_return,
        "slop_bytes": after_return - truth,
        "knee_bytes": round(knee), "knee_minus_truth": round(knee - truth),
        "fast_bps": round(fast_bps), "slow_bps": round(slow_bps),
        "poll_ms_mean": round(1000 * sum(polls) / len(polls), 2) if polls else None,
        "poll_ms_max": round(1000 * max(polls), 2) if polls else None,
        "cmd_ms": round(1000 * (c1 - c0), 2),
        "polls": len(polls) + 1,
    }))


def cmd_get(args):
    with open(args[0]) as f:
        obj = json.load(f)
    for path in args[1:]:
        v = obj
        for k in path.split("."):
            if isinstance(v, dict) and k in v:
                v = v[k]
            elif isinstance(v, list) and k.isdigit() and int(k) < len(v):
                v = v[int(k)]
            else:
                v = None
                break
        if v is None:
            print("")
        elif isinstance(v, list):
            print(",".join(str(x) for x in v))
        elif isinstance(v, float) and v.is_integer():
            print(int(v))
        else:
            print(v)


def cmd_series(args):
    result, truth, out, how = args
    with open(result) as f:
        series = json.load(f)["series"]["throughput_bytes_per_second"]
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write("# throttled_at_bytes %d\n" % int(truth))
        for line in how.splitlines():
            # Only the first line may start "# throttled_at_bytes ".
            if line.startswith("throttled_at_bytes"):
                line = "(" + line + ")"
            f.write("# %s\n" % line)
        for x in series:
            f.write("%.0f\n" % x)
    os.replace(tmp, out)


def cmd_history(args):
    path, want = args[0], args[1:]
    recs = []
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                recs.append(json.loads(line))
            except ValueError as e:
                print("line %d is not JSON (%s): %s" % (i, e, line.strip()[:120]))
                sys.exit(1)
    problems = []
    if len(recs) != len(want):
        problems.append("%d records, %d runs: %s" % (len(recs), len(want), " ".join(
            "%s:%s" % (r.get("phase"), r.get("outcome")) for r in recs)))
    for i, (r, w) in enumerate(zip(recs, want)):
        phase, outcome = w.split(":")
        if r.get("phase") != phase or r.get("outcome") != outcome:
            problems.append("record %d is %s:%s (%s), wanted %s" % (
                i + 1, r.get("phase"), r.get("outcome"), r.get("run"), w))
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)


def read_fio_log(path):
    """fio's per-read log (--write_lat_log, --log_avg_msec=0, --log_unix_epoch=1):
    lines "completion time in ms since the epoch, latency in ns, direction,
    block size, offset". Returns [(seconds since the epoch, latency seconds)]."""
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            fields = [x.strip() for x in line.split(",")]
            if len(fields) < 2:
                die("%s:%d: not a fio latency log line: %r" % (path, n, line))
            out.append((int(fields[0]) / 1e3, int(fields[1]) / 1e9))
    return out


def nearest_rank(values, p):
    """The p-th percentile (0 < p <= 100) by nearest rank."""
    values = sorted(values)
    return values[max(0, math.ceil(p / 100.0 * len(values)) - 1)]


def read_witness(path):
    """[(realtime_s, late_s)] of stall_witness's OUT file."""
    with open(path) as f:
        header = f.readline()
        if not header.startswith("# realtime_s late_s"):
            die("%s: not stall_witness's log (header %r)" % (path, header.strip()))
        try:
            return [(float(t), float(late)) for t, late in (line.split() for line in f if line.strip())]
        except ValueError:
            die("%s: a line is not 'SECONDS LATE'" % path)


def cmd_stall(args):
    """S7: the cell's service latency against fio's clat over the reads both
    made while the cell ran, and its response latency."""
    record, clat_log, lat_log, key, tolerance = args[0], args[1], args[2], args[3], float(args[4])
    witness = read_witness(args[5])
    with open(record) as f:
        rec = json.load(f)
    results = rec.get("results", {})
    # The cell runs between the drive's age read at the start (after the
    # interlocks opened the target) and the record's end. Reads fio completed
    # in the first or last second may share the guest's one CPU with the
    # phase starting or writing its record; they are left out.
    start = (rec.get("drive_at_start") or {}).get("time")
    end = rec.get("end")
    if not isinstance(start, (int, float)) or not isinstance(end, (int, float)) or end - start < 5:
        die("%s: no drive_at_start.time and end at least 5 s apart (%r, %r)" % (record, start, end))
    lo, hi = start + 1.0, end - 1.0
    # The longest stall of the whole guest that could delay a read of
    # either side: one that ended after the cell began and began before it
    # ended (drivewatch's quantiles count every read of the cell).
    stall = max([late for t, late in witness if t >= start and t - late <= end], default=0.0)
    clat = [v for t, v in read_fio_log(clat_log) if lo <= t <= hi]
    lat = [v for t, v in read_fio_log(lat_log) if lo <= t <= hi]
    problems = []
    parts = ["window %.1f s; reads: drivewatch %s, fio %d in the window; the guest's longest "
             "stall in the cell %.1f ms" % (hi - lo, results.get("%s_ios" % key), len(clat), stall * 1e3)]
    # 15 s of 500 ms reads: about 30 for drivewatch, 26 for fio in the window
    # (each p99 is then the slowest read).
    ios = results.get("%s_ios" % key)
    if not ios or ios < 20 or len(clat) < 20 or len(lat) != len(clat):
        problems.append("too few reads: drivewatch %s, fio %d clat / %d lat in the window (wanted 20 "
                        "or more each)" % (ios, len(clat), len(lat)))
    for p, name in ((50, "p50"), (99, "p99")):
        service = results.get("%s_service_%s_seconds" % (key, name))
        response = results.get("%s_%s_seconds" % (key, name))
        if service is None or response is None:
            problems.append("the record has no %s_service_%s_seconds or %s_%s_seconds" % (key, name, key, name))
            continue
        if not clat:
            continue
        fio_clat, fio_lat = nearest_rank(clat, p), nearest_rank(lat, p)
        ratio = service / fio_clat
        parts.append("%s service %.4f s, fio clat %.4f s (lat %.4f s), ratio %.3f; response %.3f s" % (
            name, service, fio_clat, fio_lat, ratio, response))
        # p50 is the middle of ~26 reads, which one stall cannot move; p99
        # is the slowest, which a stall can lengthen on one side only.
        allowed = tolerance * fio_clat + (stall if p == 99 else 0.0)
        if abs(service - fio_clat) > allowed:
            problems.append("%s: service %.4f s is not within %.0f %%%s of fio's clat %.4f s" % (
                name, service, tolerance * 100,
                " + the %.1f ms stall" % (stall * 1e3) if p == 99 and stall > 0 else "", fio_clat))
        if p == 99 and (response < 5 * service or response < 1.0):
            problems.append("p99: response %.3f s does not show the stall (wanted at least 5 x service "
                            "%.4f s and over 1 s)" % (response, service))
    print("; ".join(parts))
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)


def main():
    if len(sys.argv) < 2:
        die("usage: aging.py wr|stats|analyze|get|series|stall|history ...")
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "wr":
        print(Session(args[0], 10).wr(args[1]))
    elif cmd == "stats":
        st = Session(args[0], 10).stats(args[1])
        print(" ".join("%s=%s" % (k, st.get(k)) for k in (
            "wr_bytes", "wr_operations", "unmap_bytes", "unmap_operations")))
    elif cmd == "analyze":
        cmd_analyze(args)
    elif cmd == "get":
        cmd_get(args)
    elif cmd == "series":
        cmd_series(args)
    elif cmd == "history":
        cmd_history(args)
    elif cmd == "stall":
        cmd_stall(args)
    else:
        die("unknown subcommand " + cmd)


if __name__ == "__main__":
    main()
