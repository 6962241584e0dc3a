// SPDX-License-Identifier: Apache-2.0
// What the read latency probe's reads (read_latency_probe.cc) and its
// metrics (read_latency_metrics.cc) share: the exported bucket bounds and
// what is counted for each rate.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <vector>

#include "probes/latency/read_latency_probe.h"

namespace drivewatch {
namespace read_latency_detail {

// Exported bucket bounds: 1-2-5 steps from 10 us to 10 s, so alerts can
// name round thresholds (le="0.005").
inline constexpr double kBounds[] = {10e-6, 20e-6, 50e-6, 100e-6, 200e-6, 500e-6,
                                     1e-3,  2e-3,  5e-3,  10e-3,  20e-3,  50e-3,
                                     100e-3, 200e-3, 500e-3, 1,    2,     5,
                                     10};
inline constexpr std::size_t kNumBounds = std::size(kBounds);

}  // namespace read_latency_detail

struct ReadLatencyProbe::RateState {
  RateState(const std::vector<std::chrono::milliseconds>& windows, TimePoint start)
      : windows(windows, start) {}
  LatencyHistogram lifetime;
  std::array<std::uint64_t, read_latency_detail::kNumBounds> exported{};  // non-cumulative
  std::uint64_t exported_count = 0;  // including timeouts (+Inf)
  double exported_sum = 0;
  LatencyWindows windows;
  std::uint64_t skipped = 0;
};

}  // namespace drivewatch
