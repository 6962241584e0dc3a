// SPDX-License-Identifier: Apache-2.0
// DetectSlcCache over synthetic series shaped like real drives' fills, and
// over a series recorded from a fill in the VM harness.
#include "aging/phases/slc_cache.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>

namespace drivewatch::aging {
namespace {

constexpr double kMB = 1e6;

// `fast` MB/s for `fast_seconds` (may be fractional: the boundary second
// is mixed), then `slow` MB/s, `total` seconds in all.
std::vector<double> Step(double fast, double fast_seconds, double slow,
                         int total) {
  std::vector<double> x;
  for (int i = 0; i < total; ++i) {
    const double f = std::clamp(fast_seconds - i, 0.0, 1.0);
    x.push_back((f * fast + (1 - f) * slow) * kMB);
  }
  return x;
}

TEST(SlcCacheTest, CleanStepGivesTheBytesBeforeIt) {
  const auto x = Step(3000, 40, 800, 100);
  const SlcDetection d = DetectSlcCache(x);
  ASSERT_TRUE(d.exhausted);
  EXPECT_EQ(d.drop_index, 40u);
  EXPECT_NEAR(d.cache_bytes, 40 * 3000 * kMB, 1);
  EXPECT_NEAR(d.seconds_to_exhaust, 40, 1e-9);
  EXPECT_NEAR(d.before_bytes_per_second, 3000 * kMB, 1);
  EXPECT_NEAR(d.after_bytes_per_second, 800 * kMB, 1);
}

TEST(SlcCacheTest, BoundaryInsideASecondIsNotRoundedToWholeSeconds) {
  const auto x = Step(2000, 25.3, 500, 80);
  const SlcDetection d = DetectSlcCache(x);
  ASSERT_TRUE(d.exhausted);
  EXPECT_NEAR(d.seconds_to_exhaust, 25.3, 0.01);
  EXPECT_NEAR(d.cache_bytes, 25.3 * 2000 * kMB, 0.001 * 25.3 * 2000 * kMB);
}

TEST(SlcCacheTest, NoisyPlateauWithShortDipsAndSpikes) {
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 0.08);
  std::vector<double> x;
  for (int i = 0; i < 300; ++i) {
    double level = i < 120 ? 2500 : 900;
    level *= 1 + noise(rng);
    if (i == 30 || i == 31 || i == 32) level = 700;  // GC hiccup: 3 s dip
    if (i == 60) level = 100;                         // one very slow second
    if (i == 200) level = 2600;                       // a burst after the cache
    x.push_back(level * kMB);
  }
  const SlcDetection d = DetectSlcCache(x);
  ASSERT_TRUE(d.exhausted);
  EXPECT_NEAR(static_cast<double>(d.drop_index), 120, 1);
  const double truth = 120 * 2500 * kMB;
  EXPECT_NEAR(d.cache_bytes, truth, 0.03 * truth);
  EXPECT_NEAR(d.after_bytes_per_second, 900 * kMB, 0.05 * 900 * kMB);
}

TEST(SlcCacheTest, NoCacheAtAllReportsNoDrop) {
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0, 0.1);
  std::vector<double> x;
  for (int i = 0; i < 200; ++i) x.push_back(1200 * (1 + noise(rng)) * kMB);
  const SlcDetection d = DetectSlcCache(x);
  EXPECT_FALSE(d.exhausted);
  double total = 0;
  for (double v : x) total += v;
  EXPECT_DOUBLE_EQ(d.cache_bytes, total);
  EXPECT_NEAR(d.before_bytes_per_second, 1200 * kMB, 0.05 * 1200 * kMB);
}

TEST(SlcCacheTest, CacheLargerThanTheFillReportsALowerBound) {
  const auto x = Step(3000, 1000, 800, 60);
  const SlcDetection d = DetectSlcCache(x);
  EXPECT_FALSE(d.exhausted);
  EXPECT_NEAR(d.cache_bytes, 60 * 3000 * kMB, 1);
}

TEST(SlcCacheTest, ADropShorterThanSustainIsNoise) {
  auto x = Step(3000, 1000, 800, 60);
  for (int i = 20; i < 28; ++i) x[i] = 500 * kMB;  // 8 s < 10 s
  EXPECT_FALSE(DetectSlcCache(x).exhausted);
  SlcDetectionParams short_sustain;
  short_sustain.sustain = std::chrono::seconds{5};
  const SlcDetection d = DetectSlcCache(x, short_sustain);
  EXPECT_TRUE(d.exhausted);
  EXPECT_EQ(d.drop_index, 20u);
}

TEST(SlcCacheTest, ADropTooSmallForTheFractionIsNotTheCache) {
  // 3000 -> 2000 MB/s is above 0.6 x 3000: not a cache running out.
  EXPECT_FALSE(DetectSlcCache(Step(3000, 30, 2000, 90)).exhausted);
  SlcDetectionParams p;
  p.drop_fraction = 0.8;
  EXPECT_TRUE(DetectSlcCache(Step(3000, 30, 2000, 90), p).exhausted);
}

TEST(SlcCacheTest, SlowFirstSecondDoesNotHideTheCache) {
  auto x = Step(3000, 15, 700, 60);
  x[0] = 400 * kMB;  // queue ramping up
  const SlcDetection d = DetectSlcCache(x);
  ASSERT_TRUE(d.exhausted);
  EXPECT_EQ(d.drop_index, 15u);
}

TEST(SlcCacheTest, TooFewSecondsAfterTheDropIsNoDrop) {
  EXPECT_FALSE(DetectSlcCache(Step(3000, 55, 700, 60)).exhausted);
  EXPECT_FALSE(DetectSlcCache({}).exhausted);
}

// A fill recorded in the VM harness (tests/vm/aging, S3): an emulated namespace
// throttled over QMP once the guest had written a known number of bytes.
TEST(SlcCacheTest, RecordedVmFill) {
  std::ifstream in(std::string(DW_FIXTURE_DIR) + "/slc/vm_fill_series.txt");
  ASSERT_TRUE(in) << "missing fixture";
  std::vector<double> x;
  double truth = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# throttled_at_bytes ", 0) == 0) {
      truth = std::stod(line.substr(21));
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    x.push_back(std::stod(line));
  }
  ASSERT_GT(truth, 0);
  const SlcDetection d = DetectSlcCache(x);
  ASSERT_TRUE(d.exhausted);
  EXPECT_NEAR(d.cache_bytes, truth, 0.05 * truth);
}

}  // namespace
}  // namespace drivewatch::aging
