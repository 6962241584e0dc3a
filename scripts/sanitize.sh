#!/usr/bin/env bash
# Builds drivewatch and its tests with AddressSanitizer (+ LeakSanitizer)
# and UndefinedBehaviorSanitizer into ./build-asan (or $DW_ASAN_BUILD_DIR),
# and runs the unit, golden, integration and run tests there. Left out:
# the QEMU tests (vm_*: minutes of TCG guest each, and the guest binary is
# not this build), the benchmarks (not tests) and package_test (it builds
# the .deb in a tree of its own, without the sanitizers). The first
# sanitizer report fails the test that triggered it.
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
cmake -S . -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDRIVEWATCH_BUILD_TESTS=ON \
  -DCMAKE_CXX_FLAGS="$san" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build "$build" -j"$(nproc)"
built=$(date +%s)
echo "sanitize.sh: build took $((built - start)) s"

# abort_on_error: a report ends the process with SIGABRT, which no test
# harness mistakes for success. The suppression-free defaults are on
# purpose: a report here is a bug to fix, not to silence.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
ctest --test-dir "$build" --output-on-failure --timeout 900 \
  -E '^vm_|bench|^package_test$' "$@" || status=$?
echo "sanitize.sh: tests took $(( $(date +%s) - built )) s (exit $status)"
exit $status
