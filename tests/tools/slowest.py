#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints the slowest tests of one or more ctest JUnit reports
(ctest --output-junit FILE), slowest first, with the stage each came from.

  tests/tools/slowest.py [-n N] LABEL=REPORT.xml ...

LABEL names the run (e.g. suite, sanitize); a report that is missing or
unreadable is skipped with a note, so a stage that did not run costs
nothing. scripts/test.sh prints the ten slowest at the end of CI.
"""
import os
import sys
import xml.etree.ElementTree as ET


def main(argv):
    n = 10
    if len(argv) >= 2 and argv[0] == '-n':
        n, argv = int(argv[1]), argv[2:]
    rows = []
    for arg in argv:
        label, _, path = arg.partition('=')
        if not os.path.exists(path):
            continue
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as e:
            print('slowest.py: %s: %s' % (path, e))
            continue
        for case in root.iter('testcase'):
            failed = case.find('failure') is not None or case.get('status') == 'fail'
            rows.append((float(case.get('time') or 0), label, case.get('name'),
                         'FAILED' if failed else ''))
    rows.sort(reverse=True)
    total = {}
    for t, label, _, _ in rows:
        total[label] = total.get(label, 0.0) + t
    print('%d slowest of %d tests (test time summed per run: %s)' % (
        min(n, len(rows)), len(rows),
        ', '.join('%s %.0f s' % kv for kv in sorted(total.items())) or 'none'))
    for t, label, name, failed in rows[:n]:
        print('  %7.1f s  %-9s %s %s' % (t, label, name, failed))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
