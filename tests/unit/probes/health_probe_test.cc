// SPDX-License-Identifier: Apache-2.0
// The health probe against a fake Controller (FakeController in
// probe_test_util.h): the build machines have no NVMe hardware, so the
// controller answers with the bytes of the hand-built fixtures. The same
// probe runs against QEMU's controller in qemu_fixture_test.cc and, through
// the real drive layer, in the VM harness.
#include "probes/health_probe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "probes/drive/identify.h"
#include "probes/drive/smart_log.h"
#include "tests/unit/probes/probe_test_util.h"

namespace drivewatch {
namespace {

using testing::FakeController;
using testing::Handmade;
using testing::kHandmadeSerial;
using testing::RecordingSink;
using testing::Sample;

ControllerInfo HandmadeInfo() {
  ControllerInfo info;
  info.name = "nvme0";
  info.device = "/dev/nvme0";
  info.serial = kHandmadeSerial;
  info.model = "SAMSUNG MZVLB1T0HBLR-000L7";
  info.firmware = "5L2QEXA7";
  info.transport = "pcie";
  info.address = "0000:01:00.0";
  info.namespaces = {{1, "nvme0n1", "/dev/nvme0n1"},
                     {2, "nvme0n2", "/dev/nvme0n2"}};
  return info;
}

class HealthProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    id_ctrl_ = Handmade("id-ctrl-HANDMADE-PM981.bin");
    smart_ = Handmade("smart-log-HANDMADE-PM981.bin");
    ASSERT_EQ(id_ctrl_.size(), kIdentifySize) << "run make_handmade.py";
    ASSERT_EQ(smart_.size(), kSmartLogSize);
    ctrl_.SetIdentify(kIdentifyCnsController, 0, id_ctrl_);
    ctrl_.SetLogPage(kSmartLogId, kNsidAll, smart_);
    ctrl_.SetIdentify(kIdentifyCnsNamespace, 1,
                      Handmade("id-ns-HANDMADE-PM981-n1.bin"));
    ctrl_.SetIdentify(kIdentifyCnsNamespace, 2,
                      Handmade("id-ns-HANDMADE-PM981-n2.bin"));
  }

  Status Run() { return probe_.Run(ctrl_, info_, sink_); }

  // Series key -> value; fails the test on a repeated series.
  std::map<std::string, double> Emitted() const {
    std::map<std::string, double> out;
    for (const Sample& s : sink_.samples) {
      EXPECT_TRUE(out.emplace(s.Key(), s.value).second)
          << "duplicate series " << s.Key();
    }
    return out;
  }

  // The key of a sample of the handmade drive with `labels` besides serial.
  static std::string Key(const std::string& name, Labels labels = {}) {
    labels.emplace_back("serial", kHandmadeSerial);
    return testing::SeriesKey(name, std::move(labels));
  }

  HealthProbe probe_;
  FakeController ctrl_;
  ControllerInfo info_ = HandmadeInfo();
  RecordingSink sink_;
  Bytes id_ctrl_;
  Bytes smart_;
};

TEST_F(HealthProbeTest, EmitsExactlyTheExpectedSamples) {
  ASSERT_TRUE(Run().ok());
  // Values from make_handmade.py, computed in Python in exact integer
  // arithmetic and rounded once to double.
  const std::map<std::string, double> expected = {
      {Key("drivewatch_controller_info",
           {{"model", "SAMSUNG MZVLB1T0HBLR-000L7"},
            {"firmware", "5L2QEXA7"},
            {"vid", "0x144d"},
            {"ssvid", "0xa801"},
            {"ieee_oui", "002538"},
            {"cntlid", "4"},
            {"nvme_version", "1.3"}}),
       1},
      {Key("drivewatch_nvm_capacity_bytes"), 1024209543168.0},
      {Key("drivewatch_nvm_unallocated_capacity_bytes"), 1.8446744073709556e19},
      {Key("drivewatch_temperature_threshold_celsius",
           {{"threshold", "wctemp"}}),
       80.85},
      {Key("drivewatch_temperature_threshold_celsius",
           {{"threshold", "cctemp"}}),
       81.85},
      {Key("drivewatch_power_states"), 5},
      {Key("drivewatch_error_log_capacity_entries"), 64},
      {Key("drivewatch_critical_warning_raw"), 0x69},
      {Key("drivewatch_critical_warning", {{"bit", "available_spare"}}), 1},
      {Key("drivewatch_critical_warning", {{"bit", "temperature"}}), 0},
      {Key("drivewatch_critical_warning", {{"bit", "reliability"}}), 0},
      {Key("drivewatch_critical_warning", {{"bit", "read_only"}}), 1},
      {Key("drivewatch_critical_warning", {{"bit", "volatile_memory_backup"}}),
       0},
      {Key("drivewatch_critical_warning",
           {{"bit", "persistent_memory_region"}}),
       1},
      {Key("drivewatch_endurance_group_critical_warning_raw"), 8},
      {Key("drivewatch_temperature_celsius", {{"sensor", "composite"}}), 43.85},
      {Key("drivewatch_temperature_celsius", {{"sensor", "1"}}), 44.85},
      {Key("drivewatch_temperature_celsius", {{"sensor", "2"}}), 46.85},
      {Key("drivewatch_temperature_celsius", {{"sensor", "3"}}), 48.85},
      {Key("drivewatch_temperature_celsius", {{"sensor", "4"}}), 50.85},
      {Key("drivewatch_temperature_celsius", {{"sensor", "5"}}), 52.85},
      {Key("drivewatch_temperature_celsius", {{"sensor", "6"}}), 54.85},
      {Key("drivewatch_temperature_celsius", {{"sensor", "7"}}), 56.85},
      {Key("drivewatch_temperature_celsius", {{"sensor", "8"}}), 58.85},
      {Key("drivewatch_available_spare_ratio"), 1.0},
      {Key("drivewatch_available_spare_threshold_ratio"), 0.05},
      {Key("drivewatch_percentage_used_ratio"), 1.30},
      {Key("drivewatch_data_read_bytes_total"), 9.44473296574016e+24},
      {Key("drivewatch_data_written_bytes_total"), 1.8889465931487585e+25},
      {Key("drivewatch_host_read_commands_total"), 7.378697629486961e+19},
      {Key("drivewatch_host_write_commands_total"), 8.896271030612771e+34},
      {Key("drivewatch_controller_busy_seconds_total"), 1.1068046444225732e+21},
      {Key("drivewatch_power_cycles_total"), 1.8446744073709552e+19},
      {Key("drivewatch_power_on_seconds_total"), 6.640827866535442e+22},
      {Key("drivewatch_unsafe_shutdowns_total"), 1.8446744073709552e+19},
      {Key("drivewatch_media_errors_total"), 1.7014118346046923e+38},
      {Key("drivewatch_error_log_entries_total"), 1.8446744073709552e+19},
      {Key("drivewatch_temperature_above_threshold_seconds_total",
           {{"threshold", "wctemp"}}),
       86400},
      {Key("drivewatch_temperature_above_threshold_seconds_total",
           {{"threshold", "cctemp"}}),
       1020},
      {Key("drivewatch_thermal_management_transitions_total",
           {{"threshold", "tmt1"}}),
       12},
      {Key("drivewatch_thermal_management_transitions_total",
           {{"threshold", "tmt2"}}),
       3},
      {Key("drivewatch_thermal_management_seconds_total",
           {{"threshold", "tmt1"}}),
       3600},
      {Key("drivewatch_thermal_management_seconds_total",
           {{"threshold", "tmt2"}}),
       120},
      {Key("drivewatch_energy_consumed_joules_total"), 30924552931200.0},
      {Key("drivewatch_interval_power_watts"), 3.5},
      {Key("drivewatch_namespace_identify_success", {{"nsid", "1"}}), 1},
      {Key("drivewatch_namespace_size_bytes", {{"nsid", "1"}}),
       1024209543168.0},
      {Key("drivewatch_namespace_capacity_bytes", {{"nsid", "1"}}),
       1024209543168.0},
      {Key("drivewatch_namespace_utilization_bytes", {{"nsid", "1"}}),
       632098759680.0},
      {Key("drivewatch_namespace_logical_block_size_bytes", {{"nsid", "1"}}),
       512},
      {Key("drivewatch_namespace_identify_success", {{"nsid", "2"}}), 1},
      {Key("drivewatch_namespace_size_bytes", {{"nsid", "2"}}),
       17592186044416.0},
      {Key("drivewatch_namespace_capacity_bytes", {{"nsid", "2"}}),
       17592186044416.0},
      {Key("drivewatch_namespace_utilization_bytes", {{"nsid", "2"}}),
       8796093022208.0},
      {Key("drivewatch_namespace_logical_block_size_bytes", {{"nsid", "2"}}),
       4096},
  };
  const auto emitted = Emitted();
  for (const auto& [key, value] : expected) {
    auto it = emitted.find(key);
    if (it == emitted.end()) {
      ADD_FAILURE() << "missing " << key;
      continue;
    }
    // Exactly equal, also for the 128-bit counters: both sides round the
    // exact integer product to double once. The few decimal fractions
    // (temperatures, ratios) are compared within 4 ulps.
    if (std::floor(value) == value) {
      EXPECT_EQ(it->second, value) << key;
    } else {
      EXPECT_DOUBLE_EQ(it->second, value) << key;
    }
  }
  for (const auto& [key, value] : emitted) {
    EXPECT_TRUE(expected.count(key)) << "unexpected " << key << " " << value;
  }
}

TEST_F(HealthProbeTest, SendsTheSpecifiedCommands) {
  ASSERT_TRUE(Run().ok());
  const std::vector<FakeController::Call> expected = {
      {"identify", kIdentifyCnsController, 0, 4096},
      {"log", kSmartLogId, 0xffffffff, 512},
      {"identify", kIdentifyCnsNamespace, 1, 4096},
      {"identify", kIdentifyCnsNamespace, 2, 4096},
  };
  EXPECT_EQ(ctrl_.calls(), expected);
}

TEST_F(HealthProbeTest, EverySampleFollowsTheNamingRules) {
  ASSERT_TRUE(Run().ok());
  const auto metrics = HealthProbe::Metrics();
  for (const Sample& s : sink_.samples) {
    const std::string name = s.desc->name;
    EXPECT_TRUE(name.starts_with("drivewatch_")) << name;
    EXPECT_EQ(name.ends_with("_total"), s.desc->type == MetricType::kCounter)
        << name;
    ASSERT_FALSE(s.labels.empty()) << name;
    EXPECT_EQ(s.labels.front(), std::make_pair(std::string("serial"),
                                               std::string(kHandmadeSerial)))
        << name;
    EXPECT_NE(std::find(metrics.begin(), metrics.end(), s.desc), metrics.end())
        << name << " is not listed in HealthProbe::Metrics()";
    if (name.starts_with("drivewatch_namespace_")) {
      EXPECT_EQ(s.labels.size(), 2u) << name;
      EXPECT_EQ(s.labels[1].first, "nsid") << name;
    }
  }
}

TEST(HealthProbeMetricsTest, DescriptorsAreCompleteAndUnique) {
  std::set<std::string> names;
  for (const MetricDesc* desc : HealthProbe::Metrics()) {
    EXPECT_TRUE(names.insert(desc->name).second) << desc->name;
    EXPECT_GT(std::string(desc->help).size(), 20u) << desc->name;
  }
  EXPECT_EQ(names.size(), 33u);
}

// docs/metrics.md, the dashboards' contract, lists every metric the probe
// can emit, including those the golden fixtures never produce.
TEST(HealthProbeMetricsTest, EveryMetricIsDocumentedWithHelp) {
  testing::ExpectDocumented(HealthProbe::Metrics());
}

TEST_F(HealthProbeTest, IdentifyControllerFailureFailsTheRun) {
  ctrl_.SetIdentify(kIdentifyCnsController, 0,
                    FakeController::InvalidField("identify CNS 01h NSID 0"));
  const Status status = Run();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().nvme_status, 0x4002);
  EXPECT_EQ(status.error().message,
            "/dev/nvme0: identify CNS 01h NSID 0: Invalid Field in Command "
            "(0x4002)");
}

TEST_F(HealthProbeTest, SmartLogFailureFailsTheRun) {
  ctrl_.SetLogPage(kSmartLogId, kNsidAll,
                   Error{EPERM, -1,
                         "/dev/nvme0: get log page 02h: Operation not "
                         "permitted"});
  const Status status = Run();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().errnum, EPERM);
  // A refused passthrough says what it needs (the thermal probe falls back
  // to hwmon; see hwmon_test.cc).
  EXPECT_EQ(status.error().message.rfind(
                "/dev/nvme0: get log page 02h: Operation not permitted (admin "
                "passthrough needs CAP_SYS_ADMIN",
                0),
            0u);
}

TEST_F(HealthProbeTest, ShortSmartLogFailsTheRunNamingTheDevice) {
  ctrl_.SetLogPage(kSmartLogId, kNsidAll, Bytes(100));
  const Status status = Run();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().errnum, EBADMSG);
  EXPECT_EQ(status.error().message,
            "/dev/nvme0: SMART log: 100 bytes, expected 512");
}

TEST_F(HealthProbeTest, ShortIdentifyControllerFailsTheRun) {
  ctrl_.SetIdentify(kIdentifyCnsController, 0, Bytes(512));
  const Status status = Run();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message,
            "/dev/nvme0: Identify Controller: 512 bytes, expected 4096");
}

// nvme0 can name another drive after a hot swap between Scan() and Run();
// its data must not land under the old serial.
TEST_F(HealthProbeTest, SerialMismatchFailsTheRun) {
  info_.serial = "S4EWNX0N700001";
  const Status status = Run();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().errnum, ENODEV);
  EXPECT_EQ(status.error().message,
            "/dev/nvme0: Identify Controller serial \"HANDMADE-PM981\" "
            "differs from \"S4EWNX0N700001\" found by the scan; the device "
            "node now belongs to another drive");
  // Nothing reached the sink, not even under the right serial.
  EXPECT_TRUE(sink_.samples.empty());
}

TEST_F(HealthProbeTest, FailedNamespaceKeepsControllerData) {
  ctrl_.SetIdentify(kIdentifyCnsNamespace, 2,
                    FakeController::InvalidField("identify CNS 00h NSID 2"));
  ASSERT_TRUE(Run().ok());
  const auto emitted = Emitted();
  EXPECT_EQ(
      emitted.at(Key("drivewatch_namespace_identify_success", {{"nsid", "2"}})),
      0);
  EXPECT_EQ(
      emitted.count(Key("drivewatch_namespace_size_bytes", {{"nsid", "2"}})),
      0u);
  EXPECT_EQ(
      emitted.at(Key("drivewatch_namespace_identify_success", {{"nsid", "1"}})),
      1);
  EXPECT_EQ(emitted.at(Key("drivewatch_namespace_size_bytes", {{"nsid", "1"}})),
            1024209543168.0);
  EXPECT_EQ(emitted.count(Key("drivewatch_data_written_bytes_total")), 1u);
}

TEST_F(HealthProbeTest, InactiveNamespaceCountsAsFailed) {
  ctrl_.SetIdentify(kIdentifyCnsNamespace, 1, Bytes(kIdentifySize));
  ASSERT_TRUE(Run().ok());
  const auto emitted = Emitted();
  EXPECT_EQ(
      emitted.at(Key("drivewatch_namespace_identify_success", {{"nsid", "1"}})),
      0);
  EXPECT_EQ(emitted.count(Key("drivewatch_namespace_logical_block_size_bytes",
                              {{"nsid", "1"}})),
            0u);
}

TEST_F(HealthProbeTest, UnreportedFieldsAreLeftOut) {
  // Sensor 3 and 8 not implemented, no power reporting, no TNVMCAP, no
  // thresholds: the zeros the spec defines as "not reported".
  smart_[200 + 2 * 2] = smart_[200 + 2 * 2 + 1] = 0;
  smart_[200 + 2 * 7] = smart_[200 + 2 * 7 + 1] = 0;
  std::fill(smart_.begin() + 232, smart_.begin() + 244, 0);
  std::fill(id_ctrl_.begin() + 266, id_ctrl_.begin() + 270, 0);
  std::fill(id_ctrl_.begin() + 280, id_ctrl_.begin() + 296, 0);
  ctrl_.SetLogPage(kSmartLogId, kNsidAll, smart_);
  ctrl_.SetIdentify(kIdentifyCnsController, 0, id_ctrl_);
  ASSERT_TRUE(Run().ok());
  const auto emitted = Emitted();
  for (const char* sensor : {"3", "8"}) {
    EXPECT_EQ(emitted.count(
                  Key("drivewatch_temperature_celsius", {{"sensor", sensor}})),
              0u)
        << sensor;
  }
  EXPECT_EQ(
      emitted.count(Key("drivewatch_temperature_celsius", {{"sensor", "2"}})),
      1u);
  for (const char* name :
       {"drivewatch_energy_consumed_joules_total",
        "drivewatch_interval_power_watts", "drivewatch_nvm_capacity_bytes",
        "drivewatch_nvm_unallocated_capacity_bytes"}) {
    EXPECT_EQ(emitted.count(Key(name)), 0u) << name;
  }
  for (const char* threshold : {"wctemp", "cctemp"}) {
    EXPECT_EQ(emitted.count(Key("drivewatch_temperature_threshold_celsius",
                                {{"threshold", threshold}})),
              0u);
    // The time counters are mandatory fields and stay.
    EXPECT_EQ(emitted.count(
                  Key("drivewatch_temperature_above_threshold_seconds_total",
                      {{"threshold", threshold}})),
              1u);
  }
}

TEST_F(HealthProbeTest, ControllerWithoutNamespacesStillReports) {
  info_.namespaces.clear();
  ASSERT_TRUE(Run().ok());
  for (const Sample& s : sink_.samples) {
    EXPECT_FALSE(
        std::string(s.desc->name).starts_with("drivewatch_namespace_"));
  }
  EXPECT_EQ(ctrl_.calls().size(), 2u);
}

TEST(HealthProbeNameTest, IsHealth) {
  EXPECT_STREQ(HealthProbe().name(), "health");
}

}  // namespace
}  // namespace drivewatch
