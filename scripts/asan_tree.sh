# SPDX-License-Identifier: Apache-2.0
# Sourced by scripts/sanitize.sh and scripts/fuzz.sh: the one build that
# both use, in ./build-asan (or $DW_ASAN_BUILD_DIR). clang, AddressSanitizer
# (+ LeakSanitizer) and UndefinedBehaviorSanitizer on everything; the
# libraries (dw_*) also carry libFuzzer's coverage instrumentation
# (-fsanitize=fuzzer-no-link, tests/fuzz/CMakeLists.txt), so the fuzz targets
# link the very objects the sanitized tests run, and no third build is made.
# The tests and the daemon link the same libraries without libFuzzer: the
# sanitizer runtime defines the coverage callbacks, doing nothing.
#
#   dw_asan_tree [cmake --build arguments...]   configure (if needed) and build
#
# -O1 rather than RelWithDebInfo's -O2: less compile time with the
# sanitizers, and neither the tests nor the fuzzers are bound by the code's
# speed. -gline-tables-only: the sanitizers' stack traces need file and
# line, not variables; full -g made every object several times larger and
# its compile slower. No -DNDEBUG: asserts are on, a failed one is a finding.
# The benchmarks are not built here: they are not tests, and the main build
# (scripts/build.sh) compiles them.
dw_asan_build_dir() { echo "${DW_ASAN_BUILD_DIR:-build-asan}"; }

dw_asan_tree() {
  local build cache
  build=$(dw_asan_build_dir)
  # shellcheck source=ccache.sh
  source scripts/ccache.sh
  dw_ccache "$PWD"
  cache=$build/CMakeCache.txt
  if [[ -f $cache ]] && ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang' "$cache"; then
    # A tree from before the sanitizer and fuzzing builds were one (GCC):
    # CMake cannot change a tree's compiler.
    echo "asan_tree.sh: $build was configured with $(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$cache"), not clang; remove it (rm -rf $build) and run again" >&2
    return 2
  fi
  local san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja "${DW_CCACHE_ARGS[@]}" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DCMAKE_CXX_FLAGS="$san" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DDRIVEWATCH_BUILD_TESTS=ON -DDRIVEWATCH_BUILD_BENCHMARKS=OFF -DDRIVEWATCH_FUZZ=ON >/dev/null
  cmake --build "$build" -j"$(nproc)" "$@"
}
