// SPDX-License-Identifier: Apache-2.0
// The scheduler's notion of time. The daemon uses the system clocks; tests
// inject a FakeClock and move time by hand.
#pragma once

#include <chrono>

namespace drivewatch {

class Clock {
 public:
  using Monotonic = std::chrono::steady_clock;
  virtual ~Clock() = default;
  // For intervals and deadlines.
  virtual Monotonic::time_point Now() const = 0;
  // For timestamps that leave the process (metrics, state files).
  virtual std::chrono::system_clock::time_point WallNow() const = 0;
};

class SystemClock : public Clock {
 public:
  Monotonic::time_point Now() const override { return Monotonic::now(); }
  std::chrono::system_clock::time_point WallNow() const override {
    return std::chrono::system_clock::now();
  }
};

inline double ToUnixSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

}  // namespace drivewatch
