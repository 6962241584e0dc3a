// SPDX-License-Identifier: Apache-2.0
// A feature a drive lacks is a fact, not a failure
// (probes/feature_support.h): drivewatch_feature_supported on every poll,
// and one log line when a feature is first found missing and one when it
// comes back, never the same finding twice.
#include "probes/feature_support.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/probes/probe_test_util.h"

namespace drivewatch {
namespace {

using testing::RecordingSink;

TEST(FeatureSupportTest, EveryPollExportsTheFindingEachChangeIsLoggedOnce) {
  std::vector<std::string> lines;
  FeatureSupport support([&](std::string_view l) { lines.emplace_back(l); });
  RecordingSink sink;
  const auto report = [&](bool supported) {
    support.Report(sink, "S1", "apst", "autonomous power state transitions", supported,
                   "Identify APSTA bit 0 is clear");
  };
  report(false);
  report(false);
  report(false);
  ASSERT_EQ(sink.samples.size(), 3u);
  for (const auto& s : sink.samples) {
    EXPECT_EQ(s.Key(), "drivewatch_feature_supported{feature=\"apst\",serial=\"S1\"}");
    EXPECT_EQ(s.value, 0);
  }
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "drive serial=S1 does not support autonomous power state transitions (Identify "
            "APSTA bit 0 is clear); reporting drivewatch_feature_supported{feature=\"apst\"} 0 "
            "and not logging it again");
  report(true);  // a firmware update
  report(true);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "drive serial=S1 now supports autonomous power state transitions");
  EXPECT_EQ(sink.samples.back().value, 1);
  report(false);
  EXPECT_EQ(lines.size(), 3u);
}

TEST(FeatureSupportTest, ASupportedFeatureIsNotLoggedAndFeaturesAreApart) {
  std::vector<std::string> lines;
  FeatureSupport support([&](std::string_view l) { lines.emplace_back(l); });
  RecordingSink sink;
  support.Report(sink, "S1", "self_test", "device self-test", true, "OACS bit 4");
  support.Report(sink, "S1", "apst", "APST", false, "APSTA clear");
  support.Report(sink, "S1", "self_test", "device self-test", true, "OACS bit 4");
  ASSERT_EQ(lines.size(), 1u);  // only apst's absence
  EXPECT_NE(lines[0].find("does not support APST"), std::string::npos);
  EXPECT_EQ(sink.samples.size(), 3u);
  EXPECT_EQ(&FeatureSupportedMetric(), sink.samples[0].desc);
}

}  // namespace
}  // namespace drivewatch
