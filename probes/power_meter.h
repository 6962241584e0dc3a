// SPDX-License-Identifier: Apache-2.0
// External power meters, as lab rigs wire them to a drive: a hwmon
// power*_input file (microwatts, e.g. an INA226 on the drive's 3.3 V rail)
// or a command that prints the drive's power in watts. Configured per drive
// serial ([[probes.power.meters]]); read by the power probe on the drive's
// own thread, so a slow meter delays only that drive, and never by more
// than its timeout.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "config/util/expected.h"

namespace drivewatch {

struct PowerMeterSpec {
  // Exactly one of the two is set.
  std::string hwmon_path;            // e.g. /sys/class/hwmon/hwmon3/power1_input
  std::vector<std::string> command;  // argv; argv[0] an absolute path
  // How long the command may take, from start to exit.
  std::chrono::milliseconds timeout{2000};

  bool operator==(const PowerMeterSpec&) const = default;
};

// Reads the meter once, in watts. hwmon: the file's integer microwatts.
// Command: run without a shell, stdin /dev/null, stderr discarded, in its
// own process group; its stdout must be one number of watts (surrounding
// white space allowed) and it must exit 0. A command still running at the
// deadline is killed with its whole process group. Errors name the meter
// and say what was wrong, e.g. `meter command "/usr/bin/x": timed out
// after 2s, killed`.
Expected<double> ReadPowerMeter(const PowerMeterSpec& spec);

// Parses a meter's text output: one finite, non-negative decimal number
// with optional surrounding white space. Exposed for tests.
Expected<double> ParseWatts(const std::string& text, const std::string& what);

}  // namespace drivewatch
