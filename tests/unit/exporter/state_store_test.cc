// SPDX-License-Identifier: Apache-2.0
// The state directory behind the probes' memory (exporter/state_store.h):
// a restart is a new probe reading the same files, and counts nothing
// twice; a file larger than any state is refused unread.
#include "exporter/state_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "log_controller.h"
#include "probes/error_log.h"

namespace drivewatch {
namespace {

using testing::LogController;
using testing::SetEntry;

class TempDir {
 public:
  TempDir()
      : path_(::testing::TempDir() + "dw-smartd-" + std::to_string(::getpid()) +
              "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name()) {
    std::filesystem::remove_all(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct Counter : SampleSink {
  double media = 0;
  void Add(const MetricDesc& d, Labels, double v) override {
    if (std::string(d.name) == "drivewatch_error_log_new_entries_total") media = v;
  }
  void AddHistogram(const MetricDesc&, Labels, std::shared_ptr<const HistogramValue>) override {}
};

TEST(DirectoryStateStoreTest, ErrorLogRestartDoesNotCountTwice) {
  TempDir dir;
  ControllerInfo info{"nvme0", "/dev/nvme0", "S1"};
  LogController ctrl;
  SetEntry(ctrl.error_log, 0, 41);
  {
    ErrorLogProbe probe;
    probe.SetStateStore(std::make_shared<DirectoryStateStore>(dir.path()));
    Counter sink;
    ASSERT_TRUE(probe.Run(ctrl, info, sink).ok());
    EXPECT_EQ(sink.media, 0);
    SetEntry(ctrl.error_log, 1, 42);
    ASSERT_TRUE(probe.Run(ctrl, info, sink).ok());
    EXPECT_EQ(sink.media, 1);
  }
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/error-log-S1.state"));
  // The daemon restarts: a new probe, the same directory, the same log.
  ErrorLogProbe restarted;
  restarted.SetStateStore(std::make_shared<DirectoryStateStore>(dir.path()));
  Counter sink;
  ASSERT_TRUE(restarted.Run(ctrl, info, sink).ok());
  EXPECT_EQ(sink.media, 1) << "the counter continues and nothing is re-counted";
}

TEST(DirectoryStateStoreTest, AFileLargerThanAnyStateIsRefusedUnread) {
  TempDir dir;
  DirectoryStateStore store(dir.path());
  ASSERT_TRUE(store.Save("error-log-S1", "highest 3 0\n").ok());
  const std::string path = dir.path() + "/error-log-S1.state";
  std::filesystem::resize_file(path, std::uintmax_t{1} << 30);  // sparse
  auto r = store.Load("error-log-S1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().errnum, EFBIG);
  EXPECT_EQ(r.error().message, path + ": 1073741824 bytes, larger than a probe state file may be "
                                      "(expected at most 1048576 bytes)");
}

TEST(DirectoryStateStoreTest, MissingFileIsEnoent) {
  TempDir dir;
  DirectoryStateStore store(dir.path());
  auto r = store.Load("nothing");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().errnum, ENOENT);
  ASSERT_TRUE(store.Save("a/b c", "x 1\n").ok());
  EXPECT_EQ(*store.Load("a/b c"), "x 1\n");
}

}  // namespace
}  // namespace drivewatch
