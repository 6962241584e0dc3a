// SPDX-License-Identifier: Apache-2.0
#include "probes/latency/pacing.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>

namespace drivewatch {

Pacer::Pacer(double rate, ArrivalProcess process, TimePoint start,
             std::uint64_t seed)
    : rate_(rate),
      process_(process),
      mean_(std::chrono::duration_cast<Duration>(
          std::chrono::duration<double>(1.0 / rate))),
      start_(start),
      next_(start),
      rng_(seed),
      exp_(1.0) {}

Pacer::Duration Pacer::Gap() {
  return std::chrono::duration_cast<Duration>(
      std::chrono::duration<double>(exp_(rng_) / rate_));
}

std::uint64_t Pacer::Advance(TimePoint now) {
  std::uint64_t skipped = 0;
  for (;;) {
    if (process_ == ArrivalProcess::kFixed) {
      ++arrivals_;
      // Multiplying, not adding, keeps rounding from accumulating.
      next_ = start_ + std::chrono::duration_cast<Duration>(
                           std::chrono::duration<double>(
                               static_cast<double>(arrivals_) / rate_));
    } else {
      next_ += Gap();
    }
    if (now - next_ <= mean_) return skipped;
    ++skipped;
  }
}

bool SleepUntil(std::chrono::steady_clock::time_point deadline,
                const std::stop_token& stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  // True only when stopped: the wait ends at the deadline otherwise.
  return !cv.wait_until(lock, stop, deadline, [] { return false; }) &&
         !stop.stop_requested();
}

}  // namespace drivewatch
