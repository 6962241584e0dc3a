#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Lint drivewatch's Grafana dashboards (dashboards/grafana/*.json).

usage: lint_dashboards.py SOURCE_DIR [--prometheus BINARY] [--no-promql]

Checks, for every dashboard:
  - valid JSON, schemaVersion >= 39, a title and a stable uid (unique across
    the dashboards);
  - unique panel ids (panels nested in collapsed rows included);
  - the template variables: `datasource` (type datasource, query prometheus),
    `instance` (label_values over drivewatch_build_info) and `serial` (over
    drivewatch_drive_info), multi,
    include all);
  - no hard-coded datasource: every panel with targets, every target and
    every query variable uses {"type": "prometheus", "uid": "${datasource}"};
  - every template variable an expression uses is defined (or a Grafana
    built-in), and multi-value variables are only used inside =~ / !~;
  - panel units are known Grafana unit ids;
  - every metric name in every expression (drivewatch_[a-z0-9_]+, histogram
    suffixes _bucket/_sum/_count allowed for documented histograms) is listed
    in docs/metrics.md, and every recording-rule name (a name with ':') is
    recorded in dashboards/rules/*.yml;
  - every expression parses as PromQL in a real Prometheus server (started
    here with an empty scrape config): template variables are replaced with
    plausible values and each expression runs as an instant query; HTTP 400
    bad_data fails the lint with dashboard, panel title and expression.

Exits 0 when clean, 1 with one line per problem otherwise.
"""

import argparse
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

MIN_SCHEMA_VERSION = 39
DS_REF = {"type": "prometheus", "uid": "${datasource}"}

# Grafana unit ids the dashboards may use (a typo silently shows raw numbers).
KNOWN_UNITS = {
    "none", "short", "percent", "percentunit", "celsius", "bytes", "decbytes",
    "bits", "Bps", "binBps", "bps", "s", "ms", "µs", "ns", "m", "h", "d",
    "dtdurations", "dtdurationms", "dthms", "watt", "kwatt", "mwatt", "joule",
    "watth", "kwatth", "iops", "ops", "reqps", "rps", "wps", "rwps", "locale",
    "string", "bool", "bool_yes_no", "bool_on_off", "dateTimeAsIso",
    "dateTimeAsIsoNoDateIfToday", "dateTimeAsLocal", "dateTimeFromNow",
    "dateTimeAsSystem", "timeticks", "clocks", "hertz", "volt", "amp",
}

# Grafana's built-in variables and the values substituted for them.
BUILTIN_VARS = {
    "__rate_interval": "1m",
    "__interval": "30s",
    "__interval_ms": "30000",
    "__range": "6h",
    "__range_s": "21600",
    "__range_ms": "21600000",
    "__from": "1700000000000",
    "__to": "1700021600000",
    "__dashboard": "dashboard",
    "__org": "1",
    "__user": "user",
}

# $var, ${var}, ${var:format}, [[var]], [[var:format]]
VAR_RE = re.compile(
    r"\$\{(?P<b>[A-Za-z0-9_]+)(?::[A-Za-z0-9_]+)?\}"
    r"|\[\[(?P<s>[A-Za-z0-9_]+)(?::[A-Za-z0-9_]+)?\]\]"
    r"|\$(?P<p>[A-Za-z0-9_]+)")
STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
MATCHER_RE = re.compile(
    r'([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')')
METRIC_RE = re.compile(r"(?<![A-Za-z0-9_:])drivewatch_[a-z0-9_]+")
RECORD_RE = re.compile(r"(?<![A-Za-z0-9_:])[a-zA-Z_][a-zA-Z0-9_]*:[a-zA-Z0-9_:]*[a-zA-Z0-9_]")
LABEL_VALUES_RE = re.compile(r"^\s*label_values\s*\((.*?)(?:,\s*([A-Za-z_][A-Za-z0-9_]*))?\s*\)\s*$", re.S)
QUERY_RESULT_RE = re.compile(r"^\s*query_result\s*\((.*)\)\s*$", re.S)


class Lint:
    def __init__(self):
        self.problems = []

    def fail(self, where, msg):
        self.problems.append(f"{where}: {msg}")


def documented_metrics(src):
    """Backticked drivewatch_* names in docs/metrics.md, and which of them
    are histograms (their table row says `histogram`)."""
    path = os.path.join(src, "docs", "metrics.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    names = set(re.findall(r"`(drivewatch_[a-z0-9_]+)`", text))
    histograms = set()
    for line in text.splitlines():
        m = re.match(r"\|\s*`(drivewatch_[a-z0-9_]+)`\s*\|\s*histogram\s*\|", line)
        if m:
            histograms.add(m.group(1))
    return names, histograms


def recording_rules(src):
    """Names recorded by dashboards/rules/*.yml (not the promtool test files)."""
    names = set()
    files = sorted(glob.glob(os.path.join(src, "dashboards", "rules", "*.yml")) +
                   glob.glob(os.path.join(src, "dashboards", "rules", "*.yaml")))
    for path in files:
        if re.search(r"\.test\.ya?ml$", path):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            import yaml  # optional; the regex below does without it
            doc = yaml.safe_load(text) or {}
            for group in doc.get("groups", []) or []:
                for rule in group.get("rules", []) or []:
                    if "record" in rule:
                        names.add(str(rule["record"]))
        except ImportError:
            for m in re.finditer(r"^\s*-?\s*record:\s*['\"]?([A-Za-z0-9_:]+)", text, re.M):
                names.add(m.group(1))
    return names


def walk_panels(panels):
    for p in panels or []:
        yield p
        # Collapsed rows keep their panels inside; so do library-ish nests.
        yield from walk_panels(p.get("panels"))


def ds_is_variable(ds):
    return isinstance(ds, dict) and ds.get("type") == "prometheus" and ds.get("uid") == "${datasource}"


def find_hardcoded_datasources(obj, path=""):
    """Every "datasource" object anywhere whose uid is not a variable, except
    Grafana's own built-in annotation source."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "datasource":
                if isinstance(v, dict):
                    uid = str(v.get("uid", ""))
                    if v.get("type") == "grafana" or uid == "-- Grafana --":
                        pass
                    elif not uid.startswith("$"):
                        out.append(f"{path}/{k} = {json.dumps(v)}")
                elif isinstance(v, str) and v and not v.startswith("$") and v != "-- Grafana --":
                    out.append(f"{path}/{k} = {json.dumps(v)}")
            out.extend(find_hardcoded_datasources(v, f"{path}/{k}"))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.extend(find_hardcoded_datasources(v, f"{path}[{i}]"))
    return out


def variable_values(variables):
    """A plausible substitution for each dashboard variable."""
    values = dict(BUILTIN_VARS)
    multi = set()
    for v in variables:
        name = v.get("name")
        vtype = v.get("type")
        if v.get("multi") or v.get("includeAll"):
            multi.add(name)
        if vtype == "datasource":
            values[name] = "prometheus"
        elif vtype in ("interval",):
            opts = [o.strip() for o in str(v.get("query", "1h")).split(",") if o.strip()]
            values[name] = opts[0] if opts else "1h"
        elif vtype in ("custom",):
            opts = [o.strip() for o in str(v.get("query", "")).split(",") if o.strip()]
            opts = [o.split(" : ")[-1] for o in opts]
            if name in multi and len(opts) > 1:
                values[name] = "(" + "|".join(opts[:2]) + ")"
            else:
                values[name] = opts[0] if opts else "x"
        elif vtype in ("constant", "textbox"):
            values[name] = str(v.get("query", "")) or "x"
        else:  # query and anything else: what a multi-value regex looks like
            values[name] = f"({name}-a|{name}\\\\.b:1)" if name in multi else f"{name}-a"
    return values, multi


def substitute(expr, values):
    def repl(m):
        name = m.group("b") or m.group("s") or m.group("p")
        return values.get(name, m.group(0))
    return VAR_RE.sub(repl, expr)


def used_variables(expr):
    return [m.group("b") or m.group("s") or m.group("p") for m in VAR_RE.finditer(expr)]


def metric_names(expr):
    """(drivewatch_* names, recording-rule names) in an expression, ignoring
    string literals and template variables."""
    bare = STRING_RE.sub('""', expr)
    bare = VAR_RE.sub("1m", bare)
    bare = re.sub(r"\[[^\]]*\]", "[1m]", bare)  # range / subquery selectors: 5m:1m
    records = set(RECORD_RE.findall(bare))
    for r in records:
        bare = bare.replace(r, " ")
    return set(METRIC_RE.findall(bare)), records


def collect_expressions(dash, lint, dname):
    """[(panel title, expression)] for targets and query variables."""
    exprs = []
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v.get("query")
        if isinstance(q, dict):
            q = q.get("query", "")
        q = q or v.get("definition", "")
        where = f"variable ${v.get('name')}"
        m = LABEL_VALUES_RE.match(q)
        if m:
            exprs.append((where, m.group(1)))
            continue
        m = QUERY_RESULT_RE.match(q)
        if m:
            exprs.append((where, m.group(1)))
            continue
        m = re.match(r"^\s*(label_names|metrics)\s*\(", q)
        if m:
            continue
        lint.fail(f"{dname}: {where}", f"unrecognised variable query {q!r}")
    for p in walk_panels(dash.get("panels")):
        for t in p.get("targets", []) or []:
            if t.get("hide"):
                pass  # hidden queries are still run by expressions/transforms
            e = t.get("expr")
            if e is None:
                continue
            exprs.append((f"panel {p.get('title', '?')!r} (id {p.get('id')}) ref {t.get('refId')}", e))
    return exprs


class Prometheus:
    def __init__(self, binary):
        self.tmp = tempfile.mkdtemp(prefix="dw-dashlint.")
        cfg = os.path.join(self.tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 15s\nscrape_configs: []\n")
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.log = open(os.path.join(self.tmp, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            [binary, f"--config.file={cfg}",
             f"--web.listen-address=127.0.0.1:{self.port}",
             f"--storage.tsdb.path={os.path.join(self.tmp, 'data')}",
             "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.time() + 15
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.proc.returncode}: {self.logtext()}")
            try:
                with urllib.request.urlopen(self.base + "/-/ready", timeout=1) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if time.time() > deadline:
                raise RuntimeError("prometheus not ready after 15 s: " + self.logtext())
            time.sleep(0.05)

    def logtext(self):
        self.log.flush()
        with open(os.path.join(self.tmp, "prometheus.log")) as f:
            return f.read()[-2000:]

    def query(self, expr):
        """(http status, json body) of an instant query."""
        data = urllib.parse.urlencode({"query": expr, "time": "1700000000"}).encode()
        req = urllib.request.Request(self.base + "/api/v1/query", data=data)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            body = e.read()
            try:
                return e.code, json.loads(body)
            except ValueError:
                return e.code, {"error": body.decode(errors="replace")}

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source_dir")
    ap.add_argument("--prometheus", default=os.environ.get("PROMETHEUS", "prometheus"))
    ap.add_argument("--no-promql", action="store_true", help="skip the PromQL parse check")
    args = ap.parse_args()
    src = os.path.abspath(args.source_dir)
    lint = Lint()

    files = sorted(glob.glob(os.path.join(src, "dashboards", "grafana", "*.json")))
    if not files:
        print(f"FAIL: no dashboards in {src}/dashboards/grafana", file=sys.stderr)
        return 1
    documented, histograms = documented_metrics(src)
    records = recording_rules(src)

    uids = {}
    all_exprs = []  # (dashboard, where, raw expr, substituted expr)
    n_panels = 0
    names_seen, records_seen = set(), set()
    for path in files:
        dname = os.path.basename(path)
        try:
            with open(path, encoding="utf-8") as f:
                dash = json.load(f)
        except ValueError as e:
            lint.fail(dname, f"invalid JSON: {e}")
            continue
        if not isinstance(dash, dict):
            lint.fail(dname, "not a JSON object")
            continue

        sv = dash.get("schemaVersion")
        if not isinstance(sv, int) or sv < MIN_SCHEMA_VERSION:
            lint.fail(dname, f"schemaVersion {sv!r} < {MIN_SCHEMA_VERSION}")
        if not dash.get("title"):
            lint.fail(dname, "no title")
        uid = dash.get("uid")
        if not uid or not isinstance(uid, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,40}", uid):
            lint.fail(dname, f"missing or invalid uid {uid!r}")
        elif uid in uids:
            lint.fail(dname, f"uid {uid!r} also used by {uids[uid]}")
        else:
            uids[uid] = dname
        if "id" in dash and dash["id"] is not None:
            lint.fail(dname, "dashboard id must be null (Grafana assigns it)")

        # Variables.
        variables = dash.get("templating", {}).get("list", [])
        by_name = {v.get("name"): v for v in variables}
        ds = by_name.get("datasource")
        if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
            lint.fail(dname, "no `datasource` variable of type datasource with query prometheus")
        for vn in ("instance", "serial"):
            v = by_name.get(vn)
            if not v:
                lint.fail(dname, f"no `{vn}` variable")
                continue
            q = v.get("query")
            q = q.get("query", "") if isinstance(q, dict) else (q or "")
            m = LABEL_VALUES_RE.match(q)
            # Every drivewatch has build_info, also one watching only file
            # targets (no drive_info): instances come from it; serials
            # from drive_info.
            source = "drivewatch_build_info" if vn == "instance" else "drivewatch_drive_info"
            if v.get("type") != "query" or not m or m.group(2) != vn or source not in m.group(1):
                lint.fail(dname, f"`{vn}` variable must be label_values({source}..., {vn}), got {q!r}")
            if not v.get("multi") or not v.get("includeAll"):
                lint.fail(dname, f"`{vn}` variable must be multi-value and include All")
        for v in variables:
            if v.get("type") == "query" and not ds_is_variable(v.get("datasource")):
                lint.fail(dname, f"variable ${v.get('name')}: datasource must be {json.dumps(DS_REF)}")
        values, multi = variable_values(variables)

        # Panels.
        ids = {}
        panels = list(walk_panels(dash.get("panels")))
        n_panels += len(panels)
        for p in panels:
            pid = p.get("id")
            title = p.get("title", "?")
            where = f"{dname}: panel {title!r} (id {pid})"
            if not isinstance(pid, int):
                lint.fail(where, "panel without an integer id")
            elif pid in ids:
                lint.fail(where, f"duplicate panel id (also {ids[pid]!r})")
            else:
                ids[pid] = title
            if "gridPos" not in p:
                lint.fail(where, "no gridPos")
            targets = p.get("targets") or []
            if targets:
                if not ds_is_variable(p.get("datasource")):
                    lint.fail(where, f"panel datasource must be {json.dumps(DS_REF)}, got {json.dumps(p.get('datasource'))}")
                refs = set()
                for t in targets:
                    if not ds_is_variable(t.get("datasource")):
                        lint.fail(where, f"target {t.get('refId')}: datasource must be {json.dumps(DS_REF)}")
                    if not t.get("refId"):
                        lint.fail(where, "target without refId")
                    elif t["refId"] in refs:
                        lint.fail(where, f"duplicate refId {t['refId']}")
                    refs.add(t.get("refId"))
                    if "expr" in t and not str(t.get("expr", "")).strip():
                        lint.fail(where, f"target {t.get('refId')}: empty expression")
            units = [p.get("fieldConfig", {}).get("defaults", {}).get("unit")]
            for o in p.get("fieldConfig", {}).get("overrides", []) or []:
                for prop in o.get("properties", []) or []:
                    if prop.get("id") == "unit":
                        units.append(prop.get("value"))
            for u in units:
                if u and u not in KNOWN_UNITS and not u.startswith(("suffix:", "prefix:")):
                    lint.fail(where, f"unknown unit {u!r}")

        for hard in find_hardcoded_datasources(dash):
            lint.fail(dname, f"hard-coded datasource at {hard}")

        # Expressions.
        for where, expr in collect_expressions(dash, lint, dname):
            loc = f"{dname}: {where}"
            for vn in used_variables(expr):
                if vn not in values:
                    lint.fail(loc, f"undefined variable ${vn} in {expr!r}")
            # A multi-value variable expands to a regex: only =~ and !~ take it.
            for m in MATCHER_RE.finditer(expr):
                op, lit = m.group(2), m.group(3)
                if op in ("=", "!=") and any(v in multi for v in used_variables(lit)):
                    lint.fail(loc, f"multi-value variable used with {op} (needs =~): {m.group(0)}")
            names, recs = metric_names(expr)
            names_seen |= names
            records_seen |= recs
            for n in sorted(names):
                base = re.sub(r"_(bucket|sum|count)$", "", n)
                if n in documented:
                    continue
                if base != n and base in histograms:
                    continue
                lint.fail(loc, f"metric {n} is not in docs/metrics.md: {expr!r}")
            for r in sorted(recs):
                if r not in records:
                    lint.fail(loc, f"recording rule {r} is not recorded in dashboards/rules/*.yml: {expr!r}")
            all_exprs.append((dname, where, expr, substitute(expr, values)))

    # Grafana provisioning: the provider loads the installed dashboards.
    prov = os.path.join(src, "dashboards", "provisioning", "dashboards", "drivewatch.yaml")
    if not os.path.exists(prov):
        lint.fail("provisioning", f"missing {prov}")
    else:
        with open(prov, encoding="utf-8") as f:
            text = f.read()
        if not re.search(r"^\s*path:\s*/usr/share/drivewatch/dashboards\s*$", text, re.M):
            lint.fail(prov, "provider must load from /usr/share/drivewatch/dashboards")
        try:
            import yaml
            doc = yaml.safe_load(text)
            if not doc.get("providers"):
                lint.fail(prov, "no providers")
        except ImportError:
            pass
        except Exception as e:  # yaml.YAMLError and a wrong shape
            lint.fail(prov, f"invalid YAML: {e}")

    # PromQL, parsed by a real Prometheus.
    parsed = 0
    if not args.no_promql:
        binary = shutil.which(args.prometheus) or args.prometheus
        if not os.path.exists(binary):
            lint.fail("prometheus", f"binary {args.prometheus!r} not found")
        else:
            prom = Prometheus(binary)
            try:
                for dname, where, raw, expr in all_exprs:
                    status, body = prom.query(expr)
                    if status == 200 and body.get("status") == "success":
                        parsed += 1
                    elif status == 400 or body.get("errorType") == "bad_data":
                        lint.fail(f"{dname}: {where}",
                                  f"PromQL does not parse: {body.get('error')}\n    expression: {raw}\n    as sent:    {expr}")
                    elif status == 422:
                        parsed += 1  # parsed; failed to execute on an empty TSDB
                        print(f"note: {dname}: {where}: executes with an error on an empty TSDB: {body.get('error')}")
                    else:
                        lint.fail(f"{dname}: {where}", f"unexpected HTTP {status} {body}: {raw}")
            finally:
                prom.close()

    print(f"dashboards: {len(files)}, panels: {n_panels}, expressions: {len(all_exprs)} "
          f"({parsed} parsed by Prometheus), metric names: {len(names_seen)}, "
          f"recording rules: {len(records_seen)}")
    if lint.problems:
        for p in lint.problems:
            print("FAIL: " + p, file=sys.stderr)
        print(f"{len(lint.problems)} problem(s)", file=sys.stderr)
        return 1
    print("ok: dashboards lint clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
