// SPDX-License-Identifier: Apache-2.0
// Average drive power over a window (probes/power_estimate.h): readings
// weighed by how long each held, the best source every sample has, never
// two sources mixed, and the power state descriptor estimate of the
// hand-built PM981 (ps3 reports only MP 0.07 W, ps4 IDLP 0.005 W).
#include "probes/power_estimate.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>

#include "tests/common/fake_clock.h"

#include "probes/drive/identify.h"
#include "tests/unit/probes/probe_test_util.h"

namespace drivewatch {
namespace {

using std::chrono::seconds;

TEST(PowerWindowTest, WeighsEachReadingByHowLongItHeld) {
  testing::FakeClock clock;
  const auto t0 = clock.Now();
  PowerWindow w;
  EXPECT_FALSE(w.Average(t0).has_value());
  // psd 1 W for 1 s, 3 W for 2 s, 5 W for the last 1 s: 12 J over 4 s.
  w.Add({t0, std::nullopt, std::nullopt, 1.0});
  w.Add({t0 + seconds(1), std::nullopt, std::nullopt, 3.0});
  w.Add({t0 + seconds(3), std::nullopt, std::nullopt, 5.0});
  auto avg = w.Average(t0 + seconds(4));
  ASSERT_TRUE(avg.has_value());
  EXPECT_EQ(avg->source, PowerSource::kPsdEstimate);
  EXPECT_DOUBLE_EQ(avg->watts, 3.0);
  EXPECT_EQ(avg->samples, 3);
  // An end before the last sample adds nothing for it.
  EXPECT_DOUBLE_EQ(w.Average(t0 + seconds(3))->watts, 7.0 / 3);

  PowerWindow one;
  one.Add({t0, std::nullopt, std::nullopt, 2.5});
  EXPECT_DOUBLE_EQ(one.Average(t0)->watts, 2.5);  // plain mean
}

TEST(PowerWindowTest, TakesTheBestSourceEverySampleHas) {
  testing::FakeClock clock;
  const auto t0 = clock.Now();
  PowerWindow all;
  all.Add({t0, 1.0, 2.0, 3.0});
  all.Add({t0 + seconds(1), 3.0, 4.0, 5.0});
  EXPECT_EQ(all.Average(t0 + seconds(2))->source, PowerSource::kMeter);
  EXPECT_DOUBLE_EQ(all.Average(t0 + seconds(2))->watts, 2.0);

  PowerWindow gap;  // the meter missed one reading: never mix sources
  gap.Add({t0, 1.0, 2.0, 3.0});
  gap.Add({t0 + seconds(1), std::nullopt, 4.0, 5.0});
  EXPECT_EQ(gap.Average(t0 + seconds(2))->source, PowerSource::kDrive);
  EXPECT_DOUBLE_EQ(gap.Average(t0 + seconds(2))->watts, 3.0);

  PowerWindow none;
  none.Add({t0, 1.0, std::nullopt, std::nullopt});
  none.Add({t0, std::nullopt, 1.0, std::nullopt});
  EXPECT_FALSE(none.Average(t0).has_value());
  EXPECT_STREQ(PowerSourceName(PowerSource::kPsdEstimate), "psd_estimate");
}

TEST(PowerEstimateTest, IdlePowerWhenReportedElseMaximumPower) {
  auto id = DecodeIdentifyController(testing::Handmade("id-ctrl-HANDMADE-PM981.bin"));
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_DOUBLE_EQ(*PsdIdleEstimateWatts(*id, 4), 0.005);  // IDLP
  EXPECT_DOUBLE_EQ(*PsdIdleEstimateWatts(*id, 3), 0.07);   // no IDLP: MP, an upper bound
  EXPECT_EQ(PsdIdleEstimateWatts(*id, -1), std::nullopt);
  EXPECT_EQ(PsdIdleEstimateWatts(*id, 32), std::nullopt);  // past NPSS
  EXPECT_STREQ(PowerSourceName(PowerSource::kMeter), "meter");
  EXPECT_STREQ(PowerSourceName(PowerSource::kDrive), "drive");
}

}  // namespace
}  // namespace drivewatch
