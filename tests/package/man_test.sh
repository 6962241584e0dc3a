#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The generated man pages against their sources: every flag and command that
# `drivewatch --help` lists is in drivewatch(1), every flag in the page's
# OPTIONS is in --help (no stale flags), every table and key of the example
# config is in drivewatch.toml(5), and both pages format without a groff
# warning (as lintian checks).
#   usage: man_test.sh DRIVEWATCH_BINARY MAN_DIR EXAMPLE_TOML
set -euo pipefail
bin=$1 mandir=$2 toml=$3
fail=0

render() {  # the page as plain text, hyphens as "-"
  MANWIDTH=200 LC_ALL=C.UTF-8 man -l -Tutf8 "$1" 2>/dev/null | col -bx | sed 's/\xe2\x80\x90/-/g'
}
for page in drivewatch.1 drivewatch.toml.5; do
  [[ -s $mandir/$page.gz ]] || { echo "FAIL: $mandir/$page.gz missing"; exit 1; }
  warnings=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 \
    man --warnings -E UTF-8 -l -Tutf8 -Z "$mandir/$page.gz" 2>&1 >/dev/null || true)
  if [[ -n $warnings ]]; then
    echo "FAIL: groff warnings in $page:"; echo "$warnings"; fail=1
  fi
done

page1=$(render "$mandir/drivewatch.1.gz")
help=$("$bin" --help)

# Flags: every --name and -x token in --help.
mapfile -t help_flags < <(grep -oE -- '(^|[[ ,])--?[a-z][a-z.-]*' <<<"$help" | sed -E 's/^[[ ,]//' | sort -u)
[[ ${#help_flags[@]} -ge 10 ]] || { echo "FAIL: found only ${#help_flags[@]} flags in --help"; exit 1; }
for f in "${help_flags[@]}"; do
  grep -qE -- "(^|[^a-z.-])${f//./\\.}([^a-z.-]|$)" <<<"$page1" \
    || { echo "FAIL: drivewatch(1) does not mention $f (from --help)"; fail=1; }
done
# Every flag listed in the page's OPTIONS section is one --help lists.
options=$(sed -n '/^OPTIONS$/,/^[A-Z][A-Z ]*$/p' <<<"$page1" | sed '1d;$d')
mapfile -t page_flags < <(grep -oE -- '^ {7}--?[a-z][a-z.-]*(, --?[a-z][a-z.-]*)?' <<<"$options" | tr ',' '\n' | sed 's/^ *//' | sort -u)
for f in "${page_flags[@]}"; do
  grep -qx -- "$f" < <(printf '%s\n' "${help_flags[@]}") \
    || { echo "FAIL: drivewatch(1) OPTIONS lists $f, which --help does not"; fail=1; }
done
# Commands: the first word after "drivewatch" in each usage form.
mapfile -t commands < <(grep -oE '^(usage:)? +drivewatch [a-z-]+( [a-z]+)?' <<<"$help" | sed -E 's/^(usage:)? +drivewatch //' | sort -u)
for c in "${commands[@]}"; do
  grep -qF -- "drivewatch $c" <<<"$page1" \
    || { echo "FAIL: drivewatch(1) does not mention the command '$c'"; fail=1; }
done
[[ $fail -ne 0 ]] || echo "ok: drivewatch(1) has all ${#help_flags[@]} flags and ${#commands[@]} command forms of --help; OPTIONS has ${#page_flags[@]} flags, none stale"

# Config keys: [table] headers and key = lines of the example config.
page5=$(render "$mandir/drivewatch.toml.5.gz")
keys=0
table=
while IFS= read -r line; do
  if [[ $line =~ ^\[([a-z_.]+)\] ]]; then
    table=${BASH_REMATCH[1]}
    grep -qF -- "[$table]" <<<"$page5" || { echo "FAIL: drivewatch.toml(5) lacks [$table]"; fail=1; }
  elif [[ $line =~ ^([a-z_]+)\ *= ]]; then
    key=${BASH_REMATCH[1]}
    keys=$((keys + 1))
    # The key must appear in its table's subsection.
    # (Not `sed | grep -q`: with pipefail, grep -q's early exit fails sed.)
    section=$(sed -n "/^   \[${table//./\\.}\]\$/,/^   \[/p" <<<"$page5")
    grep -qE "^ +$key = " <<<"$section" \
      || { echo "FAIL: drivewatch.toml(5) lacks $table.$key"; fail=1; }
  fi
done <"$toml"
[[ $fail -ne 0 ]] || echo "ok: drivewatch.toml(5) documents all $keys keys of $(basename "$toml")"
exit $fail
