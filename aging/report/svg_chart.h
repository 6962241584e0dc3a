// SPDX-License-Identifier: Apache-2.0
// Inline SVG charts for the HTML reports (`drivewatch retention report`,
// `drivewatch report`): a plot area with linear or logarithmic axes, its
// grid and labels, paths, bars, markers and a legend. Pages built with it
// load nothing: every chart is text inside the page.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace drivewatch::aging::svg {

struct Tick {
  double value = 0;
  std::string label;
};

struct Axis {
  double min = 0;
  double max = 1;
  bool log = false;  // log10; min and max above 0
  std::string title;
  std::vector<Tick> ticks;
};

// A linear axis from `min` to `max` rounded up to a whole step of 1, 2 or
// 5 × 10^n, 4 to 8 steps, labelled with thousands separators.
Axis LinearAxis(double min, double max, std::string title);
// A log10 axis over the whole decades around [min, max] (both above 0),
// each decade labelled by `label`.
Axis LogAxis(double min, double max, std::string title,
             const std::function<std::string(double)>& label);

struct Point {
  double x = 0;
  double y = 0;
};

struct LegendEntry {
  std::string colour;
  std::string label;
  bool dashed = false;
};

// Colour of the i-th series (a palette of eight, then again).
std::string Colour(std::size_t i);

class Plot {
 public:
  // The viewBox and the margins around the plot area.
  struct Box {
    double width = 1000;
    double height = 400;
    double left = 80;
    double right = 20;
    double top = 16;
    double bottom = 46;
  };
  Plot(Box box, Axis x, Axis y) : box_(box), x_(std::move(x)), y_(std::move(y)) {}

  // Where a value lands, clamped into the plot area (a log axis takes a
  // value at or below 0 as its minimum).
  double X(double v) const;
  double Y(double v) const;
  double left() const { return box_.left; }
  double right() const { return box_.width - box_.right; }
  double top() const { return box_.top; }
  double bottom() const { return box_.height - box_.bottom; }

  // The opening <svg> tag: `css_class`, `aria_label` (escaped here) and
  // `extra` attributes as given.
  std::string Open(std::string_view css_class, std::string_view aria_label,
                   std::string_view extra = "") const;
  // Grid lines and labels at every tick of both axes, and the axis titles
  // (text of class "axis-title").
  std::string Axes() const;
  // "M x y L x y ..." through the points.
  std::string PathData(const std::vector<Point>& points) const;
  // A vertical dashed line across the plot at value `x`, of class
  // `css_class`, labelled at its top (`label_y` lower).
  std::string VerticalMarker(double x, std::string_view css_class, std::string_view colour,
                             std::string_view label, double label_y = 0) const;
  // A legend box at the top right of the plot, `top` from the SVG's top;
  // with `left` >= 0, there instead (e.g. in a margin kept free for it).
  std::string Legend(const std::vector<LegendEntry>& entries, double top, double width = 250,
                     double left = -1) const;
  static std::string Close() { return "</svg>\n"; }

 private:
  Box box_;
  Axis x_;
  Axis y_;
};

}  // namespace drivewatch::aging::svg
