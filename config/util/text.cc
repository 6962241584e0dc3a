// SPDX-License-Identifier: Apache-2.0
#include "config/util/text.h"

#include <cmath>
#include <cstdio>

namespace drivewatch::util {

std::string Trim(std::string_view s, std::string_view blanks) {
  const auto first = s.find_first_not_of(blanks);
  if (first == std::string_view::npos) return {};
  return std::string(s.substr(first, s.find_last_not_of(blanks) - first + 1));
}

std::string Quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  out += s;
  out += '"';
  return out;
}

std::string Hex(std::uint64_t v, int digits, std::string_view prefix,
                std::string_view suffix) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%0*llx", digits, static_cast<unsigned long long>(v));
  std::string out(prefix);
  out += buf;
  out += suffix;
  return out;
}

std::string FormatBytes(long double bytes, ByteStyle style) {
  static constexpr const char* kUnits[] = {"B",   "KiB", "MiB", "GiB",
                                           "TiB", "PiB", "EiB"};
  const int max_unit = style == ByteStyle::kCapacity ? 6 : 5;
  // kSignificant scales only what is at least 1 KiB; the others scale the
  // magnitude and put the sign back in front.
  const bool split_sign = style != ByteStyle::kSignificant && bytes < 0;
  long double v = split_sign ? -bytes : bytes;
  int unit = 0;
  while (v >= 1024 && unit < max_unit) {
    v /= 1024;
    ++unit;
  }
  const char* sign = split_sign ? "-" : "";
  char buf[64];
  if (style == ByteStyle::kSignificant) {
    std::snprintf(buf, sizeof buf, v == std::floor(v) ? "%.0Lf %s" : "%.3Lg %s", v,
                  kUnits[unit]);
  } else if (unit == 0) {
    std::snprintf(buf, sizeof buf, "%s%.0Lf B", sign, v);
  } else {
    const bool two_decimals = style == ByteStyle::kCapacity && unit >= 3;
    std::snprintf(buf, sizeof buf, two_decimals ? "%s%.2Lf %s" : "%s%.1Lf %s", sign, v,
                  kUnits[unit]);
  }
  return buf;
}

}  // namespace drivewatch::util
