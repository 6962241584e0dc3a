// SPDX-License-Identifier: Apache-2.0
// The replay phase's story (aging/phases/replay_phase.cc) against the fake
// context (fake_phase_context.h), which takes every I/O the trace source
// hands out, and a trace in a scratch file: the trace's I/O mapped onto
// the target (aligned, folded, split), the engine's shares from its
// counts, the results; a trace that writes when the config saw only reads,
// a stop, a failed replay and I/O errors. tests/unit/aging/block_trace_test.cc
// tests the trace reader, tests/integration/replay_test.cc real replays.
#include <gtest/gtest.h>

#include "aging/phases/phase.h"
#include "tests/common/file_text.h"
#include "tests/unit/aging/fake_phase_context.h"

namespace drivewatch::aging {
namespace {

using testing::FakePhaseContext;
using testing::Result;
using testing::ScratchDir;

// Three reads (one unaligned, one past the 64 MiB target), two writes (one
// of 4 MiB, split at 2 MiB), a trim and a flush over 4 ms.
constexpr char kTrace[] =
    "fio version 3 iolog\n"
    "0 /a add\n"
    "0 /a open\n"
    "1000 /a read 0 4096\n"
    "2000 /a write 4096 8192\n"
    "2500 /a read 1000 4096\n"
    "3000 /a trim 1048576 1048576\n"
    "3500 /a sync 0 0\n"
    "4000 /a read 200000000 4096\n"
    "5000 /a write 0 4194304\n"
    "6000 /a close\n";

class ReplayPhaseTest : public ::testing::Test {
 protected:
  config::ReplayParams Params(const std::string& text) {
    testing::WriteFileText(dir_ / "trace.log", text);
    config::ReplayParams p;
    p.trace = dir_ / "trace.log";
    p.replay_speed.max = true;
    return p;
  }
  const ScratchDir dir_{"replay-phase"};
};

TEST_F(ReplayPhaseTest, TheTracesIoMappedOntoTheTargetAndCounted) {
  const config::ReplayParams p = Params(kTrace);
  FakePhaseContext ctx(p);
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  ASSERT_EQ(ctx.steps, std::vector<std::string>{"replay"});
  const WorkloadSpec& spec = ctx.specs[0];
  // Shares from the trace's counts, 3, 2 and 1 of 6, the rest to reads.
  EXPECT_EQ(spec.read_percent, 51u);
  EXPECT_EQ(spec.write_percent, 33u);
  EXPECT_EQ(spec.trim_percent, 16u);
  EXPECT_EQ(spec.block_size, 2u << 20);  // the largest mapped I/O
  EXPECT_EQ(spec.queue_depth, p.queue_depth);
  EXPECT_EQ(ctx.checkpoints.size(), 1u);  // before the replay

  EXPECT_DOUBLE_EQ(Result(report, "recorded_span_seconds"), 0.004);
  EXPECT_EQ(Result(report, "trace_ios"), 6);
  EXPECT_EQ(Result(report, "replayed_ios"), 6);
  EXPECT_EQ(Result(report, "flush_ios"), 1);
  EXPECT_EQ(Result(report, "read_ios"), 3);
  EXPECT_EQ(Result(report, "write_ios"), 3);  // 8 KiB, and 4 MiB as two
  EXPECT_EQ(Result(report, "trim_ios"), 1);
  EXPECT_EQ(Result(report, "split_ios"), 1);
  EXPECT_EQ(Result(report, "folded_ios"), 1);
  EXPECT_EQ(Result(report, "aligned_ios"), 1);
  EXPECT_EQ(Result(report, "written_bytes"), 8192 + (4u << 20));
  EXPECT_EQ(Result(report, "trimmed_bytes"), 1u << 20);
  EXPECT_DOUBLE_EQ(Result(report, "replay_duration_seconds"), 7.0 / 1000);  // 7 I/Os at 1000 IOPS
  EXPECT_DOUBLE_EQ(Result(report, "replay_iops"), 1000);
  EXPECT_NEAR(Result(report, "read_p99_seconds"), 100e-6, 5e-6);
  EXPECT_NEAR(Result(report, "trim_service_p50_seconds"), 100e-6, 5e-6);
  EXPECT_TRUE(Find(report.series, "throughput_bytes_per_second"));
}

TEST_F(ReplayPhaseTest, ATraceThatWritesWhenTheConfigSawOnlyReadsIsRefusedBeforeAnyIo) {
  config::ReplayParams p = Params(kTrace);
  p.trace_facts.read = true;  // the config saw reads only: the target is open read-only
  FakePhaseContext ctx(p);
  PhaseReport report;
  const Status s = RunKind(p, ctx, report);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().errnum, EPERM);
  EXPECT_EQ(s.error().message.rfind(p.trace + ":5: refusing to replay: the trace writes or "
                                              "trims from this line on",
                                    0),
            0u)
      << s.error().message;
  EXPECT_NE(s.error().message.find("target \"t\" was opened for reading only"),
            std::string::npos);
  EXPECT_TRUE(ctx.specs.empty());
}

TEST_F(ReplayPhaseTest, ADamagedTraceIsAnErrorNamingItsLine) {
  const config::ReplayParams p = Params("fio version 3 iolog\n0 /a add\n0 /a open\n1 /a read x 1\n");
  FakePhaseContext ctx(p);
  PhaseReport report;
  const Status s = RunKind(p, ctx, report);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message.rfind(p.trace + ":4: ", 0), 0u) << s.error().message;
  EXPECT_TRUE(ctx.specs.empty());
}

TEST_F(ReplayPhaseTest, AStoppedReplayReportsWhatItReplayed) {
  const config::ReplayParams p = Params(kTrace);
  FakePhaseContext ctx(p);
  ctx.stop_at_step = 1;
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  EXPECT_EQ(Result(report, "trace_ios"), 6);
  EXPECT_EQ(Result(report, "replayed_ios"), 3);
}

TEST_F(ReplayPhaseTest, AFailedReplayOrIoErrorsFailThePhase) {
  const config::ReplayParams p = Params(kTrace);
  {
    FakePhaseContext ctx(p);
    ctx.failing_steps.emplace("replay", Error{EPERM, -1, "replay: refused by the write gate"});
    PhaseReport report;
    const Status s = RunKind(p, ctx, report);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().message, "replay: refused by the write gate");
    EXPECT_EQ(Result(report, "trace_ios"), 6);
    EXPECT_EQ(Find(report.results, "replayed_ios"), nullptr);
  }
  {
    FakePhaseContext ctx(p);
    ctx.io_errors.emplace("replay", 2);
    PhaseReport report;
    const Status s = RunKind(p, ctx, report);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().errnum, EIO);
    EXPECT_EQ(s.error().message,
              "replay: 2 I/O errors, first: write at offset 0: Input/output error");
    EXPECT_EQ(Result(report, "replayed_ios"), 6);  // the results first
  }
}

}  // namespace
}  // namespace drivewatch::aging
