// SPDX-License-Identifier: Apache-2.0
// [probes.thermal] and [probes.power], including the per-drive meters.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/config.h"

namespace drivewatch::config {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<std::string> Errors(const std::string& text) {
  const LoadResult result = LoadString(text, "t.toml");
  EXPECT_EQ(result.config.has_value(), result.errors.empty()) << text;
  std::vector<std::string> out;
  for (const ConfigError& e : result.errors) out.push_back(e.ToString());
  return out;
}

Config MustLoad(const std::string& text) {
  const LoadResult result = LoadString(text, "t.toml");
  EXPECT_THAT(Errors(text), IsEmpty());
  return result.config.value_or(Config{});
}

TEST(ThermalPowerConfigTest, Defaults) {
  const Config d = Defaults();
  EXPECT_TRUE(d.probe("thermal").enabled);
  EXPECT_EQ(d.probe("thermal").interval, milliseconds{60'000});
  EXPECT_TRUE(d.async_events);
  EXPECT_TRUE(d.probe("power").enabled);
  EXPECT_EQ(d.probe("power").interval, milliseconds{60'000});
  EXPECT_THAT(d.power_meters, IsEmpty());
}

TEST(ThermalPowerConfigTest, ReadsEveryKeyAndRoundTrips) {
  const Config c = MustLoad(R"(
[probes.thermal]
enabled = false
interval = "2m"
async_events = false

[probes.power]
enabled = true
interval = "15s"

[[probes.power.meters]]
serial = "S4EWNX0R123456"
hwmon = "/sys/class/hwmon/hwmon3/power1_input"

[[probes.power.meters]]
serial = "PHM2 \"odd\""
command = ["/usr/local/bin/read-meter", "--channel", "2"]
timeout = "500ms"
)");
  EXPECT_FALSE(c.probe("thermal").enabled);
  EXPECT_EQ(c.probe("thermal").interval, milliseconds{120'000});
  EXPECT_FALSE(c.async_events);
  EXPECT_EQ(c.probe("power").interval, milliseconds{15'000});
  ASSERT_EQ(c.power_meters.size(), 2u);
  EXPECT_EQ(c.power_meters[0],
            (PowerMeter{"S4EWNX0R123456", "/sys/class/hwmon/hwmon3/power1_input",
                        {}, milliseconds{2'000}}));
  EXPECT_EQ(c.power_meters[1],
            (PowerMeter{"PHM2 \"odd\"",
                        "",
                        {"/usr/local/bin/read-meter", "--channel", "2"},
                        milliseconds{500}}));
  EXPECT_EQ(MustLoad(ToToml(c)), c);
  // The inline form the example config shows reads the same.
  EXPECT_EQ(MustLoad("[probes.power]\nmeters = [{ serial = \"A\", hwmon = "
                     "\"/p\" }]\n")
                .power_meters.size(),
            1u);
}

TEST(ThermalPowerConfigTest, MeterErrors) {
  EXPECT_THAT(
      Errors("[probes.power]\nmeters = [\n"
             "  { serial = \"A\", hwmon = \"/x/power1_input\" },\n"
             "  { serial = \"A\", command = [\"rel\"], timeout = \"1ms\" },\n"
             "  { serial = \"B\", hwmon = \"/y\", command = [\"/bin/true\"] },\n"
             "  { hwmon = \"/y\", colour = 1 },\n"
             "  { serial = \"C\", command = [] },\n"
             "  \"D\",\n"
             "]\n"),
      ElementsAre(
          "t.toml:4:14: probes.power.meters.serial: \"A\" already has a meter, "
          "at line 3, column 14 (expected one meter per drive)",
          "t.toml:4:30: probes.power.meters.command: \"rel\" is not an "
          "absolute path (expected a path starting with \"/\")",
          "t.toml:4:48: probes.power.meters.timeout: \"1ms\" is out of range "
          "(expected 100ms to 30s)",
          "t.toml:5:3: probes.power.meters: both hwmon and command are set "
          "(expected exactly one: hwmon = a power*_input file, or command = "
          "[\"/path/to/program\", ...])",
          "t.toml:6:3: probes.power.meters: missing serial (expected the "
          "drive's serial number, e.g. serial = \"S4EWNX0R123456\")",
          "t.toml:6:19: probes.power.meters.colour: unknown key (expected one "
          "of: \"serial\", \"hwmon\", \"command\", \"timeout\")",
          "t.toml:7:29: probes.power.meters.command: empty array (expected "
          "a non-empty array of strings, the program's absolute path first)",
          "t.toml:8:3: probes.power.meters: wrong type: string \"D\" (expected "
          "a table with serial and hwmon or command)"));
  EXPECT_THAT(Errors("[probes.thermal]\nasync_events = \"yes\"\n"),
              ElementsAre("t.toml:2:16: probes.thermal.async_events: wrong "
                          "type: string \"yes\" (expected a boolean: true or "
                          "false)"));
  EXPECT_THAT(Errors("[probes.power]\nasync_events = true\n"),
              ElementsAre("t.toml:2:1: probes.power.async_events: unknown key "
                          "(did you mean \"probes.thermal.async_events\"?)"));
}

}  // namespace
}  // namespace drivewatch::config
