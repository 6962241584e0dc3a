// SPDX-License-Identifier: Apache-2.0
// `drivewatch report --format=html`: one self-contained page (inline CSS
// and SVG, no script, no external resource) drawn from the model: per
// section its tables, charts, runs, expectation and verdict.
#include <algorithm>
#include <cmath>

#include "aging/report/drive_report_detail.h"
#include "aging/report/report_format.h"
#include "aging/report/retention_report_model.h"
#include "aging/report/svg_chart.h"

namespace drivewatch::aging::drive_report_detail {
namespace {

using report_format::Format;
using report_format::Html;
using report_format::Utc;

const char* const kReportCss = R"(
h1.drive{margin:36px 0 6px}
nav.sections{margin:0 0 18px;font-size:13px;line-height:2}
nav.sections a{color:#1d4ed8;text-decoration:none;margin-right:14px;white-space:nowrap}
div.scroll{overflow-x:auto;margin:4px 0 14px}
table.measures th{white-space:normal;vertical-align:bottom}
table caption{text-align:left;color:#374151;font-weight:600;padding:4px 0}
td.nm{color:#9ca3af;font-style:italic;white-space:normal}
table.measures th,table.measures td{padding:6px 7px}
@media print{main{max-width:none;padding:0}table.measures{font-size:11px}
table.measures th,table.measures td{padding:3px 4px}div.scroll{overflow:visible}}
table.runs{font-size:12px;color:#4b5563;margin:8px 0}
table.runs td,table.runs th{padding:3px 8px;text-align:left;white-space:normal}
figure.chart{margin:10px 0 16px}
figure.chart figcaption{font-weight:600;color:#374151;margin:0 0 4px}
.expectation{color:#374151;margin:10px 0 6px}
.verdict{font-size:16px;padding:10px 16px;margin:6px 0 0}
.verdict.info{background:#e0f2fe;color:#0c4a6e;border-color:#0284c7}
.verdict.not_measured{background:#f3f4f6;color:#4b5563;border-color:#9ca3af}
ul.damaged li{color:#7f1d1d}
.sources li{margin:2px 0}
)";

// Series of at most this many points have each point drawn.
constexpr std::size_t kDrawnPoints = 12;

std::string Str(const Json& j, std::string_view key) {
  const Json* v = Find(j, key);
  return v && v->is_string() ? AsString(*v) : std::string();
}

std::string Anchor(std::string_view s) {
  std::string out;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
    out += ok ? c : '-';
  }
  return out;
}

std::string Heading(const Json& column) {
  const std::string unit = UnitLabel(Str(column, "unit"));
  return Html(Str(column, "label")) + (unit.empty() ? "" : " <small>(" + Html(unit) + ")</small>");
}

std::string TableHtml(const Json& t) {
  std::string out = "<div class=\"scroll\"><table class=\"measures\" data-table=\"" +
                    Html(Str(t, "id")) + "\"><caption>" + Html(Str(t, "title")) +
                    "</caption><thead><tr><th></th>";
  const auto& columns = Items(*Find(t, "columns"));
  for (const Json& c : columns) out += "<th>" + Heading(c) + "</th>";
  out += "</tr></thead><tbody>\n";
  for (const Json& r : Items(*Find(t, "rows"))) {
    out += "<tr data-row=\"" + Html(Str(r, "label")) + "\"><td>" + Html(Str(r, "label")) + "</td>";
    for (const Json& c : columns) {
      const std::string key = Str(c, "key");
      const Json* v = Find(*Find(r, "values"), key);
      if (v == nullptr || v->is_null()) {
        out += "<td class=\"nm\">" + std::string(kNotMeasured) + "</td>";
        continue;
      }
      std::string text = Html(ShowValue(*v, Str(c, "unit")));
      const std::string mark = Str(*Find(r, "marks"), key);
      if (mark == "at_least") text = "\xe2\x89\xa5&nbsp;" + text;
      if (mark == "not_steady") text += "&nbsp;\xe2\x80\xa0";
      if (mark == "indicative") text = "\xe2\x89\x88&nbsp;" + text;
      if (const std::string spread = SpreadText(r, c); !spread.empty()) {
        text += "<br><small class=\"spread\">" + Html(spread) + "</small>";
      }
      out += "<td>" + text + "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</tbody></table></div>\n";
}

std::string RunsHtml(const Json& runs) {
  if (Items(runs).empty()) return "";
  std::string out =
      "<table class=\"runs\"><thead><tr><th>row</th><th>run</th><th>started</th>"
      "<th>drive age at its start</th><th>drive, source</th></tr></thead><tbody>\n";
  for (const Json& r : Items(runs)) {
    const Json* run = Find(r, "run");
    out += "<tr><td>" + Html(Str(r, "label")) + "</td>";
    if (run == nullptr || run->is_null()) {
      out += "<td colspan=\"4\" class=\"nm\">not measured: " + Html(Str(r, "note")) + " (" +
             Html(Str(r, "drive")) + ")</td></tr>\n";
      continue;
    }
    std::string age = "unknown";
    if (const Json* a = Find(*run, "age"); a && !a->is_null()) {
      age = ShowValue(*Find(*a, "power_on_hours"), "hours") + " power-on hours, " +
            ShowValue(*Find(*a, "percentage_used"), "count") + " % used, " +
            ShowValue(*Find(*a, "data_written_bytes"), "tb") + " TB written (" +
            ShowValue(*Find(*a, "drive_writes"), "x") + " drive writes)";
    } else if (Find(*run, "age_problem")) {
      age = "damaged: " + Str(*run, "age_problem");
    }
    out += "<td>" + Html(Str(*run, "id")) + "</td><td>" +
           Html(Utc(AsDouble(*Find(*run, "start")))) + "</td><td>" + Html(age) + "</td><td>" +
           Html(Str(r, "drive")) + ", " + Html(Str(*run, "source")) + "</td></tr>\n";
  }
  return out + "</tbody></table>\n";
}

std::string AxisTitle(const Json& axis) {
  const std::string unit = Str(axis, "unit");
  if (unit == "latency" || unit == "share" || unit.empty()) return Str(axis, "title");
  return Str(axis, "title") + " (" + unit + ")";
}

std::function<std::string(double)> LogLabel(const std::string& unit) {
  if (unit == "latency") return [](double v) { return retention_report_detail::LatencyTick(v); };
  if (unit == "share") {
    return [](double v) {
      const int decimals = std::max(0, static_cast<int>(std::lround(-std::log10(v))) - 2);
      return Format("%.*f%%", decimals, v * 100);
    };
  }
  return [](double v) { return v >= 1 ? report_format::Grouped(v, 0) : Format("%g", v); };
}

// An axis over [lo, hi] of the data: log over its decades, or linear from 0.
svg::Axis AxisFor(const Json& axis, double lo, double hi, bool from_zero) {
  const std::string unit = Str(axis, "unit");
  if (Str(axis, "scale") == "log") {
    if (unit == "latency") {
      lo = retention_report_detail::kLatencyTailMinSeconds;
      hi = retention_report_detail::kLatencyTailMaxSeconds;
    } else if (unit == "share") {
      lo = 1e-6;
      hi = 1;
    }
    return svg::LogAxis(lo > 0 ? lo : 1, hi, AxisTitle(axis), LogLabel(unit));
  }
  return svg::LinearAxis(from_zero ? 0 : lo, hi, AxisTitle(axis));
}

std::string LineChartHtml(const Json& c) {
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY;
  for (const Json& s : Items(*Find(c, "series"))) {
    for (const Json& p : Items(*Find(s, "points"))) {
      const double x = AsDouble(Items(p)[0]), y = AsDouble(Items(p)[1]);
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
      if (y > 0) y_lo = std::min(y_lo, y);
      y_hi = std::max(y_hi, y);
    }
  }
  for (const Json& m : Items(*Find(c, "markers"))) x_hi = std::max(x_hi, AsDouble(*Find(m, "x")));
  const svg::Plot plot({.width = 1000, .height = 360}, AxisFor(*Find(c, "x"), x_lo, x_hi, true),
                       AxisFor(*Find(c, "y"), y_lo, y_hi * 1.05, true));
  std::string out =
      plot.Open("chart-svg line", Str(c, "title"), "data-chart=\"" + Html(Str(c, "id")) + "\"");
  out += plot.Axes();
  std::vector<svg::LegendEntry> legend;
  // Series of one group (a row's before and after) share a colour.
  std::vector<std::string> groups;
  for (const Json& s : Items(*Find(c, "series"))) {
    std::vector<svg::Point> points;
    for (const Json& p : Items(*Find(s, "points"))) {
      points.push_back({AsDouble(Items(p)[0]), AsDouble(Items(p)[1])});
    }
    const bool dashed = AsBool(*Find(s, "dashed"));
    const std::string group = Find(s, "group") ? Str(s, "group") : Str(s, "name");
    auto at = std::find(groups.begin(), groups.end(), group);
    if (at == groups.end()) at = groups.insert(groups.end(), group);
    const std::string colour = svg::Colour(static_cast<std::size_t>(at - groups.begin()));
    out += Format(
        "<path class=\"series\" data-series=\"%s\" d=\"%s\" fill=\"none\" stroke=\"%s\" "
        "stroke-width=\"2\" stroke-linejoin=\"round\"%s/>\n",
        Html(Str(s, "name")).c_str(), plot.PathData(points).c_str(), colour.c_str(),
        dashed ? " stroke-dasharray=\"5 3\"" : "");
    // A short series (a phase of a second or two) is a dot or two that a
    // line alone would not show: each point is drawn.
    if (points.size() <= kDrawnPoints) {
      for (const svg::Point& pt : points) {
        out += Format("<circle class=\"point\" data-series=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" "
                      "fill=\"%s\"/>\n",
                      Html(Str(s, "name")).c_str(), plot.X(pt.x), plot.Y(pt.y), colour.c_str());
      }
    }
    legend.push_back({colour, Str(s, "name"), dashed});
  }
  // A marker takes its series' colour; their labels are stacked so that
  // close ones stay readable.
  double label_y = 0;
  for (const Json& m : Items(*Find(c, "markers"))) {
    std::string colour = "#dc2626";
    if (auto at = std::find(groups.begin(), groups.end(), Str(m, "series")); at != groups.end()) {
      colour = svg::Colour(static_cast<std::size_t>(at - groups.begin()));
    }
    out += plot.VerticalMarker(AsDouble(*Find(m, "x")), "marker", colour, Str(m, "label"), label_y);
    label_y += 16;
  }
  out += plot.Legend(legend, plot.top() + 40);
  return out + svg::Plot::Close();
}

std::string BarChartHtml(const Json& c) {
  const auto& groups = Items(*Find(c, "groups"));
  const auto& series = Items(*Find(c, "series"));
  double lo = INFINITY, hi = 0;
  for (const Json& s : series) {
    for (const Json& v : Items(*Find(s, "values"))) {
      if (v.is_null()) continue;
      if (AsDouble(v) > 0) lo = std::min(lo, AsDouble(v));
      hi = std::max(hi, AsDouble(v));
    }
  }
  const bool turn = groups.size() > 5;
  svg::Axis none;
  none.max = static_cast<double>(groups.size());
  // The legend goes in a right margin of its own: bars reach the top.
  const svg::Plot plot({.width = 1000, .height = 320, .right = 170, .bottom = turn ? 96.0 : 50.0},
                       none, AxisFor(*Find(c, "y"), lo, hi * 1.1, true));
  std::string out =
      plot.Open("chart-svg bars", Str(c, "title"), "data-chart=\"" + Html(Str(c, "id")) + "\"");
  out += plot.Axes();
  const double group_width = (plot.right() - plot.left()) / std::max<std::size_t>(1, groups.size());
  const double bar_width = group_width * 0.8 / std::max<std::size_t>(1, series.size());
  std::vector<svg::LegendEntry> legend;
  const std::string unit = Str(*Find(c, "y"), "unit");
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const double gx = plot.left() + group_width * static_cast<double>(g);
    const std::string name = AsString(groups[g]);
    if (turn) {
      out += Format(
          "<text class=\"group\" transform=\"translate(%.1f %.1f) rotate(-25)\" "
          "text-anchor=\"end\">%s</text>\n",
          gx + group_width / 2, plot.bottom() + 16, Html(name).c_str());
    } else {
      out +=
          Format("<text class=\"group\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                 gx + group_width / 2, plot.bottom() + 18, Html(name).c_str());
    }
    for (std::size_t i = 0; i < series.size(); ++i) {
      const Json& v = Items(*Find(series[i], "values"))[g];
      const double x = gx + group_width * 0.1 + bar_width * static_cast<double>(i);
      const std::string sname = Str(series[i], "name");
      if (v.is_null()) {
        out += Format(
            "<text class=\"missing\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
            "style=\"font-size:10px\">n/m</text>",
            x + bar_width / 2, plot.bottom() - 4);
        continue;
      }
      const double top = plot.Y(AsDouble(v));
      out += Format(
          "<rect class=\"bar\" data-series=\"%s\" data-group=\"%s\" x=\"%.1f\" y=\"%.1f\" "
          "width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s</title></rect>\n",
          Html(sname).c_str(), Html(name).c_str(), x, top, bar_width * 0.92,
          std::max(0.0, plot.bottom() - top), svg::Colour(i).c_str(),
          Html(sname + ", " + name + ": " +
               report_format::Grouped(AsDouble(v), AsDouble(v) < 10 ? 2 : 0) + " " + unit)
              .c_str());
    }
  }
  for (std::size_t i = 0; i < series.size(); ++i) {
    legend.push_back({svg::Colour(i), Str(series[i], "name"), false});
  }
  out += plot.Legend(legend, plot.top() + 20, 150, plot.right() + 20);
  return out + svg::Plot::Close();
}

std::string SectionHtml(const Json& s, const std::string& drive) {
  const std::string id = Str(s, "id");
  std::string out = "<section class=\"report-section\" id=\"" + Html(Anchor(drive + "-" + id)) +
                    "\" data-section=\"" + Html(id) + "\">\n<h2>" + Html(Str(s, "title")) +
                    "</h2>\n";
  for (const Json& t : Items(*Find(s, "tables"))) out += TableHtml(t);
  for (const Json& c : Items(*Find(s, "charts"))) {
    out += "<figure class=\"chart\"><figcaption>" + Html(Str(c, "title")) + "</figcaption>\n";
    out += Str(c, "type") == "bars" ? BarChartHtml(c) : LineChartHtml(c);
    out += "</figure>\n";
  }
  out += RunsHtml(*Find(s, "runs"));
  if (const Json* links = Find(s, "links")) {
    for (const Json& l : Items(*links)) {
      out += "<p class=\"note links\"><a href=\"" + Html(Str(l, "href")) + "\">" +
             Html(Str(l, "label")) +
             "</a> (written beside this page by <code>drivewatch report "
             "--format=html --output FILE</code>, or by <code>" +
             Html(Str(l, "command")) + "</code>)</p>\n";
    }
  }
  for (const Json& n : Items(*Find(s, "notes"))) {
    out += "<p class=\"note\">" + Html(AsString(n)) + "</p>\n";
  }
  const Json& v = *Find(s, "verdict");
  out += "<p class=\"expectation\"><b>Expectation:</b> " + Html(Str(s, "expectation")) + "</p>\n";
  out += "<div class=\"verdict " + Html(Str(v, "status")) + "\" data-verdict=\"" +
         Html(Str(v, "status")) + "\">Verdict: " + Html(Str(v, "line")) + "</div>\n";
  return out + "</section>\n";
}

}  // namespace

std::string RenderHtml(const Json& model) {
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>drivewatch report</title>\n<style>" + std::string(report_format::kCss) +
         kReportCss + "</style>\n</head>\n<body>\n<main>\n";
  out += "<h1>drivewatch report <small>generated " +
         Html(Utc(AsDouble(*Find(model, "generated")))) + "</small></h1>\n";
  out += "<p class=\"sub\">Rows: " + Html(RowsText(model)) + ".</p>\n";
  out += "<section id=\"sources\"><h2>Sources</h2><ul class=\"sources\">\n";
  std::string damaged;
  for (const Json& s : Items(*Find(model, "sources"))) {
    std::string line = Str(s, "file") + ": " + Str(s, "kind");
    if (Str(s, "kind") == "history") {
      line += Format(", %llu runs, %llu steps",
                     static_cast<unsigned long long>(AsUint(*Find(s, "runs"))),
                     static_cast<unsigned long long>(AsUint(*Find(s, "steps"))));
      if (const auto d = AsUint(*Find(s, "duplicates"))) {
        line += Format(", %llu already read from another file", static_cast<unsigned long long>(d));
      }
    }
    out += "<li>" + Html(line) + "</li>\n";
    for (const Json& d : Items(*Find(s, "damaged"))) {
      damaged += "<li>" + Html(Str(s, "file") + ": " + AsString(d)) + "</li>\n";
    }
  }
  out += "</ul>\n";
  if (!damaged.empty()) {
    out += "<h2>Damaged, so left out (never a result)</h2><ul class=\"damaged\" id=\"damaged\">\n" +
           damaged + "</ul>\n";
  }
  if (const auto& problems = Items(*Find(model, "problems")); !problems.empty()) {
    out += "<h2>Values left out</h2><ul class=\"damaged\">\n";
    for (const Json& p : problems) out += "<li>" + Html(AsString(p)) + "</li>\n";
    out += "</ul>\n";
  }
  out += "</section>\n";
  const auto& drives = Items(*Find(model, "drives"));
  if (drives.empty()) {
    out += "<section id=\"empty\"><p>The history holds no runs: nothing to report.</p></section>\n";
  }
  for (const Json& d : drives) {
    const std::string drive = Str(d, "drive");
    out += "<h1 class=\"drive\" id=\"" + Html(Anchor(drive)) + "\">Drive " + Html(drive);
    if (!Str(d, "model").empty()) out += " <small>" + Html(Str(d, "model")) + "</small>";
    out += "</h1>\n<nav class=\"sections\">";
    for (const Json& s : Items(*Find(d, "sections"))) {
      out += "<a href=\"#" + Html(Anchor(drive + "-" + Str(s, "id"))) + "\">" +
             Html(Str(s, "title")) + "</a>\n";
    }
    out += "</nav>\n";
    for (const Json& s : Items(*Find(d, "sections"))) out += SectionHtml(s, drive);
  }
  return out + "</main>\n</body>\n</html>\n";
}

}  // namespace drivewatch::aging::drive_report_detail
