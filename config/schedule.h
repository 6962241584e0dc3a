// SPDX-License-Identifier: Apache-2.0
// When a scheduled device self-test is due ([probes.self_test] short and
// extended). A deliberately small syntax, in the host's local time (TZ):
//
//   ""                  never (the default)
//   "daily HH:MM"       every day at HH:MM
//   "weekly DAY HH:MM"  DAY is mon, tue, wed, thu, fri, sat or sun
//   "monthly D HH:MM"   day D of the month, 1 to 28 (every month has it)
//
// HH is 00 to 23 and MM 00 to 59, both two digits. Nothing else is accepted:
// a typo must fail check-config, not silently never run a test.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace drivewatch::config {

struct Schedule {
  enum class Kind { kNever, kDaily, kWeekly, kMonthly };
  Kind kind = Kind::kNever;
  int day = 0;  // weekly: 0 sun .. 6 sat (struct tm's tm_wday); monthly: 1..28
  int hour = 0;
  int minute = 0;
  bool operator==(const Schedule&) const = default;
};

// Parses the syntax above. On failure returns nullopt and, when `error` is
// given, stores a message such as
//   "weekly sunday 03:00" is not a valid schedule: unknown weekday "sunday"
//   (expected mon, tue, wed, thu, fri, sat or sun)
std::optional<Schedule> ParseSchedule(std::string_view text,
                                      std::string* error = nullptr);
// The canonical spelling; ParseSchedule(FormatSchedule(s)) == s.
std::string FormatSchedule(const Schedule& schedule);

// The latest time the schedule names at or before `now`, in local time; or
// nullopt for kNever. A wall time that a DST change skips moves as mktime(3)
// moves it.
std::optional<std::chrono::system_clock::time_point> LatestSlot(
    const Schedule& schedule, std::chrono::system_clock::time_point now);

}  // namespace drivewatch::config
