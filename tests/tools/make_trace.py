#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a synthetic block trace for the replay phase's tests and benchmark.

One seeded workload (reads, writes and trims of mixed sizes with think
times between them, some offsets past a small target, some not aligned to
512 bytes, some flushes) written in the format asked for:

  iolog2    fio's iolog version 2: "wait N" (N ms after the start) before
            each I/O whose millisecond moved on
  iolog3    fio's iolog version 3: each line led by microseconds
  blkparse  blkparse's default text output: Q, D and C events per I/O, a
            plug, a message, and the closing statistics

The same --seed gives the same I/O in every format (blkparse holds whole
512-byte sectors, so there an unaligned I/O is already widened to them, as
the replay aligns it on a 512-byte target anyway; iolog2 holds whole
milliseconds). The first I/O is at --start-us, so fio's replay (which
skips the time from a line stamped 0 to the next) and drivewatch's agree.

With --summary FILE it also writes, as JSON, what a replay of the trace onto
a target of --capacity bytes with --lbs-byte logical blocks must count:
trace I/Os per operation, the I/Os the engine issues for them ("pieces":
none crosses a multiple of the capacity, so only those over 2 MiB are cut)
and their bytes, flushes, the I/Os that reach past the capacity (folded),
that are not in whole logical blocks (aligned), that are longer than 2 MiB
(split), the span from the first I/O to the last, and each I/O as
[operation, offset on the target, length] ("mapped").

usage: make_trace.py --format iolog2|iolog3|blkparse --out FILE
         [--ios 1000] [--seed 1] [--capacity BYTES] [--beyond PERCENT]
         [--unaligned PERCENT] [--mix R,W,T] [--think-us MEAN] [--idle-every N]
         [--idle-ms MS] [--flush-every N] [--max-size BYTES] [--file NAME]
         [--device MAJ,MIN] [--other-device MAJ,MIN] [--start-us US]
         [--summary FILE] [--lbs 512]
"""

import argparse
import json
import random

SECTOR = 512
MAX_IO = 2 << 20
# (size, weight): mostly small, a few past the engine's 2 MiB.
SIZES = [(4096, 55), (8192, 12), (16384, 10), (65536, 10), (131072, 7),
         (1 << 20, 4), (3 << 20, 2)]


def workload(a):
    rng = random.Random(a.seed)
    sizes = [s for s, _ in SIZES if s <= a.max_size]
    weights = [w for s, w in SIZES if s <= a.max_size]
    ops = ["read", "write", "trim"]
    mix = [int(x) for x in a.mix.split(",")]
    t = a.start_us
    ios = []
    for i in range(a.ios):
        if i > 0:
            t += max(1, int(rng.expovariate(1.0 / a.think_us))) if a.think_us > 0 else 0
            if a.idle_every and i % a.idle_every == 0:
                t += a.idle_ms * 1000
        op = rng.choices(ops, weights=mix)[0]
        size = rng.choices(sizes, weights=weights)[0]
        size = min(size, a.capacity)
        # Inside the target, or in one of the three target-sized spans
        # after it; either way the I/O does not cross a multiple of the
        # capacity, so folding never cuts it.
        start = rng.randrange(0, (a.capacity - size) // 4096 + 1) * 4096
        beyond = rng.random() * 100 < a.beyond
        if beyond:
            start += rng.randrange(1, 4) * a.capacity
        unaligned = rng.random() * 100 < a.unaligned
        if unaligned:
            # Within the same 512-byte blocks' bounds: 1..511 bytes in, and
            # a length that ends inside the last block.
            skew = rng.randrange(1, SECTOR)
            start += skew
            size -= skew + rng.randrange(0, SECTOR - 1)
        flush = a.flush_every and i % a.flush_every == a.flush_every - 1
        ios.append({"t": t, "op": op, "offset": start, "length": size,
                    "beyond": beyond, "unaligned": unaligned, "flush": bool(flush)})
    return ios


def write_iolog(a, ios, version):
    name = a.file
    lines = [f"fio version {version} iolog"]
    stamp = (lambda t: f"{t} ") if version == 3 else (lambda t: "")
    first = ios[0]["t"]
    lines.append(f"{stamp(first)}{name} add")
    lines.append(f"{stamp(first)}{name} open")
    if a.other_file:
        lines.append(f"{stamp(first)}{a.other_file} add")
        lines.append(f"{stamp(first)}{a.other_file} open")
    last_ms = 0
    for n, io in enumerate(ios):
        if version == 2:
            ms = io["t"] // 1000
            if ms > last_ms:
                lines.append(f"{name} wait {ms} 0")
                last_ms = ms
        lines.append(f"{stamp(io['t'])}{name} {io['op']} {io['offset']} {io['length']}")
        if io["flush"]:
            lines.append(f"{stamp(io['t'])}{name} sync 0 0")
        if a.other_file and n % 10 == 0:
            lines.append(f"{stamp(io['t'])}{a.other_file} read 0 4096")
    end = ios[-1]["t"]
    lines.append(f"{stamp(end)}{name} close")
    return "\n".join(lines) + "\n"


def write_blkparse(a, ios):
    rwbs = {"read": "R", "write": "WS", "trim": "D"}
    events = []  # (time_us, order, device, action, rwbs, tail)
    for n, io in enumerate(ios):
        sector = io["offset"] // SECTOR
        end = (io["offset"] + io["length"] + SECTOR - 1) // SECTOR
        count = end - sector
        r = rwbs[io["op"]]
        t = io["t"]
        events.append((t, 0, a.device, "Q", r, f"{sector} + {count} [fio]"))
        events.append((t, 1, a.device, "G", r, f"{sector} + {count} [fio]"))
        events.append((t + 1, 2, a.device, "D", r, f"{sector} + {count} [fio]"))
        events.append((t + 40, 3, a.device, "C", r, f"{sector} + {count} [0]"))
        if io["flush"]:
            events.append((t + 1, 4, a.device, "Q", "FN", "[kworker/0:1H]"))
            events.append((t + 2, 5, a.device, "D", "FN", "[kworker/0:1H]"))
        if a.other_device and n % 10 == 0:
            events.append((t, 6, a.other_device, "D", "R", "0 + 8 [fio]"))
        if n % 100 == 0:
            events.append((t, 7, a.device, "P", "N", "[fio]"))
            events.append((t, 8, a.device, "m", "N", "cfq schedule dispatch"))
    events.sort(key=lambda e: (e[0], e[1]))
    zero = ios[0]["t"] - a.start_us
    out = []
    for seq, (t, _, dev, act, r, tail) in enumerate(events, 1):
        us = t - zero
        major, minor = dev.split(",")
        out.append(f"{int(major):3d},{int(minor):<3d} {seq % 4:2d} {seq:8d} "
                   f"{us // 1_000_000:5d}.{us % 1_000_000 * 1000:09d} {4242:5d} "
                   f"{act:>2s} {r:>3s} {tail}")
    out.append("")
    out.append(f"CPU0 ({a.device}):")
    out.append(f" Reads Queued:    {sum(1 for i in ios if i['op'] == 'read'):11d}")
    out.append(f"Total ({a.device}):")
    out.append("Throughput (R/W): 0KiB/s / 0KiB/s")
    out.append(f"Events ({a.device}): {len(events)} entries")
    return "\n".join(out) + "\n"


def recorded(a, io):
    """The I/O's offset and length as the trace holds them: blkparse has
    whole 512-byte sectors."""
    if a.format != "blkparse":
        return io["offset"], io["length"]
    begin = io["offset"] // SECTOR * SECTOR
    end = (io["offset"] + io["length"] + SECTOR - 1) // SECTOR * SECTOR
    return begin, end - begin


def summary(a, ios):
    s = {"ios": len(ios), "flushes": sum(1 for i in ios if i["flush"]),
         "folded": 0, "aligned": 0, "split": 0,
         "span_seconds": (ios[-1]["t"] - ios[0]["t"]) / 1e6, "mapped": []}
    for op in ("read", "write", "trim"):
        s[op + "_ios"] = s[op + "_pieces"] = s[op + "_bytes"] = 0
    for io in ios:
        offset, length = recorded(a, io)
        begin = offset // a.lbs * a.lbs
        end = (offset + length + a.lbs - 1) // a.lbs * a.lbs
        op = io["op"]
        pieces = (end - begin + MAX_IO - 1) // MAX_IO
        s[op + "_ios"] += 1
        s[op + "_pieces"] += pieces
        s[op + "_bytes"] += end - begin
        s["folded"] += end > a.capacity
        s["aligned"] += begin != offset or end != offset + length
        s["split"] += pieces > 1
        s["mapped"].append([op, begin % a.capacity, end - begin])
    return s


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--format", required=True, choices=["iolog2", "iolog3", "blkparse"])
    p.add_argument("--out", required=True)
    p.add_argument("--ios", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--capacity", type=int, default=8 << 20)
    p.add_argument("--beyond", type=float, default=10, help="percent of I/Os past the capacity")
    p.add_argument("--unaligned", type=float, default=5, help="percent not in whole 512 B")
    p.add_argument("--mix", default="60,30,10", help="read,write,trim weights")
    p.add_argument("--think-us", type=float, default=200, help="mean gap between I/Os")
    p.add_argument("--idle-every", type=int, default=0, help="an idle every N I/Os")
    p.add_argument("--idle-ms", type=int, default=20)
    p.add_argument("--flush-every", type=int, default=0, help="a flush after every Nth I/O")
    p.add_argument("--max-size", type=int, default=3 << 20)
    p.add_argument("--file", default="/dev/nvme0n1", help="iolog: the file name")
    p.add_argument("--other-file", default="", help="iolog: a second file, a read every 10 I/Os")
    p.add_argument("--device", default="259,0", help="blkparse: the device")
    p.add_argument("--other-device", default="", help="blkparse: a second device")
    p.add_argument("--start-us", type=int, default=1000)
    p.add_argument("--summary", default="")
    p.add_argument("--lbs", type=int, default=512, help="--summary: the target's logical block size")
    a = p.parse_args()
    if a.ios < 1:
        p.error("--ios must be at least 1")
    ios = workload(a)
    if a.format == "blkparse":
        text = write_blkparse(a, ios)
    else:
        text = write_iolog(a, ios, 2 if a.format == "iolog2" else 3)
    with open(a.out, "w") as f:
        f.write(text)
    if a.summary:
        with open(a.summary, "w") as f:
            json.dump(summary(a, ios), f)


if __name__ == "__main__":
    main()
