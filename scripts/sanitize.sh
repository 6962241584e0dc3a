#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds drivewatch and its tests with AddressSanitizer (+ LeakSanitizer)
# and UndefinedBehaviorSanitizer into ./build-asan (or $DW_ASAN_BUILD_DIR;
# clang, the same tree as the fuzz targets: scripts/asan_tree.sh), and runs
# there the tests labelled "sanitize": every GoogleTest case (unit, golden,
# integration) and the shell tests that drive code of ours no GoogleTest
# case reaches. tests/CMakeLists.txt says, next to each test, why it is or
# is not one; in short, the sanitizers cannot find anything in tests that
# run no code of ours (rules, dashboards, licences, layering, the unit file)
# or only code other sanitized tests already run (the SIGKILL and resume
# scenarios, the Chromium renderings, the man page), nor in the QEMU
# scenarios (the guest binary is not this build) and the packaging test;
# those run in the main build's suite only. Any sanitizer report fails the
# run, also one from a daemon a shell test stops without looking at its
# exit status: reports go to files under $build/sanitizer-reports, printed
# at the end.
#
#   scripts/sanitize.sh [--build | --test] [extra ctest arguments]
#
# --build only builds, --test only runs the tests (scripts/test.sh times the
# two apart); the default does both. DW_TEST_JOBS: tests run at once
# (default: nproc). Integration tests need root and loop devices, as in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=asan_tree.sh
source scripts/asan_tree.sh
build=$(dw_asan_build_dir)
step=all
case ${1:-} in
  --build) step=build; shift ;;
  --test) step=test; shift ;;
esac

if [[ $step != test ]]; then
  start=$(date +%s)
  dw_asan_tree
  echo "sanitize.sh: build took $(($(date +%s) - start)) s"
fi
[[ $step != build ]] || exit 0

# abort_on_error: a report ends the process with SIGABRT, which no test
# harness mistakes for success. The suppression-free defaults are on
# purpose: a report here is a bug to fix, not to silence. log_path: the
# shell tests run daemons in the background and stop them with SIGTERM
# without checking how they exited, so a report at exit (LeakSanitizer's)
# would go unseen on their stderr; in a file (name.exe.pid) it is not.
reports=$(realpath "$build")/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:log_path=$reports/asan:log_exe_name=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$reports/ubsan:log_exe_name=1
tests_start=$(date +%s)
status=0
ctest --test-dir "$build" --output-on-failure --timeout 900 -j"${DW_TEST_JOBS:-$(nproc)}" \
  -L '^sanitize$' --output-junit "$(realpath "$build")/junit-sanitize.xml" "$@" || status=$?
echo "sanitize.sh: tests took $(($(date +%s) - tests_start)) s (exit $status)"
if compgen -G "$reports/*" >/dev/null; then
  for f in "$reports"/*; do
    echo "=== sanitizer report: $f"
    cat "$f"
  done
  echo "sanitize.sh: sanitizer reports in $reports" >&2
  ((status != 0)) || status=1
fi
exit $status
