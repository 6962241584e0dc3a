// SPDX-License-Identifier: Apache-2.0
// PhaseDue with a fake clock: intervals, windows (also across midnight),
// weekdays, and once per window.
#include "aging/runner/phase_schedule.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

namespace drivewatch::aging {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::system_clock;

class PhaseScheduleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tz = std::getenv("TZ");
    saved_ = tz ? tz : "";
    had_ = tz != nullptr;
    setenv("TZ", "UTC", 1);
    tzset();
  }
  void TearDown() override {
    if (had_) setenv("TZ", saved_.c_str(), 1); else unsetenv("TZ");
    tzset();
  }
  // 2026-11-29 is a Sunday.
  static system_clock::time_point At(int day, int hour, int minute) {
    std::tm tm{};
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = 10;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = minute;
    return system_clock::from_time_t(timegm(&tm));
  }
  std::string saved_;
  bool had_ = false;
};

TEST_F(PhaseScheduleTest, ManualIsNeverDue) {
  EXPECT_FALSE(PhaseDue(config::PhaseSchedule{}, std::nullopt, At(29, 3, 0)));
}

TEST_F(PhaseScheduleTest, IntervalFromTheLastStart) {
  config::PhaseSchedule s;
  s.interval = std::chrono::duration_cast<std::chrono::milliseconds>(hours{24 * 7});
  EXPECT_TRUE(PhaseDue(s, std::nullopt, At(29, 3, 0)));
  EXPECT_FALSE(PhaseDue(s, At(22, 3, 1), At(29, 3, 0)));
  EXPECT_TRUE(PhaseDue(s, At(22, 3, 0), At(29, 3, 0)));
}

TEST_F(PhaseScheduleTest, WindowOncePerOccurrence) {
  config::PhaseSchedule s;
  s.window_start = 60;  // 01:00-05:00
  s.window_end = 300;
  EXPECT_FALSE(PhaseDue(s, std::nullopt, At(29, 0, 59)));
  EXPECT_TRUE(PhaseDue(s, std::nullopt, At(29, 1, 0)));
  EXPECT_TRUE(PhaseDue(s, std::nullopt, At(29, 4, 59)));
  EXPECT_FALSE(PhaseDue(s, std::nullopt, At(29, 5, 0)));
  // Ran at 01:10 today: not again today, again tomorrow.
  EXPECT_FALSE(PhaseDue(s, At(29, 1, 10), At(29, 3, 0)));
  EXPECT_TRUE(PhaseDue(s, At(29, 1, 10), At(30, 1, 0)));
  // Ran yesterday: due today.
  EXPECT_TRUE(PhaseDue(s, At(28, 4, 0), At(29, 1, 30)));
}

TEST_F(PhaseScheduleTest, WindowAcrossMidnightBelongsToTheDayItOpens) {
  config::PhaseSchedule s;
  s.window_start = 23 * 60;  // 23:00-02:00
  s.window_end = 120;
  s.weekdays = 1u << 6;      // Saturday nights only
  // Saturday 2026-11-28 23:30 and Sunday 01:30 are the same occurrence.
  EXPECT_TRUE(PhaseDue(s, std::nullopt, At(28, 23, 30)));
  EXPECT_TRUE(PhaseDue(s, std::nullopt, At(29, 1, 30)));
  EXPECT_FALSE(PhaseDue(s, At(28, 23, 40), At(29, 1, 30)));
  // Sunday 23:30 opens a Sunday window: not in the mask.
  EXPECT_FALSE(PhaseDue(s, std::nullopt, At(29, 23, 30)));
  // Friday night neither.
  EXPECT_FALSE(PhaseDue(s, std::nullopt, At(27, 23, 30)));
}

TEST_F(PhaseScheduleTest, WeekdaysFilterTheDay) {
  config::PhaseSchedule s;
  s.window_start = 0;
  s.window_end = 24 * 60 - 1;
  s.weekdays = 1u << 1;  // Monday
  EXPECT_FALSE(PhaseDue(s, std::nullopt, At(29, 12, 0)));  // Sunday
  EXPECT_TRUE(PhaseDue(s, std::nullopt, At(30, 12, 0)));   // Monday
}

}  // namespace
}  // namespace drivewatch::aging
