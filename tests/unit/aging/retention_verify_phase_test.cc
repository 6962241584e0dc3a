// SPDX-License-Identifier: Apache-2.0
// The retention-verify phase's story (aging/phases/retention_verify_phase.cc)
// against the fake context (fake_phase_context.h) on a scratch file that
// retention-write wrote first: every block read back and verified, the
// verify appended to the study with its delta from the baseline; damaged
// blocks found; a firmware change an event; a study missing, not active,
// of another drive or past the target's end; a stop and a failed read.
#include <gtest/gtest.h>

#include "aging/phases/phase.h"
#include "aging/retention/retention_study.h"
#include "tests/unit/aging/retention_fake_study.h"

namespace drivewatch::aging {
namespace {

using testing::FakePhaseContext;
using testing::Result;

class RetentionVerifyPhaseTest : public testing::RetentionStudyTest {
 protected:
  config::RetentionVerifyParams VerifyParams() const {
    config::RetentionVerifyParams p;
    p.study = "s1";
    return p;
  }
};

TEST_F(RetentionVerifyPhaseTest, ReadsEveryBlockAndAppendsTheVerifyToTheStudy) {
  WriteStudy();
  const config::RetentionVerifyParams p = VerifyParams();
  FakePhaseContext ctx(p);
  Prepare(ctx);
  PhaseReport report;
  const Status s = RunKind(p, ctx, report);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(ctx.steps, (std::vector<std::string>{"verify", "latency sample"}));
  const WorkloadSpec& pass = ctx.specs[0];
  EXPECT_EQ(pass.read_percent, 100u);
  EXPECT_EQ(pass.offset, kOffset);
  EXPECT_EQ(pass.length, kLength);
  EXPECT_EQ(pass.max_errors, 0u);
  // The latency sample: one block at a time, at random, at QD1.
  EXPECT_EQ(ctx.specs[1].access, Access::kRandom);
  EXPECT_EQ(ctx.specs[1].queue_depth, 1u);
  EXPECT_EQ(ctx.specs[1].block_size, kRetentionBlockSize);
  EXPECT_EQ(Result(report, "verified_bytes"), kLength);
  EXPECT_EQ(Result(report, "bad_bytes"), 0);
  EXPECT_TRUE(Find(report.results, "p99_9_delta_seconds"));
  EXPECT_GE(Result(report, "age_seconds"), 0);

  const Json study = Study();
  ASSERT_EQ(Items(*Find(study, "verifies")).size(), 1u);
  const Json& v = Items(*Find(study, "verifies"))[0];
  EXPECT_EQ(AsUint(*Find(v, "checked")), kLength / kRetentionBlockSize);
  EXPECT_TRUE(Find(v, "delta_vs_baseline"));
  EXPECT_EQ(AsString(*Find(*Find(v, "latency_method"), "access")), "random");
  EXPECT_EQ(AsUint(*Find(*Find(v, "pass_latency"), "queue_depth")), p.queue_depth);
  EXPECT_TRUE(Items(*Find(study, "events")).empty());
}

TEST_F(RetentionVerifyPhaseTest, ADamagedBlockIsCountedAndAFirmwareChangeIsAnEvent) {
  WriteStudy();
  Damage(kOffset + 3 * kRetentionBlockSize);
  const config::RetentionVerifyParams p = VerifyParams();
  FakePhaseContext ctx(p);
  Prepare(ctx);
  ctx.facts["firmware"] = "F2";
  PhaseReport report;
  const Status s = RunKind(p, ctx, report);
  ASSERT_TRUE(s) << s.error().message;  // a bad block is a result
  EXPECT_EQ(Result(report, "bad_bytes"), kRetentionBlockSize);
  const Json study = Study();
  const Json& v = Items(*Find(study, "verifies"))[0];
  EXPECT_EQ(AsUint(*Find(*Find(v, "bad"), "wrong_content")), 1u);
  ASSERT_EQ(Items(*Find(study, "events")).size(), 1u);
  EXPECT_EQ(AsString(*Find(Items(*Find(study, "events"))[0], "kind")), "firmware_change");
  EXPECT_EQ(AsString(*Find(Items(*Find(study, "events"))[0], "detail")), "F1 -> F2");
  EXPECT_EQ(AsString(*Find(study, "firmware")), "F2");
}

TEST_F(RetentionVerifyPhaseTest, AStopOrAFailedReadLeavesTheStudyAsItWas) {
  WriteStudy();
  const config::RetentionVerifyParams p = VerifyParams();
  {
    FakePhaseContext ctx(p);
    Prepare(ctx);
    ctx.stop_at_step = 1;
    PhaseReport report;
    ASSERT_TRUE(RunKind(p, ctx, report));
    EXPECT_EQ(ctx.steps, std::vector<std::string>{"verify"});
  }
  {
    FakePhaseContext ctx(p);
    Prepare(ctx);
    ctx.failing_steps.emplace("latency sample", Error{EIO, -1, "latency sample: cannot start"});
    PhaseReport report;
    const Status s = RunKind(p, ctx, report);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().message, "latency sample: cannot start");
  }
  EXPECT_TRUE(Items(*Find(Study(), "verifies")).empty());
}

TEST_F(RetentionVerifyPhaseTest, AStudyMissingNotActiveOfAnotherDriveOrPastTheEndIsRefused) {
  const config::RetentionVerifyParams p = VerifyParams();
  FakePhaseContext ctx(p);
  Prepare(ctx);
  PhaseReport report;
  Status s = RunKind(p, ctx, report);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().errnum, ENOENT);
  EXPECT_NE(s.error().message.find("; run its retention-write phase first"), std::string::npos)
      << s.error().message;

  {  // stopped in its write: still "writing"
    const config::RetentionWriteParams w = WriteParams();
    FakePhaseContext writer(w);
    Prepare(writer);
    writer.stop_at_step = 1;
    ASSERT_TRUE(RunKind(w, writer, report));
  }
  s = RunKind(p, ctx, report);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().errnum, EINVAL);
  EXPECT_EQ(s.error().message,
            "retention study \"s1\" is writing, not active: its write has not finished; "
            "nothing to verify");

  std::filesystem::remove(StudyPath(dir_ / "state", "s1"));
  WriteStudy();
  ctx.facts["serial"] = "S2";
  s = RunKind(p, ctx, report);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().errnum, EPERM);
  EXPECT_EQ(s.error().message,
            "retention study \"s1\" was written on serial \"S1\", but target t is \"S2\" "
            "(aging.phases.target)");

  ctx.facts["serial"] = "S1";
  ctx.capacity_bytes = 2u << 20;  // the region [1 MiB, 3 MiB) ends past it
  s = RunKind(p, ctx, report);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().errnum, EBADMSG);
  EXPECT_EQ(s.error().message,
            "retention study \"s1\": damaged retention study record: region [1048576, "
            "+2097152) ends past target t's 2097152 bytes (expected a region inside the "
            "target)");
  EXPECT_TRUE(ctx.specs.empty());
}

}  // namespace
}  // namespace drivewatch::aging
