// SPDX-License-Identifier: Apache-2.0
// What the reports drivewatch prints share (`drivewatch retention report`,
// aging/report/retention_report*.cc, and `drivewatch report`, aging/report/drive_report*.cc):
// printf into a std::string, dates, counts, HTML escaping, aligned text
// tables and the style sheet of their self-contained HTML pages.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace drivewatch::aging::report_format {

template <typename... Args>
std::string Format(const char* format, Args... args) {
  const int n = std::snprintf(nullptr, 0, format, args...);
  if (n <= 0) return "";
  std::string out(static_cast<std::size_t>(n), '\0');
  std::snprintf(out.data(), out.size() + 1, format, args...);
  return out;
}

// Unix seconds as a UTC date with strftime's `format`; "-" when missing
// or not finite.
std::string Utc(std::optional<double> seconds, const char* format = "%Y-%m-%d %H:%M UTC");

// 1234567 -> "1,234,567".
std::string Count(std::uint64_t n);
// A number with `decimals` decimals and its whole part grouped by
// thousands: Grouped(4220.94, 1) -> "4,220.9".
std::string Grouped(double v, int decimals);

// Text from a record (a name, a file name, a history's string) shown on a
// terminal: control characters escaped (\x1b), so none can move the cursor
// or start a line that reads like a verdict.
std::string Printable(std::string_view s);

// Text for HTML element content and attribute values.
std::string Html(std::string_view s);

// Columns as wide as their widest cell, counted in code points so "µs" and
// "°C" line up.
std::size_t Width(std::string_view s);

// An aligned text table: the first column left-aligned, `right_from` and
// after right-aligned, two spaces between columns, each line after
// `indent`, trailing blanks cut.
std::string Table(const std::vector<std::vector<std::string>>& rows,
                  std::string_view indent, std::size_t right_from = 1);

// The style sheet of every HTML report page.
extern const char* const kCss;

}  // namespace drivewatch::aging::report_format
