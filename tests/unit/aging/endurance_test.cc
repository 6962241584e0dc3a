// SPDX-License-Identifier: Apache-2.0
// The endurance phase's parts (aging/phases/endurance.h): the JESD219 mix on 512 B
// and 4 KiB namespaces, the WAF, and the progress file read back.
#include "aging/phases/endurance.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <filesystem>
#include <string>

#include "tests/common/file_text.h"
#include "tests/common/scratch_dir.h"

namespace drivewatch::aging {
namespace {

std::uint32_t Percent(const std::vector<SizeShare>& mix, std::uint32_t size) {
  for (const SizeShare& s : mix) {
    if (s.size == size) return s.percent;
  }
  return 0;
}

TEST(Jesd219, SizesOn512ByteBlocksAreTheStandardsMix) {
  const auto mix = Jesd219Sizes(512);
  ASSERT_EQ(mix.size(), 12u);
  std::uint32_t sum = 0;
  for (const SizeShare& s : mix) sum += s.percent;
  EXPECT_EQ(sum, 100u);
  EXPECT_EQ(Percent(mix, 512), 4u);
  EXPECT_EQ(Percent(mix, 1536), 1u);
  EXPECT_EQ(Percent(mix, 3584), 1u);
  EXPECT_EQ(Percent(mix, 4096), 67u);
  EXPECT_EQ(Percent(mix, 8192), 10u);
  EXPECT_EQ(Percent(mix, 16384), 7u);
  EXPECT_EQ(Percent(mix, 32768), 3u);
  EXPECT_EQ(Percent(mix, 65536), 3u);
  EXPECT_EQ(mix.back().size, 65536u);  // sorted: the largest last
}

TEST(Jesd219, SizesBelowA4KiBBlockRoundUpToIt) {
  const auto mix = Jesd219Sizes(4096);
  ASSERT_EQ(mix.size(), 5u);
  EXPECT_EQ(Percent(mix, 4096), 77u);  // 67 + 4 + 6 x 1
  EXPECT_EQ(Percent(mix, 512), 0u);
  EXPECT_EQ(Percent(mix, 65536), 3u);
}

TEST(Jesd219, ZonesAre50On5_30On15_20On80) {
  const auto z = Jesd219Zones();
  ASSERT_EQ(z.size(), 3u);
  EXPECT_EQ(z[0].region_percent, 5);
  EXPECT_EQ(z[0].access_percent, 50u);
  EXPECT_EQ(z[1].region_percent, 15);
  EXPECT_EQ(z[1].access_percent, 30u);
  EXPECT_EQ(z[2].region_percent, 80);
  EXPECT_EQ(z[2].access_percent, 20u);
}

TEST(WriteAmplification, IsPhysicalOverHostAndUnknownWithoutEither) {
  ASSERT_TRUE(WriteAmplification(3e12, 1.5e12));
  EXPECT_DOUBLE_EQ(*WriteAmplification(3e12, 1.5e12), 2.0);
  EXPECT_DOUBLE_EQ(*WriteAmplification(1e9, 1e9), 1.0);
  EXPECT_FALSE(WriteAmplification(1e9, 0));
  EXPECT_FALSE(WriteAmplification(0, 1e9));
  EXPECT_FALSE(WriteAmplification(-5, 1e9));  // a counter that went backwards
  EXPECT_FALSE(WriteAmplification(NAN, 1e9));
  EXPECT_FALSE(WriteAmplification(1e9, INFINITY));
}

EnduranceProgress Sample() {
  EnduranceProgress p;
  p.workload = "jesd219";
  p.capacity = 64 << 20;
  p.seed = 0xfedcba9876543210ULL;
  p.started = 1.7e9;
  p.pass = 1;
  p.pass_bytes = 3 << 20;
  p.chunk = 7;
  p.host_bytes = (64 << 20) + (3 << 20);
  p.pass_start_host_bytes = 64 << 20;
  p.pass_start_physical_bytes = 1.25e11;
  p.critical_warning = 0;
  Json pass = Json::object();
  pass["pass"] = 1;
  pass["host_bytes"] = 64 << 20;
  p.passes.push_back(pass);
  return p;
}

TEST(EnduranceProgress, RoundTripsExactly) {
  const EnduranceProgress p = Sample();
  auto back = ParseEnduranceProgress(DumpJson(ToJson(p)), "/s/e.progress");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->workload, "jesd219");
  EXPECT_EQ(back->seed, p.seed);  // all 64 bits
  EXPECT_EQ(back->pass, 1u);
  EXPECT_EQ(back->pass_bytes, p.pass_bytes);
  EXPECT_EQ(back->chunk, 7u);
  EXPECT_EQ(back->host_bytes, p.host_bytes);
  EXPECT_EQ(back->pass_start_host_bytes, p.pass_start_host_bytes);
  ASSERT_TRUE(back->pass_start_physical_bytes);
  EXPECT_DOUBLE_EQ(*back->pass_start_physical_bytes, 1.25e11);
  EXPECT_FALSE(back->ended);
  EXPECT_EQ(back->passes, p.passes);
}

TEST(EnduranceProgress, LoadsAFileAndRefusesOnePastItsBound) {
  const testing::ScratchDir dir("endurance");
  const std::string path = dir / "e.progress";
  testing::WriteFileText(path, DumpJson(ToJson(Sample())) + "\n");
  auto loaded = LoadEnduranceProgress(path);
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->seed, Sample().seed);
  // Sparse: refused by its size, unread.
  std::filesystem::resize_file(path, kMaxEnduranceProgressBytes + 1);
  loaded = LoadEnduranceProgress(path);
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().errnum, EFBIG);
  EXPECT_EQ(loaded.error().message,
            path + ": " + std::to_string(kMaxEnduranceProgressBytes + 1) +
                " bytes, larger than an endurance progress file may be (expected at most " +
                std::to_string(kMaxEnduranceProgressBytes) + " bytes)");
}

// Each damaged field is named, with what was expected.
TEST(EnduranceProgress, RefusesWhatDoesNotHold) {
  const auto error = [](const Json& j) {
    auto r = ParseEnduranceProgress(DumpJson(j), "/s/e.progress");
    return r ? std::string("accepted") : r.error().message;
  };
  EXPECT_NE(ParseEnduranceProgress("{", "/s/e.progress").error().message.find("/s/e.progress: not JSON"),
            std::string::npos);
  Json j = ToJson(Sample());
  j["version"] = 2;
  EXPECT_NE(error(j).find("version: expected 1, not 2"), std::string::npos) << error(j);
  j = ToJson(Sample());
  j["workload"] = "random";
  EXPECT_NE(error(j).find("workload: expected \"sequential\" or \"jesd219\""), std::string::npos);
  j = ToJson(Sample());
  j["pass_bytes"] = std::uint64_t{64 << 20};
  EXPECT_NE(error(j).find("pass_bytes: expected below capacity_bytes"), std::string::npos);
  j = ToJson(Sample());
  j["chunk"] = -1;
  EXPECT_NE(error(j).find("chunk: expected a whole number"), std::string::npos) << error(j);
  j = ToJson(Sample());
  j["host_bytes"] = 1.5;
  EXPECT_NE(error(j).find("host_bytes: expected a whole number"), std::string::npos) << error(j);
  j = ToJson(Sample());
  j["critical_warning"] = 256;
  EXPECT_NE(error(j).find("critical_warning: expected a whole number from 0 to 255"),
            std::string::npos);
  j = ToJson(Sample());
  j["passes"] = Json::array();
  EXPECT_NE(error(j).find("passes: expected an array of one record per pass done (1)"),
            std::string::npos);
  j = ToJson(Sample());
  j["ended"] = "no";
  EXPECT_NE(error(j).find("ended: expected true or false"), std::string::npos);
}

}  // namespace
}  // namespace drivewatch::aging
