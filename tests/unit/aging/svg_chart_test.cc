// SPDX-License-Identifier: Apache-2.0
// The reports' inline SVG charts (aging/report/svg_chart.h): axes that
// end on a round step with grouped labels, log axes over whole decades,
// values clamped into the plot, gaps for values that are not numbers, and
// labels escaped so a name from a record cannot break the page.
#include "aging/report/svg_chart.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

namespace drivewatch::aging::svg {
namespace {

std::vector<std::string> Labels(const Axis& a) {
  std::vector<std::string> out;
  for (const Tick& t : a.ticks) out.push_back(t.label);
  return out;
}

TEST(SvgChartTest, LinearAxisEndsOnARoundStepWithGroupedLabels) {
  const Axis small = LinearAxis(0, 37, "MB/s");
  EXPECT_EQ(small.max, 40);  // steps of 5: 37 / 5 is 8 steps at most
  EXPECT_EQ(Labels(small),
            (std::vector<std::string>{"0", "5", "10", "15", "20", "25", "30", "35", "40"}));
  EXPECT_EQ(small.title, "MB/s");
  EXPECT_FALSE(small.log);

  const Axis large = LinearAxis(0, 12345, "IOPS");
  EXPECT_EQ(large.max, 14000);  // steps of 2,000
  EXPECT_EQ(Labels(large).back(), "14,000");
  EXPECT_EQ(large.ticks.size(), 8u);

  const Axis fractions = LinearAxis(0, 0.7, "ratio");
  EXPECT_EQ(Labels(fractions).front(), "0.0");
  EXPECT_EQ(Labels(fractions).back(), "0.7");
}

TEST(SvgChartTest, AnEmptyOrBrokenRangeStillGivesAnAxis) {
  const Axis flat = LinearAxis(5, 5, "x");  // one value: a unit wide
  EXPECT_EQ(flat.min, 5);
  EXPECT_GT(flat.max, flat.min);
  EXPECT_GE(flat.ticks.size(), 2u);
  const Axis nan = LinearAxis(0, std::numeric_limits<double>::quiet_NaN(), "x");
  EXPECT_EQ(nan.max, 1);
}

TEST(SvgChartTest, LogAxisCoversWholeDecades) {
  const Axis a = LogAxis(3, 4000, "latency", [](double v) { return std::to_string(int(v)); });
  EXPECT_TRUE(a.log);
  EXPECT_EQ(a.min, 1);
  EXPECT_EQ(a.max, 10000);
  EXPECT_EQ(Labels(a), (std::vector<std::string>{"1", "10", "100", "1000", "10000"}));
  // Nothing above 0 to show: one decade from 1.
  const Axis none = LogAxis(0, -1, "latency", [](double) { return std::string("d"); });
  EXPECT_EQ(none.min, 1);
  EXPECT_EQ(none.max, 10);
}

TEST(SvgChartTest, ValuesLandInsideThePlotArea) {
  const Plot plot(Plot::Box{}, LinearAxis(0, 100, "x"), LogAxis(1, 1000, "y", [](double) {
                    return std::string();
                  }));
  EXPECT_DOUBLE_EQ(plot.X(0), plot.left());
  EXPECT_DOUBLE_EQ(plot.X(100), plot.right());
  EXPECT_DOUBLE_EQ(plot.X(50), (plot.left() + plot.right()) / 2);
  EXPECT_DOUBLE_EQ(plot.X(-5), plot.left());    // clamped
  EXPECT_DOUBLE_EQ(plot.X(500), plot.right());  // clamped
  EXPECT_DOUBLE_EQ(plot.Y(1), plot.bottom());
  EXPECT_DOUBLE_EQ(plot.Y(1000), plot.top());
  EXPECT_DOUBLE_EQ(plot.Y(0), plot.bottom());  // a log axis takes 0 as its minimum
  EXPECT_NEAR(plot.Y(std::sqrt(1000.0)), (plot.top() + plot.bottom()) / 2, 1e-9);
}

TEST(SvgChartTest, PathSkipsValuesThatAreNotNumbers) {
  const Plot plot(Plot::Box{}, LinearAxis(0, 100, "x"), LinearAxis(0, 100, "y"));
  EXPECT_EQ(plot.PathData({{0, 0}, {std::nan(""), 5}, {100, 100}}), "M80.0 354.0L980.0 16.0");
  EXPECT_EQ(plot.PathData({}), "");
}

TEST(SvgChartTest, TextFromRecordsIsEscaped) {
  const Plot plot(Plot::Box{}, LinearAxis(0, 1, "<x>"), LinearAxis(0, 1, "y & z"));
  const std::string open = plot.Open("chart", "drive \"A\" <b>");
  EXPECT_NE(open.find("aria-label=\"drive &quot;A&quot; &lt;b&gt;\""), std::string::npos) << open;
  const std::string axes = plot.Axes();
  EXPECT_NE(axes.find("&lt;x&gt;"), std::string::npos);
  EXPECT_NE(axes.find("y &amp; z"), std::string::npos);
  EXPECT_EQ(axes.find("<x>"), std::string::npos);
  const std::string legend = plot.Legend({{Colour(0), "<script>", false}}, 20);
  EXPECT_EQ(legend.find("<script>"), std::string::npos);
  EXPECT_EQ(plot.Legend({}, 20), "");
}

TEST(SvgChartTest, EightColoursThenAgain) {
  std::set<std::string> colours;
  for (std::size_t i = 0; i < 8; ++i) colours.insert(Colour(i));
  EXPECT_EQ(colours.size(), 8u);
  EXPECT_EQ(Colour(8), Colour(0));
}

}  // namespace
}  // namespace drivewatch::aging::svg
