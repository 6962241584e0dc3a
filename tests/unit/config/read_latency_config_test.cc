// SPDX-License-Identifier: Apache-2.0
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.h"

namespace drivewatch::config {
namespace {

using std::chrono::milliseconds;

std::vector<std::string> Errors(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& e : LoadString(text, "t.toml").errors) out.push_back(e.ToString());
  return out;
}

TEST(ReadLatencyConfigTest, DefaultsReadNamespacesAt10And100Iops) {
  const ReadLatencySettings d = Defaults().read_latency;
  EXPECT_TRUE(d.enabled);
  EXPECT_TRUE(d.namespaces);
  EXPECT_EQ(d.rates, (std::vector<std::uint32_t>{10, 100}));
  EXPECT_EQ(d.arrivals, Arrivals::kFixed);
  EXPECT_EQ(d.block_size, 4096u);
  EXPECT_EQ(d.windows, (std::vector<milliseconds>{milliseconds{900'000},
                                                   milliseconds{3'600'000}}));
  EXPECT_TRUE(d.targets.empty());  // the production default creates no file
}

TEST(ReadLatencyConfigTest, ReadsEveryKeyAndRoundTrips) {
  const LoadResult r = LoadString(R"(
[probes.read_latency]
enabled = false
namespaces = false
rates = [5, 50]
rate_period = "30s"
arrivals = "poisson"
block_size = "8KiB"
timeout = "2s"
windows = ["5m"]
[[probes.read_latency.targets]]
name = "sdb"
block_device = "/dev/sdb"
offset = "1GiB"
length = "64MiB"
[[probes.read_latency.targets]]
name = "tmp"
directory = "/var/tmp/dw"
file_size = "32MiB"
)", "t.toml");
  ASSERT_TRUE(r.config) << r.errors.front().ToString();
  const ReadLatencySettings& c = r.config->read_latency;
  EXPECT_FALSE(c.enabled);
  EXPECT_EQ(c.rates, (std::vector<std::uint32_t>{5, 50}));
  EXPECT_EQ(c.arrivals, Arrivals::kPoisson);
  EXPECT_EQ(c.block_size, 8192u);
  ASSERT_EQ(c.targets.size(), 2u);
  EXPECT_EQ(c.targets[0].offset, 1ull << 30);
  EXPECT_EQ(c.targets[1].file_size, 32ull << 20);
  const LoadResult again = LoadString(ToToml(*r.config), "u.toml");
  ASSERT_TRUE(again.config);
  EXPECT_EQ(*again.config, *r.config);
}

TEST(ReadLatencyConfigTest, ErrorsNameTheKeyAndWhatWasExpected) {
  EXPECT_THAT(Errors("[probes.read_latency]\nrates = [0]\n"),
              ::testing::ElementsAre("t.toml:2:10: probes.read_latency.rates: 0 IOPS "
                                     "is out of range (expected 1 to 10000)"));
  EXPECT_THAT(Errors("[probes.read_latency]\narrivals = \"bursty\"\n"),
              ::testing::ElementsAre(
                  "t.toml:2:12: probes.read_latency.arrivals: \"bursty\" is not "
                  "an arrival process (expected \"fixed\" or \"poisson\")"));
  EXPECT_THAT(Errors("[probes.read_latency]\nblock_size = \"4kb\"\n"),
              ::testing::ElementsAre(::testing::HasSubstr("unknown unit \"kb\"")));
  EXPECT_THAT(Errors("[[probes.read_latency.targets]]\nname = \"x\"\n"),
              ::testing::ElementsAre(::testing::HasSubstr(
                  "neither block_device nor directory is set")));
  EXPECT_THAT(Errors("[[probes.read_latency.targets]]\nname = \"x\"\n"
                     "block_device = \"/dev/sdb\"\noffset = \"1000B\"\n"),
              ::testing::ElementsAre(::testing::HasSubstr(
                  "\"1000B\" is not a multiple of block_size \"4KiB\"")));
}

TEST(ReadLatencyConfigTest, IdlePeriodDefaultsTo30sAndZeroTurnsItOff) {
  EXPECT_EQ(Defaults().read_latency.idle_period, milliseconds{30'000});
  const LoadResult r =
      LoadString("[probes.read_latency]\nidle_period = \"0s\"\n", "t.toml");
  ASSERT_TRUE(r.config) << r.errors.front().ToString();
  EXPECT_EQ(r.config->read_latency.idle_period, milliseconds{0});
  const LoadResult again = LoadString(ToToml(*r.config), "u.toml");
  ASSERT_TRUE(again.config);
  EXPECT_EQ(again.config->read_latency.idle_period, milliseconds{0});
  EXPECT_THAT(Errors("[probes.read_latency]\nidle_period = \"2d\"\n"),
              ::testing::ElementsAre(
                  "t.toml:2:15: probes.read_latency.idle_period: \"2d\" is out "
                  "of range (expected 0s to 1d)"));
}

TEST(ReadLatencyConfigTest, PowerAtLoadMaxAgeDefaultsTo15mAndIsRangeChecked) {
  EXPECT_EQ(Defaults().power_at_load_max_age, milliseconds{900'000});
  const LoadResult r = LoadString("[probes.power]\nat_load_max_age = \"1h\"\n", "t.toml");
  ASSERT_TRUE(r.config) << r.errors.front().ToString();
  EXPECT_EQ(r.config->power_at_load_max_age, milliseconds{3'600'000});
  const LoadResult again = LoadString(ToToml(*r.config), "u.toml");
  ASSERT_TRUE(again.config);
  EXPECT_EQ(again.config->power_at_load_max_age, milliseconds{3'600'000});
  EXPECT_THAT(Errors("[probes.power]\nat_load_max_age = \"5s\"\n"),
              ::testing::ElementsAre(
                  "t.toml:2:19: probes.power.at_load_max_age: \"5s\" is out "
                  "of range (expected 10s to 1d)"));
}

TEST(SizeTest, FormatAndParseAgree) {
  for (std::uint64_t v : {0ull, 512ull, 4096ull, 1ull << 20, 3ull << 30, 1000ull}) {
    EXPECT_EQ(ParseSize(FormatSize(v)), v) << FormatSize(v);
  }
  EXPECT_EQ(FormatSize(64ull << 20), "64MiB");
  EXPECT_FALSE(ParseSize("1.5GiB"));
  EXPECT_FALSE(ParseSize("GiB"));
}

}  // namespace
}  // namespace drivewatch::config
