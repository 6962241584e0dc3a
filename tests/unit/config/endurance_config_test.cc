// SPDX-License-Identifier: Apache-2.0
// The endurance kind's keys: read, defaulted, written back, and the error a
// workload that is not one gets.
#include <gtest/gtest.h>

#include "config/config.h"

namespace drivewatch::config {
namespace {

std::string Errors(const LoadResult& r) {
  std::string out;
  for (const ConfigError& e : r.errors) out += e.ToString() + "\n";
  return out;
}

constexpr const char* kTarget = R"(
[[aging.targets]]
name = "tmp"
directory = "/var/tmp/dw"
file_size = "64MiB"
)";

TEST(EnduranceConfigTest, ReadsItsKeysAndWritesThemBack) {
  const std::string text = std::string(kTarget) + R"(
[[aging.phases]]
name = "wear"
kind = "endurance"
target = "tmp"
workload = "jesd219"
queue_depth = 16
drive_writes = 0
percentage_used = 90
bytes_written = "100TiB"
max_drive_writes_per_day = 3
max_duration = "30d"
interval = "1d"

[[aging.phases]]
name = "plain"
kind = "endurance"
target = "tmp"
)";
  const LoadResult r = LoadString(text, "e.toml");
  ASSERT_TRUE(r.config) << Errors(r);
  const auto& e = std::get<EnduranceParams>(r.config->aging.phases[0].params);
  EXPECT_EQ(e.workload, "jesd219");
  EXPECT_EQ(e.queue_depth, 16u);
  EXPECT_EQ(e.drive_writes, 0u);
  EXPECT_EQ(e.percentage_used, 90);
  EXPECT_EQ(e.bytes_written, 100ull << 40);
  EXPECT_EQ(e.max_drive_writes_per_day, 3);
  const auto& d = std::get<EnduranceParams>(r.config->aging.phases[1].params);
  EXPECT_EQ(d.workload, "sequential");
  EXPECT_EQ(d.drive_writes, 1u);
  EXPECT_EQ(d.block_size, 128u * 1024);
  EXPECT_FALSE(d.percentage_used);
  EXPECT_FALSE(d.max_drive_writes_per_day);
  EXPECT_TRUE(PhaseKindWrites(d));
  const LoadResult again = LoadString(ToToml(*r.config), "again.toml");
  ASSERT_TRUE(again.config) << Errors(again) << ToToml(*r.config);
  EXPECT_EQ(*again.config, *r.config);
}

TEST(EnduranceConfigTest, ErrorsNameTheKeyAndWhatWasExpected) {
  struct Case {
    const char* line;
    const char* error;
  };
  const Case cases[] = {
      {R"(workload = "random")",
       R"(aging.phases.workload: "random" is not one of its values (expected one of "sequential", "jesd219"))"},
      {"percentage_used = 0", "aging.phases.percentage_used"},
      {"max_drive_writes_per_day = 0", "drive writes per day from 0.001 to 1000000"},
      {R"(bytes_written = "1000KiB")", "is not a whole number of MiB"},
      {"drive_writes = -1", "aging.phases.drive_writes"},
      {"fill_percent = 50", R"(not used by kind "endurance")"},
  };
  for (const Case& c : cases) {
    const std::string text = std::string(kTarget) +
                             "[[aging.phases]]\nname = \"wear\"\nkind = \"endurance\"\n"
                             "target = \"tmp\"\n" + c.line + "\n";
    const LoadResult r = LoadString(text, "e.toml");
    EXPECT_FALSE(r.config) << c.line;
    EXPECT_NE(Errors(r).find(c.error), std::string::npos) << c.line << "\n" << Errors(r);
    EXPECT_NE(Errors(r).find("e.toml:10"), std::string::npos) << c.line << "\n" << Errors(r);
  }
}

}  // namespace
}  // namespace drivewatch::config
