// SPDX-License-Identifier: Apache-2.0
// The idle-gap classes of the read latency probe
// (probes/latency/read_latency_idle_gap.cc): lower-inclusive boundaries
// and the `idle_gap` label values.
#include "probes/latency/read_latency_probe.h"

#include <gtest/gtest.h>

#include <chrono>

namespace drivewatch {
namespace {

using namespace std::chrono_literals;

TEST(IdleGapTest, ClassBoundariesAreLowerInclusive) {
  EXPECT_EQ(ClassifyIdleGap(0ns), IdleGap::kUnder1ms);
  EXPECT_EQ(ClassifyIdleGap(999us), IdleGap::kUnder1ms);
  EXPECT_EQ(ClassifyIdleGap(1ms), IdleGap::k1to10ms);
  EXPECT_EQ(ClassifyIdleGap(9999us), IdleGap::k1to10ms);
  EXPECT_EQ(ClassifyIdleGap(10ms), IdleGap::k10to100ms);
  EXPECT_EQ(ClassifyIdleGap(100ms), IdleGap::k100msTo1s);
  EXPECT_EQ(ClassifyIdleGap(1s), IdleGap::k1to10s);
  EXPECT_EQ(ClassifyIdleGap(10s), IdleGap::kOver10s);
  EXPECT_STREQ(IdleGapName(IdleGap::k100msTo1s), "100ms-1s");
  EXPECT_STREQ(IdleGapName(IdleGap::kUnder1ms), "0-1ms");
}

}  // namespace
}  // namespace drivewatch
