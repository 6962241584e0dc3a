#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets (tests/fuzz/) in the sanitizer build's tree
# (./build-asan or $DW_ASAN_BUILD_DIR: clang, ASan and UBSan, the objects
# scripts/sanitize.sh tests; scripts/asan_tree.sh), and runs each for a
# bounded time on a copy of its seed corpus (tests/fuzz/corpus/<target>/),
# so the committed corpus never grows by itself. Prints executions and
# coverage per target as a table.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET=30]
#
# Environment:
#   DW_FUZZ_TARGETS  space-separated subset to run (default: all)
#   DW_FUZZ_JOBS     targets run at once (default: nproc)
#   DW_FUZZ_BUILD_DIR  the tree (default: the sanitizer build's)
#   DW_FUZZ_PREBUILT  1: run the binaries already in BUILD_DIR, build nothing
#   DW_FUZZ_RUN_DIR    where corpora, logs and reproducers go (default: BUILD_DIR/fuzz-run)
#
# Exits non-zero when any target finds a crash, leak, timeout or UB report,
# and names the reproducer libFuzzer saved. Reproduce with
#   build-asan/tests/fuzz/<target>_fuzz <reproducer>
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
# shellcheck source=asan_tree.sh
source scripts/asan_tree.sh
build=${DW_FUZZ_BUILD_DIR:-$(dw_asan_build_dir)}
jobs=${DW_FUZZ_JOBS:-$(nproc)}

# -max_len per target: the largest well-formed input plus room to grow
# (a log page, an Identify buffer, a config file...).
declare -A max_len=(
  [config]=16384            # config/drivewatch.toml is ~14 KiB
  [smart_log]=1024          # 512-byte log page
  [identify_controller]=8192  # 4096-byte Identify data
  [identify_namespace]=8192
  [apst]=1024               # dword 0 + 256-byte table
  [error_log]=8192          # 64-byte entries, up to 256 of them in practice
  [persistent_event_log]=8192
  [self_test_log]=1024      # 564-byte log page
  [ocp_smart_log]=8192      # 512-byte log C0h, 4096-byte UUID List
  [uevent]=2048             # the kernel's UEVENT_BUFFER_SIZE
  [web_config]=4096
  [json]=4096
  [probe_state]=2048
  [history]=8192
  [report]=20480            # a history of one record of each kind is ~16 KiB
  [retention_study]=32768   # a verified study is ~20 KiB
  [retention_block]=8192    # 512- and 4096-byte blocks
  [block_trace]=16384       # a few hundred trace lines; longer lines than the 4 KiB limit
)
all_targets="config smart_log identify_controller identify_namespace apst error_log
  persistent_event_log self_test_log ocp_smart_log uevent web_config json probe_state history
  report retention_study retention_block block_trace"
targets=${DW_FUZZ_TARGETS:-$all_targets}

start=$(date +%s)
for t in $targets; do
  [[ -n "${max_len[$t]:-}" ]] || { echo "fuzz.sh: unknown target $t" >&2; exit 2; }
done
if [[ "${DW_FUZZ_PREBUILT:-0}" != 1 ]]; then
  # After scripts/sanitize.sh --build, nothing is left to build here.
  DW_ASAN_BUILD_DIR=$build dw_asan_tree --target $(printf '%s_fuzz ' $targets)
fi
echo "fuzz.sh: build took $(( $(date +%s) - start )) s"

run_dir=${DW_FUZZ_RUN_DIR:-$build/fuzz-run}
rm -rf "$run_dir"
mkdir -p "$run_dir"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

run_one() {
  local t=$1 dir="$run_dir/$1"
  mkdir -p "$dir/corpus"
  cp tests/fuzz/corpus/"$t"/* "$dir/corpus/"
  # -timeout: an input that takes 25 s under ASan is a hang worth a report.
  local rc=0
  "$build/tests/fuzz/${t}_fuzz" "$dir/corpus" \
    -max_total_time="$seconds" -max_len="${max_len[$t]}" -timeout=25 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$dir/" \
    >"$dir/log" 2>&1 || rc=$?
  echo "$rc" >"$dir/rc"
}

run_start=$(date +%s)
for t in $targets; do
  while (( $(jobs -rp | wc -l) >= jobs )); do wait -n || true; done
  run_one "$t" &
done
wait

failed=0
printf '%-22s %6s %12s %9s %7s %7s %7s  %s\n' target rc execs exec/s cov ft corpus reproducer
for t in $targets; do
  dir="$run_dir/$t"
  rc=$(cat "$dir/rc")
  stat_of() { sed -n "s/^stat::$1: *//p" "$dir/log" | tail -1; }
  # The last status line, "#N DONE cov: C ft: F corp: U/S ...".
  last=$(grep -E '^#[0-9]+.*cov: ' "$dir/log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
  repro=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$dir/log" | tail -1)
  printf '%-22s %6s %12s %9s %7s %7s %7s  %s\n' "$t" "$rc" "$(stat_of number_of_executed_units)" \
    "$(stat_of average_exec_per_sec)" "${cov:--}" "${ft:--}" "${corp:--}" "${repro:-}"
  if [[ "$rc" != 0 ]]; then
    failed=1
    echo "--- $t failed (exit $rc); log: $dir/log" >&2
    grep -E 'ERROR: |runtime error|SUMMARY|==ERROR|DW_FUZZ|\.cc:[0-9]+: ' "$dir/log" | head -20 >&2 || true
  fi
done
echo "fuzz.sh: $seconds s per target, $jobs at a time: $(( $(date +%s) - run_start )) s of fuzzing, $(( $(date +%s) - start )) s in all"
exit $failed
