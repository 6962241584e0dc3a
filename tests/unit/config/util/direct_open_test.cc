// SPDX-License-Identifier: Apache-2.0
// The O_DIRECT opener every I/O target shares (config/util/direct_open.h),
// on real files under /var/tmp (a disk file system; tmpfs refuses
// O_DIRECT): the size and direct I/O alignment it measures, and errors
// that name the path and the flags. The block device paths (O_EXCL, the
// "in use" refusal) are tested on loop devices in the integration tests.
#include "config/util/direct_open.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "tests/common/file_text.h"
#include "tests/common/scratch_dir.h"

namespace drivewatch::util {
namespace {

using drivewatch::testing::ScratchDir;
using drivewatch::testing::WriteFileText;

TEST(DirectOpenTest, AFileIsMeasuredBySizeAndAlignment) {
  const ScratchDir dir("direct");
  const std::string path = dir / "target";
  WriteFileText(path, std::string(1 << 20, '\0'));
  for (DirectAccess access : {DirectAccess::kRead, DirectAccess::kReadWrite}) {
    auto f = OpenDirect(path, access);
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_TRUE(S_ISREG(f->st.st_mode));
    EXPECT_EQ(f->size, 1u << 20);
    // 512, or the file system's own alignment: a power of two either way.
    EXPECT_GE(f->logical_block_size, 512u);
    EXPECT_EQ(f->logical_block_size & (f->logical_block_size - 1), 0u);
    ::close(f->fd);
  }
}

TEST(DirectOpenTest, AMissingFileNamesThePathAndFlags) {
  const ScratchDir dir("direct");
  auto read = OpenDirect(dir / "absent", DirectAccess::kRead);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().errnum, ENOENT);
  EXPECT_EQ(read.error().message,
            "open " + dir / "absent" + " O_RDONLY|O_DIRECT: No such file or directory");
  auto write = OpenDirect(dir / "absent", DirectAccess::kReadWrite);
  ASSERT_FALSE(write);
  EXPECT_EQ(write.error().message,
            "open " + dir / "absent" + " O_RDWR|O_DIRECT: No such file or directory");
}

// Reads `path` (4 KiB at 0, O_DIRECT) through OpenDirect; its atime after.
// -1 when the open or the read fails.
long long AtimeAfterDirectRead(const std::string& path) {
  auto f = OpenDirect(path, DirectAccess::kRead);
  if (!f) return -1;
  void* buffer = nullptr;
  if (posix_memalign(&buffer, 4096, 4096) != 0) std::abort();
  const ssize_t n = ::pread(f->fd, buffer, 4096, 0);
  std::free(buffer);
  struct stat st {};
  const bool ok = n == 4096 && ::fstat(f->fd, &st) == 0;
  ::close(f->fd);
  return ok ? static_cast<long long>(st.st_atim.tv_sec) : -1;
}

// The probe reads the drive under observation: its reads write nothing, not
// even the target's access time. Under relatime (the default) a read of a
// file whose atime is older than its mtime updates it.
TEST(DirectOpenTest, AReadLeavesTheAccessTimeAlone) {
  const ScratchDir dir("direct");
  const std::string path = dir / "target";
  WriteFileText(path, std::string(1 << 16, '\0'));
  const struct timespec times[2] = {{1000, 0}, {0, UTIME_OMIT}};  // atime 1970, mtime now
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  EXPECT_EQ(AtimeAfterDirectRead(path), 1000);
}

// O_NOATIME is the owner's: anyone else (no CAP_FOWNER) still reads.
TEST(DirectOpenTest, SomebodyElsesFileIsStillRead) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to read as another user";
  const ScratchDir dir("direct");
  const std::string path = dir / "target";
  WriteFileText(path, std::string(1 << 16, '\0'));
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // nobody, without capabilities: O_NOATIME is EPERM
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) _exit(3);
    _exit(AtimeAfterDirectRead(path) >= 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace drivewatch::util
