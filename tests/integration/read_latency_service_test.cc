// SPDX-License-Identifier: Apache-2.0
// ReadLatencyService's hot-plug path with real parts: loop devices (with
// --direct-io=on, real io_uring and O_DIRECT) stand in for NVMe namespaces'
// block devices, and a fixture sysfs tree gives each loop device the serial
// and nsid that the kernel's NVMe driver would (probes/drive/namespace_identity.h;
// the real layout is checked in the VM, tests/vm/latency). Discovery is
// played by calling DrivesPresent() with what DriveMonitor would pass.
// Run as root (CI does); skipped otherwise.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <string>
#include <thread>

#include "config/config.h"
#include "exporter/clock.h"
#include "exporter/metric_store.h"
#include "exporter/read_latency_service.h"
#include "exporter/scheduler.h"
#include "probes/drive/io_target.h"

namespace drivewatch {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string Shell(const std::string& command) {
  std::string out;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  char buf[512];
  while (p && std::fgets(buf, sizeof buf, p)) out += buf;
  const int status = p ? ::pclose(p) : -1;
  if (status != 0) return "";
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// The value of the first series `name` whose labels include every one of
// `labels` (k="v" pairs) in the text exposition, or -1.
double Find(const std::string& text, const std::string& name,
            const std::vector<std::string>& labels) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + "{", 0) != 0) continue;
    const auto close = line.rfind('}');
    const std::string set = line.substr(name.size(), close - name.size() + 1);
    bool all = true;
    for (const auto& l : labels) all = all && set.find(l) != std::string::npos;
    if (all) return std::stod(line.substr(close + 2));
  }
  return -1;
}

class ServiceHotPlugTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "loop devices need root";
    char name[] = "/var/tmp/dw-service-test.XXXXXX";
    dir_ = ::mkdtemp(name);
    sysfs_ = dir_ + "/sys";
    for (int i = 0; i < 3; ++i) {
      auto file = PrepareTestFile(dir_, "ns" + std::to_string(i) + ".img", 8 << 20, 0.05);
      ASSERT_TRUE(file.ok()) << file.error().message;
      const std::string dev = Shell("losetup --direct-io=on --show -f " + *file);
      if (dev.empty()) GTEST_SKIP() << "losetup --direct-io=on failed";
      loops_.push_back(dev);
    }
    config_.read_latency.rates = {100};
    config_.read_latency.rate_period = 3'600'000ms;
    config_.read_latency.timeout = 2'000ms;
    config_.read_latency.windows = {60'000ms};
    service_ = std::make_unique<ReadLatencyService>(store_, scheduler_, sysfs_);
    service_->Start(config_);
  }
  void TearDown() override {
    service_.reset();  // joins every probe thread before the devices go
    for (const auto& dev : loops_) Shell("losetup -d " + dev);
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // What the NVMe driver would show for loop device `i` in sysfs.
  void Identity(int i, const std::string& serial, std::uint32_t nsid) {
    struct stat st {};
    ASSERT_EQ(::stat(loops_[i].c_str(), &st), 0);
    const fs::path d = fs::path(sysfs_) / "dev/block" /
                       (std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev)));
    fs::create_directories(d / "device");
    std::ofstream(d / "device/serial") << serial << "\n";
    std::ofstream(d / "nsid") << nsid << "\n";
  }
  // Reads the kernel completed on loop device `i` (/sys/block/loopN/stat,
  // the first field): the real device, not the fixture sysfs tree.
  std::uint64_t KernelReads(int i) {
    std::ifstream in("/sys/block/" + fs::path(loops_[i]).filename().string() + "/stat");
    std::uint64_t reads = 0;
    in >> reads;
    return reads;
  }
  static ControllerInfo Drive(const std::string& serial, const std::string& dev) {
    ControllerInfo c;
    c.serial = serial;
    c.name = "nvme-" + serial;
    NamespaceInfo ns;
    ns.nsid = 1;
    ns.block_device = dev;
    ns.name = fs::path(dev).filename();
    c.namespaces.push_back(ns);
    return c;
  }
  std::string Metrics() {
    service_->PublishAll();
    return *store_.Render();
  }
  double Reads(const std::string& serial) {
    return Find(Metrics(), "drivewatch_read_latency_seconds_count",
                {"serial=\"" + serial + "\"", "nsid=\"1\""});
  }
  bool WaitFor(const std::function<bool()>& cond, std::chrono::seconds limit = 10s) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!cond()) {
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::sleep_for(50ms);
    }
    return true;
  }

  std::string dir_, sysfs_;
  std::vector<std::string> loops_;
  config::Config config_;
  MetricStore store_;
  SystemClock clock_;
  InlineExecutor executor_;
  Scheduler scheduler_{clock_, executor_};
  std::unique_ptr<ReadLatencyService> service_;
};

TEST_F(ServiceHotPlugTest, TargetsFollowDiscovery) {
  Identity(0, "SNA", 1);
  Identity(1, "SNB", 1);
  service_->DrivesPresent({Drive("SNA", loops_[0])});
  ASSERT_TRUE(WaitFor([&] { return Reads("SNA") >= 20; })) << Metrics();
  EXPECT_EQ(Reads("SNB"), -1);

  // A second drive appears.
  service_->DrivesPresent({Drive("SNA", loops_[0]), Drive("SNB", loops_[1])});
  ASSERT_TRUE(WaitFor([&] { return Reads("SNB") >= 20; })) << Metrics();

  // The first vanishes: its series go, the other's keep growing.
  service_->DrivesPresent({Drive("SNB", loops_[1])});
  const std::string after = Metrics();
  EXPECT_EQ(after.find("serial=\"SNA\""), std::string::npos) << after;
  const double b = Reads("SNB");
  EXPECT_TRUE(WaitFor([&] { return Reads("SNB") >= b + 20; }));
}

// The rate is the drive's: two namespaces of one serial are read at 100
// IOPS together (about 50 each, dealt round-robin), counted by the kernel
// on the loop devices themselves, and each keeps its own histogram.
TEST_F(ServiceHotPlugTest, TwoNamespacesShareTheDrivesRate) {
  Identity(0, "SNA", 1);
  Identity(1, "SNA", 2);
  ControllerInfo drive = Drive("SNA", loops_[0]);
  NamespaceInfo second;
  second.nsid = 2;
  second.block_device = loops_[1];
  second.name = fs::path(loops_[1]).filename();
  drive.namespaces.push_back(second);
  service_->DrivesPresent({drive});
  const auto ns_reads = [&](const char* nsid) {
    return Find(Metrics(), "drivewatch_read_latency_seconds_count",
                {"serial=\"SNA\"", std::string("nsid=\"") + nsid + "\""});
  };
  // Both open and sharing before the window starts.
  ASSERT_TRUE(WaitFor([&] { return ns_reads("1") >= 10 && ns_reads("2") >= 10; }))
      << Metrics();
  const std::uint64_t k0 = KernelReads(0), k1 = KernelReads(1);
  const double h0 = ns_reads("1"), h1 = ns_reads("2");
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(4s);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double kernel0 = static_cast<double>(KernelReads(0) - k0);
  const double kernel1 = static_cast<double>(KernelReads(1) - k1);
  const double total = (kernel0 + kernel1) / seconds;
  EXPECT_NEAR(total, 100, 12) << kernel0 << " + " << kernel1 << " reads in " << seconds << " s";
  EXPECT_NEAR(kernel0 / seconds, 50, 8);
  EXPECT_NEAR(kernel1 / seconds, 50, 8);
  // Per-namespace histograms, each with only its own reads.
  EXPECT_NEAR((ns_reads("1") - h0) / seconds, 50, 8);
  EXPECT_NEAR((ns_reads("2") - h1) / seconds, 50, 8);

  // One namespace goes: the other takes the drive's whole rate.
  service_->DrivesPresent({Drive("SNA", loops_[0])});
  std::this_thread::sleep_for(500ms);
  const std::uint64_t alone = KernelReads(0);
  std::this_thread::sleep_for(3s);
  EXPECT_NEAR(static_cast<double>(KernelReads(0) - alone) / 3.0, 100, 12);
}

// Unplugged and plugged back within the grace period, under another kernel
// name: the namespace's series go while it is away and come back counting
// on, not from zero (so a read that failed at the unplug stays counted).
TEST_F(ServiceHotPlugTest, ReturningNamespaceContinuesItsCounts) {
  Identity(0, "SNA", 1);
  Identity(1, "SNB", 1);
  service_->DrivesPresent({Drive("SNA", loops_[0]), Drive("SNB", loops_[1])});
  ASSERT_TRUE(WaitFor([&] { return Reads("SNA") >= 50; })) << Metrics();
  service_->DrivesPresent({Drive("SNB", loops_[1])});
  const std::string away = Metrics();
  EXPECT_EQ(away.find("serial=\"SNA\""), std::string::npos) << away;

  Identity(2, "SNA", 1);  // back, as another block device
  service_->DrivesPresent({Drive("SNA", loops_[2]), Drive("SNB", loops_[1])});
  double back = -1;
  ASSERT_TRUE(WaitFor([&] { return (back = Reads("SNA")) >= 0; })) << Metrics();
  EXPECT_GE(back, 50) << "counting on from before the unplug, not from zero";
  EXPECT_TRUE(WaitFor([&] { return Reads("SNA") >= back + 20; })) << Metrics();
  EXPECT_EQ(Find(Metrics(), "drivewatch_read_latency_target_info",
                 {"path=\"" + loops_[2] + "\""}), 1);
}

// Past the grace period a returning drive starts afresh.
TEST_F(ServiceHotPlugTest, NamespaceBackAfterTheGracePeriodStartsAfresh) {
  config_.drive_grace_period = std::chrono::milliseconds(200);
  service_->Reconfigure(config_);
  Identity(0, "SNA", 1);
  service_->DrivesPresent({Drive("SNA", loops_[0])});
  ASSERT_TRUE(WaitFor([&] { return Reads("SNA") >= 200; })) << Metrics();
  service_->DrivesPresent({});
  std::this_thread::sleep_for(300ms);
  service_->DrivesPresent({});  // a discovery pass after the grace period
  service_->DrivesPresent({Drive("SNA", loops_[0])});
  double fresh = -1;
  ASSERT_TRUE(WaitFor([&] { return (fresh = Reads("SNA")) >= 0; })) << Metrics();
  EXPECT_LT(fresh, 200);
}

TEST_F(ServiceHotPlugTest, RenamedNamespaceKeepsItsSeries) {
  Identity(0, "SNA", 1);
  service_->DrivesPresent({Drive("SNA", loops_[0])});
  ASSERT_TRUE(WaitFor([&] { return Reads("SNA") >= 50; })) << Metrics();
  // The kernel now calls SNA's namespace by another name (loop 2 plays the
  // renamed node; loop 0 now belongs to nobody we know).
  Identity(2, "SNA", 1);
  const double before = Reads("SNA");
  service_->DrivesPresent({Drive("SNA", loops_[2])});
  const std::string path = "path=\"" + loops_[2] + "\"";
  ASSERT_TRUE(WaitFor([&] {
    return Find(Metrics(), "drivewatch_read_latency_target_info", {path}) == 1;
  })) << Metrics();
  // Same series, counting on from where it was: no reset to zero.
  const double moved = Reads("SNA");
  EXPECT_GE(moved, before);
  // The reads now go to the new device, at once: the move does not end the
  // rate's turn nor start the idle period (30 s by default) between turns.
  const std::uint64_t loop2_reads = KernelReads(2);
  EXPECT_TRUE(WaitFor([&] { return KernelReads(2) >= loop2_reads + 50; }))
      << "loop 2 completed " << KernelReads(2) - loop2_reads << " reads";
  EXPECT_TRUE(WaitFor([&] { return Reads("SNA") >= moved + 50; }));
  EXPECT_EQ(Find(Metrics(), "drivewatch_read_latency_target_up", {"serial=\"SNA\""}), 1);
}

TEST_F(ServiceHotPlugTest, AnotherDrivesNamespaceIsNotReadUnderThisSerial) {
  // Discovery is stale: it still says SNC is at loop 0, but loop 0 is SNA's.
  Identity(0, "SNA", 1);
  service_->DrivesPresent({Drive("SNC", loops_[0])});
  ASSERT_TRUE(WaitFor([&] {
    return Find(Metrics(), "drivewatch_read_latency_identity_mismatches_total",
                {"serial=\"SNC\""}) >= 1;
  })) << Metrics();
  const std::string m = Metrics();
  EXPECT_EQ(Find(m, "drivewatch_read_latency_target_up", {"serial=\"SNC\""}), 0);
  EXPECT_EQ(Reads("SNC"), 0);
  // The next discovery has it right: SNA is read, at loop 0.
  service_->DrivesPresent({Drive("SNA", loops_[0])});
  EXPECT_TRUE(WaitFor([&] { return Reads("SNA") >= 20; })) << Metrics();
  EXPECT_EQ(Metrics().find("serial=\"SNC\""), std::string::npos);
}

TEST_F(ServiceHotPlugTest, PauseAndResumeBySerial) {
  Identity(0, "SNA", 1);
  Identity(1, "SNB", 1);
  // A pause that comes before the drive does holds for it when it appears.
  service_->Pause("SNB");
  service_->DrivesPresent({Drive("SNA", loops_[0]), Drive("SNB", loops_[1])});
  ASSERT_TRUE(WaitFor([&] { return Reads("SNA") >= 20; })) << Metrics();
  auto paused = [&](const std::string& sn) {
    return Find(Metrics(), "drivewatch_read_latency_paused", {"serial=\"" + sn + "\""});
  };
  EXPECT_EQ(paused("SNB"), 1);
  EXPECT_EQ(paused("SNA"), 0);
  EXPECT_EQ(Reads("SNB"), 0);

  service_->Pause("SNA");
  std::this_thread::sleep_for(100ms);  // a read in flight may still land
  const double at = Reads("SNA");
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(Reads("SNA"), at);
  EXPECT_EQ(paused("SNA"), 1);

  // Pauses nest: two pauses of SNB need two resumes.
  service_->Pause("SNB");
  service_->Resume("SNB");
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(Reads("SNB"), 0);
  service_->Resume("SNB");
  service_->Resume("SNA");
  EXPECT_TRUE(WaitFor([&] { return Reads("SNB") >= 20 && Reads("SNA") >= at + 20; }))
      << Metrics();
  EXPECT_EQ(paused("SNA"), 0);
  EXPECT_EQ(paused("SNB"), 0);
}

}  // namespace
}  // namespace drivewatch
