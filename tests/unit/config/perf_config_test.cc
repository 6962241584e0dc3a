// SPDX-License-Identifier: Apache-2.0
// perf's matrix in the config: [[aging.phases.cells]], the preset, the
// SNIA keys; their round trip through ToToml; and every refusal, located
// at the key that breaks the rule.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "config/checks.h"
#include "config/config.h"

namespace drivewatch::config {
namespace {

using std::chrono::milliseconds;

std::string Errors(const LoadResult& r) {
  std::string out;
  for (const ConfigError& e : r.errors) out += e.ToString() + "\n";
  return out;
}

// A directory target on /nonexistent: its logical block size is unknown to
// check-config, so only the 512-byte rule applies.
constexpr const char* kTarget = R"(
[[aging.targets]]
name = "t"
directory = "/nonexistent/dw"
)";

constexpr const char* kPerf = R"(
[[aging.phases]]
name = "p"
kind = "perf"
target = "t"
)";

TEST(PerfConfigTest, ReadsCellsPresetAndPreconditioning) {
  const std::string text = std::string(kTarget) + kPerf + R"(preset = "phoronix"
perf_duration = "20s"
purge = true
precondition = true
steady_state = true
max_rounds = 10

[[aging.phases.cells]]
name = "rand_read_4k_10iops"
access = "random"
operation = "read"
block_size = "4KiB"
rate_iops = 10
duration = "1m"

[[aging.phases.cells]]
name = "mix_70_30"
access = "random"
operation = "mix"
read_percent = 70
block_size = "16KiB"
queue_depth = 16
jobs = 4
bytes = "1GiB"

[[aging.phases.cells]]
name = "seq_trim"
access = "sequential"
operation = "trim"
block_size = "2MiB"
)";
  const LoadResult r = LoadString(text, "p.toml");
  ASSERT_TRUE(r.config) << Errors(r);
  const auto& p = std::get<PerfParams>(r.config->aging.phases[0].params);
  EXPECT_EQ(p.preset, "phoronix");
  EXPECT_TRUE(p.purge);
  EXPECT_TRUE(p.precondition);
  EXPECT_TRUE(p.steady_state);
  EXPECT_EQ(p.max_rounds, 10u);
  ASSERT_EQ(p.cells.size(), 3u);
  const PerfCell& a = p.cells[0];
  EXPECT_EQ(a.name, "rand_read_4k_10iops");
  EXPECT_EQ(a.access, "random");
  EXPECT_EQ(a.operation, "read");
  EXPECT_EQ(a.read_percent, std::nullopt);
  EXPECT_EQ(a.block_size, 4096u);
  EXPECT_EQ(a.queue_depth, 1u);  // as fio's iodepth
  EXPECT_EQ(a.jobs, 1u);
  EXPECT_EQ(a.rate_iops, 10);
  EXPECT_EQ(a.duration, milliseconds{60'000});
  EXPECT_EQ(a.bytes, std::nullopt);
  const PerfCell& b = p.cells[1];
  EXPECT_EQ(b.read_percent, 70u);
  EXPECT_EQ(b.queue_depth, 16u);
  EXPECT_EQ(b.jobs, 4u);
  EXPECT_EQ(b.bytes, 1ull << 30);
  EXPECT_EQ(b.duration, std::nullopt);
  EXPECT_EQ(p.cells[2].operation, "trim");
  EXPECT_EQ(p.cells[2].block_size, 2u << 20);

  // ToToml writes the cells inside the phase's inline table, one per line,
  // and reads them back the same.
  const std::string toml = ToToml(*r.config);
  EXPECT_NE(toml.find("preset = \"phoronix\", cells = [\n    { name = \"rand_read_4k_10iops\", "
                      "access = \"random\", operation = \"read\", block_size = \"4KiB\", "
                      "queue_depth = 1, jobs = 1, rate_iops = 10, duration = \"1m\" },\n"),
            std::string::npos)
      << toml;
  EXPECT_NE(toml.find("purge = true, precondition = true, steady_state = true, max_rounds = 10"),
            std::string::npos)
      << toml;
  const LoadResult again = LoadString(toml, "again.toml");
  ASSERT_TRUE(again.config) << Errors(again) << toml;
  EXPECT_EQ(*again.config, *r.config);
}

TEST(PerfConfigTest, APerfPhaseWithoutCellsKeepsTheBuiltInMatrixAndRoundTrips) {
  const LoadResult r = LoadString(std::string(kTarget) + kPerf, "p.toml");
  ASSERT_TRUE(r.config) << Errors(r);
  const auto& p = std::get<PerfParams>(r.config->aging.phases[0].params);
  EXPECT_EQ(p, PerfParams{});
  EXPECT_FALSE(p.preset);
  EXPECT_TRUE(p.cells.empty());
  EXPECT_FALSE(p.purge || p.precondition || p.steady_state);
  EXPECT_EQ(p.max_rounds, 25u);
  const std::string toml = ToToml(*r.config);
  EXPECT_NE(toml.find("cells = [], purge = false"), std::string::npos) << toml;
  EXPECT_EQ(toml.find("preset"), std::string::npos) << toml;
  const LoadResult again = LoadString(toml, "again.toml");
  ASSERT_TRUE(again.config) << Errors(again) << toml;
  EXPECT_EQ(*again.config, *r.config);
}

TEST(PerfConfigTest, ThePhoronixPresetIsItsEightFioCells) {
  const auto cells = PresetCells("phoronix");
  ASSERT_EQ(cells.size(), 8u);
  std::vector<std::string> described;
  for (const PerfCell& c : cells) {
    EXPECT_EQ(c.jobs, 1u);
    EXPECT_FALSE(c.rate_iops || c.duration || c.bytes || c.read_percent) << c.name;
    described.push_back(c.name + " " + c.access + " " + c.operation + " " +
                        FormatSize(c.block_size) + " QD" + std::to_string(c.queue_depth));
  }
  EXPECT_EQ(described, (std::vector<std::string>{
                           "rand_read_4k_qd1 random read 4KiB QD1",
                           "rand_read_4k_qd32 random read 4KiB QD32",
                           "rand_write_4k_qd1 random write 4KiB QD1",
                           "rand_write_4k_qd32 random write 4KiB QD32",
                           "seq_read_2m_qd1 sequential read 2MiB QD1",
                           "seq_read_2m_qd8 sequential read 2MiB QD8",
                           "seq_read_2m_qd32 sequential read 2MiB QD32",
                           "seq_write_2m_qd8 sequential write 2MiB QD8",
                       }));
  EXPECT_TRUE(PresetCells("fio").empty());
}

TEST(PerfConfigTest, EveryRefusalIsLocatedAtItsKey) {
  struct Case {
    std::string phase;  // after the perf phase's header (from line 10)
    std::string expected;
  };
  const std::string cell = "[[aging.phases.cells]]\n";
  const std::string good = "name = \"c\"\naccess = \"random\"\noperation = \"read\"\n"
                           "block_size = \"4KiB\"\n";
  const std::vector<Case> cases = {
      {cell + "access = \"random\"\noperation = \"read\"\nblock_size = \"4KiB\"\n",
       "x.toml:10:1: aging.phases.cells[0].name: missing name (expected the cell's name, "
       "unique in the phase, e.g. name = \"rand_read_4k_qd1\")"},
      {cell + "name = \"c\"\noperation = \"read\"\nblock_size = \"4KiB\"\n",
       "x.toml:10:1: aging.phases.cells[0].access: missing access (expected \"sequential\" or "
       "\"random\")"},
      {cell + "name = \"c\"\naccess = \"random\"\nblock_size = \"4KiB\"\n",
       "x.toml:10:1: aging.phases.cells[0].operation: missing operation"},
      {cell + "name = \"c\"\naccess = \"random\"\noperation = \"read\"\n",
       "x.toml:10:1: aging.phases.cells[0].block_size: missing block_size (expected the size "
       "of each I/O, e.g. block_size = \"4KiB\")"},
      {cell + good + cell + "name = \"d\"\naccess = \"randm\"\noperation = \"read\"\n"
                            "block_size = \"4KiB\"\n",
       "x.toml:17:10: aging.phases.cells[1].access: \"randm\" is not one of its values "
       "(expected one of \"sequential\", \"random\")"},
      {cell + good + "blocksize = \"4KiB\"\n",
       "x.toml:15:1: aging.phases.cells[0].blocksize: unknown key (did you mean "
       "\"block_size\"?)"},
      {cell + "name = \"c\"\naccess = \"random\"\noperation = \"read\"\nblock_size = \"1000B\"\n",
       "x.toml:14:14: aging.phases.cells[0].block_size: \"1000B\" is not a usable block size "
       "(expected a multiple of 512B from 512B to 2MiB)"},
      {cell + "name = \"c\"\naccess = \"random\"\noperation = \"mix\"\nblock_size = \"4KiB\"\n",
       "x.toml:10:1: aging.phases.cells[0].read_percent: missing read_percent (expected the "
       "share of reads of operation = \"mix\", e.g. read_percent = 70)"},
      {cell + good + "read_percent = 70\n",
       "x.toml:15:16: aging.phases.cells[0].read_percent: operation \"read\" has no read "
       "percent (expected read_percent only with operation = \"mix\")"},
      {cell + "name = \"c\"\naccess = \"random\"\noperation = \"mix\"\nblock_size = \"4KiB\"\n"
              "read_percent = 100\n",
       "x.toml:15:16: aging.phases.cells[0].read_percent: 100 is out of range (expected a "
       "whole number from 1 to 99)"},
      {cell + good + "duration = \"10s\"\nbytes = \"1GiB\"\n",
       "x.toml:16:9: aging.phases.cells[0].bytes: both duration and bytes are set (expected "
       "one of them, or neither for the phase's perf_duration)"},
      {cell + good + "queue_depth = 32\njobs = 16\n",
       "x.toml:16:8: aging.phases.cells[0].jobs: queue_depth 32 x jobs 16 = 512 I/Os in "
       "flight (expected at most 256)"},
      {cell + good + "jobs = 65\n",
       "x.toml:15:8: aging.phases.cells[0].jobs: 65 is out of range (expected a whole number "
       "from 1 to 64)"},
      {cell + good + "jobs = 2\nrate_iops = 100\n",
       "x.toml:16:13: aging.phases.cells[0].rate_iops: a paced cell runs one job, not 2 "
       "(expected jobs = 1 with rate_iops)"},
      {cell + good + cell + good,
       "x.toml:16:8: aging.phases.cells[1].name: \"c\" is already a cell of this phase, at "
       "line 11, column 8 (expected unique names)"},
      {"preset = \"phoronix\"\n" + cell + "name = \"seq_read_2m_qd8\"\naccess = \"random\"\n"
           "operation = \"read\"\nblock_size = \"4KiB\"\n",
       "x.toml:12:8: aging.phases.cells[0].name: \"seq_read_2m_qd8\" is already a cell of "
       "preset \"phoronix\" (expected names unique in the phase, preset cells included)"},
      {"preset = \"fio\"\n",
       "x.toml:10:10: aging.phases.preset: \"fio\" is not one of its values (expected one of "
       "\"builtin\", \"phoronix\")"},
      {"preset = \"builtin\"\n" + cell + "name = \"qd1_rand_read\"\naccess = \"random\"\n"
           "operation = \"read\"\nblock_size = \"4KiB\"\n",
       "aging.phases.cells[0].name: \"qd1_rand_read\" is already a cell of preset \"builtin\" "
       "(expected names unique in the phase, preset cells included)"},
      {"cells = \"all\"\n",
       "x.toml:10:9: aging.phases.cells: wrong type: string \"all\" (expected an array of "
       "tables, written [[aging.phases.cells]])"},
      {"cells = [1]\n",
       "x.toml:10:10: aging.phases.cells[0]: wrong type: integer 1 (expected a table with "
       "name, access, operation and block_size, in an array of tables"},
      {"purge = \"yes\"\n",
       "x.toml:10:9: aging.phases.purge: wrong type: string \"yes\" (expected a boolean: true "
       "or false)"},
      {"runs = 5\nmax_runs = 2\n",
       "x.toml:11:12: aging.phases.max_runs: max_runs 2 is below runs 5 (expected max_runs >= "
       "runs)"},
      {"runs = 20\n",
       "x.toml:10:8: aging.phases.runs: max_runs 10 is below runs 20 (expected max_runs >= runs)"},
      {"runs = 0\n",
       "x.toml:10:8: aging.phases.runs: 0 is out of range (expected a whole number from 1 to "
       "100)"},
      {"max_standard_error = 0\n",
       "x.toml:10:22: aging.phases.max_standard_error: integer 0 is out of range (expected a fraction "
       "of the mean from 0.001 to 1)"},
      {"max_rounds = 4\n",
       "x.toml:10:14: aging.phases.max_rounds: 4 is out of range (expected a whole number from "
       "5 to 1000)"},
      {"purge = true\n",
       "x.toml:10:9: aging.phases.purge: purge without precondition leaves nothing stored, so "
       "cell \"seq_read\" would read deallocated blocks, which a drive answers without reading "
       "its media (expected precondition = true beside purge, or only cells that write or "
       "trim)"},
      {"purge = true\n" + cell + good,
       "aging.phases.purge: purge without precondition leaves nothing stored, so cell \"c\""},
  };
  for (const Case& c : cases) {
    const std::string text = std::string(kTarget) + kPerf + c.phase;
    const LoadResult r = LoadString(text, "x.toml");
    EXPECT_FALSE(r.config) << text;
    EXPECT_NE(Errors(r).find(c.expected), std::string::npos)
        << "expected: " << c.expected << "\ngot:\n"
        << Errors(r) << "in:\n"
        << text;
  }
  // Write-only cells may follow a purge without preconditioning.
  const LoadResult writes = LoadString(
      std::string(kTarget) + kPerf + "purge = true\n" + cell +
          "name = \"w\"\naccess = \"random\"\noperation = \"write\"\nblock_size = \"4KiB\"\n",
      "x.toml");
  EXPECT_TRUE(writes.config) << Errors(writes);
  // Cells belong to perf alone.
  const LoadResult fill = LoadString(
      std::string(kTarget) + "[[aging.phases]]\nname = \"f\"\nkind = \"fill\"\ntarget = \"t\"\n" +
          cell + good,
      "x.toml");
  EXPECT_NE(Errors(fill).find("aging.phases.cells: not used by kind \"fill\" (expected only on "
                              "kind \"perf\")"),
            std::string::npos)
      << Errors(fill);
}

// check-config knows a target's logical block size from sysfs where it
// can: here a fixture tree under a temporary directory stands for /sys, and
// the target is a directory whose file system's device it names.
TEST(PerfConfigTest, TheLogicalBlockSizeComesFromSysfs) {
  namespace fs = std::filesystem;
  const fs::path sys = fs::temp_directory_path() / ("dw-sysfs-" + std::to_string(getpid()));
  fs::remove_all(sys);
  struct stat st;
  ASSERT_EQ(::stat("/var/tmp", &st), 0);
  const std::string dev = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  const auto write = [](const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  };
  // A whole disk.
  write(sys / "dev/block" / dev / "queue/logical_block_size", "4096\n");
  auto lbs = detail::TargetLogicalBlockSize("", "/var/tmp", sys.string());
  ASSERT_TRUE(lbs);
  EXPECT_EQ(lbs->bytes, 4096u);
  EXPECT_EQ(lbs->source,
            "/var/tmp: " + (sys / "dev/block" / dev / "queue/logical_block_size").string());
  // A partition: its disk's queue, one level up.
  fs::remove_all(sys);
  write(sys / "disk/queue/logical_block_size", "512\n");
  fs::create_directories(sys / "disk/part1");
  fs::create_directories(sys / "dev/block");
  fs::create_directory_symlink(sys / "disk/part1", sys / "dev/block" / dev);
  lbs = detail::TargetLogicalBlockSize("", "/var/tmp", sys.string());
  ASSERT_TRUE(lbs);
  EXPECT_EQ(lbs->bytes, 512u);
  // Unknown: no such device in sysfs, a target that does not exist yet, a
  // value that is no block size, and a block_device that is not one.
  fs::remove_all(sys);
  EXPECT_FALSE(detail::TargetLogicalBlockSize("", "/var/tmp", sys.string()));
  EXPECT_FALSE(detail::TargetLogicalBlockSize("", "/nonexistent/dw", "/sys"));
  write(sys / "dev/block" / dev / "queue/logical_block_size", "4097\n");
  EXPECT_FALSE(detail::TargetLogicalBlockSize("", "/var/tmp", sys.string()));
  EXPECT_FALSE(detail::TargetLogicalBlockSize("/var/tmp", "", "/sys"));
  fs::remove_all(sys);
}

}  // namespace
}  // namespace drivewatch::config
