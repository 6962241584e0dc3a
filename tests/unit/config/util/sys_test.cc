// SPDX-License-Identifier: Apache-2.0
// The system-call helpers (config/util/sys.h): errors that name the thing
// and the call, sysfs-style attributes read whole and trimmed, and a
// directory's fsync, on real files under /var/tmp.
#include "config/util/sys.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "tests/common/file_text.h"
#include "tests/common/scratch_dir.h"

namespace drivewatch::util {
namespace {

using drivewatch::testing::ScratchDir;
using drivewatch::testing::WriteFileText;

TEST(SysTest, ErrorsNameTheSubjectAndTheCall) {
  const Error with = SysError(ENOSPC, "/var/lib/drivewatch/history", "fsync");
  EXPECT_EQ(with.errnum, ENOSPC);
  EXPECT_EQ(with.message, "/var/lib/drivewatch/history: fsync: No space left on device");
  EXPECT_EQ(SysError(ENOENT, "/sys/class/nvme").message,
            "/sys/class/nvme: No such file or directory");
}

TEST(SysTest, AnAttributeIsReadWholeWithoutItsBlanks) {
  const ScratchDir dir("sys");
  WriteFileText(dir / "temp1_input", "  45850\n");
  EXPECT_EQ(*ReadAttribute(dir / "temp1_input"), "45850");
  WriteFileText(dir / "model", std::string("Samsung SSD 980\n\0", 17));
  EXPECT_EQ(*ReadAttribute(dir / "model", kBlanksAndNul), "Samsung SSD 980");
  WriteFileText(dir / "empty", "");
  EXPECT_EQ(*ReadAttribute(dir / "empty"), "");
  // At most a page, as sysfs serves.
  WriteFileText(dir / "long", std::string(10000, 'x'));
  EXPECT_EQ(ReadAttribute(dir / "long")->size(), 4096u);
}

TEST(SysTest, AnAttributeThatCannotBeReadSaysWhere) {
  const ScratchDir dir("sys");
  auto missing = ReadAttribute(dir / "absent");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().errnum, ENOENT);
  EXPECT_EQ(missing.error().message, dir / "absent" + ": No such file or directory");
  // A directory opens but fails read(2), as a hwmon input whose SMART
  // read failed does: the message names the read.
  auto directory = ReadAttribute(dir.path());
  ASSERT_FALSE(directory);
  EXPECT_EQ(directory.error().errnum, EISDIR);
  EXPECT_EQ(directory.error().message, dir.path() + ": read: Is a directory");
}

TEST(SysTest, FsyncDirectoryNamesWhatFailed) {
  const ScratchDir dir("sys");
  EXPECT_TRUE(FsyncDirectory(dir.path()));
  const Status missing = FsyncDirectory(dir / "absent");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message,
            dir / "absent" + ": open directory: No such file or directory");
  WriteFileText(dir / "file", "x");
  const Status file = FsyncDirectory(dir / "file");
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().errnum, ENOTDIR);
}

TEST(SysTest, FdCloserClosesOnScopeExit) {
  int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  { const FdCloser closer(fd); }
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1);
  EXPECT_EQ(errno, EBADF);
  const FdCloser none(-1);  // not an fd: nothing to close
}

}  // namespace
}  // namespace drivewatch::util
