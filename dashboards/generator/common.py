# SPDX-License-Identifier: Apache-2.0
import json

DS = {"type": "prometheus", "uid": "${datasource}"}
SEL = 'instance=~"$instance", serial=~"$serial"'


def sel(extra=""):
    return "{" + (extra + ", " if extra else "") + SEL + "}"


class Builder:
    def __init__(self):
        self.panels = []
        self.next_id = 1
        self.x = 0
        self.y = 0
        self.row_h = 0

    def _place(self, w, h):
        if self.x + w > 24:
            self.x = 0
            self.y += self.row_h
            self.row_h = 0
        pos = {"x": self.x, "y": self.y, "w": w, "h": h}
        self.x += w
        self.row_h = max(self.row_h, h)
        return pos

    def row(self, title):
        if self.x:
            self.x = 0
            self.y += self.row_h
            self.row_h = 0
        p = {"type": "row", "id": self.next_id, "title": title, "collapsed": False,
             "gridPos": {"x": 0, "y": self.y, "w": 24, "h": 1}, "panels": []}
        self.next_id += 1
        self.y += 1
        self.panels.append(p)
        return p

    def panel(self, ptype, title, w, h, targets, description="", unit=None, **kw):
        p = {"type": ptype, "id": self.next_id, "title": title,
             "gridPos": self._place(w, h), "datasource": DS}
        self.next_id += 1
        if description:
            p["description"] = description
        p["targets"] = [dict(t, datasource=DS) for t in targets]
        fc = kw.pop("fieldConfig", None) or {"defaults": {}, "overrides": []}
        if unit:
            fc["defaults"]["unit"] = unit
        for k in ("min", "max", "decimals", "mappings", "thresholds", "color", "noValue"):
            if k in kw:
                fc["defaults"][k] = kw.pop(k)
        if "custom" in kw:
            fc["defaults"]["custom"] = kw.pop("custom")
        if "overrides" in kw:
            fc["overrides"] = kw.pop("overrides")
        p["fieldConfig"] = fc
        p.update(kw)
        self.panels.append(p)
        return p


def target(expr, legend="", ref="A", **kw):
    t = {"refId": ref, "expr": expr, "editorMode": "code", "range": True, "instant": False}
    if legend:
        t["legendFormat"] = legend
    t.update(kw)
    return t


def table_target(expr, ref):
    return {"refId": ref, "expr": expr, "editorMode": "code", "format": "table",
            "instant": True, "range": False}


def thresholds(*steps):
    """steps: ("green", None), ("red", 80) ..."""
    return {"mode": "absolute",
            "steps": [{"color": c, "value": v} for c, v in steps]}


def ts_custom(draw="line", fill=0, stack=False, points="never", interp="linear", line=1):
    c = {"drawStyle": draw, "lineWidth": line, "fillOpacity": fill, "showPoints": points,
         "lineInterpolation": interp, "spanNulls": False, "axisPlacement": "auto"}
    if stack:
        c["stacking"] = {"mode": "normal", "group": "A"}
    return c


def ts_options(legend="table", calcs=("lastNotNull", "max")):
    return {"legend": {"displayMode": legend, "placement": "bottom", "showLegend": True,
                       "calcs": list(calcs)},
            "tooltip": {"mode": "multi", "sort": "desc"}}


def stat_options(color_mode="background", text="auto"):
    return {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "colorMode": color_mode, "graphMode": "area", "justifyMode": "auto",
            "orientation": "auto", "textMode": text, "wideLayout": True,
            "showPercentChange": False}


def override(name, *props, regex=False):
    return {"matcher": {"id": "byRegexp" if regex else "byName", "options": name},
            "properties": [{"id": k, "value": v} for k, v in props]}


def query_variable(name, label, query):
    """A multi-value template variable from a label_values() query, "All" by default."""
    return {"type": "query", "name": name, "label": label, "datasource": DS,
            "definition": query,
            "query": {"query": query, "refId": "StandardVariableQuery"},
            "refresh": 2, "sort": 1, "multi": True, "includeAll": True, "allValue": ".*",
            "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
            "options": [], "regex": "", "hide": 0}


def variables(extra=()):
    return [
        {"type": "datasource", "name": "datasource", "label": "Data source",
         "query": "prometheus", "refresh": 1, "regex": "", "hide": 0,
         "includeAll": False, "multi": False, "current": {}, "options": []},
        query_variable("instance", "Host", "label_values(drivewatch_build_info, instance)"),
        query_variable("serial", "Serial",
                       'label_values(drivewatch_drive_info{instance=~"$instance"}, serial)'),
    ] + list(extra)


def dashboard(uid, title, description, panels, tvars, time_from="now-24h", refresh="1m", tags=()):
    return {
        "id": None,
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["drivewatch", "nvme"] + list(tags),
        "timezone": "browser",
        "editable": True,
        "graphTooltip": 1,
        "fiscalYearStartMonth": 0,
        "liveNow": False,
        "refresh": refresh,
        "schemaVersion": 39,
        "version": 1,
        "weekStart": "",
        "time": {"from": time_from, "to": "now"},
        "timepicker": {},
        "annotations": {"list": [{
            "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
            "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
            "name": "Annotations & Alerts", "type": "dashboard"}]},
        "links": [{"title": "drivewatch", "type": "dashboards", "tags": ["drivewatch"],
                   "asDropdown": True, "includeVars": True, "keepTime": True,
                   "icon": "external link", "targetBlank": False, "tooltip": "", "url": ""}],
        "templating": {"list": tvars},
        "panels": panels,
    }


def write(path, dash):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(dash, f, indent=2, ensure_ascii=False)
        f.write("\n")
