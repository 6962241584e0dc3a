// SPDX-License-Identifier: Apache-2.0
// The reclaim phase's story (aging/phases/reclaim_phase.cc) against the
// fake context (fake_phase_context.h): each idle, then a timed sequential
// write from where the last one stopped, and the fast stage of each; a
// stop in an idle or a write, a failed step and write errors.
#include <gtest/gtest.h>

#include "aging/phases/phase.h"
#include "tests/unit/aging/fake_phase_context.h"

namespace drivewatch::aging {
namespace {

using std::chrono::milliseconds;
using testing::FakePhaseContext;
using testing::Result;

config::ReclaimParams TwoIdles() {
  config::ReclaimParams p;
  p.reclaim_idle = {milliseconds{1'000}, milliseconds{2'000}};
  p.reclaim_write = milliseconds{3'000};
  return p;
}

TEST(ReclaimPhaseTest, EachIdleThenAWriteFromWhereTheFillOrTheLastWriteStopped) {
  const config::ReclaimParams p = TwoIdles();
  FakePhaseContext ctx(p);  // the history says: half full
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  EXPECT_EQ(ctx.events, (std::vector<std::string>{"idle idle_1s", "run idle_1s write",
                                                  "idle idle_2s", "run idle_2s write"}));
  EXPECT_EQ(ctx.idles[0].second, milliseconds{1'000});
  EXPECT_EQ(ctx.idles[1].second, milliseconds{2'000});
  ASSERT_EQ(ctx.specs.size(), 2u);
  const WorkloadSpec& first = ctx.specs[0];
  EXPECT_EQ(first.access, Access::kSequential);
  EXPECT_EQ(first.write_percent, 100u);
  EXPECT_EQ(first.start, 32u << 20);
  EXPECT_TRUE(first.wrap);
  EXPECT_EQ(first.max_time, milliseconds{3'000});
  // The second write goes on where the first one stopped, wrapping.
  EXPECT_EQ(ctx.specs[1].start, ((32u << 20) + 1000u * 128 * 1024) % (64u << 20));
  // Progress is shared out by time: 1 s idle + 3 s write of 9 s in all.
  EXPECT_DOUBLE_EQ(ctx.progress[0].first, 1.0 / 9);
  EXPECT_DOUBLE_EQ(ctx.progress[0].second, 4.0 / 9);

  // A flat write: the fast stage lasted at least the whole write.
  EXPECT_DOUBLE_EQ(Result(report, "idle_1s_fast_stage_lower_bound_seconds"), 1);
  EXPECT_EQ(Result(report, "idle_2s_fast_stage_lower_bound_bytes"), 1000.0 * 128 * 1024);
  EXPECT_DOUBLE_EQ(Result(report, "idle_2s_fast_bytes_per_second"), 1000.0 * 128 * 1024);
  EXPECT_EQ(Find(report.results, "idle_1s_slow_bytes_per_second"), nullptr);
  EXPECT_TRUE(Find(report.series, "idle_2s_throughput_bytes_per_second"));
  EXPECT_EQ(ctx.checkpoints.size(), 2u);
}

TEST(ReclaimPhaseTest, WithoutAFillOnRecordTheWritesStartAtZero) {
  const config::ReclaimParams p = TwoIdles();
  FakePhaseContext ctx(p);
  ctx.fill = -1;
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  EXPECT_EQ(ctx.specs[0].start, 0u);
}

TEST(ReclaimPhaseTest, AStopInAnIdleOrAWriteEndsThePhaseWithWhatItMeasured) {
  const config::ReclaimParams p = TwoIdles();
  {
    FakePhaseContext ctx(p);
    ctx.stop_at_step = 1;  // the first idle
    PhaseReport report;
    ASSERT_TRUE(RunKind(p, ctx, report));
    EXPECT_TRUE(ctx.specs.empty());
    EXPECT_TRUE(Members(report.results).empty());
  }
  {
    FakePhaseContext ctx(p);
    ctx.stop_at_step = 2;  // the first write
    PhaseReport report;
    ASSERT_TRUE(RunKind(p, ctx, report));
    EXPECT_EQ(ctx.idles.size(), 1u);
    EXPECT_EQ(Result(report, "idle_1s_fast_stage_lower_bound_bytes"), 500.0 * 128 * 1024);
    EXPECT_EQ(Find(report.results, "idle_2s_fast_bytes_per_second"), nullptr);
    EXPECT_EQ(ctx.checkpoints.size(), 1u);
  }
}

TEST(ReclaimPhaseTest, AFailedWriteOrWriteErrorsEndThePhaseKeepingTheEarlierLoops) {
  const config::ReclaimParams p = TwoIdles();
  {
    FakePhaseContext ctx(p);
    ctx.failing_steps.emplace("idle_2s write", Error{EIO, -1, "idle_2s write: cannot start"});
    PhaseReport report;
    const Status s = RunKind(p, ctx, report);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().message, "idle_2s write: cannot start");
    EXPECT_GT(Result(report, "idle_1s_fast_bytes_per_second"), 0);
  }
  {
    FakePhaseContext ctx(p);
    ctx.io_errors.emplace("idle_1s write", 2);
    PhaseReport report;
    const Status s = RunKind(p, ctx, report);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().errnum, EIO);
    EXPECT_EQ(s.error().message,
              "reclaim: 2 write errors, first: write at offset 0: Input/output error");
    EXPECT_EQ(ctx.specs.size(), 1u);
    EXPECT_EQ(ctx.checkpoints.size(), 1u);  // the loop's results saved first
  }
}

}  // namespace
}  // namespace drivewatch::aging
