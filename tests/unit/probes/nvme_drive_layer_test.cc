// SPDX-License-Identifier: Apache-2.0
// What of the real drive layer runs without NVMe hardware: discovery on a
// machine without controllers, and the error paths of open() and of the
// passthrough ioctls (sent to /dev/null, which rejects them). The commands
// themselves run against QEMU's controller in the VM harness (tests/vm/).
#include "probes/nvme_drive_layer.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "probes/identify.h"
#include "probes/smart_log.h"

namespace drivewatch {
namespace {

TEST(NvmeDriveLayerTest, ScanWithoutControllersIsEmptyNotAnError) {
  if (std::filesystem::exists("/sys/class/nvme") &&
      !std::filesystem::is_empty("/sys/class/nvme")) {
    GTEST_SKIP() << "this machine has NVMe controllers";
  }
  auto layer = MakeNvmeDriveLayer();
  const auto found = layer->Scan();
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_TRUE(found->empty());
}

TEST(NvmeDriveLayerTest, ScanTwiceWorks) {
  auto layer = MakeNvmeDriveLayer();
  const auto first = layer->Scan();
  const auto second = layer->Scan();
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(first->size(), second->size());
}

TEST(NvmeDriveLayerTest, OpenMissingDeviceNamesIt) {
  auto layer = MakeNvmeDriveLayer();
  ControllerInfo info;
  info.device = "/dev/nvme-does-not-exist";
  const auto ctrl = layer->Open(info);
  ASSERT_FALSE(ctrl.ok());
  EXPECT_EQ(ctrl.error().errnum, ENOENT);
  EXPECT_EQ(ctrl.error().nvme_status, -1);
  EXPECT_EQ(ctrl.error().message,
            "/dev/nvme-does-not-exist: open: No such file or directory");
}

TEST(AdminCommandErrorTest, NvmeStatusKeepsTheStatusAndNamesIt) {
  const Error e =
      detail::AdminCommandError("/dev/nvme0", "get log page 02h", 0x4002, 0);
  EXPECT_EQ(e.errnum, 0);
  EXPECT_EQ(e.nvme_status, 0x4002);
  EXPECT_TRUE(e.Unsupported());
  EXPECT_EQ(e.message,
            "/dev/nvme0: get log page 02h: Invalid Field in Command (0x4002)");

  const Error log =
      detail::AdminCommandError("/dev/nvme1", "get log page 0Dh", 0x4109, 0);
  EXPECT_TRUE(log.Unsupported());
  EXPECT_EQ(log.message,
            "/dev/nvme1: get log page 0Dh: Invalid Log Page (0x4109)");

  const Error media = detail::AdminCommandError(
      "/dev/nvme0", "identify CNS 01h NSID 0", 0x6, 0);
  EXPECT_FALSE(media.Unsupported());
  EXPECT_EQ(media.message,
            "/dev/nvme0: identify CNS 01h NSID 0: Internal Error (0x6)");
}

TEST(AdminCommandErrorTest, FailedIoctlKeepsErrno) {
  const Error e = detail::AdminCommandError(
      "/dev/nvme0", "identify CNS 01h NSID 0", -1, EPERM);
  EXPECT_EQ(e.errnum, EPERM);
  EXPECT_EQ(e.nvme_status, -1);
  EXPECT_FALSE(e.Unsupported());
  EXPECT_EQ(e.message,
            "/dev/nvme0: identify CNS 01h NSID 0: Operation not permitted");
}

class NvmeControllerOnDevNullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ControllerInfo info;
    info.device = "/dev/null";
    auto opened = MakeNvmeDriveLayer()->Open(info);
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    ctrl_ = std::move(opened).value();
  }
  std::unique_ptr<Controller> ctrl_;
};

TEST_F(NvmeControllerOnDevNullTest, IoctlErrnoBecomesError) {
  const auto id = ctrl_->Identify(kIdentifyCnsController, 0);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.error().errnum, ENOTTY);
  EXPECT_EQ(id.error().nvme_status, -1);
  EXPECT_EQ(id.error().message,
            "/dev/null: identify CNS 01h NSID 0: Inappropriate ioctl for "
            "device");

  const auto log = ctrl_->GetLogPage(kSmartLogId, kNsidAll, kSmartLogSize);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.error().errnum, ENOTTY);
  EXPECT_EQ(log.error().message,
            "/dev/null: get log page 02h: Inappropriate ioctl for device");

  const auto feature = ctrl_->GetFeature(0x04, 0, 0);
  ASSERT_FALSE(feature.ok());
  EXPECT_EQ(feature.error().message,
            "/dev/null: get feature 04h: Inappropriate ioctl for device");
}

TEST_F(NvmeControllerOnDevNullTest, RejectsLogLengthsTheCommandCannotExpress) {
  for (std::size_t length :
       {std::size_t{0}, std::size_t{2}, std::size_t{513}}) {
    const auto log = ctrl_->GetLogPage(kSmartLogId, kNsidAll, length);
    ASSERT_FALSE(log.ok()) << length;
    EXPECT_EQ(log.error().errnum, EINVAL);
    EXPECT_EQ(log.error().message,
              "/dev/null: get log page 02h: length " + std::to_string(length) +
                  " is not a positive multiple of 4 bytes");
  }
}

// A phase's own descriptor: the commands go through it, errors name the
// file it refers to, and the descriptor stays open for its owner.
TEST(NvmeControllerOnTest, BorrowsTheDescriptorAndNamesItsFile) {
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  {
    auto ctrl = NvmeControllerOn(fd);
    const auto log = ctrl->GetLogPage(kSmartLogId, kNsidAll, kSmartLogSize);
    ASSERT_FALSE(log.ok());
    EXPECT_EQ(log.error().errnum, ENOTTY);
    EXPECT_EQ(log.error().message,
              "/dev/null: get log page 02h: Inappropriate ioctl for device");
  }
  EXPECT_EQ(::fcntl(fd, F_GETFD), FD_CLOEXEC) << "the descriptor was closed";
  ::close(fd);
}

}  // namespace
}  // namespace drivewatch
