// SPDX-License-Identifier: Apache-2.0
// The perf phase's own logic (aging/phases/perf_phase.cc) against the fake
// context (fake_phase_context.h): which workloads it asks for, in which
// order, and how rounds end at steady state. No real drive can be told to
// deliver a chosen IOPS in each round, which is what tests the round logic
// exactly. tests/integration/perf_matrix_test.cc runs the phase on real
// files.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "aging/phases/phase.h"
#include "tests/unit/aging/fake_phase_context.h"

namespace drivewatch::aging {
namespace {

using std::chrono::milliseconds;

using testing::FakePhaseContext;
using testing::Result;

TEST(PerfPhaseTest, RoundsEndOnceTheLastFiveAreSteadyAndReportTheirWindow) {
  config::PerfParams p;
  p.cells = {
      config::PerfCell{.name = "rr", .access = "random", .operation = "read", .block_size = 4096}};
  p.steady_state = true;
  // A fresh drive's burst, then a plateau: rounds 3 to 7 are the first
  // steady window.
  FakePhaseContext ctx(p, {500, 300, 100, 101, 99, 100, 100, 100, 100});
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  ASSERT_EQ(ctx.specs.size(), 7u);
  EXPECT_EQ(Result(report, "rr_steady_state_ratio"), 1);
  // The window's IOPS, not the rounds': (100 + 101 + 99 + 100 + 100) / 5 s.
  EXPECT_DOUBLE_EQ(Result(report, "rr_iops"), 100);
  EXPECT_DOUBLE_EQ(Result(report, "rr_bytes_per_second"), 100 * 4096);
  EXPECT_DOUBLE_EQ(Result(report, "rr_read_p99_9_seconds"),
                   Result(report, "rr_read_p50_seconds"));
  EXPECT_NEAR(Result(report, "rr_read_p50_seconds"), 100e-6, 1e-6);
  const Json& ss = Items(*Find(report.series, "steady_state")).at(0);
  EXPECT_EQ(AsString(*Find(ss, "name")), "rr");
  EXPECT_EQ(AsString(*Find(ss, "tracked")), "iops");
  EXPECT_TRUE(AsBool(*Find(ss, "steady")));
  EXPECT_EQ(AsUint(*Find(ss, "rounds")), 7u);
  EXPECT_EQ(AsUint(*Find(ss, "window_first_round")), 3u);
  ASSERT_EQ(Items(*Find(ss, "values")).size(), 7u);
  EXPECT_EQ(AsDouble(Items(*Find(ss, "values"))[0]), 500);
  EXPECT_DOUBLE_EQ(AsDouble(*Find(ss, "average")), 100);
  EXPECT_DOUBLE_EQ(AsDouble(*Find(ss, "range")), 2);
  // Each round a new random order.
  EXPECT_NE(ctx.specs[0].seed, ctx.specs[1].seed);
}

// Without steady_state a cell runs `runs` times (3 by default, as the
// Phoronix Test Suite does); its IOPS and throughput are the runs' mean
// with the standard error of that mean and the count, and every run is
// on record.
TEST(PerfPhaseTest, ACellRunsThreeTimesAndRecordsTheMeanItsStandardErrorAndEveryRun) {
  config::PerfParams p;
  p.cells = {
      config::PerfCell{.name = "rr", .access = "random", .operation = "read", .block_size = 4096}};
  FakePhaseContext ctx(p, {100, 101, 99});
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  ASSERT_EQ(ctx.specs.size(), 3u);  // SE 0.58 % of the mean: under 2 %, done
  EXPECT_NE(ctx.specs[0].seed, ctx.specs[1].seed);  // each run a new random order
  EXPECT_DOUBLE_EQ(Result(report, "rr_iops"), 100);
  EXPECT_NEAR(Result(report, "rr_iops_se"), 1 / std::sqrt(3.0), 1e-12);  // sd 1 over sqrt(3)
  EXPECT_DOUBLE_EQ(Result(report, "rr_bytes_per_second"), 100 * 4096);
  EXPECT_NEAR(Result(report, "rr_bytes_per_second_se"), 4096 / std::sqrt(3.0), 1e-9);
  EXPECT_EQ(Result(report, "rr_runs"), 3);
  // The latencies are over every run's I/Os.
  EXPECT_EQ(Result(report, "rr_read_ios"), 300);
  const Json& runs = Items(*Find(report.series, "runs")).at(0);
  EXPECT_EQ(AsString(*Find(runs, "name")), "rr");
  EXPECT_EQ(DumpJson(*Find(runs, "iops")), "[100.0,101.0,99.0]");
}

// A noisy cell runs again until its standard error is small enough, up to
// max_runs; one run records no standard error (it has none).
TEST(PerfPhaseTest, ANoisyCellRunsAgainUpToMaxRuns) {
  config::PerfParams p;
  p.cells = {
      config::PerfCell{.name = "rr", .access = "random", .operation = "read", .block_size = 4096}};
  {
    FakePhaseContext ctx(p, {100, 150, 50, 100});
    PhaseReport report;
    ASSERT_TRUE(RunKind(p, ctx, report));
    // 100, 150, 50, then 100 again and again: the SE falls below 2 % of
    // the mean only past ten runs, so max_runs (10) ends it.
    EXPECT_EQ(ctx.specs.size(), 10u);
    EXPECT_EQ(Result(report, "rr_runs"), 10);
    EXPECT_GT(Result(report, "rr_iops_se"), 0.02 * 100);
  }
  {
    p.max_standard_error = 0.5;  // 28.9 % after three runs is small enough
    FakePhaseContext ctx(p, {100, 150, 50, 100});
    PhaseReport report;
    ASSERT_TRUE(RunKind(p, ctx, report));
    EXPECT_EQ(ctx.specs.size(), 3u);
    EXPECT_NEAR(Result(report, "rr_iops_se"), 50 / std::sqrt(3.0), 1e-9);
  }
  {
    p.runs = p.max_runs = 1;
    FakePhaseContext ctx(p, {100, 150});
    PhaseReport report;
    ASSERT_TRUE(RunKind(p, ctx, report));
    EXPECT_EQ(ctx.specs.size(), 1u);
    EXPECT_EQ(Result(report, "rr_runs"), 1);
    EXPECT_EQ(Find(report.results, "rr_iops_se"), nullptr);
  }
}

TEST(PerfPhaseTest, MaxRoundsEndsAnUnsteadyCellWithTheLastFiveAsItsResult) {
  config::PerfParams p;
  p.cells = {config::PerfCell{
      .name = "sw", .access = "sequential", .operation = "write", .block_size = 128 * 1024}};
  p.steady_state = true;
  p.max_rounds = 6;
  FakePhaseContext ctx(p, {100, 300, 100, 300, 100, 300, 100});
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  ASSERT_EQ(ctx.specs.size(), 6u);
  EXPECT_EQ(Result(report, "sw_steady_state_ratio"), 0);
  // Rounds 2..6: 300 + 100 + 300 + 100 + 300 I/Os over 5 s.
  EXPECT_DOUBLE_EQ(Result(report, "sw_iops"), 220);
  const Json& ss = Items(*Find(report.series, "steady_state")).at(0);
  EXPECT_EQ(AsString(*Find(ss, "tracked")), "bytes_per_second");
  EXPECT_FALSE(AsBool(*Find(ss, "steady")));
  EXPECT_EQ(AsUint(*Find(ss, "window_first_round")), 2u);
  // A sequential cell's rounds go on where the last one stopped.
  for (std::size_t k = 1; k < ctx.specs.size(); ++k) {
    EXPECT_EQ(ctx.specs[k].start, (ctx.specs[k - 1].start + ctx.specs[k - 1].block_size *
                                                               (k % 2 ? 100 : 300)) %
                                      ctx.specs[k].length)
        << k;
  }
}

TEST(PerfPhaseTest, EachCellBecomesItsSpecJobsIncluded) {
  config::PerfParams p;
  config::PerfCell mix{.name = "mix", .access = "random", .operation = "mix", .block_size = 8192};
  mix.read_percent = 70;
  mix.queue_depth = 8;
  mix.jobs = 4;
  mix.bytes = 1u << 20;
  config::PerfCell paced{
      .name = "paced", .access = "random", .operation = "read", .block_size = 4096};
  paced.rate_iops = 10;
  paced.duration = milliseconds{2'000};
  config::PerfCell trim{
      .name = "t", .access = "sequential", .operation = "trim", .block_size = 1u << 20};
  p.cells = {mix, paced, trim};
  p.perf_duration = milliseconds{3'000};
  p.runs = 1;  // one run of each: the specs are the subject here
  FakePhaseContext ctx(p);
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  ASSERT_EQ(ctx.specs.size(), 3u);
  EXPECT_EQ(ctx.steps, (std::vector<std::string>{"mix", "paced", "t"}));
  const WorkloadSpec& m = ctx.specs[0];
  EXPECT_EQ(m.access, Access::kRandom);
  EXPECT_EQ(m.read_percent, 70u);
  EXPECT_EQ(m.write_percent, 30u);
  EXPECT_EQ(m.block_size, 8192u);
  EXPECT_EQ(m.queue_depth, 8u);
  EXPECT_EQ(m.jobs, 4u);
  EXPECT_EQ(m.max_bytes, 1u << 20);
  EXPECT_EQ(m.max_time.count(), 0);
  // Over the written part: half the 64 MiB target.
  EXPECT_EQ(m.length, 32u << 20);
  EXPECT_TRUE(m.wrap);
  EXPECT_EQ(ctx.specs[1].rate_iops, 10);
  EXPECT_EQ(ctx.specs[1].max_time, milliseconds{2'000});
  EXPECT_EQ(ctx.specs[1].jobs, 1u);
  EXPECT_EQ(ctx.specs[2].access, Access::kSequential);
  EXPECT_EQ(ctx.specs[2].trim_percent, 100u);
  EXPECT_EQ(ctx.specs[2].max_time, milliseconds{3'000});  // the phase's perf_duration

  // Each cell's operations, and only those, have latencies.
  EXPECT_GT(Result(report, "mix_read_p99_seconds"), 0);
  EXPECT_GT(Result(report, "mix_write_p99_seconds"), 0);
  EXPECT_EQ(Find(report.results, "mix_trim_p99_seconds"), nullptr);
  EXPECT_EQ(Find(report.results, "paced_write_p50_seconds"), nullptr);
  EXPECT_GT(Result(report, "t_trim_p99_9_seconds"), 0);
  EXPECT_EQ(Find(report.results, "t_steady_state_ratio"), nullptr);

  // series.cells: what each cell was.
  const std::vector<Json>& cells = Items(*Find(report.series, "cells"));
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(DumpJson(cells[0]),
            R"({"name":"mix","access":"random","operation":"mix","read_percent":70,)"
            R"("block_size":8192,"queue_depth":8,"jobs":4,"rate_iops":0.0,"bytes":1048576})");
  EXPECT_EQ(DumpJson(cells[1]),
            R"({"name":"paced","access":"random","operation":"read","read_percent":100,)"
            R"("block_size":4096,"queue_depth":1,"jobs":1,"rate_iops":10.0,)"
            R"("duration_seconds":2.0})");
  EXPECT_EQ(AsUint(*Find(cells[2], "read_percent")), 0u);
  EXPECT_EQ(AsDouble(*Find(cells[2], "duration_seconds")), 3.0);
}

TEST(PerfPhaseTest, PurgeThenPreconditionTwicePassesThenTheCellsOverTheWholeTarget) {
  config::PerfParams p;
  p.preset = "phoronix";
  p.purge = true;
  p.precondition = true;
  p.runs = 1;
  FakePhaseContext ctx(p);
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  std::vector<std::string> expected = {"purge", "precondition 1/2", "precondition 2/2"};
  for (const config::PerfCell& c : config::PresetCells("phoronix")) expected.push_back(c.name);
  EXPECT_EQ(ctx.steps, expected);
  const WorkloadSpec& purge = ctx.specs[0];
  EXPECT_EQ(purge.trim_percent, 100u);
  EXPECT_EQ(purge.offset, 0u);
  EXPECT_EQ(purge.length, 0u);  // to the target's end
  for (int pass : {1, 2}) {
    const WorkloadSpec& w = ctx.specs[pass];
    EXPECT_EQ(w.write_percent, 100u);
    EXPECT_EQ(w.access, Access::kSequential);
    EXPECT_EQ(w.block_size, 128u * 1024);
    EXPECT_EQ(w.offset, 0u);
    EXPECT_EQ(w.length, 0u);
    EXPECT_FALSE(w.wrap);  // one pass over the target each
  }
  // Preconditioned: the cells run over all of it, whatever the history said.
  EXPECT_EQ(Result(report, "fill_ratio"), 1);
  EXPECT_EQ(Result(report, "region_bytes"), 64u << 20);
  EXPECT_EQ(ctx.specs[3].length, 64u << 20);
  EXPECT_EQ(DumpJson(*Find(report.series, "preparation")), R"(["purge","precondition"])");
  EXPECT_TRUE(Find(report.results, "purged_bytes"));
  EXPECT_TRUE(Find(report.results, "preconditioned_bytes"));
}

TEST(PerfPhaseTest, ABlockSizeTheTargetCannotTakeRefusesBeforeAnyIo) {
  config::PerfParams p;
  p.purge = true;
  p.precondition = true;
  p.cells = {
      config::PerfCell{.name = "ok", .access = "random", .operation = "read", .block_size = 4096},
      config::PerfCell{.name = "odd", .access = "random", .operation = "read", .block_size = 1536}};
  FakePhaseContext ctx(p);
  ctx.logical_block = 4096;
  PhaseReport report;
  const Status s = RunKind(p, ctx, report);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().errnum, EPERM);
  EXPECT_EQ(s.error().message,
            "cell odd: block_size 1536B is not a multiple of the target's logical block size "
            "4KiB (expected a multiple of 4KiB in [[aging.phases.cells]] of phase perf)");
  EXPECT_TRUE(ctx.specs.empty());
}

// A stop inside a cell's run leaves that cell out (a partial measurement
// is no result), and the cells before it in.
TEST(PerfPhaseTest, AStopMidCellReportsOnlyTheCellsBeforeIt) {
  config::PerfParams p;
  p.cells = {
      config::PerfCell{.name = "a", .access = "random", .operation = "read", .block_size = 4096},
      config::PerfCell{.name = "b", .access = "random", .operation = "read", .block_size = 4096}};
  p.runs = 1;
  FakePhaseContext ctx(p);
  ctx.stop_at_step = 2;
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  EXPECT_EQ(ctx.steps, (std::vector<std::string>{"a", "b"}));
  EXPECT_DOUBLE_EQ(Result(report, "a_iops"), 1000);
  EXPECT_EQ(Find(report.results, "b_iops"), nullptr);
  EXPECT_EQ(ctx.checkpoints.size(), 1u);
}

// I/O errors in a cell: the cell is reported, then the phase fails naming
// it; a step that cannot run at all ends the phase with its error.
TEST(PerfPhaseTest, IoErrorsNameTheCellOrThePreparationStep) {
  config::PerfParams p;
  p.cells = {
      config::PerfCell{.name = "rw", .access = "random", .operation = "write", .block_size = 4096},
      config::PerfCell{.name = "rr", .access = "random", .operation = "read", .block_size = 4096}};
  {
    FakePhaseContext ctx(p);
    ctx.io_errors.emplace("rw", 3);
    PhaseReport report;
    const Status s = RunKind(p, ctx, report);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().errnum, EIO);
    EXPECT_EQ(s.error().message, "rw: 3 I/O errors, first: write at offset 0: Input/output error");
    EXPECT_EQ(ctx.specs.size(), 1u);  // no second run, no second cell
    EXPECT_EQ(Result(report, "rw_runs"), 1);
  }
  {
    config::PerfParams prepared = p;
    prepared.precondition = true;
    FakePhaseContext ctx(prepared);
    ctx.io_errors.emplace("precondition 2/2", 1);
    PhaseReport report;
    const Status s = RunKind(prepared, ctx, report);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().message,
              "precondition 2/2: 1 I/O errors, first: write at offset 0: Input/output error");
    EXPECT_EQ(Result(report, "preconditioned_bytes"), 2 * (64u << 20));
  }
  {
    FakePhaseContext ctx(p);
    ctx.failing_steps.emplace("rr", Error{EPERM, -1, "rr: refused"});
    PhaseReport report;
    const Status s = RunKind(p, ctx, report);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().message, "rr: refused");
    EXPECT_GT(Result(report, "rw_iops"), 0);
  }
}

}  // namespace
}  // namespace drivewatch::aging
