// SPDX-License-Identifier: Apache-2.0
// How old a drive was when a run started: a snapshot of its SMART / Health
// log (NVMe 2.0 §5.16.1.3) that the phase runner puts into every run record
// of a target it reaches through a controller (aging/runner/phase_runner.cc), as
//
//   "drive_at_start": {"time": <Unix seconds>, "power_on_hours": N,
//     "percentage_used": N, "data_written_bytes": N, "capacity_bytes": N,
//     "tmt1_k": N, "tmt2_k": N}
//
// tmt1_k / tmt2_k only when host controlled thermal management is on
// (Identify HCTMA, Get Features 10h). `drivewatch report` reads it back to
// show each run's age (power-on hours, Percentage Used, data written and
// drive writes); a record without it (older ones, file targets) shows the
// age as unknown. A history is untrusted input, so every field is checked
// when it is read back.
#pragma once

#include <cstdint>
#include <optional>

#include "config/util/expected.h"
#include "config/util/json.h"
#include "probes/drive/drive_layer.h"

namespace drivewatch::aging {

struct DriveAge {
  double time = 0;  // Unix seconds, when the log was read
  std::uint64_t power_on_hours = 0;
  std::uint32_t percentage_used = 0;  // Percentage Used; may exceed 100
  double data_written_bytes = 0;      // Data Units Written × 512,000
  std::uint64_t capacity_bytes = 0;   // the target's size (an NVMe namespace's)
  std::optional<std::uint16_t> tmt1_k, tmt2_k;

  // Data written over the capacity: how many times the drive was written.
  double DriveWrites() const {
    return capacity_bytes == 0 ? 0 : data_written_bytes / static_cast<double>(capacity_bytes);
  }
};

// Reads the SMART / Health log (and Identify Controller, and Get Features
// 10h when the controller has HCTM) through `ctrl`: the "drive_at_start"
// object. `capacity_bytes` is the target's size; `now` Unix seconds.
Expected<Json> ReadDriveAge(Controller& ctrl, std::uint64_t capacity_bytes, double now);

// A "drive_at_start" object read back from a history record, each field
// checked: an error (EBADMSG) names the field, its value and what was
// expected, e.g. "drive_at_start.percentage_used is -3 (expected a whole
// number from 0 to 255)".
Expected<DriveAge> DriveAgeFromJson(const Json& snapshot);

}  // namespace drivewatch::aging
