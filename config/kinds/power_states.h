// SPDX-License-Identifier: Apache-2.0
// The power-states kind (its story: aging/phases/power_states_phase.cc).
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "config/kinds/phase_key.h"

namespace drivewatch::config {

// power-states' keys (docs/aging.md "power-states").
inline constexpr PhaseKey kDwellKey{
    .name = "dwell", .type = PhaseKeyType::kDuration, .min = 100, .max = 3'600'000,
    .doc = "How long the drive stays in each power state while its power is measured; "
           "also the idle and 10-IOPS power windows."};
inline constexpr PhaseKey kExitSamplesKey{
    .name = "exit_samples", .type = PhaseKeyType::kInteger, .min = 1, .max = 1000,
    .doc = "How many timed 4 KiB reads measure each power state's exit latency."};
inline constexpr PhaseKey kSettleKey{
    .name = "settle", .type = PhaseKeyType::kDuration, .min = 1, .max = 3'600'000,
    .doc = "How long to wait after entering a power state before each timed read, so "
           "the drive is in it (at least its ENLAT)."};


// power-states: enters each power state the drive lists (Set Features 02h,
// APST off for the while), measures its power and its exit latency, then
// power at idle and at 10 IOPS. It writes no data but changes the drive's
// power settings (restored after, and by recovery after a crash), so it
// runs only on a block device target, which names the drive's serial.
struct PowerStatesParams {
  static constexpr std::string_view kName = "power-states";
  static constexpr bool kWrites = false;
  static constexpr bool kChangesPowerState = true;
  std::chrono::milliseconds dwell{10'000};
  std::uint32_t exit_samples = 20;
  std::chrono::milliseconds settle{1'000};

  template <class Self, class F>
  static void Keys(Self& p, F&& f) {
    f(kDwellKey, p.dwell);
    f(kExitSamplesKey, p.exit_samples);
    f(kSettleKey, p.settle);
  }
  bool operator==(const PowerStatesParams&) const = default;
};

}  // namespace drivewatch::config
