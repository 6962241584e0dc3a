// SPDX-License-Identifier: Apache-2.0
// The per-cell table `drivewatch phase run` prints after a perf run
// (aging/phases/perf_summary.h).
#include "aging/phases/perf_summary.h"

#include <gtest/gtest.h>

namespace drivewatch::aging {
namespace {

Json Record(const std::string& text) {
  auto j = ParseJson(text);
  EXPECT_TRUE(j) << text;
  return j ? *j : Json();
}

TEST(PerfSummaryTest, OneLinePerCellInMegabytesMebibytesAndIops) {
  const Json r = Record(R"({"kind":"perf","results":{
      "rr_bytes_per_second":40960000,"rr_iops":10000,
      "rr_read_p50_seconds":0.0001,"rr_read_p99_seconds":0.0002,"rr_read_p99_9_seconds":0.00025,
      "sw_bytes_per_second":2097152000,"sw_iops":1000,
      "sw_write_p99_9_seconds":0.012,"sw_steady_state_ratio":1},
    "series":{"cells":[
      {"name":"rr","access":"random","operation":"read","block_size":4096},
      {"name":"sw","access":"sequential","operation":"write","block_size":2097152}],
     "steady_state":[{"name":"rr","steady":false,"rounds":25},
                     {"name":"sw","steady":true,"rounds":6}]}})");
  EXPECT_EQ(RenderPerfSummary(r),
            "cell       MB/s      MiB/s        IOPS    read p99.9   write p99.9  steady state\n"
            "rr         41.0       39.1       10000      0.250 ms             -  not reached, 25 rounds\n"
            "sw       2097.2     2000.0        1000             -     12.000 ms  reached, 6 rounds\n");
}

TEST(PerfSummaryTest, TheBuiltInMatrixShowsBothFiguresFromTheOneItRecords) {
  const Json r = Record(R"({"kind":"perf","results":{
      "seq_read_bytes_per_second":131072000,"rand_read_4k_iops":2000,
      "qd1_rand_read_p99_9_seconds":0.001,"qd1_rand_read_p50_seconds":0.0005,
      "mixed_90_10_iops":1000,"mixed_90_10_read_p99_9_seconds":0.002,
      "mixed_90_10_write_p99_9_seconds":0.003},
    "series":{"cells":[
      {"name":"seq_read","operation":"read","block_size":131072},
      {"name":"rand_read_4k","operation":"read","block_size":4096},
      {"name":"qd1_rand_read","operation":"read","block_size":512},
      {"name":"mixed_90_10","operation":"mix","block_size":4096}]}})");
  EXPECT_EQ(RenderPerfSummary(r),
            "cell                MB/s      MiB/s        IOPS    read p99.9   write p99.9\n"
            "seq_read           131.1      125.0        1000             -             -\n"
            "rand_read_4k         8.2        7.8        2000             -             -\n"
            "qd1_rand_read          -          -           -      1.000 ms             -\n"
            "mixed_90_10          4.1        3.9        1000      2.000 ms      3.000 ms\n");
}

TEST(PerfSummaryTest, NothingForOtherKindsOrRecordsWithoutCells) {
  EXPECT_EQ(RenderPerfSummary(Record(R"({"kind":"fill","results":{}})")), "");
  EXPECT_EQ(RenderPerfSummary(Record(R"({"kind":"perf","outcome":"refused","results":{}})")), "");
  EXPECT_EQ(RenderPerfSummary(Record(R"({"kind":"perf","series":{"cells":"x"}})")), "");
}

}  // namespace
}  // namespace drivewatch::aging
