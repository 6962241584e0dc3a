// SPDX-License-Identifier: Apache-2.0
// The HTML rendering of a retention study report: one self-contained page
// with inline CSS and SVG.
#include "aging/report/retention_report_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <utility>

#include "aging/report/svg_chart.h"

namespace drivewatch::aging::retention_report_detail {
namespace {

std::string SeriesColour(std::size_t i, bool has_baseline) {
  if (has_baseline && i == 0) return "#64748b";
  return svg::Colour(i - (has_baseline ? 1 : 0));
}

// The latency chart: for each read, the share of reads slower than x
// (complementary CDF), both axes logarithmic, so the tail that retention
// loss stretches (ECC retries, read-retry voltages) is as visible as the
// median.
std::string LatencyChart(const Summary& s) {
  svg::Axis x = svg::LogAxis(kLatencyTailMinSeconds, kLatencyTailMaxSeconds, "read latency",
                             [](double v) { return LatencyTick(v); });
  svg::Axis y = svg::LogAxis(1e-6, 1, "reads slower than this", [](double v) {
    const int decimals = std::max(0, static_cast<int>(std::lround(-std::log10(v))) - 2);
    return Format("%.*f%%", decimals, v * 100);
  });
  const svg::Plot plot({}, std::move(x), std::move(y));
  std::string out = plot.Open("latency-chart", "Share of reads slower than a latency, per read of the region");
  out += plot.Axes();
  // 100 ms: the reference report's limit.
  out += plot.VerticalMarker(kSlowReadSeconds, "limit", "#dc2626", "100 ms limit");

  std::vector<svg::LegendEntry> legend;
  for (std::size_t i = 0; i < s.reads.size(); ++i) {
    const Read& r = s.reads[i];
    if (!r.histogram || r.histogram->count() == 0) continue;
    const bool last = &r == s.LastVerify();
    const bool baseline = s.has_baseline && i == 0;
    const std::string colour = SeriesColour(i, s.has_baseline);
    out += Format(
        "<path class=\"series\" data-series=\"%s\" d=\"%s\" fill=\"none\" stroke=\"%s\" "
        "stroke-width=\"%s\" stroke-linejoin=\"round\"%s/>\n",
        Html(r.label).c_str(), plot.PathData(LatencyTail(*r.histogram)).c_str(), colour.c_str(),
        last ? "2.5" : "1.6", baseline ? " stroke-dasharray=\"5 3\"" : "");
    std::string label = r.label;
    if (auto age = Num(*r.json, {"age_seconds"}); age && r.label != "baseline") {
      label += ", " + Duration(age);
    }
    label += ", " + Utc(r.start, "%Y-%m-%d");
    legend.push_back({colour, label, baseline});
  }
  // Top right inside the plot, below the limit's label: a drive whose
  // reads are mostly slower than 1 ms is in trouble anyway.
  out += plot.Legend(legend, plot.top() + 40);
  out += svg::Plot::Close();
  return out;
}

// The region as a grid of cells, each a run of consecutive LBAs; a cell
// holding any bad block takes the colour of its worst class.
std::string BadBlockMap(const Json& study, const Read& r, std::array<std::uint64_t, 4>* cells_per_class) {
  const Region region = RegionOf(study);
  constexpr std::uint64_t kCols = 128, kRows = 16;
  constexpr double kW = 1000, kCellH = 14, kTopPad = 2, kLeftPad = 0;
  const double cell_w = kW / static_cast<double>(kCols);
  std::string out;
  if (region.blocks == 0) return "<p class=\"note\">The region is unknown.</p>\n";
  const std::uint64_t cells = std::min(region.blocks, kCols * kRows);
  const std::uint64_t per_cell = (region.blocks + cells - 1) / cells;
  const std::uint64_t rows = (cells + kCols - 1) / kCols;
  const double height = static_cast<double>(rows) * kCellH + 2 * kTopPad;

  // cell -> (worst class, ranges text)
  std::map<std::uint64_t, std::pair<std::size_t, std::string>> marked;
  std::uint64_t outside = 0;
  if (const Json* ranges = Find(*r.json, "ranges")) {
    for (const Json& range : Items(*ranges)) {
      const std::string cls = Str(range, {"class"});
      const auto it = std::find(kClasses.begin(), kClasses.end(), cls);
      if (it == kClasses.end()) continue;
      const std::size_t c = static_cast<std::size_t>(it - kClasses.begin());
      const std::uint64_t first = Whole(range, {"first_lba"}).value_or(0);
      std::uint64_t last = Whole(range, {"last_lba"}).value_or(first);
      if (last < first) last = first;
      if (first < region.first || first >= region.first + region.blocks) {
        ++outside;
        continue;
      }
      last = std::min(last, region.first + region.blocks - 1);
      std::string what = "LBA " + std::to_string(first);
      if (last != first) what += "\xe2\x80\x93" + std::to_string(last);
      what += ": " + std::string(kClassLabels[c]);
      for (std::uint64_t cell = (first - region.first) / per_cell;
           cell <= (last - region.first) / per_cell; ++cell) {
        auto [slot, inserted] = marked.try_emplace(cell, c, what);
        if (!inserted) {
          slot->second.first = std::min(slot->second.first, c);
          if (slot->second.second.size() < 400) slot->second.second += "\n" + what;
        }
      }
    }
  }
  out += Format(
      "<svg class=\"bad-block-map\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"Bad "
      "blocks in the region\">\n",
      kW, height);
  out += Format(
      "<rect class=\"region\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"3\" "
      "fill=\"#bbf7d0\"/>\n",
      kLeftPad, kTopPad, cell_w * static_cast<double>(std::min(cells, kCols)),
      static_cast<double>(rows) * kCellH);
  // Faint row separators so the strip reads as a grid.
  for (std::uint64_t row = 1; row < rows; ++row) {
    const double gy = kTopPad + static_cast<double>(row) * kCellH;
    out += Format("<line x1=\"0\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#f0fdf4\"/>", gy,
                  kW, gy);
  }
  out += "\n";
  for (const auto& [cell, what] : marked) {
    const double cx = kLeftPad + static_cast<double>(cell % kCols) * cell_w;
    const double cy = kTopPad + static_cast<double>(cell / kCols) * kCellH;
    (*cells_per_class)[what.first] += 1;
    out += Format(
        "<rect class=\"bad %s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
        "fill=\"%s\">",
        std::string(kClasses[what.first]).c_str(), cx, cy, cell_w, kCellH,
        std::string(kClassColours[what.first]).c_str());
    out += "<title>" + Html(what.second) + "</title></rect>\n";
  }
  out += "</svg>\n";
  out += "<p class=\"note\">" + Count(cells) + " cells of " + Plural(per_cell, "block", "blocks") +
         " each, LBA " + Count(region.first) + " top left to " +
         Count(region.first + region.blocks - 1) + " bottom right; green is intact.";
  if (outside != 0) out += " " + Plural(outside, "range lies", "ranges lie") + " outside the region.";
  if (Find(*r.json, "ranges_truncated") && AsBool(*Find(*r.json, "ranges_truncated"))) {
    out += " Only the first recorded ranges are shown (the list was truncated).";
  }
  out += "</p>\n";
  return out;
}

std::string Row(std::string_view label, const std::string& escaped_value) {
  return "<dt>" + std::string(label) + "</dt><dd>" + escaped_value + "</dd>\n";
}

std::string DeltaCell(const std::string& value, const std::string& delta, bool worse,
                      bool better) {
  std::string out = "<td>" + value;
  if (!delta.empty()) {
    out += "<span class=\"d";
    if (worse) out += " worse";
    if (better) out += " better";
    out += "\">" + delta + "</span>";
  }
  return out + "</td>";
}

// The page's head, title and verdict.
std::string Head(const Json& study, const Summary& s, double now) {
  const std::string name = Html(Str(study, {"study"}));
  std::string verdict_class = s.verdict;
  std::transform(verdict_class.begin(), verdict_class.end(), verdict_class.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>Retention study " + name + "</title>\n<style>" + std::string(kCss) +
         "</style>\n</head>\n<body>\n<main>\n";
  out += "<h1>Retention study " + name + " <small>" + Html(Str(study, {"id"})) + "</small></h1>\n";
  out += "<p class=\"sub\">" + Html(Str(study, {"model"})) + " &middot; serial " +
         Html(Str(study, {"serial"})) + " &middot; report generated " + Html(Utc(now)) + "</p>\n";
  out += "<div class=\"verdict " + verdict_class + "\" id=\"verdict\">" + Html(s.line) +
         "</div>\n";
  return out;
}

// The drive and the study, beside the time.
std::string Facts(const Json& study, double now) {
  std::string out = "<section id=\"facts\"><h2>Drive and study</h2><dl>\n";
  out += Row("model", Html(Str(study, {"model"})));
  out += Row("serial", "<span id=\"serial\">" + Html(Str(study, {"serial"})) + "</span>");
  out += Row("firmware", Html(Str(study, {"firmware"})));
  out += Row("device", Html(Str(study, {"device"})) + " (namespace " +
                           Html(Str(study, {"nsid"})) + ")");
  out += Row("target", Html(Str(study, {"target"})));
  std::string state = Str(study, {"state"});
  if (Str(study, {"reason"}) != "-") state += " (" + Str(study, {"reason"}) + ")";
  out += Row("state", Html(state));
  out += Row("region", Html(RegionText(study)));
  out += Row("pattern", Html(PatternText(study)));
  out += Row("written", Html(WrittenText(study, now)));
  out += "</dl></section>\n";
  return out;
}

std::string Time(const Summary& s) {
  std::string out = "<section id=\"time\"><h2>Time";
  if (s.estimated) {
    out += " <small class=\"d\">estimated now, no verify yet</small>";
  } else if (const Read* last = s.LastVerify()) {
    out += " <small class=\"d\">as of " + Html(last->label) + ", " + Html(Utc(last->start)) +
           "</small>";
  }
  out += "</h2><dl>\n";
  out += Row("wall age", Html(Duration(s.wall)));
  out += Row("powered on", Html(Duration(s.powered_on)));
  out += Row("powered off", Html(PoweredOffText(s)));
  out += Row("equivalent age", Html(EquivalentText(s)));
  out += Row("reference", Html(Format("%s, Ea %.2g eV, k = 8.617e-5 eV/K",
                                      Celsius(s.reference_k).c_str(), s.ea)));
  out += Row("stored at", s.storage_k ? Html(Celsius(s.storage_k))
                                      : std::string("not configured"));
  out += "</dl></section>\n";
  return out;
}

std::string Events(const Json& study) {
  const Json* events = Find(study, "events");
  if (!events || Items(*events).empty()) return "";
  std::string out =
      "<section id=\"events\"><h2>Events</h2><table><thead><tr><th>when</th><th>event</th>"
      "<th style=\"text-align:left\">detail</th></tr></thead><tbody>\n";
  for (const Json& e : Items(*events)) {
    out += "<tr class=\"event\"><td>" + Html(Utc(Num(e, {"time"}))) + "</td><td>" +
           Html(Str(e, {"kind"})) + "</td><td style=\"text-align:left\">" +
           Html(Str(e, {"detail"})) + "</td></tr>\n";
  }
  out += "</tbody></table></section>\n";
  return out;
}

// A latency quantile per read, each with its change against the baseline
// (worse beyond +20%, better beyond -20%).
std::string LatencyRow(const Summary& s, std::string_view label,
                       std::optional<double> Read::*field) {
  const Read* base = s.Baseline();
  std::string out = "<tr><td>" + std::string(label) + "</td>";
  for (const Read& r : s.reads) {
    std::string d;
    bool worse = false, better = false;
    if (base && &r != base && r.comparable) {
      d = Delta(r.*field, base->*field);
      if (r.*field && base->*field) {
        worse = *(r.*field) > *(base->*field) * 1.2;
        better = *(r.*field) < *(base->*field) * 0.8;
      }
    }
    out += DeltaCell(Html(Latency(r.*field)), Html(d), worse, better);
  }
  return out + "</tr>\n";
}

// A share of slow reads per read, each with its change against the
// baseline in percentage points.
std::string RatioRow(const Summary& s, std::string_view label,
                     std::optional<double> Read::*field) {
  const Read* base = s.Baseline();
  std::string out = "<tr><td>" + std::string(label) + "</td>";
  for (const Read& r : s.reads) {
    std::string d;
    bool worse = false;
    if (base && &r != base && r.comparable) {
      d = DeltaPoints(r.*field, base->*field);
      worse = r.*field && base->*field && *(r.*field) > *(base->*field);
    }
    out += DeltaCell(Html(Percent(r.*field)), Html(d), worse, false);
  }
  return out + "</tr>\n";
}

std::string LatencySection(const Summary& s) {
  std::string out = "<section id=\"latency\"><h2>Read latency</h2>\n" + LatencyChart(s);
  out += "<table class=\"latency\"><thead><tr><th></th>";
  for (const Read& r : s.reads) out += "<th>" + Html(r.label) + "</th>";
  out += "</tr></thead><tbody>\n";
  out += LatencyRow(s, "p50", &Read::p50);
  out += LatencyRow(s, "p99", &Read::p99);
  out += LatencyRow(s, "p99.9", &Read::p999);
  out += LatencyRow(s, "max", &Read::max);
  out += "<tr><td>n (reads timed)</td>";
  for (const Read& r : s.reads) out += "<td>" + (r.histogram ? Count(r.reads) : "-") + "</td>";
  out += "</tr>\n";
  out += RatioRow(s, "reads &gt; 10 ms", &Read::over10);
  out += RatioRow(s, "reads &gt; 100 ms", &Read::over100);
  out += "</tbody></table>\n";
  out += "<p class=\"note\">" + Html(s.MethodNote()) +
         (s.Baseline() ? " Changes are against the baseline read." : "") + "</p>\n";
  out += "</section>\n";
  return out;
}

// The judged read's bad ranges, in the page (the map's cells name them
// only in tooltips, which print and screen readers do not show), and its
// count per class.
std::string BadRanges(const Read& judged) {
  std::string out;
  if (const std::vector<RangeRow> ranges = RangeRows(judged); !ranges.empty()) {
    out += "<table class=\"ranges\"><thead><tr><th>LBAs</th><th>class</th><th>found</th></tr>"
           "</thead><tbody>\n";
    for (const RangeRow& range : ranges) {
      out += "<tr><td>" + Html(range.lbas) + "</td><td>" + Html(range.klass) + "</td><td>" +
             Html(range.detail) + "</td></tr>\n";
    }
    out += "</tbody></table>\n";
    if (Find(*judged.json, "ranges_truncated") && AsBool(*Find(*judged.json, "ranges_truncated"))) {
      out += "<p class=\"note\">More ranges were found than a study records; these are the first.</p>\n";
    }
  }
  out += "<div class=\"classes\">";
  for (std::size_t c = 0; c < kClasses.size(); ++c) {
    out += "<span class=\"class\"><span class=\"chip\" style=\"background:" +
           std::string(kClassColours[c]) + "\"></span>" + std::string(kClassLabels[c]) +
           "<span class=\"count\" data-class=\"" + std::string(kClasses[c]) + "\">" +
           Count(judged.bad[c]) + "</span></span>";
  }
  out += "</div>\n";
  return out;
}

// Every read's blocks by outcome.
std::string ReadsTable(const Summary& s) {
  std::string out =
      "<table class=\"reads\"><thead><tr><th>read</th><th>date</th><th>age</th>"
      "<th>equivalent age</th><th>blocks</th><th>ok</th><th>unreadable</th><th>wrong</th>"
      "<th>misplaced</th><th>stale</th><th>outcome</th></tr></thead><tbody>\n";
  for (const Read& r : s.reads) {
    out += "<tr><td>" + Html(r.label) + "</td><td>" + Html(Utc(r.start, "%Y-%m-%d")) +
           "</td><td>" + Html(Duration(Num(*r.json, {"age_seconds"}))) + "</td><td>" +
           Html(Duration(Num(*r.json, {"equivalent_age_seconds"}))) + "</td><td>" +
           Count(r.blocks) + "</td><td>" + (r.ok ? Count(*r.ok) : "-") + "</td>";
    for (std::size_t c = 0; c < kClasses.size(); ++c) {
      out += std::string(r.bad[c] != 0 ? "<td class=\"worse\">" : "<td>") + Count(r.bad[c]) +
             "</td>";
    }
    out += "<td>" + Html(r.outcome.empty() ? "-" : r.outcome) + "</td></tr>\n";
  }
  out += "</tbody></table>\n";
  return out;
}

std::string BadBlocksSection(const Json& study, const Summary& s) {
  const Read* judged = s.Judged();
  std::string out = "<section id=\"bad-blocks\"><h2>Bad blocks <small class=\"d\">" +
                    Html(judged->label) + "</small></h2>\n";
  std::array<std::uint64_t, 4> cells{};
  out += BadBlockMap(study, *judged, &cells);
  out += BadRanges(*judged);
  out += ReadsTable(s);
  out += "</section>\n";
  return out;
}

std::string SmartSection(const Json& study, const Summary& s) {
  std::string out =
      "<section id=\"smart\"><h2>SMART since the write</h2><table><thead><tr><th></th>"
      "<th>at write</th>";
  for (const Read& r : s.reads) out += "<th>" + Html(r.label) + "</th>";
  out += "</tr></thead><tbody>\n";
  for (std::size_t f = 0; f < kSmartFields.size(); ++f) {
    const bool alarming = f <= 1 || f == 3;  // media errors, error log, unsafe shutdowns
    out += "<tr><td>" + std::string(kSmartLabels[f]) + "</td><td>" +
           Html(Str(study, {"smart_at_write", kSmartFields[f]})) + "</td>";
    for (const Read& r : s.reads) {
      const auto d = SmartDelta(r, kSmartFields[f]);
      const bool worse = alarming && d && *d > 0;
      out += std::string(worse ? "<td class=\"worse\">" : "<td>") + Html(Signed(d)) + "</td>";
    }
    out += "</tr>\n";
  }
  out += "</tbody></table>\n<p class=\"note\">Changes since the pattern was written.</p>\n"
         "</section>\n";
  return out;
}

}  // namespace

std::string RenderHtml(const Json& study, const Summary& s, double now) {
  std::string out = Head(study, s, now);
  out += "<div class=\"cols\">\n" + Facts(study, now) + Time(s) + "</div>\n";
  out += Events(study);
  if (s.reads.empty()) {
    out += "<section><h2>Reads</h2><p>Nothing has been read back yet.</p></section>\n";
  } else {
    out += LatencySection(s);
    out += BadBlocksSection(study, s);
    out += SmartSection(study, s);
  }
  out += "</main>\n</body>\n</html>\n";
  return out;
}

}  // namespace drivewatch::aging::retention_report_detail
