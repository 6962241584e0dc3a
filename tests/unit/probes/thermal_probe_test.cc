// SPDX-License-Identifier: Apache-2.0
// The thermal probe against a fake Controller answering with the hand-built
// PM981's Identify and SMART bytes and feature values (the same ones
// tests/fixtures/handmade/features-HANDMADE-PM981.txt gives the golden
// test), and the throttle derivation over sequences of polls with a fake
// clock.
#include "probes/thermal_probe.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <map>
#include <string>
#include <vector>

#include "probes/drive/features.h"
#include "probes/drive/identify.h"
#include "probes/drive/smart_log.h"
#include "tests/common/fake_clock.h"
#include "tests/unit/probes/probe_test_util.h"

namespace drivewatch {
namespace {

using std::chrono::seconds;
using testing::FakeController;
using testing::Handmade;
using testing::kHandmadeSerial;
using testing::RecordingSink;
using testing::Sample;

constexpr std::uint32_t kOverComposite = 0x000000;
constexpr std::uint32_t kUnderComposite = 0x100000;
constexpr std::uint32_t kOverSensor1 = 0x010000;
constexpr std::uint32_t kUnderSensor1 = 0x110000;

void PutLe32(Bytes& b, std::size_t offset, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[offset + i] = (v >> (8 * i)) & 0xff;
}

class ThermalProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    id_ = Handmade("id-ctrl-HANDMADE-PM981.bin");
    smart_ = Handmade("smart-log-HANDMADE-PM981.bin");
    ASSERT_EQ(id_.size(), kIdentifySize) << "run make_handmade.py";
    ASSERT_EQ(smart_.size(), kSmartLogSize);
    info_.name = "nvme0";
    info_.device = "/dev/nvme0";
    info_.serial = kHandmadeSerial;
    ctrl_.SetIdentify(kIdentifyCnsController, 0, id_);
    ctrl_.SetLogPage(kSmartLogId, kNsidAll, smart_);
    ctrl_.SetFeatureResult(kFeatureTemperatureThreshold, kOverComposite, 354);
    ctrl_.SetFeatureResult(kFeatureTemperatureThreshold, kUnderComposite, 0);
    ctrl_.SetFeatureResult(kFeatureTemperatureThreshold, kOverSensor1, 358);
    ctrl_.SetFeatureResult(kFeatureTemperatureThreshold, kUnderSensor1, 273);
    ctrl_.SetFeatureResult(kFeatureHostThermalManagement, 0,
                           (346u << 16) | 349u);
  }

  Status Run() {
    sink_.samples.clear();
    return probe_.Run(ctrl_, info_, sink_);
  }

  std::map<std::string, double> Emitted() const {
    std::map<std::string, double> out;
    for (const Sample& s : sink_.samples) {
      EXPECT_TRUE(out.emplace(s.Key(), s.value).second)
          << "duplicate series " << s.Key();
    }
    return out;
  }

  static std::string Key(const std::string& name, Labels labels = {}) {
    labels.emplace_back("serial", kHandmadeSerial);
    return testing::SeriesKey(name, std::move(labels));
  }
  static std::string Threshold(const std::string& which,
                               const std::string& sensor = "") {
    Labels labels = {{"threshold", which}};
    if (!sensor.empty()) labels.emplace_back("sensor", sensor);
    return Key("drivewatch_temperature_threshold_celsius", labels);
  }
  static std::string Supported(const std::string& feature) {
    return Key("drivewatch_feature_supported", {{"feature", feature}});
  }

  testing::FakeClock clock_;
  std::vector<std::string> logged_;
  ThermalProbe probe_{[this] { return clock_.Now(); },
                      [this](std::string_view l) { logged_.emplace_back(l); }};
  FakeController ctrl_;
  ControllerInfo info_;
  RecordingSink sink_;
  Bytes id_;
  Bytes smart_;
};

TEST_F(ThermalProbeTest, ExportsEveryThresholdOfTheHandmadeDrive) {
  ASSERT_TRUE(Run().ok());
  const std::map<std::string, double> expected = {
      {Threshold("over", "composite"), 80.85},
      {Threshold("under", "composite"), -273.15},
      {Threshold("over", "1"), 84.85},
      {Threshold("under", "1"), -0.15},
      {Threshold("tmt1"), 72.85},
      {Threshold("tmt2"), 75.85},
      {Threshold("mntmt"), 39.85},
      {Threshold("mxtmt"), 84.85},
      {Supported("temperature_threshold"), 1},
      {Supported("host_thermal_management"), 1},
      {Key("drivewatch_thermal_throttling"), 0},
      {Key("drivewatch_admin_commands_permitted"), 1},
  };
  EXPECT_EQ(Emitted(), expected);
  EXPECT_TRUE(logged_.empty());
}

TEST_F(ThermalProbeTest, AsksForEveryReportedSensorAndStopsAtARefusal) {
  ASSERT_TRUE(Run().ok());
  std::vector<FakeController::Call> features;
  for (const auto& c : ctrl_.calls()) {
    if (c.command == "feature") features.push_back(c);
  }
  // The handmade SMART log reports sensors 1-8. Sensor 1 answers both; the
  // controller refuses sensor 2's over-threshold, so its under-threshold
  // is not asked for; and so on for 3-8.
  std::vector<FakeController::Call> expected = {
      {"feature", 0x04, kOverComposite, 0}, {"feature", 0x04, kUnderComposite, 0},
      {"feature", 0x04, kOverSensor1, 0},   {"feature", 0x04, kUnderSensor1, 0}};
  for (std::uint32_t sensor = 2; sensor <= 8; ++sensor) {
    expected.push_back({"feature", 0x04, sensor << 16, 0});
  }
  expected.push_back({"feature", 0x10, 0, 0});
  EXPECT_EQ(features, expected);
}

TEST_F(ThermalProbeTest, SensorsTheSmartLogDoesNotReportAreNotAskedFor) {
  for (int i = 0; i < 8; ++i) smart_[200 + 2 * i] = smart_[201 + 2 * i] = 0;
  ctrl_.SetLogPage(kSmartLogId, kNsidAll, smart_);
  ASSERT_TRUE(Run().ok());
  int threshold_reads = 0;
  for (const auto& c : ctrl_.calls()) {
    threshold_reads += c.command == "feature" && c.id == 0x04;
  }
  EXPECT_EQ(threshold_reads, 2);
  EXPECT_FALSE(Emitted().count(Threshold("over", "1")));
}

TEST_F(ThermalProbeTest, MissingFeaturesAreReportedAndLoggedOnce) {
  ctrl_.SetFeatureAnswer(kFeatureTemperatureThreshold, kOverComposite,
                         FakeController::InvalidField("get feature 04h"));
  id_[322] = 0;  // HCTMA bit 0 clear
  ctrl_.SetIdentify(kIdentifyCnsController, 0, id_);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Run().ok());
    const auto emitted = Emitted();
    EXPECT_EQ(emitted.at(Supported("temperature_threshold")), 0);
    EXPECT_EQ(emitted.at(Supported("host_thermal_management")), 0);
    EXPECT_FALSE(emitted.count(Threshold("over", "composite")));
    EXPECT_FALSE(emitted.count(Threshold("mntmt")));
  }
  for (const auto& c : ctrl_.calls()) EXPECT_NE(c.id, 0x10u) << "HCTMA is clear";
  ASSERT_EQ(logged_.size(), 2u);
  EXPECT_EQ(logged_[0],
            "drive serial=HANDMADE-PM981 does not support temperature "
            "thresholds (feature 04h) (/dev/nvme0: get feature 04h: Invalid "
            "Field in Command (0x4002)); reporting "
            "drivewatch_feature_supported{feature=\"temperature_threshold\"} 0 "
            "and not logging it again");
  EXPECT_EQ(logged_[1],
            "drive serial=HANDMADE-PM981 does not support host controlled "
            "thermal management (feature 10h) (Identify Controller HCTMA bit 0 "
            "is clear); reporting drivewatch_feature_supported{feature="
            "\"host_thermal_management\"} 0 and not logging it again");

  // Back after a firmware update: said once more.
  ctrl_.SetFeatureResult(kFeatureTemperatureThreshold, kOverComposite, 354);
  ASSERT_TRUE(Run().ok());
  ASSERT_TRUE(Run().ok());
  ASSERT_EQ(logged_.size(), 3u);
  EXPECT_EQ(logged_[2],
            "drive serial=HANDMADE-PM981 now supports temperature thresholds "
            "(feature 04h)");
}

TEST_F(ThermalProbeTest, HctmRefusedDespiteHctmaIsUnsupported) {
  ctrl_.SetFeatureAnswer(kFeatureHostThermalManagement, 0,
                         FakeController::InvalidField("get feature 10h"));
  ASSERT_TRUE(Run().ok());
  const auto emitted = Emitted();
  EXPECT_EQ(emitted.at(Supported("host_thermal_management")), 0);
  EXPECT_FALSE(emitted.count(Threshold("tmt1")));
  // The range still comes from Identify.
  EXPECT_EQ(emitted.at(Threshold("mxtmt")), 84.85);
}

TEST_F(ThermalProbeTest, TmtDisabledIsLeftOut) {
  ctrl_.SetFeatureResult(kFeatureHostThermalManagement, 0, 346u << 16);
  ASSERT_TRUE(Run().ok());
  const auto emitted = Emitted();
  EXPECT_EQ(emitted.at(Threshold("tmt1")), 72.85);
  EXPECT_FALSE(emitted.count(Threshold("tmt2")));
}

TEST_F(ThermalProbeTest, OtherFeatureErrorsFailTheRun) {
  ctrl_.SetFeatureAnswer(
      kFeatureTemperatureThreshold, kUnderComposite,
      Error{EIO, -1, "/dev/nvme0: get feature 04h: Input/output error"});
  const Status status = Run();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().errnum, EIO);
}

TEST_F(ThermalProbeTest, AnotherDrivesSerialFailsTheRun) {
  info_.serial = "SOMEONE-ELSE";
  const Status status = Run();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().errnum, ENODEV);
}

// Through the probe: the drive's TMT1 time moves between two polls a
// minute apart.
TEST_F(ThermalProbeTest, ThrottlingFromTheSmartCountersBetweenPolls) {
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(Emitted().at(Key("drivewatch_thermal_throttling")), 0);
  const std::uint32_t tmt1_seconds = smart_[224] | smart_[225] << 8 |
                                     smart_[226] << 16 | smart_[227] << 24;
  PutLe32(smart_, 224, tmt1_seconds + 42);
  ctrl_.SetLogPage(kSmartLogId, kNsidAll, smart_);
  clock_.Advance(seconds(60));
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(Emitted().at(Key("drivewatch_thermal_throttling")), 1);
  // Hot: the composite (bytes 2:1) at TMT2 349 K.
  smart_[1] = 349 & 0xff;
  smart_[2] = 349 >> 8;
  ctrl_.SetLogPage(kSmartLogId, kNsidAll, smart_);
  clock_.Advance(seconds(60));
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(Emitted().at(Key("drivewatch_thermal_throttling")), 2);
}

class ThrottleTrackerTest : public ::testing::Test {
 protected:
  // Polls at the fake clock's time with `o`'s counters and temperatures.
  int Poll(ThermalObservation o) {
    o.at = clock_.Now();
    return tracker_.Update(o);
  }
  testing::FakeClock clock_;
  ThrottleTracker tracker_;
};

TEST_F(ThrottleTrackerTest, CountersMovingWithinTheWindow) {
  ThermalObservation o;
  EXPECT_EQ(Poll(o), 0);  // no baseline yet
  clock_.Advance(seconds(60));
  o.tmt1_seconds = 30;
  EXPECT_EQ(Poll(o), 1);
  // An AEN-triggered poll one second later: the counters have not moved
  // since the last poll, but they have since the one a window back.
  clock_.Advance(seconds(1));
  EXPECT_EQ(Poll(o), 1);
  // A minute on, nothing moved: no longer throttled.
  clock_.Advance(seconds(59));
  EXPECT_EQ(Poll(o), 0);
  // TMT2 wins over TMT1.
  clock_.Advance(seconds(60));
  o.tmt1_seconds = 60;
  o.tmt2_seconds = 5;
  EXPECT_EQ(Poll(o), 2);
  // A short episode shows in the transition count alone.
  clock_.Advance(seconds(60));
  o.tmt1_transitions = 1;
  EXPECT_EQ(Poll(o), 1);
  clock_.Advance(seconds(60));
  EXPECT_EQ(Poll(o), 0);
}

TEST_F(ThrottleTrackerTest, SlowPollsCompareWithThePreviousPoll) {
  ThermalObservation o;
  EXPECT_EQ(Poll(o), 0);
  for (int i = 1; i <= 3; ++i) {
    clock_.Advance(seconds(300));
    o.tmt2_transitions = i;
    EXPECT_EQ(Poll(o), 2) << i;
  }
  clock_.Advance(seconds(300));
  EXPECT_EQ(Poll(o), 0);
}

TEST_F(ThrottleTrackerTest, FastPollsUseTheNewestPollAWindowBack) {
  ThermalObservation o;
  EXPECT_EQ(Poll(o), 0);
  for (int i = 0; i < 5; ++i) {  // every 10 s; counter moves at 30 s
    clock_.Advance(seconds(10));
    if (i == 2) o.tmt1_seconds = 1;
    EXPECT_EQ(Poll(o), i >= 2 ? 1 : 0) << i;
  }
  // The move was first seen at t=30; polls keep reporting it while their
  // baseline (the newest poll at least 60 s old) predates it.
  clock_.Advance(seconds(30));
  EXPECT_EQ(Poll(o), 1);  // t=80: baseline t=20, before the move
  clock_.Advance(seconds(10));
  EXPECT_EQ(Poll(o), 0);  // t=90: baseline t=30, which has it already
}

TEST_F(ThrottleTrackerTest, TemperatureAgainstTmtWhenActive) {
  ThermalObservation o;
  o.tmt1_k = 346;
  o.tmt2_k = 349;
  o.composite_k = 345;
  EXPECT_EQ(Poll(o), 0);
  o.composite_k = 346;
  EXPECT_EQ(Poll(o), 1);  // at TMT1 counts
  o.composite_k = 350;
  EXPECT_EQ(Poll(o), 2);
  // TMT2 alone set.
  o.tmt1_k = 0;
  o.composite_k = 347;
  EXPECT_EQ(Poll(o), 0);
  o.composite_k = 349;
  EXPECT_EQ(Poll(o), 2);
  // Thermal management off: a hot drive is not "throttled" by this rule.
  o.tmt2_k = 0;
  o.composite_k = 400;
  EXPECT_EQ(Poll(o), 0);
  // Composite not reported.
  o.tmt1_k = 300;
  o.composite_k = 0;
  EXPECT_EQ(Poll(o), 0);
}

TEST_F(ThrottleTrackerTest, ACounterGoingBackwardsStartsOver) {
  ThermalObservation o;
  o.tmt1_seconds = 1000;
  EXPECT_EQ(Poll(o), 0);
  clock_.Advance(seconds(60));
  o.tmt1_seconds = 10;  // another drive, or a reset
  EXPECT_EQ(Poll(o), 0);
  clock_.Advance(seconds(60));
  o.tmt1_seconds = 20;
  EXPECT_EQ(Poll(o), 1);
}

TEST(ThermalProbeMetricsTest, EveryMetricIsDocumentedWithHelp) {
  testing::ExpectDocumented(ThermalProbe::Metrics());
}

}  // namespace
}  // namespace drivewatch
