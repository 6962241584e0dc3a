// SPDX-License-Identifier: Apache-2.0
// The fill phase's story (aging/phases/fill_phase.cc) against the fake
// context (fake_phase_context.h): the whole target deallocated, then one
// sequential pass up to fill_percent; the SLC cache read off its series;
// a stop, a failed step and write errors.
#include <gtest/gtest.h>

#include "aging/phases/phase.h"
#include "tests/unit/aging/fake_phase_context.h"

namespace drivewatch::aging {
namespace {

using testing::FakePhaseContext;
using testing::Result;

TEST(FillPhaseTest, TrimsTheTargetThenWritesItSequentiallyUpToFillPercent) {
  config::FillParams p;
  p.fill_percent = 25;
  FakePhaseContext ctx(p);
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  ASSERT_EQ(ctx.steps, (std::vector<std::string>{"trim", "sequential write"}));
  const WorkloadSpec& trim = ctx.specs[0];
  EXPECT_EQ(trim.trim_percent, 100u);
  EXPECT_EQ(trim.write_percent, 0u);
  EXPECT_EQ(trim.block_size, 2u << 20);
  EXPECT_EQ(trim.length, 64u << 20);
  const WorkloadSpec& fill = ctx.specs[1];
  EXPECT_EQ(fill.access, Access::kSequential);
  EXPECT_EQ(fill.write_percent, 100u);
  EXPECT_EQ(fill.block_size, p.block_size);
  EXPECT_EQ(fill.queue_depth, p.queue_depth);
  EXPECT_EQ(fill.length, 16u << 20);
  EXPECT_FALSE(fill.wrap);
  EXPECT_EQ(ctx.progress[0], std::make_pair(0.0, 0.05));
  EXPECT_EQ(ctx.progress[1], std::make_pair(0.05, 1.0));

  EXPECT_EQ(Result(report, "trimmed_bytes"), 64u << 20);
  EXPECT_EQ(Result(report, "written_bytes"), 16u << 20);
  EXPECT_DOUBLE_EQ(Result(report, "fill_ratio"), 0.25);
  // 128 writes of 128 KiB at 1000 IOPS.
  EXPECT_DOUBLE_EQ(Result(report, "write_mean_bytes_per_second"), 1000.0 * 128 * 1024);
  EXPECT_NEAR(Result(report, "write_p99_9_seconds"), 100e-6, 1e-6);
  // One flat sample: no drop, so the cache is at least what was written.
  EXPECT_EQ(Result(report, "slc_cache_lower_bound_bytes"), 16u << 20);
  EXPECT_EQ(Find(report.results, "slc_cache_bytes"), nullptr);
  EXPECT_EQ(Find(report.results, "after_cache_bytes_per_second"), nullptr);
  EXPECT_EQ(Items(*Find(report.series, "throughput_bytes_per_second")).size(), 1u);
  EXPECT_EQ(DumpJson(*Find(report.series, "throughput_seconds")), "[0.128]");
}

TEST(FillPhaseTest, ASustainedDropInTheWriteSeriesIsTheSlcCache) {
  config::FillParams p;
  p.slc_sustain = std::chrono::seconds{3};
  p.slc_median_window = std::chrono::seconds{1};
  FakePhaseContext ctx(p);
  // Four seconds at 2 GB/s, then six at 500 MB/s.
  ctx.shape = [](const WorkloadSpec&, std::string_view step, WorkloadResult& r) {
    if (step != "sequential write") return;
    r.samples.clear();
    for (int s = 0; s < 10; ++s) {
      ThroughputSample sample;
      sample.write_bytes = s < 4 ? 2'000'000'000 : 500'000'000;
      r.samples.push_back(sample);
    }
  };
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  EXPECT_DOUBLE_EQ(Result(report, "slc_cache_bytes"), 8e9);
  EXPECT_DOUBLE_EQ(Result(report, "slc_exhausted_after_seconds"), 4);
  EXPECT_DOUBLE_EQ(Result(report, "before_cache_bytes_per_second"), 2e9);
  EXPECT_DOUBLE_EQ(Result(report, "after_cache_bytes_per_second"), 5e8);
  EXPECT_EQ(Find(report.results, "slc_cache_lower_bound_bytes"), nullptr);
  EXPECT_EQ(Items(*Find(report.series, "throughput_bytes_per_second")).size(), 10u);
}

TEST(FillPhaseTest, AStopDuringTheTrimEndsBeforeAnyWrite) {
  config::FillParams p;
  FakePhaseContext ctx(p);
  ctx.stop_at_step = 1;
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  EXPECT_EQ(ctx.steps, std::vector<std::string>{"trim"});
  EXPECT_EQ(Find(report.results, "trimmed_bytes"), nullptr);
  EXPECT_EQ(Find(report.results, "written_bytes"), nullptr);
}

TEST(FillPhaseTest, AStopDuringTheWriteKeepsWhatWasWritten) {
  config::FillParams p;
  FakePhaseContext ctx(p);
  ctx.stop_at_step = 2;
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  EXPECT_EQ(Result(report, "written_bytes"), 16u << 20);  // half of the 32 MiB pass
  EXPECT_DOUBLE_EQ(Result(report, "fill_ratio"), 0.25);
}

TEST(FillPhaseTest, AStepThatCannotRunEndsThePhaseWithItsError) {
  config::FillParams p;
  FakePhaseContext ctx(p);
  ctx.failing_steps.emplace("sequential write",
                            Error{EPERM, -1, "sequential write: refused by the write gate"});
  PhaseReport report;
  const Status s = RunKind(p, ctx, report);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().errnum, EPERM);
  EXPECT_EQ(s.error().message, "sequential write: refused by the write gate");
  EXPECT_EQ(Result(report, "trimmed_bytes"), 64u << 20);  // what came before stays
}

TEST(FillPhaseTest, WriteErrorsFailThePhaseAfterItsResults) {
  config::FillParams p;
  FakePhaseContext ctx(p);
  ctx.io_errors.emplace("sequential write", 3);
  PhaseReport report;
  const Status s = RunKind(p, ctx, report);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().errnum, EIO);
  EXPECT_EQ(s.error().message,
            "fill: 3 write errors, first: write at offset 0: Input/output error");
  EXPECT_EQ(Result(report, "written_bytes"), 32u << 20);
}

}  // namespace
}  // namespace drivewatch::aging
