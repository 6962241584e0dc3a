#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `drivewatch report` through the real binary: the fixture histories of
# tests/fixtures/report give, byte for byte, the goldens the unit test keeps
# (text, markdown, JSON); the state directory is read when no file is named;
# bad arguments exit 2 with a clear message; and the HTML report, rendered
# by headless Chromium, has every chart with its curves or bars and axis
# titles, fetches nothing (a control page that does fetch shows the check
# works), links each retention study's own report written beside it, and
# looks like a report. Its screenshot is kept as OUT/report.png.
#   usage: report_test.sh DRIVEWATCH_BINARY SOURCE_DIR OUT_DIR
set -euo pipefail
bin=$(realpath "$1")
src=$(realpath "$2")
out=$3
fixtures=$src/tests/fixtures/report
golden=$fixtures/golden
source "$(dirname "$0")/lib.sh"
mkdir -p "$out"
out=$(realpath "$out")

chromium=$(command -v chromium || command -v chromium-browser || true)
[[ -n $chromium ]] || fail "chromium not found (scripts/install-deps.sh installs it)"
export SOURCE_DATE_EPOCH=1782864000  # as the goldens were made
inputs=(host-a.dwh host-b.dwh study-p41-lab.json study-pm981-shelf.json)

# --- the goldens, through the binary ------------------------------------------
cd "$fixtures"
for f in text:report.txt markdown:report.md json:report.json; do
  "$bin" report --baseline S4GXNX0M305123 --format="${f%%:*}" "${inputs[@]}" >"$work/${f#*:}" ||
    fail "report --format=${f%%:*} exited $?"
  cmp -s "$work/${f#*:}" "$golden/${f#*:}" ||
    fail "report --format=${f%%:*} differs from $golden/${f#*:}: $(diff "$golden/${f#*:}" "$work/${f#*:}" | head -5)"
done
pass "text, markdown and JSON match their goldens"
"$bin" report damaged.dwh >"$work/damaged.txt" 2>"$work/damaged.err" || fail "report damaged.dwh exited $?"
cmp -s "$work/damaged.txt" "$golden/damaged.txt" || fail "damaged.dwh: differs from its golden"
grep -q "damaged.dwh: damaged record left out: line [0-9]* (offset [0-9]*): checksum" "$work/damaged.err" ||
  fail "the damaged record is not said on stderr: $(cat "$work/damaged.err")"
"$bin" report empty.dwh >"$work/empty.txt" || fail "report empty.dwh exited $?"
cmp -s "$work/empty.txt" "$golden/empty.txt" || fail "empty.dwh: differs from its golden"
pass "a damaged record and an empty history: clear reports, exit 0"
cd "$work"

# --- the state directory, as drivewatch history reads it ---------------------
mkdir -p "$work/state/retention"
cp "$fixtures/host-a.dwh" "$work/state/history.log"
cp "$fixtures/study-p41-lab.json" "$work/state/retention/p41-lab.json"
printf '[state]\ndirectory = "%s"\n' "$work/state" >"$work/dw.toml"
"$bin" report --config.file="$work/dw.toml" >"$work/state.txt" || fail "report from the state directory exited $?"
grep -q "^  $work/state/history.log: 28 runs, 6 steps" "$work/state.txt" || fail "state history not read: $(head -5 "$work/state.txt")"
grep -q "^Retention: study p41-lab" "$work/state.txt" || fail "the state directory's study is not in the report"
pass "the state directory's history and studies"

# --- bad arguments: exit 2, say what is wrong ----------------------------------
expect2() {  # expect2 MESSAGE ARGS...: exit 2 and MESSAGE on stderr
  local want=$1 rc=0
  shift
  "$bin" "$@" >/dev/null 2>"$work/err" || rc=$?
  ((rc == 2)) || fail "drivewatch $* exited $rc, not 2"
  grep -qF -- "$want" "$work/err" || fail "drivewatch $*: stderr lacks \"$want\": $(cat "$work/err")"
}
expect2 "--drive NOSUCH: no run of that drive on record (drives on record: BTEH2450031Z1P0D, S4GXNX0M305123)" \
  report --drive NOSUCH "$fixtures/host-a.dwh" "$fixtures/host-b.dwh"
expect2 "--runs fill-1: no run with that id" report --runs first,fill-1 "$fixtures/host-a.dwh"
expect2 "--format must be text, markdown, json or html (got \"pdf\")" report --format=pdf
expect2 "$work/nope.dwh: cannot read" report "$work/nope.dwh"
expect2 "--baseline BTEH2450031Z1P0D is also a --drive" \
  report --drive BTEH2450031Z1P0D --baseline BTEH2450031Z1P0D "$fixtures/host-a.dwh"
pass "bad arguments exit 2 with what is wrong"

# --- HTML in headless Chromium ------------------------------------------------------
export HOME=$work/home
mkdir -p "$HOME"
browse() {  # browse PROFILE ARGS...: headless Chromium that can reach nothing
  local profile=$1
  shift
  timeout 120 "$chromium" --headless=new --no-sandbox --disable-gpu \
    --user-data-dir="$work/$profile" --no-first-run --disable-extensions \
    --disable-background-networking --hide-scrollbars \
    --proxy-server=127.0.0.1:9 --host-resolver-rules="MAP * ~NOTFOUND" "$@" 2>>"$work/chromium.log"
}
# page_fetches NETLOG: the URLs a page asked for. Chromium's own requests
# (updates, accounts) have no origin; a page's have the page's ("null" for
# a file).
page_fetches() {
  python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
types = {v: k for k, v in d["constants"]["logEventTypes"].items()}
for e in d["events"]:
    p = e.get("params", {})
    # The job's start (its end has only net_error).
    if types.get(e["type"]) == "URL_REQUEST_START_JOB" and "url" in p and \
            p.get("initiator") != "not an origin":
        print(p.get("url"))
PY
}

(cd "$fixtures" && "$bin" report --baseline S4GXNX0M305123 --format=html --output "$out/report.html" \
  "${inputs[@]}") || fail "report --format=html --output exited $?"
"$bin" report --baseline S4GXNX0M305123 --format=json "${inputs[@]/#/$fixtures/}" >"$work/model.json"
for page in retention-p41-lab.html retention-pm981-shelf.html; do
  [[ -s $out/$page ]] || fail "--output did not write $page beside the report"
done
if grep -Eq '(src|href)=["'"'"']?(https?:|file:)?//|url\(|@import' "$out/report.html"; then
  fail "the page refers to an external resource: $(grep -Eo '(src|href)=[^ >]*|url\([^)]*\)|@import[^;]*' "$out/report.html" | head -3)"
fi
grep -qi '<script' "$out/report.html" && fail "the page has a script"

# One Chromium for the DOM, the screenshot and the log of what it fetched.
browse profile --log-net-log="$work/netlog.json" --dump-dom --screenshot="$out/report.png" \
  --window-size=1200,18000 "file://$out/report.html" >"$work/report.dom" ||
  fail "chromium --dump-dom --screenshot failed: $(tail -5 "$work/chromium.log")"
fetched=$(page_fetches "$work/netlog.json")
[[ -z $fetched ]] || fail "the page fetched: $fetched"
# The check above sees a page's fetches: a page with two has both.
printf '<!DOCTYPE html><img src="http://example.invalid/a.png"><link rel="stylesheet" href="https://example.invalid/b.css">' >"$work/control.html"
browse control --log-net-log="$work/control.json" --dump-dom "file://$work/control.html" >/dev/null ||
  fail "chromium on the control page failed"
[[ $(page_fetches "$work/control.json" | wc -l) -eq 2 ]] ||
  fail "the fetch check does not see a page's fetches: $(page_fetches "$work/control.json")"
pass "the page loads nothing (a control page's two fetches are seen)"

python3 "$src/tests/run/dom_check.py" "$work/report.dom" report "
import json
model = json.load(open('$work/model.json'))
charts = {c['id']: c for d in model['drives'] for s in d['sections'] for c in s['charts']}
assert len(charts) >= 17, f'only {len(charts)} charts in the model'
svgs = {e[1].get('data-chart'): e for e in elements if e[0] == 'svg' and 'chart-svg' in e[1].get('class', '')}
assert set(svgs) == set(charts), f'charts drawn {sorted(svgs)} != in the model {sorted(charts)}'
def title(axis):
    u = axis['unit']
    return axis['title'] if u in ('latency', 'share', '') else axis['title'] + ' (' + u + ')'
for cid, c in charts.items():
    svg = svgs[cid]
    titles = [e[2] for e in within(svg, 'text', 'axis-title')]
    if c['type'] == 'line':
        paths = within(svg, 'path', 'series')
        assert len(paths) == len(c['series']), f'{cid}: {len(paths)} curves, not {len(c[\"series\"])}'
        for p, s in zip(paths, c['series']):
            assert p[1]['data-series'] == s['name'], f'{cid}: curve {p[1][\"data-series\"]} is not {s[\"name\"]}'
            assert p[1]['d'].count('L') + 1 >= min(len(s['points']), 2), f'{cid}: curve {s[\"name\"]} has too few points'
        assert titles == [title(c['x']), title(c['y'])], f'{cid}: axis titles {titles}'
        markers = within(svg, 'line', 'marker')
        assert len(markers) == len(c['markers']), f'{cid}: {len(markers)} markers, not {len(c[\"markers\"])}'
    else:
        bars = within(svg, 'rect', 'bar')
        want = sum(v is not None for s in c['series'] for v in s['values'])
        assert len(bars) == want, f'{cid}: {len(bars)} bars, not {want}'
        assert [e[2] for e in within(svg, 'text', 'group')] == c['groups'], f'{cid}: group labels'
        assert titles[1] == title(c['y']), f'{cid}: y axis title {titles}'
assert 'fill_50_time' in svgs and len(within(svgs['fill_50_time'], 'line', 'marker')) == 3, 'the SLC boundaries'
assert len(within(svgs['reclaim_aged'], 'path', 'series')) == 4, 'one curve per idle'
sections = [e for e in elements if e[0] == 'section' and 'report-section' in e[1].get('class', '')]
assert len(sections) == sum(len(d['sections']) for d in model['drives']), 'sections'
for s in sections:
    v = within(s, 'div', 'verdict')
    assert len(v) == 1 and v[0][2].startswith('Verdict: '), f'{s[1][\"data-section\"]}: no verdict'
    assert within(s, 'p', 'expectation'), f'{s[1][\"data-section\"]}: no expectation'
assert 'not measured' in text and ' 0 mW' not in text
links = [e for e in elements if e[0] == 'a' and e[1].get('href', '').startswith('retention-')]
assert [l[1]['href'] for l in links] == ['retention-p41-lab.html'], f'retention links {links}'
"
pass "every chart has its curves or bars and axis titles, every section its verdict"

# No table scrolls sideways at 1400 px (the replay's trim columns were cut
# off): a copy of the page with tests/run/layout_probe.html's script lists
# what overflows; a control copy with a table wider than any page must be
# listed.
layout() {  # layout PAGE: what the probe lists at 1400 px
  browse layout --window-size=1400,4000 --virtual-time-budget=5000 --dump-dom "file://$1" |
    python3 -c 'import html, re, sys
m = re.search(r"<pre id=\"layout-check\">(.*?)</pre>", sys.stdin.read(), re.S)
print(html.unescape(m.group(1)) if m else "the probe did not run")'
}
python3 - "$out/report.html" "$src/tests/run/layout_probe.html" "$work" <<'PY'
import sys
page, probe, work = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3]
assert page.count('</body>') == 1
open(work + '/layout.html', 'w').write(page.replace('</body>', probe + '</body>'))
wide = '<div class="scroll"><table data-table="control"><tr><td style="min-width:3000px">x</td></tr></table></div>'
open(work + '/layout-control.html', 'w').write(page.replace('</body>', wide + probe + '</body>'))
PY
got=$(layout "$work/layout.html")
[[ $got == OK ]] || fail "the page scrolls sideways at 1400 px: $got"
control=$(layout "$work/layout-control.html")
[[ $control == *"table control"* ]] || fail "the layout probe does not see a table wider than the page: $control"
pass "no table scrolls sideways at 1400 px (a control table that does is seen)"

python3 "$src/tests/run/png_check.py" "$out/report.png" report 1200 18000 900
echo "screenshot: $out/report.png"
echo "all report checks passed"
