#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The retention study report as a person sees it: `drivewatch retention
# report NAME --format=html` over fixture studies, rendered by headless
# Chromium. Checks the DOM Chromium built (verdict, serial, bad-block counts
# per class, the latency chart's series and the bad-block map's cells), that
# the page is self-contained, and that the screenshot is a real picture
# (several distinct colours), not a blank page.
#   usage: retention_report_test.sh DRIVEWATCH_BINARY SOURCE_DIR
set -euo pipefail
bin=$(realpath "$1")
src=$(realpath "$2")
fixtures=$src/tests/fixtures/retention
source "$(dirname "$0")/lib.sh"

chromium=$(command -v chromium || command -v chromium-browser || true)
[[ -n $chromium ]] || fail "chromium not found (scripts/install-deps.sh installs it)"

mkdir -p "$work/state/retention"
cat >"$work/dw.toml" <<TOML
[state]
directory = "$work/state"
TOML

# Captured first: grep -q would stop reading early, and the help, longer
# than a pipe write, would then die of SIGPIPE under pipefail.
help=$("$bin" --help 2>&1)
if ! grep -q "retention report" <<<"$help"; then
  fail "drivewatch has no retention report command"
fi

# Chromium wants a writable home and profile; keep both inside $work.
export HOME=$work/home
mkdir -p "$HOME"
browse() {  # browse ARGS... : headless Chromium, its chatter kept aside
  timeout 120 "$chromium" --headless=new --no-sandbox --disable-gpu \
    --user-data-dir="$work/profile" --no-first-run --disable-extensions \
    --disable-background-networking --hide-scrollbars "$@" 2>>"$work/chromium.log"
}

# check NAME: render the study NAME (fixture FILE), then assertions in
# python on the DOM ($work/NAME.dom) given as EXPECT (a python dict).
render() {
  local name=$1 file=$2
  python3 - "$fixtures/$file.json" "$work/state/retention/$name.json" "$name" <<'PY'
import json, sys
study = json.load(open(sys.argv[1]))
study["study"] = sys.argv[3]
json.dump(study, open(sys.argv[2], "w"), indent=2)
PY
  "$bin" retention report "$name" --config.file="$work/dw.toml" --format=html \
    >"$work/$name.html" 2>"$work/$name.err" ||
    fail "retention report $name exited $?: $(cat "$work/$name.err")"
  [[ -s $work/$name.html ]] || fail "retention report $name printed nothing"
  if grep -Eq '(src|href)=["'"'"']?(https?:)?//|url\( *["'"'"']?(https?:)?//|@import' "$work/$name.html"; then
    fail "$name: the page loads an external resource: $(grep -Eo '(src|href)=[^ >]*|url\([^)]*\)|@import[^;]*' "$work/$name.html" | head -3)"
  fi
  if grep -Eq 'https?://' "$work/$name.html"; then
    fail "$name: the page refers to http(s):// ($(grep -Eo 'https?://[^ "<]*' "$work/$name.html" | head -3))"
  fi
  grep -qi '<script' "$work/$name.html" && fail "$name: the page has a script"
  browse --dump-dom "file://$work/$name.html" >"$work/$name.dom" ||
    fail "chromium --dump-dom $name failed: $(tail -5 "$work/chromium.log")"
  browse --screenshot="$work/$name.png" --window-size=1200,2400 "file://$work/$name.html" \
    >/dev/null || fail "chromium --screenshot $name failed: $(tail -5 "$work/chromium.log")"
  [[ -f $work/$name.png ]] || fail "$name: no screenshot written"
}

# dom NAME PYTHON: assertions on the DOM Chromium built (tests/run/dom_check.py).
dom() { python3 "$src/tests/run/dom_check.py" "$work/$1.dom" "$1" "$2" || exit 1; }

# png NAME: the screenshot is a real picture (tests/run/png_check.py).
png() { python3 "$src/tests/run/png_check.py" "$work/$1.png" "$1" 1200 2400 || exit 1; }

# --- a study with bad blocks of every class and a firmware change --------
render bake bad_blocks
dom bake '
v = by_id("verdict")
assert v[2].startswith("FAIL: 11 bad blocks (3 unreadable, 5 wrong content, 2 misplaced, 1 stale)"), f"verdict: {v[2]!r}"
assert "fail" in v[1]["class"].split(), "verdict not styled as a failure"
assert by_id("serial")[2] == "S64DNX0R654321", "serial"
counts = {e[1]["data-class"]: e[2] for e in elements if "data-class" in e[1]}
assert counts == {"unreadable": "3", "wrong_content": "5", "misplaced": "2", "stale": "1"}, f"counts {counts}"
assert "firmware_change" in text and "3B4QFXO7 -> 3B4QFXP7" in text, "firmware change event"
charts = by_class("svg", "latency-chart")
assert len(charts) == 1, "no latency chart"
series = by_class("path", "series")
assert [s[1]["data-series"] for s in series] == ["baseline", "verify 1"], f"series {series}"
assert all(len(s[1]["d"]) > 200 for s in series), "a series path is nearly empty"
assert len(by_class("line", "limit")) == 1, "no 100 ms marker"
assert "100 ms limit" in text
maps = by_class("svg", "bad-block-map")
assert len(maps) == 1, "no bad-block map"
cells = {c: len(by_class("rect", c)) for c in ("unreadable", "wrong_content", "misplaced", "stale")}
assert cells == {"unreadable": 2, "wrong_content": 2, "misplaced": 2, "stale": 1}, f"map cells {cells}"
assert "6.0 years" in text and "70.0 °C" in text, "equivalent age of the bake"
'
png bake
pass "bad blocks of every class: verdict, counts, chart (2 series), map (7 cells), event"

# --- a clean study: baseline and two verifies ------------------------------
render lab-q4 clean
dom lab-q4 '
v = by_id("verdict")
assert v[2].startswith("PASS: every block intact, no read over 100 ms"), f"verdict: {v[2]!r}"
assert by_id("serial")[2] == "S64DNX0R123456", "serial"
assert [s[1]["data-series"] for s in by_class("path", "series")] == ["baseline", "verify 1", "verify 2"]
assert len(by_class("svg", "bad-block-map")) == 1, "no bad-block map"
assert not [e for e in elements if e[0] == "rect" and "bad" in e[1].get("class", "").split()], "bad cells in a clean study"
assert "Samsung SSD 980 1TB" in text and "3B4QFXO7" in text
'
png lab-q4
pass "clean study: PASS verdict, 3 series, empty map"

# --- no storage temperature configured --------------------------------------
render shelf unknown_temperature
dom shelf '
assert "unknown (no storage temperature configured)" in text, "unknown equivalent age not said"
assert by_id("verdict")[2].startswith("PASS"), "verdict"
'
pass "unknown storage temperature"

# --- still writing: no read-back yet -------------------------------------------
render fresh writing
dom fresh '
v = by_id("verdict")
assert v[2].startswith("WRITING"), f"verdict: {v[2]!r}"
assert not by_class("path", "series"), "latency series for a study with no reads"
'
pass "study still writing"

# --- a hostile model name stays text ----------------------------------------
python3 - "$fixtures/bad_blocks.json" "$work/state/retention/evil.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["study"] = "evil"
s["model"] = "<img src=x onerror=alert(1)> Evil</td></table>"
json.dump(s, open(sys.argv[2], "w"))
PY
"$bin" retention report evil --config.file="$work/dw.toml" --format=html >"$work/evil.html" ||
  fail "retention report evil exited $?"
browse --dump-dom "file://$work/evil.html" >"$work/evil.dom" || fail "chromium --dump-dom evil"
dom evil '
assert not [e for e in elements if e[0] == "img"], "the model name became an element"
assert "<img src=x onerror=alert(1)> Evil</td></table>" in text, "the model name is not shown as text"
assert len(by_class("svg", "bad-block-map")) == 1, "page structure broken"
'
pass "strings from the study are escaped"
echo "all retention report checks passed"
