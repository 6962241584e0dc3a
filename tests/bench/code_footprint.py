#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""How much distinct code a process ran, from a callgrind profile.

QEMU's TCG translates guest code before it runs it, and with address-space
randomisation every new process is translated afresh (QEMU 7.2 keys a
translation by the virtual address too). For a short process such as
`drivewatch collect --once` the guest time then follows the number of
distinct instructions executed far more than the number executed. This
prints both, per object and for the functions with the most distinct code.

  usage: tests/bench/code_footprint.py CALLGRIND_OUT [TOP]
  (a profile from valgrind --tool=callgrind --dump-instr=yes)
"""
import collections
import re
import sys


def parse(path):
    """Returns ({(object, function): set of addresses}, {(object, function): Ir})."""
    names = {"ob": {}, "fn": {}}
    current = {"ob": "?", "fn": "?"}
    code = collections.defaultdict(set)
    cost = collections.Counter()
    npos = 1  # fields before the event counts ("positions: instr line")
    last = 0
    after_calls = False  # the line after calls= is the call's inclusive cost
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if not line:
            continue
        if line.startswith("positions:"):
            npos = len(line.split()) - 1
            continue
        if line[0] in "0123456789+-*":
            fields = line.split()
            a = fields[0]
            if a.startswith("0x"):
                last = int(a, 16)
            elif a[0] in "+-":
                step = int(a[1:], 16) if a[1:].startswith("0x") else int(a[1:])
                last += step if a[0] == "+" else -step
            elif a != "*":
                last = int(a)
            if after_calls:
                after_calls = False
                continue
            key = (current["ob"], current["fn"])
            code[key].add(last)
            if len(fields) > npos and fields[npos].isdigit():
                cost[key] += int(fields[npos])
            continue
        key, _, value = line.partition("=")
        if key in ("ob", "fn", "cob", "cfn"):
            kind = key[-2:]
            m = re.match(r"\((\d+)\)\s*(.*)", value)
            if m:
                if m.group(2):
                    names[kind][m.group(1)] = m.group(2)
                value = names[kind].get(m.group(1), value)
            if key in ("ob", "fn"):
                current[kind] = value
        elif key == "calls":
            after_calls = True
    return code, cost


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    code, cost = parse(sys.argv[1])
    per_object = collections.defaultdict(set)
    object_cost = collections.Counter()
    for (ob, _), addresses in code.items():
        per_object[ob] |= addresses
    for (ob, _), n in cost.items():
        object_cost[ob] += n
    total = set().union(*per_object.values()) if per_object else set()
    print(f"{sys.argv[1]}: {len(total)} distinct instructions, "
          f"{sum(object_cost.values())} executed")
    for ob, addresses in sorted(per_object.items(), key=lambda x: -len(x[1]))[:8]:
        print(f"  {len(addresses):7d} distinct {object_cost[ob]:10d} executed  "
              f"{ob.rsplit('/', 1)[-1]}")
    for (ob, fn), addresses in sorted(code.items(), key=lambda x: -len(x[1]))[:top]:
        print(f"  {len(addresses):7d} distinct {cost[(ob, fn)]:10d} executed  "
              f"{ob.rsplit('/', 1)[-1]}: {fn[:90]}")


if __name__ == "__main__":
    main()
