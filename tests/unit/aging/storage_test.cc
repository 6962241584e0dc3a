// SPDX-License-Identifier: Apache-2.0
// Which bytes of which storage a target reaches (aging/safety/storage.h), on
// sysfs fixtures built on the fly: partitions, loop devices with offsets,
// a loop over a block device, and device-mapper, which the machines this
// runs on lack (tests/run/write_safety_test.sh covers the real loop
// devices, partitions and mounts).
#include "aging/safety/storage.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "aging/safety/interlocks.h"

namespace drivewatch::aging {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

void WriteFile(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

class StorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/dw-storage-test.XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    root_ = name;
    paths_.sysfs = root_ + "/sys";
    paths_.dev = root_ + "/dev";  // no nodes: loop devices come from sysfs
    paths_.mountinfo = root_ + "/mountinfo";
    paths_.swaps = root_ + "/swaps";
    image_ = root_ + "/t.img";
    std::ofstream{image_};
    fs::resize_file(image_, 128 << 20);
    WriteFile(paths_.mountinfo, "22 1 0:21 / /proc rw - proc proc rw\n");
    WriteFile(paths_.swaps, "Filename\tType\tSize\tUsed\tPriority\n");
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string Dir(const std::string& number) { return paths_.sysfs + "/dev/block/" + number; }
  // A block device as sysfs shows it: dev, size (sectors), uevent name.
  void Dev(const std::string& number, const std::string& name, std::uint64_t mib) {
    WriteFile(Dir(number) + "/uevent", "DEVNAME=" + name + "\nDEVTYPE=disk\n");
    WriteFile(Dir(number) + "/dev", number + "\n");
    WriteFile(Dir(number) + "/size", std::to_string(mib * 2048) + "\n");
    fs::create_directories(paths_.sysfs + "/class/block");
    fs::create_directory_symlink(Dir(number), paths_.sysfs + "/class/block/" + name);
  }
  void Loop(const std::string& number, const std::string& name, const std::string& backing,
            std::uint64_t mib, std::uint64_t offset_mib = 0) {
    Dev(number, name, mib);
    WriteFile(Dir(number) + "/loop/backing_file", backing + "\n");
    WriteFile(Dir(number) + "/loop/offset", std::to_string(offset_mib << 20) + "\n");
  }
  // Partition `n` of the disk at `disk` from `start_mib`, as a subdirectory.
  void Partition(const std::string& disk, const std::string& number, const std::string& name,
                 int n, std::uint64_t start_mib, std::uint64_t mib) {
    const std::string dir = Dir(disk) + "/" + name;
    WriteFile(dir + "/partition", std::to_string(n) + "\n");
    WriteFile(dir + "/dev", number + "\n");
    WriteFile(dir + "/start", std::to_string(start_mib * 2048) + "\n");
    WriteFile(dir + "/size", std::to_string(mib * 2048) + "\n");
    WriteFile(dir + "/uevent", "DEVNAME=" + name + "\nDEVTYPE=partition\n");
    fs::create_directory_symlink(dir, Dir(number));
    fs::create_directory_symlink(dir, paths_.sysfs + "/class/block/" + name);
  }
  StorageMap Resolve(const std::string& number) {
    unsigned maj = 0, min = 0;
    std::sscanf(number.c_str(), "%u:%u", &maj, &min);
    auto map = ResolveBlockDevice(makedev(maj, min), -1, "", paths_);
    EXPECT_TRUE(map.ok()) << map.error().message;
    return map.ok() ? *map : StorageMap{};
  }

  // The write gate's block-device checks for /dev/loop3 over the image,
  // acknowledged, with a plain file standing in for the device written.
  Status CheckLoop3() {
    const std::string device = root_ + "/device.img";
    std::ofstream{device};
    fs::resize_file(device, 1 << 20);
    const int fd = ::open(device.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return Error{errno, -1, device};
    config::AgingTarget t;
    t.name = "t";
    t.block_device = "/dev/loop3";
    t.serial = "loop:" + image_;
    t.destroy_data = true;
    t.allow_signatures = true;
    Status s = CheckBeforeWrite(t, fd, makedev(7, 3), paths_);
    ::close(fd);
    return s;
  }

  std::string root_;
  std::string image_;
  SystemPaths paths_;
};

TEST_F(StorageTest, APartitionOfALoopDeviceIsItsBackingFileFromItsStart) {
  Loop("7:3", "loop3", image_, 128);
  Partition("7:3", "259:2", "loop3p2", 2, 64, 64);
  const StorageMap m = Resolve("259:2");
  ASSERT_EQ(m.extents.size(), 1u);
  const StorageExtent& e = m.extents[0];
  EXPECT_EQ(e.storage.kind, Storage::Kind::kFile);
  struct stat st;
  ASSERT_EQ(::stat(image_.c_str(), &st), 0);
  EXPECT_EQ(e.storage.device, st.st_dev);
  EXPECT_EQ(e.storage.inode, st.st_ino);
  EXPECT_EQ(e.offset, 64u << 20);
  EXPECT_EQ(e.length, 64u << 20);
  EXPECT_EQ(m.Describe(), image_ + " [64MiB, 128MiB) (/dev/loop3p2 is partition 2 of /dev/loop3 " +
                              "from 64MiB, /dev/loop3 is " + image_ + " from 0B)");
  // A range of the partition lands 64 MiB further on.
  const auto sub = m.Map(16 << 20, 8 << 20);
  ASSERT_EQ(sub.size(), 1u);
  EXPECT_EQ(sub[0].offset, 80u << 20);
  EXPECT_EQ(sub[0].length, 8u << 20);
}

TEST_F(StorageTest, AnOffsetLoopReachesTheSameBytesAsThePartition) {
  Loop("7:3", "loop3", image_, 128);
  Partition("7:3", "259:2", "loop3p2", 2, 64, 64);
  Loop("7:4", "loop4", image_, 64, 64);
  const StorageMap part = Resolve("259:2");
  const StorageMap offset = Resolve("7:4");
  ASSERT_EQ(offset.extents.size(), 1u);
  EXPECT_EQ(offset.extents[0].offset, 64u << 20);
  EXPECT_TRUE(offset.extents[0].Overlaps(part.extents[0]));
  // Partition 1 of the same image shares nothing with them.
  Partition("7:3", "259:1", "loop3p1", 1, 1, 63);
  EXPECT_FALSE(Resolve("259:1").extents[0].Overlaps(offset.extents[0]));
}

TEST_F(StorageTest, ALoopOverABlockDeviceReachesThatDevicesStorage) {
  // /dev/loop5 over a block device node: the node's device is followed
  // (here a node made in the fixture for a disk of the fixture sysfs).
  Dev("8:16", "sdb", 256);
  const std::string node = root_ + "/sdb";
  if (::mknod(node.c_str(), S_IFBLK | 0600, makedev(8, 16)) != 0) {
    GTEST_SKIP() << "mknod needs CAP_MKNOD";
  }
  Loop("7:5", "loop5", node, 32, 100);
  const StorageMap m = Resolve("7:5");
  ASSERT_EQ(m.extents.size(), 1u);
  EXPECT_EQ(m.extents[0].storage.kind, Storage::Kind::kDisk);
  EXPECT_EQ(m.extents[0].storage.device, makedev(8, 16));
  EXPECT_EQ(m.extents[0].offset, 100u << 20);
  EXPECT_EQ(m.extents[0].length, 32u << 20);
}

TEST_F(StorageTest, DeviceMapperCountsEverySlaveWhole) {
  Dev("8:0", "sda", 100);
  Dev("8:16", "sdb", 200);
  Dev("253:0", "dm-0", 50);
  fs::create_directories(Dir("253:0") + "/slaves");
  fs::create_directory_symlink(Dir("8:0"), Dir("253:0") + "/slaves/sda");
  fs::create_directory_symlink(Dir("8:16"), Dir("253:0") + "/slaves/sdb");
  const StorageMap m = Resolve("253:0");
  EXPECT_TRUE(m.approximate);
  ASSERT_EQ(m.extents.size(), 2u);
  EXPECT_EQ(m.extents[0].storage.device, makedev(8, 0));
  EXPECT_EQ(m.extents[0].length, 100u << 20);
  EXPECT_EQ(m.extents[1].storage.device, makedev(8, 16));
  EXPECT_EQ(m.extents[1].length, 200u << 20);
  // Any range of it reaches both slaves whole: its table is not read.
  EXPECT_EQ(m.Map(1 << 20, 4096).size(), 2u);
  EXPECT_THAT(m.Describe(), HasSubstr("/dev/dm-0 is made of /dev/sda /dev/sdb, whole"));
}

TEST_F(StorageTest, AMissingBackingFileCannotBeResolved) {
  Loop("7:6", "loop6", root_ + "/gone.img", 16);
  auto m = ResolveBlockDevice(makedev(7, 6), -1, "", paths_);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().errnum, ENODATA);
  EXPECT_THAT(m.error().message, HasSubstr("/dev/loop6: cannot tell which storage it reaches: "
                                           "its backing file " + root_ + "/gone.img cannot be found"));
}

TEST_F(StorageTest, ADirectorySpelledAnyWayIsOneFile) {
  fs::create_directories(root_ + "/d");
  std::ofstream(root_ + "/d/f") << "x";
  fs::create_directory_symlink(root_ + "/d", root_ + "/link");
  auto a = ResolvePath(root_ + "/d/f");
  ASSERT_TRUE(a.ok()) << a.error().message;
  for (const std::string spelling : {"/d//f", "/./d/f", "/link/f", "//d/./f"}) {
    auto b = ResolvePath(root_ + spelling);
    ASSERT_TRUE(b.ok()) << spelling;
    EXPECT_TRUE(a->extents[0].storage.SameAs(b->extents[0].storage)) << spelling;
  }
}

TEST_F(StorageTest, RecordedExtentsRoundTripAndAreChecked) {
  Loop("7:3", "loop3", image_, 128);
  const StorageMap m = Resolve("7:3");
  const Json j = ToJson(m.Map(4096, 8192));
  auto back = StorageFromJson(ParseJson(DumpJson(j)).value(), "record");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_TRUE(RecordedSame(*back, m.Map(4096, 8192)));
  EXPECT_FALSE(RecordedSame(*back, m.Map(0, 8192)));
  EXPECT_TRUE(RecordedOverlaps(*back, m.Map(8192, 1)));
  EXPECT_FALSE(RecordedOverlaps(*back, m.Map(12288, 4096)));

  for (const auto& [text, problem] :
       std::vector<std::pair<std::string, std::string>>{
           {"[]", "storage is not a list of 1 to 64 extents"},
           {R"([{"kind":"tape","device":"7:3","path":"p","offset":0,"length":1}])",
            "storage[0].kind is not \"disk\" or \"file\""},
           {R"([{"kind":"disk","device":"x","identity":"","path":"p","offset":0,"length":1}])",
            "storage[0].device is not a \"MAJOR:MINOR\" string"},
           {R"([{"kind":"file","device":"7:3","path":"p","offset":0,"length":1}])",
            "storage[0].inode is not a whole number"},
           {R"([{"kind":"disk","device":"7:3","identity":"","path":"p","offset":0,"length":0}])",
            "storage[0].offset and length are not a non-empty byte range"},
           {R"([{"kind":"disk","device":"7:3","identity":"","path":"p","offset":18446744073709551615,"length":2}])",
            "storage[0].offset and length are not a non-empty byte range"}}) {
    auto parsed = ParseJson(text);
    ASSERT_TRUE(parsed.ok()) << text;
    auto r = StorageFromJson(*parsed, "record");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().errnum, EBADMSG);
    EXPECT_EQ(r.error().message, "record: " + problem) << text;
  }
}

// Device numbers of file systems may change across a reboot; the path
// recorded then names the file. A file deleted and another made in its
// inode is not the same: the birth time says so; nor is a file made anew
// under the recorded path.
TEST_F(StorageTest, ARecordedFileIsFoundByPathAndNotByAReusedInode) {
  auto now = ResolvePath(image_);
  ASSERT_TRUE(now.ok());
  std::vector<StorageExtent> recorded = now->Map(0, 4096);
  recorded[0].storage.device = makedev(250, 99);  // before the reboot
  EXPECT_TRUE(RecordedOverlaps(recorded, now->Map(0, 4096)));
  recorded[0].storage.path = root_ + "/elsewhere.img";
  EXPECT_FALSE(RecordedOverlaps(recorded, now->Map(0, 4096)));
  // A file made anew under the same path (another inode) is another file,
  // on the same device or after a reboot, birth time or none.
  recorded = now->Map(0, 4096);
  recorded[0].storage.inode += 1;
  recorded[0].storage.birth_ns = 0;
  EXPECT_FALSE(RecordedOverlaps(recorded, now->Map(0, 4096)));
  EXPECT_FALSE(RecordedSame(recorded, now->Map(0, 4096)));
  recorded[0].storage.device = makedev(250, 99);
  EXPECT_FALSE(RecordedOverlaps(recorded, now->Map(0, 4096)));
  recorded = now->Map(0, 4096);
  if (recorded[0].storage.birth_ns == 0) GTEST_SKIP() << "no birth time on this file system";
  recorded[0].storage.birth_ns += 1;
  EXPECT_FALSE(RecordedOverlaps(recorded, now->Map(0, 4096)));
}

// The in-use scan: a second loop device over the image, mounted, is in use
// and shares the target's bytes; the write gate says so.
TEST_F(StorageTest, ASecondLoopOverAMountedImageIsInUse) {
  Loop("7:3", "loop3", image_, 128);
  Loop("7:4", "loop4", image_, 128);
  WriteFile(paths_.mountinfo, "40 1 7:4 / /mnt rw - ext4 /dev/loop4 rw\n");
  auto scan = ScanStorageInUse(paths_);
  ASSERT_TRUE(scan.ok()) << scan.error().message;
  ASSERT_EQ(scan->size(), 1u);
  EXPECT_EQ((*scan)[0].name, "/dev/loop4");
  EXPECT_EQ((*scan)[0].why, "is mounted on /mnt");
  EXPECT_TRUE((*scan)[0].extents[0].Overlaps(Resolve("7:3").extents[0]));

  const Status s = CheckLoop3();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "/dev/loop3: refusing to write: /dev/loop4 is mounted on /mnt, and it reaches the "
            "same bytes (" + image_ + " [0B, 128MiB)) (unmount it; no config key overrides this)");
}

// Something in use whose storage cannot be told refuses: what it shares
// is unknown.
TEST_F(StorageTest, AnUnresolvableDeviceInUseRefuses) {
  Loop("7:3", "loop3", image_, 128);
  Loop("7:9", "loop9", root_ + "/gone.img", 16);
  WriteFile(paths_.mountinfo, "40 1 7:9 / /m rw - ext4 /dev/loop9 rw\n");
  const Status s = CheckLoop3();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message,
              HasSubstr("/dev/loop9 is mounted on /m and /dev/loop9: cannot tell which storage "
                        "it reaches"));
  EXPECT_THAT(s.error().message, HasSubstr("so whether it shares bytes with this target is unknown"));
}

}  // namespace
}  // namespace drivewatch::aging
