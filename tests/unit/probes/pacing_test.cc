// SPDX-License-Identifier: Apache-2.0
// Arrival pacing (probes/latency/pacing.h), on a clock the test moves:
// fixed arrivals on an absolute schedule, missed ones skipped rather than
// burst, Poisson gaps with the configured mean; and SleepUntil.
#include "probes/latency/pacing.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <stop_token>
#include <thread>
#include <vector>

namespace drivewatch {
namespace {

using namespace std::chrono_literals;

TEST(PacerTest, FixedArrivalsKeepAnAbsoluteSchedule) {
  const auto t0 = Pacer::TimePoint(5h);
  Pacer p(100, ArrivalProcess::kFixed, t0);
  auto now = t0;
  for (int i = 1; i <= 100'000; ++i) {
    // Issue a little late each time; the schedule must not drift.
    now = p.next() + 300us;
    ASSERT_EQ(p.Advance(now), 0u);
  }
  EXPECT_EQ(p.next(), t0 + 1000s);
}

TEST(PacerTest, SlowReadsSkipMissedArrivalsInsteadOfBursting) {
  const auto t0 = Pacer::TimePoint(5h);
  Pacer p(10, ArrivalProcess::kFixed, t0);
  // The read due at t0 took 450 ms: the arrivals at 100, 200 and 300 ms
  // are more than one interval late and skipped; 400 ms is issued late.
  EXPECT_EQ(p.Advance(t0 + 450ms), 3u);
  EXPECT_EQ(p.next(), t0 + 400ms);
  EXPECT_EQ(p.Advance(t0 + 460ms), 0u);
  EXPECT_EQ(p.next(), t0 + 500ms);
}

TEST(PacerTest, PoissonArrivalsHaveTheConfiguredMeanAndSpread) {
  const auto t0 = Pacer::TimePoint(5h);
  Pacer p(10, ArrivalProcess::kPoisson, t0, 42);
  const int n = 200'000;
  int under_10ms = 0, over_300ms = 0;
  auto prev = p.next();
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(p.Advance(prev), 0u);
    const auto gap = p.next() - prev;
    under_10ms += gap < 10ms;
    over_300ms += gap > 300ms;
    prev = p.next();
  }
  const double mean = std::chrono::duration<double>(prev - t0).count() / n;
  EXPECT_NEAR(mean, 0.1, 0.001);
  // Exponential: P(gap < 10 ms) = 1 - e^-0.1 = 9.5%, P(> 300 ms) = e^-3 = 5%.
  EXPECT_NEAR(under_10ms / double(n), 0.0952, 0.005);
  EXPECT_NEAR(over_300ms / double(n), 0.0498, 0.005);
}

// SleepUntil waits on a condition variable the stop request notifies: a
// stop ends a wait of an hour at once, and a deadline already past does
// not wait. Neither depends on how fast the machine is.
TEST(SleepUntilTest, AStopEndsTheWaitAndAPastDeadlineDoesNotWait) {
  std::stop_source stop;
  std::thread stopper([&] { stop.request_stop(); });
  EXPECT_FALSE(SleepUntil(std::chrono::steady_clock::now() + 1h, stop.get_token()));
  stopper.join();
  std::stop_source never;
  EXPECT_TRUE(SleepUntil(std::chrono::steady_clock::now() - 1s, never.get_token()));
  EXPECT_FALSE(SleepUntil(std::chrono::steady_clock::now() - 1s, stop.get_token()));
}

}  // namespace
}  // namespace drivewatch
