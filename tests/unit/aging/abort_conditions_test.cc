// SPDX-License-Identifier: Apache-2.0
// When a heavy phase stops early (aging/runner/abort_conditions.h): past
// max_duration, on a critical warning that was clear at the start, within
// the margin of WCTEMP or TMT1, and after three failed health reads in a
// row, each with the reason the run records.
#include "aging/runner/abort_conditions.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace drivewatch::aging {
namespace {

using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

// Fake: a drive's temperature and warnings, and failed reads, scripted,
// because no real part (a file, a loop device, QEMU's fixed 323 K) heats
// up or fails on cue. Each Read takes the next; the last one repeats.
class ScriptedHealth : public HealthSource {
 public:
  explicit ScriptedHealth(std::vector<Expected<HealthReading>> readings)
      : readings_(std::move(readings)) {}
  Expected<HealthReading> Read() override {
    const std::size_t i = std::min(next_++, readings_.size() - 1);
    return readings_[i];
  }

 private:
  std::vector<Expected<HealthReading>> readings_;
  std::size_t next_ = 0;
};

HealthReading Reading(std::uint16_t composite_k, std::uint8_t warning = 0,
                      std::uint16_t wctemp_k = 343, std::uint16_t tmt1_k = 0) {
  return HealthReading{composite_k, warning, wctemp_k, tmt1_k};
}

const Clock::time_point kStart{seconds{1000}};

AbortConditions With(std::vector<Expected<HealthReading>> readings, double margin_k = 5) {
  return AbortConditions(std::make_unique<ScriptedHealth>(std::move(readings)), margin_k,
                         seconds{60}, kStart);
}

TEST(AbortConditionsTest, MaxDurationAloneWithoutAHealthSource) {
  AbortConditions a(nullptr, 5, seconds{2}, kStart);
  ASSERT_TRUE(a.Start());
  EXPECT_EQ(a.Check(kStart + seconds{2}), std::nullopt);
  EXPECT_EQ(a.Check(kStart + seconds{3}), "max_duration 2s exceeded");
  EXPECT_FALSE(a.last());
}

TEST(AbortConditionsTest, OnlyAWarningNewSinceTheStartAborts) {
  // Spare below threshold (bit 0) was already set; then media read-only (bit 3).
  AbortConditions a = With({Reading(320, 0x01), Reading(320, 0x01), Reading(320, 0x09)});
  ASSERT_TRUE(a.Start());
  EXPECT_EQ(a.Check(kStart), std::nullopt);
  EXPECT_EQ(a.Check(kStart), "critical warning 0x09 set (was 0x01 at the start)");
}

TEST(AbortConditionsTest, WithinTheMarginOfWctempAborts) {
  AbortConditions a = With({Reading(320), Reading(337), Reading(338)});
  ASSERT_TRUE(a.Start());
  EXPECT_EQ(a.Check(kStart), std::nullopt);  // 337 + 5 < 343
  EXPECT_EQ(a.Check(kStart),
            "composite temperature 338 K (65 \u00b0C) is within 5 K of WCTEMP 343 K (70 \u00b0C)");
  ASSERT_TRUE(a.last());
  EXPECT_EQ(a.last()->composite_k, 338);
}

TEST(AbortConditionsTest, Tmt1CountsWhenHostThermalManagementIsOn) {
  AbortConditions a = With({Reading(320, 0, 0, 330), Reading(326, 0, 0, 330)}, 4);
  ASSERT_TRUE(a.Start());
  EXPECT_EQ(a.Check(kStart),
            "composite temperature 326 K (53 \u00b0C) is within 4 K of TMT1 330 K (57 \u00b0C)");
}

TEST(AbortConditionsTest, NoLimitsOrNoTemperatureNeverAbort) {
  AbortConditions a = With({Reading(400, 0, 0, 0), Reading(0, 0, 343, 0)});
  ASSERT_TRUE(a.Start());
  EXPECT_EQ(a.Check(kStart), std::nullopt);  // the drive reports no WCTEMP
  EXPECT_EQ(a.Check(kStart), std::nullopt);  // nor a temperature
}

TEST(AbortConditionsTest, ThreeFailedReadsInARowAbortFewerDoNot) {
  const Error busy{EBUSY, -1, "/dev/nvme0n1: SMART / Health: Device or resource busy"};
  AbortConditions a = With({Reading(320), busy, busy, Reading(320), busy, busy, busy});
  ASSERT_TRUE(a.Start());
  EXPECT_EQ(a.Check(kStart), std::nullopt);
  EXPECT_EQ(a.Check(kStart), std::nullopt);
  EXPECT_EQ(a.Check(kStart), std::nullopt);  // a good read starts the count over
  EXPECT_EQ(a.Check(kStart), std::nullopt);
  EXPECT_EQ(a.Check(kStart), std::nullopt);
  EXPECT_EQ(a.Check(kStart),
            "the drive's health could not be read 3 times in a row: /dev/nvme0n1: SMART / "
            "Health: Device or resource busy");
}

TEST(AbortConditionsTest, AFailedFirstReadFailsTheStart) {
  AbortConditions a = With({Error{EIO, -1, "/dev/nvme0n1: Identify: Input/output error"}});
  const Status s = a.Start();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "/dev/nvme0n1: Identify: Input/output error");
}

}  // namespace
}  // namespace drivewatch::aging
