// SPDX-License-Identifier: Apache-2.0
// What the read latency probes tell the power draw probe about a drive's
// load (probes/latency/drive_load.h): the readers of one drive added up,
// and a load that goes with its reader.
#include "probes/latency/drive_load.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>

#include "tests/common/fake_clock.h"

namespace drivewatch {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(DriveLoadBoardTest, AddsUpTheReadersOfOneDrive) {
  testing::FakeClock clock;
  DriveLoadBoard board([&] { return clock.Now(); });
  EXPECT_EQ(board.State("SN").readers, 0);
  auto a = board.Observe("SN");
  auto b = board.Observe("SN");
  auto other = board.Observe("OTHER");
  EXPECT_EQ(board.State("SN").readers, 2);
  EXPECT_EQ(board.State("SN").rate, 0u);

  const auto t0 = clock.Now();
  a->LoadStarted(10, t0);
  EXPECT_EQ(board.State("SN").rate, 10u);
  EXPECT_EQ(board.State("SN").since, t0);
  b->LoadStarted(10, t0 + milliseconds(3));
  EXPECT_EQ(board.State("SN").rate, 20u);  // two namespaces: 20 IOPS
  EXPECT_EQ(board.State("SN").since, t0 + milliseconds(3));
  a->ReadIssued();
  b->ReadIssued();
  other->ReadIssued();
  EXPECT_EQ(board.State("SN").reads, 2u);
  EXPECT_EQ(board.State("OTHER").reads, 1u);

  // Repeating a stop, or restarting at the same total, keeps `since`.
  b->LoadStopped(t0 + seconds(1));
  b->LoadStopped(t0 + seconds(2));
  EXPECT_EQ(board.State("SN").rate, 10u);
  EXPECT_EQ(board.State("SN").since, t0 + seconds(1));

  clock.Advance(seconds(5));
  a.reset();  // the target stopped: its load goes with it
  EXPECT_EQ(board.State("SN").rate, 0u);
  EXPECT_EQ(board.State("SN").since, clock.Now());
  EXPECT_EQ(board.State("SN").readers, 1);
  EXPECT_EQ(board.State("SN").reads, 2u);  // kept: compared with the drive's
}

}  // namespace
}  // namespace drivewatch
