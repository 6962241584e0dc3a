// SPDX-License-Identifier: Apache-2.0
// The power probe against a fake Controller answering with the hand-built
// PM981 (mixed MXPS scales, two non-operational states, an APST table).
// External meters: power_meter_test.cc; power draw (idle and at load):
// power_draw_probe_test.cc.
#include "probes/power_probe.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <string>
#include <vector>

#include "probes/drive/features.h"
#include "probes/drive/identify.h"
#include "probes/drive/smart_log.h"
#include "tests/unit/probes/probe_test_util.h"

namespace drivewatch {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeController;
using testing::Handmade;
using testing::kHandmadeSerial;
using testing::RecordingSink;
using testing::Sample;

class PowerProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    id_ = Handmade("id-ctrl-HANDMADE-PM981.bin");
    smart_ = Handmade("smart-log-HANDMADE-PM981.bin");
    ASSERT_EQ(id_.size(), kIdentifySize) << "run make_handmade.py";
    info_.name = "nvme0";
    info_.device = "/dev/nvme0";
    info_.serial = kHandmadeSerial;
    ctrl_.SetIdentify(kIdentifyCnsController, 0, id_);
    ctrl_.SetLogPage(kSmartLogId, kNsidAll, smart_);
    ctrl_.SetFeatureResult(kFeaturePowerManagement, 0, 3);
    ctrl_.SetFeatureAnswer(
        kFeatureAutonomousPowerStateTransition, 0,
        FeatureValue{1, Handmade("feature-HANDMADE-PM981-0c.bin")});
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
  static std::string State(const std::string& name, int ps) {
    return Key(name, {{"power_state", std::to_string(ps)}});
  }

  std::vector<std::string> logged_;
  PowerProbe probe_{[this](std::string_view l) { logged_.emplace_back(l); }};
  FakeController ctrl_;
  ControllerInfo info_;
  RecordingSink sink_;
  Bytes id_;
  Bytes smart_;
};

TEST_F(PowerProbeTest, ExportsThePm981PowerStatesAndApst) {
  ASSERT_TRUE(Run().ok());
  const auto e = Emitted();
  // smartctl: 8.00 W, 6.30 W, 3.50 W, then 0.0700 W and 0.0050 W in
  // 0.0001 W units (MXPS), non-operational, 210/1200 and 2000/8000 us.
  EXPECT_DOUBLE_EQ(e.at(State("drivewatch_power_state_max_power_watts", 0)), 8.0);
  EXPECT_DOUBLE_EQ(e.at(State("drivewatch_power_state_max_power_watts", 1)), 6.3);
  EXPECT_DOUBLE_EQ(e.at(State("drivewatch_power_state_max_power_watts", 2)), 3.5);
  EXPECT_DOUBLE_EQ(e.at(State("drivewatch_power_state_max_power_watts", 3)), 0.07);
  EXPECT_DOUBLE_EQ(e.at(State("drivewatch_power_state_max_power_watts", 4)), 0.005);
  for (int ps = 0; ps < 5; ++ps) {
    EXPECT_EQ(e.at(State("drivewatch_power_state_non_operational", ps)),
              ps >= 3 ? 1 : 0)
        << ps;
  }
  EXPECT_FALSE(e.count(State("drivewatch_power_state_max_power_watts", 5)));
  EXPECT_DOUBLE_EQ(e.at(State("drivewatch_power_state_entry_latency_seconds", 3)),
                   210e-6);
  EXPECT_DOUBLE_EQ(e.at(State("drivewatch_power_state_exit_latency_seconds", 3)),
                   1200e-6);
  EXPECT_DOUBLE_EQ(e.at(State("drivewatch_power_state_entry_latency_seconds", 4)),
                   2000e-6);
  EXPECT_DOUBLE_EQ(e.at(State("drivewatch_power_state_exit_latency_seconds", 4)),
                   8000e-6);
  EXPECT_FALSE(e.count(State("drivewatch_power_state_exit_latency_seconds", 0)));
  EXPECT_DOUBLE_EQ(e.at(State("drivewatch_power_state_active_power_watts", 0)), 5.0);
  EXPECT_DOUBLE_EQ(e.at(State("drivewatch_power_state_idle_power_watts", 4)), 0.005);
  EXPECT_FALSE(e.count(State("drivewatch_power_state_idle_power_watts", 3)));

  EXPECT_EQ(e.at(Key("drivewatch_current_power_state")), 3);
  EXPECT_EQ(e.at(Key("drivewatch_apst_enabled")), 1);
  auto apst = [](int from, int to) {
    return Key("drivewatch_apst_idle_time_seconds",
               {{"power_state", std::to_string(from)},
                {"target_power_state", std::to_string(to)}});
  };
  EXPECT_DOUBLE_EQ(e.at(apst(0, 3)), 0.1);
  EXPECT_DOUBLE_EQ(e.at(apst(2, 3)), 0.1);
  EXPECT_DOUBLE_EQ(e.at(apst(3, 4)), 2.0);
  EXPECT_FALSE(e.count(apst(4, 0)));
  EXPECT_EQ(e.at(Key("drivewatch_feature_supported", {{"feature", "apst"}})), 1);
  EXPECT_EQ(e.at(Key("drivewatch_feature_supported",
                     {{"feature", "power_management"}})),
            1);
  // The APST read carries the 256-byte buffer.
  bool asked = false;
  for (const auto& c : ctrl_.calls()) {
    if (c.command == "feature" && c.id == 0x0c) {
      asked = true;
      EXPECT_EQ(c.length, 256u);
    }
  }
  EXPECT_TRUE(asked);
  EXPECT_TRUE(logged_.empty());
}

TEST_F(PowerProbeTest, QemuLikeDriveReportsApstAndPowerManagementMissingOnce) {
  id_[265] = 0;  // APSTA clear
  ctrl_.SetIdentify(kIdentifyCnsController, 0, id_);
  ctrl_.SetFeatureAnswer(kFeaturePowerManagement, 0,
                         FakeController::InvalidField("get feature 02h"));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Run().ok());
    const auto e = Emitted();
    EXPECT_EQ(e.at(Key("drivewatch_feature_supported", {{"feature", "apst"}})), 0);
    EXPECT_EQ(e.at(Key("drivewatch_feature_supported",
                       {{"feature", "power_management"}})),
              0);
    EXPECT_FALSE(e.count(Key("drivewatch_apst_enabled")));
    EXPECT_FALSE(e.count(Key("drivewatch_current_power_state")));
  }
  EXPECT_EQ(logged_.size(), 2u);
  for (const auto& c : ctrl_.calls()) EXPECT_NE(c.id, 0x0cu);
}

TEST(PowerProbeMetricsTest, EveryMetricIsDocumentedWithHelp) {
  testing::ExpectDocumented(PowerProbe::Metrics());
}

}  // namespace
}  // namespace drivewatch
