// SPDX-License-Identifier: Apache-2.0
#include "probes/pacing.h"

#include <time.h>

#include <algorithm>
#include <cerrno>

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
  using Clock = std::chrono::steady_clock;
  constexpr auto kStopCheck = std::chrono::milliseconds(50);
  for (;;) {
    if (stop.stop_requested()) return false;
    const auto now = Clock::now();
    if (now >= deadline) return true;
    const auto until = std::min(deadline, now + kStopCheck);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        until.time_since_epoch()).count();
    timespec ts{static_cast<time_t>(ns / 1'000'000'000),
                static_cast<long>(ns % 1'000'000'000)};
    // steady_clock is CLOCK_MONOTONIC on Linux (libstdc++).
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) ==
           EINTR) {
    }
  }
}

}  // namespace drivewatch
