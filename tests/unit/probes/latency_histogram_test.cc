// SPDX-License-Identifier: Apache-2.0
#include "probes/latency/latency_histogram.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "probes/latency/latency_window.h"
#include "probes/latency/pacing.h"
#include "probes/latency/read_latency_probe.h"

namespace drivewatch {
namespace {

using H = LatencyHistogram;
using namespace std::chrono_literals;

TEST(LatencyHistogramTest, SmallValuesAreExact) {
  for (std::uint64_t v = 0; v < 128; ++v) {
    EXPECT_EQ(H::Index(v), v);
    EXPECT_EQ(H::LowerBound(v), v);
    EXPECT_EQ(H::UpperBound(v), v + 1);
  }
}

TEST(LatencyHistogramTest, BucketsTileTheRangeWithoutGapsOrOverlap) {
  for (std::size_t i = 0; i + 1 < H::kRegularBuckets; ++i) {
    ASSERT_EQ(H::UpperBound(i), H::LowerBound(i + 1)) << i;
    ASSERT_LT(H::LowerBound(i), H::UpperBound(i)) << i;
  }
  EXPECT_EQ(H::UpperBound(H::kRegularBuckets - 1), H::kMaxValueNs);
}

TEST(LatencyHistogramTest, IndexFindsTheBucketHoldingTheValue) {
  // Both edges of every bucket, and values in between.
  for (std::size_t i = 0; i < H::kRegularBuckets; ++i) {
    ASSERT_EQ(H::Index(H::LowerBound(i)), i);
    ASSERT_EQ(H::Index(H::UpperBound(i) - 1), i);
  }
  EXPECT_EQ(H::Index(128), 128u);
  EXPECT_EQ(H::Index(129), 128u);  // 2 ns wide from 128 on
  EXPECT_EQ(H::Index(130), 129u);
  EXPECT_EQ(H::Index(H::kMaxValueNs - 1), H::kRegularBuckets - 1);
  EXPECT_EQ(H::Index(H::kMaxValueNs), H::kOverflowIndex);
  EXPECT_EQ(H::Index(~std::uint64_t{0}), H::kOverflowIndex);
}

TEST(LatencyHistogramTest, RelativeErrorIsAtMost0Point78Percent) {
  std::mt19937_64 rng(7);
  double worst = 0;
  for (int n = 0; n < 1'000'000; ++n) {
    // Log-uniform over 1 us .. 60 s.
    const double log_v = std::uniform_real_distribution<double>(
        std::log(1e3), std::log(60e9))(rng);
    const auto v = static_cast<std::uint64_t>(std::exp(log_v));
    const double reported = H::RepresentativeSeconds(H::Index(v)) * 1e9;
    worst = std::max(worst, std::abs(reported - static_cast<double>(v)) /
                                static_cast<double>(v));
  }
  EXPECT_LE(worst, 1.0 / 128 + 1e-12);
  EXPECT_GT(worst, 0.005);  // the bound is tight, not vacuous
}

TEST(LatencyHistogramTest, QuantilesAsFioComputesThem) {
  H h;
  for (std::uint64_t us = 1; us <= 1000; ++us) h.Add(us * 1000);
  EXPECT_EQ(h.count(), 1000u);
  EXPECT_NEAR(h.Quantile(0.5), 500e-6, 500e-6 / 128);
  EXPECT_NEAR(h.Quantile(0.99), 990e-6, 990e-6 / 128);
  EXPECT_NEAR(h.Quantile(0.999), 999e-6, 999e-6 / 128);
  EXPECT_DOUBLE_EQ(h.Quantile(1.0), 1000e-6);  // clamped to the exact max
  EXPECT_DOUBLE_EQ(h.MaxSeconds(), 1000e-6);
  EXPECT_NEAR(h.sum_seconds(), 0.5005, 1e-12);
  EXPECT_EQ(H().Quantile(0.5), 0);
}

TEST(LatencyHistogramTest, TimeoutsLandInTheTopBucketAndReadAsInfinity) {
  H h;
  for (int i = 0; i < 999; ++i) h.Add(100'000);
  h.AddTimeout(5'000'000'000);
  EXPECT_TRUE(h.has_overflow());
  EXPECT_EQ(h.bucket(H::kOverflowIndex), 1u);
  EXPECT_NEAR(h.Quantile(0.99), 100e-6, 1e-6);
  EXPECT_TRUE(std::isinf(h.Quantile(1.0)));
  EXPECT_TRUE(std::isinf(h.MaxSeconds()));
  EXPECT_EQ(h.max_ns(), 100'000u);  // a timeout is not a measured value
}

TEST(LatencyHistogramTest, MergeAddsCounts) {
  H a, b, both;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 5000; ++i) {
    const std::uint64_t v = rng() % 50'000'000;
    (i % 2 ? a : b).Add(v);
    both.Add(v);
  }
  H merged = a;
  merged.Merge(b);
  for (std::size_t i = 0; i < H::kBuckets; ++i) ASSERT_EQ(merged.bucket(i), both.bucket(i));
  EXPECT_EQ(merged.count(), both.count());
  EXPECT_EQ(merged.max_ns(), both.max_ns());
  EXPECT_EQ(merged.sum_ns(), both.sum_ns());
  H sparse;
  sparse.MergeSparse(a.NonZero(), a.sum_ns(), a.max_ns());
  sparse.MergeSparse(b.NonZero(), b.sum_ns(), b.max_ns());
  EXPECT_EQ(sparse.Quantile(0.999), both.Quantile(0.999));
  EXPECT_EQ(sparse.count(), both.count());
}

// --- sliding windows -------------------------------------------------------

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

// --- pacing, on a clock the test moves -------------------------------------

TEST(PacerTest, FixedArrivalsKeepAnAbsoluteSchedule) {
  const auto t0 = Pacer::TimePoint(5h);
  Pacer p(100, ArrivalProcess::kFixed, t0);
  auto now = t0;
  for (int i = 1; i <= 100'000; ++i) {
    // Issue a little late each time; the schedule must not drift.
    now = p.next() + 300us;
    ASSERT_EQ(p.Advance(now), 0u);
  }
  EXPECT_EQ(p.next(), t0 + 1000s);
}

TEST(PacerTest, SlowReadsSkipMissedArrivalsInsteadOfBursting) {
  const auto t0 = Pacer::TimePoint(5h);
  Pacer p(10, ArrivalProcess::kFixed, t0);
  // The read due at t0 took 450 ms: the arrivals at 100, 200 and 300 ms
  // are more than one interval late and skipped; 400 ms is issued late.
  EXPECT_EQ(p.Advance(t0 + 450ms), 3u);
  EXPECT_EQ(p.next(), t0 + 400ms);
  EXPECT_EQ(p.Advance(t0 + 460ms), 0u);
  EXPECT_EQ(p.next(), t0 + 500ms);
}

TEST(PacerTest, PoissonArrivalsHaveTheConfiguredMeanAndSpread) {
  const auto t0 = Pacer::TimePoint(5h);
  Pacer p(10, ArrivalProcess::kPoisson, t0, 42);
  const int n = 200'000;
  int under_10ms = 0, over_300ms = 0;
  auto prev = p.next();
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(p.Advance(prev), 0u);
    const auto gap = p.next() - prev;
    under_10ms += gap < 10ms;
    over_300ms += gap > 300ms;
    prev = p.next();
  }
  const double mean = std::chrono::duration<double>(prev - t0).count() / n;
  EXPECT_NEAR(mean, 0.1, 0.001);
  // Exponential: P(gap < 10 ms) = 1 - e^-0.1 = 9.5%, P(> 300 ms) = e^-3 = 5%.
  EXPECT_NEAR(under_10ms / double(n), 0.0952, 0.005);
  EXPECT_NEAR(over_300ms / double(n), 0.0498, 0.005);
}

// --- idle-gap classes ------------------------------------------------------

TEST(IdleGapTest, ClassBoundariesAreLowerInclusive) {
  EXPECT_EQ(ClassifyIdleGap(0ns), IdleGap::kUnder1ms);
  EXPECT_EQ(ClassifyIdleGap(999us), IdleGap::kUnder1ms);
  EXPECT_EQ(ClassifyIdleGap(1ms), IdleGap::k1to10ms);
  EXPECT_EQ(ClassifyIdleGap(9999us), IdleGap::k1to10ms);
  EXPECT_EQ(ClassifyIdleGap(10ms), IdleGap::k10to100ms);
  EXPECT_EQ(ClassifyIdleGap(100ms), IdleGap::k100msTo1s);
  EXPECT_EQ(ClassifyIdleGap(1s), IdleGap::k1to10s);
  EXPECT_EQ(ClassifyIdleGap(10s), IdleGap::kOver10s);
  EXPECT_STREQ(IdleGapName(IdleGap::k100msTo1s), "100ms-1s");
  EXPECT_STREQ(IdleGapName(IdleGap::kUnder1ms), "0-1ms");
}

}  // namespace
}  // namespace drivewatch
