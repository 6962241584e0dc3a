// SPDX-License-Identifier: Apache-2.0
// The safety interlocks on real loop devices: real mounts, swap,
// device-mapper holders and libblkid on real file systems and partition
// tables. One test per refusal. Runs as root (as CI does) and skips
// otherwise. Needs util-linux (losetup, partx, mount, swapon), e2fsprogs
// (mkfs.ext4) and, for the holder test, dmsetup; a test whose kernel
// feature the container lacks (swap, device-mapper) skips and says why.
#include "aging/safety/interlocks.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace drivewatch::aging {
namespace {

namespace fs = std::filesystem;

// integration_test links gtest without gmock, so no HasSubstr.
#define EXPECT_CONTAINS(text, part)                          \
  EXPECT_NE(std::string(text).find(part), std::string::npos) \
      << "\"" << (text) << "\" lacks \"" << (part) << "\""

struct RunResult {
  int status = -1;
  std::string output;
};

RunResult Shell(const std::string& command) {
  RunResult r;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  char buf[512];
  while (p && std::fgets(buf, sizeof buf, p)) r.output += buf;
  r.status = p ? ::pclose(p) : -1;
  while (!r.output.empty() && r.output.back() == '\n') r.output.pop_back();
  return r;
}

bool HaveTool(const std::string& tool) {
  return Shell("command -v " + tool).status == 0;
}

// Writes an MBR with one Linux partition (sectors 2048..2048+sectors) into
// `image`. Written by hand: sfdisk (Debian package fdisk) may be absent.
void WriteMbr(const std::string& image, std::uint32_t sectors) {
  unsigned char mbr[512] = {};
  unsigned char* e = mbr + 446;
  e[4] = 0x83;  // Linux
  const std::uint32_t start = 2048;
  for (int i = 0; i < 4; ++i) {
    e[8 + i] = static_cast<unsigned char>(start >> (8 * i));
    e[12 + i] = static_cast<unsigned char>(sectors >> (8 * i));
  }
  mbr[510] = 0x55;
  mbr[511] = 0xaa;
  std::fstream f(image, std::ios::in | std::ios::out | std::ios::binary);
  f.write(reinterpret_cast<const char*>(mbr), sizeof mbr);
}

class LoopInterlocksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root for loop devices";
    for (const char* tool : {"losetup", "mkfs.ext4", "mount", "umount"}) {
      ASSERT_TRUE(HaveTool(tool))
          << tool
          << " is missing (Debian packages: util-linux, mount, "
             "e2fsprogs)";
    }
    // /var/tmp: loop devices over tmpfs files work, but keep one place.
    char name[] = "/var/tmp/dw-interlocks-test.XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    dir_ = name;
    Defer([d = dir_] { fs::remove_all(d); });
  }

  // Teardown runs in reverse order even when an ASSERT ended the test.
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
    for (auto it = cleanup_.rbegin(); it != cleanup_.rend(); ++it) (*it)();
  }
  void Defer(std::function<void()> f) { cleanup_.push_back(std::move(f)); }

  // A loop device over a new sparse image of `size` bytes (after
  // `prepare_image` ran on it), opened O_RDWR on fd_, and a target that
  // names it correctly.
  void MakeLoop(
      std::uint64_t size = 64 << 20,
      const std::function<void(const std::string&)>& prepare_image = nullptr) {
    image_ = dir_ + "/disk.img";
    { std::ofstream{image_}; }
    fs::resize_file(image_, size);
    if (prepare_image) prepare_image(image_);
    const RunResult r = Shell("losetup -f --show -P " + image_);
    ASSERT_EQ(r.status, 0) << r.output;
    loop_ = r.output;
    Defer([l = loop_] { Shell("losetup -d " + l); });
    fd_ = ::open(loop_.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd_, 0) << loop_;
    struct stat st;
    ASSERT_EQ(::fstat(fd_, &st), 0);
    device_ = st.st_rdev;
    target_.name = "loopy";
    target_.block_device = loop_;
    target_.serial = "loop:" + fs::canonical(image_).string();
    target_.destroy_data = true;
  }

  // mkfs.ext4 on `device` and mount it on a new directory; unmounted in
  // teardown.
  std::string MkfsAndMount(const std::string& device,
                           const std::string& extra = "") {
    const RunResult mkfs = Shell("mkfs.ext4 -q -F " + extra + " " + device);
    EXPECT_EQ(mkfs.status, 0) << mkfs.output;
    const std::string mnt = dir_ + "/mnt" + std::to_string(cleanup_.size());
    fs::create_directory(mnt);
    const RunResult m = Shell("mount -t ext4 " + device + " " + mnt);
    EXPECT_EQ(m.status, 0) << m.output;
    if (m.status == 0) Defer([mnt] { Shell("umount " + mnt); });
    return mnt;
  }

  Status Check() { return CheckBeforeWrite(target_, fd_, device_); }

  void ExpectRefused(const Status& s, const std::string& reason,
                     const std::string& key) {
    ASSERT_FALSE(s.ok()) << "expected a refusal: " << reason;
    EXPECT_EQ(s.error().errnum, EPERM);
    const std::string& m = s.error().message;
    EXPECT_EQ(m.rfind(loop_ + ": refusing to write: ", 0), 0u) << m;
    EXPECT_CONTAINS(m, (reason));
    EXPECT_CONTAINS(m, (key));
  }

  std::string dir_;
  std::string image_;
  std::string loop_;
  int fd_ = -1;
  dev_t device_ = 0;
  config::AgingTarget target_;
  std::vector<std::function<void()>> cleanup_;
};

TEST_F(LoopInterlocksTest, CleanLoopDeviceWithRightIdentityPasses) {
  ASSERT_NO_FATAL_FAILURE(MakeLoop());
  auto id = ReadDeviceIdentity(fd_, device_);
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(id->serial, target_.serial);
  EXPECT_FALSE(id->nvme);
  auto s = Check();
  EXPECT_TRUE(s.ok()) << s.error().message;
}

TEST_F(LoopInterlocksTest, NoDestroyDataIsRefused) {
  ASSERT_NO_FATAL_FAILURE(MakeLoop());
  target_.destroy_data = false;
  ExpectRefused(Check(), "does not acknowledge",
                "aging.targets.destroy_data = true for target \"loopy\"");
}

TEST_F(LoopInterlocksTest, WrongSerialIsRefusedShowingBoth) {
  ASSERT_NO_FATAL_FAILURE(MakeLoop());
  const std::string found = target_.serial;
  target_.serial = "loop:/wrong/path";
  ExpectRefused(
      Check(),
      "serial \"loop:/wrong/path\" configured, \"" + found + "\" found",
      "aging.targets.serial for target \"loopy\"");
}

TEST_F(LoopInterlocksTest, Ext4SignatureIsRefusedUnlessAllowed) {
  ASSERT_NO_FATAL_FAILURE(MakeLoop());
  const RunResult mkfs = Shell("mkfs.ext4 -q -F " + loop_);
  ASSERT_EQ(mkfs.status, 0) << mkfs.output;
  ExpectRefused(Check(), "it holds an ext4 file system",
                "set aging.targets.allow_signatures = true for target "
                "\"loopy\" to overwrite it");
  target_.allow_signatures = true;
  auto s = Check();
  EXPECT_TRUE(s.ok()) << s.error().message;
}

TEST_F(LoopInterlocksTest, PartitionTableIsRefused) {
  ASSERT_NO_FATAL_FAILURE(
      MakeLoop(64 << 20, [](const std::string& img) { WriteMbr(img, 32768); }));
  ExpectRefused(Check(), "it holds a dos partition table",
                "aging.targets.allow_signatures");
}

TEST_F(LoopInterlocksTest, MountedIsRefusedEvenWithSignaturesAllowed) {
  ASSERT_NO_FATAL_FAILURE(MakeLoop());
  const std::string mnt = MkfsAndMount(loop_);
  target_.allow_signatures = true;
  ExpectRefused(Check(), "it is mounted on " + mnt,
                "no config key overrides this");
}

TEST_F(LoopInterlocksTest, MountedPartitionIsRefusedOnTheWholeDevice) {
  ASSERT_NO_FATAL_FAILURE(
      MakeLoop(64 << 20, [](const std::string& img) { WriteMbr(img, 65536); }));
  // Find the partition in sysfs. Kernels without MSDOS partition support
  // in their scanner (minimal VM kernels) get it from partx's BLKPG.
  const std::string sys = "/sys/dev/block/" + std::to_string(major(device_)) +
                          ":" + std::to_string(minor(device_));
  const std::string part_name = fs::path(loop_).filename().string() + "p1";
  if (!fs::exists(sys + "/" + part_name)) {
    ASSERT_TRUE(HaveTool("partx")) << "partx is missing (Debian: util-linux)";
    const RunResult r = Shell("partx -a " + loop_);
    ASSERT_EQ(r.status, 0) << r.output;
  }
  ASSERT_TRUE(fs::exists(sys + "/" + part_name + "/partition"));
  // Without udev, devtmpfs may lack the partition's node: make our own.
  std::string node = "/dev/" + part_name;
  struct stat st;
  if (::stat(node.c_str(), &st) != 0 || !S_ISBLK(st.st_mode)) {
    std::ifstream in(sys + "/" + part_name + "/dev");
    unsigned maj = 0, min = 0;
    char colon = 0;
    ASSERT_TRUE(in >> maj >> colon >> min);
    node = dir_ + "/" + part_name;
    ASSERT_EQ(::mknod(node.c_str(), S_IFBLK | 0600, makedev(maj, min)), 0);
  }
  const std::string mnt = MkfsAndMount(node);
  target_.allow_signatures = true;
  ExpectRefused(Check(), "/dev/" + part_name + " is mounted on " + mnt,
                "no config key overrides this");
}

TEST_F(LoopInterlocksTest, SwapIsRefused) {
  ASSERT_NO_FATAL_FAILURE(MakeLoop());
  ASSERT_TRUE(HaveTool("mkswap") && HaveTool("swapon"))
      << "mkswap/swapon are missing (Debian: util-linux)";
  const RunResult mk = Shell("mkswap " + loop_);
  ASSERT_EQ(mk.status, 0) << mk.output;
  const RunResult on = Shell("swapon " + loop_);
  if (on.status != 0) GTEST_SKIP() << "swapon failed here: " << on.output;
  Defer([l = loop_] { Shell("swapoff " + l); });
  target_.allow_signatures = true;
  ExpectRefused(Check(), "it is in use as swap",
                "no config key overrides this");
}

TEST_F(LoopInterlocksTest, HeldByDeviceMapperIsRefused) {
  ASSERT_NO_FATAL_FAILURE(MakeLoop());
  if (!HaveTool("dmsetup")) {
    GTEST_SKIP() << "dmsetup is missing (Debian package: dmsetup)";
  }
  const std::string dm = "dw-interlocks-" + std::to_string(::getpid());
  const RunResult r =
      Shell("dmsetup create " + dm + " --table '0 " +
            std::to_string((64 << 20) / 512) + " linear " + loop_ + " 0'");
  if (r.status != 0)
    GTEST_SKIP() << "device-mapper unusable here: " << r.output;
  Defer([dm] { Shell("dmsetup remove --retry " + dm); });
  ExpectRefused(Check(), "it is held by dm-", "no config key overrides this");
}

TEST_F(LoopInterlocksTest, FileReserveIsKeptOnASmallFileSystem) {
  // A 64 MiB ext4 without root-reserved blocks: ~55 MiB available.
  ASSERT_NO_FATAL_FAILURE(MakeLoop());
  const std::string mnt = MkfsAndMount(loop_, "-m 0");
  config::AgingTarget files;
  files.name = "files";
  files.directory = mnt;
  files.min_free_ratio = 0.5;
  files.file_size = 48 << 20;
  struct statvfs vfs;
  ASSERT_EQ(::statvfs(mnt.c_str(), &vfs), 0);
  ASSERT_GT(static_cast<double>(vfs.f_bavail) * vfs.f_frsize, 50 << 20);

  const std::string path = mnt + "/drivewatch-aging-files.dat";
  WritePass pass;
  pass.state_directory = mnt + "/state";
  SystemPaths paths;
  paths.study_register = mnt + "/register";
  auto refused = PrepareAgingFile(files, pass, paths);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().errnum, EPERM);
  const std::string& m = refused.error().message;
  EXPECT_EQ(m.rfind(path + ": refusing to write: ", 0), 0u) << m;
  EXPECT_CONTAINS(m, ("making it 48.0 MiB would leave"));
  EXPECT_CONTAINS(m, ("below the reserve of 50%"));
  EXPECT_CONTAINS(m, ("aging.targets.free_space_reserve for target "
                      "\"files\""));
  EXPECT_FALSE(fs::exists(path));

  files.file_size = 8 << 20;
  auto made = PrepareAgingFile(files, pass, paths);
  ASSERT_TRUE(made.ok()) << made.error().message;
  EXPECT_EQ(*made, path);
  EXPECT_EQ(fs::file_size(path), files.file_size);
  // Growing it again to where the reserve would be broken is refused; the
  // 8 MiB it already holds count.
  EXPECT_FALSE(CheckFileReserve(files, 48 << 20).ok());
  EXPECT_TRUE(CheckFileReserve(files, 16 << 20).ok());
}

}  // namespace
}  // namespace drivewatch::aging
