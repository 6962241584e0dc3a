// SPDX-License-Identifier: Apache-2.0
// The retention study's accounting (Arrhenius, with a fake clock: the
// times are passed in), the verifier's classification and ranges, and the
// comparison with the baseline.
#include "aging/retention/retention_study.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <vector>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace drivewatch::aging {
namespace {

constexpr double kHour = 3600;

Json Study(double written_end) {
  Json s = Json::object();
  s["study"] = "s";
  s["written"] = Json::object();
  s["written"]["end"] = written_end;
  s["accounting"] = Json::object();
  s["accounting"]["reference_temperature_k"] = 303.15;
  s["accounting"]["activation_energy_ev"] = 1.1;
  s["smart_at_write"] = Json::object();
  s["smart_at_write"]["power_on_hours"] = std::uint64_t{1000};
  return s;
}

Json Smart(std::uint64_t poh) {
  Json j = Json::object();
  j["power_on_hours"] = poh;
  return j;
}

TEST(RetentionAccountingTest, AccelerationFactorFollowsArrhenius) {
  // Ea/k = 1.1 / 8.617e-5 K; 40 °C against 30 °C: exp(12765.5 * (1/303.15 - 1/313.15)).
  EXPECT_NEAR(AccelerationFactor(313.15, 303.15, 1.1), 3.838, 0.005);
  EXPECT_DOUBLE_EQ(AccelerationFactor(303.15, 303.15, 1.1), 1.0);
  EXPECT_NEAR(AccelerationFactor(293.15, 303.15, 1.1), 1 / 4.08, 0.01);
  // A year at 30 °C ages a drive like about 95 days at 40 °C, or 15 days
  // baked at 55 °C.
  EXPECT_NEAR(365 / AccelerationFactor(313.15, 303.15, 1.1), 95.1, 0.2);
  EXPECT_NEAR(365 / AccelerationFactor(328.15, 303.15, 1.1), 14.76, 0.05);
}

TEST(RetentionAccountingTest, SamplesIntegrateOnlyWhatWasSeen) {
  Json s = Study(0);
  AddTemperatureSample(s, 1000, 313.15, 180);  // first sample: starts the clock
  AddTemperatureSample(s, 1060, 313.15, 180);  // 60 s at 40 °C
  AddTemperatureSample(s, 1120, 303.15, 180);  // 60 s from 40 to 30 °C: mean 35 °C
  AddTemperatureSample(s, 9120, 303.15, 180);  // 8000 s gap: drivewatch was down
  AddTemperatureSample(s, 9180, 303.15, 180);  // 60 s at 30 °C
  const Json& a = *Find(s, "accounting");
  EXPECT_DOUBLE_EQ(AsDouble(*Find(a, "powered_on_sampled_seconds")), 180);
  const double expected = 60 * AccelerationFactor(313.15, 303.15, 1.1) +
                          60 * AccelerationFactor(308.15, 303.15, 1.1) + 60;
  EXPECT_NEAR(AsDouble(*Find(a, "powered_on_equivalent_seconds")), expected, 1e-6);
}

TEST(RetentionAccountingTest, AgesFromSmartAndTheStorageTemperature) {
  Json s = Study(0);
  AddTemperatureSample(s, 0, 313.15, 180);
  AddTemperatureSample(s, 120, 313.15, 180);  // 120 s sampled at 40 °C
  const double now = 60 * 24 * kHour;          // 60 days after the write
  const Json smart = Smart(1002);              // powered 2 h of them

  // Without SMART: powered-on is what was sampled, powered-off unknown.
  RetentionAges none = ComputeAges(s, now, nullptr, NAN);
  EXPECT_DOUBLE_EQ(none.wall_seconds, now);
  EXPECT_DOUBLE_EQ(none.powered_on_seconds, 120);
  EXPECT_FALSE(none.powered_off_seconds);
  EXPECT_FALSE(none.equivalent_age_seconds);

  // With SMART, without a storage temperature: off time known, the age not.
  RetentionAges partial = ComputeAges(s, now, &smart, NAN);
  EXPECT_DOUBLE_EQ(partial.powered_on_seconds, 2 * kHour);
  EXPECT_DOUBLE_EQ(*partial.powered_off_seconds, now - 2 * kHour);
  // Unsampled powered-on time counts at the sampled mean factor (40 °C).
  const double af40 = AccelerationFactor(313.15, 303.15, 1.1);
  EXPECT_NEAR(partial.powered_on_equivalent_seconds, 2 * kHour * af40, 1e-6);
  EXPECT_FALSE(partial.equivalent_age_seconds);

  // Stored at 25 °C: the off time counts at that factor.
  RetentionAges full = ComputeAges(s, now, &smart, 298.15);
  const double af25 = AccelerationFactor(298.15, 303.15, 1.1);
  EXPECT_NEAR(*full.equivalent_age_seconds, 2 * kHour * af40 + (now - 2 * kHour) * af25, 1e-3);
}

TEST(RetentionAccountingTest, SmartDeltaAndBaselineComparison) {
  Json before = Json::object(), after = Json::object();
  before["power_cycles"] = std::uint64_t{381};
  after["power_cycles"] = std::uint64_t{382};
  before["media_errors"] = std::uint64_t{0};
  after["media_errors"] = std::uint64_t{3};
  const Json d = SmartDelta(before, after);
  EXPECT_EQ(AsInt(*Find(d, "power_cycles")), 1);
  EXPECT_EQ(AsInt(*Find(d, "media_errors")), 3);
  EXPECT_EQ(Find(d, "unsafe_shutdowns"), nullptr);

  Json b = Json::object(), v = Json::object();
  b["quantiles"] = Json::object();
  v["quantiles"] = Json::object();
  b["quantiles"]["p99_9"] = 0.002;
  v["quantiles"]["p99_9"] = 0.150;
  b["over_100ms_ratio"] = 0.0;
  v["over_100ms_ratio"] = 0.001;
  const Json c = CompareWithBaseline(b, v);
  EXPECT_DOUBLE_EQ(AsDouble(*Find(c, "p99_9")), 0.148);
  EXPECT_DOUBLE_EQ(AsDouble(*Find(c, "over_100ms_ratio")), 0.001);
  EXPECT_EQ(Find(c, "p50"), nullptr);
}

TEST(RetentionVerifierTest, ClassifiesMergesRangesAndTimesReads) {
  const RetentionPattern p{0x1234, 99, 4096};
  const RetentionPattern other{0x5678, 7, 4096};
  constexpr std::uint64_t kBlocks = 64;
  std::vector<unsigned char> data(kBlocks * 4096);
  EncodeRetentionBlocks(p, 0, kBlocks, 1, data.data());
  data[10 * 4096 + 517] ^= 0xff;                                       // wrong content
  data[11 * 4096 + 600] ^= 0x01;                                       // wrong content
  std::memcpy(&data[20 * 4096], &data[30 * 4096], 4096);               // misplaced: 30's at 20
  EncodeRetentionBlock(other, 40, 1, &data[40 * 4096]);                // stale: another study

  RetentionVerifier verifier(p, kBlocks + 8);
  // Reads of 8 blocks; the last one fails outright.
  for (std::uint64_t first = 0; first < kBlocks; first += 8) {
    verifier.OnRead(first * 4096, &data[first * 4096], 8 * 4096, 8 * 4096,
                    first == 0 ? 150'000'000 : 1'000'000);
  }
  verifier.OnRead(kBlocks * 4096, nullptr, 8 * 4096, -EIO, 5'000'000);
  EXPECT_EQ(verifier.bad_blocks(), 2u + 1 + 1 + 8);
  const Json v = verifier.Finish(1, 2, true);
  EXPECT_EQ(AsUint(*Find(v, "ok")), kBlocks - 4);
  EXPECT_EQ(AsUint(*Find(*Find(v, "bad"), "wrong_content")), 2u);
  EXPECT_EQ(AsUint(*Find(*Find(v, "bad"), "misplaced")), 1u);
  EXPECT_EQ(AsUint(*Find(*Find(v, "bad"), "stale")), 1u);
  EXPECT_EQ(AsUint(*Find(*Find(v, "bad"), "unreadable")), 8u);
  const auto& ranges = Items(*Find(v, "ranges"));
  ASSERT_EQ(ranges.size(), 4u) << DumpJson(v, 2);
  EXPECT_EQ(AsString(*Find(ranges[0], "class")), "wrong_content");
  EXPECT_EQ(AsUint(*Find(ranges[0], "first_lba")), 10u);
  EXPECT_EQ(AsUint(*Find(ranges[0], "last_lba")), 11u);  // 10 and 11 merged
  EXPECT_EQ(AsUint(*Find(ranges[0], "first_difference")), 517u);
  EXPECT_EQ(AsUint(*Find(ranges[1], "found_lba")), 30u);
  EXPECT_EQ(AsString(*Find(ranges[2], "found_study")), StudyIdHex(0x5678));
  EXPECT_EQ(AsString(*Find(ranges[3], "class")), "unreadable");
  EXPECT_EQ(AsUint(*Find(ranges[3], "first_lba")), kBlocks);
  EXPECT_EQ(AsUint(*Find(ranges[3], "last_lba")), kBlocks + 7);
  EXPECT_EQ(AsString(*Find(ranges[3], "error")), std::strerror(EIO));
  // 8 timed reads (the failed one is not a latency sample), one over 100 ms.
  EXPECT_EQ(AsUint(*Find(*Find(v, "latency"), "count")), 8u);
  EXPECT_DOUBLE_EQ(AsDouble(*Find(v, "over_100ms_ratio")), 1.0 / 8);
  EXPECT_DOUBLE_EQ(AsDouble(*Find(v, "over_10ms_ratio")), 1.0 / 8);
  EXPECT_NEAR(AsDouble(*Find(*Find(v, "quantiles"), "max")), 0.150, 1e-9);
}

}  // namespace
}  // namespace drivewatch::aging

namespace drivewatch::aging {
namespace {

// A sysfs tree where the study's drive (SN2, namespace 1) came up as
// nvme0n1 this boot and another drive holds nvme1n1: a verify must follow
// the serial, not the name.
TEST(FindNvmeNamespaceTest, FollowsTheSerialAcrossKernelNames) {
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("dw-sysfs-" + std::to_string(getpid()));
  std::filesystem::remove_all(root);
  auto make = [&](const std::string& name, const std::string& dev, const std::string& serial,
                  const std::string& nsid) {
    std::filesystem::create_directories(root / "class/block" / name);
    std::ofstream(root / "class/block" / name / "dev") << dev << "\n";
    std::filesystem::create_directories(root / "dev/block" / dev / "device");
    std::ofstream(root / "dev/block" / dev / "device/serial") << serial << "   \n";
    std::ofstream(root / "dev/block" / dev / "nsid") << nsid << "\n";
  };
  make("nvme0n1", "259:0", "SN2", "1");
  make("nvme1n1", "259:1", "SN1", "1");
  make("nvme1n2", "259:2", "SN1", "2");
  std::filesystem::create_directories(root / "class/block/nvme1n1p1");  // a partition
  std::filesystem::create_directories(root / "class/block/sda");
  EXPECT_EQ(FindNvmeNamespace("SN2", 1, root.string()), "/dev/nvme0n1");
  EXPECT_EQ(FindNvmeNamespace("SN1", 2, root.string()), "/dev/nvme1n2");
  EXPECT_EQ(FindNvmeNamespace("SN1", 3, root.string()), std::nullopt);
  EXPECT_EQ(FindNvmeNamespace("SN9", 1, root.string()), std::nullopt);
  EXPECT_EQ(FindNvmeNamespace("SN2", 1, "/nonexistent"), std::nullopt);
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace drivewatch::aging
