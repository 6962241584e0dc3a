// SPDX-License-Identifier: Apache-2.0
// The seam between the read latency probe and the power draw probe, with
// real io_uring reads on a file: the probe's rate turns, idle turns and
// pauses, and every read it issues, arrive on the DriveLoadBoard the power
// draw probe reads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>

#include "probes/latency/drive_load.h"
#include "probes/latency/read_latency_probe.h"

namespace drivewatch {
namespace {

using namespace std::chrono_literals;

TEST(DriveLoadIntegrationTest, RateTurnsIdleTurnsAndReadsReachTheBoard) {
  char name[] = "/var/tmp/dw-load-test.XXXXXX";
  const std::string dir = ::mkdtemp(name);
  ReadTarget target;
  target.kind = ReadTarget::Kind::kFile;
  target.labels = {{"target", "load"}};
  target.path = dir;
  target.file_name = "drivewatch-load.dat";
  target.file_size = 4 << 20;
  ReadLatencySettings settings;
  settings.rates = {10, 50};
  settings.rate_period = 1s;
  settings.idle_period = 1s;
  settings.windows = {std::chrono::minutes(1)};
  settings.window_names = {"1m"};

  DriveLoadBoard board;
  ReadLatencyProbe probe(target, settings);
  probe.SetLoadObserver(board.Observe("SN"));
  EXPECT_EQ(board.State("SN").readers, 1);

  std::set<std::uint32_t> seen;
  bool paused_was_idle = false;
  {
    std::jthread t([&](std::stop_token stop) { probe.Run(stop); });
    const auto end = std::chrono::steady_clock::now() + 3500ms;
    while (std::chrono::steady_clock::now() < end) {
      seen.insert(board.State("SN").rate);
      std::this_thread::sleep_for(20ms);
    }
    probe.Pause();
    std::this_thread::sleep_for(300ms);  // a read in flight lands
    paused_was_idle = board.State("SN").rate == 0;
    probe.Resume();
  }
  EXPECT_EQ(seen, (std::set<std::uint32_t>{0, 10, 50}));
  EXPECT_TRUE(paused_was_idle);
  const DriveLoadState after = board.State("SN");
  EXPECT_EQ(after.rate, 0u);  // stopped
  const auto stats = probe.stats();
  EXPECT_GT(stats.reads, 40u);
  EXPECT_EQ(after.reads, stats.reads + stats.errors + stats.timeouts);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace drivewatch
