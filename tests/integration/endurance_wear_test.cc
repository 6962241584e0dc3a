// SPDX-License-Identifier: Apache-2.0
// The endurance phase's view of the drive: the SMART counters it stops on
// (percentage_used, available spare) and the write amplification it records
// per pass from the OCP SMART / Health Information Extended log (C0h). The
// writes are real (io_uring, O_DIRECT, on a file target); the controller is
// a fake (WearingDrive below).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <stop_token>

#include "aging/history/history.h"
#include "aging/phases/endurance.h"
#include "aging/runner/phase_lock.h"
#include "aging/runner/phase_runner.h"
#include "tests/integration/phase_run_fixture.h"
#include "exporter/metric_store.h"
#include "exporter/phase_service.h"
#include "probes/drive/drive_layer.h"
#include "probes/drive/ocp_smart_log.h"
#include "probes/drive/smart_log.h"

namespace drivewatch::aging {
namespace {

constexpr std::uint64_t kTargetBytes = 16u << 20;

// A fake controller that wears as it is written. A fake because no real
// part here wears on cue: QEMU's NVMe keeps Percentage Used at 0, has no
// C0h log, and a real drive on the test machine is not ours to wear out.
// Each SMART / Health read adds `used_step` to Percentage Used and takes
// `spare_step` off Available Spare (threshold 10 %); the n-th C0h read (from
// 0) reports n * waf * kTargetBytes physical media bytes written, above
// 2^64, so a run whose passes each write kTargetBytes of host data sees
// `waf` per pass.
struct WearingDrive {
  int used_step = 0;
  int spare_step = 0;
  double waf = 3;
  int used = 0;
  int spare = 100;
  int c0_reads = 0;
  bool has_c0 = true;
};

class WearingController : public Controller {
 public:
  explicit WearingController(std::shared_ptr<WearingDrive> d) : d_(std::move(d)) {}
  Expected<Bytes> Identify(std::uint8_t, std::uint32_t) override {
    return Bytes(4096, 0);  // CTRATT 0: no UUID List, so the C0h log is read at UUID index 0
  }
  Expected<Bytes> GetLogPage(std::uint8_t lid, std::uint32_t, std::size_t length) override {
    Bytes page(length, 0);
    if (lid == kSmartLogId && length >= kSmartLogSize) {
      d_->used += d_->used_step;
      d_->spare = std::max(0, d_->spare - d_->spare_step);
      page[1] = 0x36;  // 310 K
      page[2] = 0x01;
      page[3] = static_cast<std::uint8_t>(d_->spare);
      page[4] = 10;
      page[5] = static_cast<std::uint8_t>(d_->used);
      return page;
    }
    if (lid == kOcpSmartExtendedLogId && d_->has_c0 && length >= kOcpSmartExtendedLogSize) {
      unsigned __int128 physical =
          static_cast<unsigned __int128>(d_->c0_reads++ * d_->waf * kTargetBytes) +
          (static_cast<unsigned __int128>(1) << 64);
      for (int i = 0; i < 16; ++i) page[i] = static_cast<std::uint8_t>(physical >> (8 * i));
      page[494] = 3;  // Log Page Version 0003h
      std::copy(kOcpSmartExtendedGuid.begin(), kOcpSmartExtendedGuid.end(), page.begin() + 496);
      return page;
    }
    return Error{EINVAL, 0x4002, "get log page: invalid log page"};
  }
  Expected<FeatureValue> GetFeature(std::uint8_t, std::uint32_t, std::size_t) override {
    return Error{EINVAL, 0x4002, "get features: invalid field"};
  }

 private:
  std::shared_ptr<WearingDrive> d_;
};

class EnduranceWearTest : public PhaseRunFixture {
 protected:
  void SetUp() override {
    PhaseRunFixture::SetUp();
    options_.controller = [this](const std::string&) {
      return std::make_unique<WearingController>(drive_);
    };
    config::AgingTarget t = DataFileTarget("t", kTargetBytes);
    config_.aging.targets = {t};
  }

  // The config's one phase: endurance "wear" on target t.
  void UsePhase(const config::EnduranceParams& p) {
    config::PhaseConfig c;
    c.name = "wear";
    c.target = "t";
    c.params = p;
    config_.aging.phases = {c};
  }
  Json Run(config::EnduranceParams p) {
    UsePhase(p);
    auto r = RunPhase(config_, "wear", options_, {}, nullptr);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? *r : Json();
  }
  // Runs "wear" under `observer`, which stops it through its own `stop`
  // once it has what it watches for (CrashBetweenSaves below).
  template <class Observer>
  void RunUntil(const config::EnduranceParams& p, Observer& observer) {
    UsePhase(p);
    auto r = RunPhase(config_, "wear", options_, observer.stop.get_token(), &observer);
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_FALSE(observer.checkpoint_after_2.empty()) << DumpJson(*r, 2);
    ASSERT_FALSE(observer.progress_after_1.empty());
  }

  std::shared_ptr<WearingDrive> drive_ = std::make_shared<WearingDrive>();
};

TEST_F(EnduranceWearTest, EachPassRecordsItsWriteAmplificationFromTheOcpLog) {
  config::EnduranceParams p;
  p.drive_writes = 2;
  const Json r = Run(p);
  ASSERT_EQ(AsString(*Find(r, "outcome")), "completed") << DumpJson(r, 2);
  const Json* passes = Find(*Find(r, "series"), "passes");
  ASSERT_NE(passes, nullptr) << DumpJson(r, 2);
  ASSERT_EQ(Items(*passes).size(), 2u) << DumpJson(r, 2);
  for (const Json& pass : Items(*passes)) {
    EXPECT_EQ(AsDouble(*Find(pass, "host_bytes")), static_cast<double>(kTargetBytes));
    ASSERT_NE(Find(pass, "waf_ratio"), nullptr) << DumpJson(pass, 2);
    EXPECT_NEAR(AsDouble(*Find(pass, "waf_ratio")), 3.0, 1e-9);
    EXPECT_EQ(AsDouble(*Find(pass, "available_spare_percent")), 100);
    EXPECT_NEAR(AsDouble(*Find(pass, "temperature_celsius")), 310 - 273.15, 1e-9);
  }
  EXPECT_NEAR(AsDouble(*Find(*Find(r, "results"), "waf_ratio")), 3.0, 1e-9);
}

// The step records of the history (one per endurance pass), by pass.
std::vector<Json> PassRecords(const std::string& state_directory) {
  auto h = HistoryFile(HistoryPath(state_directory)).Read();
  EXPECT_TRUE(h) << (h ? "" : h.error().message);
  std::vector<Json> out;
  if (h) {
    for (const Json& r : h->records) {
      if (IsStepRecord(r)) out.push_back(r);
    }
  }
  return out;
}

// Lets an ended test go on (as if it had stopped short of its end), so a
// second run resumes it.
void Reopen(const std::string& state_directory) {
  const std::string path = EnduranceProgressPath(state_directory, "wear");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  auto j = ParseJson(text.str());
  ASSERT_TRUE(j) << path;
  (*j)["ended"] = false;
  (*j)["end_reason"] = "";
  std::ofstream(path, std::ios::trunc) << DumpJson(*j) << "\n";
}

TEST_F(EnduranceWearTest, EachPassIsARecordOfTheHistoryOnce) {
  config::EnduranceParams p;
  p.drive_writes = 2;
  const Json r = Run(p);
  ASSERT_EQ(AsString(*Find(r, "outcome")), "completed") << DumpJson(r, 2);
  std::vector<Json> passes = PassRecords(config_.state_directory);
  ASSERT_EQ(passes.size(), 2u);
  for (std::size_t i = 0; i < passes.size(); ++i) {
    const Json& pass = passes[i];
    EXPECT_EQ(AsString(*Find(pass, "run")), AsString(*Find(r, "run")));
    EXPECT_EQ(AsString(*Find(pass, "phase")), "wear");
    EXPECT_EQ(AsString(*Find(pass, "kind")), "endurance");
    EXPECT_EQ(AsDouble(*Find(pass, "step")), static_cast<double>(i + 1));
    EXPECT_EQ(AsString(*Find(pass, "test")), AsString(*Find(passes[0], "test")));
    const Json* results = Find(pass, "results");
    ASSERT_NE(results, nullptr) << DumpJson(pass, 2);
    EXPECT_EQ(AsDouble(*Find(*results, "host_bytes")), static_cast<double>(kTargetBytes));
    EXPECT_NEAR(AsDouble(*Find(*results, "waf_ratio")), 3.0, 1e-9);
    EXPECT_NE(Find(*results, "percentage_used"), nullptr);
    EXPECT_NE(Find(*results, "media_errors"), nullptr);
    EXPECT_EQ(AsDouble(*Find(*results, "available_spare_percent")), 100);
    EXPECT_NEAR(AsDouble(*Find(*results, "temperature_celsius")), 310 - 273.15, 1e-9);
  }
  // A step is not a run: the table shows it as one, and the phase's last
  // run is still the run record.
  auto h = HistoryFile(HistoryPath(config_.state_directory)).Read();
  ASSERT_TRUE(h);
  const std::string table = RenderHistory(h->records, {}, HistoryFormat::kTable);
  EXPECT_NE(table.find("step 1"), std::string::npos) << table;
  EXPECT_NE(table.find("step 2"), std::string::npos) << table;
  EXPECT_TRUE(IsRunRecord(h->records.back())) << DumpJson(h->records.back(), 2);

  // Resumed, the test does not put its last pass on record again (the
  // resume's catch-up finds it there), and goes on with pass 3.
  Reopen(config_.state_directory);
  p.drive_writes = 3;
  const Json again = Run(p);
  ASSERT_EQ(AsString(*Find(again, "outcome")), "completed") << DumpJson(again, 2);
  passes = PassRecords(config_.state_directory);
  ASSERT_EQ(passes.size(), 3u);
  EXPECT_EQ(AsDouble(*Find(passes[2], "step")), 3);
  EXPECT_EQ(AsString(*Find(passes[2], "run")), AsString(*Find(again, "run")));
  EXPECT_EQ(AsString(*Find(passes[2], "test")), AsString(*Find(passes[0], "test")));
}

// The value of `name`{...phase="wear"...} in `text`, or -1.
double PhaseSample(const std::string& text, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(text, m,
                         std::regex(name + R"(\{[^}]*phase="wear"[^}]*\} ([0-9.e+-]+))"))) {
    return -1;
  }
  return std::stod(m[1].str());
}

TEST_F(EnduranceWearTest, TheTestsProgressIsExportedFromItsProgressFileBetweenRuns) {
  config::EnduranceParams p;
  p.drive_writes = 2;
  ASSERT_EQ(AsString(*Find(Run(p), "outcome")), "completed");
  {
    MetricStore store;
    PhaseService service(store, nullptr, nullptr);
    service.Start(config_);  // a daemon started after the run: the file is all it has
    const std::string text = *store.Render();
    service.Stop();
    EXPECT_EQ(PhaseSample(text, "drivewatch_endurance_host_written_bytes"),
              2.0 * static_cast<double>(kTargetBytes)) << text;
    EXPECT_EQ(PhaseSample(text, "drivewatch_endurance_drive_writes"), 2) << text;
    EXPECT_EQ(PhaseSample(text, "drivewatch_endurance_ended"), 1) << text;
    EXPECT_NEAR(PhaseSample(text, "drivewatch_endurance_last_pass_write_amplification_ratio"), 3.0,
                1e-9) << text;
    EXPECT_GE(PhaseSample(text, "drivewatch_endurance_last_pass_percentage_used_ratio"), 0) << text;
  }
  // Mid-pass: the fraction of the current pass counts.
  const std::string path = EnduranceProgressPath(config_.state_directory, "wear");
  {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    auto j = ParseJson(text.str());
    ASSERT_TRUE(j);
    (*j)["ended"] = false;
    (*j)["end_reason"] = "";
    (*j)["pass_bytes"] = kTargetBytes / 4;
    std::ofstream(path, std::ios::trunc) << DumpJson(*j) << "\n";
  }
  {
    MetricStore store;
    PhaseService service(store, nullptr, nullptr);
    service.Start(config_);
    const std::string text = *store.Render();
    service.Stop();
    EXPECT_DOUBLE_EQ(PhaseSample(text, "drivewatch_endurance_drive_writes"), 2.25) << text;
    EXPECT_EQ(PhaseSample(text, "drivewatch_endurance_ended"), 0) << text;
  }
  // A damaged file exports nothing of the test, and the service goes on.
  std::ofstream(path, std::ios::trunc) << "{\"workload\": 7}\n";
  {
    MetricStore store;
    PhaseService service(store, nullptr, nullptr);
    service.Start(config_);
    const std::string text = *store.Render();
    service.Stop();
    EXPECT_EQ(PhaseSample(text, "drivewatch_endurance_drive_writes"), -1) << text;
    EXPECT_NE(text.find("drivewatch_phase_state"), std::string::npos) << text;
  }
}

TEST_F(EnduranceWearTest, APassMissingFromTheHistoryIsRecordedWhenTheTestResumes) {
  // A crash after the progress file took pass 1 and before the history
  // did: the history has the run, not the pass.
  config::EnduranceParams p;
  p.drive_writes = 1;
  ASSERT_EQ(AsString(*Find(Run(p), "outcome")), "completed");
  const std::string path = HistoryPath(config_.state_directory);
  auto h = HistoryFile(path).Read();
  ASSERT_TRUE(h);
  std::filesystem::remove(path);
  HistoryFile rewritten(path);
  for (const Json& r : h->records) {
    if (!IsStepRecord(r)) {
      ASSERT_TRUE(rewritten.Append(r));
    }
  }
  ASSERT_TRUE(PassRecords(config_.state_directory).empty());

  Reopen(config_.state_directory);
  p.drive_writes = 2;
  const Json again = Run(p);
  ASSERT_EQ(AsString(*Find(again, "outcome")), "completed") << DumpJson(again, 2);
  const std::vector<Json> passes = PassRecords(config_.state_directory);
  ASSERT_EQ(passes.size(), 2u);
  EXPECT_EQ(AsDouble(*Find(passes[0], "step")), 1);
  EXPECT_EQ(AsDouble(*Find(passes[1], "step")), 2);
  EXPECT_EQ(AsString(*Find(passes[0], "run")), AsString(*Find(again, "run")))
      << "the resumed run records the pass it found missing";
}

double Result(const Json& record, const std::string& key) {
  const Json* results = Find(record, "results");
  const Json* v = results ? Find(*results, key) : nullptr;
  return v ? AsDouble(*v) : -1;
}

std::string FileText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Leaves what a crash between a chunk's checkpoint and its progress save
// leaves: the checkpoint after chunk 2, the progress file after chunk 1.
// The observer is called on the run's thread as each chunk starts, when the
// previous chunk's checkpoint and progress are both on disk.
class CrashBetweenSaves : public PhaseObserver {
 public:
  explicit CrashBetweenSaves(std::string state) : state_(std::move(state)) {}
  void OnProgress(const PhaseStatus&) override {
    const std::string text = FileText(EnduranceProgressPath(state_, "wear"));
    auto j = ParseJson(text);
    if (text.empty() || !j || !Find(*j, "chunk")) return;
    const double chunk = AsDouble(*Find(*j, "chunk"));
    if (chunk == 1 && progress_after_1.empty()) progress_after_1 = text;
    if (chunk == 2 && checkpoint_after_2.empty()) {
      checkpoint_after_2 = FileText(CheckpointPath(state_, "wear"));
      history_before = FileText(HistoryPath(state_));
      stop.request_stop();
    }
  }
  void OnEnd(const Json&) override {}
  // Puts the state directory back as the crash left it.
  void Crash() const {
    std::ofstream(HistoryPath(state_), std::ios::trunc) << history_before;
    std::ofstream(CheckpointPath(state_, "wear"), std::ios::trunc) << checkpoint_after_2;
    std::ofstream(EnduranceProgressPath(state_, "wear"), std::ios::trunc) << progress_after_1;
  }
  std::string progress_after_1, checkpoint_after_2, history_before;
  std::stop_source stop;  // the run's: stopped once the snapshots are taken

 private:
  std::string state_;
};

// A run killed after a chunk's checkpoint and before its progress save:
// recovery writes the progress back from the checkpoint, so the killed run's
// record and the progress file agree to the byte, and the test resumes after
// the chunk, counting it once.
TEST_F(EnduranceWearTest, AKillBetweenTheCheckpointAndTheProgressSaveLosesNothing) {
  config::EnduranceParams p;
  p.drive_writes = 1;
  CrashBetweenSaves crash(config_.state_directory);
  ASSERT_NO_FATAL_FAILURE(RunUntil(p, crash));
  crash.Crash();

  const std::vector<Json> recovered = RecoverInterrupted(config_.state_directory);
  ASSERT_EQ(recovered.size(), 1u);
  const Json& killed = recovered[0];
  EXPECT_EQ(AsString(*Find(killed, "outcome")), "interrupted");
  EXPECT_NE(AsString(*Find(killed, "reason")).find(
                "endurance/wear.progress brought up to its last checkpoint"),
            std::string::npos)
      << AsString(*Find(killed, "reason"));
  EXPECT_EQ(Find(killed, "resume"), nullptr) << "the resume state stays out of the history";
  auto progress = LoadEnduranceProgress(EnduranceProgressPath(config_.state_directory, "wear"));
  ASSERT_TRUE(progress) << progress.error().message;
  const std::uint64_t chunk = kTargetBytes / 16;
  EXPECT_EQ(progress->chunk, 2u);
  EXPECT_EQ(progress->host_bytes, 2 * chunk);
  EXPECT_EQ(Result(killed, "host_written_bytes"), static_cast<double>(progress->host_bytes));

  const Json resumed = Run(p);
  ASSERT_EQ(AsString(*Find(resumed, "outcome")), "completed") << DumpJson(resumed, 2);
  EXPECT_EQ(Result(resumed, "resumed_at_bytes"), static_cast<double>(2 * chunk));
  EXPECT_EQ(Result(resumed, "run_written_bytes"), static_cast<double>(kTargetBytes - 2 * chunk));
  EXPECT_EQ(Result(resumed, "host_written_bytes"), static_cast<double>(kTargetBytes));
  EXPECT_EQ(PassRecords(config_.state_directory).size(), 1u);
}

// `endurance reset` is refused while a run holds the target, records a
// killed run's checkpoint before it (so the kept progress is the
// checkpoint's, not lost), and keeps the progress file aside.
TEST_F(EnduranceWearTest, AResetWaitsForTheRunAndKeepsWhatAKilledRunLeft) {
  config::EnduranceParams p;
  p.drive_writes = 1;
  CrashBetweenSaves crash(config_.state_directory);
  ASSERT_NO_FATAL_FAILURE(RunUntil(p, crash));
  crash.Crash();  // the checkpoint after chunk 2, the progress after chunk 1
  const std::string progress = EnduranceProgressPath(config_.state_directory, "wear");
  {
    auto held = phase_detail::StateLock::Take(
        phase_detail::TargetLockPath(config_.state_directory, "t"), "a run");
    ASSERT_TRUE(held);
    auto busy = ResetEnduranceTest(config_.state_directory, "wear", "t");
    ASSERT_FALSE(busy);
    EXPECT_EQ(busy.error().errnum, EBUSY);
    EXPECT_NE(busy.error().message.find("target t is busy: a run"), std::string::npos)
        << busy.error().message;
    EXPECT_EQ(FileText(progress), crash.progress_after_1) << "nothing changed while busy";
  }
  auto done = ResetEnduranceTest(config_.state_directory, "wear", "t");
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_FALSE(std::filesystem::exists(progress));
  EXPECT_FALSE(std::filesystem::exists(CheckpointPath(config_.state_directory, "wear")));
  std::vector<std::string> kept;
  for (const auto& e : std::filesystem::directory_iterator(config_.state_directory + "/endurance")) {
    kept.push_back(e.path().string());
  }
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].rfind(progress + ".reset-", 0), 0u) << kept[0];
  auto was = LoadEnduranceProgress(kept[0]);
  ASSERT_TRUE(was) << was.error().message;
  EXPECT_EQ(was->chunk, 2u) << "the killed run's checkpoint was recorded, and its progress kept";
  EXPECT_NE(done->find("(pass 1, " + std::to_string(2 * (kTargetBytes / 16)) + " bytes written)"),
            std::string::npos)
      << *done;
  auto none = ResetEnduranceTest(config_.state_directory, "wear", "t");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().errnum, ENOENT);
  // The next run begins a new test.
  const Json fresh = Run(p);
  EXPECT_EQ(AsString(*Find(fresh, "outcome")), "completed") << DumpJson(fresh, 2);
  EXPECT_EQ(Result(fresh, "resumed_at_bytes"), 0);
}

TEST_F(EnduranceWearTest, ADriveWithoutTheOcpLogHasNoWriteAmplification) {
  drive_->has_c0 = false;
  config::EnduranceParams p;
  p.drive_writes = 1;
  const Json r = Run(p);
  ASSERT_EQ(AsString(*Find(r, "outcome")), "completed") << DumpJson(r, 2);
  const Json* passes = Find(*Find(r, "series"), "passes");
  ASSERT_EQ(Items(*passes).size(), 1u);
  EXPECT_EQ(Find(Items(*passes)[0], "waf_ratio"), nullptr);
  EXPECT_NE(Find(Items(*passes)[0], "percentage_used"), nullptr);
  EXPECT_EQ(Find(*Find(r, "results"), "waf_ratio"), nullptr);
}

TEST_F(EnduranceWearTest, StopsWhenPercentageUsedReachesItsTarget) {
  drive_->used_step = 1;
  config::EnduranceParams p;
  p.drive_writes = 0;  // no bound: only the wear target ends it
  p.percentage_used = 5;
  const Json r = Run(p);
  ASSERT_EQ(AsString(*Find(r, "outcome")), "completed") << DumpJson(r, 2);
  EXPECT_EQ(drive_->used, 5);
  EXPECT_DOUBLE_EQ(AsDouble(*Find(*Find(r, "results"), "percentage_used_ratio")), 0.05);
  EXPECT_LT(AsDouble(*Find(*Find(r, "results"), "host_written_bytes")),
            static_cast<double>(kTargetBytes)) << "it wrote on past the wear target";
  // The test is over: the next run is refused until the progress file goes.
  const Json again = Run(p);
  EXPECT_NE(AsString(*Find(again, "outcome")), "completed") << DumpJson(again, 2);
}

TEST_F(EnduranceWearTest, AbortsWhenAvailableSpareReachesItsThreshold) {
  drive_->spare_step = 30;  // 70, 40, 10: at the threshold on the third read
  config::EnduranceParams p;
  p.drive_writes = 100;
  const Json r = Run(p);
  const std::string outcome = AsString(*Find(r, "outcome"));
  EXPECT_TRUE(outcome == "failed" || outcome == "aborted") << DumpJson(r, 2);
  EXPECT_NE(DumpJson(r).find("available spare 10% is at or below its threshold 10%"),
            std::string::npos) << DumpJson(r, 2);
  EXPECT_LT(AsDouble(*Find(*Find(r, "results"), "host_written_bytes")),
            static_cast<double>(kTargetBytes));
}

}  // namespace
}  // namespace drivewatch::aging
