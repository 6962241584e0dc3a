// SPDX-License-Identifier: Apache-2.0
#include "config/loader.h"

#include <string>
#include <utility>
#include <vector>

#include "config/checks.h"

namespace drivewatch::config::detail {

namespace {

constexpr std::array<std::string_view, 6> kSelfTestKeys{
    "enabled", "interval", "short", "extended", "abort_on_shutdown", "drives"};
constexpr std::array<std::string_view, 3> kSelfTestDriveKeys{"serial", "short",
                                                             "extended"};
constexpr std::array<std::string_view, 4> kMeterKeys{"serial", "hwmon",
                                                     "command", "timeout"};

constexpr Range kProbeIntervalRange{milliseconds{1'000},
                                    std::chrono::hours{24}};
// At most the self-test catch-up window (probes/self_test.h), or a
// scheduled test could fall between two runs and never start.
constexpr Range kSelfTestIntervalRange{milliseconds{1'000},
                                       std::chrono::hours{1}};
constexpr Range kMeterTimeoutRange{milliseconds{100}, milliseconds{30'000}};

}  // namespace

const toml::table* Loader::ReadProbe(const toml::table& probes, std::string_view name,
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

void Loader::ReadMeters(const toml::table& power, std::vector<PowerMeter>& out) {
  constexpr std::string_view kPath = "probes.power.meters";
  std::vector<Located> serials;
  auto read_one = [&](const toml::table& t, PowerMeter& meter, std::size_t) {
    meter.serial = ReadUniqueSerial(t, kPath, "has a meter", "one meter per drive", serials);
    const toml::node* hwmon = t.get("hwmon");
    const toml::node* command = t.get("command");
    if ((hwmon == nullptr) == (command == nullptr)) {
      Report(t.source().begin, std::string(kPath),
             std::string(hwmon == nullptr ? "neither hwmon nor command is "
                                            "set"
                                          : "both hwmon and command are set") +
                 " (expected exactly one: hwmon = a power*_input file, or "
                 "command = [\"/path/to/program\", ...])");
    }
    if (hwmon != nullptr) {
      ReadString(t, "hwmon", kPath, detail::AbsolutePathProblem,
                 meter.hwmon);
    }
    if (command != nullptr) ReadCommand(*command, meter.command);
    ReadDuration(t, "timeout", kPath, kMeterTimeoutRange, meter.timeout);
  };
  ReadTables(power, "meters", "probes.power", kMeterKeys,
             "a table with serial and hwmon or command", out, read_one);
}

void Loader::ReadSelfTest(const toml::table& probes, SelfTestConfig& out) {
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
  std::vector<Located> serials;
  auto read_one = [&](const toml::table& d, SelfTestDrive& drive, std::size_t errors_before) {
    drive.serial = ReadUniqueSerial(d, kDrivesPath, "has schedules", "one entry per drive",
                                    serials);
    if (d.get("short") != nullptr) {
      Schedule s;
      ReadSchedule(d, "short", kDrivesPath, s);
      drive.short_test = s;
    }
    if (d.get("extended") != nullptr) {
      Schedule s;
      ReadSchedule(d, "extended", kDrivesPath, s);
      drive.extended_test = s;
    }
    if (!drive.short_test && !drive.extended_test &&
        errors_.size() == errors_before) {
      Report(d.source().begin, std::string(kDrivesPath),
             "neither short nor extended is set (expected at least one; "
             "\"\" means never)");
    }
  };
  ReadTables(*t, "drives", "probes.self_test", kSelfTestDriveKeys,
             "a table with serial and short and/or extended", out.drives, read_one);
}

void Loader::ReadCommand(const toml::node& node, std::vector<std::string>& out) {
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

}  // namespace drivewatch::config::detail
