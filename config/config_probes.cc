// SPDX-License-Identifier: Apache-2.0
#include "config/loader.h"

#include <string>
#include <utility>
#include <vector>

#include "config/checks.h"

namespace drivewatch::config::detail {

namespace {

constexpr Range kMeterTimeoutRange{milliseconds{100}, milliseconds{30'000}};

}  // namespace

void Loader::ReadPower(const toml::table& power, Config& out) {
  ReadMeters(power, out.power_meters);
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
  ReadTables(power, "meters", "probes.power", KeyNames(Section(kPath)),
             "a table with serial and hwmon or command", out, read_one);
}

void Loader::ReadSelfTest(const toml::table& t, Config& out) {
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
  ReadTables(t, "drives", "probes.self_test", KeyNames(Section(kDrivesPath)),
             "a table with serial and short and/or extended", out.self_test.drives,
             read_one);
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
