// SPDX-License-Identifier: Apache-2.0
// External power meters (probes/power_meter.h), with real files and real
// processes: a hwmon power input in microwatts, a command printing watts,
// their failures named, and a slow command killed with its children.
#include "probes/power_meter.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "tests/common/scratch_dir.h"

namespace drivewatch {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class PowerMeterTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    const auto path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }
  const testing::ScratchDir scratch_{"meter"};
  const std::filesystem::path dir_ = scratch_.path();
};

TEST_F(PowerMeterTest, HwmonMicrowatts) {
  const auto w = ReadPowerMeter({Write("power1_input", "3300\n"), {}, {}});
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_DOUBLE_EQ(*w, 0.0033);
  const auto bad = ReadPowerMeter({Write("power2_input", "-5\n"), {}, {}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "meter hwmon \"" + (dir_ / "power2_input").string() +
                "\": read \"-5\", expected a non-negative integer of "
                "microwatts");
  const auto missing = ReadPowerMeter({(dir_ / "nope").string(), {}, {}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().errnum, ENOENT);
}

TEST_F(PowerMeterTest, CommandPrintsWatts) {
  const auto w = ReadPowerMeter({{}, {"/bin/echo", " 1.20 "}, milliseconds(5000)});
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_DOUBLE_EQ(*w, 1.2);
}

TEST_F(PowerMeterTest, CommandFailures) {
  const auto status = ReadPowerMeter({{}, {"/bin/false"}, milliseconds(5000)});
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message,
            "meter command \"/bin/false\": exit status 1, expected 0");
  const auto text = ReadPowerMeter({{}, {"/bin/echo", "12 W"}, milliseconds(5000)});
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().message,
            "meter command \"/bin/echo\": printed \"12 W\", expected one "
            "non-negative number of watts");
  const auto missing =
      ReadPowerMeter({{}, {(dir_ / "no-such-program").string()}, milliseconds(5000)});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().errnum, ENOENT);
}

TEST_F(PowerMeterTest, SlowCommandIsKilledAtItsTimeoutWithItsChildren) {
  // The shell starts a child that would outlive it; the process group kill
  // takes both, so the pipe closes and nothing is left running.
  const std::string pidfile = (dir_ / "child.pid").string();
  const auto start = std::chrono::steady_clock::now();
  const auto w = ReadPowerMeter(
      {{}, {"/bin/sh", "-c", "sleep 30 & echo $! > " + pidfile + "; wait"},
       milliseconds(300)});
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().errnum, ETIMEDOUT);
  EXPECT_EQ(w.error().message,
            "meter command \"/bin/sh\": timed out after 300ms, killed");
  // Killed at the timeout, not after the sleep's 30 s: the bound leaves a
  // loaded machine all the room it needs.
  EXPECT_LT(took, seconds(20));
  std::ifstream in(pidfile);
  pid_t child = 0;
  ASSERT_TRUE(in >> child);
  // A killed child of the shell is reparented and reaped by init; in a
  // container without a reaping init it may linger as a zombie, which
  // kill(pid, 0) still finds. Accept a zombie, not a live sleeper; wait
  // for one or the other as long as a loaded machine needs, and fail
  // only when the sleeper is still running well past its kill.
  std::string state = "R";
  for (int i = 0; i < 2000; ++i) {
    if (::kill(child, 0) != 0) {
      state = "gone";
      break;
    }
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string pid, comm;
    stat >> pid >> comm >> state;
    if (state == "Z") break;
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_TRUE(state == "gone" || state == "Z") << "the meter command's child is still running";
}

TEST(ParseWattsTest, AcceptsPlainNumbersOnly) {
  EXPECT_DOUBLE_EQ(*ParseWatts("0\n", "m"), 0.0);
  EXPECT_DOUBLE_EQ(*ParseWatts("\t2.5e-3\n", "m"), 0.0025);
  for (const char* bad : {"", "\n", "-1", "nan", "inf", "0x10", "1.5W", "1 2"}) {
    EXPECT_FALSE(ParseWatts(bad, "m").ok()) << bad;
  }
}

}  // namespace
}  // namespace drivewatch
