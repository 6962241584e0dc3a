// SPDX-License-Identifier: Apache-2.0
// The read latency probe's idle-gap classes (the `idle_gap` label): how
// long the target sat without a read before one (docs/read-latency.md).
#include <chrono>

#include "probes/latency/read_latency_probe.h"

namespace drivewatch {

IdleGap ClassifyIdleGap(std::chrono::nanoseconds gap) {
  using namespace std::chrono_literals;
  if (gap < 1ms) return IdleGap::kUnder1ms;
  if (gap < 10ms) return IdleGap::k1to10ms;
  if (gap < 100ms) return IdleGap::k10to100ms;
  if (gap < 1s) return IdleGap::k100msTo1s;
  if (gap < 10s) return IdleGap::k1to10s;
  return IdleGap::kOver10s;
}

const char* IdleGapName(IdleGap gap) {
  static constexpr const char* kNames[] = {"0-1ms",    "1-10ms", "10-100ms",
                                           "100ms-1s", "1-10s",  "10s+"};
  return kNames[static_cast<int>(gap)];
}

}  // namespace drivewatch
