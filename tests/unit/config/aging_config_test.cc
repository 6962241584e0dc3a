// SPDX-License-Identifier: Apache-2.0
// [aging]: targets, phases, schedules, and the errors a wrong one gets.
#include <gtest/gtest.h>

#include <cmath>

#include "config/config.h"
#include "tests/common/kind_lists.h"

namespace drivewatch::config {
namespace {

using std::chrono::milliseconds;

std::string Errors(const LoadResult& r) {
  std::string out;
  for (const ConfigError& e : r.errors) out += e.ToString() + "\n";
  return out;
}

constexpr const char* kTargets = R"(
[[aging.targets]]
name = "scratch"
block_device = "/dev/nvme1n1"
serial = "S64DNX0R123456"
namespace = 1
destroy_data = true

[[aging.targets]]
name = "tmp"
directory = "/var/tmp/dw"
file_size = "64MiB"
free_space_reserve = 0.2
)";

TEST(AgingConfigTest, ReadsTargetsAndPhases) {
  const std::string text = std::string(kTargets) + R"(
[aging]
temperature_margin = 3.5

[[aging.phases]]
name = "fill-half"
kind = "fill"
target = "scratch"
interval = "30d"
max_duration = "4h"
fill_percent = 50
slc_drop_fraction = 0.5

[[aging.phases]]
name = "perf-weekend"
kind = "perf"
target = "tmp"
window = "23:00-05:00"
weekdays = ["sat", "sun"]
perf_duration = "10s"

[[aging.phases]]
name = "trim"
kind = "trim"
target = "tmp"
)";
  const LoadResult r = LoadString(text, "a.toml");
  ASSERT_TRUE(r.config) << Errors(r);
  const AgingConfig& a = r.config->aging;
  EXPECT_EQ(a.temperature_margin, 3.5);
  ASSERT_EQ(a.targets.size(), 2u);
  EXPECT_EQ(a.targets[0].serial, "S64DNX0R123456");
  EXPECT_EQ(a.targets[0].nsid, 1u);
  EXPECT_TRUE(a.targets[0].destroy_data);
  EXPECT_FALSE(a.targets[0].allow_signatures);
  EXPECT_EQ(a.targets[1].file_size, 64u << 20);
  EXPECT_EQ(a.targets[1].min_free_ratio, 0.2);
  ASSERT_EQ(a.phases.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<FillParams>(a.phases[0].params));
  EXPECT_EQ(a.phases[0].schedule.interval, milliseconds{30LL * 86'400'000});
  EXPECT_EQ(a.phases[0].max_duration, milliseconds{4 * 3'600'000});
  EXPECT_EQ(std::get<FillParams>(a.phases[0].params).slc_drop_fraction, 0.5);
  EXPECT_EQ(a.phases[1].schedule.window_start, 23 * 60);
  EXPECT_EQ(a.phases[1].schedule.window_end, 5 * 60);
  EXPECT_EQ(a.phases[1].schedule.weekdays, (1u << 0) | (1u << 6));
  EXPECT_EQ(std::get<PerfParams>(a.phases[1].params).perf_duration, milliseconds{10'000});
  EXPECT_TRUE(a.phases[2].schedule.manual());
  EXPECT_EQ(std::get<TrimParams>(a.phases[2].params).fill_percent, 90);  // trim's own default
  EXPECT_EQ(FormatPhaseSchedule(a.phases[1].schedule),
            "window 23:00-05:00 on sun sat");
  EXPECT_EQ(a.FindPhase("trim"), &a.phases[2]);
  EXPECT_EQ(a.FindTarget("nope"), nullptr);

  const LoadResult again = LoadString(ToToml(*r.config), "again.toml");
  ASSERT_TRUE(again.config) << Errors(again) << ToToml(*r.config);
  EXPECT_EQ(*again.config, *r.config);
}

TEST(AgingConfigTest, RetentionPhasesRoundTrip) {
  const std::string text = std::string(kTargets) + R"(
[[aging.phases]]
name = "retention-write"
kind = "retention-write"
target = "scratch"
study = "lab-q4"
offset = "1GiB"
length = "8GiB"
activation_energy = 1.2
reference_temperature = 40

[[aging.phases]]
name = "weekly-verify"
kind = "retention-verify"
target = "scratch"
study = "lab-q4"
interval = "7d"
queue_depth = 8
storage_temperature = 25
)";
  const LoadResult r = LoadString(text, "r.toml");
  ASSERT_TRUE(r.config) << Errors(r);
  ASSERT_TRUE(std::holds_alternative<RetentionWriteParams>(r.config->aging.phases[0].params));
  const auto& w = std::get<RetentionWriteParams>(r.config->aging.phases[0].params);
  EXPECT_EQ(w.study, "lab-q4");
  EXPECT_EQ(w.region_offset, 1ull << 30);
  EXPECT_EQ(w.region_length, 8ull << 30);
  EXPECT_EQ(w.activation_energy, 1.2);
  EXPECT_EQ(w.reference_temperature, 40);
  EXPECT_EQ(w.block_size, 128u * 1024);
  EXPECT_FALSE(PhaseKindHasKey(w, "storage_temperature"));
  const auto& v = std::get<RetentionVerifyParams>(r.config->aging.phases[1].params);
  EXPECT_EQ(v.storage_temperature, 25);
  EXPECT_EQ(v.queue_depth, 8u);
  const LoadResult again = LoadString(ToToml(*r.config), "again.toml");
  ASSERT_TRUE(again.config) << Errors(again) << ToToml(*r.config);
  EXPECT_EQ(*again.config, *r.config);
}

TEST(AgingConfigTest, ErrorsNameTheKeyAndWhatWasExpected) {
  struct Case {
    std::string text;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"[[aging.targets]]\nname = \"x\"\nblock_device = \"/dev/sdb\"\n",
       "b.toml:1:1: aging.targets.serial: missing serial"},
      {"[[aging.targets]]\nname = \"x\"\ndirectory = \"/tmp\"\ndestroy_data = true\n",
       "b.toml:4:16: aging.targets.destroy_data: only a block_device target has "
       "destroy_data"},
      {std::string(kTargets) +
           "[[aging.phases]]\nname = \"p\"\nkind = \"fil\"\ntarget = \"tmp\"\n",
       "aging.phases.kind: \"fil\" is not a phase kind (expected one of: " +
           testing::QuotedKindList() + ")"},
      {std::string(kTargets) +
           "[[aging.phases]]\nname = \"p\"\nkind = \"retention-write\"\ntarget = \"tmp\"\n",
       "aging.phases.study: missing study"},
      {std::string(kTargets) +
           "[[aging.phases]]\nname = \"p\"\nkind = \"retention-verify\"\ntarget = \"tmp\"\n"
           "study = \"s\"\noffset = \"1GiB\"\n",
       "aging.phases.offset: not used by kind \"retention-verify\" (expected only on "
       "kind \"retention-write\")"},
      {std::string(kTargets) +
           "[[aging.phases]]\nname = \"p\"\nkind = \"retention-write\"\ntarget = \"tmp\"\n"
           "study = \"s\"\nlength = \"1000KiB\"\n",
       "aging.phases.length: \"1000KiB\" is not a whole number of MiB"},
      {std::string(kTargets) +
           "[[aging.phases]]\nname = \"p\"\nkind = \"fill\"\ntarget = \"nvme\"\n",
       "aging.phases.target: \"nvme\" is not an [[aging.targets]] name "
       "(expected one of: \"scratch\", \"tmp\")"},
      {std::string(kTargets) +
           "[[aging.phases]]\nname = \"p\"\nkind = \"perf\"\ntarget = \"tmp\"\n"
           "fill_percent = 10\n",
       "aging.phases.fill_percent: not used by kind \"perf\" (expected only "
       "on kind \"fill\", \"trim\")"},
      {std::string(kTargets) +
           "[[aging.phases]]\nname = \"p\"\nkind = \"fill\"\ntarget = \"tmp\"\n"
           "interval = \"1d\"\nwindow = \"01:00-02:00\"\n",
       "aging.phases.window: both interval and window are set"},
      {std::string(kTargets) +
           "[[aging.phases]]\nname = \"p\"\nkind = \"fill\"\ntarget = \"tmp\"\n"
           "window = \"1:00-2:00\"\n",
       "aging.phases.window: \"1:00-2:00\" is not a time window"},
      {std::string(kTargets) +
           "[[aging.phases]]\nname = \"p\"\nkind = \"fill\"\ntarget = \"tmp\"\n"
           "window = \"01:00-02:00\"\nweekdays = [\"sunday\"]\n",
       "aging.phases.weekdays: \"sunday\" is not a weekday"},
      {std::string(kTargets) +
           "[[aging.phases]]\nname = \"p\"\nkind = \"fill\"\ntarget = \"tmp\"\n"
           "queue_depth = 512\n",
       "aging.phases.queue_depth: 512 is out of range (expected a whole "
       "number from 1 to 256)"},
      {std::string(kTargets) +
           "[[aging.phases]]\nname = \"p\"\nkind = \"fill\"\ntarget = \"tmp\"\n"
           "block_size = \"3MiB\"\n",
       "aging.phases.block_size: \"3MiB\" is not a usable block size"},
      {"[aging]\ntemperature_margin = \"5\"\n",
       "b.toml:2:22: aging.temperature_margin: wrong type: string \"5\""},
      {"[aging]\ntargts = []\n",
       "aging.targts: unknown key (did you mean \"targets\"?)"},
  };
  for (const Case& c : cases) {
    const LoadResult r = LoadString(c.text, "b.toml");
    EXPECT_FALSE(r.config) << c.text;
    EXPECT_NE(Errors(r).find(c.expected), std::string::npos)
        << "config:\n" << c.text << "\ngot:\n" << Errors(r)
        << "expected to contain:\n" << c.expected;
  }
}

}  // namespace
}  // namespace drivewatch::config
