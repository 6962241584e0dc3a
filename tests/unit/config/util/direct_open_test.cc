// SPDX-License-Identifier: Apache-2.0
// The O_DIRECT opener every I/O target shares (config/util/direct_open.h),
// on real files under /var/tmp (a disk file system; tmpfs refuses
// O_DIRECT): the size and direct I/O alignment it measures, and errors
// that name the path and the flags. The block device paths (O_EXCL, the
// "in use" refusal) are tested on loop devices in the integration tests.
#include "config/util/direct_open.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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

}  // namespace
}  // namespace drivewatch::util
