// SPDX-License-Identifier: Apache-2.0
#include "config/schedule.h"

#include <array>
#include <ctime>
#include <vector>

namespace drivewatch::config {
namespace {

constexpr std::array<std::string_view, 7> kWeekdays{"sun", "mon", "tue", "wed",
                                                    "thu", "fri", "sat"};
constexpr std::string_view kSyntax =
    "expected \"\", \"daily HH:MM\", \"weekly DAY HH:MM\" or \"monthly D "
    "HH:MM\"";

std::vector<std::string_view> Words(std::string_view text) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    std::size_t j = text.find(' ', i);
    if (j == std::string_view::npos) j = text.size();
    words.push_back(text.substr(i, j - i));
    i = j;
  }
  return words;
}

bool TwoDigits(std::string_view s, int max, int& out) {
  if (s.size() != 2 || s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9')
    return false;
  out = (s[0] - '0') * 10 + (s[1] - '0');
  return out <= max;
}

std::string TwoDigit(int v) {
  return std::string(1, static_cast<char>('0' + v / 10)) +
         static_cast<char>('0' + v % 10);
}

}  // namespace

std::optional<Schedule> ParseSchedule(std::string_view text,
                                      std::string* error) {
  auto fail = [&](std::string why) -> std::optional<Schedule> {
    if (error != nullptr) {
      *error = "\"" + std::string(text) + "\" is not a valid schedule: " + why;
    }
    return std::nullopt;
  };
  Schedule s;
  if (text.empty()) return s;
  if (text.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789: ") !=
      std::string_view::npos) {
    return fail("unexpected character (" + std::string(kSyntax) +
                ", lower case)");
  }
  const std::vector<std::string_view> w = Words(text);
  if (w.empty()) {
    return fail("only spaces (" + std::string(kSyntax) + "; \"\" for no schedule)");
  }
  std::size_t time_at = 0;
  if (w[0] == "daily") {
    s.kind = Schedule::Kind::kDaily;
    time_at = 1;
  } else if (w[0] == "weekly") {
    s.kind = Schedule::Kind::kWeekly;
    if (w.size() < 2) return fail("missing the weekday (" + std::string(kSyntax) + ")");
    int day = -1;
    for (std::size_t i = 0; i < kWeekdays.size(); ++i) {
      if (w[1] == kWeekdays[i]) day = static_cast<int>(i);
    }
    if (day < 0) {
      return fail("unknown weekday \"" + std::string(w[1]) +
                  "\" (expected mon, tue, wed, thu, fri, sat or sun)");
    }
    s.day = day;
    time_at = 2;
  } else if (w[0] == "monthly") {
    s.kind = Schedule::Kind::kMonthly;
    if (w.size() < 2) return fail("missing the day of the month (" + std::string(kSyntax) + ")");
    int day = 0;
    bool digits = !w[1].empty() && w[1].size() <= 2 &&
                  w[1].find_first_not_of("0123456789") == std::string_view::npos;
    if (digits) {
      for (char c : w[1]) day = day * 10 + (c - '0');
    }
    if (!digits || day < 1 || day > 28) {
      return fail("day of the month \"" + std::string(w[1]) +
                  "\" is out of range (expected 1 to 28, which every month "
                  "has)");
    }
    s.day = day;
    time_at = 2;
  } else {
    return fail("unknown period \"" + std::string(w[0]) + "\" (" +
                std::string(kSyntax) + ")");
  }
  if (w.size() <= time_at) return fail("missing the time HH:MM (" + std::string(kSyntax) + ")");
  if (w.size() > time_at + 1) {
    return fail("unexpected \"" + std::string(w[time_at + 1]) + "\" after the time (" +
                std::string(kSyntax) + ")");
  }
  const std::string_view t = w[time_at];
  if (t.size() != 5 || t[2] != ':' || !TwoDigits(t.substr(0, 2), 23, s.hour) ||
      !TwoDigits(t.substr(3, 2), 59, s.minute)) {
    return fail("time \"" + std::string(t) +
                "\" is not HH:MM (expected 00:00 to 23:59, two digits each)");
  }
  return s;
}

std::string FormatSchedule(const Schedule& s) {
  const std::string time = TwoDigit(s.hour) + ":" + TwoDigit(s.minute);
  switch (s.kind) {
    case Schedule::Kind::kNever:
      return "";
    case Schedule::Kind::kDaily:
      return "daily " + time;
    case Schedule::Kind::kWeekly:
      return "weekly " + std::string(kWeekdays[s.day]) + " " + time;
    case Schedule::Kind::kMonthly:
      return "monthly " + std::to_string(s.day) + " " + time;
  }
  return "";
}

std::optional<std::chrono::system_clock::time_point> LatestSlot(
    const Schedule& s, std::chrono::system_clock::time_point now) {
  if (s.kind == Schedule::Kind::kNever) return std::nullopt;
  const std::time_t now_t = std::chrono::system_clock::to_time_t(now);
  std::tm today{};
  localtime_r(&now_t, &today);
  // Walks back one period at a time from the candidate in the current one.
  for (int back = 0; back < 3; ++back) {
    std::tm c = today;
    c.tm_hour = s.hour;
    c.tm_min = s.minute;
    c.tm_sec = 0;
    c.tm_isdst = -1;
    switch (s.kind) {
      case Schedule::Kind::kDaily:
        c.tm_mday -= back;
        break;
      case Schedule::Kind::kWeekly:
        c.tm_mday -= (today.tm_wday - s.day + 7) % 7 + 7 * back;
        break;
      case Schedule::Kind::kMonthly:
        c.tm_mday = s.day;
        c.tm_mon -= back;
        break;
      case Schedule::Kind::kNever:
        return std::nullopt;
    }
    const std::time_t slot = std::mktime(&c);
    if (slot != static_cast<std::time_t>(-1) && slot <= now_t) {
      return std::chrono::system_clock::from_time_t(slot);
    }
  }
  return std::nullopt;
}

}  // namespace drivewatch::config
