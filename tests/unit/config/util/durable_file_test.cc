// SPDX-License-Identifier: Apache-2.0
// Bounded reads of state files (config/util/durable_file.h): a file past its
// bound is refused, naming it, without being read.
#include "config/util/durable_file.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include "tests/common/file_text.h"
#include "tests/common/scratch_dir.h"

namespace drivewatch {
namespace {

class DurableFileTest : public ::testing::Test {
 protected:
  const testing::ScratchDir scratch_{"durable"};
  const std::string dir_ = scratch_.path();
};

TEST_F(DurableFileTest, ReadsAFileUpToItsBound) {
  const std::string path = dir_ + "/f";
  testing::WriteFileText(path, std::string(4096, 'a'));
  auto text = ReadWholeFile(path, 4096, "a test file");
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text, std::string(4096, 'a'));
  auto missing = ReadWholeFile(dir_ + "/none", 4096, "a test file");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().errnum, ENOENT);
}

TEST_F(DurableFileTest, RefusesALargerFileByItsSize) {
  // Sparse: the refusal must come from its size, not from reading 1 GiB.
  const std::string path = dir_ + "/huge";
  testing::WriteFileText(path, "{");
  std::filesystem::resize_file(path, std::uintmax_t{1} << 30);
  auto text = ReadWholeFile(path, 4096, "a test file");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().errnum, EFBIG);
  EXPECT_EQ(text.error().message, path + ": 1073741824 bytes, larger than a test file may be "
                                         "(expected at most 4096 bytes)");
  testing::WriteFileText(path, std::string(4097, 'a'));
  EXPECT_EQ(ReadWholeFile(path, 4096, "a test file").error().errnum, EFBIG);
}

// A file whose size says nothing (a device, /proc, a FIFO) is read only as
// far as the bound.
TEST_F(DurableFileTest, RefusesAnEndlessFileAtItsBound) {
  auto text = ReadWholeFile("/dev/zero", 4096, "a test file");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().errnum, EFBIG);
  EXPECT_EQ(text.error().message,
            "/dev/zero: more than 4096 bytes, larger than a test file may be (expected at most "
            "4096 bytes)");
}

TEST_F(DurableFileTest, ReadsTheHeadOfAFile) {
  const std::string path = dir_ + "/f";
  testing::WriteFileText(path, "{\"a\":1}");
  EXPECT_EQ(*ReadFileHead(path, 1), "{");
  EXPECT_EQ(*ReadFileHead(path, 100), "{\"a\":1}");
  EXPECT_EQ(*ReadFileHead("/dev/zero", 3), std::string(3, '\0'));
  EXPECT_EQ(ReadFileHead(dir_ + "/none", 1).error().errnum, ENOENT);
}

}  // namespace
}  // namespace drivewatch
