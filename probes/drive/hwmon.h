// SPDX-License-Identifier: Apache-2.0
// Temperatures from the kernel's NVMe hwmon device, the one source that
// needs no privilege. The kernel driver (drivers/nvme/host/hwmon.c) reads
// the SMART log and feature 04h itself on every read of these files, so an
// unprivileged process sees what admin passthrough would show it:
//
//   <sysfs>/class/nvme/<ctrl>/hwmonN/        (or .../<ctrl>/device/hwmon/hwmonN)
//     name          "nvme"
//     temp1_input   composite temperature, millidegrees C (K*1000 - 273150)
//     temp1_max     composite over-temperature threshold (feature 04h)
//     temp1_min     composite under-temperature threshold (feature 04h)
//     temp1_crit    critical composite temperature (Identify CCTEMP)
//
// The thermal probe falls back to this when admin passthrough is denied
// (EACCES/EPERM: no CAP_SYS_ADMIN on Linux 6.1). The sysfs root is a
// parameter so that tests can point it at a fixture tree.
#pragma once

#include <optional>
#include <string>

#include "config/util/expected.h"

namespace drivewatch {

struct HwmonTemperatures {
  std::string directory;         // the hwmonN directory read
  double composite_celsius = 0;  // temp1_input
  // Absent when the file is missing or unreadable (the kernel hides
  // thresholds a controller does not report).
  std::optional<double> max_celsius;   // temp1_max: over-threshold
  std::optional<double> min_celsius;   // temp1_min: under-threshold
  std::optional<double> crit_celsius;  // temp1_crit: CCTEMP
};

// Finds the hwmon device (name "nvme") of controller `controller` (kernel
// name, e.g. "nvme0") and reads it. Fails with ENOENT when there is none
// (kernel without CONFIG_NVME_HWMON), or with the errno of temp1_input.
Expected<HwmonTemperatures> ReadNvmeHwmon(const std::string& sysfs_root,
                                          const std::string& controller);

// True when an admin command failed because the kernel refused the
// passthrough (EACCES or EPERM: the caller lacks CAP_SYS_ADMIN, or on 6.2+
// the command is not one the kernel allows without it), not because the
// controller answered with an error.
inline bool AdminPassthroughDenied(const Error& error) {
  return error.nvme_status < 0 &&
         (error.errnum == EACCES || error.errnum == EPERM);
}

}  // namespace drivewatch
