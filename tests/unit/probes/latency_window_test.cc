// SPDX-License-Identifier: Apache-2.0
// Sliding latency windows (probes/latency/latency_window.h): the slice
// length, old samples leaving each window in turn, timeouts kept in theirs.
#include "probes/latency/latency_window.h"

#include <gtest/gtest.h>

#include <chrono>

namespace drivewatch {
namespace {

using H = LatencyHistogram;
using namespace std::chrono_literals;

TEST(LatencyWindowsTest, SliceIsAFifteenthOfTheShortestWindow) {
  EXPECT_EQ(LatencyWindows::SliceLength({15min, 1h}), LatencyWindows::Duration(1min));
  EXPECT_EQ(LatencyWindows::SliceLength({1min}), LatencyWindows::Duration(4s));
  // The ring stays at most 240 slices long.
  EXPECT_EQ(LatencyWindows::SliceLength({1min, 24h}), LatencyWindows::Duration(6min));
}

TEST(LatencyWindowsTest, OldSamplesLeaveEachWindowInTurn) {
  const auto t0 = LatencyWindows::TimePoint(100h);
  LatencyWindows w({15min, 1h}, t0);
  // One 1 ms read per minute for two hours, then a 50 ms one.
  for (int m = 0; m < 120; ++m) w.Add(1'000'000, t0 + m * 1min + 30s);
  const auto now = t0 + 120min;
  w.Add(50'000'000, now);
  const H short_window = w.Window(0, now);
  const H long_window = w.Window(1, now);
  EXPECT_EQ(short_window.count(), 15u);  // 14 full minutes + the current one
  EXPECT_EQ(long_window.count(), 60u);
  EXPECT_NEAR(short_window.MaxSeconds(), 0.05, 1e-12);
  // Nothing more arrives: after 15 minutes the 50 ms read has left the
  // short window but not the long one.
  const auto later = now + 15min;
  EXPECT_EQ(w.Window(0, later).count(), 0u);
  EXPECT_NEAR(w.Window(1, later).MaxSeconds(), 0.05, 1e-12);
  EXPECT_EQ(w.Window(1, later).count(), 45u);  // minutes 76..119 and the 50 ms read
  EXPECT_EQ(w.Window(1, now + 61min).count(), 0u);
}

TEST(LatencyWindowsTest, TimeoutsStayInTheirWindow) {
  const auto t0 = LatencyWindows::TimePoint(1h);
  LatencyWindows w({15min}, t0);
  w.AddTimeout(10'000'000'000, t0 + 1s);
  EXPECT_TRUE(std::isinf(w.Window(0, t0 + 2s).MaxSeconds()));
  EXPECT_EQ(w.Window(0, t0 + 16min).count(), 0u);
}

}  // namespace
}  // namespace drivewatch
