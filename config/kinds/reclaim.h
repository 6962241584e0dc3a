// SPDX-License-Identifier: Apache-2.0
// The reclaim kind (its story: aging/phases/reclaim_phase.cc).
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>
#include <vector>

#include "config/kinds/phase_key.h"

namespace drivewatch::config {

inline constexpr PhaseKey kReclaimIdleKey{
    .name = "reclaim_idle", .type = PhaseKeyType::kDurationList, .min = 1'000,
    .max = 86'400'000,
    .doc = "The idle times tried in turn."};
inline constexpr PhaseKey kReclaimWriteKey{
    .name = "reclaim_write", .type = PhaseKeyType::kDuration, .min = 1'000, .max = 86'400'000,
    .doc = "How long to write after each idle time."};

// reclaim: idle for each reclaim_idle, then write for reclaim_write, to see
// how much SLC cache the drive frees while idle.
struct ReclaimParams {
  static constexpr std::string_view kName = "reclaim";
  static constexpr bool kWrites = true;
  std::uint32_t block_size = 128 * 1024;
  std::uint32_t queue_depth = 32;
  double slc_drop_fraction = 0.6;
  std::chrono::milliseconds slc_sustain{10'000};
  std::chrono::milliseconds slc_median_window{5'000};
  std::vector<std::chrono::milliseconds> reclaim_idle{
      std::chrono::milliseconds{60'000}, std::chrono::milliseconds{120'000},
      std::chrono::milliseconds{180'000}, std::chrono::milliseconds{240'000}};
  std::chrono::milliseconds reclaim_write{60'000};

  template <class Self, class F>
  static void Keys(Self& p, F&& f) {
    f(kBlockSizeKey, p.block_size);
    f(kQueueDepthKey, p.queue_depth);
    f(kSlcDropFractionKey, p.slc_drop_fraction);
    f(kSlcSustainKey, p.slc_sustain);
    f(kSlcMedianWindowKey, p.slc_median_window);
    f(kReclaimIdleKey, p.reclaim_idle);
    f(kReclaimWriteKey, p.reclaim_write);
  }
  bool operator==(const ReclaimParams&) const = default;
};

}  // namespace drivewatch::config
