// SPDX-License-Identifier: Apache-2.0
// The retention-verify kind (its story: aging/phases/retention_verify_phase.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config/kinds/phase_key.h"

namespace drivewatch::config {

inline constexpr PhaseKey kStorageTemperatureKey{
    .name = "storage_temperature", .type = PhaseKeyType::kNumber, .min = -40, .max = 125,
    .expected = "a temperature in °C from -40 to 125",
    .doc = "Where the drive sat powered off, in °C; unset leaves that part of the age unknown."};

// retention-verify: reads a study back. It writes nothing.
struct RetentionVerifyParams {
  static constexpr std::string_view kName = "retention-verify";
  static constexpr bool kWrites = false;
  std::uint32_t block_size = 128 * 1024;
  std::uint32_t queue_depth = 32;
  std::string study;
  // Where the drive was stored while powered off, in °C; unset leaves the
  // powered-off part of the age unknown.
  std::optional<double> storage_temperature;

  template <class Self, class F>
  static void Keys(Self& p, F&& f) {
    f(kBlockSizeKey, p.block_size);
    f(kQueueDepthKey, p.queue_depth);
    f(kStudyKey, p.study);
    f(kStorageTemperatureKey, p.storage_temperature);
  }
  bool operator==(const RetentionVerifyParams&) const = default;
};

}  // namespace drivewatch::config
