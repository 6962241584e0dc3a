#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Host-side helpers of the "unplug" VM scenario (stdlib only).

  check.py watch URL OUT STOPFILE
      Scrapes URL (/metrics) every 0.2 s until STOPFILE exists, one JSON
      line per scrape in OUT: start time, duration, ok/error, and the
      values the scenario follows (see FOLLOW).
  check.py window OUT T0 T1
      Summary of the scrapes that started in [T0, T1]: count, failures,
      slowest and median time, and the first times drive_up went 0 and
      back to 1.
  check.py value URL NAME LABELS
      One series' value (LABELS: k=v,k=v, a subset of its labels); empty
      if absent. With NAME prefixed "sum:", the sum over matching series.
  check.py logscan LOG SERIAL CYCLE
      Classifies what the daemon logged about SERIAL in hot-plug cycle
      CYCLE (the lines after the drive came back for the CYCLE-1th time):
      prints one JSON object (see scan_log).
  check.py prom-min PROM_URL SELECTOR T0 T1
      min_over_time(SELECTOR) over [T0, T1] (Unix s) in Prometheus; empty
      when it has no sample there.
  check.py state TAR SERIALS
      Checks the state directory the daemon left (a tar): known-drives.tsv
      has its header and one 4-field line per serial of SERIALS
      (comma-separated), every *.state file has only known line kinds, no
      temporary file is left. Prints what it found; exit 1 on a problem.
"""
import json
import os
import re
import sys
import tarfile
import time
import urllib.request

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            yield m.group(1), dict(LABEL.findall(m.group(3) or '')), float(m.group(4))


def select(series, name, want):
    return [v for n, labels, v in series
            if n == name and all(labels.get(k) == x for k, x in want.items())]


def fetch(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


# --------------------------------------------------------------- watcher
# What each scrape records: key -> (metric, labels, aggregate).
FOLLOW = {
    'up0': ('drivewatch_drive_up', {'serial': 'DWSN0001'}, 'one'),
    'health0': ('drivewatch_probe_success', {'serial': 'DWSN0001', 'probe': 'health'}, 'one'),
    'count0': ('drivewatch_read_latency_seconds_count', {'serial': 'DWSN0001'}, 'sum'),
    'err0': ('drivewatch_read_errors_total', {'serial': 'DWSN0001'}, 'sum'),
    'tup0': ('drivewatch_read_latency_target_up', {'serial': 'DWSN0001'}, 'one'),
    'count1': ('drivewatch_read_latency_seconds_count', {'serial': 'DWSN0002'}, 'sum'),
    'err1': ('drivewatch_read_errors_total', {'serial': 'DWSN0002'}, 'sum'),
    'to1': ('drivewatch_read_timeouts_total', {'serial': 'DWSN0002'}, 'sum'),
    'drives_up': ('drivewatch_drives', {'state': 'up'}, 'one'),
}


def follow(text):
    series = list(parse(text))
    out = {}
    for key, (name, want, agg) in FOLLOW.items():
        vals = select(series, name, want)
        if not vals:
            out[key] = None
        elif agg == 'sum':
            out[key] = sum(vals)
        else:
            out[key] = vals[0]
    # Errors by name, for the record.
    out['errors0'] = {l.get('error', '?'): v for n, l, v in series
                      if n == 'drivewatch_read_errors_total' and l.get('serial') == 'DWSN0001'}
    return out


def cmd_watch(url, out, stopfile):
    deadline = time.monotonic() + 900
    with open(out, 'a', buffering=1) as f:
        while not os.path.exists(stopfile) and time.monotonic() < deadline:
            t0 = time.time()
            rec = {'t': t0}
            try:
                text = fetch(url, timeout=5)
                rec['ok'] = 1
                rec.update(follow(text))
            except Exception as e:  # noqa: BLE001 - any failure is a data point
                rec['ok'] = 0
                rec['error'] = str(e)[:200]
            rec['dur'] = time.time() - t0
            f.write(json.dumps(rec) + '\n')
            time.sleep(max(0.0, 0.2 - (time.time() - t0)))


def load(out):
    with open(out) as f:
        return [json.loads(l) for l in f if l.strip()]


def cmd_window(out, t0, t1):
    recs = [r for r in load(out) if float(t0) <= r['t'] <= float(t1)]
    fails = [r for r in recs if not r['ok']]
    slow = max((r['dur'] for r in recs), default=None)
    first0 = next((r['t'] for r in recs if r.get('up0') == 0), None)
    back1 = next((r['t'] for r in recs if first0 and r['t'] > first0 and r.get('up0') == 1), None)
    # The last values DWSN0001's read latency published before its series went.
    before = [r for r in recs if r.get('count0') is not None and (first0 is None or r['t'] < first0)]
    print(json.dumps({
        'n': len(recs), 'failures': len(fails), 'max_dur': slow,
        'median_dur': sorted(r['dur'] for r in recs)[len(recs) // 2] if recs else None,
        'first_error': fails[0]['error'] if fails else None,
        'drive_up0_at': first0, 'drive_up1_at': back1,
        'err0_before_down': before[-1]['errors0'] if before else None,
        'err1_max': max((r.get('err1') or 0 for r in recs), default=0),
        'to1_max': max((r.get('to1') or 0 for r in recs), default=0),
    }))


def cmd_value(url, name, labels):
    want = dict(kv.split('=', 1) for kv in labels.split(',') if kv)
    agg = 'one'
    if name.startswith('sum:'):
        agg, name = 'sum', name[4:]
    vals = select(list(parse(fetch(url))), name, want)
    if not vals:
        print('')
    else:
        print(repr(sum(vals) if agg == 'sum' else vals[0]))


# --------------------------------------------------------------- the log
HEALTH_FAIL = re.compile(r'probe (\S+) on drive serial=(\S+) \((\S+)\) failed: (.*) \(logged once')
READ_GONE = re.compile(r'read latency: (/dev/\S+): (\S+); reopening the target')
READ_CANNOT = re.compile(r'read latency: cannot read (\S+): (.*) \(logged once')


def scan_log(path, serial, cycle):
    """The lines of hot-plug cycle `cycle` (1-based): after the drive came
    back for the (cycle-1)th time. Returns what they show:
      vanished     the "vanished" line was logged
      probe_failures  [probe, device, message] of each failed admin probe
      smart_in_flight  the health or thermal probe failed at its SMART log
                   read (Get Log Page 02h) while its Identify Controller,
                   the run's first command, had succeeded: the controller
                   started going away between the two commands of one run
                   or while the log read was in the kernel
      admin_on_open_fd  a probe's admin command failed on the open
                   controller (an errno or NVMe status from the ioctl, not
                   a failed open of a vanished node)
      read_gone    [device, errno name] of each read latency "reopening"
      read_cannot  [device, message] of each failed reopen"""
    with open(path, errors='replace') as f:
        lines = f.read().splitlines()
    backs = [i for i, l in enumerate(lines) if 'drive serial=%s is back' % serial in l]
    start = backs[cycle - 2] + 1 if cycle >= 2 and len(backs) >= cycle - 1 else 0
    end = backs[cycle - 1] if len(backs) >= cycle else len(lines)
    # Read latency lines name the block device, not the serial: the
    # caller picks DWSN0001's namespace out of read_gone / read_cannot.
    out = {'cycle': cycle, 'vanished': False, 'probe_failures': [],
           'smart_in_flight': False, 'admin_on_open_fd': False,
           'read_gone': [], 'read_cannot': [], 'lines': end - start}
    for l in lines[start:end]:
        if 'drive serial=%s ' % serial in l and 'vanished' in l:
            out['vanished'] = True
        m = HEALTH_FAIL.search(l)
        if m and m.group(2) == serial:
            probe, dev, msg = m.group(1), m.group(3), m.group(4)
            out['probe_failures'].append([probe, dev, msg])
            if probe in ('health', 'thermal') and ': get log page 02h' in msg:
                out['smart_in_flight'] = True
            if ': open: ' not in msg:
                out['admin_on_open_fd'] = True
        m = READ_GONE.search(l)
        if m:
            out['read_gone'].append([m.group(1), m.group(2)])
        m = READ_CANNOT.search(l)
        if m:
            out['read_cannot'].append([m.group(1), m.group(2)])
    return out


def cmd_logscan(path, serial, cycle):
    print(json.dumps(scan_log(path, serial, int(cycle))))


# --------------------------------------------------------------- state
STATE_KINDS = {
    'error-log': {'highest', 'missed', 'count'},
    'self-test': {'entry', 'failures', 'started', 'attempted'},
}
KNOWN_HEADER = '# drivewatch known drives v1: serial\tkernel_name\tmodel\tfirmware'


def cmd_state(tar, serials):
    problems = []
    found = []
    with tarfile.open(tar) as t:
        members = {m.name.lstrip('./'): m for m in t.getmembers() if m.isfile()}
        for name in sorted(members):
            found.append(name)
            if name.endswith('.tmp') or '.tmp.' in name or name.startswith('.'):
                problems.append('temporary file left: ' + name)
        kd = members.get('known-drives.tsv')
        if kd is None:
            problems.append('no known-drives.tsv')
        else:
            text = t.extractfile(kd).read().decode()
            lines = text.splitlines()
            if not lines or lines[0] != KNOWN_HEADER:
                problems.append('known-drives.tsv header: %r' % (lines[:1],))
            rows = [l.split('\t') for l in lines[1:] if l and not l.startswith('#')]
            for r in rows:
                if len(r) != 4 or not r[0]:
                    problems.append('known-drives.tsv line %r' % (r,))
            got = sorted(r[0] for r in rows)
            if got != sorted(serials.split(',')):
                problems.append('known-drives.tsv serials %s, want %s' % (got, serials))
            found.append('known drives: ' + '; '.join('/'.join(r) for r in rows))
        for name, m in members.items():
            if not name.endswith('.state'):
                continue
            kind = next((k for k in STATE_KINDS if name.startswith(k + '-')), None)
            text = t.extractfile(m).read().decode(errors='replace')
            if kind is None:
                found.append('%s (%d lines, not checked)' % (name, len(text.splitlines())))
                continue
            for l in text.splitlines():
                w = l.split()
                if not w or w[0] not in STATE_KINDS[kind] or not all(
                        re.fullmatch(r'-?[0-9]+', x) for x in w[-1:]):
                    problems.append('%s: bad line %r' % (name, l))
    print(json.dumps({'files': found, 'problems': problems}))
    return 1 if problems else 0


def cmd_prom_min(url, expr, t0, t1):
    """min_over_time(EXPR) over [T0, T1] (Unix s), evaluated at T1."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
    import vmctl  # noqa: E402 - the harness' Prometheus client
    span = max(1, int(float(t1) - float(t0) + 0.999))
    v = vmctl.Prom(url).value('min_over_time(%s[%ds])' % (expr, span), at=float(t1))
    print('' if v is None else v)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    fn = {'watch': cmd_watch, 'window': cmd_window,
          'value': cmd_value, 'logscan': cmd_logscan, 'state': cmd_state,
          'prom-min': cmd_prom_min}[cmd]
    return fn(*args) or 0


if __name__ == '__main__':
    sys.exit(main())
