#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The example config, config/drivewatch.toml (installed as
# /etc/drivewatch/drivewatch.toml), is generated from the config schema and
# the probe catalog: the file committed must be what they generate now.
#   usage: example_config_test.sh DW_CONFIG_SCHEMA SOURCE_DIR OUT_DIR
set -euo pipefail
tool=$1 src=$2 out=$3
mkdir -p "$out"
generated=$out/drivewatch.toml
"$tool" --example "$generated"
if ! diff -u "$src/config/drivewatch.toml" "$generated"; then
  echo "FAIL: config/drivewatch.toml is not what the config schema generates" \
       "(above: - committed, + generated). Regenerate it with:"
  echo "  cmake --build BUILD_DIR --target example_config"
  echo "or: $tool --example $src/config/drivewatch.toml"
  exit 1
fi
echo "ok: config/drivewatch.toml is the schema's example config"
