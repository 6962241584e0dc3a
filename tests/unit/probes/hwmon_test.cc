// SPDX-License-Identifier: Apache-2.0
// The hwmon fallback: ReadNvmeHwmon against fixture sysfs trees built in a
// temporary directory, and the thermal probe falling back to it when the
// kernel refuses admin passthrough (EACCES, as Linux 6.1 answers a process
// without CAP_SYS_ADMIN), logging that once per drive.
#include "probes/drive/hwmon.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "probes/drive/features.h"
#include "probes/drive/identify.h"
#include "probes/drive/smart_log.h"
#include "probes/health_probe.h"
#include "probes/thermal_probe.h"
#include "tests/common/fake_clock.h"
#include "tests/unit/probes/probe_test_util.h"

namespace drivewatch {
namespace {

namespace fs = std::filesystem;
using testing::FakeController;
using testing::Handmade;
using testing::kHandmadeSerial;
using testing::RecordingSink;
using testing::Sample;

class SysfsTree {
 public:
  SysfsTree() {
    root_ = fs::temp_directory_path() /
            ("dw-hwmon-" + std::to_string(::getpid()) + "-" +
             std::to_string(counter_++));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~SysfsTree() { fs::remove_all(root_); }
  std::string root() const { return root_.string(); }
  void Write(const std::string& rel, const std::string& text) {
    const fs::path p = root_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
  }
  // The layout of Linux 5.10 and later: hwmonN under the class device.
  void AddNvmeHwmon(const std::string& ctrl, const std::string& hwmon,
                    const std::string& input, bool thresholds = true) {
    const std::string d = "class/nvme/" + ctrl + "/" + hwmon + "/";
    Write(d + "name", "nvme");
    Write(d + "temp1_input", input);
    if (thresholds) {
      Write(d + "temp1_max", "80850");
      Write(d + "temp1_min", "-273150");
      Write(d + "temp1_crit", "81850");
    }
  }

 private:
  static inline int counter_ = 0;
  fs::path root_;
};

TEST(HwmonTest, ReadsCompositeAndThresholdsInMillidegrees) {
  SysfsTree sys;
  sys.AddNvmeHwmon("nvme0", "hwmon2", "49850");
  auto t = ReadNvmeHwmon(sys.root(), "nvme0");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_DOUBLE_EQ(t->composite_celsius, 49.85);
  EXPECT_DOUBLE_EQ(t->max_celsius.value(), 80.85);
  EXPECT_DOUBLE_EQ(t->min_celsius.value(), -273.15);
  EXPECT_DOUBLE_EQ(t->crit_celsius.value(), 81.85);
  EXPECT_EQ(t->directory, sys.root() + "/class/nvme/nvme0/hwmon2");
}

TEST(HwmonTest, MissingThresholdsAreAbsentNotZero) {
  SysfsTree sys;
  sys.AddNvmeHwmon("nvme1", "hwmon0", "35000", /*thresholds=*/false);
  auto t = ReadNvmeHwmon(sys.root(), "nvme1");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_DOUBLE_EQ(t->composite_celsius, 35.0);
  EXPECT_FALSE(t->max_celsius.has_value());
  EXPECT_FALSE(t->min_celsius.has_value());
  EXPECT_FALSE(t->crit_celsius.has_value());
}

TEST(HwmonTest, FindsTheOldLayoutAndSkipsOtherHwmonDevices) {
  SysfsTree sys;
  // Before 5.10 the hwmon device hung off the PCI function; that function
  // may carry other hwmon devices too.
  sys.Write("class/nvme/nvme0/device/hwmon/hwmon0/name", "acpitz");
  sys.Write("class/nvme/nvme0/device/hwmon/hwmon0/temp1_input", "99000");
  sys.Write("class/nvme/nvme0/device/hwmon/hwmon1/name", "nvme");
  sys.Write("class/nvme/nvme0/device/hwmon/hwmon1/temp1_input", "41850");
  auto t = ReadNvmeHwmon(sys.root(), "nvme0");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_DOUBLE_EQ(t->composite_celsius, 41.85);
}

TEST(HwmonTest, NoHwmonIsENOENTAndGarbageIsEINVAL) {
  SysfsTree sys;
  sys.Write("class/nvme/nvme0/serial", "S1");
  auto none = ReadNvmeHwmon(sys.root(), "nvme0");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().errnum, ENOENT);
  EXPECT_NE(none.error().message.find("CONFIG_NVME_HWMON"), std::string::npos);

  sys.AddNvmeHwmon("nvme1", "hwmon3", "n/a");
  auto bad = ReadNvmeHwmon(sys.root(), "nvme1");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().errnum, EINVAL);
}

TEST(HwmonTest, PermissionDeniedIsOnlyTheKernelRefusingPassthrough) {
  EXPECT_TRUE(AdminPassthroughDenied(Error{EACCES, -1, "x"}));
  EXPECT_TRUE(AdminPassthroughDenied(Error{EPERM, -1, "x"}));
  EXPECT_FALSE(AdminPassthroughDenied(Error{EIO, -1, "x"}));
  EXPECT_FALSE(AdminPassthroughDenied(Error{ENODEV, -1, "x"}));
  // The controller answered: a status, not a refusal by the kernel.
  EXPECT_FALSE(AdminPassthroughDenied(Error{0, 0x4002, "x"}));
}

// --- the thermal probe's fallback ---

class ThermalFallbackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    id_ = Handmade("id-ctrl-HANDMADE-PM981.bin");
    smart_ = Handmade("smart-log-HANDMADE-PM981.bin");
    ASSERT_EQ(id_.size(), kIdentifySize) << "run make_handmade.py";
    info_.name = "nvme0";
    info_.device = "/dev/nvme0";
    info_.serial = kHandmadeSerial;
    sys_.AddNvmeHwmon("nvme0", "hwmon4", "49850");
  }

  void Deny() {
    ctrl_.SetIdentify(kIdentifyCnsController, 0,
                      Error{EACCES, -1,
                            "/dev/nvme0: identify controller: Permission "
                            "denied"});
    ctrl_.SetLogPage(kSmartLogId, kNsidAll,
                     Error{EACCES, -1, "/dev/nvme0: get log page 02h: "
                                       "Permission denied"});
  }
  void Permit() {
    ctrl_.SetIdentify(kIdentifyCnsController, 0, id_);
    ctrl_.SetLogPage(kSmartLogId, kNsidAll, smart_);
    ctrl_.SetFeatureResult(kFeatureTemperatureThreshold, 0x000000, 354);
    ctrl_.SetFeatureResult(kFeatureTemperatureThreshold, 0x100000, 0);
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
  int Warnings() const {
    int n = 0;
    for (const auto& l : logged_) {
      n += l.find("admin passthrough denied") != std::string::npos;
    }
    return n;
  }

  SysfsTree sys_;
  testing::FakeClock clock_;
  std::vector<std::string> logged_;
  ThermalProbe probe_{[this] { return clock_.Now(); },
                      [this](std::string_view l) { logged_.emplace_back(l); },
                      sys_.root()};
  FakeController ctrl_;
  ControllerInfo info_;
  RecordingSink sink_;
  Bytes id_;
  Bytes smart_;
};

TEST_F(ThermalFallbackTest, DeniedPassthroughExportsHwmonAndWarnsOnce) {
  Deny();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Run().ok());
    const std::map<std::string, double> expected = {
        {Key("drivewatch_admin_commands_permitted"), 0},
        {Key("drivewatch_hwmon_temperature_celsius", {{"sensor", "composite"}}),
         49.85},
        {Key("drivewatch_hwmon_temperature_threshold_celsius",
             {{"threshold", "over"}}),
         80.85},
        {Key("drivewatch_hwmon_temperature_threshold_celsius",
             {{"threshold", "under"}}),
         -273.15},
        {Key("drivewatch_hwmon_temperature_threshold_celsius",
             {{"threshold", "cctemp"}}),
         81.85},
    };
    EXPECT_EQ(Emitted(), expected);
  }
  ASSERT_EQ(Warnings(), 1);
  EXPECT_EQ(logged_.size(), 1u);
  const std::string& w = logged_.front();
  for (const char* part :
       {"serial=HANDMADE-PM981", "/dev/nvme0", "needs CAP_SYS_ADMIN on Linux 6.1",
        "health, SMART, thermal thresholds, power states and self-tests are "
        "not available",
        "temperatures come from hwmon", "Permission denied"}) {
    EXPECT_NE(w.find(part), std::string::npos) << part << " not in: " << w;
  }
}

TEST_F(ThermalFallbackTest, PermittedAgainExportsAdminDataAndSaysSo) {
  Deny();
  ASSERT_TRUE(Run().ok());
  Permit();
  ASSERT_TRUE(Run().ok());
  auto emitted = Emitted();
  EXPECT_EQ(emitted.at(Key("drivewatch_admin_commands_permitted")), 1);
  EXPECT_EQ(emitted.count(Key("drivewatch_hwmon_temperature_celsius",
                              {{"sensor", "composite"}})),
            0u);
  EXPECT_EQ(emitted.at(Key("drivewatch_temperature_threshold_celsius",
                           {{"threshold", "over"}, {"sensor", "composite"}})),
            80.85);
  ASSERT_EQ(logged_.size(), 2u);
  EXPECT_NE(logged_.back().find("permitted again"), std::string::npos);
  // Denied again: warned again, once.
  Deny();
  ASSERT_TRUE(Run().ok());
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(Warnings(), 2);
}

TEST_F(ThermalFallbackTest, ARefusalHalfwayLeavesNoAdminSamples) {
  // Identify and the SMART log pass (as Linux 6.2+ can allow), but Get
  // Features is refused: nothing of the admin run may leak out.
  Permit();
  ctrl_.SetFeatureAnswer(kFeatureTemperatureThreshold, 0x000000,
                         Error{EPERM, -1, "get features 04h: not permitted"});
  ASSERT_TRUE(Run().ok());
  auto emitted = Emitted();
  EXPECT_EQ(emitted.at(Key("drivewatch_admin_commands_permitted")), 0);
  for (const auto& [key, value] : emitted) {
    EXPECT_EQ(key.find("drivewatch_thermal_throttling"), std::string::npos);
    EXPECT_EQ(key.find("drivewatch_feature_supported"), std::string::npos);
  }
}

TEST_F(ThermalFallbackTest, DeniedWithoutHwmonFailsAndStillWarnsOnce) {
  info_.name = "nvme7";  // no hwmon in the tree
  Deny();
  auto s = Run();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().errnum, ENOENT);
  EXPECT_NE(s.error().message.find("Permission denied"), std::string::npos);
  EXPECT_NE(s.error().message.find("hwmon"), std::string::npos);
  ASSERT_FALSE(Run().ok());
  EXPECT_EQ(Warnings(), 1);
  EXPECT_NE(logged_.front().find("no hwmon temperature either"),
            std::string::npos);
}

TEST_F(ThermalFallbackTest, OtherErrorsStillFailTheProbe) {
  ctrl_.SetIdentify(kIdentifyCnsController, 0,
                    Error{EIO, -1, "/dev/nvme0: identify controller: I/O"});
  auto s = Run();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().errnum, EIO);
  EXPECT_TRUE(logged_.empty());
}

TEST_F(ThermalFallbackTest, HealthProbeSaysWhyWhenDenied) {
  Deny();
  HealthProbe health;
  auto s = health.Run(ctrl_, info_, sink_);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().errnum, EACCES);
  EXPECT_NE(s.error().message.find("CAP_SYS_ADMIN"), std::string::npos);
  EXPECT_NE(s.error().message.find("drivewatch_admin_commands_permitted"),
            std::string::npos);
}

}  // namespace
}  // namespace drivewatch
