// SPDX-License-Identifier: Apache-2.0
#include "aging/report/report_format.h"

#include <algorithm>
#include <cmath>
#include <ctime>

namespace drivewatch::aging::report_format {

std::size_t Width(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string Utc(std::optional<double> seconds, const char* format) {
  if (!seconds || !std::isfinite(*seconds)) return "-";
  const std::time_t t = static_cast<std::time_t>(*seconds);
  std::tm tm{};
  if (::gmtime_r(&t, &tm) == nullptr) return "-";
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

std::string Count(std::uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string Grouped(double v, int decimals) {
  std::string s = Format("%.*f", decimals, std::fabs(v));
  const std::size_t dot = s.find('.');
  const std::size_t int_end = dot == std::string::npos ? s.size() : dot;
  std::string out;
  for (std::size_t i = 0; i < int_end; ++i) {
    if (i != 0 && (int_end - i) % 3 == 0) out += ',';
    out += s[i];
  }
  // No "-0" for a value that rounds to zero.
  const bool negative = v < 0 && s.find_first_not_of("0.") != std::string::npos;
  return (negative ? "-" : "") + out + s.substr(int_end);
}

std::string Printable(std::string_view s) {
  std::string out;
  for (unsigned char ch : s) {
    if (ch < 0x20 || ch == 0x7f) {
      out += Format("\\x%02x", ch);
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}

std::string Html(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string Table(const std::vector<std::vector<std::string>>& rows,
                  std::string_view indent, std::size_t right_from) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], Width(row[i]));
    }
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line(indent);
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::string pad(widths[i] - Width(row[i]), ' ');
      if (i != 0) line += "  ";
      if (i >= right_from) {
        line += pad + row[i];
      } else {
        line += row[i];
        if (i + 1 != row.size()) line += pad;
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

const char* const kCss = R"(
*{box-sizing:border-box}
body{margin:0;background:#f3f4f6;color:#111827;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:24px;margin:0 0 4px}
h1 small{font-weight:400;color:#6b7280;font-size:15px}
h2{font-size:17px;margin:0 0 12px;color:#1f2937}
.sub{color:#6b7280;margin:0 0 16px}
.verdict{padding:14px 20px;border-radius:10px;font-size:20px;font-weight:650;margin:0 0 18px;border-left:8px solid}
.verdict.pass{background:#dcfce7;color:#14532d;border-color:#16a34a}
.verdict.fail{background:#fee2e2;color:#7f1d1d;border-color:#dc2626}
.verdict.damaged,.verdict.unreadable{background:#fee2e2;color:#7f1d1d;border-color:#7f1d1d}
.verdict.incomplete,.verdict.waiting,.verdict.writing{background:#e0e7ff;color:#1e3a8a;border-color:#6366f1}
section{background:#fff;border-radius:10px;padding:18px 22px;margin:0 0 18px;box-shadow:0 1px 3px rgba(0,0,0,.08)}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:18px;margin:0 0 18px}
.cols section{margin:0}
dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0}
dt{color:#6b7280}
dd{margin:0;font-weight:500}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
th,td{padding:6px 10px;border-bottom:1px solid #e5e7eb;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
thead th{color:#6b7280;font-weight:600;font-size:13px}
.d{color:#6b7280;font-size:12px;margin-left:6px}
.worse{color:#b91c1c;font-weight:600}
.better{color:#15803d}
.chip{display:inline-block;width:12px;height:12px;border-radius:3px;margin-right:6px;vertical-align:-1px}
.classes{display:flex;gap:22px;flex-wrap:wrap;margin:10px 0 0}
.classes .count{font-weight:700;font-size:18px;margin-left:4px}
#events th,#events td{text-align:left}
.note{color:#6b7280;font-size:13px;margin:8px 0 0}
svg{display:block;width:100%;height:auto}
svg text{font:12px system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;fill:#4b5563}
)";

}  // namespace drivewatch::aging::report_format
