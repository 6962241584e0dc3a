// SPDX-License-Identifier: Apache-2.0
// The retention-write phase's story (aging/phases/retention_write_phase.cc)
// against the fake context (fake_phase_context.h) on a scratch file: the
// study's record, its region written and read back as the baseline, the
// study active only when that read is clean; a stop and a resume, a study
// that exists, a region that does not fit, a failed write and write
// errors. tests/integration/retention_test.cc runs it through the runner.
#include <gtest/gtest.h>

#include "aging/phases/phase.h"
#include "aging/retention/retention_study.h"
#include "tests/common/file_text.h"
#include "tests/unit/aging/retention_fake_study.h"

namespace drivewatch::aging {
namespace {

using testing::FakePhaseContext;
using testing::Result;

class RetentionWritePhaseTest : public testing::RetentionStudyTest {};

TEST_F(RetentionWritePhaseTest, WritesTheRegionReadsItBackAndTheStudyIsActive) {
  const config::RetentionWriteParams p = WriteParams();
  FakePhaseContext ctx(p);
  Prepare(ctx);
  PhaseReport report;
  const Status s = RunKind(p, ctx, report);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(ctx.steps, (std::vector<std::string>{"write", "verify", "latency sample"}));
  const WorkloadSpec& write = ctx.specs[0];
  EXPECT_EQ(write.offset, kOffset);
  EXPECT_EQ(write.length, kLength);
  EXPECT_EQ(write.block_size, p.block_size);
  EXPECT_EQ(write.max_errors, 1u);
  EXPECT_EQ(ctx.specs[1].offset, kOffset);
  EXPECT_EQ(ctx.specs[1].read_percent, 100u);
  EXPECT_EQ(Result(report, "region_bytes"), kLength);
  EXPECT_EQ(Result(report, "written_bytes"), kLength);
  EXPECT_GT(Result(report, "write_bytes_per_second"), 0);
  EXPECT_GT(Result(report, "baseline_max_seconds"), 0);
  EXPECT_GE(Result(report, "baseline_max_seconds"), Result(report, "baseline_p50_seconds"));

  const Json study = Study();
  EXPECT_EQ(AsString(*Find(study, "state")), "active");
  EXPECT_EQ(AsString(*Find(study, "serial")), "S1");
  EXPECT_EQ(AsString(*Find(study, "target")), "t");
  EXPECT_EQ(AsUint(*Find(*Find(study, "region"), "offset")), kOffset);
  EXPECT_EQ(AsUint(*Find(*Find(study, "written"), "next_offset")), kOffset + kLength);
  EXPECT_EQ(AsUint(*Find(*Find(study, "baseline"), "checked")), kLength / kRetentionBlockSize);
  // Nothing outside the region was written.
  const std::string bytes = testing::ReadFileText(file_);
  EXPECT_EQ(bytes.substr(0, kOffset), std::string(kOffset, '\0'));
  EXPECT_EQ(bytes.substr(kOffset + kLength), std::string(kOffset, '\0'));
  EXPECT_NE(bytes.substr(kOffset, 4096), std::string(4096, '\0'));
}

TEST_F(RetentionWritePhaseTest, AStopInTheWriteLeavesTheStudyWritingAndTheNextRunResumes) {
  const config::RetentionWriteParams p = WriteParams();
  {
    FakePhaseContext ctx(p);
    Prepare(ctx);
    ctx.stop_at_step = 1;
    PhaseReport report;
    ASSERT_TRUE(RunKind(p, ctx, report));
    EXPECT_EQ(ctx.steps, std::vector<std::string>{"write"});
    EXPECT_EQ(AsString(*Find(Study(), "state")), "writing");
  }
  FakePhaseContext ctx(p);
  Prepare(ctx);
  PhaseReport report;
  const Status s = RunKind(p, ctx, report);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(Result(report, "resumed_at_bytes"), 0);
  EXPECT_EQ(AsString(*Find(Study(), "state")), "active");

  // Active: never written again.
  FakePhaseContext again(p);
  Prepare(again);
  const Status refused = RunKind(p, again, report);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().errnum, EPERM);
  EXPECT_EQ(refused.error().message,
            "retention study \"s1\" already exists (state active, " +
                StudyPath(dir_ / "state", "s1") +
                "); a study is written once: give this one a new name (aging.phases.study)");
  EXPECT_TRUE(again.specs.empty());
}

TEST_F(RetentionWritePhaseTest, ABaselineThatFindsBadBlocksFailsTheStudy) {
  const config::RetentionWriteParams p = WriteParams();
  FakePhaseContext ctx(p);
  Prepare(ctx);
  ctx.before_file_run = [this](const WorkloadSpec&, std::string_view step) {
    if (step == "verify") Damage(kOffset + 8192);
  };
  PhaseReport report;
  const Status s = RunKind(p, ctx, report);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().errnum, EIO);
  EXPECT_EQ(s.error().message,
            "retention study \"s1\": the baseline read found 1 bad blocks right after the "
            "write; the study does not start");
  EXPECT_EQ(AsString(*Find(Study(), "state")), "failed");
}

TEST_F(RetentionWritePhaseTest, ARegionOrBlockSizeThatDoesNotFitIsRefusedBeforeAnyIo) {
  config::RetentionWriteParams p = WriteParams();
  p.region_length = 4u << 20;  // from 1 MiB of a 4 MiB target
  FakePhaseContext ctx(p);
  Prepare(ctx);
  PhaseReport report;
  Status s = RunKind(p, ctx, report);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().errnum, EINVAL);
  EXPECT_EQ(s.error().message,
            "phase retention-write: the region [1048576, +4194304) does not fit the target's "
            "4194304 bytes (aging.phases.offset and length)");
  p = WriteParams();
  p.block_size = 6144;
  s = RunKind(p, ctx, report);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message,
            "phase retention-write: block_size 6144 is not a multiple of the study's 4 KiB "
            "block (aging.phases.block_size)");
  EXPECT_TRUE(ctx.specs.empty());
}

TEST_F(RetentionWritePhaseTest, AFailedWriteOrAWriteErrorEndsThePhase) {
  const config::RetentionWriteParams p = WriteParams();
  {
    FakePhaseContext ctx(p);
    Prepare(ctx);
    ctx.failing_steps.emplace("write", Error{EPERM, -1, "write: refused by the write gate"});
    PhaseReport report;
    const Status s = RunKind(p, ctx, report);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().message, "write: refused by the write gate");
    EXPECT_EQ(AsString(*Find(Study(), "state")), "writing");
  }
  FakePhaseContext ctx(p);
  Prepare(ctx);
  ctx.io_errors.emplace("write", 1);
  PhaseReport report;
  const Status s = RunKind(p, ctx, report);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().errnum, EIO);
  EXPECT_EQ(s.error().message, "retention-write: write at offset 0: Input/output error");
  EXPECT_EQ(AsUint(*Find(*Find(Study(), "written"), "next_offset")), kOffset);
}

}  // namespace
}  // namespace drivewatch::aging
