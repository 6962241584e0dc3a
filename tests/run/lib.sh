# SPDX-License-Identifier: Apache-2.0
# Sourced by the tests in tests/run/ after `set -euo pipefail`:
#   work     a fresh directory under /var/tmp (O_DIRECT works there; /tmp may
#            be tmpfs), removed at exit
#   pid      set it to the drivewatch under test; killed at exit if alive
#   on_exit  define it before sourcing for more clean-up (unmount...), run
#            first at exit
#   fail MSG / pass MSG
work=$(mktemp -d "/var/tmp/dw-$(basename "$0" .sh).XXXXXX")
pid=""
dw_run_test_cleanup() {
  if declare -F on_exit >/dev/null; then on_exit || true; fi
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
  rm -rf "$work"
}
trap dw_run_test_cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }
