// SPDX-License-Identifier: Apache-2.0
// The self-test schedule syntax and when its slots fall, against a fixed
// clock (TZ=UTC, so local time is predictable).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <ctime>

#include "config/config.h"
#include "config/schedule.h"

namespace drivewatch::config {
namespace {

using std::chrono::system_clock;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

system_clock::time_point At(std::int64_t unix_seconds) {
  return system_clock::time_point(std::chrono::seconds(unix_seconds));
}
std::int64_t Unix(system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

class ScheduleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("TZ", "UTC", 1);
    tzset();
  }
};

TEST_F(ScheduleTest, ParsesAndFormatsEveryForm) {
  for (const char* text : {"", "daily 02:00", "weekly sun 03:30", "weekly sat 23:59",
                           "monthly 1 00:00", "monthly 28 12:05"}) {
    std::string error;
    auto s = ParseSchedule(text, &error);
    ASSERT_TRUE(s.has_value()) << text << ": " << error;
    EXPECT_EQ(FormatSchedule(*s), text);
  }
  EXPECT_EQ(ParseSchedule("")->kind, Schedule::Kind::kNever);
}

TEST_F(ScheduleTest, RejectsWithAReason) {
  auto why = [](const char* text) {
    std::string error;
    EXPECT_FALSE(ParseSchedule(text, &error).has_value()) << text;
    return error;
  };
  EXPECT_EQ(why("weekly sunday 03:00"),
            "\"weekly sunday 03:00\" is not a valid schedule: unknown weekday "
            "\"sunday\" (expected mon, tue, wed, thu, fri, sat or sun)");
  EXPECT_THAT(why("daily 2:00"), HasSubstr("is not HH:MM"));
  EXPECT_THAT(why("daily 24:00"), HasSubstr("is not HH:MM"));
  EXPECT_THAT(why("daily 02:60"), HasSubstr("is not HH:MM"));
  EXPECT_THAT(why("daily"), HasSubstr("missing the time"));
  EXPECT_THAT(why("hourly 02:00"), HasSubstr("unknown period \"hourly\""));
  EXPECT_THAT(why("Daily 02:00"), HasSubstr("unexpected character"));
  EXPECT_THAT(why("monthly 31 02:00"), HasSubstr("expected 1 to 28"));
  EXPECT_THAT(why("daily 02:00 extra"), HasSubstr("unexpected \"extra\""));
  EXPECT_THAT(why("weekly"), HasSubstr("missing the weekday"));
  EXPECT_THAT(why("0 2 * * *"), HasSubstr("unexpected character"));
  // Found by the config fuzz target: spaces alone have no period word.
  EXPECT_EQ(why("   "),
            "\"   \" is not a valid schedule: only spaces (expected \"\", \"daily HH:MM\", "
            "\"weekly DAY HH:MM\" or \"monthly D HH:MM\"; \"\" for no schedule)");
}

TEST_F(ScheduleTest, LatestSlotAtOrBeforeNow) {
  // 2026-01-04 (a Sunday) 01:59:00 UTC.
  const auto now = At(1767491940);
  EXPECT_FALSE(LatestSlot(*ParseSchedule(""), now).has_value());
  // Daily 02:00: yesterday's, until 02:00 today.
  EXPECT_EQ(Unix(*LatestSlot(*ParseSchedule("daily 02:00"), now)), 1767405600);
  EXPECT_EQ(Unix(*LatestSlot(*ParseSchedule("daily 02:00"), At(1767492000))), 1767492000);
  // Weekly sun 03:00: last Sunday's; weekly sat 00:00: yesterday.
  EXPECT_EQ(Unix(*LatestSlot(*ParseSchedule("weekly sun 03:00"), now)), 1766890800);
  EXPECT_EQ(Unix(*LatestSlot(*ParseSchedule("weekly sat 00:00"), now)), 1767398400);
  // Monthly 3 00:00: 2026-01-03; monthly 5: 2025-12-05.
  EXPECT_EQ(Unix(*LatestSlot(*ParseSchedule("monthly 3 00:00"), now)), 1767398400);
  EXPECT_EQ(Unix(*LatestSlot(*ParseSchedule("monthly 5 00:00"), now)), 1764892800);
}

TEST_F(ScheduleTest, ConfigReportsScheduleErrorsWithTheirPosition) {
  const std::string text =
      "[probes.self_test]\n"
      "short = \"daily 2am\"\n"
      "extended = \"weekly sun 03:00\"\n"
      "abort_on_shutdown = true\n"
      "drives = [\n"
      "  { serial = \"S1\", short = \"\" },\n"
      "  { serial = \"S1\", extended = \"weekly funday 01:00\" },\n"
      "  { serial = \"S2\" },\n"
      "]\n";
  const LoadResult r = LoadString(text, "t.toml");
  ASSERT_FALSE(r.config.has_value());
  std::vector<std::string> errors;
  for (const auto& e : r.errors) errors.push_back(e.ToString());
  EXPECT_THAT(errors,
              ElementsAre(HasSubstr("t.toml:2:9: probes.self_test.short: \"daily 2am\" is not a valid schedule"),
                          HasSubstr("t.toml:7:14: probes.self_test.drives.serial: \"S1\" already has schedules, at line 6, column 14"),
                          HasSubstr("t.toml:7:31: probes.self_test.drives.extended: \"weekly funday 01:00\" is not a valid schedule: unknown weekday \"funday\""),
                          HasSubstr("t.toml:8:3: probes.self_test.drives: neither short nor extended is set")));
}

TEST_F(ScheduleTest, SelfTestIntervalIsAtMostTheCatchUpWindow) {
  const LoadResult r =
      LoadString("[probes.self_test]\ninterval = \"2h\"\n", "t.toml");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].ToString(),
            "t.toml:2:12: probes.self_test.interval: \"2h\" is out of range "
            "(expected 1s to 1h)");
}

TEST_F(ScheduleTest, ConfigRoundTripsThroughToToml) {
  const std::string text =
      "[probes.self_test]\n"
      "interval = \"30s\"\n"
      "short = \"daily 02:00\"\n"
      "extended = \"weekly sun 03:00\"\n"
      "abort_on_shutdown = true\n"
      "drives = [{ serial = \"S1\", short = \"\" }, { serial = \"S2\", extended = \"monthly 1 04:00\" }]\n"
      "[probes.error_log]\nenabled = false\n"
      "[probes.persistent_event_log]\ninterval = \"1h\"\n";
  const LoadResult r = LoadString(text, "t.toml");
  ASSERT_TRUE(r.config.has_value()) << r.errors[0].ToString();
  const Config& c = *r.config;
  EXPECT_EQ(c.self_test.short_test, *ParseSchedule("daily 02:00"));
  EXPECT_TRUE(c.self_test.abort_on_shutdown);
  ASSERT_EQ(c.self_test.drives.size(), 2u);
  EXPECT_EQ(c.self_test.drives[0].short_test, Schedule{});
  EXPECT_FALSE(c.self_test.drives[0].extended_test.has_value());
  EXPECT_FALSE(c.probe("error_log").enabled);
  EXPECT_EQ(c.probe("persistent_event_log").interval, std::chrono::hours(1));
  const LoadResult again = LoadString(ToToml(c), "again.toml");
  ASSERT_TRUE(again.config.has_value()) << again.errors[0].ToString();
  EXPECT_EQ(*again.config, c);
}

}  // namespace
}  // namespace drivewatch::config
