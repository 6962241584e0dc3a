#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds drivewatch and its tests with AddressSanitizer (+ LeakSanitizer)
# and UndefinedBehaviorSanitizer into ./build-asan (or $DW_ASAN_BUILD_DIR),
# and runs the unit, golden, integration and run tests there. Left out:
# the QEMU tests (vm_*: minutes of TCG guest each, and the guest binary is
# not this build), the benchmarks (not tests), package_test (it builds
# the .deb in a tree of its own, without the sanitizers) and scrape_load
# (below). Any sanitizer report fails the run, also one from a daemon a
# shell test stops without looking at its exit status: reports go to files
# under $build/sanitizer-reports, printed at the end.
#
#   scripts/sanitize.sh [extra ctest arguments]
#
# CC/CXX choose the compiler (default: the system's cc/c++, GCC on Debian);
# clang works too. Integration tests need root and loop devices, as in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${DW_ASAN_BUILD_DIR:-build-asan}
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"

start=$(date +%s)
source scripts/ccache.sh
dw_ccache "$PWD"
# -O1 rather than RelWithDebInfo's -O2: a third less compile time with the
# sanitizers, and the tests are not CPU-bound. No -DNDEBUG: asserts on, as
# in the fuzzing build.
cmake -S . -B "$build" -G Ninja "${DW_CCACHE_ARGS[@]}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DDRIVEWATCH_BUILD_TESTS=ON \
  -DCMAKE_CXX_FLAGS="$san" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build "$build" -j"$(nproc)"
built=$(date +%s)
echo "sanitize.sh: build took $((built - start)) s"

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
status=0
# scrape_load: its pass criterion is RSS growth <= 1 MiB under load, which
# ASan's allocator (quarantine of freed memory, redzones, per-thread
# caches) does not keep: ~350 MiB RSS and several MiB of growth with no
# leak. Its zero-errors half is covered by the normal build's run.
ctest --test-dir "$build" --output-on-failure --timeout 900 \
  -E '^vm_|bench|^package_test$|^scrape_load$' "$@" || status=$?
echo "sanitize.sh: tests took $(( $(date +%s) - built )) s (exit $status)"
if compgen -G "$reports/*" >/dev/null; then
  for f in "$reports"/*; do
    echo "=== sanitizer report: $f"
    cat "$f"
  done
  echo "sanitize.sh: sanitizer reports in $reports" >&2
  ((status != 0)) || status=1
fi
exit $status
