// SPDX-License-Identifier: Apache-2.0
// The trim kind (its story: aging/phases/trim_phase.cc).
#pragma once

#include <cstdint>
#include <string_view>

#include "config/kinds/phase_key.h"

namespace drivewatch::config {

inline constexpr PhaseKey kTrimPercentKey{
    .name = "trim_percent", .type = PhaseKeyType::kNumber, .min = 1, .max = 100,
    .expected = "a percentage of the target from 1 to 100",
    .doc = "The share of the target trimmed, from its start, in percent."};

// trim: fill to fill_percent, trim the first trim_percent, measure.
struct TrimParams {
  static constexpr std::string_view kName = "trim";
  static constexpr bool kWrites = true;
  std::uint32_t block_size = 128 * 1024;
  std::uint32_t queue_depth = 32;
  double fill_percent = 90;
  double trim_percent = 50;

  template <class Self, class F>
  static void Keys(Self& p, F&& f) {
    f(kBlockSizeKey, p.block_size);
    f(kQueueDepthKey, p.queue_depth);
    f(kFillPercentKey, p.fill_percent);
    f(kTrimPercentKey, p.trim_percent);
  }
  bool operator==(const TrimParams&) const = default;
};

}  // namespace drivewatch::config
