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

#include "aging/history.h"
#include "aging/phase_runner.h"

namespace drivewatch {
namespace {

namespace fs = std::filesystem;

class StateHealthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a loop device";
    char tmpl[] = "/tmp/dw_state_health.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    image_ = base_ + "/fs.img";
    mnt_ = base_ + "/mnt";
    fs::create_directory(mnt_);
    const std::string make = "truncate -s 2M " + image_ + " && mkfs.ext4 -q -F " + image_ +
                             " >/dev/null 2>&1";
    if (std::system(make.c_str()) != 0) GTEST_SKIP() << "mkfs.ext4 unavailable";
    if (std::system(("mount -o loop " + image_ + " " + mnt_ + " >/dev/null 2>&1").c_str()) != 0) {
      GTEST_SKIP() << "cannot mount a loop device here";
    }
    mounted_ = true;
    config_.state_directory = mnt_ + "/state";
    service_ = std::make_unique<StateHealthService>(store_);
    service_->Reconfigure(config_);
  }

  void TearDown() override {
    if (mounted_ && ::umount2(mnt_.c_str(), 0) != 0) {
      ADD_FAILURE() << mnt_ << ": umount: " << std::strerror(errno);
      ::umount2(mnt_.c_str(), MNT_DETACH);
    }
    if (!base_.empty()) fs::remove_all(base_);
  }

  // The value of an unlabelled gauge in the exposition, or "absent".
  std::string Gauge(const std::string& name) {
    std::istringstream in(*store_.Render());
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(name + " ", 0) == 0) return line.substr(name.size() + 1);
    }
    return "absent";
  }

  std::string base_, image_, mnt_;
  bool mounted_ = false;
  config::Config config_;
  MetricStore store_;
  std::unique_ptr<StateHealthService> service_;
};

TEST_F(StateHealthTest, AFullFileSystemShowsAsNotWritable) {
  service_->Tick();
  EXPECT_EQ(Gauge("drivewatch_state_directory_writable"), "1");
  // Root writes into ext4's reserved blocks too: fill them all.
  const int fd = ::open((mnt_ + "/filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  const std::string chunk(64 * 1024, 'f');
  for (std::size_t size = chunk.size(); size >= 512; size /= 2) {
    while (::write(fd, chunk.data(), size) > 0) {
    }
  }
  ::fsync(fd);
  ::close(fd);
  const Status probe = ProbeDirectoryWritable(config_.state_directory);
  ASSERT_FALSE(probe.ok());
  EXPECT_EQ(probe.error().errnum, ENOSPC);
  EXPECT_NE(probe.error().message.find(config_.state_directory + "/.write-probe-"), std::string::npos)
      << probe.error().message;
  service_->Tick();
  EXPECT_EQ(Gauge("drivewatch_state_directory_writable"), "0");
  EXPECT_TRUE(fs::is_empty(config_.state_directory)) << "the probe left its file behind";
  fs::remove(mnt_ + "/filler");
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
    aging::Json r = aging::Json::Object();
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
