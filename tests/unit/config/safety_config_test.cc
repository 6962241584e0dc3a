// SPDX-License-Identifier: Apache-2.0
// What check-config refuses before anything could be written: a file named
// as block_device, a state directory that is a file, a writing phase
// without the acknowledgement, a target's missing keys all at once, and
// retention studies that another phase (or study) would overwrite. And the
// messages that say what is wrong with a value, not that its type is.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "config/config.h"

namespace drivewatch::config {
namespace {

std::string Errors(const LoadResult& r) {
  std::string out;
  for (const ConfigError& e : r.errors) out += e.ToString() + "\n";
  return out;
}

class SafetyConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("dw-safety-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(SafetyConfigTest, ARegularFileAsBlockDeviceIsRefused) {
  const std::string image = (dir_ / "vm.img").string();
  std::ofstream(image) << "an ext4 image, say";
  const std::string text = "[[aging.targets]]\nname = \"vm\"\nblock_device = \"" + image +
                           "\"\nserial = \"WRONG\"\n";
  const LoadResult r = LoadString(text, "c.toml");
  ASSERT_FALSE(r.config);
  EXPECT_EQ(Errors(r), "c.toml:3:16: aging.targets.block_device: \"" + image +
                           "\" is a regular file, not a block device (expected a whole device "
                           "such as \"/dev/nvme1n1\"; to age a file, use directory = \"" +
                           dir_.string() +
                           "\" instead, where drivewatch writes only its own file)\n");
  // A device that is not there yet (hot-plug) is checked when a phase opens it.
  const LoadResult later = LoadString(
      "[[aging.targets]]\nname = \"x\"\nblock_device = \"/dev/sdzz\"\nserial = \"S\"\n", "c.toml");
  EXPECT_TRUE(later.config) << Errors(later);
}

TEST_F(SafetyConfigTest, AStateDirectoryThatIsAFileIsRefused) {
  const std::string file = (dir_ / "state").string();
  std::ofstream(file) << "x";
  const LoadResult r = LoadString("[state]\ndirectory = \"" + file + "\"\n", "c.toml");
  ASSERT_FALSE(r.config);
  EXPECT_EQ(Errors(r), "c.toml:2:13: state.directory: \"" + file +
                           "\" is a regular file, not a directory (expected the directory "
                           "drivewatch keeps its state in; it is created when missing)\n");
}

// Serial, namespace and destroy_data missing: all three reported in one
// run, the acknowledgement at the phase that would write.
TEST_F(SafetyConfigTest, EveryMissingKeyOfAWrittenTargetAtOnce) {
  const LoadResult r = LoadString(R"([[aging.targets]]
name = "scratch"
block_device = "/dev/nvme7n1"

[[aging.phases]]
name = "fill"
kind = "fill"
target = "scratch"

[[aging.phases]]
name = "verify"
kind = "retention-verify"
target = "scratch"
study = "s"
)",
                                  "c.toml");
  ASSERT_FALSE(r.config);
  EXPECT_EQ(Errors(r),
            "c.toml:1:1: aging.targets.serial: missing serial (expected the serial the device "
            "must show before drivewatch writes to it, e.g. serial = \"S4EWNX0R123456\")\n"
            "c.toml:1:1: aging.targets.namespace: missing namespace (expected the namespace ID "
            "the device must show before drivewatch writes to it, since \"/dev/nvme7n1\" is an "
            "NVMe namespace, e.g. namespace = 1)\n"
            "c.toml:8:10: aging.phases.target: phase kind \"fill\" writes target \"scratch\", "
            "which does not acknowledge that all data on /dev/nvme7n1 will be destroyed "
            "(expected destroy_data = true in its [[aging.targets]] entry at line 1, column 1)\n");
}

TEST_F(SafetyConfigTest, AReadOnlyPhaseNeedsNoAcknowledgement) {
  const LoadResult r = LoadString(R"([[aging.targets]]
name = "scratch"
block_device = "/dev/nvme7n1"
serial = "S1"
namespace = 1

[[aging.phases]]
name = "verify"
kind = "retention-verify"
target = "scratch"
study = "s"
)",
                                  "c.toml");
  EXPECT_TRUE(r.config) << Errors(r);
}

constexpr const char* kDrive = R"([[aging.targets]]
name = "scratch"
block_device = "/dev/nvme7n1"
serial = "S1"
namespace = 1
destroy_data = true

[[aging.targets]]
name = "same-drive"
block_device = "/dev/disk/by-id/nvme-S1"
serial = "S1"
namespace = 1
destroy_data = true
)";

TEST_F(SafetyConfigTest, OverlappingStudiesAreRefusedAtTheSecondPhase) {
  const LoadResult r = LoadString(std::string(kDrive) + R"(
[[aging.phases]]
name = "a-write"
kind = "retention-write"
target = "scratch"
study = "a"
length = "1536MiB"

[[aging.phases]]
name = "b-write"
kind = "retention-write"
target = "same-drive"
study = "b"
offset = "1GiB"
length = "1GiB"

[[aging.phases]]
name = "c-write"
kind = "retention-write"
target = "scratch"
study = "c"
offset = "4GiB"
)",
                                  "c.toml");
  ASSERT_FALSE(r.config);
  EXPECT_EQ(Errors(r),
            "c.toml:22:1: aging.phases: retention study \"b\" region [1GiB, 2GiB) on target "
            "\"same-drive\" (the same storage as \"scratch\") overlaps retention study \"a\" "
            "region [0B, 1536MiB) of phase \"a-write\" at line 15, column 1 (expected the regions of two "
            "studies on one drive not to overlap: each verify would find the other's "
            "blocks)\n");
}

TEST_F(SafetyConfigTest, StudiesSideBySideAreFine) {
  const LoadResult r = LoadString(std::string(kDrive) + R"(
[[aging.phases]]
name = "a-write"
kind = "retention-write"
target = "scratch"
study = "a"
length = "1GiB"

[[aging.phases]]
name = "a-verify"
kind = "retention-verify"
target = "scratch"
study = "a"

[[aging.phases]]
name = "b-write"
kind = "retention-write"
target = "same-drive"
study = "b"
offset = "1GiB"
)",
                                  "c.toml");
  EXPECT_TRUE(r.config) << Errors(r);
}

TEST_F(SafetyConfigTest, AWritingPhaseOnAStudysDriveIsRefused) {
  for (const char* kind : {"fill", "trim", "perf", "reclaim"}) {
    const LoadResult r = LoadString(std::string(kDrive) + R"(
[[aging.phases]]
name = "lab-write"
kind = "retention-write"
target = "scratch"
study = "lab"
offset = "1GiB"
length = "1GiB"

[[aging.phases]]
name = "aging"
kind = ")" + kind + R"("
target = "same-drive"
)",
                                    "c.toml");
    ASSERT_FALSE(r.config) << kind;
    EXPECT_EQ(Errors(r),
              "c.toml:23:1: aging.phases: phase \"aging\" (kind \"" + std::string(kind) +
                  "\", at line 23, column 1) writes target \"same-drive\" (the same storage as "
                  "\"scratch\"), where retention study \"lab\" of phase \"lab-write\" (at "
                  "line 15, column 1) holds the region [1GiB, 2GiB) (expected another target for it; once "
                  "the study is over, end it with drivewatch retention end lab and remove "
                  "phase \"lab-write\")\n")
        << kind;
  }
}

// Targets of other names that reach the same bytes (a partition and its
// disk, two loop devices over one image) are compared through the storage
// comparer the aging side provides; here a fake one stands in for it,
// since what is shown is how the loader uses its answer.
TEST_F(SafetyConfigTest, TargetsAreComparedOnTheStorageTheyReach) {
  const std::string text = R"(
[[aging.targets]]
name = "disk"
block_device = "/dev/loop40"
serial = "loop:/srv/t.img"
destroy_data = true
[[aging.targets]]
name = "part"
block_device = "/dev/loop40p2"
serial = "other"
destroy_data = true
[[aging.phases]]
name = "lab"
kind = "retention-write"
target = "disk"
study = "lab"
offset = "80MiB"
length = "8MiB"
[[aging.phases]]
name = "fill"
kind = "fill"
target = "part"
)";
  struct Asked {
    std::string a, b;
    std::uint64_t a_offset = 0, a_length = 0, b_offset = 0, b_length = 0;
  } asked;
  LoadOptions options;
  bool overlap = true;
  options.compare_storage = [&](const AgingTarget& a, std::uint64_t ao, std::uint64_t al,
                                const AgingTarget& b, std::uint64_t bo,
                                std::uint64_t bl) -> std::optional<StorageOverlap> {
    asked = {a.name, b.name, ao, al, bo, bl};
    return StorageOverlap{overlap, "/srv/t.img [80MiB, 88MiB)"};
  };
  LoadResult r = LoadString(text, "c.toml", options);
  ASSERT_FALSE(r.config);
  EXPECT_EQ(Errors(r),
            "c.toml:19:1: aging.phases: phase \"fill\" (kind \"fill\", at line 19, column 1) "
            "writes target \"part\" (which reaches the same bytes as target \"disk\": "
            "/srv/t.img [80MiB, 88MiB)), where retention study \"lab\" of phase \"lab\" (at line "
            "12, column 1) holds the region [80MiB, 88MiB) (expected another target for it; "
            "once the study is over, end it with drivewatch retention end lab and remove phase "
            "\"lab\")\n");
  // The fill's whole target against the study's region.
  EXPECT_EQ(asked.a, "part");
  EXPECT_EQ(asked.b, "disk");
  EXPECT_EQ(asked.a_length, 0u);
  EXPECT_EQ(asked.b_offset, 80u << 20);
  EXPECT_EQ(asked.b_length, 8u << 20);
  // Storage that shares no byte is no conflict, whatever the names.
  overlap = false;
  r = LoadString(text, "c.toml", options);
  EXPECT_TRUE(r.config) << Errors(r);
}

// Identities are compared byte for byte, so a blank at either end of a
// serial would never match: a config error, not a silent trim.
TEST_F(SafetyConfigTest, ASerialWithBlanksAtItsEndsIsRefused) {
  for (const std::string serial : {" S123", "S123 ", "loop:/srv/t.img ", "S123\t"}) {
    const LoadResult r = LoadString(
        "[[aging.targets]]\nname = \"t\"\nblock_device = \"/dev/sdzz\"\nserial = \"" + serial +
            "\"\n",
        "c.toml");
    ASSERT_FALSE(r.config) << serial;
    EXPECT_NE(Errors(r).find("aging.targets.serial: \""), std::string::npos) << Errors(r);
    EXPECT_NE(Errors(r).find("has blanks at its start or end (expected the serial exactly as "
                             "the device shows it"),
              std::string::npos)
        << Errors(r);
  }
}

TEST_F(SafetyConfigTest, ValuesThatAreWrongSayWhatIsWrong) {
  struct Case {
    std::string text;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"[[aging.targets]]\nname = \"../../etc/passwd\"\ndirectory = \"/tmp\"\n",
       "c.toml:2:8: aging.targets.name: \"../../etc/passwd\" has a character a name cannot "
       "have: \"/\" (expected a non-empty string of letters, digits, _, - and .)"},
      {"[[aging.targets]]\nname = \"\"\ndirectory = \"/tmp\"\n",
       "c.toml:2:8: aging.targets.name: empty string (expected a non-empty string of "
       "letters, digits, _, - and .)"},
      {"[probes.read_latency]\nrates = []\n",
       "c.toml:2:9: probes.read_latency.rates: empty array (expected a non-empty array of "
       "whole IOPS from 1 to 10000, such as [10, 100])"},
      {"[probes.read_latency]\nwindows = [\"1m\", \"2m\", \"3m\", \"4m\", \"5m\"]\n",
       "c.toml:2:11: probes.read_latency.windows: array of 5 (expected an array of 1 to 4 "
       "durations from 1m to 1d, such as [\"15m\", \"1h\"])"},
      {"[[probes.power.meters]]\nserial = \"\"\nhwmon = \"/sys/x\"\n",
       "c.toml:2:10: probes.power.meters.serial: empty serial"},
  };
  for (const Case& c : cases) {
    const LoadResult r = LoadString(c.text, "c.toml");
    EXPECT_FALSE(r.config) << c.text;
    EXPECT_NE(Errors(r).find(c.expected), std::string::npos)
        << "config:\n" << c.text << "\ngot:\n" << Errors(r) << "expected:\n" << c.expected;
    EXPECT_EQ(Errors(r).find("wrong type"), std::string::npos) << Errors(r);
  }
}

TEST_F(SafetyConfigTest, TomlLimitsAreSaidInOurWords) {
  const LoadResult r =
      LoadString("x = " + std::string(300, '[') + std::string(300, ']') + "\n", "c.toml");
  ASSERT_FALSE(r.config);
  const std::string e = Errors(r);
  EXPECT_EQ(e.find("TOML_"), std::string::npos) << e;
  EXPECT_NE(e.find("c.toml:1:"), std::string::npos) << e;
  EXPECT_NE(e.find("exceeded maximum nested value depth of 256 (expected arrays and inline "
                   "tables nested less deep; no drivewatch key nests them more than two "
                   "levels)"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace drivewatch::config

namespace drivewatch::config {
namespace {

// power-states writes nothing (no destroy_data) but changes the drive's
// power settings: it needs a target that names its drive's serial, so a
// directory target is refused, and an NVMe namespace target is enough.
TEST_F(SafetyConfigTest, PowerStatesNeedsATargetWithASerialButNoDestroyData) {
  const std::string text = "[[aging.targets]]\nname = \"files\"\ndirectory = \"" +
                           dir_.string() +
                           "\"\n\n[[aging.targets]]\nname = \"drive\"\nblock_device = "
                           "\"/dev/nvme9n1\"\nserial = \"S4EWNX0R123456\"\nnamespace = 1\n\n"
                           "[[aging.phases]]\nname = \"ps-files\"\nkind = \"power-states\"\n"
                           "target = \"files\"\n\n"
                           "[[aging.phases]]\nname = \"ps-drive\"\nkind = \"power-states\"\n"
                           "target = \"drive\"\ndwell = \"5s\"\nexit_samples = 10\n";
  const LoadResult r = LoadString(text, "c.toml");
  ASSERT_FALSE(r.config);
  EXPECT_EQ(Errors(r),
            "c.toml:14:10: aging.phases.target: phase kind \"power-states\" changes the power "
            "settings of the drive of target \"files\", which names no drive serial (expected "
            "an [[aging.targets]] entry with block_device and serial, not the one at line 1, "
            "column 1)\n");
  const std::string ok = text.substr(text.find("[[aging.targets]]\nname = \"drive\""));
  const LoadResult good = LoadString(ok.substr(0, ok.find("[[aging.phases]]")) +
                                         ok.substr(ok.find("[[aging.phases]]\nname = \"ps-drive\"")),
                                     "c.toml");
  ASSERT_TRUE(good.config) << Errors(good);
  const auto& p = std::get<PowerStatesParams>(good.config->aging.phases[0].params);
  EXPECT_EQ(p.dwell, std::chrono::milliseconds{5'000});
  EXPECT_EQ(p.exit_samples, 10u);
  EXPECT_EQ(p.settle, std::chrono::milliseconds{1'000});
}

// A block device that is not an NVMe namespace has no power states to
// set: refused at load, naming the device (it used to pass check-config and
// fail at run time). One that may be an NVMe namespace once plugged in
// (a by-id name) waits for the run.
TEST_F(SafetyConfigTest, PowerStatesOnABlockDeviceThatIsNoNvmeNamespaceIsRefusedAtLoad) {
  const auto config = [](const std::string& device) {
    return "[[aging.targets]]\nname = \"drive\"\nblock_device = \"" + device +
           "\"\nserial = \"S4EWNX0R123456\"\n\n[[aging.phases]]\nname = \"ps\"\n"
           "kind = \"power-states\"\ntarget = \"drive\"\n";
  };
  const LoadResult sd = LoadString(config("/dev/sdzz"), "c.toml");
  ASSERT_FALSE(sd.config);
  EXPECT_EQ(Errors(sd),
            "c.toml:9:10: aging.phases.target: phase kind \"power-states\" sends NVMe admin "
            "commands (Identify, Set Features 02h and 0Ch) to the drive of target \"drive\", "
            "and its block_device \"/dev/sdzz\" is not an NVMe namespace by its name (expected "
            "a target whose block_device is an NVMe namespace such as \"/dev/nvme0n1\", not the "
            "one at line 1, column 1)\n");
  // A path that exists is judged by what it resolves to, whatever the
  // link's name: a link named like a by-id NVMe name to this machine's
  // first block device that is not one (its disk, a loop device).
  std::string disk;
  for (const auto& e : std::filesystem::directory_iterator("/sys/block")) {
    const std::string dev = "/dev/" + e.path().filename().string();
    struct stat st;
    if (dev.find("nvme") == std::string::npos && ::stat(dev.c_str(), &st) == 0 &&
        S_ISBLK(st.st_mode)) {
      disk = dev;
      break;
    }
  }
  ASSERT_FALSE(disk.empty()) << "no block device on this machine to point a link at";
  const std::filesystem::path link = dir_ / "nvme-by-id";
  std::filesystem::create_symlink(disk, link);
  const LoadResult resolved = LoadString(config(link.string()), "c.toml");
  ASSERT_FALSE(resolved.config);
  EXPECT_NE(Errors(resolved).find("\"" + link.string() + "\" (\"" + disk +
                                  "\") is not an NVMe namespace (expected"),
            std::string::npos)
      << Errors(resolved);
  const LoadResult by_id =
      LoadString(config("/dev/disk/by-id/nvme-Samsung_SSD_970_S4EWNX0R123456"), "c.toml");
  EXPECT_TRUE(by_id.config) << Errors(by_id);
}

}  // namespace
}  // namespace drivewatch::config
