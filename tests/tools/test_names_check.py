#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests follow the sources: every non-test source file NAME.cc under
config/, probes/, aging/ and exporter/ has a test named after its unit,
NAME_test.cc or NAME_test.sh anywhere under tests/, or named after the
unit it is a part of: a prefix of NAME cut at an underscore
(drive_report_fill.cc is part of the report, drive_report_test.cc; the
loader's config_phases.cc of config_test.cc).

A unit tested only through something larger (the daemon through the real
binary) is listed in the exceptions file with the test that covers it, one
"PATH TEST" line each ('#' starts a comment). Each TEST must exist, and an
exception whose source gained a test of its own must go, so the list
shrinks as tests follow.

  tests/tools/test_names_check.py SOURCE_DIR EXCEPTIONS
  tests/tools/test_names_check.py --self-test

The checker first runs on a planted tree (an untested unit, a part of a
tested unit, a listed exception, a stale exception, a missing covering
test), each of which it must judge as it should.
"""
import os
import sys
import tempfile

FOLDERS = ('config', 'probes', 'aging', 'exporter')


def units(root):
    out = []
    for folder in FOLDERS:
        for d, _, files in os.walk(os.path.join(root, folder)):
            out += [os.path.relpath(os.path.join(d, f), root)
                    for f in files if f.endswith('.cc')]
    return sorted(out)


def test_names(root):
    names = set()
    for d, _, files in os.walk(os.path.join(root, 'tests')):
        for f in files:
            for suffix in ('_test.cc', '_test.sh'):
                if f.endswith(suffix):
                    names.add(f[:-len(suffix)])
    return names


def covering_test(path, names):
    """The test named after the unit or the unit it is part of, or None."""
    stem = os.path.basename(path)[:-len('.cc')]
    while True:
        if stem in names:
            return stem
        if '_' not in stem:
            return None
        stem = stem.rsplit('_', 1)[0]


def read_exceptions(path):
    out = {}
    with open(path, encoding='utf-8') as f:
        for number, line in enumerate(f, 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                sys.exit('%s:%d: expected "PATH TEST", got %r' % (path, number, line))
            out[parts[0]] = (parts[1], number)
    return out


def check(root, exceptions_path):
    names = test_names(root)
    exceptions = read_exceptions(exceptions_path)
    problems = []
    for path in units(root):
        named = covering_test(path, names)
        listed = exceptions.pop(path, None)
        if named and listed:
            problems.append('%s:%d: %s has %s_test now: remove its exception'
                            % (exceptions_path, listed[1], path, named))
        elif not named and not listed:
            stem = os.path.basename(path)[:-len('.cc')]
            problems.append('%s: no test named after it (expected tests/.../%s_test.cc, or one '
                            'named after the unit it is part of)' % (path, stem))
        elif listed and not os.path.exists(os.path.join(root, listed[0])):
            problems.append('%s:%d: %s is covered by %s, which does not exist'
                            % (exceptions_path, listed[1], path, listed[0]))
    for path, (_, number) in exceptions.items():
        problems.append('%s:%d: %s is not a source any more: remove its exception'
                        % (exceptions_path, number, path))
    return problems


def self_test():
    def write(root, rel, text=''):
        full = os.path.join(root, rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, 'w', encoding='utf-8') as f:
            f.write(text)

    with tempfile.TemporaryDirectory() as root:
        write(root, 'aging/report/drive_report.cc')
        write(root, 'aging/report/drive_report_fill.cc')       # part of drive_report
        write(root, 'tests/unit/aging/drive_report_test.cc')
        write(root, 'probes/lonely.cc')                         # untested
        write(root, 'exporter/main.cc')                         # listed
        write(root, 'tests/run/run_test.sh')
        write(root, 'config/util/text.cc')                      # stale exception
        write(root, 'tests/unit/config/util/text_test.cc')
        write(root, 'exporter/daemon.cc')                       # covering test missing
        exceptions = os.path.join(root, 'exceptions.txt')
        write(root, 'exceptions.txt',
              'exporter/main.cc tests/run/run_test.sh\n'
              'config/util/text.cc tests/unit/config/util/text_test.cc\n'
              'exporter/daemon.cc tests/run/nothing_test.sh\n'
              'exporter/gone.cc tests/run/run_test.sh  # a source that was removed\n')
        got = check(root, exceptions)
        expected = [
            'config/util/text.cc has text_test now',
            'exporter/daemon.cc is covered by tests/run/nothing_test.sh, which does not exist',
            'probes/lonely.cc: no test named after it',
            'exporter/gone.cc is not a source any more',
        ]
        ok = len(got) == len(expected) and all(
            any(e in g for g in got) for e in expected)
        if not ok:
            print('FAIL: self-test: expected problems about\n  %s\ngot\n  %s'
                  % ('\n  '.join(expected), '\n  '.join(got)))
            return False
    print('ok: the checker reports each of 4 planted problems and no other')
    return True


def main(argv):
    if argv[1:] == ['--self-test']:
        return 0 if self_test() else 1
    if len(argv) != 3:
        print(__doc__)
        return 2
    if not self_test():
        return 1
    problems = check(argv[1], argv[2])
    if problems:
        print('FAIL: tests follow the sources:\n  ' + '\n  '.join(problems))
        return 1
    print('ok: every source has a test named after its unit, or a listed one')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
