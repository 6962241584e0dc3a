// SPDX-License-Identifier: Apache-2.0
// The namespace identity check against fixture sysfs trees built on the
// fly, laid out as the kernel lays out /sys/dev/block/<maj:min> (checked in
// the VM: tests/vm/latency records the guest's view).
#include "probes/drive/namespace_identity.h"

#include <gtest/gtest.h>
#include <sys/sysmacros.h>

#include <filesystem>
#include <fstream>

namespace drivewatch {
namespace {

namespace fs = std::filesystem;

class NamespaceIdentityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ("dw-sysfs-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // /sys/dev/block/MAJ:MIN/{nsid,device/serial}; empty values are left out.
  void Add(dev_t dev, const std::string& serial, const std::string& nsid) {
    const fs::path dir = root_ / "dev/block" /
                         (std::to_string(major(dev)) + ":" + std::to_string(minor(dev)));
    fs::create_directories(dir / "device");
    if (!serial.empty()) std::ofstream(dir / "device/serial") << serial;
    if (!nsid.empty()) std::ofstream(dir / "nsid") << nsid;
  }
  std::string root() const { return root_.string(); }

  fs::path root_;
};

TEST_F(NamespaceIdentityTest, ReadsSerialAndNsidOfTheDeviceNumber) {
  // The kernel pads the serial attribute and ends it with a newline.
  Add(makedev(259, 3), "DWSN0001            \n", "1\n");
  Add(makedev(259, 4), "DWSN0002\n", "2\n");
  auto id = ReadNamespaceIdentity(root(), makedev(259, 4));
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(id->serial, "DWSN0002");
  EXPECT_EQ(id->nsid, 2u);
  EXPECT_TRUE(CheckNamespaceIdentity(root(), makedev(259, 3), "DWSN0001", 1).ok());
}

TEST_F(NamespaceIdentityTest, AnotherDrivesNamespaceIsRefusedWithBothNamed) {
  Add(makedev(259, 0), "S5X0NEW", "1");
  const Status s = CheckNamespaceIdentity(root(), makedev(259, 0), "S4AOLD", 1);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().errnum, EXDEV);
  EXPECT_NE(s.error().message.find("\"S5X0NEW\""), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("\"S4AOLD\""), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("259:0"), std::string::npos) << s.error().message;
}

TEST_F(NamespaceIdentityTest, SameDriveOtherNamespaceIsRefused) {
  Add(makedev(259, 1), "DWSN0002", "2");
  const Status s = CheckNamespaceIdentity(root(), makedev(259, 1), "DWSN0002", 1);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().errnum, EXDEV);
}

TEST_F(NamespaceIdentityTest, ADeviceWithoutNvmeAttributesIsNotVerified) {
  // A loop device or a SCSI disk: no nsid, no controller serial.
  Add(makedev(7, 0), "", "");
  const Status s = CheckNamespaceIdentity(root(), makedev(7, 0), "DWSN0001", 1);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().errnum, ENOENT);
  EXPECT_NE(s.error().message.find("7:0/device/serial"), std::string::npos) << s.error().message;
  // And one the fixture does not have at all.
  EXPECT_EQ(CheckNamespaceIdentity(root(), makedev(8, 16), "DWSN0001", 1).error().errnum, ENOENT);
}

TEST_F(NamespaceIdentityTest, GarbageNsidIsAnError) {
  for (const char* bad : {"", "x1", "0", "4294967296", "1 2"}) {
    fs::remove_all(root_);
    Add(makedev(259, 9), "SN", bad);
    if (std::string(bad).empty()) std::ofstream(root_ / "dev/block/259:9/nsid") << "\n";
    auto id = ReadNamespaceIdentity(root(), makedev(259, 9));
    EXPECT_FALSE(id.ok()) << "nsid \"" << bad << "\"";
    if (!id.ok()) {
      EXPECT_EQ(id.error().errnum, EINVAL) << bad;
    }
  }
}

}  // namespace
}  // namespace drivewatch
