// SPDX-License-Identifier: Apache-2.0
#include "exporter/drive_monitor.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "config/util/durable_file.h"
#include "tests/common/fake_clock.h"

namespace drivewatch {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using testing::FakeClock;

// A drive layer whose topology the test edits, to show hot-plug, renames and
// vanished drives, which no real part here can do on demand (the VM harness
// shows the same with QEMU's device_del/device_add).
class FakeDriveLayer : public DriveLayer {
 public:
  class FakeController : public Controller {
   public:
    explicit FakeController(int* closed) : closed_(closed) {}
    ~FakeController() override { ++*closed_; }
    Expected<Bytes> Identify(std::uint8_t, std::uint32_t) override { return Bytes(4096); }
    Expected<Bytes> GetLogPage(std::uint8_t, std::uint32_t, std::size_t n) override {
      return Bytes(n);
    }
    Expected<FeatureValue> GetFeature(std::uint8_t, std::uint32_t, std::size_t) override {
      return FeatureValue{};
    }

   private:
    int* closed_;
  };

  Expected<std::vector<ControllerInfo>> Scan() override {
    if (scan_error) return Error{EIO, -1, "scan failed"};
    return controllers;
  }
  Expected<std::unique_ptr<Controller>> Open(const ControllerInfo& info) override {
    if (not_live.count(info.device)) {
      // As the kernel's nvme_dev_open answers for a controller that is not
      // live yet (resetting, or connecting after a hot-plug).
      return Error{EAGAIN, -1, info.device + ": open: Resource temporarily unavailable"};
    }
    opened.push_back(info.device);
    return std::unique_ptr<Controller>(std::make_unique<FakeController>(&closed));
  }

  std::vector<ControllerInfo> controllers;
  std::set<std::string> not_live;  // devices whose open answers EAGAIN
  std::vector<std::string> opened;
  int closed = 0;
  bool scan_error = false;
};

ControllerInfo Ctrl(const std::string& name, const std::string& serial,
                    const std::string& model = "Test Model") {
  ControllerInfo c;
  c.name = name;
  c.device = "/dev/" + name;
  c.serial = serial;
  c.model = model;
  c.firmware = "1.0";
  c.transport = "pcie";
  c.address = "0000:00:04.0";
  return c;
}

constexpr MetricDesc kProbeValue{"drivewatch_test_probe_value",
                                 "A value the test probe reports.",
                                 MetricType::kGauge};

// A probe whose outcome per serial the test decides.
struct ProbeScript {
  std::map<std::string, bool> fail;  // serial -> fail?
  int runs = 0;
};

class ScriptedProbe : public DriveProbe {
 public:
  explicit ScriptedProbe(ProbeScript* script) : script_(script) {}
  const char* name() const override { return "test"; }
  Status Run(Controller&, const ControllerInfo& info, SampleSink& sink) override {
    ++script_->runs;
    sink.Add(kProbeValue, {{"serial", info.serial}}, 7);
    if (script_->fail[info.serial]) return Error{EIO, -1, info.device + ": boom"};
    return Ok{};
  }

 private:
  ProbeScript* script_;
};

class DriveMonitorTest : public ::testing::Test {
 protected:
  DriveMonitorTest() {
    registrations_.push_back(
        {"test", [this] { return std::make_unique<ScriptedProbe>(&script_); },
         [](const config::Config& c) { return c.probe("health"); }});
    config_ = config::Defaults();
    state_dir_ = std::filesystem::temp_directory_path() /
                 ("dw-monitor-test-" + std::to_string(::getpid()) + "-" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(state_dir_);
    config_.state_directory = state_dir_.string();
    config_.discovery_interval = seconds(30);
    config_.drive_grace_period = minutes(10);
    config_.probe("health").interval = seconds(60);
    Reset();
  }
  ~DriveMonitorTest() override { std::filesystem::remove_all(state_dir_); }

  // A fresh daemon (as after a restart) over the same state directory.
  void Reset() {
    monitor_.reset();
    scheduler_ = std::make_unique<Scheduler>(clock_, executor_);
    store_ = std::make_unique<MetricStore>();
    monitor_ = std::make_unique<DriveMonitor>(layer_, *store_, *scheduler_,
                                              clock_, registrations_);
  }

  // Runs everything due now, twice: discovery, then the probes it scheduled.
  void Settle() {
    scheduler_->Tick();
    scheduler_->Tick();
  }

  std::string Metrics() { return *store_->Render(); }
  bool Has(const std::string& line) {
    return Metrics().find(line + "\n") != std::string::npos;
  }

  FakeClock clock_;
  InlineExecutor executor_;
  FakeDriveLayer layer_;
  ProbeScript script_;
  std::vector<ProbeRegistration> registrations_;
  config::Config config_;
  std::filesystem::path state_dir_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<MetricStore> store_;
  std::unique_ptr<DriveMonitor> monitor_;
};

TEST_F(DriveMonitorTest, NewDriveIsUpWithInfoAndProbeResults) {
  layer_.controllers = {Ctrl("nvme0", "SN1")};
  monitor_->Start(config_);
  Settle();
  EXPECT_TRUE(Has("drivewatch_drive_up{serial=\"SN1\"} 1")) << Metrics();
  EXPECT_TRUE(Has("drivewatch_drive_info{address=\"0000:00:04.0\",firmware=\"1.0\","
                  "kernel_name=\"nvme0\",model=\"Test Model\",serial=\"SN1\","
                  "transport=\"pcie\"} 1"))
      << Metrics();
  EXPECT_TRUE(Has("drivewatch_test_probe_value{serial=\"SN1\"} 7"));
  EXPECT_TRUE(Has("drivewatch_probe_success{probe=\"test\",serial=\"SN1\"} 1"));
  EXPECT_TRUE(Has("drivewatch_probe_last_success_timestamp_seconds{probe=\"test\","
                  "serial=\"SN1\"} 1767225600"))
      << Metrics();
  EXPECT_TRUE(Has("drivewatch_drives{state=\"up\"} 1"));
  EXPECT_TRUE(Has("drivewatch_discovery_success 1"));
}

TEST_F(DriveMonitorTest, VanishedDriveReportsDownForTheGracePeriodThenGoes) {
  layer_.controllers = {Ctrl("nvme0", "SN1"), Ctrl("nvme1", "SN2")};
  monitor_->Start(config_);
  Settle();
  layer_.controllers = {Ctrl("nvme1", "SN2")};
  clock_.Advance(seconds(30));
  Settle();
  EXPECT_TRUE(Has("drivewatch_drive_up{serial=\"SN1\"} 0")) << Metrics();
  EXPECT_FALSE(Has("drivewatch_test_probe_value{serial=\"SN1\"} 7"))
      << "a vanished drive's probe values must not linger";
  EXPECT_TRUE(Has("drivewatch_test_probe_value{serial=\"SN2\"} 7"));
  EXPECT_TRUE(Has("drivewatch_drives{state=\"down\"} 1"));

  clock_.Advance(minutes(9));
  Settle();
  EXPECT_TRUE(Has("drivewatch_drive_up{serial=\"SN1\"} 0"));
  clock_.Advance(minutes(1));
  Settle();
  EXPECT_EQ(Metrics().find("\"SN1\""), std::string::npos) << Metrics();
  EXPECT_TRUE(Has("drivewatch_drive_up{serial=\"SN2\"} 1"));
}

TEST_F(DriveMonitorTest, VanishedDriveHasItsDeviceClosed) {
  layer_.controllers = {Ctrl("nvme0", "SN1")};
  monitor_->Start(config_);
  Settle();
  ASSERT_EQ(layer_.opened.size(), 1u);
  EXPECT_EQ(layer_.closed, 0);
  layer_.controllers = {};
  clock_.Advance(seconds(30));
  Settle();
  // Held open, /dev/nvme0 would keep the kernel from reusing the name.
  EXPECT_EQ(layer_.closed, 1);
}

TEST_F(DriveMonitorTest, DriveBackUnderAnotherKernelNameKeepsItsSeries) {
  layer_.controllers = {Ctrl("nvme0", "SN1")};
  monitor_->Start(config_);
  Settle();
  layer_.controllers = {};
  clock_.Advance(seconds(30));
  Settle();
  EXPECT_TRUE(Has("drivewatch_drive_up{serial=\"SN1\"} 0"));
  layer_.controllers = {Ctrl("nvme3", "SN1")};
  clock_.Advance(seconds(30));
  Settle();
  EXPECT_TRUE(Has("drivewatch_drive_up{serial=\"SN1\"} 1")) << Metrics();
  EXPECT_NE(Metrics().find("kernel_name=\"nvme3\""), std::string::npos);
  EXPECT_EQ(Metrics().find("kernel_name=\"nvme0\""), std::string::npos);
  EXPECT_TRUE(Has("drivewatch_test_probe_value{serial=\"SN1\"} 7"));
  // The probe reopened the controller under its new name.
  ASSERT_FALSE(layer_.opened.empty());
  EXPECT_EQ(layer_.opened.back(), "/dev/nvme3");
}

// A controller back from a hot-plug is listed before it is live, and the
// kernel refuses to open it until then. A probe run that meets that is not a
// failure (a probe with a long interval would show one for its whole
// interval): it publishes nothing and runs again at the next discovery.
TEST_F(DriveMonitorTest, AControllerNotLiveYetIsProbedOnceItIs) {
  config_.probe("health").interval = std::chrono::hours(1);
  layer_.controllers = {Ctrl("nvme0", "SN1")};
  layer_.not_live = {"/dev/nvme0"};
  monitor_->Start(config_);
  Settle();
  EXPECT_TRUE(Has("drivewatch_drive_up{serial=\"SN1\"} 1")) << Metrics();
  EXPECT_EQ(script_.runs, 0);
  EXPECT_EQ(Metrics().find("drivewatch_probe_success{probe=\"test\""), std::string::npos)
      << Metrics();
  EXPECT_EQ(Metrics().find("drivewatch_probe_failures_total{probe=\"test\""), std::string::npos)
      << Metrics();
  clock_.Advance(seconds(30));  // the next discovery: still not live
  Settle();
  EXPECT_EQ(script_.runs, 0);
  layer_.not_live.clear();
  clock_.Advance(seconds(30));  // live now: run at this discovery, not in an hour
  Settle();
  Settle();
  EXPECT_EQ(script_.runs, 1);
  EXPECT_TRUE(Has("drivewatch_probe_success{probe=\"test\",serial=\"SN1\"} 1")) << Metrics();
  EXPECT_TRUE(Has("drivewatch_probe_failures_total{probe=\"test\",serial=\"SN1\"} 0"))
      << Metrics();
}

// A controller that stays not live past the grace is a failing probe.
TEST_F(DriveMonitorTest, AControllerNeverLiveFailsItsProbesAfterTheGrace) {
  layer_.controllers = {Ctrl("nvme0", "SN1")};
  layer_.not_live = {"/dev/nvme0"};
  monitor_->Start(config_);
  Settle();
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(seconds(30));
    Settle();
    Settle();
  }
  EXPECT_EQ(script_.runs, 0);
  EXPECT_TRUE(Has("drivewatch_probe_success{probe=\"test\",serial=\"SN1\"} 0")) << Metrics();
  EXPECT_TRUE(Has("drivewatch_probe_failures_total{probe=\"test\",serial=\"SN1\"} 1"))
      << Metrics();
}

TEST_F(DriveMonitorTest, FailingProbeOnOneDriveLeavesTheOthersAlone) {
  layer_.controllers = {Ctrl("nvme0", "SN1"), Ctrl("nvme1", "SN2")};
  monitor_->Start(config_);
  Settle();
  script_.fail["SN1"] = true;
  clock_.Advance(seconds(60));
  Settle();
  EXPECT_TRUE(Has("drivewatch_probe_success{probe=\"test\",serial=\"SN1\"} 0"));
  EXPECT_FALSE(Has("drivewatch_test_probe_value{serial=\"SN1\"} 7"))
      << "samples of a failed run are dropped";
  // The last success stays where it was: one minute ago.
  EXPECT_TRUE(Has("drivewatch_probe_last_success_timestamp_seconds{probe=\"test\","
                  "serial=\"SN1\"} 1767225600"))
      << Metrics();
  EXPECT_TRUE(Has("drivewatch_probe_success{probe=\"test\",serial=\"SN2\"} 1"));
  EXPECT_TRUE(Has("drivewatch_test_probe_value{serial=\"SN2\"} 7"));
  EXPECT_TRUE(Has("drivewatch_probe_failures_total{probe=\"test\",serial=\"SN1\"} 1"));
  EXPECT_TRUE(Has("drivewatch_probe_failures_total{probe=\"test\",serial=\"SN2\"} 0"));
  clock_.Advance(seconds(60));
  Settle();
  EXPECT_TRUE(Has("drivewatch_probe_failures_total{probe=\"test\",serial=\"SN1\"} 2"));

  script_.fail["SN1"] = false;
  clock_.Advance(seconds(60));
  Settle();
  // The count of failures stays; only the last run's success changes.
  EXPECT_TRUE(Has("drivewatch_probe_failures_total{probe=\"test\",serial=\"SN1\"} 2"));
  EXPECT_TRUE(Has("drivewatch_probe_success{probe=\"test\",serial=\"SN1\"} 1"));
  EXPECT_TRUE(Has("drivewatch_probe_last_success_timestamp_seconds{probe=\"test\","
                  "serial=\"SN1\"} 1767225780"))
      << Metrics();
}

TEST_F(DriveMonitorTest, SelectionIncludesAndExcludesByGlob) {
  layer_.controllers = {Ctrl("nvme0", "S4A1", "Samsung SSD 980"),
                        Ctrl("nvme1", "S4A2", "Samsung SSD 980"),
                        Ctrl("nvme2", "PHAB1", "INTEL SSDPEKNW")};
  config_.drives.include_models = {"Samsung*"};
  config_.drives.exclude_serials = {"S4A2"};
  monitor_->Start(config_);
  Settle();
  EXPECT_TRUE(Has("drivewatch_drive_up{serial=\"S4A1\"} 1"));
  EXPECT_EQ(Metrics().find("S4A2"), std::string::npos);
  EXPECT_EQ(Metrics().find("PHAB1"), std::string::npos);
}

TEST_F(DriveMonitorTest, ReloadThatDeselectsADriveDropsItAtOnce) {
  layer_.controllers = {Ctrl("nvme0", "SN1"), Ctrl("nvme1", "SN2")};
  monitor_->Start(config_);
  Settle();
  config_.drives.exclude_serials = {"SN2"};
  monitor_->Reconfigure(config_);
  EXPECT_EQ(Metrics().find("SN2"), std::string::npos) << Metrics();
  Settle();
  EXPECT_EQ(Metrics().find("SN2"), std::string::npos) << Metrics();
  EXPECT_TRUE(Has("drivewatch_drive_up{serial=\"SN1\"} 1"));
}

TEST_F(DriveMonitorTest, ReloadCanSwitchAProbeOff) {
  layer_.controllers = {Ctrl("nvme0", "SN1")};
  monitor_->Start(config_);
  Settle();
  const int runs = script_.runs;
  config_.probe("health").enabled = false;
  monitor_->Reconfigure(config_);
  clock_.Advance(minutes(5));
  Settle();
  EXPECT_EQ(script_.runs, runs);
  EXPECT_EQ(Metrics().find("drivewatch_probe_success"), std::string::npos);
  EXPECT_TRUE(Has("drivewatch_drive_up{serial=\"SN1\"} 1"));
}

TEST_F(DriveMonitorTest, DriveMissingAfterARestartIsReportedDown) {
  layer_.controllers = {Ctrl("nvme0", "SN1")};
  monitor_->Start(config_);
  Settle();
  auto saved = ReadWholeFile(state_dir_.string() + "/known-drives.tsv");
  ASSERT_TRUE(saved.ok());
  EXPECT_NE(saved->find("SN1\tnvme0\tTest Model\t1.0\n"), std::string::npos);

  layer_.controllers = {};
  Reset();  // the daemon restarts; the drive died meanwhile
  monitor_->Start(config_);
  Settle();
  EXPECT_TRUE(Has("drivewatch_drive_up{serial=\"SN1\"} 0")) << Metrics();
  EXPECT_NE(Metrics().find("kernel_name=\"nvme0\""), std::string::npos);
  clock_.Advance(minutes(10));
  Settle();
  EXPECT_EQ(Metrics().find("SN1"), std::string::npos) << Metrics();
  saved = ReadWholeFile(state_dir_.string() + "/known-drives.tsv");
  ASSERT_TRUE(saved.ok());
  EXPECT_EQ(saved->find("SN1"), std::string::npos);
}

TEST_F(DriveMonitorTest, DiscoveryFailureIsReportedAndDrivesStay) {
  layer_.controllers = {Ctrl("nvme0", "SN1")};
  monitor_->Start(config_);
  Settle();
  layer_.scan_error = true;
  clock_.Advance(seconds(30));
  Settle();
  EXPECT_TRUE(Has("drivewatch_discovery_success 0"));
  EXPECT_TRUE(Has("drivewatch_drive_up{serial=\"SN1\"} 1"))
      << "a failed scan says nothing about the drives";
}

TEST_F(DriveMonitorTest, NoDrivesStillServesExporterMetrics) {
  monitor_->Start(config_);
  Settle();
  EXPECT_TRUE(Has("drivewatch_discovery_success 1"));
  EXPECT_TRUE(Has("drivewatch_drives{state=\"up\"} 0"));
}

}  // namespace
}  // namespace drivewatch
