#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Validates the configuration examples in docs/examples (docs/fleet.md):
#   examples_test.sh SOURCE_DIR prometheus    promtool check config on
#       prometheus.yml, with its rule_files and file_sd paths pointed at the
#       repository's rules and example targets, and promtool check rules on
#       the threshold-override example;
#   examples_test.sh SOURCE_DIR alertmanager  amtool check-config on
#       alertmanager.yml; exits 77 (skipped) when amtool is not installed
#       (Debian: apt-get install prometheus-alertmanager).
set -eu
src=${1:?usage: examples_test.sh SOURCE_DIR prometheus|alertmanager}
what=${2:-prometheus}
ex="$src/docs/examples"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

case "$what" in
prometheus)
  command -v promtool >/dev/null || { echo "promtool not found"; exit 1; }
  mkdir -p "$tmp/rules"
  cp "$ex/drivewatch-thresholds.rules.yml" "$tmp/rules/"
  # The smtp password file the alertmanager example names is not needed here.
  sed -e "s|/usr/share/drivewatch/rules/|$src/dashboards/rules/|" \
      -e "s|/etc/prometheus/rules/|$tmp/rules/|" \
      -e "s|/etc/prometheus/targets/|$ex/targets/|" \
      "$ex/prometheus.yml" > "$tmp/prometheus.yml"
  # Every path must have been rewritten, or the check would pass vacuously.
  if grep -n '/usr/share/drivewatch\|/etc/prometheus' "$tmp/prometheus.yml" | grep -v '^[0-9]*: *#'; then
    echo "examples_test: a path in prometheus.yml was not rewritten"; exit 1
  fi
  out=$(promtool check config "$tmp/prometheus.yml" 2>&1) || { echo "$out"; exit 1; }
  echo "$out"
  # promtool only warns about a file_sd glob or rule glob matching nothing.
  if echo "$out" | grep -qi 'warning'; then
    echo "examples_test: promtool warned"; exit 1
  fi
  echo "$out" | grep -q 'drivewatch-alerts.rules.yml' || {
    echo "examples_test: the shipped rules were not checked"; exit 1; }
  promtool check rules "$ex/drivewatch-thresholds.rules.yml"
  ;;
alertmanager)
  if ! command -v amtool >/dev/null; then
    echo "amtool not found (apt-get install prometheus-alertmanager): skipped"
    exit 77
  fi
  amtool check-config "$ex/alertmanager.yml"
  ;;
*)
  echo "usage: examples_test.sh SOURCE_DIR prometheus|alertmanager"; exit 2 ;;
esac
