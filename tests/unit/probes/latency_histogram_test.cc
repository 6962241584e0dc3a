// SPDX-License-Identifier: Apache-2.0
#include "probes/latency/latency_histogram.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>


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

}  // namespace
}  // namespace drivewatch
