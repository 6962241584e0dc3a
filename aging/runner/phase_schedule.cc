// SPDX-License-Identifier: Apache-2.0
#include "aging/runner/phase_schedule.h"

#include <ctime>

namespace drivewatch::aging {
namespace {

using std::chrono::system_clock;

// The local time `days` days before `t`'s date, at `minutes` after midnight.
system_clock::time_point LocalAt(system_clock::time_point t, int days_back,
                                 int minutes, int* weekday) {
  const std::time_t secs = system_clock::to_time_t(t);
  std::tm tm{};
  localtime_r(&secs, &tm);
  tm.tm_mday -= days_back;
  tm.tm_hour = minutes / 60;
  tm.tm_min = minutes % 60;
  tm.tm_sec = 0;
  tm.tm_isdst = -1;
  const std::time_t at = std::mktime(&tm);  // normalises tm, incl. tm_wday
  *weekday = tm.tm_wday;
  return system_clock::from_time_t(at);
}

}  // namespace

bool PhaseDue(const config::PhaseSchedule& s,
              std::optional<system_clock::time_point> last_start,
              system_clock::time_point now) {
  if (s.interval.count() > 0) {
    return !last_start || now >= *last_start + s.interval;
  }
  if (s.window_start < 0) return false;
  const std::time_t secs = system_clock::to_time_t(now);
  std::tm tm{};
  localtime_r(&secs, &tm);
  const int minute = tm.tm_hour * 60 + tm.tm_min;
  const bool wraps = s.window_start > s.window_end;
  int days_back = -1;
  if (!wraps && minute >= s.window_start && minute < s.window_end) days_back = 0;
  if (wraps && minute >= s.window_start) days_back = 0;
  if (wraps && minute < s.window_end) days_back = 1;
  if (days_back < 0) return false;
  int weekday = 0;
  const system_clock::time_point opened = LocalAt(now, days_back, s.window_start, &weekday);
  if ((s.weekdays & (1u << weekday)) == 0) return false;
  return !last_start || *last_start < opened;
}

}  // namespace drivewatch::aging
