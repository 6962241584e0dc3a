// SPDX-License-Identifier: Apache-2.0
// What of the real drive layer runs without NVMe hardware: discovery on a
// machine without controllers, and the error paths of open() and of the
// passthrough ioctls (sent to /dev/null, which rejects them). The commands
// themselves run against QEMU's controller in the VM harness (tests/vm/).
#include "probes/drive/nvme_drive_layer.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string>

#include "probes/drive/identify.h"
#include "probes/drive/smart_log.h"

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

// A sysfs tree as Linux 6.1 lays it out, built on the fly: nvme0 with
// its namespace under it (no multipath); nvme1 and nvme2 in one subsystem
// with native multipath, each holding a hidden path to the shared head
// nvme1n1 (which nvme1, first in instance order, reports) and nvme2 also
// one of its own; nvme10 sorting after nvme2; nvme3 going away (no
// attributes), nvme4 not set up yet and nvme5 being deleted.
class ScanSysfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("dw-sysfs-" + std::to_string(::getpid()));
    std::filesystem::remove_all(root_);
    Controller("nvme0", "S4EWNX0R123456      ", "Samsung SSD 980 1TB", "3B4QFXO7");
    Namespace("nvme0", "nvme0n1", "nvme0n1", 1);
    Controller("nvme1", "DWSN0002", "QEMU NVMe Ctrl", "7.2.0");
    Namespace("nvme1", "nvme1c1n1", "nvme1n1", 1);
    Controller("nvme2", "DWSN0002", "QEMU NVMe Ctrl", "7.2.0");
    Namespace("nvme2", "nvme1c2n1", "nvme1n1", 1);
    Namespace("nvme2", "nvme1c2n2", "nvme1n2", 2);
    Controller("nvme10", "SN10", "M", "F");
    std::filesystem::create_directories(root_ / "class/nvme/nvme3");
    // Hot-plugged, not identified yet: the kernel prints a NULL subsystem's
    // serial as "(efault)".
    Controller("nvme4", "(efault)", "(efault)", "(efault)", "new");
    Controller("nvme5", "SN5", "M", "F", "deleting (noio)");
    Write(root_ / "class/nvme/nvme-fabrics", "");  // not a controller
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  static void Write(const std::filesystem::path& path, const std::string& text) {
    std::filesystem::create_directories(path.parent_path());
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr) << path;
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  void Controller(const std::string& name, const std::string& serial,
                  const std::string& model, const std::string& firmware,
                  const std::string& state = "live") {
    const auto dir = root_ / "class/nvme" / name;
    Write(dir / "state", state + "\n");
    Write(dir / "serial", serial + "\n");
    Write(dir / "model", model + "\n");
    Write(dir / "firmware_rev", firmware + "\n");
    Write(dir / "transport", "pcie\n");
    Write(dir / "address", "0000:00:0" + name.substr(4) + ".0\n");
  }
  void Namespace(const std::string& ctrl, const std::string& entry,
                 const std::string& head, unsigned nsid) {
    std::filesystem::create_directories(root_ / "class/nvme" / ctrl / entry);
    Write(root_ / "block" / head / "nsid", std::to_string(nsid) + "\n");
  }

  std::filesystem::path root_;
};

TEST_F(ScanSysfsTest, FindsControllersAndEachNamespaceOnce) {
  const auto found = detail::ScanSysfs(root_.string());
  ASSERT_TRUE(found.ok()) << found.error().message;
  ASSERT_EQ(found->size(), 4u);
  const ControllerInfo& c0 = (*found)[0];
  EXPECT_EQ(c0.name, "nvme0");
  EXPECT_EQ(c0.device, "/dev/nvme0");
  EXPECT_EQ(c0.serial, "S4EWNX0R123456");
  EXPECT_EQ(c0.model, "Samsung SSD 980 1TB");
  EXPECT_EQ(c0.firmware, "3B4QFXO7");
  EXPECT_EQ(c0.transport, "pcie");
  EXPECT_EQ(c0.address, "0000:00:00.0");
  ASSERT_EQ(c0.namespaces.size(), 1u);
  EXPECT_EQ(c0.namespaces[0].name, "nvme0n1");
  EXPECT_EQ(c0.namespaces[0].block_device, "/dev/nvme0n1");
  EXPECT_EQ(c0.namespaces[0].nsid, 1u);

  EXPECT_EQ((*found)[1].name, "nvme1");
  ASSERT_EQ((*found)[1].namespaces.size(), 1u);
  EXPECT_EQ((*found)[1].namespaces[0].name, "nvme1n1");
  EXPECT_EQ((*found)[2].name, "nvme2");
  ASSERT_EQ((*found)[2].namespaces.size(), 1u);  // nvme1n1 is nvme1's
  EXPECT_EQ((*found)[2].namespaces[0].name, "nvme1n2");
  EXPECT_EQ((*found)[2].namespaces[0].nsid, 2u);
  EXPECT_EQ((*found)[3].name, "nvme10");
  EXPECT_TRUE((*found)[3].namespaces.empty());
}

TEST_F(ScanSysfsTest, NoNvmeClassIsAnEmptyListNotAnError) {
  const auto found = detail::ScanSysfs((root_ / "none").string());
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_TRUE(found->empty());
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
