// SPDX-License-Identifier: Apache-2.0
#include "aging/phases/steady_state.h"

#include <algorithm>
#include <cmath>

namespace drivewatch::aging {

std::optional<SteadyStateWindow> CheckSteadyState(std::span<const double> rounds) {
  if (rounds.size() < kSteadyStateWindow) return std::nullopt;
  const std::span<const double> y = rounds.last(kSteadyStateWindow);
  SteadyStateWindow w;
  w.first = rounds.size() - kSteadyStateWindow;
  const auto [lo, hi] = std::minmax_element(y.begin(), y.end());
  w.min = *lo;
  w.max = *hi;
  w.range = w.max - w.min;
  double sum = 0;
  for (double v : y) sum += v;
  const double n = static_cast<double>(y.size());
  w.average = sum / n;
  // Rounds are evenly spaced, x = 0 .. n-1: slope = Σ(x - x̄)(y - ȳ) / Σ(x - x̄)².
  const double x_mean = (n - 1) / 2;
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double dx = static_cast<double>(i) - x_mean;
    sxy += dx * (y[i] - w.average);
    sxx += dx * dx;
  }
  w.slope = sxy / sxx;
  w.excursion = std::fabs(w.slope) * (n - 1);
  const bool finite = std::all_of(y.begin(), y.end(), [](double v) { return std::isfinite(v); });
  w.steady = finite && w.average > 0 && w.range <= kMaxDataExcursion * w.average &&
             w.excursion <= kMaxSlopeExcursion * w.average;
  return w;
}

}  // namespace drivewatch::aging
