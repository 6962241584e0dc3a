// SPDX-License-Identifier: Apache-2.0
// The endurance phase's story (aging/phases/endurance_phase.cc) against the
// fake context (fake_phase_context.h) and a progress file in a scratch
// state directory: a pass in chunks from where the last one ended, each
// saved; the pass on the history once; its ends; a stop and a resume; a
// failed chunk and write errors. tests/unit/aging/endurance_test.cc tests
// the progress file itself, tests/integration/endurance_wear_test.cc the
// SMART ends on real writes.
#include <gtest/gtest.h>

#include "aging/phases/endurance.h"
#include "aging/phases/phase.h"
#include "tests/unit/aging/fake_phase_context.h"

namespace drivewatch::aging {
namespace {

using testing::FakePhaseContext;
using testing::Result;
using testing::ScratchDir;

constexpr std::uint64_t kChunk = (64u << 20) / 16;  // a 16th of the 64 MiB target

class EndurancePhaseTest : public ::testing::Test {
 protected:
  FakePhaseContext Context(const config::EnduranceParams& p) {
    FakePhaseContext ctx(p);
    ctx.state_dir = dir_.path();
    return ctx;
  }
  const ScratchDir dir_{"endurance-phase"};
};

TEST_F(EndurancePhaseTest, OnePassInSixteenChunksEachSavedThenOnTheHistoryOnce) {
  config::EnduranceParams p;  // one drive write, sequential
  FakePhaseContext ctx = Context(p);
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  ASSERT_EQ(ctx.specs.size(), 16u);
  for (std::size_t k = 0; k < ctx.specs.size(); ++k) {
    EXPECT_EQ(ctx.steps[k], "pass 1");
    EXPECT_EQ(ctx.specs[k].access, Access::kSequential);
    EXPECT_EQ(ctx.specs[k].start, k * kChunk) << k;
    EXPECT_EQ(ctx.specs[k].max_bytes, kChunk);
    EXPECT_EQ(ctx.specs[k].max_time, std::chrono::seconds{30});
    EXPECT_EQ(ctx.specs[k].length, 64u << 20);
  }
  EXPECT_EQ(Result(report, "host_written_bytes"), 64u << 20);
  EXPECT_EQ(Result(report, "run_written_bytes"), 64u << 20);
  EXPECT_DOUBLE_EQ(Result(report, "drive_writes_ratio"), 1);
  EXPECT_DOUBLE_EQ(Result(report, "target_progress_ratio"), 1);
  EXPECT_EQ(Result(report, "resumed_at_bytes"), 0);
  ASSERT_EQ(Items(*Find(report.series, "passes")).size(), 1u);
  // Each chunk checkpointed with the progress file's content, and the end.
  ASSERT_EQ(ctx.checkpoints.size(), 17u);
  EXPECT_EQ(AsString(*Find(ctx.checkpoints.back().resume, "file")),
            EnduranceProgressPath(ctx.state_dir, "endurance").substr(ctx.state_dir.size() + 1));
  auto progress = LoadEnduranceProgress(EnduranceProgressPath(ctx.state_dir, "endurance"));
  ASSERT_TRUE(progress) << progress.error().message;
  EXPECT_TRUE(progress->ended);
  EXPECT_EQ(progress->end_reason, "drive_writes: 1 full passes done");
  ASSERT_EQ(ctx.step_records.size(), 1u);
  EXPECT_EQ(ctx.step_records[0].test, std::to_string(progress->seed));
  EXPECT_EQ(ctx.step_records[0].step, 1u);

  // An ended test is not written again.
  FakePhaseContext again = Context(p);
  PhaseReport second;
  const Status s = RunKind(p, again, second);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message,
            "endurance endurance: the test already ended (drive_writes: 1 full passes done); "
            "`drivewatch endurance reset endurance` starts a new one");
  EXPECT_TRUE(again.specs.empty());
}

TEST_F(EndurancePhaseTest, BytesWrittenEndsMidPassWithAShortLastChunk) {
  config::EnduranceParams p;
  p.drive_writes = 0;
  p.bytes_written = 2 * kChunk + kChunk / 2;
  FakePhaseContext ctx = Context(p);
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  ASSERT_EQ(ctx.specs.size(), 3u);
  EXPECT_EQ(ctx.specs[2].max_bytes, kChunk / 2);
  EXPECT_EQ(Result(report, "host_written_bytes"), p.bytes_written);
  EXPECT_TRUE(Items(*Find(report.series, "passes")).empty());
  EXPECT_TRUE(ctx.step_records.empty());
}

TEST_F(EndurancePhaseTest, AStopMidChunkIsSavedAndTheNextRunResumesThere) {
  config::EnduranceParams p;
  FakePhaseContext ctx = Context(p);
  ctx.stop_at_step = 3;  // half of the third chunk written
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  EXPECT_EQ(ctx.specs.size(), 3u);
  EXPECT_EQ(Result(report, "host_written_bytes"), 2 * kChunk + kChunk / 2);

  FakePhaseContext resumed = Context(p);
  PhaseReport second;
  ASSERT_TRUE(RunKind(p, resumed, second));
  EXPECT_EQ(Result(second, "resumed_at_bytes"), 2 * kChunk + kChunk / 2);
  EXPECT_EQ(resumed.specs.front().start, 2 * kChunk + kChunk / 2);
  EXPECT_EQ(Result(second, "host_written_bytes"), 64u << 20);
  EXPECT_EQ(Result(second, "run_written_bytes"), (64u << 20) - (2 * kChunk + kChunk / 2));
}

TEST_F(EndurancePhaseTest, AFailedChunkOrWriteErrorsEndTheRunWithTheChunkSaved) {
  config::EnduranceParams p;
  {
    FakePhaseContext ctx = Context(p);
    ctx.failing_steps.emplace("pass 1", Error{EPERM, -1, "pass 1: refused by the write gate"});
    PhaseReport report;
    const Status s = RunKind(p, ctx, report);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().message, "pass 1: refused by the write gate");
  }
  {
    FakePhaseContext ctx = Context(p);
    ctx.io_errors.emplace("pass 1", 2);
    PhaseReport report;
    const Status s = RunKind(p, ctx, report);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().errnum, EIO);
    EXPECT_EQ(s.error().message,
              "endurance endurance: 2 write errors, first: write at offset 0: "
              "Input/output error");
    EXPECT_EQ(ctx.specs.size(), 1u);
    EXPECT_EQ(Result(report, "host_written_bytes"), kChunk);  // saved before the error
    EXPECT_EQ(ctx.checkpoints.size(), 1u);
  }
}

TEST_F(EndurancePhaseTest, RefusesWithoutAnEndOrPercentageUsedWithoutAController) {
  config::EnduranceParams p;
  p.drive_writes = 0;
  FakePhaseContext ctx = Context(p);
  PhaseReport report;
  Status s = RunKind(p, ctx, report);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().errnum, EPERM);
  EXPECT_EQ(s.error().message,
            "endurance endurance: no end set (expected drive_writes above 0, percentage_used "
            "or bytes_written)");
  p.percentage_used = 10;
  s = RunKind(p, ctx, report);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message,
            "endurance endurance: percentage_used needs an NVMe namespace target, whose SMART "
            "log reports it");
  EXPECT_TRUE(ctx.specs.empty());
}

}  // namespace
}  // namespace drivewatch::aging
