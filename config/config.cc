// SPDX-License-Identifier: Apache-2.0
#include "config/config.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <span>
#include <sstream>
#include <system_error>
#include <utility>
#include <variant>
#include <vector>

#include "config/checks.h"

namespace drivewatch::config {
namespace {

using detail::Quote;
using std::chrono::milliseconds;

// The schema. Adding a key means adding it here, reading it in Loader, and
// writing it in ToToml() and drivewatch.toml (the tests hold those three to
// each other).
constexpr std::array<std::string_view, 7> kRootKeys{
    "web", "log", "state", "discovery", "drives", "probes", "aging"};
constexpr std::array<std::string_view, 1> kWebKeys{"listen_address"};
constexpr std::array<std::string_view, 1> kLogKeys{"level"};
constexpr std::array<std::string_view, 1> kStateKeys{"directory"};
constexpr std::array<std::string_view, 2> kDiscoveryKeys{"interval",
                                                         "grace_period"};
constexpr std::array<std::string_view, 4> kDrivesKeys{
    "include_serials", "exclude_serials", "include_models", "exclude_models"};
constexpr std::array<std::string_view, 7> kProbeNames{
    "health",    "thermal",   "power",
    "read_latency", "self_test", "error_log",
    "persistent_event_log"};
constexpr std::array<std::string_view, 6> kSelfTestKeys{
    "enabled", "interval", "short", "extended", "abort_on_shutdown", "drives"};
constexpr std::array<std::string_view, 3> kSelfTestDriveKeys{"serial", "short",
                                                             "extended"};
constexpr std::array<std::string_view, 10> kReadLatencyKeys{
    "enabled",    "namespaces", "rates",   "rate_period", "idle_period",
    "arrivals",   "block_size", "timeout", "windows",     "targets"};
constexpr std::array<std::string_view, 6> kReadTargetKeys{
    "name", "block_device", "directory", "file_size", "offset", "length"};
constexpr std::array<std::string_view, 2> kProbeKeys{"enabled", "interval"};
constexpr std::array<std::string_view, 3> kThermalKeys{"enabled", "interval",
                                                       "async_events"};
constexpr std::array<std::string_view, 3> kPowerKeys{"enabled", "interval",
                                                     "meters"};
constexpr std::array<std::string_view, 4> kMeterKeys{"serial", "hwmon",
                                                     "command", "timeout"};
constexpr std::array<std::string_view, 3> kAgingKeys{"temperature_margin",
                                                     "targets", "phases"};
constexpr std::array<std::string_view, 9> kAgingTargetKeys{
    "name",          "block_device",     "directory",
    "serial",        "namespace",        "destroy_data",
    "allow_signatures", "file_size",     "free_space_reserve"};
// The keys every phase kind has; each kind's own are in its struct
// (config/phase_kinds.h).
constexpr std::array<std::string_view, 7> kPhaseCommonKeys{
    "name", "kind", "target", "interval", "window", "weekdays", "max_duration"};
constexpr std::array<std::string_view, 7> kWeekdayNames{
    "sun", "mon", "tue", "wed", "thu", "fri", "sat"};

// Every [[aging.phases]] key: the common ones, then the kinds'.
std::span<const std::string_view> PhaseKeys() {
  static const std::vector<std::string_view> keys = [] {
    std::vector<std::string_view> out(kPhaseCommonKeys.begin(), kPhaseCommonKeys.end());
    for (const PhaseKey& key : PhaseKindKeys()) out.push_back(key.name);
    return out;
  }();
  return keys;
}

// Every leaf and every table below the top, so that a key written in the
// wrong table ("interval" at the top) can point at where it belongs.
constexpr std::array<std::string_view, 40> kLeafPaths{
    "aging.temperature_margin", "aging.targets", "aging.phases",
    "web.listen_address",     "log.level",
    "state.directory",        "discovery.interval",
    "discovery.grace_period", "drives.include_serials",
    "drives.exclude_serials", "drives.include_models",
    "drives.exclude_models",  "probes.health.enabled",
    "probes.health.interval", "probes.thermal.enabled",
    "probes.thermal.interval", "probes.thermal.async_events",
    "probes.power.enabled",   "probes.power.interval",
    "probes.power.meters",
    "probes.read_latency.enabled", "probes.read_latency.namespaces",
    "probes.read_latency.rates", "probes.read_latency.rate_period",
    "probes.read_latency.idle_period", "probes.read_latency.arrivals", "probes.read_latency.block_size",
    "probes.read_latency.timeout", "probes.read_latency.windows",
    "probes.read_latency.targets", "probes.self_test.enabled",
    "probes.self_test.interval", "probes.self_test.short",
    "probes.self_test.extended", "probes.self_test.abort_on_shutdown",
    "probes.self_test.drives", "probes.error_log.enabled",
    "probes.error_log.interval", "probes.persistent_event_log.enabled",
    "probes.persistent_event_log.interval"};
constexpr std::array<std::string_view, 8> kTablePaths{
    "aging", "probes.health",    "probes.thermal",   "probes.power",
    "probes.read_latency", "probes.self_test", "probes.error_log",
    "probes.persistent_event_log"};

struct Range {
  milliseconds min;
  milliseconds max;
};
constexpr Range kDiscoveryIntervalRange{milliseconds{1'000},
                                        std::chrono::hours{1}};
constexpr Range kGracePeriodRange{milliseconds{0}, std::chrono::days{30}};
constexpr Range kProbeIntervalRange{milliseconds{1'000},
                                    std::chrono::hours{24}};
// At most the self-test catch-up window (probes/self_test.h), or a
// scheduled test could fall between two runs and never start.
constexpr Range kSelfTestIntervalRange{milliseconds{1'000},
                                       std::chrono::hours{1}};
constexpr Range kMeterTimeoutRange{milliseconds{100}, milliseconds{30'000}};
constexpr Range kRatePeriodRange{milliseconds{1'000}, std::chrono::hours{24}};
constexpr Range kIdlePeriodRange{milliseconds{0}, std::chrono::hours{24}};
constexpr Range kReadTimeoutRange{milliseconds{10}, milliseconds{60'000}};
constexpr Range kWindowRange{milliseconds{60'000}, std::chrono::hours{24}};
constexpr Range kPhaseIntervalRange{milliseconds{60'000}, std::chrono::days{366}};
constexpr Range kMaxDurationRange{milliseconds{1'000}, std::chrono::days{30}};
constexpr std::uint32_t kMaxRate = 10'000;

constexpr std::string_view kDurationExample =
    "a duration string such as \"30s\"";

// A key as TOML would write it, so the dotted path reads back unambiguously.
std::string KeyText(std::string_view key) {
  const bool bare =
      !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               (c >= '0' && c <= '9') || c == '_' || c == '-';
      });
  return bare ? std::string(key) : Quote(key);
}

std::string Join(std::string_view path, std::string_view key) {
  return path.empty() ? KeyText(key) : std::string(path) + "." + KeyText(key);
}

// "string \"yes\"", "integer 30", "table": what a wrong-typed value was.
std::string Describe(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return "string " + Quote(node.as_string()->get());
    case toml::node_type::integer:
      return "integer " + std::to_string(node.as_integer()->get());
    case toml::node_type::floating_point: {
      char buf[32];
      auto [end, ec] = std::to_chars(buf, buf + sizeof(buf),
                                     node.as_floating_point()->get());
      return "float " +
             (ec == std::errc() ? std::string(buf, end) : std::string("?"));
    }
    case toml::node_type::boolean:
      return node.as_boolean()->get() ? "boolean true" : "boolean false";
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time: {
      std::ostringstream os;
      node.visit([&](const auto& v) { os << v; });
      const char* kind = node.is_date()   ? "date "
                         : node.is_time() ? "time "
                                          : "date-time ";
      return kind + os.str();
    }
    case toml::node_type::array:
      return "array";
    case toml::node_type::table:
      return "table";
    case toml::node_type::none:
      break;
  }
  return "value";
}

std::string OneOf(std::span<const std::string_view> names) {
  std::string out = names.size() == 1 ? "" : "one of: ";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ", ";
    out += Quote(names[i]);
  }
  return out;
}

std::string At(const toml::source_position& where) {
  return "line " + std::to_string(where.line) + ", column " +
         std::to_string(where.column);
}

std::string Trim(std::string_view s);

struct Located {
  std::string value;
  toml::source_position where;
};

// Walks the parsed document once and records every problem it meets; it
// never stops at the first, so one check-config run shows them all.
class Loader {
 public:
  explicit Loader(std::string file) : file_(std::move(file)) {}

  LoadResult Load(const toml::table& root) {
    Config config = Defaults();
    CheckKeys(root, "", kRootKeys, "");
    if (const toml::table* web = Table(root, "web", "")) {
      CheckKeys(*web, "web", kWebKeys, "");
      ReadString(*web, "listen_address", "web", detail::ListenAddressProblem,
                 config.listen_address);
    }
    if (const toml::table* log = Table(root, "log", "")) {
      CheckKeys(*log, "log", kLogKeys, "");
      ReadLogLevel(*log, "level", "log", config.log_level);
    }
    if (const toml::table* state = Table(root, "state", "")) {
      CheckKeys(*state, "state", kStateKeys, "");
      ReadString(*state, "directory", "state", detail::StateDirectoryProblem,
                 config.state_directory);
    }
    if (const toml::table* discovery = Table(root, "discovery", "")) {
      CheckKeys(*discovery, "discovery", kDiscoveryKeys, "");
      ReadDuration(*discovery, "interval", "discovery", kDiscoveryIntervalRange,
                   config.discovery_interval);
      ReadDuration(*discovery, "grace_period", "discovery", kGracePeriodRange,
                   config.drive_grace_period);
    }
    if (const toml::table* drives = Table(root, "drives", "")) {
      CheckKeys(*drives, "drives", kDrivesKeys, "");
      ReadSelection(*drives, "serials", config.drives.include_serials,
                    config.drives.exclude_serials);
      ReadSelection(*drives, "models", config.drives.include_models,
                    config.drives.exclude_models);
    }
    if (const toml::table* probes = Table(root, "probes", "")) {
      CheckKeys(*probes, "probes", kProbeNames, "probe");
      ReadProbe(*probes, "health", kProbeKeys, config.health);
      if (const toml::table* thermal =
              ReadProbe(*probes, "thermal", kThermalKeys, config.thermal)) {
        ReadBool(*thermal, "async_events", "probes.thermal",
                 config.async_events);
      }
      if (const toml::table* power =
              ReadProbe(*probes, "power", kPowerKeys, config.power)) {
        ReadMeters(*power, config.power_meters);
      }
      ReadReadLatency(*probes, config.read_latency);
      ReadSelfTest(*probes, config.self_test);
      ReadProbe(*probes, "error_log", kProbeKeys, config.error_log);
      ReadProbe(*probes, "persistent_event_log", kProbeKeys,
                config.persistent_event_log);
    }
    if (const toml::table* aging = Table(root, "aging", "")) {
      ReadAging(*aging, config.aging);
    }

    LoadResult result;
    if (errors_.empty()) {
      result.config = std::move(config);
    } else {
      std::stable_sort(errors_.begin(), errors_.end(),
                       [](const ConfigError& a, const ConfigError& b) {
                         return std::pair(a.line, a.column) <
                                std::pair(b.line, b.column);
                       });
      result.errors = std::move(errors_);
    }
    return result;
  }

 private:
  void Report(const toml::source_position& where, std::string key,
              std::string problem) {
    errors_.push_back(ConfigError{file_, static_cast<int>(where.line),
                                  static_cast<int>(where.column),
                                  std::move(key), std::move(problem)});
  }

  void WrongType(const toml::node& node, std::string key,
                 std::string_view expected) {
    Report(node.source().begin, std::move(key),
           "wrong type: " + Describe(node) + " (expected " +
               std::string(expected) + ")");
  }

  // A name or study that is a string, but not one drivewatch can use in a
  // file name and a label: says which character is wrong.
  void BadName(const toml::node& node, std::string key) {
    const std::string& text = node.as_string()->get();
    std::string problem;
    if (text.empty()) {
      problem = "empty string";
    } else {
      const auto bad = std::find_if(text.begin(), text.end(), [](char c) {
        return !(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
                 c == '.');
      });
      problem = Quote(text) + " has a character a name cannot have: " +
                Quote(std::string_view(&*bad, 1));
    }
    Report(node.source().begin, std::move(key),
           problem + " (expected a non-empty string of letters, digits, _, - and .)");
  }

  // An array whose elements may be fine, but not their number.
  void BadCount(const toml::node& node, std::string key, std::string_view expected) {
    const std::size_t n = node.as_array()->size();
    Report(node.source().begin, std::move(key),
           (n == 0 ? std::string("empty array") : "array of " + std::to_string(n)) +
               " (expected " + std::string(expected) + ")");
  }

  // `noun` names what the keys of this table are ("probe"); empty means
  // "table" or "key" by the value's type.
  void CheckKeys(const toml::table& table, std::string_view path,
                 std::span<const std::string_view> known,
                 std::string_view noun) {
    for (auto&& [key, node] : table) {
      if (std::find(known.begin(), known.end(), key.str()) != known.end())
        continue;
      std::string what = "unknown ";
      what += noun.empty() ? (node.is_table() ? "table" : "key") : noun;
      if (auto near = detail::ClosestMatch(key.str(), known)) {
        what += " (did you mean " + Quote(*near) + "?)";
      } else if (std::string elsewhere = Elsewhere(key.str(), node.is_table());
                 !elsewhere.empty()) {
        what += " (did you mean " + elsewhere + "?)";
      } else {
        what += " (expected " + OneOf(known) + ")";
      }
      Report(key.source().begin, Join(path, key.str()), std::move(what));
    }
  }

  // '"a.b" or "c.b"': the places a key or table of this name belongs, or
  // empty when there is none.
  static std::string Elsewhere(std::string_view name, bool is_table) {
    std::string out;
    const std::span<const std::string_view> paths =
        is_table ? std::span<const std::string_view>(kTablePaths)
                 : std::span<const std::string_view>(kLeafPaths);
    for (std::string_view path : paths) {
      if (path.substr(path.rfind('.') + 1) != name) continue;
      if (!out.empty()) out += " or ";
      out += Quote(path);
    }
    return out;
  }

  // The sub-table `name`, or null when it is absent or not a table (the
  // latter reported).
  const toml::table* Table(const toml::table& parent, std::string_view name,
                           std::string_view path) {
    const toml::node* node = parent.get(name);
    if (node == nullptr) return nullptr;
    if (const toml::table* table = node->as_table()) return table;
    const std::string key = Join(path, name);
    WrongType(*node, key, "a table, written [" + key + "]");
    return nullptr;
  }

  void ReadString(const toml::table& table, std::string_view name,
                  std::string_view path,
                  std::optional<std::string> (*check)(std::string_view),
                  std::string& out) {
    const toml::node* node = table.get(name);
    if (node == nullptr) return;
    const auto* value = node->as_string();
    if (value == nullptr) return WrongType(*node, Join(path, name), "a string");
    if (auto problem = check(value->get())) {
      return Report(node->source().begin, Join(path, name),
                    std::move(*problem));
    }
    out = value->get();
  }

  void ReadLogLevel(const toml::table& table, std::string_view name,
                    std::string_view path, LogLevel& out) {
    const toml::node* node = table.get(name);
    if (node == nullptr) return;
    constexpr std::string_view kExpected =
        "\"debug\", \"info\", \"warn\" or \"error\"";
    const auto* value = node->as_string();
    if (value == nullptr) {
      return WrongType(*node, Join(path, name),
                       "a string: " + std::string(kExpected));
    }
    const std::optional<LogLevel> level = ParseLogLevel(value->get());
    if (!level) {
      return Report(node->source().begin, Join(path, name),
                    Quote(value->get()) + " is not a log level (expected " +
                        std::string(kExpected) + ")");
    }
    out = *level;
  }

  void ReadBool(const toml::table& table, std::string_view name,
                std::string_view path, bool& out) {
    const toml::node* node = table.get(name);
    if (node == nullptr) return;
    const auto* value = node->as_boolean();
    if (value == nullptr)
      return WrongType(*node, Join(path, name), "a boolean: true or false");
    out = value->get();
  }

  void ReadDuration(const toml::table& table, std::string_view name,
                    std::string_view path, Range range, milliseconds& out) {
    const toml::node* node = table.get(name);
    if (node == nullptr) return;
    const std::string key = Join(path, name);
    const auto* value = node->as_string();
    // A bare number is the likeliest mistake, and its unit is anyone's
    // guess, so it is refused rather than read as seconds.
    if (value == nullptr) return WrongType(*node, key, kDurationExample);
    std::string problem;
    const std::optional<milliseconds> d = ParseDuration(value->get(), &problem);
    if (!d) return Report(node->source().begin, key, std::move(problem));
    if (*d < range.min || *d > range.max) {
      return Report(node->source().begin, key,
                    Quote(value->get()) + " is out of range (expected " +
                        FormatDuration(range.min) + " to " +
                        FormatDuration(range.max) + ")");
    }
    out = *d;
  }

  // Reads one list of globs; reports bad and repeated entries at their own
  // position and returns the good ones with where they were.
  std::vector<Located> ReadPatterns(const toml::table& table,
                                    std::string_view name,
                                    std::string_view path) {
    std::vector<Located> patterns;
    const toml::node* node = table.get(name);
    if (node == nullptr) return patterns;
    const std::string key = Join(path, name);
    const toml::array* array = node->as_array();
    if (array == nullptr) {
      WrongType(*node, key, "an array of glob patterns, such as [\"S5GX*\"]");
      return patterns;
    }
    for (const toml::node& element : *array) {
      const auto* value = element.as_string();
      if (value == nullptr) {
        WrongType(element, key, "a glob pattern string");
        continue;
      }
      if (auto problem = detail::GlobProblem(value->get())) {
        Report(element.source().begin, key, std::move(*problem));
        continue;
      }
      auto first = std::find_if(
          patterns.begin(), patterns.end(),
          [&](const Located& p) { return p.value == value->get(); });
      if (first != patterns.end()) {
        Report(element.source().begin, key,
               Quote(value->get()) + " is listed twice, first at " +
                   At(first->where) + " (expected each pattern once)");
        continue;
      }
      patterns.push_back(Located{value->get(), element.source().begin});
    }
    return patterns;
  }

  // include_<what> and exclude_<what>: each list on its own, then a pattern
  // in both, which would leave the include meaningless.
  void ReadSelection(const toml::table& drives, std::string_view what,
                     std::vector<std::string>& include_out,
                     std::vector<std::string>& exclude_out) {
    const std::string include_name = "include_" + std::string(what);
    const std::string exclude_name = "exclude_" + std::string(what);
    const std::vector<Located> include =
        ReadPatterns(drives, include_name, "drives");
    const std::vector<Located> exclude =
        ReadPatterns(drives, exclude_name, "drives");
    for (const Located& ex : exclude) {
      for (const Located& in : include) {
        if (in.value != ex.value) continue;
        // Report the later one: the earlier line reads fine on its own.
        const bool ex_later = std::pair(ex.where.line, ex.where.column) >
                              std::pair(in.where.line, in.where.column);
        const Located& later = ex_later ? ex : in;
        const Located& earlier = ex_later ? in : ex;
        Report(later.where,
               "drives." + (ex_later ? exclude_name : include_name),
               Quote(later.value) + " is also in drives." +
                   (ex_later ? include_name : exclude_name) + " at " +
                   At(earlier.where) + " (expected a pattern in " +
                   include_name + " or " + exclude_name + ", not both)");
      }
    }
    include_out.clear();
    for (const Located& p : include) include_out.push_back(p.value);
    exclude_out.clear();
    for (const Located& p : exclude) exclude_out.push_back(p.value);
  }

  // Reads a probe's table; returns it for the probe's own keys.
  const toml::table* ReadProbe(const toml::table& probes, std::string_view name,
                               std::span<const std::string_view> keys,
                               ProbeSettings& out) {
    const std::string path = "probes." + std::string(name);
    const toml::table* probe = Table(probes, name, "probes");
    if (probe == nullptr) return nullptr;
    CheckKeys(*probe, path, keys, "");
    ReadBool(*probe, "enabled", path, out.enabled);
    ReadDuration(*probe, "interval", path, kProbeIntervalRange, out.interval);
    return probe;
  }

  // A part of a device or file: the optional `offset` and `length` sizes,
  // each a multiple of `unit`; `not_multiple` follows the quoted size in the
  // error otherwise. Absent keys leave their field as it is.
  void ReadRegion(const toml::table& t, std::string_view path, std::uint64_t unit,
                  const std::string& not_multiple, std::uint64_t& offset,
                  std::uint64_t& length) {
    for (auto [field, value] : {std::pair<const char*, std::uint64_t*>{"offset", &offset},
                                {"length", &length}}) {
      const toml::node* n = t.get(field);
      if (n == nullptr) continue;
      const std::string key = std::string(path) + "." + field;
      if (auto size = Size(*n, key)) {
        if (*size % unit != 0) {
          Report(n->source().begin, key, Quote(FormatSize(*size)) + not_multiple);
        } else {
          *value = *size;
        }
      }
    }
  }

  // The `serial` of one table in an array that has one table per drive:
  // present, a non-empty string, and not in `seen` yet (a duplicate names
  // where the first one is). Returns the serial as written, or "" after
  // reporting why there is none.
  std::string ReadUniqueSerial(const toml::table& t, std::string_view path,
                               std::string_view duplicate_has,
                               std::string_view expected, std::vector<Located>& seen) {
    const toml::node* serial = t.get("serial");
    if (serial == nullptr) {
      Report(t.source().begin, std::string(path),
             "missing serial (expected the drive's serial number, "
             "e.g. serial = \"S4EWNX0R123456\")");
      return "";
    }
    const auto* s = serial->as_string();
    if (s == nullptr) {
      WrongType(*serial, std::string(path) + ".serial", "a non-empty serial number string");
      return "";
    }
    if (s->get().empty()) {
      Report(serial->source().begin, std::string(path) + ".serial",
             "empty serial (expected the drive's serial number, e.g. serial = \"S4EWNX0R123456\")");
      return "";
    }
    auto first = std::find_if(seen.begin(), seen.end(),
                              [&](const Located& l) { return l.value == s->get(); });
    if (first != seen.end()) {
      Report(serial->source().begin, std::string(path) + ".serial",
             Quote(s->get()) + " already " + std::string(duplicate_has) + ", at " +
                 At(first->where) + " (expected " + std::string(expected) + ")");
    } else {
      seen.push_back(Located{s->get(), serial->source().begin});
    }
    return s->get();
  }

  // probes.power.meters: an array of tables, one per drive serial.
  void ReadMeters(const toml::table& power, std::vector<PowerMeter>& out) {
    constexpr std::string_view kPath = "probes.power.meters";
    const toml::array* array = TableArray(power, "meters", "probes.power");
    if (array == nullptr) return;
    std::vector<Located> serials;
    std::vector<PowerMeter> meters;
    for (const toml::node& element : *array) {
      const toml::table* t = element.as_table();
      if (t == nullptr) {
        WrongType(element, std::string(kPath),
                  "a table with serial and hwmon or command");
        continue;
      }
      const std::size_t errors_before = errors_.size();
      CheckKeys(*t, kPath, kMeterKeys, "");
      PowerMeter meter;
      meter.serial = ReadUniqueSerial(*t, kPath, "has a meter", "one meter per drive", serials);
      const toml::node* hwmon = t->get("hwmon");
      const toml::node* command = t->get("command");
      if ((hwmon == nullptr) == (command == nullptr)) {
        Report(t->source().begin, std::string(kPath),
               std::string(hwmon == nullptr ? "neither hwmon nor command is "
                                              "set"
                                            : "both hwmon and command are set") +
                   " (expected exactly one: hwmon = a power*_input file, or "
                   "command = [\"/path/to/program\", ...])");
      }
      if (hwmon != nullptr) {
        ReadString(*t, "hwmon", kPath, detail::AbsolutePathProblem,
                   meter.hwmon);
      }
      if (command != nullptr) ReadCommand(*command, meter.command);
      ReadDuration(*t, "timeout", kPath, kMeterTimeoutRange, meter.timeout);
      if (errors_.size() == errors_before) meters.push_back(std::move(meter));
    }
    out = std::move(meters);
  }

  // A schedule string; reported at its own position.
  void ReadSchedule(const toml::table& table, std::string_view name,
                    std::string_view path, Schedule& out) {
    const toml::node* node = table.get(name);
    if (node == nullptr) return;
    const std::string key = Join(path, name);
    const auto* value = node->as_string();
    if (value == nullptr) {
      return WrongType(*node, key,
                       "a schedule string such as \"daily 02:00\" or "
                       "\"weekly sun 03:00\"");
    }
    std::string problem;
    const std::optional<Schedule> schedule =
        ParseSchedule(value->get(), &problem);
    if (!schedule) return Report(node->source().begin, key, std::move(problem));
    out = *schedule;
  }

  // [probes.self_test] with its per-drive [[probes.self_test.drives]].
  void ReadSelfTest(const toml::table& probes, SelfTestConfig& out) {
    constexpr std::string_view kPath = "probes.self_test";
    const toml::table* t = Table(probes, "self_test", "probes");
    if (t == nullptr) return;
    CheckKeys(*t, kPath, kSelfTestKeys, "");
    ReadBool(*t, "enabled", kPath, out.enabled);
    ReadDuration(*t, "interval", kPath, kSelfTestIntervalRange, out.interval);
    ReadSchedule(*t, "short", kPath, out.short_test);
    ReadSchedule(*t, "extended", kPath, out.extended_test);
    ReadBool(*t, "abort_on_shutdown", kPath, out.abort_on_shutdown);
    constexpr std::string_view kDrivesPath = "probes.self_test.drives";
    const toml::array* array = TableArray(*t, "drives", "probes.self_test");
    if (array == nullptr) return;
    std::vector<Located> serials;
    std::vector<SelfTestDrive> drives;
    for (const toml::node& element : *array) {
      const toml::table* d = element.as_table();
      if (d == nullptr) {
        WrongType(element, std::string(kDrivesPath),
                  "a table with serial and short and/or extended");
        continue;
      }
      const std::size_t errors_before = errors_.size();
      CheckKeys(*d, kDrivesPath, kSelfTestDriveKeys, "");
      SelfTestDrive drive;
      drive.serial = ReadUniqueSerial(*d, kDrivesPath, "has schedules", "one entry per drive",
                                      serials);
      if (d->get("short") != nullptr) {
        Schedule s;
        ReadSchedule(*d, "short", kDrivesPath, s);
        drive.short_test = s;
      }
      if (d->get("extended") != nullptr) {
        Schedule s;
        ReadSchedule(*d, "extended", kDrivesPath, s);
        drive.extended_test = s;
      }
      if (!drive.short_test && !drive.extended_test &&
          errors_.size() == errors_before) {
        Report(d->source().begin, std::string(kDrivesPath),
               "neither short nor extended is set (expected at least one; "
               "\"\" means never)");
      }
      if (errors_.size() == errors_before) drives.push_back(std::move(drive));
    }
    out.drives = std::move(drives);
  }

  // [probes.read_latency]. Reads the block size before the targets, whose
  // offsets must be multiples of it.
  void ReadReadLatency(const toml::table& probes, ReadLatencySettings& out) {
    constexpr std::string_view kPath = "probes.read_latency";
    const toml::table* t = Table(probes, "read_latency", "probes");
    if (t == nullptr) return;
    CheckKeys(*t, kPath, kReadLatencyKeys, "");
    ReadBool(*t, "enabled", kPath, out.enabled);
    ReadBool(*t, "namespaces", kPath, out.namespaces);
    ReadRates(*t, out.rates);
    ReadDuration(*t, "rate_period", kPath, kRatePeriodRange, out.rate_period);
    ReadDuration(*t, "idle_period", kPath, kIdlePeriodRange, out.idle_period);
    if (const toml::node* node = t->get("arrivals")) {
      const auto* v = node->as_string();
      if (v == nullptr) {
        WrongType(*node, "probes.read_latency.arrivals",
                  "a string: \"fixed\" or \"poisson\"");
      } else if (v->get() == "fixed" || v->get() == "poisson") {
        out.arrivals = v->get() == "fixed" ? Arrivals::kFixed : Arrivals::kPoisson;
      } else {
        Report(node->source().begin, "probes.read_latency.arrivals",
               Quote(v->get()) + " is not an arrival process (expected "
               "\"fixed\" or \"poisson\")");
      }
    }
    if (const toml::node* node = t->get("block_size")) {
      if (auto size = Size(*node, "probes.read_latency.block_size")) {
        if (*size < 512 || *size > (1u << 20) || (*size & (*size - 1)) != 0) {
          Report(node->source().begin, "probes.read_latency.block_size",
                 Quote(FormatSize(*size)) + " is not a usable block size "
                 "(expected a power of two from 512B to 1MiB)");
        } else {
          out.block_size = static_cast<std::uint32_t>(*size);
        }
      }
    }
    ReadDuration(*t, "timeout", kPath, kReadTimeoutRange, out.timeout);
    ReadWindows(*t, out.windows);
    ReadReadTargets(*t, out.block_size, out.targets);
  }

  std::optional<std::uint64_t> Size(const toml::node& node, std::string key) {
    const auto* v = node.as_string();
    if (v == nullptr) {
      WrongType(node, std::move(key), "a size string such as \"4KiB\"");
      return std::nullopt;
    }
    std::string problem;
    auto size = ParseSize(v->get(), &problem);
    if (!size) Report(node.source().begin, std::move(key), std::move(problem));
    return size;
  }

  void ReadRates(const toml::table& t, std::vector<std::uint32_t>& out) {
    const std::string key = "probes.read_latency.rates";
    const toml::node* node = t.get("rates");
    if (node == nullptr) return;
    const toml::array* array = node->as_array();
    constexpr std::string_view kExpected =
        "a non-empty array of whole IOPS from 1 to 10000, such as [10, 100]";
    if (array == nullptr) return WrongType(*node, key, kExpected);
    if (array->empty()) return BadCount(*node, key, kExpected);
    std::vector<std::uint32_t> rates;
    for (const toml::node& element : *array) {
      const auto* v = element.as_integer();
      if (v == nullptr) return WrongType(element, key, kExpected);
      if (v->get() < 1 || v->get() > kMaxRate) {
        return Report(element.source().begin, key,
                      std::to_string(v->get()) +
                          " IOPS is out of range (expected 1 to 10000)");
      }
      const auto rate = static_cast<std::uint32_t>(v->get());
      if (std::find(rates.begin(), rates.end(), rate) != rates.end()) {
        return Report(element.source().begin, key,
                      std::to_string(rate) +
                          " is listed twice (expected each rate once)");
      }
      rates.push_back(rate);
    }
    out = std::move(rates);
  }

  void ReadWindows(const toml::table& t, std::vector<milliseconds>& out) {
    const std::string key = "probes.read_latency.windows";
    const toml::node* node = t.get("windows");
    if (node == nullptr) return;
    const toml::array* array = node->as_array();
    constexpr std::string_view kExpected =
        "an array of 1 to 4 durations from 1m to 1d, such as [\"15m\", \"1h\"]";
    if (array == nullptr) return WrongType(*node, key, kExpected);
    if (array->empty() || array->size() > 4) return BadCount(*node, key, kExpected);
    std::vector<milliseconds> windows;
    for (const toml::node& element : *array) {
      const auto* v = element.as_string();
      if (v == nullptr) return WrongType(element, key, kExpected);
      std::string problem;
      const auto d = ParseDuration(v->get(), &problem);
      if (!d) return Report(element.source().begin, key, std::move(problem));
      if (*d < kWindowRange.min || *d > kWindowRange.max) {
        return Report(element.source().begin, key,
                      Quote(v->get()) + " is out of range (expected 1m to 1d)");
      }
      if (std::find(windows.begin(), windows.end(), *d) != windows.end()) {
        return Report(element.source().begin, key,
                      Quote(v->get()) + " is listed twice (expected each "
                      "window once)");
      }
      windows.push_back(*d);
    }
    out = std::move(windows);
  }

  void ReadReadTargets(const toml::table& t, std::uint32_t block_size,
                       std::vector<ReadLatencyTarget>& out) {
    constexpr std::string_view kPath = "probes.read_latency.targets";
    const toml::array* array = TableArray(t, "targets", "probes.read_latency");
    if (array == nullptr) return;
    std::vector<Located> names;
    std::vector<ReadLatencyTarget> targets;
    for (const toml::node& element : *array) {
      const toml::table* e = element.as_table();
      if (e == nullptr) {
        WrongType(element, std::string(kPath),
                  "a table with name and block_device or directory");
        continue;
      }
      const std::size_t errors_before = errors_.size();
      CheckKeys(*e, kPath, kReadTargetKeys, "");
      ReadLatencyTarget target;
      target.name = ReadName(*e, kPath, "target", names);
      const auto [device, directory] =
          ReadDeviceOrDirectory(*e, kPath, target.block_device, target.directory);
      if (const toml::node* fs = e->get("file_size")) {
        if (device != nullptr) {
          Report(fs->source().begin, std::string(kPath) + ".file_size",
                 "only a directory target has a test file (expected no "
                 "file_size with block_device)");
        } else if (auto size = Size(*fs, std::string(kPath) + ".file_size")) {
          if (*size < (1u << 20) || *size % block_size != 0) {
            Report(fs->source().begin, std::string(kPath) + ".file_size",
                   Quote(FormatSize(*size)) + " is not a usable test file "
                   "size (expected at least 1MiB, a multiple of block_size)");
          } else {
            target.file_size = *size;
          }
        }
      }
      ReadRegion(*e, kPath, block_size,
                 " is not a multiple of block_size " + Quote(FormatSize(block_size)),
                 target.offset, target.length);
      if (errors_.size() == errors_before) targets.push_back(std::move(target));
    }
    out = std::move(targets);
  }

  // [aging] with [[aging.targets]] and [[aging.phases]]. Phases are read
  // after the targets so a phase can be checked against the target it
  // names.
  void ReadAging(const toml::table& t, AgingConfig& out) {
    CheckKeys(t, "aging", kAgingKeys, "");
    ReadNumber(t, "temperature_margin", "aging", 0, 50,
               "a number of kelvins from 0 to 50", out.temperature_margin);
    ReadAgingTargets(t, out.targets);
    ReadPhases(t, out.phases);
  }

  // An array of tables at `key`, or null (reported when it is not one).
  const toml::array* TableArray(const toml::table& t, std::string_view name,
                                std::string_view path) {
    const toml::node* node = t.get(name);
    if (node == nullptr) return nullptr;
    const toml::array* array = node->as_array();
    const std::string key = Join(path, name);
    if (array == nullptr) {
      WrongType(*node, key, "an array of tables, written [[" + key + "]]");
    }
    return array;
  }

  // The `name` of one array element: letters, digits, _, - and ., unique
  // among `seen`. Empty when missing or bad (reported).
  std::string ReadName(const toml::table& e, std::string_view path,
                       std::string_view noun, std::vector<Located>& seen) {
    const toml::node* name = e.get("name");
    const std::string key = std::string(path) + ".name";
    if (name == nullptr) {
      Report(e.source().begin, std::string(path),
             "missing name (expected the " + std::string(noun) +
                 "'s name, e.g. name = \"scratch\")");
      return "";
    }
    const auto* v = name->as_string();
    if (v == nullptr) {
      WrongType(*name, key, "a non-empty string of letters, digits, _, - and .");
      return "";
    }
    if (v->get().empty() ||
        !std::all_of(v->get().begin(), v->get().end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                 c == '-' || c == '.';
        })) {
      BadName(*name, key);
      return "";
    }
    auto first = std::find_if(seen.begin(), seen.end(), [&](const Located& l) {
      return l.value == v->get();
    });
    if (first != seen.end()) {
      Report(name->source().begin, key,
             Quote(v->get()) + " is already a " + std::string(noun) + ", at " +
                 At(first->where) + " (expected unique names)");
      return "";
    }
    seen.push_back(Located{v->get(), name->source().begin});
    return v->get();
  }

  // A target's block_device or directory: exactly one is set. Returns
  // their nodes (null when absent).
  std::pair<const toml::node*, const toml::node*> ReadDeviceOrDirectory(
      const toml::table& e, std::string_view path, std::string& device_out,
      std::string& directory_out,
      std::optional<std::string> (*device_problem)(std::string_view) =
          detail::AbsolutePathProblem) {
    const toml::node* device = e.get("block_device");
    const toml::node* directory = e.get("directory");
    if ((device == nullptr) == (directory == nullptr)) {
      Report(e.source().begin, std::string(path),
             std::string(device == nullptr
                             ? "neither block_device nor directory is set"
                             : "both block_device and directory are set") +
                 " (expected exactly one)");
    }
    ReadString(e, "block_device", path, device_problem, device_out);
    ReadString(e, "directory", path, detail::AbsolutePathProblem, directory_out);
    return {device, directory};
  }

  // An integer or float in [min, max].
  void ReadNumber(const toml::table& t, std::string_view name,
                  std::string_view path, double min, double max,
                  std::string_view expected, double& out) {
    const toml::node* node = t.get(name);
    if (node == nullptr) return;
    const std::string key = Join(path, name);
    std::optional<double> value;
    if (const auto* i = node->as_integer()) value = static_cast<double>(i->get());
    if (const auto* f = node->as_floating_point()) value = f->get();
    if (!value) return WrongType(*node, key, expected);
    if (!(*value >= min && *value <= max)) {
      return Report(node->source().begin, key,
                    Describe(*node) + " is out of range (expected " +
                        std::string(expected) + ")");
    }
    out = *value;
  }

  // A whole number in [min, max].
  void ReadInteger(const toml::table& t, std::string_view name,
                   std::string_view path, std::int64_t min, std::int64_t max,
                   std::uint32_t& out) {
    const toml::node* node = t.get(name);
    if (node == nullptr) return;
    const std::string key = Join(path, name);
    const std::string expected = "a whole number from " + std::to_string(min) +
                                 " to " + std::to_string(max);
    const auto* v = node->as_integer();
    if (v == nullptr) return WrongType(*node, key, expected);
    if (v->get() < min || v->get() > max) {
      return Report(node->source().begin, key,
                    std::to_string(v->get()) + " is out of range (expected " +
                        expected + ")");
    }
    out = static_cast<std::uint32_t>(v->get());
  }

  void ReadAgingTargets(const toml::table& t, std::vector<AgingTarget>& out) {
    constexpr std::string_view kPath = "aging.targets";
    const toml::array* array = TableArray(t, "targets", "aging");
    if (array == nullptr) return;
    std::vector<Located> names;
    std::vector<AgingTarget> targets;
    for (const toml::node& element : *array) {
      const toml::table* e = element.as_table();
      if (e == nullptr) {
        WrongType(element, std::string(kPath),
                  "a table with name and block_device or directory");
        continue;
      }
      const std::size_t errors_before = errors_.size();
      CheckKeys(*e, kPath, kAgingTargetKeys, "");
      AgingTarget target;
      target.name = ReadName(*e, kPath, "target", names);
      const auto [device, directory] =
          ReadDeviceOrDirectory(*e, kPath, target.block_device, target.directory,
                                detail::BlockDeviceProblem);
      // Keys that belong to one kind of target only.
      for (std::string_view key :
           {"serial", "namespace", "destroy_data", "allow_signatures"}) {
        const toml::node* n = e->get(key);
        if (n != nullptr && device == nullptr && directory != nullptr) {
          Report(n->source().begin, std::string(kPath) + "." + std::string(key),
                 "only a block_device target has " + std::string(key) +
                     " (expected it on a target with block_device; a "
                     "directory target touches only its own file)");
        }
      }
      for (std::string_view key : {"file_size", "free_space_reserve"}) {
        const toml::node* n = e->get(key);
        if (n != nullptr && device != nullptr) {
          Report(n->source().begin, std::string(kPath) + "." + std::string(key),
                 "only a directory target has " + std::string(key) +
                     " (expected it on a target with directory)");
        }
      }
      if (const toml::node* serial = e->get("serial")) {
        const auto* v = serial->as_string();
        if (v == nullptr) {
          WrongType(*serial, std::string(kPath) + ".serial",
                    "the drive's serial as a non-empty string");
        } else if (Trim(v->get()).empty()) {
          Report(serial->source().begin, std::string(kPath) + ".serial",
                 "empty serial (expected the serial the device must show before drivewatch "
                 "writes to it, e.g. serial = \"S4EWNX0R123456\")");
        } else {
          target.serial = Trim(v->get());
        }
      } else if (device != nullptr) {
        Report(e->source().begin, std::string(kPath) + ".serial",
               "missing serial (expected the serial the device must show "
               "before drivewatch writes to it, e.g. serial = "
               "\"S4EWNX0R123456\")");
      }
      ReadInteger(*e, "namespace", kPath, 1, 0xFFFFFFFE, target.nsid);
      if (device != nullptr && e->get("namespace") == nullptr && !target.block_device.empty() &&
          detail::NvmeNamespacePath(target.block_device)) {
        Report(e->source().begin, std::string(kPath) + ".namespace",
               "missing namespace (expected the namespace ID the device must show before "
               "drivewatch writes to it, since " + Quote(target.block_device) +
                   " is an NVMe namespace, e.g. namespace = 1)");
      }
      ReadBool(*e, "destroy_data", kPath, target.destroy_data);
      ReadBool(*e, "allow_signatures", kPath, target.allow_signatures);
      if (const toml::node* fs = e->get("file_size")) {
        if (auto size = Size(*fs, std::string(kPath) + ".file_size")) {
          if (*size < (1u << 20) || *size % (1u << 20) != 0) {
            Report(fs->source().begin, std::string(kPath) + ".file_size",
                   Quote(FormatSize(*size)) + " is not a usable file size "
                   "(expected a whole number of MiB, at least 1MiB)");
          } else {
            target.file_size = *size;
          }
        }
      }
      ReadNumber(*e, "free_space_reserve", kPath, 0, 0.9,
                 "a fraction of the file system from 0 to 0.9",
                 target.min_free_ratio);
      if (!target.name.empty()) {
        read_targets_.push_back(ReadTarget{target, e->source().begin});
      }
      if (errors_.size() == errors_before) targets.push_back(std::move(target));
    }
    out = std::move(targets);
  }

  // Every [[aging.targets]] entry with a name, as read, good or not: a
  // phase naming a target that has problems of its own gets no second
  // error for the name, and the checks between phases and targets see
  // what was written.
  struct ReadTarget {
    AgingTarget target;
    toml::source_position where;
  };
  const ReadTarget* FindReadTarget(std::string_view name) const {
    for (const ReadTarget& t : read_targets_) {
      if (t.target.name == name) return &t;
    }
    return nullptr;
  }

  // Two targets that reach the same bytes: one entry, one device path, or
  // one drive namespace by serial.
  static bool SameStorage(const AgingTarget& a, const AgingTarget& b) {
    return a.name == b.name || (!a.block_device.empty() && a.block_device == b.block_device) ||
           (!a.serial.empty() && a.serial == b.serial && a.nsid == b.nsid);
  }

  // "[1GiB, 2GiB)", "[1GiB, the end of the target)".
  static std::string RegionText(const RetentionWriteParams& p) {
    return "[" + FormatSize(p.region_offset) + ", " +
           (p.region_length == 0 ? std::string("the end of the target")
                                 : FormatSize(p.region_offset + p.region_length)) +
           ")";
  }

  // A phase read so far, for the checks between phases.
  struct ReadPhase {
    PhaseConfig phase;
    toml::source_position where;
  };

  // Where `phase` (at `where`) would write bytes that a retention study
  // configured by an earlier phase holds, or the other way round: the
  // study's verify would then blame the drive for what drivewatch itself
  // overwrote.
  void CheckStudyOverlaps(const PhaseConfig& phase, const toml::source_position& where) {
    constexpr std::string_view kPath = "aging.phases";
    const ReadTarget* mine = FindReadTarget(phase.target);
    if (mine == nullptr || !PhaseKindWrites(phase.params)) return;
    for (const ReadPhase& other : read_phases_) {
      const PhaseConfig& o = other.phase;
      const ReadTarget* theirs = FindReadTarget(o.target);
      if (theirs == nullptr || !PhaseKindWrites(o.params) ||
          !SameStorage(mine->target, theirs->target)) {
        continue;
      }
      const auto* mine_study = std::get_if<RetentionWriteParams>(&phase.params);
      const auto* their_study = std::get_if<RetentionWriteParams>(&o.params);
      if (!mine_study && !their_study) continue;
      const std::string on = phase.target == o.target
                                 ? "target " + Quote(phase.target)
                                 : "target " + Quote(phase.target) + " (the same storage as " +
                                       Quote(o.target) + ")";
      if (mine_study && their_study) {
        const RetentionWriteParams& a = *mine_study;
        const RetentionWriteParams& b = *their_study;
        if (a.study == b.study) continue;
        const std::uint64_t a0 = a.region_offset, b0 = b.region_offset;
        const std::uint64_t a1 = a.region_length ? a0 + a.region_length : UINT64_MAX;
        const std::uint64_t b1 = b.region_length ? b0 + b.region_length : UINT64_MAX;
        if (a0 < b1 && b0 < a1) {
          Report(where, std::string(kPath),
                 "retention study " + Quote(a.study) + " region " + RegionText(a) +
                     " on " + on + " overlaps retention study " + Quote(b.study) + " region " +
                     RegionText(b) + " of phase " + Quote(o.name) + " at " + At(other.where) +
                     " (expected the regions of two studies on one drive not to overlap: "
                     "each verify would find the other's blocks)");
        }
        continue;
      }
      const PhaseConfig& study = mine_study ? phase : o;
      const RetentionWriteParams& held = mine_study ? *mine_study : *their_study;
      const PhaseConfig& writer = mine_study ? o : phase;
      const toml::source_position& study_at = mine_study ? where : other.where;
      const toml::source_position& writer_at = mine_study ? other.where : where;
      Report(where, std::string(kPath),
             "phase " + Quote(writer.name) + " (kind " + Quote(PhaseKindName(writer.params)) +
                 ", at " + At(writer_at) + ") writes " + on + ", where retention study " +
                 Quote(held.study) + " of phase " + Quote(study.name) + " (at " + At(study_at) +
                 ") holds the region " + RegionText(held) +
                 " (expected another target for it; once the study is over, end it with "
                 "drivewatch retention end " + held.study + " and remove phase " +
                 Quote(study.name) + ")");
    }
  }

  void ReadPhases(const toml::table& t, std::vector<PhaseConfig>& out) {
    constexpr std::string_view kPath = "aging.phases";
    const toml::array* array = TableArray(t, "phases", "aging");
    if (array == nullptr) return;
    const std::span<const std::string_view> kinds = PhaseKindNames();
    std::vector<Located> names;
    std::vector<PhaseConfig> phases;
    for (const toml::node& element : *array) {
      const toml::table* e = element.as_table();
      if (e == nullptr) {
        WrongType(element, std::string(kPath), "a table with name, kind and target");
        continue;
      }
      const std::size_t errors_before = errors_.size();
      CheckKeys(*e, kPath, PhaseKeys(), "");
      PhaseConfig phase;
      phase.name = ReadName(*e, kPath, "phase", names);
      const toml::node* kind = e->get("kind");
      bool kind_known = false;
      if (kind == nullptr) {
        Report(e->source().begin, std::string(kPath) + ".kind",
               "missing kind (expected " + OneOf(kinds) + ")");
      } else if (const auto* v = kind->as_string(); v == nullptr) {
        WrongType(*kind, std::string(kPath) + ".kind", "a string, " + OneOf(kinds));
      } else if (std::optional<PhaseParams> params = DefaultPhaseParams(v->get())) {
        phase.params = std::move(*params);
        kind_known = true;
      } else {
        Report(kind->source().begin, std::string(kPath) + ".kind",
               Quote(v->get()) + " is not a phase kind (expected " + OneOf(kinds) + ")");
      }
      if (const toml::node* target = e->get("target")) {
        const auto* v = target->as_string();
        if (v == nullptr) {
          WrongType(*target, std::string(kPath) + ".target",
                    "the name of an [[aging.targets]] entry");
        } else if (FindReadTarget(v->get()) == nullptr) {
          std::string known;
          for (const ReadTarget& a : read_targets_) {
            known += (known.empty() ? "" : ", ") + Quote(a.target.name);
          }
          Report(target->source().begin, std::string(kPath) + ".target",
                 Quote(v->get()) + " is not an [[aging.targets]] name " +
                     (known.empty() ? std::string("(no targets are configured)")
                                    : "(expected one of: " + known + ")"));
        } else {
          phase.target = v->get();
          const ReadTarget* named = FindReadTarget(phase.target);
          if (kind_known && PhaseKindWrites(phase.params) &&
              !named->target.block_device.empty() && !named->target.destroy_data) {
            Report(target->source().begin, std::string(kPath) + ".target",
                   "phase kind " + Quote(PhaseKindName(phase.params)) + " writes target " +
                       Quote(phase.target) + ", which does not acknowledge that all data on " +
                       named->target.block_device +
                       " will be destroyed (expected destroy_data = true in its "
                       "[[aging.targets]] entry at " + At(named->where) + ")");
          }
        }
      } else {
        Report(e->source().begin, std::string(kPath) + ".target",
               "missing target (expected the name of an [[aging.targets]] "
               "entry)");
      }
      if (errors_.size() == errors_before) CheckKindKeys(*e, phase.params);
      ReadPhaseSchedule(*e, phase.schedule);
      ReadDuration(*e, "max_duration", kPath, kMaxDurationRange,
                   phase.max_duration);
      ReadKindKeys(*e, phase.params, kind_known);
      if (errors_.size() == errors_before) {
        CheckStudyOverlaps(phase, e->source().begin);
        read_phases_.push_back(ReadPhase{phase, e->source().begin});
      }
      if (errors_.size() == errors_before) phases.push_back(std::move(phase));
    }
    out = std::move(phases);
  }

  // A key of another kind than the phase's is refused, naming the kinds
  // that have it.
  void CheckKindKeys(const toml::table& e, const PhaseParams& params) {
    for (const PhaseKey& key : PhaseKindKeys()) {
      const toml::node* n = e.get(key.name);
      if (n == nullptr || PhaseKindHasKey(params, key.name)) continue;
      std::string users;
      ForEachPhaseKind([&](const auto& kind) {
        if (PhaseKindHasKey(kind, key.name)) {
          users += (users.empty() ? "" : ", ") + Quote(std::decay_t<decltype(kind)>::kName);
        }
      });
      Report(n->source().begin, "aging.phases." + std::string(key.name),
             "not used by kind " + Quote(PhaseKindName(params)) + " (expected only on kind " +
                 users + ")");
    }
  }

  // The kind's own keys into `params` when the kind is known. Every other
  // kind's key that is present is checked all the same, into a value thrown
  // away, so one run shows every mistake.
  void ReadKindKeys(const toml::table& e, PhaseParams& params, bool kind_known) {
    std::vector<std::string_view> read;
    if (kind_known) {
      std::visit(
          [&](auto& p) {
            std::decay_t<decltype(p)>::Keys(p, [&](const PhaseKey& key, auto& field) {
              ReadPhaseKey(e, key, field);
              read.push_back(key.name);
            });
          },
          params);
    }
    ForEachPhaseKind([&](auto scratch) {
      decltype(scratch)::Keys(scratch, [&](const PhaseKey& key, auto& field) {
        if (std::find(read.begin(), read.end(), key.name) != read.end()) return;
        read.push_back(key.name);
        if (e.get(key.name) != nullptr) ReadPhaseKey(e, key, field);
      });
    });
  }

  // One kind key as its PhaseKey says: sizes and whole numbers.
  void ReadPhaseKey(const toml::table& e, const PhaseKey& key, std::uint32_t& out) {
    if (key.type == PhaseKeyType::kInteger) {
      return ReadInteger(e, key.name, "aging.phases", static_cast<std::int64_t>(key.min),
                         static_cast<std::int64_t>(key.max), out);
    }
    std::uint64_t size = out;
    ReadPhaseKey(e, key, size);
    out = static_cast<std::uint32_t>(size);  // key.max keeps it in range
  }
  void ReadPhaseKey(const toml::table& e, const PhaseKey& key, std::uint64_t& out) {
    const toml::node* node = e.get(key.name);
    if (node == nullptr) return;
    const std::string name = "aging.phases." + std::string(key.name);
    const std::optional<std::uint64_t> size = Size(*node, name);
    if (!size) return;
    if (static_cast<double>(*size) < key.min || static_cast<double>(*size) > key.max ||
        *size % key.multiple != 0) {
      return Report(node->source().begin, name,
                    Quote(FormatSize(*size)) + std::string(key.expected));
    }
    out = *size;
  }
  void ReadPhaseKey(const toml::table& e, const PhaseKey& key, double& out) {
    ReadNumber(e, key.name, "aging.phases", key.min, key.max, key.expected, out);
  }
  void ReadPhaseKey(const toml::table& e, const PhaseKey& key, std::optional<double>& out) {
    if (e.get(key.name) == nullptr) return;
    double value = 0;
    const std::size_t errors_before = errors_.size();
    ReadPhaseKey(e, key, value);
    if (errors_.size() == errors_before) out = value;
  }
  void ReadPhaseKey(const toml::table& e, const PhaseKey& key, milliseconds& out) {
    ReadDuration(e, key.name, "aging.phases", DurationRange(key), out);
  }
  void ReadPhaseKey(const toml::table& e, const PhaseKey& key,
                    std::vector<milliseconds>& out) {
    ReadDurationList(e, key.name, "aging.phases", DurationRange(key), out);
  }
  void ReadPhaseKey(const toml::table& e, const PhaseKey& key, std::string& out) {
    const std::string name = "aging.phases." + std::string(key.name);
    const toml::node* node = e.get(key.name);
    if (node == nullptr) {
      if (!key.missing.empty()) Report(e.source().begin, name, std::string(key.missing));
      return;
    }
    const auto* v = node->as_string();
    if (v == nullptr) {
      WrongType(*node, name, "a non-empty string of letters, digits, _, - and .");
    } else if (v->get().empty() ||
               !std::all_of(v->get().begin(), v->get().end(), [](char c) {
                 return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
                        c == '.';
               })) {
      BadName(*node, name);
    } else {
      out = v->get();
    }
  }
  static Range DurationRange(const PhaseKey& key) {
    return Range{milliseconds{static_cast<std::int64_t>(key.min)},
                 milliseconds{static_cast<std::int64_t>(key.max)}};
  }

  void ReadDurationList(const toml::table& t, std::string_view name,
                        std::string_view path, Range range,
                        std::vector<milliseconds>& out) {
    const toml::node* node = t.get(name);
    if (node == nullptr) return;
    const std::string key = Join(path, name);
    const std::string expected = "a non-empty array of durations from " +
                                 FormatDuration(range.min) + " to " +
                                 FormatDuration(range.max) +
                                 ", such as [\"1m\", \"2m\"]";
    const toml::array* array = node->as_array();
    if (array == nullptr) return WrongType(*node, key, expected);
    if (array->empty() || array->size() > 100) {
      return BadCount(*node, key, expected + ", at most 100");
    }
    std::vector<milliseconds> list;
    for (const toml::node& element : *array) {
      const auto* v = element.as_string();
      if (v == nullptr) return WrongType(element, key, expected);
      std::string problem;
      const auto d = ParseDuration(v->get(), &problem);
      if (!d) return Report(element.source().begin, key, std::move(problem));
      if (*d < range.min || *d > range.max) {
        return Report(element.source().begin, key,
                      Quote(v->get()) + " is out of range (expected " +
                          FormatDuration(range.min) + " to " +
                          FormatDuration(range.max) + ")");
      }
      list.push_back(*d);
    }
    out = std::move(list);
  }

  // interval, or window (+ weekdays): see PhaseSchedule.
  void ReadPhaseSchedule(const toml::table& e, PhaseSchedule& out) {
    constexpr std::string_view kPath = "aging.phases";
    const toml::node* interval = e.get("interval");
    const toml::node* window = e.get("window");
    const toml::node* weekdays = e.get("weekdays");
    if (interval != nullptr && window != nullptr) {
      Report(window->source().begin, std::string(kPath) + ".window",
             "both interval and window are set (expected one of them, or "
             "neither for a phase run only by hand)");
      return;
    }
    ReadDuration(e, "interval", kPath, kPhaseIntervalRange, out.interval);
    if (window != nullptr) {
      const std::string key = std::string(kPath) + ".window";
      constexpr std::string_view kExpected =
          "a local time window \"HH:MM-HH:MM\", such as \"01:00-05:00\"";
      const auto* v = window->as_string();
      if (v == nullptr) return WrongType(*window, key, kExpected);
      auto minutes = [](std::string_view hm) -> int {
        if (hm.size() != 5 || hm[2] != ':' || !std::isdigit(hm[0]) ||
            !std::isdigit(hm[1]) || !std::isdigit(hm[3]) || !std::isdigit(hm[4]))
          return -1;
        const int h = (hm[0] - '0') * 10 + (hm[1] - '0');
        const int m = (hm[3] - '0') * 10 + (hm[4] - '0');
        return h < 24 && m < 60 ? h * 60 + m : -1;
      };
      const std::string_view text = v->get();
      const int start = text.size() == 11 && text[5] == '-'
                            ? minutes(text.substr(0, 5)) : -1;
      const int end = text.size() == 11 && text[5] == '-'
                          ? minutes(text.substr(6)) : -1;
      if (start < 0 || end < 0 || start == end) {
        return Report(window->source().begin, key,
                      Quote(text) + " is not a time window (expected " +
                          std::string(kExpected) + ", start and end differing)");
      }
      out.window_start = start;
      out.window_end = end;
    }
    if (weekdays != nullptr) {
      const std::string key = std::string(kPath) + ".weekdays";
      if (window == nullptr) {
        return Report(weekdays->source().begin, key,
                      "weekdays without a window (expected window = "
                      "\"HH:MM-HH:MM\" beside it)");
      }
      const std::string expected =
          "a non-empty array of days, each one of: " + OneOf(kWeekdayNames).substr(8);
      const toml::array* array = weekdays->as_array();
      if (array == nullptr) return WrongType(*weekdays, key, expected);
      if (array->empty()) return BadCount(*weekdays, key, expected);
      std::uint8_t mask = 0;
      for (const toml::node& element : *array) {
        const auto* d = element.as_string();
        if (d == nullptr) return WrongType(element, key, expected);
        auto it = std::find(kWeekdayNames.begin(), kWeekdayNames.end(), d->get());
        if (it == kWeekdayNames.end()) {
          return Report(element.source().begin, key,
                        Quote(d->get()) + " is not a weekday (expected " +
                            OneOf(kWeekdayNames) + ")");
        }
        const auto bit = static_cast<std::uint8_t>(1u << (it - kWeekdayNames.begin()));
        if (mask & bit) {
          return Report(element.source().begin, key,
                        Quote(d->get()) + " is listed twice (expected each day once)");
        }
        mask |= bit;
      }
      out.weekdays = mask;
    }
  }

  void ReadCommand(const toml::node& node, std::vector<std::string>& out) {
    const std::string key = "probes.power.meters.command";
    constexpr std::string_view kExpected =
        "a non-empty array of strings, the program's absolute path first";
    const toml::array* array = node.as_array();
    if (array == nullptr) return WrongType(node, key, kExpected);
    if (array->empty()) {
      return Report(node.source().begin, key,
                    "empty array (expected " + std::string(kExpected) + ")");
    }
    std::vector<std::string> argv;
    for (const toml::node& element : *array) {
      const auto* value = element.as_string();
      if (value == nullptr) return WrongType(element, key, kExpected);
      argv.push_back(value->get());
    }
    if (auto problem = detail::AbsolutePathProblem(argv.front())) {
      return Report((*array)[0].source().begin, key, std::move(*problem));
    }
    out = std::move(argv);
  }

  std::string file_;
  std::vector<ConfigError> errors_;
  std::vector<ReadTarget> read_targets_;
  std::vector<ReadPhase> read_phases_;
};

// toml++'s description, made to read like ours: it starts "Error while
// parsing ..." where ours start in lower case, and it can quote the raw
// text it stopped at, newline included ("saw 'tru\n'"), which would split
// the message over two lines.
std::string FromToml(std::string_view description) {
  std::string out;
  for (char c : description) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      const std::string escaped = Quote(std::string_view(&c, 1));
      out.append(escaped, 1, escaped.size() - 2);  // without the quotes
    } else {
      out += c;
    }
  }
  if (out.size() > 1 && out[0] >= 'A' && out[0] <= 'Z' && out[1] >= 'a' &&
      out[1] <= 'z') {
    out[0] = static_cast<char>(out[0] - 'A' + 'a');
  }
  // toml++ names its compile-time limits by their macros, which mean
  // nothing to whoever wrote the file.
  constexpr std::string_view kNested = " (TOML_MAX_NESTED_VALUES)";
  if (const auto at = out.find(kNested); at != std::string::npos) {
    out.replace(at, kNested.size(),
                " (expected arrays and inline tables nested less deep; no drivewatch key "
                "nests them more than two levels)");
  }
  for (auto open = out.find(" (TOML_"); open != std::string::npos; open = out.find(" (TOML_")) {
    const auto close = out.find(')', open);
    out.erase(open, close == std::string::npos ? std::string::npos : close - open + 1);
  }
  return out;
}

bool MatchesAny(const std::vector<std::string>& patterns,
                const std::string& s) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& p) {
                       return fnmatch(p.c_str(), s.c_str(), 0) == 0;
                     });
}

// Identify Controller pads SN and MN with spaces; some firmware pads with
// NULs instead.
std::string Trim(std::string_view s) {
  auto pad = [](char c) { return c == ' ' || c == '\0'; };
  while (!s.empty() && pad(s.front())) s.remove_prefix(1);
  while (!s.empty() && pad(s.back())) s.remove_suffix(1);
  return std::string(s);
}

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

// One kind key of a phase's inline table, as its PhaseKey says.
void AppendPhaseKey(std::string& out, const PhaseKey& key, std::uint64_t value) {
  out += ", " + std::string(key.name) + " = ";
  out += key.type == PhaseKeyType::kSize ? Quote(FormatSize(value)) : std::to_string(value);
}
void AppendPhaseKey(std::string& out, const PhaseKey& key, std::uint32_t value) {
  AppendPhaseKey(out, key, std::uint64_t{value});
}
void AppendPhaseKey(std::string& out, const PhaseKey& key, double value) {
  out += ", " + std::string(key.name) + " = " + Number(value);
}
void AppendPhaseKey(std::string& out, const PhaseKey& key, const std::optional<double>& value) {
  if (value) AppendPhaseKey(out, key, *value);  // unset is written by leaving it out
}
void AppendPhaseKey(std::string& out, const PhaseKey& key, milliseconds value) {
  out += ", " + std::string(key.name) + " = " + Quote(FormatDuration(value));
}
void AppendPhaseKey(std::string& out, const PhaseKey& key,
                    const std::vector<milliseconds>& value) {
  out += ", " + std::string(key.name) + " = [";
  for (std::size_t k = 0; k < value.size(); ++k) {
    out += (k > 0 ? ", " : "") + Quote(FormatDuration(value[k]));
  }
  out += "]";
}
void AppendPhaseKey(std::string& out, const PhaseKey& key, const std::string& value) {
  out += ", " + std::string(key.name) + " = " + Quote(value);
}

void AppendAging(std::string& out, const AgingConfig& aging) {
  out += "\n[aging]\ntemperature_margin = " + Number(aging.temperature_margin);
  out += "\ntargets = [";
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

bool DriveSelection::Watches(std::string_view serial,
                             std::string_view model) const {
  const std::string sn = Trim(serial);
  const std::string mn = Trim(model);
  const bool included = (include_serials.empty() && include_models.empty()) ||
                        MatchesAny(include_serials, sn) ||
                        MatchesAny(include_models, mn);
  return included && !MatchesAny(exclude_serials, sn) &&
         !MatchesAny(exclude_models, mn);
}

Config Defaults() { return Config{}; }

const AgingTarget* AgingConfig::FindTarget(std::string_view name) const {
  for (const AgingTarget& t : targets) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const PhaseConfig* AgingConfig::FindPhase(std::string_view name) const {
  for (const PhaseConfig& p : phases) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string FormatPhaseSchedule(const PhaseSchedule& s) {
  if (s.interval.count() > 0) return "every " + FormatDuration(s.interval);
  if (s.window_start < 0) return "by hand only";
  std::string out = "window " + FormatWindow(s);
  if (s.weekdays != 0x7f) {
    out += " on";
    for (unsigned d = 0; d < 7; ++d) {
      if (s.weekdays & (1u << d)) out += " " + std::string(kWeekdayNames[d]);
    }
  }
  return out;
}

std::string ConfigError::ToString() const {
  std::string out = file;
  if (line > 0)
    out += ":" + std::to_string(line) + ":" + std::to_string(column);
  out += ": ";
  if (!key.empty()) out += key + ": ";
  out += problem;
  return out;
}

LoadResult LoadString(const std::string& text, const std::string& name) {
  LoadResult result;
  try {
    toml::table root;
    try {
      root = toml::parse(std::string_view(text), std::string_view(name));
    } catch (const toml::parse_error& e) {
      result.errors.push_back(
          ConfigError{name, static_cast<int>(e.source().begin.line),
                      static_cast<int>(e.source().begin.column), "",
                      FromToml(e.description())});
      return result;
    }
    return Loader(name).Load(root);
  } catch (const std::exception& e) {
    // Only allocation failure gets here; callers are promised no throws.
    result.config.reset();
    result.errors.assign(
        1, ConfigError{name, 0, 0, "",
                       std::string("internal error: ") + e.what()});
    return result;
  }
}

LoadResult LoadFile(const std::string& path) {
  auto unreadable = [&](int err) {
    LoadResult result;
    result.errors.push_back(ConfigError{
        path, 0, 0, "",
        "cannot read: " +
            std::error_code(err, std::generic_category()).message()});
    return result;
  };
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return unreadable(errno);
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      close(fd);
      return unreadable(err);
    }
    text.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return LoadString(text, path);
}

std::string ToToml(const Config& config) {
  std::string out;
  out += "[web]\nlisten_address = " + Quote(config.listen_address) + "\n\n";
  out += "[log]\nlevel = " + Quote(LogLevelName(config.log_level)) + "\n\n";
  out += "[state]\ndirectory = " + Quote(config.state_directory) + "\n\n";
  out += "[discovery]\ninterval = " +
         Quote(FormatDuration(config.discovery_interval)) + "\n";
  out += "grace_period = " + Quote(FormatDuration(config.drive_grace_period)) +
         "\n\n";
  out += "[drives]\n";
  AppendList(out, "include_serials", config.drives.include_serials);
  AppendList(out, "exclude_serials", config.drives.exclude_serials);
  AppendList(out, "include_models", config.drives.include_models);
  AppendList(out, "exclude_models", config.drives.exclude_models);
  out += "\n[probes.health]\nenabled = ";
  out += config.health.enabled ? "true" : "false";
  out += "\ninterval = " + Quote(FormatDuration(config.health.interval)) + "\n";
  out += "\n[probes.thermal]\nenabled = ";
  out += config.thermal.enabled ? "true" : "false";
  out += "\ninterval = " + Quote(FormatDuration(config.thermal.interval));
  out += "\nasync_events = ";
  out += config.async_events ? "true" : "false";
  out += "\n\n[probes.power]\nenabled = ";
  out += config.power.enabled ? "true" : "false";
  out += "\ninterval = " + Quote(FormatDuration(config.power.interval));
  out += "\nmeters = [";
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
  const ReadLatencySettings& rl = config.read_latency;
  out += "\n[probes.read_latency]\nenabled = ";
  out += rl.enabled ? "true" : "false";
  out += "\nnamespaces = ";
  out += rl.namespaces ? "true" : "false";
  out += "\nrates = [";
  for (size_t i = 0; i < rl.rates.size(); ++i) {
    out += (i > 0 ? ", " : "") + std::to_string(rl.rates[i]);
  }
  out += "]\nrate_period = " + Quote(FormatDuration(rl.rate_period));
  out += "\nidle_period = " + Quote(FormatDuration(rl.idle_period));
  out += "\narrivals = ";
  out += rl.arrivals == Arrivals::kFixed ? "\"fixed\"" : "\"poisson\"";
  out += "\nblock_size = " + Quote(FormatSize(rl.block_size));
  out += "\ntimeout = " + Quote(FormatDuration(rl.timeout));
  out += "\nwindows = [";
  for (size_t i = 0; i < rl.windows.size(); ++i) {
    out += (i > 0 ? ", " : "") + Quote(FormatDuration(rl.windows[i]));
  }
  out += "]\ntargets = [";
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
  const SelfTestConfig& st = config.self_test;
  out += "\n[probes.self_test]\nenabled = ";
  out += st.enabled ? "true" : "false";
  out += "\ninterval = " + Quote(FormatDuration(st.interval));
  out += "\nshort = " + Quote(FormatSchedule(st.short_test));
  out += "\nextended = " + Quote(FormatSchedule(st.extended_test));
  out += "\nabort_on_shutdown = ";
  out += st.abort_on_shutdown ? "true" : "false";
  out += "\ndrives = [";
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
  out += "\n[probes.error_log]\nenabled = ";
  out += config.error_log.enabled ? "true" : "false";
  out += "\ninterval = " + Quote(FormatDuration(config.error_log.interval)) +
         "\n";
  out += "\n[probes.persistent_event_log]\nenabled = ";
  out += config.persistent_event_log.enabled ? "true" : "false";
  out += "\ninterval = " +
         Quote(FormatDuration(config.persistent_event_log.interval)) + "\n";
  AppendAging(out, config.aging);
  return out;
}

namespace {
constexpr std::pair<std::string_view, int> kSizeUnits[] = {
    {"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}};
}  // namespace

std::string FormatSize(std::uint64_t bytes) {
  for (const auto& [unit, shift] : kSizeUnits) {
    const std::uint64_t scale = std::uint64_t{1} << shift;
    if (bytes != 0 && bytes % scale == 0) {
      return std::to_string(bytes / scale) + std::string(unit);
    }
  }
  return "0B";
}

std::optional<std::uint64_t> ParseSize(std::string_view text,
                                       std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<std::uint64_t> {
    if (error) {
      *error = detail::Quote(text) + " is not a valid size: " + why +
               " (expected a whole number and a unit: B, KiB, MiB, GiB or "
               "TiB, such as \"4KiB\")";
    }
    return std::nullopt;
  };
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return fail("no number");
  std::uint64_t n = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + digits, n);
  if (ec != std::errc()) return fail("number too large");
  const std::string_view unit = text.substr(digits);
  for (const auto& [name, shift] : kSizeUnits) {
    if (unit != name) continue;
    if (shift > 0 && n > (~std::uint64_t{0} >> shift)) return fail("too large");
    return n << shift;
  }
  return fail(unit.empty() ? "no unit" : "unknown unit " + detail::Quote(unit));
}

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

std::optional<LogLevel> ParseLogLevel(std::string_view name) {
  for (LogLevel level :
       {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (LogLevelName(level) == name) return level;
  }
  return std::nullopt;
}

}  // namespace drivewatch::config
