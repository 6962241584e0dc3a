// SPDX-License-Identifier: Apache-2.0
#include <array>
#include <cstdint>
#include <string>

#include "config/checks.h"
#include "config/config.h"

namespace drivewatch::config {
namespace {

struct Unit {
  std::string_view name;
  int64_t ms;
};

// Largest first: both the order FormatDuration writes and the order
// ParseDuration insists on, so that "1m30s" has exactly one spelling.
constexpr std::array<Unit, 5> kUnits{{
    {"d", 86'400'000},
    {"h", 3'600'000},
    {"m", 60'000},
    {"s", 1'000},
    {"ms", 1},
}};

constexpr std::string_view kUnitList = "d, h, m, s or ms";

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLetter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// The character at `i`, whole: quoting a lone byte of a UTF-8 sequence
// would put invalid UTF-8 in the message.
std::string_view CharAt(std::string_view text, size_t i) {
  const auto lead = static_cast<unsigned char>(text[i]);
  const size_t len = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return text.substr(i, len);
}

}  // namespace

std::string FormatDuration(std::chrono::milliseconds d) {
  int64_t ms = d.count();
  if (ms == 0) return "0s";
  std::string out;
  // Negative input never comes from the config; print it readably anyway
  // (for a clock that went backwards, say). Unsigned avoids -INT64_MIN.
  uint64_t left = static_cast<uint64_t>(ms);
  if (ms < 0) {
    out += '-';
    left = ~left + 1;
  }
  for (const Unit& unit : kUnits) {
    const uint64_t n = left / static_cast<uint64_t>(unit.ms);
    if (n == 0) continue;
    out += std::to_string(n);
    out += unit.name;
    left -= n * static_cast<uint64_t>(unit.ms);
  }
  return out;
}

std::optional<std::chrono::milliseconds> ParseDuration(std::string_view text,
                                                       std::string* error) {
  auto fail = [&](std::string why) -> std::optional<std::chrono::milliseconds> {
    if (error != nullptr) {
      *error =
          detail::Quote(text) + " is not a valid duration: " + std::move(why);
    }
    return std::nullopt;
  };
  if (text.empty())
    return fail("empty (expected a number and a unit, such as \"30s\")");

  int64_t total = 0;
  size_t next_unit = 0;  // index into kUnits of the largest unit still allowed
  size_t i = 0;
  while (i < text.size()) {
    if (!IsDigit(text[i])) {
      return fail(
          "unexpected " + detail::Quote(CharAt(text, i)) +
          " (expected a number and a unit, such as \"30s\" or \"1h30m\")");
    }
    int64_t n = 0;
    const size_t digits_start = i;
    for (; i < text.size() && IsDigit(text[i]); ++i) {
      if (__builtin_mul_overflow(n, 10, &n) ||
          __builtin_add_overflow(n, text[i] - '0', &n)) {
        return fail("too large (expected at most " +
                    FormatDuration(std::chrono::milliseconds::max()) + ")");
      }
    }
    if (i < text.size() && (text[i] == '.' || text[i] == ',')) {
      return fail(
          "fractions are not supported (expected whole numbers, such as "
          "\"1m30s\" or \"1500ms\")");
    }
    const size_t unit_start = i;
    while (i < text.size() && IsLetter(text[i])) ++i;
    const std::string_view unit = text.substr(unit_start, i - unit_start);
    if (unit.empty()) {
      const std::string_view number =
          text.substr(digits_start, i - digits_start);
      if (i < text.size()) {
        return fail("unexpected " + detail::Quote(CharAt(text, i)) + " after " +
                    detail::Quote(number) +
                    " (expected a unit right after the number: " +
                    std::string(kUnitList) + ")");
      }
      return fail("missing unit after " + detail::Quote(number) +
                  " (expected " + std::string(kUnitList) + ", as in \"" +
                  std::string(number) + "s\")");
    }
    size_t u = 0;
    while (u < kUnits.size() && kUnits[u].name != unit) ++u;
    if (u == kUnits.size()) {
      return fail("unknown unit " + detail::Quote(unit) + " (expected " +
                  std::string(kUnitList) + ")");
    }
    if (u < next_unit) {
      return fail(
          "units out of order (expected each unit at most once, largest first, "
          "as in \"1h30m\")");
    }
    next_unit = u + 1;
    int64_t part = 0;
    if (__builtin_mul_overflow(n, kUnits[u].ms, &part) ||
        __builtin_add_overflow(total, part, &total)) {
      return fail("too large (expected at most " +
                  FormatDuration(std::chrono::milliseconds::max()) + ")");
    }
  }
  return std::chrono::milliseconds{total};
}

}  // namespace drivewatch::config
