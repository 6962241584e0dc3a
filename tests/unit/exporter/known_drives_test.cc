// SPDX-License-Identifier: Apache-2.0
// The drives seen before (exporter/known_drives.cc), kept in the state
// directory so a drive missing after a restart reports itself down for
// the grace period: the file round-trips, and damaged lines are skipped
// and named, not fatal.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exporter/drive_monitor.h"

namespace drivewatch {
namespace {

TEST(KnownDrivesTest, RoundTripsAndSkipsDamagedLines) {
  const std::vector<KnownDrive> drives = {{"SN1", "nvme0", "Model\tA", "1.0"},
                                          {"SN2", "nvme1", "Model B", "2.0"}};
  const std::string text = FormatKnownDrives(drives);
  std::vector<std::string> problems;
  auto parsed = ParseKnownDrives(text + "garbage line\n\tno serial\t\t\n", &problems);
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[0].model, "Model A");  // the tab could not survive
  EXPECT_EQ(parsed[1].serial, "SN2");
  EXPECT_EQ(parsed[1].firmware, "2.0");
  EXPECT_EQ(problems,
            (std::vector<std::string>{
                "line 4: expected 4 tab-separated fields with a serial",
                "line 5: expected 4 tab-separated fields with a serial"}));
}

TEST(KnownDrivesTest, AnEmptyFileIsNoDrives) {
  std::vector<std::string> problems;
  EXPECT_TRUE(ParseKnownDrives("", &problems).empty());
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(ParseKnownDrives(FormatKnownDrives({}), &problems).size(), 0u);
  EXPECT_TRUE(problems.empty());
}

}  // namespace
}  // namespace drivewatch
