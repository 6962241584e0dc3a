#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks of the "latency" VM scenario that need /metrics at a fine time
grain (stdlib only).

  check.py value URL NAME LABELS        one series' value (LABELS: k=v,k=v,
                                        a subset of the series' labels)
  check.py rate URL NAME LABELS SECONDS achieved rate of a counter

`rate` polls /metrics every 0.1 s and notes the host's clock whenever the
value changes. drivewatch publishes the probe's snapshot every 5 s, so the
rate is taken between the first and the last change seen (whole publish
periods), not over the polling span: that would be off by up to 5 s.
Prints "rate=R delta=N span=S changes=K"."""
import re
import sys
import time
import urllib.request

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def fetch(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def value(text, name, want):
    for line in text.splitlines():
        m = LINE.match(line)
        if not m or m.group(1) != name:
            continue
        labels = dict(LABEL.findall(m.group(3) or ''))
        if all(labels.get(k) == v for k, v in want.items()):
            return float(m.group(4))
    return None


def parse_labels(arg):
    return dict(kv.split('=', 1) for kv in arg.split(',') if kv)


def main():
    cmd, url, name, labels = sys.argv[1:5]
    want = parse_labels(labels)
    if cmd == 'value':
        v = value(fetch(url), name, want)
        print('' if v is None else repr(v))
        return 0
    seconds = float(sys.argv[5])
    end = time.monotonic() + seconds
    last = None
    changes = []  # (host time, value)
    while time.monotonic() < end:
        try:
            v = value(fetch(url), name, want)
        except OSError:
            v = None
        now = time.monotonic()
        if v is not None and v != last:
            if last is not None:
                changes.append((now, v))
            last = v
        time.sleep(0.1)
    if len(changes) < 2:
        print(f'rate=nan delta=0 span=0 changes={len(changes)}')
        return 1
    (t0, v0), (t1, v1) = changes[0], changes[-1]
    print(f'rate={(v1 - v0) / (t1 - t0):.3f} delta={v1 - v0:.0f} '
          f'span={t1 - t0:.2f} changes={len(changes)}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
