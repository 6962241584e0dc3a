// SPDX-License-Identifier: Apache-2.0
#include "aging/report/svg_chart.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "aging/report/report_format.h"

namespace drivewatch::aging::svg {
namespace {

using report_format::Format;
using report_format::Html;

constexpr std::array<std::string_view, 8> kPalette = {"#2563eb", "#f59e0b", "#dc2626", "#16a34a",
                                                      "#9333ea", "#0891b2", "#db2777", "#65a30d"};

double Scale(const Axis& a, double v) {
  if (a.log) {
    const double lo = std::log10(a.min), hi = std::log10(a.max);
    const double l = std::clamp(std::log10(std::max(v, 1e-300)), lo, hi);
    return hi > lo ? (l - lo) / (hi - lo) : 0;
  }
  const double c = std::clamp(v, a.min, a.max);
  return a.max > a.min ? (c - a.min) / (a.max - a.min) : 0;
}

}  // namespace

Axis LinearAxis(double min, double max, std::string title) {
  Axis a;
  a.title = std::move(title);
  a.min = min;
  if (!(max > min) || !std::isfinite(max)) max = min + 1;
  const double span = max - min;
  const double magnitude = std::pow(10.0, std::floor(std::log10(span / 5)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (span / step <= 8) break;
  }
  const double steps = std::ceil(span / step - 1e-9);
  a.max = min + steps * step;
  const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  for (double i = 0; i <= steps + 1e-9; ++i) {
    const double v = min + i * step;
    a.ticks.push_back({v, report_format::Grouped(v, decimals)});
  }
  return a;
}

Axis LogAxis(double min, double max, std::string title,
             const std::function<std::string(double)>& label) {
  Axis a;
  a.log = true;
  a.title = std::move(title);
  if (!(min > 0) || !std::isfinite(min)) min = 1;
  if (!(max > min) || !std::isfinite(max)) max = min * 10;
  const int lo = static_cast<int>(std::floor(std::log10(min) + 1e-9));
  const int hi = std::max(lo + 1, static_cast<int>(std::ceil(std::log10(max) - 1e-9)));
  a.min = std::pow(10.0, lo);
  a.max = std::pow(10.0, hi);
  for (int d = lo; d <= hi; ++d) {
    const double v = std::pow(10.0, d);
    a.ticks.push_back({v, label(v)});
  }
  return a;
}

std::string Colour(std::size_t i) { return std::string(kPalette[i % kPalette.size()]); }

double Plot::X(double v) const { return left() + Scale(x_, v) * (right() - left()); }

double Plot::Y(double v) const { return bottom() - Scale(y_, v) * (bottom() - top()); }

std::string Plot::Open(std::string_view css_class, std::string_view aria_label,
                       std::string_view extra) const {
  return Format("<svg class=\"%s\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"%s\"%s%s>\n",
                std::string(css_class).c_str(), box_.width, box_.height, Html(aria_label).c_str(),
                extra.empty() ? "" : " ", std::string(extra).c_str());
}

std::string Plot::Axes() const {
  std::string out;
  for (const Tick& t : x_.ticks) {
    const double gx = X(t.value);
    out += Format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e7eb\"/>", gx,
                  top(), gx, bottom());
    out += Format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", gx,
                  bottom() + 18, Html(t.label).c_str());
  }
  for (const Tick& t : y_.ticks) {
    const double gy = Y(t.value);
    out += Format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e7eb\"/>",
                  left(), gy, right(), gy);
    out += Format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", left() - 8, gy + 4,
                  Html(t.label).c_str());
  }
  out +=
      Format("<text class=\"axis-title\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
             (left() + right()) / 2, box_.height - 6, Html(x_.title).c_str());
  out += Format(
      "<text class=\"axis-title\" transform=\"translate(14 %.1f) rotate(-90)\" "
      "text-anchor=\"middle\">%s</text>\n",
      (top() + bottom()) / 2, Html(y_.title).c_str());
  return out;
}

std::string Plot::PathData(const std::vector<Point>& points) const {
  std::string d;
  for (const Point& p : points) {
    if (!std::isfinite(p.x) || !std::isfinite(p.y)) continue;
    d += Format("%s%.1f %.1f", d.empty() ? "M" : "L", X(p.x), Y(p.y));
  }
  return d;
}

std::string Plot::VerticalMarker(double x, std::string_view css_class, std::string_view colour,
                                 std::string_view label, double label_y) const {
  const double lx = X(x);
  const std::string c(colour);
  std::string out = Format(
      "<line class=\"%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
      "stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>",
      std::string(css_class).c_str(), lx, top(), lx, bottom(), c.c_str());
  // A label near the right edge goes to the left of its line.
  const bool flip = lx > right() - 160;
  out += Format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" style=\"fill:%s\">%s</text>\n",
                flip ? lx - 6 : lx + 6, top() + 14 + label_y, flip ? "end" : "start", c.c_str(),
                Html(label).c_str());
  return out;
}

std::string Plot::Legend(const std::vector<LegendEntry>& entries, double top, double width,
                         double left) const {
  if (entries.empty()) return "";
  const double x = left >= 0 ? left : right() - width - 12;
  std::string out = "<g class=\"legend\">";
  out += Format(
      "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.0f\" height=\"%.1f\" fill=\"#fff\" "
      "fill-opacity=\"0.9\" rx=\"4\"/>",
      x - 8, top - 16, width, 18 * static_cast<double>(entries.size()) + 8);
  double y = top;
  for (const LegendEntry& e : entries) {
    out += Format(
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
        "stroke-width=\"4\"%s/>",
        x, y - 4, x + 18, y - 4, e.colour.c_str(), e.dashed ? " stroke-dasharray=\"5 3\"" : "");
    out += Format("<text x=\"%.1f\" y=\"%.1f\">", x + 26, y) + Html(e.label) + "</text>";
    y += 18;
  }
  out += "</g>\n";
  return out;
}

}  // namespace drivewatch::aging::svg
