// SPDX-License-Identifier: Apache-2.0
// Steady state as the SNIA Solid State Storage Performance Test
// Specification defines it (SSS PTS 2.0.2, §2.1.24): over the measurement
// window, the last five rounds of the tracked variable y (a cell's IOPS, or
// its throughput for sequential cells),
//   a) Range(y): max(y) - min(y) is at most 20% of Ave(y), and
//   b) Slope(y): the excursion of the least-squares line through the
//      window's rounds, its value at the window's last round minus its value
//      at the first (in absolute value), is at most 10% of Ave(y).
// A pure function of the rounds so far, used after each round
// (aging/phases/perf_phase.cc): a series is steady once its last five are.
#pragma once

#include <cstddef>
#include <optional>
#include <span>

namespace drivewatch::aging {

// The measurement window, in rounds.
inline constexpr std::size_t kSteadyStateWindow = 5;
// Range(y) at most this fraction of Ave(y).
inline constexpr double kMaxDataExcursion = 0.20;
// The best-fit line's excursion at most this fraction of Ave(y).
inline constexpr double kMaxSlopeExcursion = 0.10;

// The window's figures, as the PTS reports them.
struct SteadyStateWindow {
  std::size_t first = 0;  // index in the series of the window's first round
  double average = 0;
  double min = 0;
  double max = 0;
  double range = 0;      // max - min
  double slope = 0;      // of the least-squares line, per round
  double excursion = 0;  // |slope| x (window - 1): the line's rise across the window
  bool steady = false;   // both limits hold, and the average is above zero
};

// The last kSteadyStateWindow values of `rounds`, judged; nullopt while
// there are fewer. A window whose average is not above zero (nothing was
// measured), or that holds a value that is not finite, is never steady:
// limits relative to a zero average say nothing.
std::optional<SteadyStateWindow> CheckSteadyState(std::span<const double> rounds);

}  // namespace drivewatch::aging
