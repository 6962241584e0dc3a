// SPDX-License-Identifier: Apache-2.0
// DrivePacing: a drive's rate dealt round-robin over its namespaces, and
// the turns of the rates on the drive's clock.
#include "probes/latency/drive_pacing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace drivewatch {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(DrivePacingTest, MembersAreNumberedInJoiningOrderAndRenumberedOnLeave) {
  DrivePacing p(Clock::time_point{});
  int a = 0, b = 0, c = 0;  // only their addresses name the members
  EXPECT_EQ(p.ShareOf(&a).count, 1u);  // not joined: alone
  p.Join(&a);
  p.Join(&b);
  p.Join(&b);  // twice: once
  p.Join(&c);
  EXPECT_EQ(p.ShareOf(&b).index, 1u);
  EXPECT_EQ(p.ShareOf(&c).count, 3u);
  const auto g = p.ShareOf(&c).generation;
  p.Leave(&a);
  EXPECT_NE(p.ShareOf(&c).generation, g);
  EXPECT_EQ(p.ShareOf(&b).index, 0u);
  EXPECT_EQ(p.ShareOf(&c).index, 1u);
  EXPECT_EQ(p.ShareOf(&c).count, 2u);
}

TEST(DrivePacingTest, TurnsAndIdlePeriodCountFromTheEpoch) {
  const Clock::time_point epoch{100s};
  // Rates 10, 100 for 60 s each, then 30 s idle: a 150 s cycle.
  Turn t = TurnAt(epoch, 2, 60s, 30s, epoch + 10s);
  EXPECT_FALSE(t.idle);
  EXPECT_EQ(t.rate_index, 0u);
  EXPECT_EQ(t.start, epoch);
  EXPECT_EQ(t.end, epoch + 60s);
  t = TurnAt(epoch, 2, 60s, 30s, epoch + 60s);
  EXPECT_EQ(t.rate_index, 1u);
  EXPECT_EQ(t.end, epoch + 120s);
  t = TurnAt(epoch, 2, 60s, 30s, epoch + 149s);
  EXPECT_TRUE(t.idle);
  EXPECT_EQ(t.start, epoch + 120s);
  EXPECT_EQ(t.end, epoch + 150s);
  t = TurnAt(epoch, 2, 60s, 30s, epoch + 3 * 150s + 61s);
  EXPECT_EQ(t.rate_index, 1u);
  EXPECT_EQ(t.start, epoch + 3 * 150s + 60s);
  t = TurnAt(epoch, 2, 60s, 0s, epoch + 130s);  // no idle period
  EXPECT_EQ(t.rate_index, 0u);
  EXPECT_EQ(t.start, epoch + 120s);
}

// Two members' fixed arrivals interleave into the drive's schedule
// start + k / rate, each taking every other one.
TEST(DrivePacingTest, SharesInterleaveIntoTheDrivesSchedule) {
  const Clock::time_point start{10s};
  const double rate = 10;
  std::vector<Clock::time_point> all;
  for (std::size_t i = 0; i < 2; ++i) {
    const DrivePacing::Share share{i, 2, 0};
    Clock::time_point at = FirstShareArrival(start, rate, share, start);
    for (int k = 0; k < 5; ++k) {
      all.push_back(at);
      at += 200ms;  // rate / 2 each
    }
  }
  std::sort(all.begin(), all.end());
  for (std::size_t k = 0; k < all.size(); ++k) {
    EXPECT_NEAR(std::chrono::duration<double>(all[k] - start).count(), 0.1 * k, 1e-6) << k;
  }
  // Joining mid-turn: the next slot of its own at or after now (member 1
  // of 2 has 0.1 s, 0.3 s, 0.5 s, ...).
  const auto late = FirstShareArrival(start, rate, {1, 2, 0}, start + 450ms);
  EXPECT_NEAR(std::chrono::duration<double>(late - start).count(), 0.5, 1e-6);
}

// The load board adds the members' parts up to the drive's rate.
TEST(DrivePacingTest, PartsOfTheRateAddUpToIt) {
  for (std::uint32_t rate : {10u, 100u, 7u}) {
    for (std::size_t n = 1; n <= 4; ++n) {
      std::uint32_t sum = 0;
      for (std::size_t i = 0; i < n; ++i) sum += ShareRate(rate, {i, n, 0});
      EXPECT_EQ(sum, rate) << rate << " over " << n;
    }
  }
  EXPECT_EQ(ShareRate(10, {0, 3, 0}), 4u);
  EXPECT_EQ(ShareRate(10, {2, 3, 0}), 3u);
}

}  // namespace
}  // namespace drivewatch
