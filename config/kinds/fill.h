// SPDX-License-Identifier: Apache-2.0
// The fill kind: its parameters and keys (its story: aging/phases/fill_phase.cc).
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "config/kinds/phase_key.h"

namespace drivewatch::config {

// fill: a sequential fill from an empty drive, measuring the SLC cache.
struct FillParams {
  static constexpr std::string_view kName = "fill";
  static constexpr bool kWrites = true;
  std::uint32_t block_size = 128 * 1024;
  std::uint32_t queue_depth = 32;
  double fill_percent = 50;  // up to here
  double slc_drop_fraction = 0.6;
  std::chrono::milliseconds slc_sustain{10'000};
  std::chrono::milliseconds slc_median_window{5'000};

  template <class Self, class F>
  static void Keys(Self& p, F&& f) {
    f(kBlockSizeKey, p.block_size);
    f(kQueueDepthKey, p.queue_depth);
    f(kFillPercentKey, p.fill_percent);
    f(kSlcDropFractionKey, p.slc_drop_fraction);
    f(kSlcSustainKey, p.slc_sustain);
    f(kSlcMedianWindowKey, p.slc_median_window);
  }
  bool operator==(const FillParams&) const = default;
};

}  // namespace drivewatch::config
