// SPDX-License-Identifier: Apache-2.0
// Finding the CPUs that take a target's completion interrupts, against
// fixture sysfs and procfs trees laid out as the kernel lays them out (the
// development VM's /sys/block/vda: device -> ../../../virtio1 under the PCI
// function 0000:00:02.0, whose msi_irqs/ are 35 and 36, both on CPU 1).
// The fd is a real file; the tree maps its file system's device number.
// tests/integration/read_reactor_test.cc checks the reactor's affinity
// against the real /sys on whatever machine runs it.
#include "probes/latency/completion_cpus.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace drivewatch {
namespace {

namespace fs = std::filesystem;

class CompletionCpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ("dw-irq-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "sys/dev/block");
    file_ = root_ / "target.dat";
    std::ofstream(file_) << "x";
    fd_ = ::open(file_.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd_, 0);
    struct stat st {};
    ASSERT_EQ(::fstat(fd_, &st), 0);
    dev_ = st.st_dev;
  }
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
    fs::remove_all(root_);
  }

  // A disk NAME under a PCI function with these MSI vectors (irq -> its
  // effective_affinity_list; an empty list leaves that file out). Returns
  // the disk's sysfs directory.
  fs::path Disk(const std::string& name, const std::string& function,
                const std::map<int, std::string>& vectors) {
    const fs::path fn = root_ / "sys/devices/pci0000:00" / function;
    const fs::path disk = fn / ("virtio-" + name) / "block" / name;
    fs::create_directories(disk);
    fs::create_directories(fn / "msi_irqs");
    fs::create_directory_symlink("../..", disk / "device");
    for (const auto& [irq, cpus] : vectors) {
      std::ofstream(fn / "msi_irqs" / std::to_string(irq)) << "msix\n";
      const fs::path dir = root_ / "proc/irq" / std::to_string(irq);
      fs::create_directories(dir);
      std::ofstream(dir / "smp_affinity_list") << "0-63\n";
      if (!cpus.empty()) std::ofstream(dir / "effective_affinity_list") << cpus << "\n";
    }
    return disk;
  }
  // /sys/dev/block/MAJ:MIN -> DIR.
  void Map(dev_t dev, const fs::path& dir) {
    fs::create_directory_symlink(
        dir, root_ / "sys/dev/block" /
                 (std::to_string(major(dev)) + ":" + std::to_string(minor(dev))));
  }
  CompletionCpus Find() {
    return FindCompletionCpus(fd_, (root_ / "sys").string(), (root_ / "proc").string());
  }

  fs::path root_, file_;
  int fd_ = -1;
  dev_t dev_ = 0;
};

TEST_F(CompletionCpusTest, AFileOnAPartitionOfAOneQueueDiskIsOnItsInterruptsCpu) {
  const fs::path vda = Disk("vda", "0000:00:02.0", {{35, "1"}, {36, "1"}});
  fs::create_directories(vda / "vda1");
  std::ofstream(vda / "vda1" / "partition") << "1\n";
  Map(dev_, vda / "vda1");
  const CompletionCpus c = Find();
  EXPECT_EQ(c.cpus, (std::vector<int>{1}));
  EXPECT_EQ(c.via, "/dev/vda (irq 35, 36)");
}

TEST_F(CompletionCpusTest, AControllerWithAVectorPerCpuTakesEveryCpu) {
  Map(dev_, Disk("nvme0n1", "0000:01:00.0",
                 {{40, "0"}, {41, "0"}, {42, "1"}, {43, "2-3"}}));
  EXPECT_EQ(Find().cpus, (std::vector<int>{0, 1, 2, 3}));
}

TEST_F(CompletionCpusTest, WithoutEffectiveAffinityTheConfiguredOneCounts) {
  Map(dev_, Disk("vdb", "0000:00:04.0", {{50, ""}}));  // smp_affinity_list 0-63
  EXPECT_EQ(Find().cpus.size(), 64u);
}

TEST_F(CompletionCpusTest, ADiskWithoutInterruptVectorsIsUnknown) {
  const fs::path zram = root_ / "sys/devices/virtual/block/zram0";
  fs::create_directories(zram);
  Map(dev_, zram);
  EXPECT_TRUE(Find().cpus.empty());
}

TEST_F(CompletionCpusTest, ADeviceNumberSysfsDoesNotKnowIsUnknown) {
  EXPECT_TRUE(Find().cpus.empty());  // nothing mapped
}

TEST_F(CompletionCpusTest, ALoopDeviceIsFollowedToItsBackingFilesDisk) {
  // The backing file is /proc/version: its file system's device number is
  // procfs's, which the tree maps to a disk of its own.
  struct stat st {};
  ASSERT_EQ(::stat("/proc/version", &st), 0);
  ASSERT_NE(st.st_dev, dev_);
  const fs::path loop = root_ / "sys/devices/virtual/block/loop0";
  fs::create_directories(loop / "loop");
  std::ofstream(loop / "loop/backing_file") << "/proc/version\n";
  Map(dev_, loop);
  Map(st.st_dev, Disk("vdc", "0000:00:05.0", {{60, "3"}}));
  const CompletionCpus c = Find();
  EXPECT_EQ(c.cpus, (std::vector<int>{3}));
  EXPECT_EQ(c.via, "/dev/vdc (irq 60)");
}

TEST_F(CompletionCpusTest, ALoopOverItsOwnFileSystemIsUnknownNotEndless) {
  const fs::path loop = root_ / "sys/devices/virtual/block/loop1";
  fs::create_directories(loop / "loop");
  std::ofstream(loop / "loop/backing_file") << file_.string() << "\n";
  Map(dev_, loop);
  EXPECT_TRUE(Find().cpus.empty());
}

TEST_F(CompletionCpusTest, ADeviceMapperDeviceJoinsItsSlaves) {
  const fs::path dm = root_ / "sys/devices/virtual/block/dm-0";
  fs::create_directories(dm / "slaves/vdd");
  fs::create_directories(dm / "slaves/vde");
  std::ofstream(dm / "slaves/vdd/dev") << "252:16\n";
  std::ofstream(dm / "slaves/vde/dev") << "252:32\n";
  Map(dev_, dm);
  Map(makedev(252, 16), Disk("vdd", "0000:00:06.0", {{70, "0"}}));
  Map(makedev(252, 32), Disk("vde", "0000:00:07.0", {{71, "2"}}));
  const CompletionCpus c = Find();
  EXPECT_EQ(c.cpus, (std::vector<int>{0, 2}));
  EXPECT_NE(c.via.find("/dev/vdd (irq 70)"), std::string::npos) << c.via;
  EXPECT_NE(c.via.find("/dev/vde (irq 71)"), std::string::npos) << c.via;
}

TEST_F(CompletionCpusTest, OneSlaveOfUnknownPlaceMakesTheWholeUnknown) {
  const fs::path dm = root_ / "sys/devices/virtual/block/dm-1";
  fs::create_directories(dm / "slaves/vdf");
  fs::create_directories(dm / "slaves/zram1");
  std::ofstream(dm / "slaves/vdf/dev") << "252:48\n";
  std::ofstream(dm / "slaves/zram1/dev") << "251:1\n";  // not mapped
  Map(dev_, dm);
  Map(makedev(252, 48), Disk("vdf", "0000:00:08.0", {{80, "1"}}));
  EXPECT_TRUE(Find().cpus.empty());
}

TEST_F(CompletionCpusTest, NeitherAFileNorABlockDeviceIsUnknown) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  EXPECT_TRUE(FindCompletionCpus(fds[0], (root_ / "sys").string(), (root_ / "proc").string())
                  .cpus.empty());
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(ParseCpuListTest, ReadsTheKernelsListFormat) {
  EXPECT_EQ(ParseCpuList("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(ParseCpuList("1"), (std::vector<int>{1}));
  EXPECT_EQ(ParseCpuList("2,1,2"), (std::vector<int>{1, 2}));
  EXPECT_TRUE(ParseCpuList("").empty());
  EXPECT_TRUE(ParseCpuList("3-1").empty());
  EXPECT_TRUE(ParseCpuList("a").empty());
  EXPECT_TRUE(ParseCpuList("1-").empty());
  EXPECT_TRUE(ParseCpuList("0-99999").empty());
}

TEST(PlaceReactorTest, TargetsWhoseCompletionsAreKnownKeepItOnTheirCpus) {
  const CompletionCpus vda{{1}, "/dev/vda (irq 35, 36)"};
  const CompletionCpus nvme{{2, 3}, "/dev/nvme0n1 (irq 40-43)"};
  const ReactorPlace place = PlaceReactor({&vda, &nvme, &vda}, {0, 1, 2});
  EXPECT_EQ(place.cpus, (std::vector<int>{1, 2}));  // CPU 3 is not its to take
  EXPECT_EQ(place.why,
            "CPUs 1,2, where the kernel signals its reads' completions: /dev/nvme0n1 "
            "(irq 40-43); /dev/vda (irq 35, 36)");
  EXPECT_EQ(PlaceReactor({&vda}, {0, 1}).why,
            "CPU 1, where the kernel signals its reads' completions: /dev/vda (irq 35, 36)");
}

TEST(PlaceReactorTest, OneTargetWhoseCompletionsMayComeAnywhereLetsItRunAnywhere) {
  const CompletionCpus vda{{1}, "/dev/vda (irq 35, 36)"};
  const CompletionCpus tmpfs{{}, ""};
  const ReactorPlace place = PlaceReactor({&vda, &tmpfs}, {0, 1});
  EXPECT_EQ(place.cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(place.why, "any of CPUs 0,1 (a target's completions may come to any CPU)");
  // Completion CPUs it may not use at all: anywhere it may.
  const CompletionCpus far{{5}, "/dev/nvme1n1 (irq 50)"};
  EXPECT_EQ(PlaceReactor({&far}, {0, 1}).cpus, (std::vector<int>{0, 1}));
}

}  // namespace
}  // namespace drivewatch
