#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Dashboard lint: the shipped Grafana dashboards are valid, use the
# datasource variable everywhere, read only metrics listed in docs/metrics.md
# (and recording rules defined in dashboards/rules/), and every PromQL
# expression parses in a real Prometheus server.
#   usage: dashboard_lint_test.sh SOURCE_DIR
#   env:   PROMETHEUS (default: prometheus on PATH), PYTHON (default: python3)
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: $0 SOURCE_DIR" >&2
  exit 2
fi
src=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
python=${PYTHON:-python3}
prometheus=${PROMETHEUS:-prometheus}
command -v "$python" >/dev/null || { echo "FAIL: $python not found" >&2; exit 1; }
command -v "$prometheus" >/dev/null || { echo "FAIL: $prometheus not found (Debian package prometheus)" >&2; exit 1; }
exec "$python" "$here/lint_dashboards.py" --prometheus "$prometheus" "$src"
