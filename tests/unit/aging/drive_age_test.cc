// SPDX-License-Identifier: Apache-2.0
// A run record's "drive_at_start" read back (aging/runner/drive_age.h): a history
// is untrusted input, so every field is checked and a bad one named.
#include "aging/runner/drive_age.h"

#include <gtest/gtest.h>

namespace drivewatch::aging {
namespace {

Json Good() {
  return *ParseJson(
      R"({"time":1767225600.5,"power_on_hours":8760,"percentage_used":3,)"
      R"("data_written_bytes":9004372992000,"capacity_bytes":1024209543168,)"
      R"("tmt1_k":346,"tmt2_k":349})");
}

std::string Problem(const std::string& key, Json value) {
  Json s = Good();
  s[key] = std::move(value);
  auto age = DriveAgeFromJson(s);
  return age ? std::string("accepted") : age.error().message;
}

TEST(DriveAgeTest, AGoodSnapshotReadsBack) {
  auto age = DriveAgeFromJson(Good());
  ASSERT_TRUE(age) << age.error().message;
  EXPECT_EQ(age->power_on_hours, 8760u);
  EXPECT_EQ(age->percentage_used, 3u);
  EXPECT_EQ(age->capacity_bytes, 1024209543168u);
  EXPECT_NEAR(age->DriveWrites(), 8.7915, 1e-4);
  EXPECT_EQ(age->tmt1_k, std::optional<std::uint16_t>(346));
  Json without = *ParseJson(
      R"({"time":0,"power_on_hours":0,"percentage_used":0,"data_written_bytes":0,)"
      R"("capacity_bytes":1048576})");
  auto fresh = DriveAgeFromJson(without);
  ASSERT_TRUE(fresh) << fresh.error().message;
  EXPECT_FALSE(fresh->tmt1_k);
  EXPECT_EQ(fresh->DriveWrites(), 0);
}

TEST(DriveAgeTest, EveryBadFieldIsNamedWithItsValueAndWhatWasExpected) {
  EXPECT_EQ(Problem("percentage_used", -3),
            "drive_at_start.percentage_used is -3 (expected a whole number from 0 to 255)");
  EXPECT_EQ(Problem("percentage_used", 256),
            "drive_at_start.percentage_used is 256 (expected a whole number from 0 to 255)");
  EXPECT_EQ(Problem("power_on_hours", 1.5),
            "drive_at_start.power_on_hours is 1.5 (expected a whole number of hours)");
  EXPECT_EQ(Problem("power_on_hours", "8760"),
            "drive_at_start.power_on_hours is \"8760\" (expected a whole number of hours)");
  EXPECT_EQ(Problem("data_written_bytes", -1.0),
            "drive_at_start.data_written_bytes is -1.0 (expected bytes, 0 or more)");
  EXPECT_EQ(Problem("capacity_bytes", 0),
            "drive_at_start.capacity_bytes is 0 (expected a whole number of bytes above 0)");
  EXPECT_EQ(Problem("tmt2_k", 70000),
            "drive_at_start.tmt2_k is 70000 (expected kelvin, a whole number from 1 to 65535)");
  EXPECT_EQ(Problem("time", Json()),
            "drive_at_start.time is null (expected Unix seconds, 0 or more)");
  const Json missing =
      *ParseJson(R"({"time":1,"power_on_hours":1,"percentage_used":1,"capacity_bytes":1})");
  auto age = DriveAgeFromJson(missing);
  ASSERT_FALSE(age);
  EXPECT_EQ(age.error().message,
            "drive_at_start.data_written_bytes is missing (expected bytes, 0 or more)");
  EXPECT_FALSE(DriveAgeFromJson(Json::array()));
}

}  // namespace
}  // namespace drivewatch::aging
