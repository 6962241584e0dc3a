// SPDX-License-Identifier: Apache-2.0
// History appends on a real, full filesystem: a tiny ext4 image on a loop
// device (root, as in CI). A full disk must cost the new record only, never
// the records already there, and leave no torn bytes behind.
#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "aging/history/history.h"
#include "tests/integration/mounted_ext4.h"

namespace drivewatch::aging {
namespace {

namespace fs = std::filesystem;

Json Record(int i, int series_points) {
  Json r;
  r["version"] = 1;
  r["run"] = "run-" + std::to_string(i);
  r["phase"] = "fill-half";
  r["serial"] = "SN1";
  r["outcome"] = "completed";
  r["results"]["written_bytes"] = 1000 + i;
  Json& series = r["series"]["throughput_bytes_per_second"];
  series = Json::array();
  for (int k = 0; k < series_points; ++k) series.push_back(1.234567e9 + k);
  return r;
}

class HistoryEnospcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (fs_.mountpoint().empty()) GTEST_SKIP() << fs_.why();
    mnt_ = fs_.mountpoint();
  }

  // Fills the filesystem, then frees `leave_free` bytes so a big append
  // gets partly written before ENOSPC: the case that needs cutting back.
  void FillFilesystem(off_t leave_free) { ASSERT_TRUE(fs_.Fill(leave_free)); }

  testing::MountedExt4 fs_;
  std::string mnt_;
};

TEST_F(HistoryEnospcTest, FullDiskFailsCleanlyAndKeepsEarlierRecords) {
  const std::string path = mnt_ + "/history.log";
  HistoryFile history(path);
  ASSERT_TRUE(history.Append(Record(1, 10)).ok());
  ASSERT_TRUE(history.Append(Record(2, 10)).ok());
  const std::uintmax_t size_before = fs::file_size(path);

  FillFilesystem(64 * 1024);
  // Far bigger than the space left: the write gets partway, then ENOSPC.
  const Json big = Record(3, 40000);
  Status s = history.Append(big);
  ASSERT_FALSE(s.ok()) << "append succeeded on a full filesystem";
  EXPECT_EQ(s.error().errnum, ENOSPC);
  EXPECT_EQ(s.error().message, path + ": write: No space left on device");
  EXPECT_EQ(fs::file_size(path), size_before) << "partial write not cut back";

  Expected<HistoryContents> c = history.Read();
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->records.size(), 2u);
  EXPECT_EQ(c->records[0], Record(1, 10));
  EXPECT_EQ(c->records[1], Record(2, 10));
  EXPECT_EQ(c->torn_tail_bytes, 0u);
  EXPECT_TRUE(c->damaged.empty());

  // Space back: the same object appends where it left off.
  fs::remove(mnt_ + "/filler");
  Status again = history.Append(big);
  ASSERT_TRUE(again.ok()) << again.error().message;
  Expected<HistoryContents> after = HistoryFile(path).Read();
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->records.size(), 3u);
  EXPECT_EQ(after->records[2], big);
  EXPECT_EQ(after->torn_tail_bytes, 0u);
}

}  // namespace
}  // namespace drivewatch::aging
