// SPDX-License-Identifier: Apache-2.0
// The power draw probe's windows, with a fake clock: the choice of
// source, and when a window counts as idle or as a clean 10-IOPS window.
// The controller is the hand-built PM981 (a SMART log carrying the NVMe
// 2.x interval power, 3.5 W; ps3 with only MP 0.07 W, ps4 with IDLP
// 0.005 W).
#include "probes/power_draw_probe.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "probes/drive/features.h"
#include "probes/drive/identify.h"
#include "probes/drive/smart_log.h"
#include "tests/common/fake_clock.h"
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

// --- PowerDrawProbe ---

class PowerDrawProbeTest : public ::testing::Test {
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
    probe_.Configure(std::nullopt, seconds(60));
  }

  Status Run() {
    sink_.samples.clear();
    return probe_.Run(ctrl_, info_, sink_);
  }
  // One second of the 10-IOPS load: the reader's reads land in the drive's
  // Host Read Commands (bytes 79:64), plus `foreign` reads of someone else.
  void Second(LoadObserver* reader, int reads, int foreign = 0) {
    for (int i = 0; i < reads; ++i) reader->ReadIssued();
    AddHostReads(reads + foreign);
    clock_.Advance(seconds(1));
  }
  void AddHostReads(std::uint64_t n) {
    std::uint64_t v;
    std::memcpy(&v, &smart_[64], 8);
    v += n;
    std::memcpy(&smart_[64], &v, 8);
    ctrl_.SetLogPage(kSmartLogId, kNsidAll, smart_);
  }
  // Removes the SMART log's interval power (bytes 243:240).
  void NoDrivePower() {
    for (int i = 240; i < 244; ++i) smart_[i] = 0;
    ctrl_.SetLogPage(kSmartLogId, kNsidAll, smart_);
  }
  std::size_t DriveCommands() const { return ctrl_.calls().size(); }

  std::map<std::string, double> Emitted() const {
    std::map<std::string, double> out;
    for (const Sample& s : sink_.samples) {
      EXPECT_TRUE(out.emplace(s.Key(), s.value).second) << s.Key();
    }
    return out;
  }
  // "name source=value" for the power series.
  std::vector<std::string> Power() const {
    std::vector<std::string> out;
    for (const Sample& s : sink_.samples) {
      const std::string name = s.desc->name;
      if (name != "drivewatch_idle_power_watts" &&
          name != "drivewatch_power_at_load_watts") {
        continue;
      }
      std::string source;
      for (const auto& [k, v] : s.labels) {
        if (k == "source") source = v;
      }
      std::ostringstream os;
      os << (name == "drivewatch_idle_power_watts" ? "idle" : "load") << " "
         << source << "=" << s.value;
      out.push_back(os.str());
    }
    return out;
  }
  static std::string Key(const std::string& name, Labels labels = {}) {
    labels.emplace_back("serial", kHandmadeSerial);
    return testing::SeriesKey(name, std::move(labels));
  }
  double Windows(const std::string& rate, const std::string& result) const {
    const auto e = Emitted();
    auto it = e.find(Key("drivewatch_power_windows_total",
                         {{"rate", rate}, {"result", result}}));
    return it == e.end() ? 0 : it->second;
  }

  testing::FakeClock clock_;
  DriveLoadBoard board_{[this] { return clock_.Now(); }};
  std::vector<std::string> logged_;
  Expected<double> meter_reading_ = 1.25;
  int meter_reads_ = 0;
  PowerDrawProbe probe_{&board_, [this] { return clock_.Now(); },
                        [this](const PowerMeterSpec&) {
                          ++meter_reads_;
                          return meter_reading_;
                        },
                        [this](std::string_view l) { logged_.emplace_back(l); }};
  FakeController ctrl_;
  ControllerInfo info_;
  RecordingSink sink_;
  Bytes id_;
  Bytes smart_;
};

TEST_F(PowerDrawProbeTest, TenIopsWindowIsAveragedAndReportedWhenItEnds) {
  auto reader = board_.Observe(kHandmadeSerial);
  reader->LoadStarted(10, clock_.Now());
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(Run().ok());
    EXPECT_TRUE(Power().empty());  // nothing until the window ends
    Second(reader.get(), 10);
  }
  reader->LoadStarted(100, clock_.Now() - milliseconds(500));
  ASSERT_TRUE(Run().ok());
  // The drive's own reading wins over the PSD estimate.
  EXPECT_EQ(Power(), std::vector<std::string>{"load drive=3.5"});
  const auto e = Emitted();
  EXPECT_EQ(e.at(Key("drivewatch_power_window_samples", {{"rate", "10"}})), 6);
  // From the load's start to the last run that still saw it.
  EXPECT_DOUBLE_EQ(
      e.at(Key("drivewatch_power_window_duration_seconds", {{"rate", "10"}})), 5);
  EXPECT_EQ(Windows("10", "reported"), 1);

  // 100 IOPS is not sampled: no drive command at all.
  const auto before = DriveCommands();
  for (int i = 0; i < 5; ++i) {
    Second(reader.get(), 100);
    ASSERT_TRUE(Run().ok());
  }
  EXPECT_EQ(DriveCommands(), before);
  // The last window stays reported meanwhile.
  EXPECT_EQ(Power(), std::vector<std::string>{"load drive=3.5"});
}

// [probes.power] at_load_max_age: a power at load not measured again within
// it goes away (with its window's duration and samples); idle power stays.
TEST_F(PowerDrawProbeTest, PowerAtLoadExpiresWhenNoWindowIsMeasured) {
  probe_.Configure(std::nullopt, seconds(60), seconds(100));
  auto reader = board_.Observe(kHandmadeSerial);
  reader->LoadStarted(10, clock_.Now());
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(Run().ok());
    Second(reader.get(), 10);
  }
  reader->LoadStopped(clock_.Now());  // the window ends: reported
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(Power(), std::vector<std::string>{"load drive=3.5"});
  // A heavy phase holds the probe paused: no reads, but other host I/O, so
  // no window of any kind is measured.
  for (int i = 0; i < 99; ++i) {
    AddHostReads(1000);
    clock_.Advance(seconds(1));
    ASSERT_TRUE(Run().ok());
  }
  EXPECT_EQ(Power(), std::vector<std::string>{"load drive=3.5"}) << "still within 100 s";
  AddHostReads(1000);
  clock_.Advance(seconds(2));
  ASSERT_TRUE(Run().ok());
  EXPECT_TRUE(Power().empty());
  const auto e = Emitted();
  EXPECT_EQ(e.count(Key("drivewatch_power_window_samples", {{"rate", "10"}})), 0u);
  EXPECT_EQ(e.count(Key("drivewatch_power_window_duration_seconds", {{"rate", "10"}})), 0u);
  // A new window brings it back.
  reader->LoadStarted(10, clock_.Now());
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(Run().ok());
    Second(reader.get(), 10);
  }
  reader->LoadStopped(clock_.Now());
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(Power(), std::vector<std::string>{"load drive=3.5"});
}

TEST_F(PowerDrawProbeTest, PsdEstimateIsWeightedByTimeInEachPowerState) {
  NoDrivePower();
  auto reader = board_.Observe(kHandmadeSerial);
  reader->LoadStarted(10, clock_.Now());
  // ps3 (MP 0.07 W, no IDLP) for 1 s, then ps4 (IDLP 0.005 W) for 3 s.
  ASSERT_TRUE(Run().ok());
  Second(reader.get(), 10);
  ctrl_.SetFeatureResult(kFeaturePowerManagement, 0, 4);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(Run().ok());
    Second(reader.get(), 10);
  }
  reader->LoadStopped(clock_.Now());
  ASSERT_TRUE(Run().ok());
  const auto e = Emitted();
  const std::string load =
      Key("drivewatch_power_at_load_watts", {{"rate", "10"}, {"source", "psd_estimate"}});
  ASSERT_TRUE(e.count(load)) << ::testing::PrintToString(Power());
  EXPECT_NEAR(e.at(load), (0.07 * 1 + 0.005 * 3) / 4, 1e-12);
}

TEST_F(PowerDrawProbeTest, OtherHostIoSpoilsTheWindow) {
  auto reader = board_.Observe(kHandmadeSerial);
  reader->LoadStarted(10, clock_.Now());
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(Run().ok());
    Second(reader.get(), 10, i == 2 ? 5 : 0);  // 5 reads that are not ours
  }
  reader->LoadStopped(clock_.Now());
  ASSERT_TRUE(Run().ok());
  EXPECT_TRUE(Power().empty());
  EXPECT_EQ(Windows("10", "host_io"), 1);
}

TEST_F(PowerDrawProbeTest, IdleMeansNoReadsOfOursAndNoneOfAnyoneElse) {
  auto reader = board_.Observe(kHandmadeSerial);
  reader->LoadStarted(10, clock_.Now());
  ASSERT_TRUE(Run().ok());
  Second(reader.get(), 10);
  // The idle turn between rounds: the host counters stand still although
  // we read a moment ago, since "ours" are subtracted.
  reader->LoadStopped(clock_.Now());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(Run().ok());
    clock_.Advance(seconds(1));
  }
  reader->LoadStarted(10, clock_.Now());
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(Power(), std::vector<std::string>{"idle drive=3.5"});
  EXPECT_EQ(Windows("0", "reported"), 1);
  EXPECT_EQ(Windows("10", "too_short"), 1);  // the 1 s of load before

  // An idle turn during which someone else reads: not idle.
  reader->LoadStopped(clock_.Now());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(Run().ok());
    if (i == 3) AddHostReads(1);
    clock_.Advance(seconds(1));
  }
  reader->LoadStarted(10, clock_.Now());
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(Windows("0", "host_io"), 1);
  EXPECT_EQ(Windows("0", "reported"), 1);
}

TEST_F(PowerDrawProbeTest, WithoutReadersEachIntervalIsOneIdleWindow) {
  // No read latency target on the drive: sample at [probes.power] interval.
  probe_.Configure(std::nullopt, seconds(60));
  ASSERT_TRUE(Run().ok());
  const auto after_first = DriveCommands();
  for (int i = 0; i < 59; ++i) {
    clock_.Advance(seconds(1));
    ASSERT_TRUE(Run().ok());
  }
  EXPECT_EQ(DriveCommands(), after_first);  // not sampled in between
  EXPECT_TRUE(Power().empty());
  clock_.Advance(seconds(1));
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(Power(), std::vector<std::string>{"idle drive=3.5"});
  EXPECT_DOUBLE_EQ(
      Emitted().at(Key("drivewatch_power_window_duration_seconds", {{"rate", "0"}})),
      60);
  // A busy interval is not idle; the next quiet one is again.
  AddHostReads(1);
  clock_.Advance(seconds(60));
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(Windows("0", "host_io"), 1);
  clock_.Advance(seconds(60));
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(Windows("0", "reported"), 2);
}

TEST_F(PowerDrawProbeTest, MeterBeatsTheDriveAndAFailingOneFallsBackLoggedOnce) {
  probe_.Configure(PowerMeterSpec{"/sys/class/hwmon/hwmon3/power1_input", {}, {}},
                   seconds(1));
  ASSERT_TRUE(Run().ok());
  clock_.Advance(seconds(2));
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(Power(), std::vector<std::string>{"idle meter=1.25"});
  EXPECT_EQ(Emitted().at(Key("drivewatch_power_meter_success")), 1);
  EXPECT_EQ(meter_reads_, 2);

  meter_reading_ = Error{ETIMEDOUT, -1,
                         "meter command \"/usr/local/bin/meter\": timed out "
                         "after 2s, killed"};
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(seconds(2));
    ASSERT_TRUE(Run().ok());
    EXPECT_EQ(Emitted().at(Key("drivewatch_power_meter_success")), 0);
  }
  EXPECT_EQ(Power(), std::vector<std::string>{"idle drive=3.5"});
  ASSERT_EQ(logged_.size(), 1u);
  EXPECT_EQ(logged_[0],
            "power meter of drive serial=HANDMADE-PM981 failed: meter command "
            "\"/usr/local/bin/meter\": timed out after 2s, killed; power falls "
            "back to the drive's own reading or the power state estimate "
            "(logged once until it recovers)");
  meter_reading_ = 2.0;
  clock_.Advance(seconds(2));
  ASSERT_TRUE(Run().ok());
  clock_.Advance(seconds(2));
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(Power(), std::vector<std::string>{"idle meter=2"});
  ASSERT_EQ(logged_.size(), 2u);
  EXPECT_EQ(logged_[1], "power meter of drive serial=HANDMADE-PM981 works again");
  probe_.Configure(std::nullopt, seconds(1));
  ASSERT_TRUE(Run().ok());
  EXPECT_FALSE(Emitted().count(Key("drivewatch_power_meter_success")));
}

TEST_F(PowerDrawProbeTest, QemuLikeDriveWithoutPowerManagementHasNoSource) {
  NoDrivePower();
  ctrl_.SetFeatureAnswer(kFeaturePowerManagement, 0,
                         FakeController::InvalidField("get feature 02h"));
  probe_.Configure(std::nullopt, seconds(1));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Run().ok());
    clock_.Advance(seconds(1));
  }
  EXPECT_TRUE(Power().empty());
  EXPECT_GE(Windows("0", "no_source"), 1);
}

TEST_F(PowerDrawProbeTest, AnotherDriveBehindTheNodeFailsTheRun) {
  info_.serial = "SOMEONE-ELSE";
  const Status s = Run();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().errnum, ENODEV);
}

TEST(PowerDrawProbeMetricsTest, EveryMetricIsDocumentedWithHelp) {
  testing::ExpectDocumented(PowerDrawProbe::Metrics());
}

}  // namespace
}  // namespace drivewatch
