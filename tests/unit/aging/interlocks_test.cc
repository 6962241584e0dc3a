// SPDX-License-Identifier: Apache-2.0
// The safety interlocks against sysfs, mountinfo and swaps fixtures built
// on the fly. The written device is a plain file here (no root needed); the
// loop device tests in tests/integration/interlocks_test.cc cover the real
// kernel files and libblkid on real file systems.
#include "aging/safety/interlocks.h"

#include <dirent.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "aging/retention/retention_study.h"

namespace drivewatch::aging {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

void WriteFile(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

void MakeFile(const std::string& path, std::uintmax_t size) {
  std::ofstream{path};
  fs::resize_file(path, size);
}

class InterlocksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/dw-interlocks-test.XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    root_ = name;
    paths_.sysfs = root_ + "/sys";
    paths_.dev = root_ + "/dev";  // no nodes: loop devices are read from sysfs alone
    paths_.mountinfo = root_ + "/mountinfo";
    paths_.swaps = root_ + "/swaps";
    paths_.study_register = root_ + "/register";
    backing_ = root_ + "/scratch.img";
    MakeFile(backing_, 1 << 20);
    // /dev/loop3 (7:3) backed by scratch.img, with one partition loop3p1
    // (259:5) from sector 2048, as real sysfs lays them out: the partition
    // a subdirectory of its disk, and dev/block and class/block links.
    Dev("7:3", "loop3");
    WriteFile(Dir("7:3") + "/loop/backing_file", backing_ + "\n");
    WriteFile(Dir("7:3") + "/loop3p1/partition", "1\n");
    WriteFile(Dir("7:3") + "/loop3p1/dev", "259:5\n");
    WriteFile(Dir("7:3") + "/loop3p1/start", "1024\n");
    WriteFile(Dir("7:3") + "/loop3p1/size", "1024\n");
    fs::create_directories(Dir("7:3") + "/loop3p1/holders");
    fs::create_directory_symlink(Dir("7:3") + "/loop3p1", Dir("259:5"));
    fs::create_directory_symlink(Dir("7:3") + "/loop3p1", paths_.sysfs + "/class/block/loop3p1");
    // The root file system's disk, which mountinfo names.
    Dev("8:2", "sda2");
    WriteFile(paths_.mountinfo,
              "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
              "28 1 8:2 / / rw,relatime shared:1 - ext4 /dev/sda2 rw\n");
    WriteFile(paths_.swaps,
              "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n");
    // The "device" written: 1 MiB of zeros, no signature.
    device_file_ = root_ + "/device.img";
    MakeFile(device_file_, 1 << 20);
    fd_ = ::open(device_file_.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd_, 0);

    target_.name = "scratch";
    target_.block_device = "/dev/loop3";
    target_.serial = "loop:" + backing_;
    target_.destroy_data = true;
  }
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
    fs::remove_all(root_);
  }

  std::string Dir(const std::string& number) {
    return paths_.sysfs + "/dev/block/" + number;
  }
  void Dev(const std::string& number, const std::string& name) {
    WriteFile(Dir(number) + "/uevent",
              "MAJOR=x\nMINOR=y\nDEVNAME=" + name + "\nDEVTYPE=disk\n");
    WriteFile(Dir(number) + "/dev", number + "\n");
    WriteFile(Dir(number) + "/size", "2048\n");  // 1 MiB
    fs::create_directories(Dir(number) + "/holders");
    fs::create_directories(paths_.sysfs + "/class/block");
    fs::create_directory_symlink(Dir(number), paths_.sysfs + "/class/block/" + name);
  }
  Status Check(dev_t device = makedev(7, 3)) {
    return CheckBeforeWrite(target_, fd_, device, paths_);
  }
  // Expects a refusal naming the device and `key`.
  void ExpectRefused(const Status& s, const std::string& reason,
                     const std::string& key) {
    ASSERT_FALSE(s.ok()) << "expected a refusal: " << reason;
    EXPECT_EQ(s.error().errnum, EPERM);
    EXPECT_EQ(s.error().nvme_status, -1);
    const std::string& m = s.error().message;
    EXPECT_EQ(m.rfind(target_.block_device + ": refusing to write: ", 0), 0u)
        << m;
    EXPECT_THAT(m, HasSubstr(reason));
    EXPECT_THAT(m, HasSubstr(key));
  }

  std::string root_;
  SystemPaths paths_;
  std::string backing_;
  std::string device_file_;
  int fd_ = -1;
  config::AgingTarget target_;
};

TEST_F(InterlocksTest, LoopIdentityIsBackingFileWithoutNewline) {
  auto id = ReadDeviceIdentity(fd_, makedev(7, 3), paths_);
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(id->serial, "loop:" + backing_);
  EXPECT_FALSE(id->nvme);
  EXPECT_EQ(id->nsid, 0u);
}

TEST_F(InterlocksTest, SerialFromDeviceSerialThenOwnSerial) {
  Dev("8:0", "sda");
  WriteFile(Dir("8:0") + "/device/serial", "  WD-1234  \n");
  auto id = ReadDeviceIdentity(fd_, makedev(8, 0), paths_);
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(id->serial, "WD-1234");

  Dev("179:0", "mmcblk0");
  WriteFile(Dir("179:0") + "/serial", "0x1234abcd\n");
  id = ReadDeviceIdentity(fd_, makedev(179, 0), paths_);
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(id->serial, "0x1234abcd");
}

TEST_F(InterlocksTest, PartitionTakesItsDisksIdentity) {
  // On real sysfs dev/block/259:5 links to .../loop3/loop3p1.
  auto id = ReadDeviceIdentity(fd_, makedev(259, 5), paths_);
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(id->serial, "loop:" + backing_);
}

// A backing file named with a trailing blank is another file: the
// identity keeps every byte of the name but sysfs' newline.
TEST_F(InterlocksTest, LoopIdentityKeepsBlanksOfTheName) {
  WriteFile(Dir("7:3") + "/loop/backing_file", backing_ + " \n");
  auto id = ReadDeviceIdentity(fd_, makedev(7, 3), paths_);
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(id->serial, "loop:" + backing_ + " ");
  ExpectRefused(Check(), "serial \"loop:" + backing_ + "\" configured, \"loop:" + backing_ +
                             " \" found",
                "aging.targets.serial");
}

TEST_F(InterlocksTest, NoIdentityIsRefused) {
  Dev("1:0", "ram0");
  auto id = ReadDeviceIdentity(fd_, makedev(1, 0), paths_);
  ASSERT_FALSE(id.ok());
  EXPECT_THAT(id.error().message, HasSubstr("no identity"));

  target_.block_device = "/dev/ram0";
  ExpectRefused(Check(makedev(1, 0)), "no identity", "no config key");
}

TEST_F(InterlocksTest, NvmeByNameAsksTheDescriptor) {
  // A file is no NVMe namespace: Identify through it fails, and that must
  // refuse rather than fall back to sysfs.
  Dev("259:0", "nvme0n1");
  WriteFile(Dir("259:0") + "/device/serial", "SYSFS-SERIAL\n");
  auto id = ReadDeviceIdentity(fd_, makedev(259, 0), paths_);
  ASSERT_FALSE(id.ok());
  EXPECT_THAT(id.error().message, HasSubstr("identify CNS 01h NSID 0: Inappropriate ioctl for device"));

  target_.block_device = "/dev/nvme0n1";
  target_.serial = "SYSFS-SERIAL";
  target_.nsid = 1;
  ExpectRefused(Check(makedev(259, 0)), "identity cannot be checked",
                "no config key");
}

TEST_F(InterlocksTest, CleanDevicePasses) {
  auto s = Check();
  EXPECT_TRUE(s.ok()) << s.error().message;
}

TEST_F(InterlocksTest, DestroyDataIsCheckedFirst) {
  target_.destroy_data = false;
  target_.serial = "wrong";
  ExpectRefused(Check(), "does not acknowledge",
                "aging.targets.destroy_data = true for target \"scratch\"");
}

TEST_F(InterlocksTest, SerialMismatchShowsBoth) {
  target_.serial = "loop:/wrong/path";
  ExpectRefused(Check(),
                "serial \"loop:/wrong/path\" configured, "
                "\"loop:" + backing_ + "\" found",
                "aging.targets.serial");
}

TEST_F(InterlocksTest, MissingSerialIsRefused) {
  target_.serial.clear();
  ExpectRefused(Check(), "names no serial", "set aging.targets.serial");
}

TEST_F(InterlocksTest, NamespaceOnNonNvmeIsRefused) {
  target_.nsid = 1;
  ExpectRefused(Check(), "not an NVMe namespace", "aging.targets.namespace");
}

TEST_F(InterlocksTest, MountedDeviceIsRefused) {
  WriteFile(paths_.mountinfo,
            "28 1 8:2 / / rw - ext4 /dev/sda2 rw\n"
            "40 28 7:3 / /mnt/my\\040data rw,relatime - ext4 /dev/loop3 rw\n");
  ExpectRefused(Check(), "it is mounted on /mnt/my data",
                "no config key overrides this");
}

TEST_F(InterlocksTest, MountedPartitionIsRefused) {
  WriteFile(paths_.mountinfo,
            "28 1 8:2 / / rw - ext4 /dev/sda2 rw\n"
            "41 28 259:5 / /srv rw - xfs /dev/loop3p1 rw\n");
  ExpectRefused(Check(), "/dev/loop3p1 is mounted on /srv",
                "no config key overrides this");
}

TEST_F(InterlocksTest, SwapDeviceIsRefused) {
  // /proc/swaps names device nodes, which are stat'ed: borrow the first
  // block device node of this machine as the target's number.
  std::string node;
  struct stat st {};
  if (DIR* d = ::opendir("/dev")) {
    while (dirent* e = ::readdir(d)) {
      const std::string p = std::string("/dev/") + e->d_name;
      if (::stat(p.c_str(), &st) == 0 && S_ISBLK(st.st_mode)) {
        node = p;
        break;
      }
    }
    ::closedir(d);
  }
  if (node.empty()) GTEST_SKIP() << "no block device node in /dev";
  const dev_t device = st.st_rdev;
  const std::string number =
      std::to_string(major(device)) + ":" + std::to_string(minor(device));
  if (number != "7:3") {
    fs::rename(Dir("7:3"), Dir(number));
  }
  WriteFile(
      paths_.swaps,
      "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
      "/var/swapfile                           file\t\t1024\t\t0\t\t-2\n" +
          node + "\tpartition\t1024\t0\t-3\n");
  ExpectRefused(Check(device), "it is in use as swap (" + node + ")",
                "no config key overrides this");
}

TEST_F(InterlocksTest, HeldPartitionIsRefused) {
  fs::create_directories(Dir("7:3") + "/loop3p1/holders/dm-0");
  ExpectRefused(Check(), "/dev/loop3p1 is held by dm-0",
                "no config key overrides this");
}

TEST_F(InterlocksTest, HeldDeviceIsRefused) {
  fs::create_directories(Dir("7:3") + "/holders/md127");
  ExpectRefused(Check(), "it is held by md127", "no config key overrides this");
}

TEST_F(InterlocksTest, PartitionTableIsRefusedUnlessAllowed) {
  // An MBR: one Linux partition from sector 2048, and the 55AA signature.
  unsigned char mbr[512] = {};
  unsigned char* e = mbr + 446;
  e[4] = 0x83;
  e[8] = 0x00;
  e[9] = 0x08;  // LBA 2048, little endian
  e[12] = 0x00;
  e[13] = 0x08;  // 2048 sectors
  mbr[510] = 0x55;
  mbr[511] = 0xaa;
  ASSERT_EQ(::pwrite(fd_, mbr, sizeof mbr, 0), 512);
  ExpectRefused(Check(), "it holds a dos partition table",
                "set aging.targets.allow_signatures = true for target "
                "\"scratch\" to overwrite it");
  target_.allow_signatures = true;
  auto s = Check();
  EXPECT_TRUE(s.ok()) << s.error().message;
}

TEST_F(InterlocksTest, BlockFdOfAnotherDeviceIsRefused) {
  int fd = -1;
  struct stat st {};
  for (const char* p : {"/dev/loop0", "/dev/ram0", "/dev/sda", "/dev/vda"}) {
    fd = ::open(p, O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISBLK(st.st_mode)) break;
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  if (fd < 0) GTEST_SKIP() << "no readable block device";
  const dev_t other = makedev(major(st.st_rdev), minor(st.st_rdev) + 1000);
  auto s = CheckBeforeWrite(target_, fd, other, paths_);
  ::close(fd);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().errnum, EPERM);
  EXPECT_THAT(s.error().message, HasSubstr("the open descriptor is device"));
}

// Files.

class AgingFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // /var/tmp: a disk file system where /tmp may be tmpfs; both work.
    char name[] = "/var/tmp/dw-aging-file-test.XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    dir_ = name;
    target_.name = "files";
    target_.directory = dir_;
    target_.file_size = 4 << 20;
    target_.min_free_ratio = 0;
    pass_.state_directory = dir_ + "/state";
    paths_.study_register = dir_ + "/register";
  }
  void TearDown() override { fs::remove_all(dir_); }

  Expected<std::string> Prepare() { return PrepareAgingFile(target_, pass_, paths_); }

  std::string dir_;
  config::AgingTarget target_;
  WritePass pass_;
  SystemPaths paths_;
};

TEST_F(AgingFileTest, PathIsInTheDirectory) {
  EXPECT_EQ(AgingFilePath(target_), dir_ + "/drivewatch-aging-files.dat");
}

TEST_F(AgingFileTest, CreatesAllocatedFile) {
  const mode_t old = ::umask(022);
  auto path = Prepare();
  ::umask(old);
  ASSERT_TRUE(path.ok()) << path.error().message;
  EXPECT_EQ(*path, AgingFilePath(target_));
  struct stat st;
  ASSERT_EQ(::stat(path->c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(static_cast<std::uint64_t>(st.st_size), target_.file_size);
  EXPECT_GE(static_cast<std::uint64_t>(st.st_blocks) * 512, target_.file_size);
}

TEST_F(AgingFileTest, ShrinksLargerFile) {
  target_.file_size = 16 << 20;
  ASSERT_TRUE(Prepare().ok());
  target_.file_size = 4 << 20;
  auto path = Prepare();
  ASSERT_TRUE(path.ok()) << path.error().message;
  EXPECT_EQ(fs::file_size(*path), target_.file_size);
}

// The review's case: a file at the path that drivewatch did not make (a
// user's 4 MiB of data) is refused, named, and left as it was, whatever
// its size against file_size.
TEST_F(AgingFileTest, RefusesAFileItDidNotMake) {
  for (const std::uintmax_t size : {std::uintmax_t{4} << 20, std::uintmax_t{6} << 20}) {
    {
      std::ofstream out(AgingFilePath(target_), std::ios::binary | std::ios::trunc);
      out << std::string(size, 'u');
    }
    auto path = Prepare();
    ASSERT_FALSE(path.ok()) << "size " << size;
    EXPECT_EQ(path.error().errnum, EPERM);
    EXPECT_THAT(path.error().message,
                HasSubstr(AgingFilePath(target_) + ": refusing to write: it exists, but "
                          "drivewatch did not create it"));
    EXPECT_THAT(path.error().message, HasSubstr("no record of it in " + pass_.state_directory +
                                                "/files/files.json"));
    EXPECT_EQ(fs::file_size(AgingFilePath(target_)), size);
    std::ifstream in(AgingFilePath(target_), std::ios::binary);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), std::string(size, 'u'));
  }
}

// A file drivewatch made, replaced by another under the same name, is not
// drivewatch's any more: the record names the inode it made.
TEST_F(AgingFileTest, RefusesAFileSwappedInUnderItsName) {
  ASSERT_TRUE(Prepare().ok());
  fs::remove(AgingFilePath(target_));
  MakeFile(AgingFilePath(target_), 4 << 20);
  auto path = Prepare();
  ASSERT_FALSE(path.ok());
  EXPECT_THAT(path.error().message, HasSubstr("records another file"));
}

// A damaged record is input that cannot be trusted: refused, named.
TEST_F(AgingFileTest, DamagedRecordIsRefused) {
  ASSERT_TRUE(Prepare().ok());
  WriteFile(pass_.state_directory + "/files/files.json", "{\"version\": 2}\n");
  auto path = Prepare();
  ASSERT_FALSE(path.ok());
  EXPECT_THAT(path.error().message,
              HasSubstr("whether drivewatch made it cannot be told: " + pass_.state_directory +
                        "/files/files.json: damaged aging file record"));
}

// Growing or shrinking a file a retention study holds goes through the
// write gate first, and is refused: the file keeps its size and bytes.
TEST_F(AgingFileTest, NoSizeChangeOfAFileAStudyHolds) {
  target_.file_size = 8 << 20;
  ASSERT_TRUE(Prepare().ok());
  auto map = ResolvePath(AgingFilePath(target_), paths_);
  ASSERT_TRUE(map.ok()) << map.error().message;
  Json study = Json::object();
  study["version"] = 2;
  study["study"] = "kept";
  study["id"] = "00000000000000a1";
  study["state"] = "baseline";
  study["target"] = "files";
  study["device"] = AgingFilePath(target_);
  study["storage"] = ToJson(map->Map(4 << 20, 2 << 20));
  Json region = Json::object();
  region["offset"] = 4 << 20;
  region["length"] = 2 << 20;
  region["block_size"] = 4096;
  study["region"] = region;
  Json pattern = Json::object();
  pattern["version"] = 1;
  pattern["seed"] = 7;
  pattern["study_id"] = "00000000000000a1";
  study["pattern"] = pattern;
  Json written = Json::object();
  written["start"] = 1.0;
  written["end"] = 2.0;
  written["next_offset"] = 6 << 20;
  study["written"] = written;
  Json accounting = Json::object();
  accounting["reference_temperature_k"] = 303.15;
  accounting["activation_energy_ev"] = 1.1;
  accounting["powered_on_sampled_seconds"] = 0.0;
  accounting["powered_on_equivalent_seconds"] = 0.0;
  study["accounting"] = accounting;
  study["events"] = Json::array();
  study["verifies"] = Json::array();
  ASSERT_TRUE(SaveStudy(pass_.state_directory, study).ok());
  for (const std::uint64_t size : {std::uint64_t{5} << 20, std::uint64_t{16} << 20}) {
    target_.file_size = size;
    auto path = Prepare();
    ASSERT_FALSE(path.ok()) << size;
    EXPECT_THAT(path.error().message,
                HasSubstr("changing the size of this file would cut or move bytes that "
                          "retention study \"kept\" (baseline"));
    EXPECT_EQ(fs::file_size(AgingFilePath(target_)), 8u << 20);
  }
  // The same size is no change: a pass outside the region goes on.
  target_.file_size = 8 << 20;
  pass_.offset = 0;
  pass_.length = 4 << 20;
  auto path = Prepare();
  EXPECT_TRUE(path.ok()) << path.error().message;
}

TEST_F(AgingFileTest, RefusesSymlink) {
  WriteFile(dir_ + "/victim", "precious\n");
  fs::create_symlink(dir_ + "/victim", AgingFilePath(target_));
  auto path = Prepare();
  ASSERT_FALSE(path.ok());
  EXPECT_EQ(path.error().errnum, EPERM);
  EXPECT_THAT(path.error().message,
              HasSubstr(AgingFilePath(target_) + ": refusing to write:"));
  EXPECT_EQ(fs::file_size(dir_ + "/victim"), 9u);
}

TEST_F(AgingFileTest, RefusesFifo) {
  ASSERT_EQ(::mkfifo(AgingFilePath(target_).c_str(), 0600), 0);
  auto path = Prepare();
  ASSERT_FALSE(path.ok());
  EXPECT_EQ(path.error().errnum, EPERM);
  EXPECT_THAT(path.error().message, HasSubstr("not a regular file"));
}

TEST_F(AgingFileTest, RefusesHardLinkToAnotherFile) {
  WriteFile(dir_ + "/victim", "precious\n");
  fs::create_hard_link(dir_ + "/victim", AgingFilePath(target_));
  auto path = Prepare();
  ASSERT_FALSE(path.ok());
  EXPECT_EQ(path.error().errnum, EPERM);
  EXPECT_THAT(path.error().message, HasSubstr("hard links"));
  EXPECT_EQ(fs::file_size(dir_ + "/victim"), 9u);
}

TEST_F(AgingFileTest, MissingDirectoryIsNamed) {
  target_.directory = dir_ + "/nope";
  auto path = Prepare();
  ASSERT_FALSE(path.ok());
  EXPECT_EQ(path.error().errnum, ENOENT);
  EXPECT_THAT(path.error().message, HasSubstr(dir_ + "/nope"));
  EXPECT_THAT(path.error().message, HasSubstr("does not exist"));
  auto s = CheckFileReserve(target_, 1);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().errnum, ENOENT);
}

TEST_F(AgingFileTest, ReserveRefusesWithKeyAndNumbers) {
  target_.min_free_ratio = 1.0;  // nothing can keep 100% free
  auto s = CheckFileReserve(target_, 1 << 20);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().errnum, EPERM);
  const std::string& m = s.error().message;
  EXPECT_THAT(m, HasSubstr(AgingFilePath(target_) + ": refusing to write:"));
  EXPECT_THAT(m, HasSubstr("making it 1.0 MiB"));
  EXPECT_THAT(m, HasSubstr("below the reserve of 100%"));
  EXPECT_THAT(
      m, HasSubstr("aging.targets.free_space_reserve for target \"files\""));
  // PrepareAgingFile checks first and creates nothing.
  target_.file_size = 1 << 20;
  EXPECT_FALSE(Prepare().ok());
  EXPECT_FALSE(fs::exists(AgingFilePath(target_)));
}

TEST_F(AgingFileTest, ReserveCountsWhatTheFileHolds) {
  target_.file_size = 32 << 20;
  ASSERT_TRUE(Prepare().ok());
  struct statvfs vfs;
  ASSERT_EQ(::statvfs(dir_.c_str(), &vfs), 0);
  const std::uint64_t available =
      static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  // Only the growth beyond the 32 MiB already allocated needs free space;
  // 8 MiB slack for other writers on this file system.
  EXPECT_TRUE(CheckFileReserve(target_, available + (24 << 20)).ok());
  EXPECT_FALSE(CheckFileReserve(target_, available + (40 << 20)).ok());
}

}  // namespace
}  // namespace drivewatch::aging
