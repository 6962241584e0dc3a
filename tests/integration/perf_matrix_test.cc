// SPDX-License-Identifier: Apache-2.0
// The perf matrix end to end on real files and loop devices (real
// io_uring): a configured matrix's keys, series.cells and metrics; the
// Phoronix preset; steady state on a real run; purge and preconditioning,
// in order and each through the write gate; check-config on a target with
// 4 KiB logical blocks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <span>

#include "aging/history/history.h"
#include "aging/phases/steady_state.h"
#include "aging/retention/retention_study.h"
#include "aging/runner/phase_runner.h"
#include "exporter/metric_store.h"
#include "exporter/phase_service.h"
#include "tests/integration/loop_device.h"
#include "tests/integration/phase_run_fixture.h"

namespace drivewatch::aging {
namespace {

using drivewatch::testing::LoopDevice;
using std::chrono::milliseconds;

// Records the steps a run goes through, in order, each once.
class Steps : public PhaseObserver {
 public:
  void OnProgress(const PhaseStatus& s) override {
    if (seen.empty() || seen.back() != s.step) {
      seen.push_back(s.step);
      if (on_step) on_step(s.step);
    }
  }
  void OnEnd(const Json&) override {}
  std::vector<std::string> seen;
  std::function<void(const std::string&)> on_step;
};

class PerfMatrixTest : public PhaseRunFixture {
 protected:
  void SetUp() override {
    PhaseRunFixture::SetUp();
    config::AgingTarget t = DataFileTarget("t", 16u << 20);
    config_.aging.targets = {t};
  }

  void AddPerf(const std::string& name, config::PerfParams p) {
    config::PhaseConfig phase;
    phase.name = name;
    phase.target = "t";
    phase.params = std::move(p);
    config_.aging.phases.push_back(phase);
  }
  Json Run(const std::string& phase, PhaseObserver* observer = nullptr) {
    auto r = RunPhase(config_, phase, options_, {}, observer);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? *r : Json();
  }
  std::vector<Json> History() {
    auto h = HistoryFile(HistoryPath(config_.state_directory)).Read();
    EXPECT_TRUE(h);
    return h ? h->records : std::vector<Json>{};
  }
  static double Result(const Json& record, const std::string& key) {
    const Json* r = Find(record, "results");
    const Json* v = r ? Find(*r, key) : nullptr;
    return v ? AsDouble(*v, -1) : -1;
  }
  static std::set<std::string> Keys(const Json& record) {
    std::set<std::string> keys;
    for (const auto& [key, value] : Members(*Find(record, "results"))) keys.insert(key);
    return keys;
  }

};

// preset = "builtin" runs the built-in matrix, with the keys it has always
// had, and the phase's cells after it: a lab's 10 and 100 IOPS cells in the
// same run as the defaults, not a second perf phase.
TEST_F(PerfMatrixTest, CellsAddToTheBuiltInMatrix) {
  config::PerfParams p;
  p.preset = "builtin";
  p.perf_duration = std::chrono::milliseconds{200};
  config::PerfCell at10{
      .name = "rand_read_4k_10iops", .access = "random", .operation = "read", .block_size = 4096};
  at10.rate_iops = 10;
  at10.bytes = 3 * 4096;
  p.cells = {at10};
  p.runs = 1;  // the matrix is the subject; runs are ACustomMatrix...'s
  AddPerf("lab", p);
  const Json r = Run("lab");
  ASSERT_EQ(AsString(*Find(r, "outcome")), "completed") << DumpJson(r, 2);
  std::vector<std::string> names;
  for (const Json& c : Items(*Find(*Find(r, "series"), "cells"))) {
    names.push_back(AsString(*Find(c, "name")));
  }
  EXPECT_EQ(names, (std::vector<std::string>{"seq_read", "seq_write", "rand_read_4k",
                                             "rand_write_4k", "qd1_rand_read", "qd1_rand_write",
                                             "mixed_90_10", "mixed_50_50",
                                             "rand_read_4k_10iops"}));
  for (const char* key : {"seq_read_bytes_per_second", "qd1_rand_read_p99_9_seconds",
                          "qd1_rand_read_p99_seconds", "qd1_rand_read_iops",
                          "mixed_50_50_read_p99_9_seconds", "rand_read_4k_10iops_read_p99_seconds",
                          "rand_read_4k_10iops_iops"}) {
    EXPECT_GT(Result(r, key), 0) << key;
  }
  EXPECT_EQ(Result(r, "rand_read_4k_10iops_read_ios"), 3);
}

TEST_F(PerfMatrixTest, ACustomMatrixGivesEachCellItsKeysSeriesAndMetrics) {
  config::PerfParams p;
  config::PerfCell rr{
      .name = "rr", .access = "random", .operation = "read", .block_size = 4096, .queue_depth = 4};
  rr.bytes = 1u << 20;
  config::PerfCell sw{.name = "sw",
                      .access = "sequential",
                      .operation = "write",
                      .block_size = 128 * 1024,
                      .queue_depth = 2};
  sw.bytes = 2u << 20;
  config::PerfCell mix{.name = "mix_70_30",
                       .access = "random",
                       .operation = "mix",
                       .block_size = 16 * 1024,
                       .queue_depth = 2};
  mix.read_percent = 70;
  mix.bytes = 1u << 20;
  config::PerfCell paced{
      .name = "paced", .access = "random", .operation = "read", .block_size = 4096};
  paced.rate_iops = 200;
  paced.bytes = 40 * 4096;
  p.cells = {rr, sw, mix, paced};
  p.max_runs = 3;  // three runs of each, whatever their spread
  AddPerf("matrix", p);

  const Json r = Run("matrix");
  ASSERT_EQ(AsString(*Find(r, "outcome")), "completed") << DumpJson(r, 2);
  std::set<std::string> expected = {"region_bytes"};
  std::set<std::string> spread;
  for (const std::string cell : {"rr", "sw", "mix_70_30", "paced"}) {
    expected.insert(cell + "_bytes_per_second");
    expected.insert(cell + "_iops");
    expected.insert(cell + "_runs");
    // Their spread: 0 or more (a paced cell's runs may agree exactly).
    for (const char* se : {"_bytes_per_second_se", "_iops_se"}) {
      expected.insert(cell + se);
      spread.insert(cell + se);
    }
  }
  for (const std::string op : {"rr_read", "sw_write", "mix_70_30_read", "mix_70_30_write",
                               "paced_read"}) {
    for (const char* q : {"_p50_seconds", "_p99_seconds", "_p99_9_seconds", "_ios"}) {
      expected.insert(op + q);
    }
  }
  for (const char* q : {"_service_p50_seconds", "_service_p99_seconds", "_service_p99_9_seconds"}) {
    expected.insert(std::string("paced_read") + q);  // paced: timed from the submission too
  }
  EXPECT_EQ(Keys(r), expected) << DumpJson(r, 2);
  for (const std::string& key : expected) {
    if (spread.count(key)) {
      EXPECT_GE(Result(r, key), 0) << key;
    } else {
      EXPECT_GT(Result(r, key), 0) << key;
    }
  }
  // Three runs of each cell, every one on record; the quantiles are over
  // all three runs' I/Os (the paced cell's 40 reads each).
  EXPECT_EQ(Result(r, "rr_runs"), 3);
  EXPECT_EQ(Result(r, "paced_read_ios"), 3 * 40);
  const Json* runs = Find(*Find(r, "series"), "runs");
  ASSERT_NE(runs, nullptr);
  ASSERT_EQ(Items(*runs).size(), 4u);
  EXPECT_EQ(Items(*Find(Items(*runs)[0], "iops")).size(), 3u);
  double mean = 0;
  for (const Json& v : Items(*Find(Items(*runs)[0], "iops"))) mean += AsDouble(v) / 3;
  EXPECT_NEAR(Result(r, "rr_iops"), mean, 1e-9 * mean);
  // Every I/O is block_size bytes.
  EXPECT_DOUBLE_EQ(Result(r, "rr_bytes_per_second"), Result(r, "rr_iops") * 4096);
  EXPECT_LE(Result(r, "rr_read_p50_seconds"), Result(r, "rr_read_p99_9_seconds"));
  // No fill on record: the whole 16 MiB file.
  EXPECT_EQ(Result(r, "region_bytes"), 16u << 20);
  EXPECT_EQ(Find(*Find(r, "results"), "fill_ratio"), nullptr);

  const std::vector<Json>& cells = Items(*Find(*Find(r, "series"), "cells"));
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(DumpJson(cells[2]),
            R"({"name":"mix_70_30","access":"random","operation":"mix","read_percent":70,)"
            R"("block_size":16384,"queue_depth":2,"jobs":1,"rate_iops":0.0,"bytes":1048576})");
  EXPECT_EQ(AsDouble(*Find(cells[3], "rate_iops")), 200);
  EXPECT_EQ(History().back(), r);

  // A restarted daemon exports each cell as measure="<cell>".
  MetricStore store;
  PhaseService service(store, nullptr, nullptr);
  service.Start(config_);
  const std::string text = *store.Render();
  service.Stop();
  for (const std::string pattern : {
           R"(drivewatch_phase_result_bytes_per_second\{[^}]*measure="rr"[^}]*phase="matrix")",
           R"(drivewatch_phase_result_iops\{[^}]*measure="rr"[^}]*phase="matrix")",
           R"(drivewatch_phase_result_iops\{[^}]*measure="mix_70_30"[^}]*phase="matrix")",
           R"(drivewatch_phase_result_seconds\{[^}]*measure="mix_70_30_write_p99_9"[^}]*phase="matrix")",
           R"(drivewatch_phase_result_seconds\{[^}]*measure="paced_read_p50"[^}]*phase="matrix")",
       }) {
    EXPECT_TRUE(std::regex_search(text, std::regex(pattern))) << pattern << "\n" << text;
  }
}

// Cells of several jobs (fio's numjobs) run as one cell: one set of keys,
// the jobs in series.cells.
TEST_F(PerfMatrixTest, CellsOfSeveralJobsRecordTheirResults) {
  config::PerfParams p;
  config::PerfCell rw{.name = "rw_2j",
                      .access = "random",
                      .operation = "write",
                      .block_size = 4096,
                      .queue_depth = 2,
                      .jobs = 2};
  rw.bytes = 1u << 20;
  config::PerfCell sr{.name = "sr_4j",
                      .access = "sequential",
                      .operation = "read",
                      .block_size = 64 * 1024,
                      .queue_depth = 2,
                      .jobs = 4};
  sr.duration = milliseconds{300};
  p.cells = {rw, sr};
  p.runs = 1;  // the jobs are the subject here
  AddPerf("jobs", p);

  const Json r = Run("jobs");
  ASSERT_EQ(AsString(*Find(r, "outcome")), "completed") << DumpJson(r, 2);
  std::set<std::string> expected = {"region_bytes"};
  for (const std::string cell : {"rw_2j", "sr_4j"}) {
    expected.insert(cell + "_bytes_per_second");
    expected.insert(cell + "_iops");
    expected.insert(cell + "_runs");
  }
  for (const std::string op : {"rw_2j_write", "sr_4j_read"}) {
    for (const char* q : {"_p50_seconds", "_p99_seconds", "_p99_9_seconds", "_ios"}) {
      expected.insert(op + q);
    }
  }
  EXPECT_EQ(Keys(r), expected) << DumpJson(r, 2);
  for (const std::string& key : expected) EXPECT_GT(Result(r, key), 0) << key;
  EXPECT_DOUBLE_EQ(Result(r, "rw_2j_bytes_per_second"), Result(r, "rw_2j_iops") * 4096);
  EXPECT_DOUBLE_EQ(Result(r, "sr_4j_bytes_per_second"), Result(r, "sr_4j_iops") * 64 * 1024);
  const std::vector<Json>& cells = Items(*Find(*Find(r, "series"), "cells"));
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(DumpJson(cells[0]),
            R"({"name":"rw_2j","access":"random","operation":"write","read_percent":0,)"
            R"("block_size":4096,"queue_depth":2,"jobs":2,"rate_iops":0.0,"bytes":1048576})");
  EXPECT_EQ(AsUint(*Find(cells[1], "jobs")), 4u);
  EXPECT_EQ(History().back(), r);
}

TEST_F(PerfMatrixTest, ThePhoronixPresetRunsItsCellsOnASmallFile) {
  config::PerfParams p;
  p.preset = "phoronix";
  p.perf_duration = milliseconds{250};
  p.runs = 1;  // the preset's cells are the subject here
  AddPerf("phoronix", p);
  const Json r = Run("phoronix");
  ASSERT_EQ(AsString(*Find(r, "outcome")), "completed") << DumpJson(r, 2);
  const std::vector<Json>& cells = Items(*Find(*Find(r, "series"), "cells"));
  ASSERT_EQ(cells.size(), 8u);
  for (const Json& c : cells) {
    const std::string name = AsString(*Find(c, "name"));
    EXPECT_EQ(AsDouble(*Find(c, "duration_seconds")), 0.25) << name;
    EXPECT_GT(Result(r, name + "_bytes_per_second"), 0) << name;
    EXPECT_GT(Result(r, name + "_iops"), 0) << name;
    const std::string op = AsString(*Find(c, "operation"));
    EXPECT_GT(Result(r, name + "_" + op + "_p99_9_seconds"), 0) << name;
  }
  EXPECT_EQ(AsString(*Find(cells[6], "name")), "seq_read_2m_qd32");
  EXPECT_EQ(AsUint(*Find(cells[6], "block_size")), 2u << 20);
  EXPECT_EQ(AsUint(*Find(cells[6], "queue_depth")), 32u);
}

// Paced rounds settle fast on any machine, but how many rounds that takes
// depends on it: the test holds the run to what it recorded, not to a
// round count.
TEST_F(PerfMatrixTest, SteadyStateOnARealRunStopsAtTheFirstSteadyWindow) {
  config::PerfParams p;
  config::PerfCell paced{
      .name = "paced", .access = "random", .operation = "read", .block_size = 4096};
  paced.rate_iops = 400;
  paced.bytes = 40 * 4096;  // 0.1 s a round
  config::PerfCell seq{.name = "seq",
                       .access = "sequential",
                       .operation = "read",
                       .block_size = 64 * 1024,
                       .queue_depth = 4};
  seq.bytes = 4u << 20;
  p.cells = {paced, seq};
  p.steady_state = true;
  p.max_rounds = 12;
  AddPerf("steady", p);
  const Json r = Run("steady");
  ASSERT_EQ(AsString(*Find(r, "outcome")), "completed") << DumpJson(r, 2);
  const std::vector<Json>& windows = Items(*Find(*Find(r, "series"), "steady_state"));
  ASSERT_EQ(windows.size(), 2u);
  for (const Json& w : windows) {
    const std::string name = AsString(*Find(w, "name"));
    std::vector<double> values;
    for (const Json& v : Items(*Find(w, "values"))) values.push_back(AsDouble(v));
    const std::size_t rounds = AsUint(*Find(w, "rounds"));
    ASSERT_EQ(values.size(), rounds) << name;
    ASSERT_GE(rounds, kSteadyStateWindow) << name;
    ASSERT_LE(rounds, 12u) << name;
    // Steady exactly when the last window is, and no earlier window was.
    const auto last = CheckSteadyState(values);
    ASSERT_TRUE(last);
    EXPECT_EQ(AsBool(*Find(w, "steady")), last->steady) << name;
    EXPECT_EQ(Result(r, name + "_steady_state_ratio"), last->steady ? 1 : 0) << name;
    if (!last->steady) {
      EXPECT_EQ(rounds, 12u) << name;
    }
    for (std::size_t k = kSteadyStateWindow; k < rounds; ++k) {
      const auto earlier = CheckSteadyState(std::span<const double>(values).first(k));
      EXPECT_FALSE(earlier->steady) << name << " was steady after " << k << " rounds";
    }
    EXPECT_EQ(AsUint(*Find(w, "window_first_round")), rounds - kSteadyStateWindow + 1);
    EXPECT_DOUBLE_EQ(AsDouble(*Find(w, "average")), last->average);
    EXPECT_EQ(AsString(*Find(w, "tracked")), name == "seq" ? "bytes_per_second" : "iops");
  }
}

TEST_F(PerfMatrixTest, PurgeThenPreconditionThenTheCellsAndTheTargetIsWrittenAfter) {
  config::PerfParams p;
  config::PerfCell rr{
      .name = "rr", .access = "random", .operation = "read", .block_size = 4096, .queue_depth = 4};
  rr.bytes = 1u << 20;
  p.cells = {rr};
  p.purge = true;
  p.precondition = true;
  AddPerf("snia", p);
  Steps steps;
  const Json r = Run("snia", &steps);
  ASSERT_EQ(AsString(*Find(r, "outcome")), "completed") << DumpJson(r, 2);
  EXPECT_EQ(steps.seen,
            (std::vector<std::string>{"purge", "precondition 1/2", "precondition 2/2", "rr"}));
  EXPECT_EQ(Result(r, "purged_bytes"), 16u << 20);
  EXPECT_EQ(Result(r, "preconditioned_bytes"), 32u << 20);
  EXPECT_EQ(Result(r, "fill_ratio"), 1);
  EXPECT_EQ(Result(r, "region_bytes"), 16u << 20);
  // The next run reads the whole target: it is all written.
  EXPECT_EQ(LastFillRatio(History(), "t"), 1);
}

TEST_F(PerfMatrixTest, EachPreconditioningPassGoesThroughTheWriteGate) {
  config::PerfParams p;
  config::PerfCell rr{.name = "rr", .access = "random", .operation = "read", .block_size = 4096};
  rr.bytes = 64 * 1024;
  p.cells = {rr};
  p.purge = true;
  p.precondition = true;
  AddPerf("snia", p);
  // Once the first pass is under way, a retention study record that cannot
  // be read appears: it holds every target, so the gate refuses the second
  // pass, which must not have been let through with the first.
  Steps steps;
  steps.on_step = [&](const std::string& step) {
    if (step != "precondition 1/2") return;
    std::filesystem::create_directories(dir_ / "state/retention");
    std::ofstream(StudyPath(config_.state_directory, "lab")) << "{ not a study";
  };
  const Json r = Run("snia", &steps);
  EXPECT_EQ(AsString(*Find(r, "outcome")), "refused") << DumpJson(r, 2);
  EXPECT_NE(AsString(*Find(r, "reason")).find("lab"), std::string::npos) << DumpJson(r, 2);
  EXPECT_EQ(steps.seen, (std::vector<std::string>{"purge", "precondition 1/2"}));
  EXPECT_EQ(Result(r, "purged_bytes"), 16u << 20);
  EXPECT_EQ(Result(r, "preconditioned_bytes"), 16u << 20);
  EXPECT_EQ(Find(*Find(r, "results"), "rr_iops"), nullptr);
  // Cut short after it wrote: the fill level is unknown now.
  EXPECT_EQ(LastFillRatio(History(), "t"), -1);
}

TEST_F(PerfMatrixTest, CheckConfigKnowsALoopDevicesFourKibBlocks) {
  LoopDevice loop(16, 4096);
  if (loop.device().empty()) GTEST_SKIP() << "losetup failed (needs root)";
  const std::string text = "[[aging.targets]]\nname = \"loop\"\nblock_device = \"" +
                           loop.device() + "\"\nserial = \"" + loop.serial() +
                           "\"\ndestroy_data = true\n"
                           "[[aging.phases]]\nname = \"p\"\nkind = \"perf\"\ntarget = \"loop\"\n"
                           "[[aging.phases.cells]]\nname = \"small\"\naccess = \"random\"\n"
                           "operation = \"read\"\nblock_size = \"512B\"\n";
  const config::LoadResult bad = config::LoadString(text, "l.toml");
  ASSERT_FALSE(bad.config);
  const std::string dev = loop.device().substr(loop.device().rfind('/') + 1);
  const std::string expected =
      "l.toml:14:14: aging.phases.cells[0].block_size: \"512B\" is not a multiple of the "
      "logical block size 4KiB of target \"loop\" (" + loop.device() + ": /sys/dev/block/";
  EXPECT_EQ(bad.errors[0].ToString().rfind(expected, 0), 0u) << bad.errors[0].ToString();
  EXPECT_NE(
      bad.errors[0].ToString().find("/queue/logical_block_size) (expected a multiple of 4KiB)"),
      std::string::npos)
      << bad.errors[0].ToString();

  // 4 KiB cells load, and run.
  std::string good = std::regex_replace(text, std::regex("512B"), "4KiB");
  good += "bytes = \"64KiB\"\n";
  const config::LoadResult ok = config::LoadString(good, "l.toml");
  ASSERT_TRUE(ok.config) << (ok.errors.empty() ? "" : ok.errors[0].ToString());
  config_.aging = ok.config->aging;
  const Json r = Run("p");
  EXPECT_EQ(AsString(*Find(r, "outcome")), "completed") << DumpJson(r, 2);
  EXPECT_GT(Result(r, "small_iops"), 0);

  // A cell the config could not check is refused when the run opens the
  // device, before anything is written.
  std::get<config::PerfParams>(config_.aging.phases[0].params).cells[0].block_size = 512;
  const Json refused = Run("p");
  EXPECT_EQ(AsString(*Find(refused, "outcome")), "refused") << DumpJson(refused, 2);
  EXPECT_NE(AsString(*Find(refused, "reason")).find(
                "cell small: block_size 512B is not a multiple of the target's logical block "
                "size 4KiB"),
            std::string::npos)
      << DumpJson(refused, 2);
}

}  // namespace
}  // namespace drivewatch::aging
