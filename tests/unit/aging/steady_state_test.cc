// SPDX-License-Identifier: Apache-2.0
// The SNIA SSS PTS steady state detector (aging/phases/steady_state.h) on
// synthetic series: the window's edges, each limit just inside and just
// outside, and the degenerate windows.
#include "aging/phases/steady_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace drivewatch::aging {
namespace {

bool Steady(const std::vector<double>& rounds) {
  const auto w = CheckSteadyState(rounds);
  return w && w->steady;
}

TEST(SteadyStateTest, FourRoundsAreNeverSteadyFiveCanBe) {
  EXPECT_FALSE(CheckSteadyState(std::vector<double>{}));
  EXPECT_FALSE(CheckSteadyState(std::vector<double>{100, 100, 100, 100}));
  const auto w = CheckSteadyState(std::vector<double>{100, 100, 100, 100, 100});
  ASSERT_TRUE(w);
  EXPECT_TRUE(w->steady);
  EXPECT_EQ(w->first, 0u);
  EXPECT_DOUBLE_EQ(w->average, 100);
  EXPECT_DOUBLE_EQ(w->range, 0);
  EXPECT_DOUBLE_EQ(w->slope, 0);
  EXPECT_DOUBLE_EQ(w->excursion, 0);
}

TEST(SteadyStateTest, OnlyTheLastFiveRoundsCount) {
  // A fresh drive's burst, then a plateau: steady only once the window
  // holds plateau rounds alone.
  std::vector<double> rounds = {500, 400, 300, 100, 101, 99, 100};
  EXPECT_FALSE(Steady(rounds));  // 300 is still in the window
  rounds.push_back(100);
  const auto w = CheckSteadyState(rounds);
  ASSERT_TRUE(w);
  EXPECT_TRUE(w->steady);
  EXPECT_EQ(w->first, 3u);
  EXPECT_DOUBLE_EQ(w->average, 100);
  EXPECT_DOUBLE_EQ(w->min, 99);
  EXPECT_DOUBLE_EQ(w->max, 101);
  // A plateau, then a step down within the window: not steady again.
  rounds.push_back(60);
  EXPECT_FALSE(Steady(rounds));
}

TEST(SteadyStateTest, RangeJustInsideAndJustOutsideTwentyPercent) {
  // Average 100 and no trend (symmetric about the middle round), so only
  // the range decides: max - min = 19.98 passes, 20.02 does not.
  const auto in = CheckSteadyState(std::vector<double>{109.99, 90.01, 100, 90.01, 109.99});
  ASSERT_TRUE(in);
  EXPECT_NEAR(in->average, 100, 1e-9);
  EXPECT_NEAR(in->range, 19.98, 1e-9);
  EXPECT_NEAR(in->slope, 0, 1e-9);
  EXPECT_TRUE(in->steady);
  const auto out = CheckSteadyState(std::vector<double>{110.01, 89.99, 100, 89.99, 110.01});
  ASSERT_TRUE(out);
  EXPECT_NEAR(out->average, 100, 1e-9);
  EXPECT_NEAR(out->range, 20.02, 1e-9);
  EXPECT_NEAR(out->slope, 0, 1e-9);
  EXPECT_FALSE(out->steady);
}

TEST(SteadyStateTest, SlopeExcursionJustInsideAndJustOutsideTenPercent) {
  // A straight line a + b·x through the window: range and excursion are
  // both 4b, average a + 2b. Excursion 9.99% of the average passes,
  // 10.01% does not; the range (the same 4b) is well inside 20%.
  const auto line = [](double average, double excursion) {
    const double b = excursion / 4, a = average - 2 * b;
    return std::vector<double>{a, a + b, a + 2 * b, a + 3 * b, a + 4 * b};
  };
  const auto in = CheckSteadyState(line(1000, 99.9));
  ASSERT_TRUE(in);
  EXPECT_NEAR(in->excursion, 99.9, 1e-9);
  EXPECT_NEAR(in->slope, 24.975, 1e-9);
  EXPECT_TRUE(in->steady);
  const auto out = CheckSteadyState(line(1000, 100.1));
  ASSERT_TRUE(out);
  EXPECT_NEAR(out->excursion, 100.1, 1e-9);
  EXPECT_FALSE(out->steady);
  // A falling line is judged by the size of its excursion, not its sign.
  std::vector<double> falling = line(1000, 100.1);
  std::reverse(falling.begin(), falling.end());
  const auto down = CheckSteadyState(falling);
  ASSERT_TRUE(down);
  EXPECT_LT(down->slope, 0);
  EXPECT_NEAR(down->excursion, 100.1, 1e-9);
  EXPECT_FALSE(down->steady);
}

TEST(SteadyStateTest, ExcursionIsTheFittedLinesNotTheEndpoints) {
  // Both windows start at 185 and end at 215 (15% of the average 200 apart)
  // with a range of 30 (15%, inside 20%). The least-squares slope is
  // Σ(x-2)(y-200)/10 per round, and the excursion 4 rounds of it:
  //   185 200 200 200 215: (30 + 30)/10 = 6, excursion 24 = 12%: not steady;
  //   185 215 200 185 215: (30 - 15 - 15 + 30)/10 = 3, excursion 12 = 6%: steady.
  const auto rising = CheckSteadyState(std::vector<double>{185, 200, 200, 200, 215});
  ASSERT_TRUE(rising);
  EXPECT_NEAR(rising->slope, 6, 1e-9);
  EXPECT_NEAR(rising->excursion, 24, 1e-9);
  EXPECT_FALSE(rising->steady);
  const auto zigzag = CheckSteadyState(std::vector<double>{185, 215, 200, 185, 215});
  ASSERT_TRUE(zigzag);
  EXPECT_NEAR(zigzag->slope, 3, 1e-9);
  EXPECT_NEAR(zigzag->excursion, 12, 1e-9);
  EXPECT_NEAR(zigzag->range, 30, 1e-9);
  EXPECT_TRUE(zigzag->steady);
}

TEST(SteadyStateTest, ZeroAverageAndNonFiniteValuesAreNeverSteady) {
  const auto zero = CheckSteadyState(std::vector<double>{0, 0, 0, 0, 0});
  ASSERT_TRUE(zero);
  EXPECT_DOUBLE_EQ(zero->average, 0);
  EXPECT_FALSE(zero->steady);
  EXPECT_FALSE(Steady({1, -1, 1, -1, 0}));
  EXPECT_FALSE(Steady({100, 100, std::numeric_limits<double>::infinity(), 100, 100}));
  EXPECT_FALSE(Steady({100, 100, std::nan(""), 100, 100}));
}

}  // namespace
}  // namespace drivewatch::aging
