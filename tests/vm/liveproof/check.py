#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The "live proof" of the dashboards and rules (tests/vm/liveproof).

usage: check.py --prom URL --repo DIR --out DIR [--settle S]

A real Prometheus scrapes the real drivewatch twice (job drivewatch-guest:
the QEMU guest with emulated NVMe controllers; job drivewatch-host: a
host-side drivewatch with file targets and heavy phase / retention results)
and loads dashboards/rules/*.rules.yml.  This evaluates, against it:

  dashboards  every panel target and query-variable expression of
              dashboards/grafana/*.json (extracted as
              tests/dashboards/lint_dashboards.py does), with the template
              variables substituted by REAL values read from Prometheus,
              the way Grafana would: scope "all" (every variable at its
              default, All = `.*`), then one scope per drive (instance and
              serial from label_values(drivewatch_drive_info, ...)), one
              for the host exporter (its instance; it has no drive, so the
              serial variable stays All), one with every drive ticked
              (multi-value regex form), one per phase and per study value.
              `$__rate_interval` is 1m (> 4 x the 1 s scrape interval).
  recording   every recorded series (record name + its rule labels).
  alerts      every alert expression must evaluate without error (they
              usually return nothing: nothing is broken); the rule's health
              in /api/v1/rules must be "ok".
  selectors   every vector selector inside every rule expression must
              return data.

Verdicts (one row each, in OUT/liveproof.txt and OUT/liveproof.json):
  OK     data.
  EMPTY  no data, and ALLOWLIST says why that is right in this setup.
  FAIL   an error; no data without an allowlist entry; an allowlist entry
         that does return data (STALE: the list must stay honest); a scope
         that loses series which the "all" scope shows for that very
         instance/serial/phase/study (a variable used on the wrong label).
  -      (per-scope rows only) no data, and none expected in that scope.

--settle S: data arrive over time (rates need two scrapes, recording rules
an evaluation, the power draw probe a closed window), so until S seconds
have passed the evaluation is repeated every 5 s while any non-allowlisted
row is still empty; then the final evaluation is written.  Errors are never
waited for.  Exit 0 if no FAIL, 1 otherwise, 2 on a setup error.
"""
import argparse
import glob
import json
import os
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(HERE, "..", "..", "dashboards"))
import lint_dashboards as lint  # noqa: E402  (expression extraction)

try:
    import yaml
except ImportError:  # pragma: no cover
    print("check.py: needs PyYAML (python3-yaml) to read the rule files", file=sys.stderr)
    sys.exit(2)

RATE_INTERVAL = "1m"

# ---------------------------------------------------------------- allowlist
# What legitimately returns nothing in this setup, one reason each.
# Dashboards: (file, panel title, refId). Selectors / records: the selector
# text with whitespace removed.  A listed item that returns data FAILS.
NO_SELF_TEST = "QEMU 7.2 has no device self-test (Identify OACS bit 4 clear; tests/vm/smartd S1)"
NO_PEL = "QEMU 7.2 has no persistent event log (Identify LPA bit 4 clear; tests/vm/smartd S1)"
NO_OCP = ("QEMU 7.2 has no OCP SMART extended log (C0h answered Invalid Field; "
          "feature_supported{feature=\"ocp_smart_extended\"} 0, tests/vm/smartd S1)")
NO_ERR_ENTRY = ("QEMU 7.2's Error Information log stays empty, so no new entry is counted "
                "(tests/vm/smartd S2 provokes entries)")
NO_CW = "no critical warning is set in this run (tests/vm/e2e A3 sets them over QMP)"
FILE_NO_SMART = ("the study is on a file target (host): no SMART power-on hours, so the "
                 "powered-off time is unknown and never guessed (docs/metrics.md)")
OVERRIDE = ("the operator's own override hook (docs/examples/drivewatch-thresholds.rules.yml); "
            "no override rule is loaded here")
ALLOW_DASH = {
    ("drivewatch-drive.json", "Identity", "C"):
        "QEMU 7.2 reports TNVMCAP 0: drivewatch_nvm_capacity_bytes only when reported",
    ("drivewatch-drive.json", "Temperature and thresholds", "B"):
        "QEMU 7.2 implements no Temperature Sensor 1-8 (SMART bytes 215:200 are 0)",
    ("drivewatch-drive.json", "Power state", "B"):
        "QEMU 7.2 has no APST (Identify APSTA 0): drivewatch_apst_enabled only with APST",
    ("drivewatch-drive.json", "Power draw by source", "C"):
        "QEMU 7.2 reports no Interval Power Measurement (SMART bytes 243:240 are 0)",
    ("drivewatch-drive.json", "Read errors, timeouts and skipped reads", "A"):
        "no read failed: drivewatch_read_errors_total{error} appears with the first error "
        "(tests/vm/latency L2 provokes them)",
    ("drivewatch-drive.json", "Time to rated wear-out (30 d trend)", "A"):
        "percentage used stays 0 on QEMU: deriv() is 0 and the panel keeps only > 0",
    ("drivewatch-drive.json", "New error-log entries by status", "A"): NO_ERR_ENTRY,
    ("drivewatch-drive.json", "Write amplification (OCP C0h)", "A"): NO_OCP,
    ("drivewatch-drive.json", "User data erase counts and spread (OCP C0h)", "A"): NO_OCP,
    ("drivewatch-drive.json", "User data erase counts and spread (OCP C0h)", "B"): NO_OCP,
    ("drivewatch-drive.json", "User data erase counts and spread (OCP C0h)", "C"): NO_OCP,
    ("drivewatch-drive.json", "Bad NAND blocks (OCP C0h)", "A"): NO_OCP,
    ("drivewatch-drive.json", "Self-test results", "A"): NO_SELF_TEST,
    ("drivewatch-drive.json", "Self-test results", "B"): NO_SELF_TEST,
    ("drivewatch-drive.json", "Self-test results", "C"): NO_SELF_TEST,
    ("drivewatch-drive.json", "Self-test results", "D"): NO_SELF_TEST,
    ("drivewatch-drive.json", "Self-test progress", "A"): NO_SELF_TEST,
    ("drivewatch-drive.json", "Self-test progress", "B"): NO_SELF_TEST,
    ("drivewatch-drive.json", "Critical warning bits", "A"): NO_CW + "; the panel keeps only > 0",
    ("drivewatch-drive.json", "Critical warning bits", "B"):
        "no endurance group critical warning (QEMU 7.2 has no endurance groups); the panel keeps only > 0",
    ("drivewatch-fleet.json", "Drives", "M"):
        "every probe succeeds on every drive (QEMU's unsupported self-test and persistent event log "
        "included); the column counts only == 0",
    ("drivewatch-aging.json", "Progress of running phases", "A"):
        "no phase runs while Prometheus scrapes (all ran by hand before the host daemon started); "
        "the panel keeps only > 0",
    ("drivewatch-aging.json", "Studies", "C"): FILE_NO_SMART,
    ("drivewatch-aging.json", "Studies", "D"): FILE_NO_SMART + "; the equivalent age needs it",
    ("drivewatch-aging.json", "Age and equivalent age", "B"): FILE_NO_SMART,
    ("drivewatch-aging.json", "Age and equivalent age", "D"): FILE_NO_SMART + "; the equivalent age needs it",
    ("drivewatch-aging.json", "SMART change since the write", "A"):
        "the study is on a file target (host): no SMART log to take a delta of",
}
ALLOW_SEL = {
    'drivewatch:alert_threshold_override{threshold="percentage_used_warning_ratio",instance!="",serial!=""}': OVERRIDE,
    'drivewatch:alert_threshold_override{threshold="percentage_used_warning_ratio",instance!="",serial=""}': OVERRIDE,
    'drivewatch:alert_threshold_override{threshold="percentage_used_warning_ratio",instance="",serial=""}': OVERRIDE,
    'drivewatch:alert_threshold_override{threshold="percentage_used_critical_ratio",instance!="",serial!=""}': OVERRIDE,
    'drivewatch:alert_threshold_override{threshold="percentage_used_critical_ratio",instance!="",serial=""}': OVERRIDE,
    'drivewatch:alert_threshold_override{threshold="percentage_used_critical_ratio",instance="",serial=""}': OVERRIDE,
    'drivewatch:alert_threshold_override{threshold="available_spare_warning_margin_ratio",instance!="",serial!=""}': OVERRIDE,
    'drivewatch:alert_threshold_override{threshold="available_spare_warning_margin_ratio",instance!="",serial=""}': OVERRIDE,
    'drivewatch:alert_threshold_override{threshold="available_spare_warning_margin_ratio",instance="",serial=""}': OVERRIDE,
    'drivewatch:alert_threshold_override{threshold="read_latency_p99_9_seconds",instance!="",serial!=""}': OVERRIDE,
    'drivewatch:alert_threshold_override{threshold="read_latency_p99_9_seconds",instance!="",serial=""}': OVERRIDE,
    'drivewatch:alert_threshold_override{threshold="read_latency_p99_9_seconds",instance="",serial=""}': OVERRIDE,
    "drivewatch_nvm_capacity_bytes":
        "QEMU 7.2 reports TNVMCAP 0 (the capacity falls back to the namespace sizes)",
    'drivewatch_self_test_last_result{result=~"fatal_error|failed_unknown_segment|failed_segment"}': NO_SELF_TEST,
    "drivewatch_error_log_new_entries_total": NO_ERR_ENTRY,
    "drivewatch_persistent_event_log_thermal_excursion_celsius": NO_PEL,
    'drivewatch_persistent_event_log_events_total{type="thermal_excursion"}': NO_PEL,
    "drivewatch_ocp_physical_media_written_bytes_total": NO_OCP,
    "drivewatch_ocp_bad_nand_blocks": NO_OCP,
}
ALLOW_RECORD = {
    "drivewatch:write_amplification:rate1h": NO_OCP,
    "drivewatch:percentage_used_ratio:days_to_full_deriv30d":
        "percentage used stays 0 on QEMU: deriv() is 0 and the rule keeps only > 0",
}

# ---------------------------------------------------------------- Prometheus


class Prom:
    def __init__(self, url):
        self.url = url.rstrip("/")

    def get(self, path, params):
        q = urllib.parse.urlencode(params, doseq=True)
        try:
            with urllib.request.urlopen(f"{self.url}{path}?{q}", timeout=15) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            body = e.read()
            try:
                return json.loads(body)
            except ValueError:
                return {"status": "error", "error": f"HTTP {e.code}: {body[:300]!r}"}

    def query(self, expr):
        """(result list, error text or None, warnings)"""
        d = self.get("/api/v1/query", {"query": expr})
        if d.get("status") != "success":
            return [], f"{d.get('errorType', '')}: {d.get('error')}", []
        data = d["data"]
        res = data["result"]
        if data["resultType"] in ("scalar", "string"):
            res = [{"metric": {}, "value": res}]
        return res, None, d.get("warnings", [])

    def label_values(self, label, match):
        d = self.get(f"/api/v1/label/{label}/values", {"match[]": match})
        return sorted(d.get("data") or [])


# ---------------------------------------------------------------- selectors
KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
            "group_right", "bool", "offset", "atan2", "inf", "nan", "start", "end"}
GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
                "count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio"}


def _skip_string(s, i):
    q = s[i]
    i += 1
    while i < len(s) and s[i] != q:
        i += 2 if s[i] == "\\" and q != "`" else 1
    return i + 1


def _skip_braces(s, i, open_="{", close="}"):
    depth = 0
    while i < len(s):
        c = s[i]
        if c in "\"'`":
            i = _skip_string(s, i)
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def selectors(expr):
    """Every vector selector (metric name plus matchers, without the range)
    in a PromQL expression, in order, whitespace removed outside strings."""
    out, i, n = [], 0, len(expr)
    while i < n:
        c = expr[i]
        if c.isspace():
            i += 1
        elif c == "#":
            while i < n and expr[i] != "\n":
                i += 1
        elif c in "\"'`":
            i = _skip_string(expr, i)
        elif c == "[":
            i = _skip_braces(expr, i, "[", "]")
        elif c.isdigit() or (c == "." and i + 1 < n and expr[i + 1].isdigit()):
            while i < n and (expr[i].isalnum() or expr[i] in "."):
                i += 1
        elif c.isalpha() or c in "_:":
            j = i
            while j < n and (expr[j].isalnum() or expr[j] in "_:"):
                j += 1
            name = expr[i:j]
            k = j
            while k < n and expr[k].isspace():
                k += 1
            if name.lower() in KEYWORDS:
                if name.lower() in GROUPING and k < n and expr[k] == "(":
                    j = _skip_braces(expr, k, "(", ")")
                i = j
                continue
            if k < n and expr[k] == "(":  # function or aggregation
                i = j
                continue
            if name in AGGREGATIONS and re.match(r"(by|without)\b", expr[k:]):
                i = j  # "sum by (...) (...)": the grouping is skipped next
                continue
            sel = name
            if k < n and expr[k] == "{":
                m = _skip_braces(expr, k)
                sel += compact(expr[k:m])
                j = m
            out.append(sel)
            i = j
        elif c == "{":
            m = _skip_braces(expr, i)
            out.append(compact(expr[i:m]))
            i = m
        else:
            i += 1
    return out


def compact(text):
    """Whitespace removed outside string literals."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c in "\"'`":
            j = _skip_string(text, i)
            out.append(text[i:j])
            i = j
        elif c.isspace():
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def one_line(expr):
    return re.sub(r"\s+", " ", expr).strip()


# ---------------------------------------------------------------- scopes
REGEX_SPECIAL = re.compile(r"([\\^$*+?.()|{}\[\]])")


def grafana_regex(values):
    """What Grafana puts into `label=~"$var"` for the selected values:
    each value regex-escaped (doubled backslashes inside the PromQL string),
    several as (a|b)."""
    esc = [REGEX_SPECIAL.sub(r"\\\\\1", v) for v in values]
    return esc[0] if len(esc) == 1 else "(" + "|".join(esc) + ")"


class Scope:
    def __init__(self, name, pins):
        self.name = name
        self.pins = pins  # var -> list of real values (absent: All)

    def values(self):
        v = dict(lint.BUILTIN_VARS)
        v["__rate_interval"] = RATE_INTERVAL
        v["__range"] = "5m"
        v["__range_s"] = "300"
        v["__range_ms"] = "300000"
        for var in ("instance", "serial", "phase", "study"):
            v[var] = grafana_regex(self.pins[var]) if var in self.pins else ".*"
        v["datasource"] = "prometheus"
        return v

    def covers(self, labels):
        """True if a series of the "all" result with these labels belongs
        to this scope: every pinned variable's label is present and one of
        the pinned values."""
        return all(var in labels and labels[var] in vals for var, vals in self.pins.items())


def build_scopes(prom, host_instance):
    scopes = [Scope("all", {})]
    # As the dashboards' $instance variable: every drivewatch has build_info.
    instances = prom.label_values("instance", "drivewatch_build_info")
    drives = []
    for inst in instances:
        for sn in prom.label_values("serial", f'drivewatch_drive_info{{instance="{inst}"}}'):
            drives.append((inst, sn))
            scopes.append(Scope(f"drive {inst} {sn}", {"instance": [inst], "serial": [sn]}))
    if host_instance:
        scopes.append(Scope(f"host {host_instance}", {"instance": [host_instance]}))
    if drives:
        scopes.append(Scope("every drive ticked", {"instance": sorted({i for i, _ in drives}),
                                                   "serial": sorted({s for _, s in drives})}))
    for p in prom.label_values("phase", "drivewatch_phase_state"):
        scopes.append(Scope(f"phase {p}", {"phase": [p]}))
    for s in prom.label_values("study", "drivewatch_retention_study_info"):
        scopes.append(Scope(f"study {s}", {"study": [s]}))
    return scopes, instances, drives


# ---------------------------------------------------------------- items
class Item:
    """One thing to evaluate: a dashboard expression, a recorded series, an
    alert expression or a selector inside a rule."""

    def __init__(self, kind, where, expr, allow=None, uses=(), must_have_data=True):
        self.kind = kind
        self.where = where
        self.expr = expr
        self.allow = allow
        self.uses = set(uses)
        self.must_have_data = must_have_data
        self.rows = []  # (scope name, status, nseries, note)
        self.rule_expr = None  # for records: the rule's expression
        self.auto_allow = None  # EMPTY for a reason found at run time


def dashboard_items(repo):
    items = []
    for path in sorted(glob.glob(os.path.join(repo, "dashboards", "grafana", "*.json"))):
        dname = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            dash = json.load(f)
        l = lint.Lint()
        for where, expr in lint.collect_expressions(dash, l, dname):
            allow = None
            m = re.match(r"panel '(.*)' \(id \d+\) ref (\S+)$", where) or \
                re.match(r'panel "(.*)" \(id \d+\) ref (\S+)$', where)
            if m:
                allow = ALLOW_DASH.get((dname, m.group(1), m.group(2)))
            items.append(Item("dashboard", f"{dname}: {where}", expr, allow,
                              uses=lint.used_variables(expr)))
        for p in l.problems:
            print("note: " + p, file=sys.stderr)
    return items


def rule_items(repo):
    items, selector_seen = [], {}
    files = sorted(glob.glob(os.path.join(repo, "dashboards", "rules", "*.rules.yml")))
    for path in files:
        fname = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f) or {}
        for g in doc.get("groups") or []:
            for r in g.get("rules") or []:
                expr = str(r["expr"])
                if "record" in r:
                    labels = r.get("labels") or {}
                    sel = r["record"] + ("{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"
                                         if labels else "")
                    it = Item("record", f"{fname}: {g['name']}: record {sel}", sel,
                              ALLOW_RECORD.get(sel))
                    it.rule_expr = expr
                    items.append(it)
                    owner = f"record {sel}"
                else:
                    items.append(Item("alert", f"{fname}: {g['name']}: alert {r['alert']}", expr,
                                      must_have_data=False))
                    owner = f"alert {r['alert']}"
                for s in selectors(expr):
                    if s in selector_seen:
                        selector_seen[s].where += f", {owner}"
                        continue
                    it = Item("selector", f"{fname}: {owner}", s, ALLOW_SEL.get(s))
                    selector_seen[s] = it
                    items.append(it)
    return items, files


# ---------------------------------------------------------------- evaluation
def evaluate(prom, items, scopes, unevaluated):
    for it in items:
        it.rows = []
        it.error = None
        it.auto_allow = None
        all_scope = scopes[0]
        expr = lint.substitute(it.expr, all_scope.values()) if it.kind == "dashboard" else it.expr
        res, err, _warn = prom.query(expr)
        it.sent = expr
        it.result = res
        if err:
            it.error = err
            it.rows.append(("all", "FAIL", 0, f"error: {err}"))
        elif res and it.allow:
            it.rows.append(("all", "FAIL", len(res), f"STALE allowlist entry: returns data ({it.allow})"))
        elif res:
            note = ""
            if it.kind == "alert":
                note = "fires/pending: " + "; ".join(series_name(s["metric"]) for s in res[:5])
            it.rows.append(("all", "OK", len(res), note))
        elif it.allow:
            it.rows.append(("all", "EMPTY", 0, it.allow))
        elif it.kind in ("record", "selector") and bare_name(it.expr) in unevaluated:
            # A group with a long interval (drivewatch-wearout: 1h) may not
            # have evaluated within the run: then its expression is checked
            # directly (a recorded name it reads counts the same way).
            g, ival = unevaluated[bare_name(it.expr)]
            note = f"group {g} (interval {ival:.0f}s) has not evaluated within the run"
            if it.kind == "record" and it.rule_expr:
                dres, derr, _ = prom.query(it.rule_expr)
                if derr:
                    it.rows.append(("all", "FAIL", 0, f"{note}; its expression errors: {derr}"))
                    continue
                if not dres and not any(bare_name(s) in unevaluated for s in selectors(it.rule_expr)):
                    it.rows.append(("all", "FAIL", 0, f"{note}; its expression, evaluated directly, "
                                    "returns nothing"))
                    continue
                note += f"; its expression, evaluated directly, returns {len(dres)} series"
            it.rows.append(("all", "EMPTY", 0, note))
            it.auto_allow = note
        elif not it.must_have_data:
            it.rows.append(("all", "OK", 0, "evaluates, returns nothing (nothing is wrong)"))
        else:
            it.rows.append(("all", "FAIL", 0, "no data, and no allowlist entry says why"))
        if it.kind != "dashboard" or it.error:
            continue
        for sc in scopes[1:]:
            if not set(sc.pins) <= it.uses:
                continue
            sexpr = lint.substitute(it.expr, sc.values())
            sres, serr, _ = prom.query(sexpr)
            expected = [s for s in res if sc.covers(s["metric"])]
            if serr:
                it.rows.append((sc.name, "FAIL", 0, f"error: {serr}"))
            elif expected and not sres:
                it.rows.append((sc.name, "FAIL", 0,
                                f"no data, but scope all has {len(expected)} series of this scope, e.g. "
                                f"{series_name(expected[0]['metric'])}: the variable does not select them"))
            elif sres:
                it.rows.append((sc.name, "OK", len(sres), ""))
            else:
                it.rows.append((sc.name, "-", 0, "no data expected in this scope"))


def bare_name(selector):
    return re.split(r"[{\s\[]", selector, maxsplit=1)[0]


def series_name(labels):
    name = labels.get("__name__", "")
    rest = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k != "__name__")
    return f"{name}{{{rest}}}"


def pending(items):
    """Rows that are empty without an allowlist entry (may still fill)."""
    out = []
    for it in items:
        for scope, status, _n, note in it.rows:
            if status == "FAIL" and not note.startswith(("error", "STALE")):
                out.append((it, scope))
    return out


def rule_health(prom, settle):
    """([(group, rule, health, lastError)] for rules whose health is not
    ok, number of rules, rules not evaluated yet in groups that evaluate
    within the settle time, {record name: (group, interval s)} of records
    whose group has not evaluated yet)."""
    d = prom.get("/api/v1/rules", {})
    bad, n, unknown, unevaluated = [], 0, 0, {}
    for g in (d.get("data") or {}).get("groups", []):
        for r in g.get("rules", []):
            n += 1
            if r.get("health") == "unknown" or str(r.get("lastEvaluation", "")).startswith("0001-"):
                if float(g.get("interval", 0)) <= min(settle, 10):
                    unknown += 1
                if r.get("type") == "recording":
                    unevaluated[r["name"]] = (g["name"], float(g.get("interval", 0)))
            elif r.get("health") != "ok":
                bad.append((g["name"], r.get("name"), r.get("health"), r.get("lastError", "")))
    return bad, n, unknown, unevaluated


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prom", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--settle", type=float, default=0)
    ap.add_argument("--host-job", default="drivewatch-host")
    args = ap.parse_args()
    prom = Prom(args.prom)
    os.makedirs(args.out, exist_ok=True)
    t0 = time.monotonic()

    up, err, _ = prom.query('up{job=~"drivewatch.*"}')
    if err or not up:
        print(f"check.py: no drivewatch scrape target in Prometheus ({err})", file=sys.stderr)
        return 2
    host_instance = next((s["metric"]["instance"] for s in up if s["metric"].get("job") == args.host_job), None)

    dash = dashboard_items(args.repo)
    rules, rule_files = rule_items(args.repo)
    items = dash + rules
    while True:
        scopes, instances, drives = build_scopes(prom, host_instance)
        bad_health, nrules, unknown, unevaluated = rule_health(prom, args.settle)
        evaluate(prom, items, scopes, unevaluated)
        waiting = pending(items)
        if (not waiting and not unknown) or time.monotonic() - t0 >= args.settle:
            break
        print(f"[liveproof] {time.monotonic() - t0:.0f}s: {len(waiting)} row(s) still without data, e.g. "
              f"{waiting[0][0].where} [{waiting[0][1]}]" if waiting else
              f"[liveproof] {unknown} rule(s) not evaluated yet", file=sys.stderr)
        time.sleep(5)
    waited = time.monotonic() - t0

    # Rule health: an evaluation error fails, whatever the expression returned.
    health_rows = []
    for gname, rname, health, lerr in bad_health:
        health_rows.append(("FAIL", f"rule group {gname}: {rname}", f"health {health}: {lerr}"))

    # Exporters the dashboards' $instance variable cannot select (it lists
    # label_values(drivewatch_build_info, instance)). Not a FAIL (All shows
    # them).
    notes = []
    exporting, _, _ = prom.query('count by (instance, job) ({__name__=~"drivewatch_(phase|retention|read_latency)_.+"})')
    for s in exporting:
        inst = s["metric"].get("instance")
        if inst not in instances:
            notes.append(f"NOTE: instance {inst} (job {s['metric'].get('job')}) exports {s['value'][1]} "
                         "phase / retention / read latency series, but the dashboards' $instance variable "
                         "(label_values(drivewatch_build_info, instance)) does not offer it, "
                         "so only 'All' shows its series")

    # Alerts that fire (or are pending) in this healthy setup: not a FAIL
    # (the expression works), but worth a look.
    for it in items:
        if it.kind == "alert" and it.result and not it.error:
            notes.append(f"NOTE: {it.where} returns {len(it.result)} series in this healthy setup: "
                         + "; ".join(series_name(r["metric"]) for r in it.result[:4]))

    # Windows whose percentiles rest on too few reads (the panels hide them).
    thin, _, _ = prom.query("drivewatch_read_latency_window_enough_samples == 0")
    thin_list = sorted(series_name(s["metric"]) for s in thin)
    samples, _, _ = prom.query("drivewatch_read_latency_window_samples")
    sample_list = sorted((series_name(s["metric"]), s["value"][1]) for s in samples)

    # ---- report
    counts = {"OK": 0, "EMPTY": 0, "FAIL": 0}
    scope_counts = {"OK": 0, "-": 0, "FAIL": 0}
    lines = []
    fails = []
    for it in items:
        for scope, status, nser, note in it.rows:
            if scope == "all":
                counts[status] += 1
            else:
                scope_counts[status] = scope_counts.get(status, 0) + 1
            lines.append(f"{status:5} {it.kind:9} {nser:4} [{scope}] {it.where}\n"
                         f"{'':16}{one_line(it.expr)}" + (f"\n{'':16}-> {note}" if note else ""))
            if status == "FAIL":
                fails.append(f"FAIL {it.kind} [{scope}] {it.where}: {note}\n    expression: {one_line(it.expr)}"
                             + (f"\n    as sent:    {one_line(it.sent)}" if it.kind == "dashboard" and scope == "all" else ""))
    for status, where, note in health_rows:
        counts["FAIL"] += 1
        fails.append(f"FAIL rule health {where}: {note}")
    summary = (f"liveproof: {len(items)} expressions/selectors ({len(dash)} dashboard, "
               f"{sum(1 for i in rules if i.kind == 'record')} recorded series, "
               f"{sum(1 for i in rules if i.kind == 'alert')} alerts, "
               f"{sum(1 for i in rules if i.kind == 'selector')} rule selectors): "
               f"OK {counts['OK']}, EMPTY {counts['EMPTY']}, FAIL {counts['FAIL']}; "
               f"per-scope rows: OK {scope_counts.get('OK', 0)}, no data expected "
               f"{scope_counts.get('-', 0)}, FAIL {scope_counts.get('FAIL', 0)}; "
               f"{nrules} rules loaded, {len(bad_health)} unhealthy; settled after {waited:.0f}s")
    with open(os.path.join(args.out, "liveproof.txt"), "w") as f:
        f.write(summary + "\n")
        f.write(f"scopes: {', '.join(s.name for s in scopes)}\n")
        f.write(f"rule files: {', '.join(os.path.basename(p) for p in rule_files)}\n")
        f.write(f"$__rate_interval = {RATE_INTERVAL}\n\n")
        if fails:
            f.write("\n".join(fails) + "\n\n")
        if notes:
            f.write("\n".join(notes) + "\n\n")
        f.write("STATUS KIND    SERIES [SCOPE] WHERE\n")
        f.write("\n".join(lines) + "\n\n")
        f.write("EMPTY (allowlisted), with the reason:\n")
        for it in items:
            if it.rows and it.rows[0][1] == "EMPTY":
                f.write(f"  {it.where}\n      {one_line(it.expr)}\n      -> {it.allow or it.auto_allow}\n")
        f.write("\nread latency windows without enough samples for their percentile "
                "(drivewatch_read_latency_window_enough_samples == 0; panel 'Read latency percentiles "
                "by rate (1 h window)' hides them, the alert ignores them):\n")
        f.write("".join(f"  {s}\n" for s in thin_list) or "  (none)\n")
        f.write("\nsamples per window:\n")
        f.write("".join(f"  {s} {v}\n" for s, v in sample_list))
    with open(os.path.join(args.out, "liveproof.json"), "w") as f:
        json.dump({"summary": summary, "scopes": [{"name": s.name, "pins": s.pins} for s in scopes],
                   "items": [{"kind": i.kind, "where": i.where, "expr": i.expr, "sent": i.sent,
                              "allow": i.allow, "rows": i.rows} for i in items],
                   "unhealthy_rules": bad_health, "thin_windows": thin_list}, f, indent=1)
    for line in fails + notes:
        print(line)
    print(summary)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
