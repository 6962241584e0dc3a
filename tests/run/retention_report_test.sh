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

if ! "$bin" --help 2>&1 | grep -q "retention report"; then
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

# dom NAME PYTHON: PYTHON runs with `dom` (the DOM Chromium built, parsed
# by html.parser into `elements`, a list of (tag, attrs, text)) and `text`
# (all visible text); it raises AssertionError with a message on failure.
dom() {
  python3 - "$work/$1.dom" "$1" "$2" <<'PY' || exit 1
import sys
from html.parser import HTMLParser
raw = open(sys.argv[1], encoding="utf-8").read()
class P(HTMLParser):
    def __init__(self):
        super().__init__(); self.elements = []; self.stack = []; self.texts = []
    def handle_starttag(self, tag, attrs):
        e = [tag, dict(attrs), ""]; self.elements.append(e)
        if tag not in ("meta", "br", "line", "rect", "path", "circle", "img", "link"):
            self.stack.append(e)
    def handle_startendtag(self, tag, attrs):
        self.elements.append([tag, dict(attrs), ""])
    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag: break
    def handle_data(self, data):
        for e in self.stack: e[2] += data
        if not any(e[0] in ("style", "title") for e in self.stack): self.texts.append(data)
p = P(); p.feed(raw)
elements = p.elements
text = " ".join(" ".join(p.texts).split())
def by_class(tag, cls):
    return [e for e in elements if e[0] == tag and cls in e[1].get("class", "").split()]
def by_id(i):
    found = [e for e in elements if e[1].get("id") == i]
    assert found, f"no element with id {i}"
    return found[0]
try:
    exec(sys.argv[3])
except AssertionError as e:
    print(f"FAIL: {sys.argv[2]}: {e}", file=sys.stderr); sys.exit(1)
PY
}

# png NAME: the screenshot is non-trivially sized and not blank.
png() {
  python3 - "$work/$1.png" "$1" <<'PY' || exit 1
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
name = sys.argv[2]
def die(m): print(f"FAIL: {name}: screenshot {m}", file=sys.stderr); sys.exit(1)
if len(data) < 20000: die(f"is only {len(data)} bytes")
if data[:8] != b"\x89PNG\r\n\x1a\n": die("is not a PNG")
pos, idat, ihdr = 8, b"", None
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    chunk = data[pos + 8:pos + 8 + length]
    if kind == b"IHDR": ihdr = struct.unpack(">IIBBBBB", chunk)
    if kind == b"IDAT": idat += chunk
    pos += 12 + length
w, h, depth, ctype = ihdr[:4]
if (w, h) != (1200, 2400): die(f"is {w}x{h}, not 1200x2400")
if depth != 8 or ctype not in (2, 6): die(f"has an unexpected format (depth {depth}, colour type {ctype})")
bpp = 3 if ctype == 2 else 4
raw = zlib.decompress(idat)
stride = w * bpp
rows, prev = [], bytearray(stride)
i = 0
for y in range(h):
    f = raw[i]; line = bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
            pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            line[x] = (line[x] + pr) & 255
    rows.append(bytes(line)); prev = line
colours = {}
for y in range(0, h, 3):
    line = rows[y]
    for x in range(0, w, 3):
        px = line[x * bpp:x * bpp + 3]
        colours[px] = colours.get(px, 0) + 1
total = sum(colours.values())
top = max(colours.values())
# Distinct colours that cover a visible area (not just anti-aliasing).
solid = [c for c, n in colours.items() if n >= 20]
if top / total > 0.97: die(f"is {100 * top / total:.1f}% one colour (blank?)")
if len(solid) < 6: die(f"has only {len(solid)} distinct colours")
print(f"ok: {name}: screenshot {w}x{h}, {len(data)} bytes, {len(solid)} colours")
PY
}

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
