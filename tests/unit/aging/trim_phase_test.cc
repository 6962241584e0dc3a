// SPDX-License-Identifier: Apache-2.0
// The trim phase's story (aging/phases/trim_phase.cc) against the fake
// context (fake_phase_context.h): fill, a write measured before the trim,
// the trim in 2 MiB deallocates, the same write after it, and their ratio;
// a stop, a failed step, and I/O errors (EIO) after the results.
#include <gtest/gtest.h>

#include "aging/phases/phase.h"
#include "tests/unit/aging/fake_phase_context.h"

namespace drivewatch::aging {
namespace {

using testing::FakePhaseContext;
using testing::Result;

const std::vector<std::string> kSteps = {"fill", "write before trim", "trim",
                                         "write after trim"};

TEST(TrimPhaseTest, FillsMeasuresTrimsAndMeasuresTheSameWriteAgain) {
  config::TrimParams p;  // fill 90 %, trim 50 %
  // The write after the trim at half the speed of the one before.
  FakePhaseContext ctx(p, {1000, 1000, 1000, 500});
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  ASSERT_EQ(ctx.steps, kSteps);
  const std::uint64_t block = p.block_size;
  EXPECT_EQ(ctx.specs[0].length, (64u << 20) * 9 / 10 / block * block);
  EXPECT_EQ(ctx.specs[0].write_percent, 100u);
  // The measured writes: the first tenth of the target, both the same.
  EXPECT_EQ(ctx.specs[1].length, (64u << 20) / 10 / block * block);
  EXPECT_EQ(ctx.specs[1].offset, 0u);
  EXPECT_EQ(ctx.specs[3].length, ctx.specs[1].length);
  EXPECT_EQ(ctx.specs[3].access, Access::kSequential);
  // The trim: the first half, in 2 MiB deallocates at QD1.
  EXPECT_EQ(ctx.specs[2].trim_percent, 100u);
  EXPECT_EQ(ctx.specs[2].block_size, 2u << 20);
  EXPECT_EQ(ctx.specs[2].queue_depth, 1u);
  EXPECT_EQ(ctx.specs[2].length, 32u << 20);

  EXPECT_EQ(Result(report, "filled_bytes"), ctx.specs[0].length);
  EXPECT_DOUBLE_EQ(Result(report, "write_before_trim_bytes_per_second"), 1000.0 * block);
  EXPECT_DOUBLE_EQ(Result(report, "write_after_trim_bytes_per_second"), 500.0 * block);
  EXPECT_DOUBLE_EQ(Result(report, "trim_efficiency_ratio"), 0.5);
  EXPECT_EQ(Result(report, "trimmed_bytes"), 32u << 20);
  EXPECT_EQ(Result(report, "trim_block_size_bytes"), 2u << 20);
  EXPECT_NEAR(Result(report, "trim_mean_seconds"), 100e-6, 1e-9);
  EXPECT_NEAR(Result(report, "trim_max_seconds"), 100e-6, 5e-6);
  EXPECT_NEAR(Result(report, "trim_p99_seconds"), 100e-6, 5e-6);
  EXPECT_TRUE(Find(report.series, "write_before_trim_bytes_per_second"));
  EXPECT_TRUE(Find(report.series, "write_after_trim_bytes_per_second"));
  EXPECT_EQ(ctx.checkpoints.size(), 2u);  // after the first write and after the trim
}

TEST(TrimPhaseTest, AWriteBeforeTheTrimThatMovedNothingGivesNoRatio) {
  config::TrimParams p;
  FakePhaseContext ctx(p, {1000, 0, 1000, 1000});
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  EXPECT_EQ(Result(report, "write_before_trim_bytes_per_second"), 0);
  EXPECT_GT(Result(report, "write_after_trim_bytes_per_second"), 0);
  EXPECT_EQ(Find(report.results, "trim_efficiency_ratio"), nullptr);
}

TEST(TrimPhaseTest, IoErrorsInAnyStepFailThePhaseWithEioAfterItsResults) {
  config::TrimParams p;
  FakePhaseContext ctx(p);
  ctx.io_errors.emplace("trim", 4);
  ctx.io_errors.emplace("write after trim", 1);
  PhaseReport report;
  const Status s = RunKind(p, ctx, report);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().errnum, EIO);
  EXPECT_EQ(s.error().message, "trim: 5 I/O errors");
  EXPECT_EQ(ctx.steps, kSteps);
  EXPECT_DOUBLE_EQ(Result(report, "trim_efficiency_ratio"), 1);
}

TEST(TrimPhaseTest, AStepThatCannotRunEndsThePhaseWithItsError) {
  config::TrimParams p;
  FakePhaseContext ctx(p);
  ctx.failing_steps.emplace("write after trim", Error{EIO, -1, "write after trim: EIO"});
  PhaseReport report;
  const Status s = RunKind(p, ctx, report);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "write after trim: EIO");
  EXPECT_GT(Result(report, "write_before_trim_bytes_per_second"), 0);
  EXPECT_EQ(Result(report, "trimmed_bytes"), 32u << 20);
  EXPECT_EQ(Find(report.results, "trim_efficiency_ratio"), nullptr);
}

TEST(TrimPhaseTest, AStopInAStepEndsThePhaseWithTheStepsBeforeIt) {
  for (std::size_t stop = 1; stop <= kSteps.size(); ++stop) {
    config::TrimParams p;
    FakePhaseContext ctx(p);
    ctx.stop_at_step = stop;
    PhaseReport report;
    ASSERT_TRUE(RunKind(p, ctx, report)) << stop;
    EXPECT_EQ(ctx.steps.size(), stop);
    EXPECT_EQ(Find(report.results, "write_before_trim_bytes_per_second") != nullptr, stop > 2)
        << stop;
    EXPECT_EQ(Find(report.results, "trimmed_bytes") != nullptr, stop > 3) << stop;
    EXPECT_EQ(Find(report.results, "trim_efficiency_ratio"), nullptr) << stop;
  }
}

}  // namespace
}  // namespace drivewatch::aging
