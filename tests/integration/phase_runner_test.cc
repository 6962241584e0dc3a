// SPDX-License-Identifier: Apache-2.0
// Every heavy phase end to end on real targets (a file in a directory and
// a loop device, real io_uring): results in the history and in the
// metrics; refusals that write nothing; the abort conditions; one phase
// per target at a time.
#include "aging/runner/phase_runner.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <type_traits>

#include "aging/history/history.h"
#include "config/phase_kinds.h"
#include "exporter/metric_store.h"
#include "exporter/phase_service.h"
#include "tests/integration/loop_device.h"
#include "tests/integration/phase_run_fixture.h"

namespace drivewatch::aging {
namespace {

using drivewatch::testing::LoopDevice;
using std::chrono::milliseconds;

// A phase of the kind `params`, made short enough for a test.
config::PhaseConfig Phase(std::string name, config::PhaseParams params, std::string target) {
  config::PhaseConfig p;
  p.name = std::move(name);
  p.target = std::move(target);
  if (auto* perf = std::get_if<config::PerfParams>(&params)) {
    perf->perf_duration = milliseconds{500};
    perf->runs = 1;  // one run of each cell: the runner is the subject here
  }
  if (auto* reclaim = std::get_if<config::ReclaimParams>(&params)) {
    reclaim->reclaim_idle = {milliseconds{1'000}};
    reclaim->reclaim_write = milliseconds{2'000};
    reclaim->slc_sustain = milliseconds{1'000};
    reclaim->slc_median_window = milliseconds{1'000};
  }
  if (auto* fill = std::get_if<config::FillParams>(&params)) {
    fill->slc_sustain = milliseconds{1'000};
    fill->slc_median_window = milliseconds{1'000};
  }
  p.params = std::move(params);
  return p;
}

// A loop device handed over with the right identity and the
// acknowledgement.
config::AgingTarget LoopTarget(const LoopDevice& loop) {
  config::AgingTarget t;
  t.name = "loop";
  t.block_device = loop.device();
  t.serial = loop.serial();
  t.destroy_data = true;
  return t;
}

// The kinds of the registry (config/phase_kinds.h) EveryKind leaves out,
// each with what a file or a loop device cannot give it and where it runs
// instead. Every other kind, a new one too, runs in EveryKind.
const std::map<std::string_view, std::string_view> kKindsNotRunHere = {
    {"retention-write",
     "its study holds its region once written, so every writing kind after it is refused "
     "(tests/integration/retention_test.cc)"},
    {"retention-verify", "needs a study written first (tests/integration/retention_test.cc)"},
    {"power-states",
     "needs an NVMe controller with power states (tests/integration/power_states_test.cc)"},
};

// A phase of each kind of the registry but kKindsNotRunHere, named as its
// kind, on `target`; replay's trace is `trace`.
std::vector<config::PhaseConfig> EveryKind(const std::string& target, const std::string& trace) {
  std::vector<config::PhaseConfig> phases;
  config::ForEachPhaseKind([&](auto params) {
    using Params = decltype(params);
    if (kKindsNotRunHere.count(Params::kName)) return;
    if constexpr (std::is_same_v<Params, config::ReplayParams>) params.trace = trace;
    if constexpr (std::is_same_v<Params, config::PgbenchParams>) {
      // A test-sized server: one scale unit, two clients, two seconds.
      params.scale = 1;
      params.clients = 2;
      params.run_time = std::chrono::seconds{2};
    }
    phases.push_back(Phase(std::string(Params::kName), params, target));
  });
  return phases;
}

TEST(EveryKindTest, EachKindOfTheRegistryRunsOrSaysWhyNot) {
  std::set<std::string> run;
  for (const config::PhaseConfig& p : EveryKind("t", "trace")) {
    run.insert(std::string(config::PhaseKindName(p.params)));
  }
  std::set<std::string_view> registry;
  for (std::string_view kind : config::PhaseKindNames()) {
    registry.insert(kind);
    const bool left_out = kKindsNotRunHere.count(kind) != 0;
    EXPECT_NE(run.count(std::string(kind)) != 0, left_out)
        << kind << ": a kind is either run by EveryKind or left out with a reason";
  }
  for (const auto& [kind, why] : kKindsNotRunHere) {
    EXPECT_TRUE(registry.count(kind)) << kind << " is no kind of the registry";
    EXPECT_FALSE(why.empty()) << kind;
  }
  // The four kinds ExpectEveryKindCompletes checks result by result.
  for (const char* kind : {"fill", "perf", "reclaim", "trim"}) EXPECT_TRUE(run.count(kind));
}

class PhaseRunnerTest : public PhaseRunFixture {
 protected:

  config::AgingTarget FileTarget() const { return DataFileTarget("t", 32u << 20); }

  Json Run(const std::string& phase, std::stop_token stop = {}) {
    auto r = RunPhase(config_, phase, options_, stop, nullptr);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? *r : Json();
  }

  // Adds a file target "t" and a reclaim phase on it that idles 30 s, runs
  // it on a thread, and returns once its checkpoint is saved: from then on
  // the run holds the target.
  std::thread StartHoldingRun(std::stop_token stop, Json* result) {
    config_.aging.targets = {FileTarget()};
    auto reclaim = Phase("reclaim", config::ReclaimParams{}, "t");
    std::get<config::ReclaimParams>(reclaim.params).reclaim_idle = {milliseconds{30'000}};
    config_.aging.phases.push_back(reclaim);
    std::thread t([this, stop, result] { *result = Run("reclaim", stop); });
    const std::string checkpoint = CheckpointPath(config_.state_directory, "reclaim");
    for (int i = 0; i < 200 && !std::filesystem::exists(checkpoint); ++i) {
      std::this_thread::sleep_for(milliseconds{10});
    }
    return t;
  }
  // A short block trace for the replay phase: a write and a read.
  std::string Trace() {
    const std::string path = (dir_ / "trace.log").string();
    std::ofstream(path) << "fio version 2 iolog\n/a add\n/a open\n/a write 0 65536\n"
                           "/a read 0 65536\n/a close\n";
    return path;
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

  void ExpectEveryKindCompletes(std::uint64_t capacity) {
    const Json fill = Run("fill");
    ASSERT_EQ(AsString(*Find(fill, "outcome")), "completed") << DumpJson(fill, 2);
    EXPECT_EQ(Result(fill, "written_bytes"), capacity / 2);
    EXPECT_EQ(Result(fill, "trimmed_bytes"), capacity);
    EXPECT_DOUBLE_EQ(Result(fill, "fill_ratio"), 0.5);
    EXPECT_GT(Result(fill, "before_cache_bytes_per_second"), 0);
    EXPECT_FALSE(Items(*Find(*Find(fill, "series"), "throughput_bytes_per_second")).empty());

    const Json perf = Run("perf");
    ASSERT_EQ(AsString(*Find(perf, "outcome")), "completed") << DumpJson(perf, 2);
    EXPECT_DOUBLE_EQ(Result(perf, "fill_ratio"), 0.5);  // from the fill's record
    EXPECT_EQ(Result(perf, "region_bytes"), capacity / 2);
    for (const char* key :
         {"seq_read_bytes_per_second", "seq_write_bytes_per_second", "rand_read_4k_iops",
          "rand_write_4k_iops", "qd1_rand_read_p99_9_seconds", "qd1_rand_write_p99_9_seconds",
          "mixed_90_10_iops", "mixed_90_10_read_p99_9_seconds",
          "mixed_90_10_write_p99_9_seconds", "mixed_50_50_iops"}) {
      EXPECT_GT(Result(perf, key), 0) << key << "\n" << DumpJson(perf, 2);
    }
    // Paced at 1000 IOPS: the engine must not run faster than asked.
    EXPECT_LT(Result(perf, "mixed_90_10_iops"), 1100);
    // The built-in matrix keeps every result key it always had, so
    // dashboards and alert rules written for them do not change; and like
    // every cell, each records its throughput, IOPS, and p50/p99/p99.9
    // with the I/Os under them (issue 33: the QD1 cells had no p99 nor
    // IOPS). Its QD1 cells name their quantiles without the operation.
    std::set<std::string> keys;
    for (const auto& [key, value] : Members(*Find(perf, "results"))) keys.insert(key);
    std::set<std::string> expected = {"fill_ratio", "region_bytes",
                                      "qd1_rand_read_block_size_bytes",
                                      "qd1_rand_write_block_size_bytes"};
    for (const auto& [cell, ops] :
         std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"seq_read", {"_read"}}, {"seq_write", {"_write"}}, {"rand_read_4k", {"_read"}},
             {"rand_write_4k", {"_write"}}, {"qd1_rand_read", {""}}, {"qd1_rand_write", {""}},
             {"mixed_90_10", {"_read", "_write"}}, {"mixed_50_50", {"_read", "_write"}}}) {
      expected.insert(cell + "_bytes_per_second");
      expected.insert(cell + "_iops");
      expected.insert(cell + "_runs");
      for (const std::string& op : ops) {
        for (const char* q : {"_p50_seconds", "_p99_seconds", "_p99_9_seconds", "_ios"}) {
          expected.insert(cell + op + q);
        }
        // The paced mixes time each I/O from the submission too (service).
        if (cell.rfind("mixed_", 0) == 0) {
          for (const char* q : {"_service_p50_seconds", "_service_p99_seconds",
                                "_service_p99_9_seconds"}) {
            expected.insert(cell + op + q);
          }
        }
      }
    }
    EXPECT_EQ(keys, expected);
    for (const char* always :
         {"seq_read_bytes_per_second", "seq_write_bytes_per_second", "rand_read_4k_iops",
          "rand_write_4k_iops", "qd1_rand_read_p99_9_seconds", "qd1_rand_read_p50_seconds",
          "qd1_rand_write_p99_9_seconds", "qd1_rand_write_p50_seconds", "mixed_90_10_iops",
          "mixed_90_10_read_p99_9_seconds", "mixed_90_10_write_p99_9_seconds",
          "mixed_50_50_iops", "mixed_50_50_read_p99_9_seconds",
          "mixed_50_50_write_p99_9_seconds"}) {
      EXPECT_TRUE(keys.count(always)) << always << ": a key dashboards read is gone";
    }
    EXPECT_EQ(Items(*Find(*Find(perf, "series"), "cells")).size(), 8u);

    const Json reclaim = Run("reclaim");
    ASSERT_EQ(AsString(*Find(reclaim, "outcome")), "completed") << DumpJson(reclaim, 2);
    const double fast = std::max(Result(reclaim, "idle_1s_fast_stage_seconds"),
                                 Result(reclaim, "idle_1s_fast_stage_lower_bound_seconds"));
    EXPECT_GT(fast, 0) << DumpJson(reclaim, 2);

    const Json trim = Run("trim");
    ASSERT_EQ(AsString(*Find(trim, "outcome")), "completed") << DumpJson(trim, 2);
    EXPECT_EQ(Result(trim, "trimmed_bytes"), capacity / 2);
    EXPECT_GT(Result(trim, "trim_mean_seconds"), 0);
    EXPECT_GE(Result(trim, "trim_max_seconds"), Result(trim, "trim_mean_seconds"));
    EXPECT_GT(Result(trim, "trim_efficiency_ratio"), 0);

    // Every other kind EveryKind runs completes on the target too.
    std::size_t others = 0;
    for (const config::PhaseConfig& phase : config_.aging.phases) {
      if (phase.name == "fill" || phase.name == "perf" || phase.name == "reclaim" ||
          phase.name == "trim") {
        continue;
      }
      const Json r = Run(phase.name);
      EXPECT_EQ(AsString(*Find(r, "outcome")), "completed") << phase.name << "\n" << DumpJson(r, 2);
      ++others;
    }

    std::vector<Json> history;  // the runs' records (endurance adds step records)
    for (Json& r : History()) {
      if (!IsStepRecord(r)) history.push_back(std::move(r));
    }
    ASSERT_EQ(history.size(), 4u + others);
    EXPECT_EQ(history[0], fill);
    EXPECT_EQ(history[3], trim);
    EXPECT_FALSE(std::filesystem::exists(CheckpointPath(config_.state_directory, "fill")));
  }

};

TEST_F(PhaseRunnerTest, EveryKindOnAFileTargetLandsInHistoryAndMetrics) {
  config_.aging.targets = {FileTarget()};
  config_.aging.phases = EveryKind("t", Trace());
  ExpectEveryKindCompletes(32u << 20);

  // A restarted daemon exports the results from the history alone.
  MetricStore store;
  PhaseService service(store, nullptr, nullptr);
  service.Start(config_);
  const std::string text = *store.Render();
  service.Stop();
  auto has = [&](const std::string& pattern) {
    return std::regex_search(text, std::regex(pattern));
  };
  EXPECT_TRUE(has(R"(drivewatch_phase_result_bytes\{[^}]*measure="written"[^}]*phase="fill"[^}]*\} 16777216)"))
      << text;
  EXPECT_TRUE(has(R"(drivewatch_phase_result_iops\{[^}]*measure="rand_read_4k"[^}]*phase="perf")"));
  EXPECT_TRUE(has(R"(drivewatch_phase_result_seconds\{[^}]*measure="trim_max"[^}]*phase="trim")"));
  EXPECT_TRUE(has(R"(drivewatch_phase_result_ratio\{[^}]*measure="trim_efficiency")"));
  EXPECT_TRUE(has(R"(drivewatch_phase_runs_total\{[^}]*outcome="completed"[^}]*phase="fill"[^}]*\} 1)"));
  EXPECT_TRUE(has(R"(drivewatch_phase_state\{[^}]*phase="fill"[^}]*state="idle"[^}]*\} 1)"));
  EXPECT_TRUE(has(R"(drivewatch_phase_last_run_success\{[^}]*phase="reclaim"[^}]*\} 1)"));
}

TEST_F(PhaseRunnerTest, EveryKindOnALoopDevice) {
  LoopDevice loop(32);
  if (loop.device().empty()) GTEST_SKIP() << "losetup failed (needs root)";
  const config::AgingTarget t = LoopTarget(loop);
  config_.aging.targets = {t};
  config_.aging.phases = EveryKind("loop", Trace());
  // A kind that runs an application needs a file system: it runs on the
  // file target above, and on a loop device's ext4 in
  // tests/run/app_phase_test.sh.
  std::erase_if(config_.aging.phases, [](const config::PhaseConfig& p) {
    return config::PhaseKindNeedsDirectory(p.params);
  });
  ExpectEveryKindCompletes(32u << 20);
}

// The bytes of a file, to prove a refused run wrote nothing.
std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_F(PhaseRunnerTest, RefusedRunsWriteNothingAndAreRecorded) {
  LoopDevice loop(8);
  if (loop.device().empty()) GTEST_SKIP() << "losetup failed (needs root)";
  {
    std::ofstream out(loop.backing(), std::ios::binary | std::ios::in);
    out << "somebody's data";
  }
  const std::string before = Contents(loop.backing());
  config::AgingTarget t = LoopTarget(loop);
  t.serial = "loop:/somewhere/else.img";
  config_.aging.targets = {t};
  config_.aging.phases = {Phase("fill", config::FillParams{}, "loop")};

  Json r = Run("fill");
  EXPECT_EQ(AsString(*Find(r, "outcome")), "refused");
  EXPECT_NE(AsString(*Find(r, "reason")).find("loop:/somewhere/else.img"), std::string::npos)
      << AsString(*Find(r, "reason"));
  EXPECT_NE(AsString(*Find(r, "reason")).find(loop.device()), std::string::npos);

  config_.aging.targets[0].serial = loop.serial();
  config_.aging.targets[0].destroy_data = false;
  r = Run("fill");
  EXPECT_EQ(AsString(*Find(r, "outcome")), "refused");
  EXPECT_NE(AsString(*Find(r, "reason")).find("destroy_data"), std::string::npos)
      << AsString(*Find(r, "reason"));

  EXPECT_EQ(Contents(loop.backing()), before);
  ASSERT_EQ(History().size(), 2u);
  EXPECT_EQ(AsString(*Find(History()[1], "outcome")), "refused");
}

TEST_F(PhaseRunnerTest, AMountedDeviceIsRefusedWithTheMountNamed) {
  LoopDevice loop(16);
  if (loop.device().empty()) GTEST_SKIP() << "losetup failed (needs root)";
  bool ok = false;
  drivewatch::testing::Shell("mkfs.ext4 -q -F " + loop.device(), &ok);
  ASSERT_TRUE(ok) << "mkfs.ext4";
  const std::filesystem::path mnt = dir_ / "mnt";
  std::filesystem::create_directories(mnt);
  drivewatch::testing::Shell("mount " + loop.device() + " " + mnt.string(), &ok);
  if (!ok) GTEST_SKIP() << "mount failed";
  config::AgingTarget t = LoopTarget(loop);
  t.allow_signatures = true;  // the mount alone must refuse
  config_.aging.targets = {t};
  config_.aging.phases = {Phase("fill", config::FillParams{}, "loop")};
  const Json r = Run("fill");
  drivewatch::testing::Shell("umount " + mnt.string());
  EXPECT_EQ(AsString(*Find(r, "outcome")), "refused");
  EXPECT_NE(AsString(*Find(r, "reason")).find("mounted on " + mnt.string()), std::string::npos)
      << AsString(*Find(r, "reason"));
}

TEST_F(PhaseRunnerTest, UnknownPhaseIsAnErrorNamingTheKnownOnes) {
  config_.aging.targets = {FileTarget()};
  config_.aging.phases = {Phase("fill", config::FillParams{}, "t")};
  auto r = RunPhase(config_, "fil", options_, {}, nullptr);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("expected one of: fill"), std::string::npos);
}

TEST_F(PhaseRunnerTest, MaxDurationAbortsWithPartialResults) {
  config_.aging.targets = {FileTarget()};
  auto perf = Phase("perf", config::PerfParams{}, "t");
  std::get<config::PerfParams>(perf.params).perf_duration = milliseconds{700};
  perf.max_duration = milliseconds{2'000};
  config_.aging.phases = {perf};
  options_.check_interval = milliseconds{100};
  const Json r = Run("perf");
  EXPECT_EQ(AsString(*Find(r, "outcome")), "aborted");
  EXPECT_NE(AsString(*Find(r, "reason")).find("max_duration 2s exceeded"), std::string::npos);
  EXPECT_GT(Result(r, "seq_read_bytes_per_second"), 0);  // measured before the abort
  EXPECT_LT(AsDouble(*Find(r, "duration_seconds")), 3.5);
}

// Fake: a drive's temperature and warnings, scripted, because no real
// part (a file, a loop device, QEMU's fixed 323 K) heats up on cue.
class ScriptedHealth : public HealthSource {
 public:
  explicit ScriptedHealth(std::vector<HealthReading> readings)
      : readings_(std::move(readings)) {}
  Expected<HealthReading> Read() override {
    const HealthReading r = readings_[std::min(next_, readings_.size() - 1)];
    ++next_;
    return r;
  }

 private:
  std::vector<HealthReading> readings_;
  std::size_t next_ = 0;
};

TEST_F(PhaseRunnerTest, AbortsNearWctempAndOnANewCriticalWarning) {
  config_.aging.targets = {FileTarget()};
  auto reclaim = Phase("reclaim", config::ReclaimParams{}, "t");
  std::get<config::ReclaimParams>(reclaim.params).reclaim_idle = {milliseconds{30'000}};
  config_.aging.phases = {reclaim};
  config_.aging.temperature_margin = 5;
  options_.check_interval = milliseconds{50};

  const HealthReading cool{320, 0, 343, 0};
  const HealthReading warm{339, 0, 343, 0};  // within 5 K of WCTEMP
  options_.health = [&](int) {
    return std::make_unique<ScriptedHealth>(std::vector<HealthReading>{cool, cool, warm});
  };
  Json r = Run("reclaim");
  EXPECT_EQ(AsString(*Find(r, "outcome")), "aborted");
  EXPECT_NE(AsString(*Find(r, "reason")).find("within 5 K of WCTEMP 343 K"), std::string::npos)
      << AsString(*Find(r, "reason"));

  const HealthReading tmt{336, 0, 343, 340};  // within 5 K of TMT1 only
  options_.health = [&](int) {
    return std::make_unique<ScriptedHealth>(std::vector<HealthReading>{cool, tmt});
  };
  r = Run("reclaim");
  EXPECT_NE(AsString(*Find(r, "reason")).find("TMT1 340 K"), std::string::npos)
      << AsString(*Find(r, "reason"));

  // A warning present at the start does not abort; a new bit does.
  const HealthReading spare{320, 0x01, 343, 0};
  const HealthReading spare_and_ro{320, 0x09, 343, 0};
  options_.health = [&](int) {
    return std::make_unique<ScriptedHealth>(
        std::vector<HealthReading>{spare, spare, spare, spare_and_ro});
  };
  r = Run("reclaim");
  EXPECT_EQ(AsString(*Find(r, "outcome")), "aborted");
  EXPECT_NE(AsString(*Find(r, "reason")).find("critical warning 0x09 set (was 0x01"),
            std::string::npos)
      << AsString(*Find(r, "reason"));
}

TEST_F(PhaseRunnerTest, StopRequestAbortsAndOneRunPerTargetAtATime) {
  config_.aging.phases = {Phase("fill", config::FillParams{}, "t")};
  std::stop_source stop;
  Json first;
  std::thread t = StartHoldingRun(stop.get_token(), &first);
  const Json second = Run("fill");
  EXPECT_EQ(AsString(*Find(second, "outcome")), "refused");
  EXPECT_NE(AsString(*Find(second, "reason")).find("busy: phase reclaim"), std::string::npos)
      << AsString(*Find(second, "reason"));
  stop.request_stop();
  t.join();
  EXPECT_EQ(AsString(*Find(first, "outcome")), "aborted");
  EXPECT_NE(AsString(*Find(first, "reason")).find("shutting down"), std::string::npos);
}

TEST_F(PhaseRunnerTest, ACheckpointLeftByACrashIsRecordedAsInterrupted) {
  std::filesystem::create_directories(std::filesystem::path(config_.state_directory) / "phases");
  Json c = Json::object();
  c["version"] = 1;
  c["run"] = "fill-20261130T000000.000Z";
  c["phase"] = "fill";
  c["start"] = 1000.0;
  c["outcome"] = "running";
  c["results"] = Json::object();
  c["results"]["trimmed_bytes"] = std::uint64_t{1} << 30;
  c["checkpoint"] = 1060.0;
  std::ofstream(CheckpointPath(config_.state_directory, "fill")) << DumpJson(c) << "\n";
  const std::vector<Json> recovered = RecoverInterrupted(config_.state_directory);
  ASSERT_EQ(recovered.size(), 1u);
  const std::vector<Json> history = History();
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(AsString(*Find(history[0], "outcome")), "interrupted");
  EXPECT_EQ(Result(history[0], "trimmed_bytes"), 1u << 30);
  EXPECT_EQ(AsDouble(*Find(history[0], "duration_seconds")), 60);
  EXPECT_EQ(Find(history[0], "checkpoint"), nullptr);
  EXPECT_FALSE(std::filesystem::exists(CheckpointPath(config_.state_directory, "fill")));
  EXPECT_TRUE(RecoverInterrupted(config_.state_directory).empty());
}

// A checkpoint's resume state (PhaseReport::resume) is input read back from
// disk: written back only as <directory>/<phase>.<ext> under the state
// directory and as a JSON object; otherwise the run is still recorded, and
// its reason says why the state was not written.
TEST_F(PhaseRunnerTest, ACheckpointsResumeStateIsWrittenBackOnlyWhereItBelongs) {
  const std::filesystem::path state(config_.state_directory);
  std::filesystem::create_directories(state / "phases");
  int runs = 0;  // each checkpoint another run's (a recorded run's is only removed)
  const auto checkpoint = [&](const Json& resume) {
    ++runs;
    Json c = Json::object();
    c["version"] = 1;
    c["run"] = "wear-20261130T0000" + std::to_string(10 + runs) + ".000Z";
    c["phase"] = "wear";
    c["start"] = 1000.0 + runs;
    c["outcome"] = "running";
    c["results"] = Json::object();
    c["checkpoint"] = 1060.0;
    c["resume"] = resume;
    std::ofstream(CheckpointPath(config_.state_directory, "wear"), std::ios::trunc)
        << DumpJson(c) << "\n";
  };
  Json content = Json::object();
  content["chunk"] = 2;
  const struct {
    const char* file;
    bool object;
    const char* why;
  } damaged[] = {
      {"../wear.progress", true, "is not <directory>/wear.<ext>"},
      {"endurance/../../wear.progress", true, "is not <directory>/wear.<ext>"},
      {"/tmp/wear.progress", true, "is not <directory>/wear.<ext>"},
      {"endurance/other.progress", true, "is not <directory>/wear.<ext>"},
      {"endurance/wear", true, "is not <directory>/wear.<ext>"},
      {"endurance/wear.progress", false, "resume.content: expected a JSON object"},
  };
  for (const auto& d : damaged) {
    Json resume = Json::object();
    resume["file"] = d.file;
    resume["content"] = d.object ? content : Json("text");
    checkpoint(resume);
    const std::vector<Json> recovered = RecoverInterrupted(config_.state_directory);
    ASSERT_EQ(recovered.size(), 1u) << d.file;
    const std::string reason = AsString(*Find(recovered[0], "reason"));
    EXPECT_NE(reason.find("resume state was damaged and not written back"), std::string::npos)
        << reason;
    EXPECT_NE(reason.find(d.why), std::string::npos) << reason;
    EXPECT_FALSE(std::filesystem::exists(state / "endurance")) << d.file;
    EXPECT_FALSE(std::filesystem::exists(state.parent_path() / "wear.progress")) << d.file;
  }
  Json resume = Json::object();
  resume["file"] = "endurance/wear.progress";
  resume["content"] = content;
  checkpoint(resume);
  std::vector<Json> recovered = RecoverInterrupted(config_.state_directory);
  ASSERT_EQ(recovered.size(), 1u);
  EXPECT_NE(AsString(*Find(recovered[0], "reason")).find(
                "; endurance/wear.progress brought up to its last checkpoint"),
            std::string::npos)
      << AsString(*Find(recovered[0], "reason"));
  EXPECT_EQ(Find(recovered[0], "resume"), nullptr);
  std::ifstream in(state / "endurance" / "wear.progress");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), DumpJson(content) + "\n");
  // The file already holds it (the run saved it itself): nothing to say.
  checkpoint(resume);
  recovered = RecoverInterrupted(config_.state_directory);
  ASSERT_EQ(recovered.size(), 1u);
  EXPECT_EQ(AsString(*Find(recovered[0], "reason")).find("brought up"), std::string::npos);
}

// A checkpoint past its bound is not read (a damaged disk, a hand edit):
// the run is still recorded, with why its results are missing.
TEST_F(PhaseRunnerTest, ACheckpointLargerThanTheBoundIsRecordedUnread) {
  std::filesystem::create_directories(std::filesystem::path(config_.state_directory) / "phases");
  const std::string path = CheckpointPath(config_.state_directory, "fill");
  std::ofstream(path) << "{\"run\":\"fill-20261130T000000.000Z\",";
  std::filesystem::resize_file(path, kMaxCheckpointBytes + 1);  // sparse
  ::testing::internal::CaptureStderr();
  const std::vector<Json> recovered = RecoverInterrupted(config_.state_directory);
  ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(recovered.size(), 1u);
  const std::vector<Json> history = History();
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(AsString(*Find(history[0], "phase")), "fill");
  EXPECT_EQ(AsString(*Find(history[0], "outcome")), "interrupted");
  EXPECT_EQ(AsString(*Find(history[0], "reason")),
            "drivewatch stopped while the phase ran, and its checkpoint was unreadable: " + path +
                ": " + std::to_string(kMaxCheckpointBytes + 1) +
                " bytes, larger than a phase checkpoint may be (expected at most " +
                std::to_string(kMaxCheckpointBytes) + " bytes)");
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(PhaseRunnerTest, ARunKilledAfterItsRecordIsNotRecordedTwice) {
  std::filesystem::create_directories(std::filesystem::path(config_.state_directory) / "phases");
  Json done = Json::object();
  done["version"] = 1;
  done["run"] = "fill-20261130T010000.000Z";
  done["phase"] = "fill";
  done["start"] = 3600.0;
  done["outcome"] = "completed";
  ASSERT_TRUE(HistoryFile(HistoryPath(config_.state_directory)).Append(done));
  // Killed after the append, before the checkpoint went away.
  Json c = done;
  c["outcome"] = "running";
  c["checkpoint"] = 1060.0;
  std::ofstream(CheckpointPath(config_.state_directory, "fill")) << DumpJson(c) << "\n";
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(RecoverInterrupted(config_.state_directory).empty());
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("phase fill: removed the stale checkpoint " +
                     CheckpointPath(config_.state_directory, "fill") +
                     " of run fill-20261130T010000.000Z, which the history already records"),
            std::string::npos)
      << log;
  EXPECT_EQ(History().size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(CheckpointPath(config_.state_directory, "fill")));
}

// A run's id is unique: runs started in the same second (or millisecond)
// of one process do not share one, so the history never holds one run
// twice and recovery never takes one run for another.
TEST_F(PhaseRunnerTest, RunsStartedInTheSameSecondHaveTheirOwnIds) {
  std::stop_source stop;
  Json first;
  std::thread t = StartHoldingRun(stop.get_token(), &first);
  std::set<std::string> ids;
  for (int i = 0; i < 20; ++i) {
    const Json refused = Run("reclaim");
    ASSERT_EQ(AsString(*Find(refused, "outcome")), "refused") << DumpJson(refused, 2);
    ids.insert(AsString(*Find(refused, "run")));
  }
  stop.request_stop();
  t.join();
  ids.insert(AsString(*Find(first, "run")));
  EXPECT_EQ(ids.size(), 21u);
  for (const std::string& id : ids) {
    EXPECT_TRUE(std::regex_match(id, std::regex(R"(reclaim-\d{8}T\d{6}\.\d{3}Z)"))) << id;
  }
}

// A run refused because its target is busy never held the phase's
// checkpoint: the one there is the running run's, and must stay, or a
// crash of that run would go unrecorded.
TEST_F(PhaseRunnerTest, ARefusedRunLeavesTheRunningRunsCheckpoint) {
  std::stop_source stop;
  Json first;
  std::thread t = StartHoldingRun(stop.get_token(), &first);
  const std::string checkpoint = CheckpointPath(config_.state_directory, "reclaim");
  ASSERT_TRUE(std::filesystem::exists(checkpoint));
  const Json refused = Run("reclaim");
  EXPECT_EQ(AsString(*Find(refused, "outcome")), "refused") << DumpJson(refused, 2);
  EXPECT_TRUE(std::filesystem::exists(checkpoint)) << "a refused run removed the running one's checkpoint";
  stop.request_stop();
  t.join();
  EXPECT_FALSE(std::filesystem::exists(checkpoint));
}

// A run killed while the daemon went on leaves its checkpoint until the
// next start; the next run of its phase records it before saving its own
// checkpoint over it.
TEST_F(PhaseRunnerTest, ARunFindingACrashedRunsCheckpointRecordsItFirst) {
  config_.aging.targets = {FileTarget()};
  config_.aging.phases = {Phase("trim", config::TrimParams{}, "t")};
  std::filesystem::create_directories(std::filesystem::path(config_.state_directory) / "phases");
  Json c = Json::object();
  c["version"] = 1;
  c["run"] = "trim-20261130T030000.000Z";
  c["phase"] = "trim";
  c["target"] = "t";
  c["start"] = 10800.0;
  c["outcome"] = "running";
  c["checkpoint"] = 10860.0;
  std::ofstream(CheckpointPath(config_.state_directory, "trim")) << DumpJson(c) << "\n";
  const Json run = Run("trim");
  EXPECT_EQ(AsString(*Find(run, "outcome")), "completed") << DumpJson(run, 2);
  const std::vector<Json> history = History();
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(AsString(*Find(history[0], "run")), "trim-20261130T030000.000Z");
  EXPECT_EQ(AsString(*Find(history[0], "outcome")), "interrupted");
  EXPECT_EQ(AsString(*Find(history[1], "outcome")), "completed");
  EXPECT_FALSE(std::filesystem::exists(CheckpointPath(config_.state_directory, "trim")));
}

// Another process's refusal may share a killed run's id (both started in
// one millisecond): the record is that run's only when its start matches,
// so the run that wrote is still recorded as interrupted, not dropped.
TEST_F(PhaseRunnerTest, ACheckpointIsNotTakenForARecordWithItsIdButAnotherStart) {
  std::filesystem::create_directories(std::filesystem::path(config_.state_directory) / "phases");
  Json refused = Json::object();
  refused["version"] = 1;
  refused["run"] = "fill-20261130T020000.000Z";
  refused["phase"] = "fill";
  refused["start"] = 7200.0004;
  refused["outcome"] = "refused";
  ASSERT_TRUE(HistoryFile(HistoryPath(config_.state_directory)).Append(refused));
  Json c = refused;
  c["start"] = 7200.0001;
  c["outcome"] = "running";
  c["checkpoint"] = 7260.0;
  std::ofstream(CheckpointPath(config_.state_directory, "fill")) << DumpJson(c) << "\n";
  ASSERT_EQ(RecoverInterrupted(config_.state_directory).size(), 1u);
  const std::vector<Json> history = History();
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(AsString(*Find(history[1], "outcome")), "interrupted");
  EXPECT_DOUBLE_EQ(AsDouble(*Find(history[1], "start")), 7200.0001);
  EXPECT_FALSE(std::filesystem::exists(CheckpointPath(config_.state_directory, "fill")));
}

// The checkpoint of a run that is still going (a phase run by hand while
// the daemon starts) is not a crash's: recovery leaves it to its run, which
// is recorded once, with its own outcome.
TEST_F(PhaseRunnerTest, TheCheckpointOfARunStillGoingIsNotRecordedAsInterrupted) {
  std::stop_source stop;
  Json first;
  std::thread t = StartHoldingRun(stop.get_token(), &first);
  const std::string checkpoint = CheckpointPath(config_.state_directory, "reclaim");
  ASSERT_TRUE(std::filesystem::exists(checkpoint));
  EXPECT_TRUE(RecoverInterrupted(config_.state_directory).empty());
  EXPECT_TRUE(std::filesystem::exists(checkpoint)) << "the running phase's checkpoint was removed";
  EXPECT_TRUE(History().empty()) << DumpJson(History().front(), 2);
  stop.request_stop();
  t.join();
  EXPECT_EQ(AsString(*Find(first, "outcome")), "aborted");
  const std::vector<Json> history = History();
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(AsString(*Find(history[0], "outcome")), "aborted");
  EXPECT_FALSE(std::filesystem::exists(checkpoint));
}

// The checkpoint comes before anything touches the target: a run that
// cannot save it is refused before its directory target's file exists.
TEST_F(PhaseRunnerTest, NothingIsWrittenBeforeTheCheckpointIsSaved) {
  config_.aging.targets = {FileTarget()};
  config_.aging.phases = {Phase("fill", config::FillParams{}, "t")};
  // Its temporary file cannot be created: a directory (not empty) is there.
  const std::string blocked = CheckpointPath(config_.state_directory, "fill") + ".tmp";
  std::filesystem::create_directories(blocked + "/x");
  const Json r = Run("fill");
  EXPECT_EQ(AsString(*Find(r, "outcome")), "refused") << DumpJson(r, 2);
  EXPECT_EQ(AsString(*Find(r, "reason")).rfind("cannot save the checkpoint: ", 0), 0u)
      << AsString(*Find(r, "reason"));
  EXPECT_NE(AsString(*Find(r, "reason")).find("(the state directory " +
                                              config_.state_directory + " must be writable)"),
            std::string::npos)
      << AsString(*Find(r, "reason"));
  EXPECT_TRUE(std::filesystem::is_empty(dir_ / "data")) << "the target's file was created";
}

TEST_F(PhaseRunnerTest, DaemonStartsDuePhasesMarksTheDriveBusyAndStopsThemOnReload) {
  LoopDevice loop(16);
  if (loop.device().empty()) GTEST_SKIP() << "losetup failed (needs root)";
  const config::AgingTarget t = LoopTarget(loop);
  config_.aging.targets = {t};
  auto long_idle = Phase("long", config::ReclaimParams{}, "loop");
  std::get<config::ReclaimParams>(long_idle.params).reclaim_idle = {milliseconds{60'000}};
  long_idle.schedule.interval = milliseconds{3'600'000};
  config_.aging.phases = {long_idle};

  MetricStore store;
  DriveBusyBoard busy;
  PhaseService service(store, &busy, nullptr);
  service.Start(config_);  // due at once: never ran
  for (int i = 0; i < 300 && busy.Busy(t.serial).empty(); ++i) {
    std::this_thread::sleep_for(milliseconds{10});
  }
  EXPECT_EQ(busy.Busy(t.serial), "phase long");
  std::this_thread::sleep_for(milliseconds{1'200});  // a progress update
  const std::string running = *store.Render();
  EXPECT_TRUE(std::regex_search(
      running, std::regex(R"(drivewatch_phase_state\{[^}]*phase="long"[^}]*state="running"[^}]*\} 1)")))
      << running;
  EXPECT_TRUE(std::regex_search(
      running, std::regex(R"(drivewatch_phase_progress_ratio\{[^}]*phase="long"[^}]*\} 0\.0)")))
      << running;

  // A reload without the phase stops it; it is recorded as aborted.
  config::Config without = config_;
  without.aging.phases.clear();
  service.Reconfigure(without);
  for (int i = 0; i < 300 && History().empty(); ++i) std::this_thread::sleep_for(milliseconds{10});
  const std::vector<Json> history = History();
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(AsString(*Find(history[0], "outcome")), "aborted");
  EXPECT_NE(AsString(*Find(history[0], "reason")).find("reload removed the phase"),
            std::string::npos);
  for (int i = 0; i < 100 && !busy.Busy(t.serial).empty(); ++i) {
    std::this_thread::sleep_for(milliseconds{10});
  }
  EXPECT_EQ(busy.Busy(t.serial), "");
  service.Stop();
}

}  // namespace
}  // namespace drivewatch::aging
