#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README command 2: install what is needed, build, and run every test:
#   1. suite: the main build (scripts/build.sh) and its ctest suite (unit,
#      golden, integration, run, load, the QEMU end-to-end scenarios,
#      packaging), DW_TEST_JOBS tests at a time (default: nproc);
#   2. sanitize: the ASan+UBSan build (clang, scripts/sanitize.sh --build)
#      and the tests labelled "sanitize" in it (--test). With the suite in
#      the same run, that build starts when the suite does, beside it, at
#      SCHED_IDLE CPU and idle I/O priority: the suite leaves ~40 % of the
#      two CPUs idle (it waits on one QEMU guest at a time and on tests
#      that run alone), and an idle-class process gets a CPU only when no
#      test wants it. Its stage time is then what it took after the suite;
#      DW_TEST_OVERLAP=0 builds it after the suite instead;
#   3. fuzz: every libFuzzer target, built in that same tree, for
#      DW_FUZZ_SECONDS (default 30) on its seed corpus (scripts/fuzz.sh).
# Each stage runs even if an earlier one failed; the exit status is the
# first failure's. DW_TEST_STAGES picks stages (default "suite sanitize
# fuzz"); extra arguments go to the suite's ctest. At the end: each step's
# wall time, the ten slowest tests, and what failed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests
stages=${DW_TEST_STAGES:-suite sanitize fuzz}
build=${DW_BUILD_DIR:-build}
asan=${DW_ASAN_BUILD_DIR:-build-asan}
jobs=${DW_TEST_JOBS:-$(nproc)}
source scripts/python.sh
started=$(mktemp)  # ctest's reports newer than this are this run's
trap 'rm -rf "$started" $DW_PYTHON_DIR ${asan_log:-}; [[ -z ${asan_pid:-} ]] || kill "$asan_pid" 2>/dev/null || true' EXIT
t0=$(date +%s)
status=0
summary=()
run_stage() {
  local name=$1 start rc=0
  shift
  start=$(date +%s)
  echo "=== test.sh: $name ($(date +%T))"
  "$@" || rc=$?
  summary+=("$(printf '%-10s exit %-3s %5s s' "$name" "$rc" "$(($(date +%s) - start))")")
  if ((rc != 0 && status == 0)); then status=$rc; fi
}
asan_pid="" asan_log="" asan_t0=""
# asan_build_wait: the ASan build started beside the suite, waited for;
# its output, and its exit status.
asan_build_wait() {
  local rc=0
  wait "$asan_pid" || rc=$?
  cat "$asan_log"
  echo "test.sh: the ASan build ran $(($(date +%s) - asan_t0)) s from the suite's start (exit $rc)"
  return "$rc"
}
for stage in $stages; do
  case $stage in
    suite)
      run_stage build scripts/build.sh
      if [[ " $stages " =~ \ suite\ (.*\ )?sanitize\  && ${DW_TEST_OVERLAP:-1} != 0 ]]; then
        asan_log=$(mktemp)
        asan_t0=$(date +%s)
        chrt --idle 0 ionice -c 3 scripts/sanitize.sh --build >"$asan_log" 2>&1 &
        asan_pid=$!
        echo "=== test.sh: asan-build beside the suite ($(date +%T), pid $asan_pid, SCHED_IDLE)"
      fi
      # The QEMU scenarios take one lock (one TCG guest at a time); the
      # timing-bound tests run alone (tests/CMakeLists.txt). The tests run
      # 5 niceness steps down, and the scenarios take DW_VM_NICE back
      # (tests/vm/lib.sh vm_priority), so the guest is not starved by them.
      run_stage suite env DW_VM_NICE="$(nice)" nice -n 5 \
        ctest --test-dir "$build" --output-on-failure --timeout 900 -j"$jobs" \
        --output-junit "$(realpath "$build")/junit-suite.xml" "$@" ;;
    sanitize)
      if [[ -n $asan_pid ]]; then
        run_stage asan-build asan_build_wait
      else
        run_stage asan-build scripts/sanitize.sh --build
      fi
      run_stage sanitize scripts/sanitize.sh --test ;;
    fuzz) run_stage fuzz scripts/fuzz.sh "${DW_FUZZ_SECONDS:-30}" ;;
    *) echo "test.sh: unknown stage '$stage' in DW_TEST_STAGES (expected suite, sanitize, fuzz)" >&2; exit 2 ;;
  esac
done
echo "=== test.sh: summary"
printf '%s\n' "${summary[@]}"
printf '%-10s %9s %5s s\n' total "" "$(($(date +%s) - t0))"
reports=()
for r in "suite=$build/junit-suite.xml" "sanitize=$asan/junit-sanitize.xml"; do
  [[ -f ${r#*=} && ${r#*=} -nt $started ]] && reports+=("$r")
done
((${#reports[@]} == 0)) || python3 tests/tools/slowest.py -n 10 "${reports[@]}" || true
# Only the end of a long log may be kept: name what failed here too.
for dir in "$build" "$asan"; do
  failed=$dir/Testing/Temporary/LastTestsFailed.log
  if [[ -s $failed && $failed -nt $started ]]; then
    echo "failed in $dir (ctest number:name):"
    sed 's/^/  /' "$failed"
  fi
done
exit $status
