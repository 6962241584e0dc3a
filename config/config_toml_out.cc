// SPDX-License-Identifier: Apache-2.0
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "config/checks.h"
#include "config/config.h"
#include "config/loader.h"
#include "config/schema.h"

namespace drivewatch::config::detail {

// "01:00-05:00".
std::string FormatWindow(const PhaseSchedule& s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%02d:%02d-%02d:%02d", s.window_start / 60,
                s.window_start % 60, s.window_end / 60, s.window_end % 60);
  return buf;
}

std::string Number(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return ec == std::errc() ? std::string(buf, end) : "0";
}

}  // namespace drivewatch::config::detail

namespace drivewatch::config {
namespace {

using detail::FormatWindow;
using detail::kWeekdayNames;
using detail::Number;
using detail::Quote;
using detail::SchemaKey;
using detail::SchemaSection;
using detail::Sections;
using std::chrono::milliseconds;

// One kind key of a phase's inline table, as its PhaseKey says; an unset
// optional is written by leaving it out.
template <class T>
void AppendPhaseKey(std::string& out, const PhaseKey& key, const T& value) {
  const std::string text = PhaseValueText(key, value);
  if (!text.empty()) out += ", " + std::string(key.name) + " = " + text;
}

void WriteAgingTargetsOf(std::string& out, const AgingConfig& aging) {
  out += "targets = [";
  for (std::size_t i = 0; i < aging.targets.size(); ++i) {
    const AgingTarget& t = aging.targets[i];
    out += i > 0 ? ",\n  " : "\n  ";
    out += "{ name = " + Quote(t.name);
    if (!t.block_device.empty()) {
      out += ", block_device = " + Quote(t.block_device);
      out += ", serial = " + Quote(t.serial);
      if (t.nsid != 0) out += ", namespace = " + std::to_string(t.nsid);
      out += ", destroy_data = ";
      out += t.destroy_data ? "true" : "false";
      out += ", allow_signatures = ";
      out += t.allow_signatures ? "true" : "false";
    } else {
      out += ", directory = " + Quote(t.directory);
      out += ", file_size = " + Quote(FormatSize(t.file_size));
      out += ", free_space_reserve = " + Number(t.min_free_ratio);
    }
    out += " }";
  }
  out += aging.targets.empty() ? "]\n" : ",\n]\n";
}

void WriteAgingPhasesOf(std::string& out, const AgingConfig& aging) {
  out += "phases = [";
  for (std::size_t i = 0; i < aging.phases.size(); ++i) {
    const PhaseConfig& p = aging.phases[i];
    out += i > 0 ? ",\n  " : "\n  ";
    out += "{ name = " + Quote(p.name) + ", kind = " + Quote(PhaseKindName(p.params)) +
           ", target = " + Quote(p.target);
    if (p.schedule.interval.count() > 0) {
      out += ", interval = " + Quote(FormatDuration(p.schedule.interval));
    }
    if (p.schedule.window_start >= 0) {
      out += ", window = " + Quote(FormatWindow(p.schedule)) + ", weekdays = [";
      bool first = true;
      for (unsigned d = 0; d < 7; ++d) {
        if ((p.schedule.weekdays & (1u << d)) == 0) continue;
        out += (first ? "" : ", ") + Quote(kWeekdayNames[d]);
        first = false;
      }
      out += "]";
    }
    out += ", max_duration = " + Quote(FormatDuration(p.max_duration));
    std::visit(
        [&](const auto& params) {
          std::decay_t<decltype(params)>::Keys(params, [&](const PhaseKey& key,
                                                           const auto& value) {
            AppendPhaseKey(out, key, value);
          });
        },
        p.params);
    out += " }";
  }
  out += aging.phases.empty() ? "]\n" : ",\n]\n";
}

void AppendList(std::string& out, std::string_view key,
                const std::vector<std::string>& list) {
  out += std::string(key) + " = [";
  for (size_t i = 0; i < list.size(); ++i) {
    if (i > 0) out += ", ";
    out += Quote(list[i]);
  }
  out += "]\n";
}

}  // namespace

namespace detail {

void WriteIncludeSerials(std::string& out, const Config& config) {
  AppendList(out, "include_serials", config.drives.include_serials);
}
void WriteExcludeSerials(std::string& out, const Config& config) {
  AppendList(out, "exclude_serials", config.drives.exclude_serials);
}
void WriteIncludeModels(std::string& out, const Config& config) {
  AppendList(out, "include_models", config.drives.include_models);
}
void WriteExcludeModels(std::string& out, const Config& config) {
  AppendList(out, "exclude_models", config.drives.exclude_models);
}

void WriteMeters(std::string& out, const Config& config) {
  out += "meters = [";
  for (size_t i = 0; i < config.power_meters.size(); ++i) {
    const PowerMeter& m = config.power_meters[i];
    out += i > 0 ? ",\n  " : "\n  ";
    out += "{ serial = " + Quote(m.serial);
    if (!m.hwmon.empty()) out += ", hwmon = " + Quote(m.hwmon);
    if (!m.command.empty()) {
      out += ", ";
      AppendList(out, "command", m.command);
      out.pop_back();  // AppendList ends the line
    }
    out += ", timeout = " + Quote(FormatDuration(m.timeout)) + " }";
  }
  out += config.power_meters.empty() ? "]\n" : ",\n]\n";
}

void WriteRates(std::string& out, const Config& config) {
  const ReadLatencySettings& rl = config.read_latency;
  out += "rates = [";
  for (size_t i = 0; i < rl.rates.size(); ++i) {
    out += (i > 0 ? ", " : "") + std::to_string(rl.rates[i]);
  }
  out += "]\n";
}

void WriteArrivals(std::string& out, const Config& config) {
  out += "arrivals = ";
  out += config.read_latency.arrivals == Arrivals::kFixed ? "\"fixed\"" : "\"poisson\"";
  out += "\n";
}

void WriteBlockSize(std::string& out, const Config& config) {
  out += "block_size = " + Quote(FormatSize(config.read_latency.block_size)) + "\n";
}

void WriteWindows(std::string& out, const Config& config) {
  const ReadLatencySettings& rl = config.read_latency;
  out += "windows = [";
  for (size_t i = 0; i < rl.windows.size(); ++i) {
    out += (i > 0 ? ", " : "") + Quote(FormatDuration(rl.windows[i]));
  }
  out += "]\n";
}

void WriteReadTargets(std::string& out, const Config& config) {
  const ReadLatencySettings& rl = config.read_latency;
  out += "targets = [";
  for (size_t i = 0; i < rl.targets.size(); ++i) {
    const ReadLatencyTarget& t = rl.targets[i];
    out += i > 0 ? ",\n  " : "\n  ";
    out += "{ name = " + Quote(t.name);
    if (!t.block_device.empty()) out += ", block_device = " + Quote(t.block_device);
    if (!t.directory.empty()) {
      out += ", directory = " + Quote(t.directory);
      out += ", file_size = " + Quote(FormatSize(t.file_size));
    }
    out += ", offset = " + Quote(FormatSize(t.offset));
    out += ", length = " + Quote(FormatSize(t.length)) + " }";
  }
  out += rl.targets.empty() ? "]\n" : ",\n]\n";
}

void WriteSelfTestDrives(std::string& out, const Config& config) {
  const SelfTestConfig& st = config.self_test;
  out += "drives = [";
  for (size_t i = 0; i < st.drives.size(); ++i) {
    const SelfTestDrive& d = st.drives[i];
    out += i > 0 ? ",\n  " : "\n  ";
    out += "{ serial = " + Quote(d.serial);
    if (d.short_test) out += ", short = " + Quote(FormatSchedule(*d.short_test));
    if (d.extended_test) {
      out += ", extended = " + Quote(FormatSchedule(*d.extended_test));
    }
    out += " }";
  }
  out += st.drives.empty() ? "]\n" : ",\n]\n";
}

void WriteAgingTargets(std::string& out, const Config& config) {
  WriteAgingTargetsOf(out, config.aging);
}
void WriteAgingPhases(std::string& out, const Config& config) {
  WriteAgingPhasesOf(out, config.aging);
}

void WriteKey(std::string& out, const SchemaKey& key, const Config& config) {
  if (key.write != nullptr) return key.write(out, config);
  // The fields take a Config& so the reader can fill them; here they are
  // only read.
  Config& c = const_cast<Config&>(config);
  out += std::string(key.name) + " = ";
  const SimpleField& f = key.field;
  if (const auto* b = std::get_if<Field<bool>>(&f)) {
    out += (*b)(c) ? "true" : "false";
  } else if (const auto* d = std::get_if<Field<milliseconds>>(&f)) {
    out += Quote(FormatDuration((*d)(c)));
  } else if (const auto* s = std::get_if<Field<std::string>>(&f)) {
    out += Quote((*s)(c));
  } else if (const auto* l = std::get_if<Field<LogLevel>>(&f)) {
    out += Quote(LogLevelName((*l)(c)));
  } else if (const auto* sc = std::get_if<Field<Schedule>>(&f)) {
    out += Quote(FormatSchedule((*sc)(c)));
  } else if (const auto* n = std::get_if<Field<double>>(&f)) {
    out += Number((*n)(c));
  }
  out += "\n";
}

}  // namespace detail

std::string ToToml(const Config& config) {
  std::string out;
  bool first = true;
  for (const SchemaSection& section : Sections()) {
    if (section.element) continue;
    out += first ? "[" : "\n[";
    out += std::string(section.path) + "]\n";
    first = false;
    for (const SchemaKey& key : section.keys) detail::WriteKey(out, key, config);
  }
  return out;
}

namespace {

// `doc` as comment lines: "# " before each line, "#" alone for an empty one.
void AppendComment(std::string& out, std::string_view doc) {
  if (doc.empty()) return;
  for (std::size_t start = 0;;) {
    const std::size_t end = doc.find('\n', start);
    const std::string_view line = doc.substr(start, end - start);
    out += line.empty() ? "#\n" : "# " + std::string(line) + "\n";
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
}

}  // namespace

std::string ExampleToml() {
  const Config defaults = Defaults();
  std::string out;
  AppendComment(out, detail::ExamplePreamble());
  for (const SchemaSection& section : Sections()) {
    if (section.element) continue;
    out += "\n[" + std::string(section.path) + "]\n";
    AppendComment(out, section.doc);
    for (const SchemaKey& key : section.keys) {
      AppendComment(out, key.doc);
      detail::WriteKey(out, key, defaults);
    }
  }
  return out;
}

std::string PhaseValueText(const PhaseKey& key, std::uint64_t value) {
  return key.type == PhaseKeyType::kSize ? Quote(FormatSize(value)) : std::to_string(value);
}
std::string PhaseValueText(const PhaseKey& key, std::uint32_t value) {
  return PhaseValueText(key, std::uint64_t{value});
}
std::string PhaseValueText(const PhaseKey&, double value) { return Number(value); }
std::string PhaseValueText(const PhaseKey&, bool value) { return value ? "true" : "false"; }
std::string PhaseValueText(const PhaseKey&, milliseconds value) {
  return Quote(FormatDuration(value));
}
std::string PhaseValueText(const PhaseKey&, const std::vector<milliseconds>& value) {
  std::string out = "[";
  for (std::size_t k = 0; k < value.size(); ++k) {
    out += (k > 0 ? ", " : "") + Quote(FormatDuration(value[k]));
  }
  return out + "]";
}
std::string PhaseValueText(const PhaseKey& key, const std::string& value) {
  // An optional text left empty is unset, and left out.
  return value.empty() && key.type == PhaseKeyType::kText ? std::string() : Quote(value);
}
std::string PhaseValueText(const PhaseKey&, const std::vector<PerfCell>& value) {
  if (value.empty()) return "[]";
  std::string out = "[";
  for (const PerfCell& cell : value) {
    std::string fields;
    PerfCell::Keys(cell, [&](const PhaseKey& key, const auto& field) {
      const std::string text = PhaseValueText(key, field);
      if (text.empty()) return;
      fields += (fields.empty() ? "" : ", ") + std::string(key.name) + " = " + text;
    });
    out += "\n    { " + fields + " },";
  }
  return out + "\n  ]";
}
std::string PhaseValueText(const PhaseKey&, const ReplaySpeed& value) {
  if (value.max) return Quote("max");
  return value.scale == 1 ? Quote("recorded") : Number(value.scale);
}

std::string PhaseKeyRange(const PhaseKey& key) {
  const bool bounded = key.max != kNoLimit;
  const auto ms = [](double v) { return FormatDuration(milliseconds{static_cast<std::int64_t>(v)}); };
  const auto bytes = [](double v) { return FormatSize(static_cast<std::uint64_t>(v)); };
  switch (key.type) {
    case PhaseKeyType::kSize: {
      std::string out = key.multiple > 1 ? "a multiple of " + FormatSize(key.multiple) : "";
      if (bounded) {
        out += (out.empty() ? "" : " ") + std::string("from ") + bytes(key.min) + " to " +
               bytes(key.max);
      } else if (key.min > 0) {
        out += (out.empty() ? "" : ", ") + std::string("at least ") + bytes(key.min);
      }
      return out.empty() ? "a size such as \"4KiB\"" : out;
    }
    case PhaseKeyType::kInteger:
    case PhaseKeyType::kNumber: {
      // Whole bounds in full ("1000000", not the "1e+06" of Number()).
      const auto text = [](double v) {
        return v == std::floor(v) && std::fabs(v) < 1e15
                   ? std::to_string(static_cast<std::int64_t>(v))
                   : Number(v);
      };
      return text(key.min) + (bounded ? " to " + text(key.max) : " or more");
    }
    case PhaseKeyType::kDuration:
      return ms(key.min) + (bounded ? " to " + ms(key.max) : " or more");
    case PhaseKeyType::kDurationList:
      return "1 to 100 durations, each " + ms(key.min) + (bounded ? " to " + ms(key.max) : " or more");
    case PhaseKeyType::kBool:
      return "true or false";
    case PhaseKeyType::kTables:
      return "an array of tables, [[aging.phases." + std::string(key.name) + "]]";
    case PhaseKeyType::kPath:
      return "an absolute path";
    case PhaseKeyType::kText:
      return "a non-empty string";
    case PhaseKeyType::kReplaySpeed:
      return std::string(key.expected);
    case PhaseKeyType::kName: {
      if (key.choices.empty()) return "letters, digits, _, - and . only";
      std::string one_of = "one of";
      for (std::string_view c : key.choices) {
        one_of += std::string(one_of.size() > 6 ? ", " : " ") + "\"" + std::string(c) + "\"";
      }
      return one_of;
    }
  }
  return "";
}

}  // namespace drivewatch::config
