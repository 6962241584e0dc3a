// SPDX-License-Identifier: Apache-2.0
#include "aging/phases/slc_cache.h"

#include <algorithm>
#include <numeric>

namespace drivewatch::aging {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double upper = v[mid];
  const double lower = *std::max_element(v.begin(), v.begin() + mid);
  return (lower + upper) / 2;
}

std::vector<double> CentredMedian(const std::vector<double>& x,
                                  std::size_t width) {
  std::vector<double> m(x.size());
  const std::size_t half = width / 2;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t lo = i >= half ? i - half : 0;
    const std::size_t hi = std::min(x.size(), i + (width - half));
    m[i] = Median(std::vector<double>(x.begin() + lo, x.begin() + hi));
  }
  return m;
}

}  // namespace

SlcDetection DetectSlcCache(const std::vector<double>& x,
                            const SlcDetectionParams& params) {
  SlcDetection out;
  const double total = std::accumulate(x.begin(), x.end(), 0.0);
  out.cache_bytes = total;
  out.seconds_to_exhaust = static_cast<double>(x.size());
  if (x.empty()) return out;
  const auto width =
      static_cast<std::size_t>(std::max<long long>(1, params.median_window.count()));
  const auto sustain =
      static_cast<std::size_t>(std::max<long long>(1, params.sustain.count()));
  const std::vector<double> m = CentredMedian(x, width);

  const std::size_t search = std::min<std::size_t>(
      x.size(), static_cast<std::size_t>(std::max<long long>(1, params.plateau_search.count())));
  out.plateau_bytes_per_second = *std::max_element(m.begin(), m.begin() + search);
  out.before_bytes_per_second = total / static_cast<double>(x.size());
  const double threshold = params.drop_fraction * out.plateau_bytes_per_second;

  // The first i (after the plateau's own peak) with m below the threshold
  // for `sustain` samples in a row.
  const std::size_t peak = static_cast<std::size_t>(
      std::max_element(m.begin(), m.begin() + search) - m.begin());
  std::size_t run = 0;
  std::size_t drop = x.size();
  for (std::size_t i = peak; i < m.size(); ++i) {
    run = m[i] < threshold ? run + 1 : 0;
    if (run == sustain) {
      drop = i + 1 - sustain;
      break;
    }
  }
  if (drop == x.size() || drop == 0) return out;

  const double after = Median(std::vector<double>(x.begin() + drop, x.end()));
  double before = 0;
  {
    // The level before the drop, leaving out the boundary second and the
    // first (ramp-up) second when there is more to go on.
    const std::size_t lo = drop > 3 ? 1 : 0;
    const std::size_t hi = drop > 2 ? drop - 1 : drop;
    before = std::accumulate(x.begin() + lo, x.begin() + hi, 0.0) /
             static_cast<double>(hi - lo);
  }
  // Seconds drop-1 and drop hold the boundary: split their bytes into time
  // at `before` and time at `after`.
  const std::size_t first = drop - 1;
  const double boundary_bytes = x[first] + x[drop];
  double fast_seconds = 1;
  if (before > after) {
    fast_seconds = std::clamp((boundary_bytes - 2 * after) / (before - after),
                              0.0, 2.0);
  }
  out.exhausted = true;
  out.drop_index = drop;
  out.before_bytes_per_second = before;
  out.after_bytes_per_second = after;
  out.cache_bytes = std::accumulate(x.begin(), x.begin() + first, 0.0) +
                    fast_seconds * before;
  out.seconds_to_exhaust = static_cast<double>(first) + fast_seconds;
  return out;
}

}  // namespace drivewatch::aging
