// SPDX-License-Identifier: Apache-2.0
// A clock the test moves by hand. A fake because the scheduler's behaviour
// over minutes and months cannot be shown with the real clock in a unit test.
#pragma once

#include <chrono>

#include "exporter/clock.h"

namespace drivewatch::testing {

class FakeClock : public Clock {
 public:
  Monotonic::time_point Now() const override { return mono_; }
  std::chrono::system_clock::time_point WallNow() const override { return wall_; }
  void Advance(std::chrono::nanoseconds d) {
    mono_ += std::chrono::duration_cast<Monotonic::duration>(d);
    wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
  }

 private:
  // Arbitrary fixed origins keep golden output stable.
  Monotonic::time_point mono_{std::chrono::hours(1000)};
  std::chrono::system_clock::time_point wall_{std::chrono::seconds(1'767'225'600)};  // 2026-01-01
};

}  // namespace drivewatch::testing
