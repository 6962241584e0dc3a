#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README command 2: install what is needed, build, and run every test:
#   1. the main build's suite (unit, golden, integration, run, load, the
#      QEMU end-to-end scenarios, packaging);
#   2. the unit, golden, integration and run tests again under ASan+UBSan,
#      in a build of their own (scripts/sanitize.sh);
#   3. every libFuzzer target for DW_FUZZ_SECONDS (default 30) on its seed
#      corpus (scripts/fuzz.sh).
# Each stage runs even if an earlier one failed; the exit status is the
# first failure's. DW_TEST_STAGES picks stages (default "suite sanitize
# fuzz"); extra arguments go to the first stage's ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests
stages=${DW_TEST_STAGES:-suite sanitize fuzz}
started=$(mktemp)  # ctest's failure lists newer than this are this run's
trap 'rm -f "$started"' EXIT
status=0
summary=()
run_stage() {
  local name=$1 start rc=0
  shift
  start=$(date +%s)
  echo "=== test.sh: $name"
  "$@" || rc=$?
  summary+=("$(printf '%-9s exit %-3s %5s s' "$name" "$rc" "$(( $(date +%s) - start ))")")
  if (( rc != 0 && status == 0 )); then status=$rc; fi
}
for stage in $stages; do
  case $stage in
    suite)
      run_stage build scripts/build.sh
      run_stage suite ctest --test-dir "${DW_BUILD_DIR:-build}" --output-on-failure --timeout 900 "$@" ;;
    sanitize) run_stage sanitize scripts/sanitize.sh ;;
    fuzz) run_stage fuzz scripts/fuzz.sh "${DW_FUZZ_SECONDS:-30}" ;;
    *) echo "test.sh: unknown stage '$stage' in DW_TEST_STAGES (expected suite, sanitize, fuzz)" >&2; exit 2 ;;
  esac
done
echo "=== test.sh: summary"
printf '%s\n' "${summary[@]}"
# Only the end of a long log may be kept: name what failed here too.
for dir in "${DW_BUILD_DIR:-build}" "${DW_ASAN_BUILD_DIR:-build-asan}"; do
  failed=$dir/Testing/Temporary/LastTestsFailed.log
  if [[ -s $failed && $failed -nt $started ]]; then
    echo "failed in $dir (ctest number:name):"
    sed 's/^/  /' "$failed"
  fi
done
exit $status
