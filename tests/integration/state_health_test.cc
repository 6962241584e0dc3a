// SPDX-License-Identifier: Apache-2.0
// The state directory's health as metrics, on a real file system: a tiny
// ext4 image on a loop device (root, as in CI), made full and remounted
// read-only; and history.log with a damaged record in the middle.
#include "exporter/state_health.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "aging/history/history.h"
#include "aging/runner/phase_runner.h"
#include "tests/integration/mounted_ext4.h"

namespace drivewatch {
namespace {

namespace fs = std::filesystem;

class StateHealthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (fs_.mountpoint().empty()) GTEST_SKIP() << fs_.why();
    mnt_ = fs_.mountpoint();
    config_.state_directory = mnt_ + "/state";
    service_ = std::make_unique<StateHealthService>(store_);
    service_->Reconfigure(config_);
  }

  // The value of an unlabelled gauge in the exposition, or "absent".
  std::string Gauge(const std::string& name) {
    std::istringstream in(*store_.Render());
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(name + " ", 0) == 0) return line.substr(name.size() + 1);
    }
    return "absent";
  }

  testing::MountedExt4 fs_;
  std::string mnt_;
  config::Config config_;
  MetricStore store_;
  std::unique_ptr<StateHealthService> service_;
};

TEST_F(StateHealthTest, AFullFileSystemShowsAsNotWritable) {
  service_->Tick();
  EXPECT_EQ(Gauge("drivewatch_state_directory_writable"), "1");
  ASSERT_TRUE(fs_.Fill());  // ext4's reserved blocks too: root writes there
  const Status probe = ProbeDirectoryWritable(config_.state_directory);
  ASSERT_FALSE(probe.ok());
  EXPECT_EQ(probe.error().errnum, ENOSPC);
  EXPECT_NE(probe.error().message.find(config_.state_directory + "/.write-probe-"), std::string::npos)
      << probe.error().message;
  service_->Tick();
  EXPECT_EQ(Gauge("drivewatch_state_directory_writable"), "0");
  EXPECT_TRUE(fs::is_empty(config_.state_directory)) << "the probe left its file behind";
  fs_.Unfill();
  service_->Tick();
  EXPECT_EQ(Gauge("drivewatch_state_directory_writable"), "1");
}

TEST_F(StateHealthTest, AReadOnlyFileSystemShowsAsNotWritable) {
  service_->Tick();
  EXPECT_EQ(Gauge("drivewatch_state_directory_writable"), "1");
  ASSERT_EQ(std::system(("mount -o remount,ro " + mnt_).c_str()), 0);
  const Status probe = ProbeDirectoryWritable(config_.state_directory);
  ASSERT_FALSE(probe.ok());
  EXPECT_EQ(probe.error().errnum, EROFS) << probe.error().message;
  service_->Tick();
  EXPECT_EQ(Gauge("drivewatch_state_directory_writable"), "0");
  ASSERT_EQ(std::system(("mount -o remount,rw " + mnt_).c_str()), 0);
  service_->Tick();
  EXPECT_EQ(Gauge("drivewatch_state_directory_writable"), "1");
}

TEST_F(StateHealthTest, DamagedHistoryRecordsAreCountedTornTailApart) {
  service_->Tick();
  EXPECT_EQ(Gauge("drivewatch_history_damaged_records"), "0");
  EXPECT_EQ(Gauge("drivewatch_history_readable"), "1");  // no history yet: empty
  const std::string path = aging::HistoryPath(config_.state_directory);
  aging::HistoryFile history(path);
  for (int i = 0; i < 3; ++i) {
    Json r = Json::object();
    r["run"] = "run-" + std::to_string(i);
    r["outcome"] = "completed";
    ASSERT_TRUE(history.Append(r).ok());
  }
  service_->Tick();
  EXPECT_EQ(Gauge("drivewatch_history_damaged_records"), "0");
  // One byte of the middle record's JSON changes on disk.
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    bytes = ss.str();
  }
  const auto at = bytes.find("run-1");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 4] = '7';
  // And a torn append at the end.
  bytes += "DWH1 80 0000";
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  service_->Tick();
  EXPECT_EQ(Gauge("drivewatch_history_damaged_records"), "1");
  EXPECT_EQ(Gauge("drivewatch_history_readable"), "1");
}

}  // namespace
}  // namespace drivewatch
