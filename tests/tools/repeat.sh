#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs a chosen set of ctest tests N times in a row and prints, per test,
# how many rounds it passed, which rounds it failed and its median time:
# the check that a test never fails by chance (20 of 20 for the tests
# labelled timing or race: tests/CMakeLists.txt).
#
#   tests/tools/repeat.sh [-n ROUNDS] [-d BUILD_DIR] [-o OUT_DIR] [-x] -- CTEST_ARGS...
#
#   -n ROUNDS    rounds (default 20)
#   -d BUILD_DIR the ctest tree (default ${DW_BUILD_DIR:-build})
#   -o OUT_DIR   where each round's JUnit report and the failed rounds' logs
#                go (default BUILD_DIR/repeat/<date-time>)
#   -x           stop at the first failed round (by default every round runs)
# CTEST_ARGS pick the tests and how they run, as for ctest itself, e.g.
#   tests/tools/repeat.sh -n 20 -- -L 'timing|race'
#   tests/tools/repeat.sh -n 20 -- -R '^vm_'
#   tests/tools/repeat.sh -n 20 -- -R '^(vm_unplug|http_hardening_test|scrape_load)$'
#   tests/tools/repeat.sh -n 5 -- -j2 -L timing
# Each round is one ctest run (so RESOURCE_LOCK and RUN_SERIAL hold within
# it); a failed round's ctest log is kept as OUT_DIR/round-K.log, and the
# VM scenarios' artefacts of that round as OUT_DIR/round-K-vm-out/.
# Exit status: 0 if every test passed every round, 1 otherwise.
set -euo pipefail
rounds=20 build=${DW_BUILD_DIR:-build} out= stop_first=0
while getopts n:d:o:x opt; do
  case $opt in
    n) rounds=$OPTARG ;;
    d) build=$OPTARG ;;
    o) out=$OPTARG ;;
    x) stop_first=1 ;;
    *) sed -n '3,23p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[[ ${1:-} == -- ]] && shift
(($# > 0)) || { echo "repeat.sh: name the tests (ctest arguments after --, e.g. -- -R '^vm_')" >&2; exit 2; }
[[ -f $build/CTestTestfile.cmake ]] || { echo "repeat.sh: $build is not a ctest tree" >&2; exit 2; }
source "$(dirname "$0")/../../scripts/python.sh"
trap 'rm -rf $DW_PYTHON_DIR' EXIT
out=${out:-$build/repeat/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(realpath "$out")
echo "repeat.sh: $rounds rounds of ctest $* in $build; reports in $out"

failed_any=0
for ((k = 1; k <= rounds; k++)); do
  start=$(date +%s)
  rc=0
  # As scripts/test.sh runs the suite: the QEMU scenarios 5 niceness steps
  # above the other tests (tests/vm/lib.sh vm_priority).
  DW_VM_NICE=$(nice) nice -n 5 ctest --test-dir "$build" --output-junit "$out/round-$k.xml" \
    --timeout 900 "$@" >"$out/round-$k.out" 2>&1 || rc=$?
  summary=$(grep -E 'tests passed|No tests were found' "$out/round-$k.out" | tail -n 1 || true)
  echo "round $k/$rounds: exit $rc in $(($(date +%s) - start)) s: ${summary:-see $out/round-$k.out}"
  if ((rc != 0)); then
    failed_any=1
    cp "$build/Testing/Temporary/LastTest.log" "$out/round-$k.log" 2>/dev/null || true
    [[ -d $build/tests/vm-out ]] && cp -a "$build/tests/vm-out" "$out/round-$k-vm-out" 2>/dev/null || true
    grep -E '^\s+[0-9]+ - ' "$out/round-$k.out" | sed 's/^/  failed: /' || true
    ((stop_first)) && break
  else
    rm -f "$out/round-$k.out"
  fi
done

python3 - "$out" <<'EOF'
import glob, os, re, statistics, sys
import xml.etree.ElementTree as ET
out = sys.argv[1]
stats = {}
rounds = sorted(glob.glob(os.path.join(out, 'round-*.xml')),
                key=lambda p: int(re.search(r'round-(\d+)\.xml$', p).group(1)))
for path in rounds:
    k = int(re.search(r'round-(\d+)\.xml$', path).group(1))
    try:
        cases = ET.parse(path).getroot().iter('testcase')
    except ET.ParseError as e:
        print('unreadable %s: %s' % (path, e))
        continue
    for case in cases:
        name = case.get('name')
        s = stats.setdefault(name, {'pass': 0, 'fail': [], 'skip': 0, 'times': []})
        status = case.get('status', '')
        if case.find('failure') is not None or case.find('error') is not None or status == 'fail':
            s['fail'].append(k)
        elif case.find('skipped') is not None or status in ('notrun', 'disabled'):
            s['skip'] += 1
        else:
            s['pass'] += 1
        s['times'].append(float(case.get('time') or 0))
n = len(rounds)
print('\n%-48s %9s %8s  %s' % ('test', 'passed', 'median s', 'failed in rounds'))
for name in sorted(stats, key=lambda x: (-len(stats[x]['fail']), x)):
    s = stats[name]
    runs = s['pass'] + len(s['fail'])
    print('%-48s %4d/%-4d %8.1f  %s%s' % (name, s['pass'], runs, statistics.median(s['times']),
                                       ' '.join(map(str, s['fail'])) or '-',
                                       '  (skipped %d)' % s['skip'] if s['skip'] else ''))
print('%d rounds, %d tests' % (n, len(stats)))
EOF
exit $failed_any
