// SPDX-License-Identifier: Apache-2.0
// `drivewatch history`: the records of aging/history/history.h as a table, JSON
// Lines or CSV.
#include "aging/history/history.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/util/text.h"

namespace drivewatch::aging {

namespace {

bool EndsWithWord(std::string_view key, std::string_view unit) {
  if (key == unit) return true;
  return key.size() > unit.size() &&
         key.substr(key.size() - unit.size()) == unit &&
         key[key.size() - unit.size() - 1] == '_';
}

std::string Printf(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string FormatUtc(const Json* seconds) {
  if (!seconds || !seconds->is_number()) return "-";
  const double s = std::floor(AsDouble(*seconds));
  if (!(s >= 0 && s < 253402300800.0)) return "-";  // up to year 9999
  const std::time_t t = static_cast<std::time_t>(s);
  std::tm tm{};
  if (!::gmtime_r(&t, &tm)) return "-";
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string FormatDuration(double s) {
  if (!std::isfinite(s) || s < 0) return "-";
  char buf[48];
  const long long total = std::llround(s);
  if (s < 10 && s != std::floor(s)) {
    std::snprintf(buf, sizeof buf, "%.1fs", s);
  } else if (total < 60) {
    std::snprintf(buf, sizeof buf, "%llds", total);
  } else if (total < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", total / 60, total % 60);
  } else if (total < 86400) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", total / 3600,
                  total % 3600 / 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", total / 86400,
                  total % 86400 / 3600);
  }
  return buf;
}

std::string RecordDuration(const Json& r) {
  if (const Json* d = Find(r, "duration_seconds");
      d && d->is_number()) {
    return FormatDuration(AsDouble(*d));
  }
  const Json* start = Find(r, "start");
  const Json* end = Find(r, "end");
  if (start && end && start->is_number() &&
      end->is_number()) {
    return FormatDuration(AsDouble(*end) - AsDouble(*start));
  }
  return "-";
}

std::string FormatSeconds(double s) {
  const double a = std::fabs(s);
  if (a == 0) return "0 s";
  if (a < 1e-3) return Printf("%.3g µs", s * 1e6);
  if (a < 1) return Printf("%.3g ms", s * 1e3);
  if (a < 60) return Printf("%.3g s", s);
  return FormatDuration(s);
}

// Table cells stay on one line whatever a record holds.
std::string OneLine(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = ' ';
  }
  return out;
}

std::string HumanValue(std::string_view key, const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return AsBool(v) ? "true" : "false";
    case Json::value_t::string: {
      const std::string& s = AsString(v);
      if (s.empty() || s.find_first_of(" =\"") != std::string::npos) {
        return OneLine(DumpJson(v));
      }
      return OneLine(s);
    }
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: {
      const double d = AsDouble(v);
      if (EndsWithWord(key, "bytes_per_second")) {
        return Printf("%.1f MB/s", d / 1e6);  // decimal, as drives are sold
      }
      if (EndsWithWord(key, "bytes")) return util::FormatBytes(d, util::ByteStyle::kCapacity);
      if (EndsWithWord(key, "ratio")) return Printf("%.1f%%", d * 100);
      if (EndsWithWord(key, "seconds")) return FormatSeconds(d);
      const std::string exact = DumpJson(v);
      if (exact.find_first_of(".e") == std::string::npos) return exact;
      return Printf("%.6g", d);
    }
    case Json::value_t::array:
    case Json::value_t::object:
    case Json::value_t::binary:     // never parsed from JSON text
    case Json::value_t::discarded:  // never kept
      return OneLine(DumpJson(v));
  }
  return {};
}

std::string ResultsText(const Json& r) {
  std::string out;
  const auto add = [&](const std::string& key, std::string_view unit_key,
                       const Json& v) {
    if (!out.empty()) out += ' ';
    out += OneLine(key);
    out += '=';
    out += HumanValue(unit_key, v);
  };
  if (const Json* results = Find(r, "results")) {
    for (const auto& [key, value] : Members(*results)) {
      if (value.is_array()) continue;  // series-like
      if (value.is_object()) {
        for (const auto& [sub, sub_value] : Members(value)) {
          if (sub_value.is_array()) continue;
          add(key + "." + sub, sub, sub_value);
        }
        continue;
      }
      add(key, key, value);
    }
  }
  // Why a run stopped is the most useful thing to show for it.
  if (const Json* reason = Find(r, "reason");
      reason && !AsString(*reason).empty()) {
    add("reason", "reason", *reason);
  }
  return out;
}

std::string Cell(const Json& r, std::string_view key) {
  const Json* v = Find(r, key);
  if (!v || v->is_null()) return "-";
  if (v->is_string()) {
    return AsString(*v).empty() ? "-" : OneLine(AsString(*v));
  }
  return OneLine(DumpJson(*v));
}

std::size_t DisplayWidth(std::string_view s) {
  std::size_t n = 0;
  for (const char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::string RenderTable(const std::vector<const Json*>& records) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"START (UTC)", "PHASE", "KIND", "TARGET", "SERIAL",
                  "OUTCOME", "DURATION", "RESULTS"});
  for (const Json* r : records) {
    if (IsStepRecord(*r)) {  // a step of a run (an endurance pass): when it ended, its number
      rows.push_back({FormatUtc(Find(*r, "time")), Cell(*r, "phase"), Cell(*r, "kind"),
                      Cell(*r, "target"), Cell(*r, "serial"), "step " + Cell(*r, "step"), "-",
                      ResultsText(*r)});
      continue;
    }
    rows.push_back({FormatUtc(Find(*r, "start")), Cell(*r, "phase"),
                    Cell(*r, "kind"), Cell(*r, "target"), Cell(*r, "serial"),
                    Cell(*r, "outcome"), RecordDuration(*r), ResultsText(*r)});
  }
  std::vector<std::size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      widths[c] = std::max(widths[c], DisplayWidth(row[c]));
    }
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (c) line += "  ";
      line += row[c];
      if (c + 1 < row.size()) {
        line.append(widths[c] - DisplayWidth(row[c]), ' ');
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  }
  return out;
}

void Flatten(const Json& v, const std::string& prefix,
             std::vector<std::pair<std::string, const Json*>>& out) {
  for (const auto& [key, value] : Members(v)) {
    const std::string name = prefix + key;
    if (value.is_array()) continue;
    if (value.is_object()) {
      Flatten(value, name + ".", out);
      continue;
    }
    out.emplace_back(name, &value);
  }
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string CsvValue(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "";
    case Json::value_t::string: return CsvField(AsString(v));
    default: return CsvField(DumpJson(v));
  }
}

std::string RenderCsv(const std::vector<const Json*>& records) {
  // The schema's fields first and always, so scripts can rely on their
  // columns (and an empty selection still has a header); then whatever
  // else the records hold, in the order first seen.
  std::vector<std::string> columns = {
      "version", "run",   "phase", "kind",     "target",
      "serial",  "model", "firmware", "start", "end",
      "duration_seconds", "outcome", "reason"};
  // Columns are looked up by name: a record may hold thousands of fields
  // (kMaxJsonObjectMembers in one object), and searching them for each
  // column would take their count squared.
  std::unordered_map<std::string, std::size_t> column_of;
  for (std::size_t c = 0; c < columns.size(); ++c) column_of.emplace(columns[c], c);
  std::vector<std::vector<std::pair<std::string, const Json*>>> flat;
  for (const Json* r : records) {
    flat.emplace_back();
    Flatten(*r, "", flat.back());
    for (const auto& [name, value] : flat.back()) {
      if (column_of.emplace(name, columns.size()).second) columns.push_back(name);
    }
  }
  std::string out;
  for (std::size_t c = 0; c < columns.size(); ++c) {
    if (c) out += ',';
    out += CsvField(columns[c]);
  }
  out += '\n';
  std::vector<const Json*> row;
  for (const auto& fields : flat) {
    // Two fields may flatten to one name ({"a.b": 1, "a": {"b": 2}}): the
    // first is shown.
    row.assign(columns.size(), nullptr);
    for (const auto& [name, value] : fields) {
      const Json*& cell = row[column_of.at(name)];
      if (cell == nullptr) cell = value;
    }
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (c) out += ',';
      if (row[c] != nullptr) out += CsvValue(*row[c]);
    }
    out += '\n';
  }
  return out;
}

}  // namespace

std::string RenderHistory(const std::vector<Json>& records,
                          const HistoryFilter& filter, HistoryFormat format) {
  std::vector<const Json*> selected;
  for (const Json& r : records) {
    if (!filter.serial.empty()) {
      const Json* s = Find(r, "serial");
      if (!s || AsString(*s) != filter.serial) continue;
    }
    if (!filter.phase.empty()) {
      const Json* p = Find(r, "phase");
      if (!p || AsString(*p) != filter.phase) continue;
    }
    selected.push_back(&r);
  }
  switch (format) {
    case HistoryFormat::kTable: return RenderTable(selected);
    case HistoryFormat::kCsv: return RenderCsv(selected);
    case HistoryFormat::kJson: {
      std::string out;
      for (const Json* r : selected) {
        out += DumpJson(*r);
        out += '\n';
      }
      return out;
    }
  }
  return {};
}

}  // namespace drivewatch::aging
