// SPDX-License-Identifier: Apache-2.0
// The endurance kind (its story: aging/phases/endurance_phase.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config/kinds/phase_key.h"

namespace drivewatch::config {

// The endurance kind's keys (docs/aging.md, "endurance").
inline constexpr std::string_view kEnduranceWorkloads[] = {"sequential", "jesd219"};
inline constexpr PhaseKey kWorkloadKey{
    .name = "workload", .type = PhaseKeyType::kName,
    .doc = "What is written, pass after pass: \"sequential\" block_size writes, or "
           "\"jesd219\", JEDEC JESD219A's enterprise mix of sizes and skewed random offsets.",
    .choices = kEnduranceWorkloads};
inline constexpr PhaseKey kDriveWritesKey{
    .name = "drive_writes", .type = PhaseKeyType::kInteger, .min = 0, .max = 1'000'000,
    .doc = "The phase ends after this many full passes over the target; 0: no bound."};
inline constexpr PhaseKey kPercentageUsedKey{
    .name = "percentage_used", .type = PhaseKeyType::kNumber, .min = 1, .max = 255,
    .expected = "a SMART Percentage Used from 1 to 255",
    .doc = "The phase ends once the drive's SMART Percentage Used is at or above this; "
           "unset: no bound."};
inline constexpr PhaseKey kBytesWrittenKey{
    .name = "bytes_written", .type = PhaseKeyType::kSize, .min = 0, .max = kNoLimit,
    .multiple = 1 << 20,
    .expected = " is not a whole number of MiB (expected a multiple of 1MiB, such as \"100TiB\")",
    .doc = "The phase ends once it has written this much, over all its resumed runs; "
           "\"0B\": no bound."};
inline constexpr PhaseKey kMaxDriveWritesPerDayKey{
    .name = "max_drive_writes_per_day", .type = PhaseKeyType::kNumber, .min = 0.001,
    .max = 1e6, .expected = "drive writes per day from 0.001 to 1000000",
    .doc = "Caps the write rate at this many full target writes per day; unset: as fast "
           "as the drive goes."};


// endurance: writes the target over and over (sequential, or JESD219's
// enterprise mix) until drive_writes passes, percentage_used or
// bytes_written; resumes where it was after a restart.
struct EnduranceParams {
  static constexpr std::string_view kName = "endurance";
  static constexpr bool kWrites = true;
  std::string workload = "sequential";
  std::uint32_t block_size = 128 * 1024;  // sequential only
  std::uint32_t queue_depth = 32;
  std::uint32_t drive_writes = 1;
  std::optional<double> percentage_used;
  std::uint64_t bytes_written = 0;
  std::optional<double> max_drive_writes_per_day;

  template <class Self, class F>
  static void Keys(Self& p, F&& f) {
    f(kWorkloadKey, p.workload);
    f(kBlockSizeKey, p.block_size);
    f(kQueueDepthKey, p.queue_depth);
    f(kDriveWritesKey, p.drive_writes);
    f(kPercentageUsedKey, p.percentage_used);
    f(kBytesWrittenKey, p.bytes_written);
    f(kMaxDriveWritesPerDayKey, p.max_drive_writes_per_day);
  }
  bool operator==(const EnduranceParams&) const = default;
};

}  // namespace drivewatch::config
