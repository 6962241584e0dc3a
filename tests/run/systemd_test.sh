#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The generated unit: installed by `cmake --install` with the binary and the
# example config, passes `systemd-analyze verify`, and its exposure score is
# printed for the README.
#   usage: systemd_test.sh BUILD_DIR
set -euo pipefail
build=$(realpath "$1")
root=$(mktemp -d /tmp/dw-install-test.XXXXXX)
trap 'rm -rf "$root"' EXIT

cmake --install "$build" --prefix "$root" >/dev/null
unit=$root/lib/systemd/system/drivewatch.service
for f in "$root/bin/drivewatch" "$unit" "$root/etc/drivewatch/drivewatch.toml" \
         "$root/share/drivewatch/rules/drivewatch-smartd.rules.yml"; do
  [[ -e $f ]] || { echo "FAIL: cmake --install did not install $f" >&2; exit 1; }
done
grep -qx "ExecStart=$root/bin/drivewatch --config.file=$root/etc/drivewatch/drivewatch.toml" "$unit" \
  || { echo "FAIL: ExecStart does not follow the install prefix:" >&2; grep ExecStart "$unit" >&2; exit 1; }
"$root/bin/drivewatch" check-config "$root/etc/drivewatch/drivewatch.toml"
echo "ok: cmake --install put the binary, unit, example config and alert rules in place"

grep -qx 'Documentation=man:drivewatch(1) man:drivewatch.toml(5)' "$unit" \
  || { echo "FAIL: the unit names no man pages in Documentation=" >&2; exit 1; }
# verify runs man(1) on every man: link; the pages are in the install root.
out=$(MANPATH=$root/share/man systemd-analyze verify "$unit" 2>&1) || { echo "FAIL: systemd-analyze verify: $out" >&2; exit 1; }
if [[ -n $out ]]; then
  echo "FAIL: systemd-analyze verify printed:" >&2
  echo "$out" >&2
  exit 1
fi
echo "ok: systemd-analyze verify is clean"

systemd-analyze security --offline=true --no-pager "$unit" | tail -n 1
