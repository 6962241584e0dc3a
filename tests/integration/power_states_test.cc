// SPDX-License-Identifier: Apache-2.0
// The power-states phase: every power state of a drive with five (the
// handmade PM981 fixture, tests/fixtures/handmade: ps3 and ps4
// non-operational, ENLAT/EXLAT 210/1200 and 2000/8000 us), its power and
// its measured exit latency; APST off while it runs and restored after,
// also on abort and by crash recovery; an unsupported state recorded and
// skipped; a target without a serial refused; the drive marked busy. The
// reads are real (a loop device or a file, O_DIRECT); the controller is a
// fake (tests/common/fake_power_states_drive.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "aging/history/history.h"
#include "aging/phases/phase.h"
#include "aging/runner/phase_runner.h"
#include "exporter/metric_store.h"
#include "exporter/phase_service.h"
#include "probes/drive/features.h"
#include "probes/drive/identify.h"
#include "probes/latency/read_latency_probe.h"
#include "tests/common/fake_power_states_drive.h"
#include "tests/common/recorded_drive_layer.h"
#include "tests/integration/loop_device.h"

namespace drivewatch::aging {
namespace {

using drivewatch::testing::LoopDevice;
using drivewatch::testing::ReadFixture;
using std::chrono::milliseconds;

using FakeDrive = drivewatch::testing::FakePowerStatesDrive;
using FakeController = drivewatch::testing::FakePowerStatesController;
using drivewatch::testing::kHandmade;

// A phase context over a real file read with O_DIRECT and the fake
// controller: its TimedRead adds the fake drive's wake time to a real
// read, which the runner's context cannot (its reads reach a real device).
class FakeDriveContext : public PhaseContext {
 public:
  FakeDriveContext(std::shared_ptr<FakeDrive> d, const std::string& file)
      : d_(d), ctrl_(d) {
    phase_.name = "ps";
    phase_.target = "t";
    target_.name = "t";
    auto io = WorkloadTarget::Open(file, WorkloadTarget::kReadOnly);
    EXPECT_TRUE(io) << (io ? "" : io.error().message);
    if (io) io_ = std::move(*io);
  }
  const config::PhaseConfig& phase() const override { return phase_; }
  std::uint64_t capacity() const override { return io_->size() >> 20 << 20; }
  std::uint32_t logical_block_size() const override { return io_->logical_block_size(); }
  double fill_ratio() const override { return -1; }
  Expected<WorkloadResult> Run(const WorkloadSpec& spec, std::string_view, double,
                               double) override {
    return RunWorkload(*io_, spec, stop_.get_token());
  }
  bool Idle(std::chrono::nanoseconds d, std::string_view, double, double) override {
    std::this_thread::sleep_for(d);
    return !stopped();
  }
  bool stopped() const override { return stop_.stop_requested(); }
  void Checkpoint(const PhaseReport& report) override { checkpoints_.push_back(report.restore); }
  const config::AgingTarget& target() const override { return target_; }
  const std::string& state_directory() const override { return dir_; }
  int fd() const override { return io_->fd(); }
  bool nvme() const override { return false; }
  Json DriveFacts() const override { return Json::object(); }
  Controller* controller() override { return &ctrl_; }
  Expected<std::chrono::nanoseconds> TimedRead(std::uint64_t offset, std::uint32_t size) override {
    const auto wake = d_->WakeForRead();
    auto r = PhaseContext::TimedRead(offset, size);
    if (!r) return r;
    std::this_thread::sleep_for(wake);
    return *r + std::chrono::duration_cast<std::chrono::nanoseconds>(wake);
  }

  std::vector<Json> checkpoints_;

 private:
  std::shared_ptr<FakeDrive> d_;
  FakeController ctrl_;
  config::PhaseConfig phase_;
  config::AgingTarget target_;
  std::string dir_ = "/nonexistent";
  std::unique_ptr<WorkloadTarget> io_;
  std::stop_source stop_;
};

double Result(const Json& results, const std::string& key) {
  const Json* v = Find(results, key);
  return v ? AsDouble(*v, -1) : -1;
}

class PowerStatesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path("/var/tmp") /
           ("dw-ps-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    file_ = (dir_ / "data").string();
    std::ofstream(file_).close();
    std::filesystem::resize_file(file_, 8u << 20);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  config::PowerStatesParams Quick() {
    config::PowerStatesParams p;
    p.dwell = milliseconds{1'100};
    p.exit_samples = 5;
    p.settle = milliseconds{5};
    return p;
  }
  std::filesystem::path dir_;
  std::string file_;
};

TEST_F(PowerStatesTest, EveryStateItsPowerAndExitLatencyAgainstTheDeclaredOnes) {
  auto drive = std::make_shared<FakeDrive>();
  drive->refused = {2};
  FakeDriveContext ctx(drive, file_);
  PhaseReport report;
  ASSERT_TRUE(RunKind(Quick(), ctx, report));
  const Json& r = report.results;

  // PSD estimates: IDLP when reported (ps4 0.0050 W), else MP.
  EXPECT_DOUBLE_EQ(Result(r, "ps0_power_psd_estimate_watts"), 8.0) << DumpJson(r, 2);
  EXPECT_DOUBLE_EQ(Result(r, "ps1_power_psd_estimate_watts"), 6.3);
  EXPECT_DOUBLE_EQ(Result(r, "ps3_power_psd_estimate_watts"), 0.07);
  EXPECT_DOUBLE_EQ(Result(r, "ps4_power_psd_estimate_watts"), 0.005);
  EXPECT_DOUBLE_EQ(Result(r, "ps4_exit_latency_declared_seconds"), 0.008);
  EXPECT_DOUBLE_EQ(Result(r, "ps3_entry_latency_declared_seconds"), 0.00021);
  // Measured exit latency: the fake's EXLAT plus a real read.
  EXPECT_GE(Result(r, "ps3_exit_latency_p50_seconds"), 0.0012);
  EXPECT_LT(Result(r, "ps3_exit_latency_p50_seconds"), 0.0012 + 0.05);
  EXPECT_GE(Result(r, "ps4_exit_latency_p50_seconds"), 0.008);
  EXPECT_GE(Result(r, "ps4_exit_latency_max_seconds"), Result(r, "ps4_exit_latency_p50_seconds"));
  // Operational: no wake, a plain read, faster than either.
  EXPECT_LT(Result(r, "ps0_exit_latency_p50_seconds"), Result(r, "ps3_exit_latency_p50_seconds"));
  EXPECT_LT(Result(r, "ps3_exit_latency_p50_seconds"), Result(r, "ps4_exit_latency_p50_seconds"));
  // ps2 refused: unsupported, skipped, the rest measured.
  EXPECT_LT(Result(r, "ps2_exit_latency_p50_seconds"), 0);
  EXPECT_DOUBLE_EQ(Result(r, "power_states_supported_ratio"), 0.8);
  const auto& states = Items(*Find(report.series, "power_states"));
  ASSERT_EQ(states.size(), 5u);
  EXPECT_FALSE(AsBool(*Find(states[2], "supported"), true));
  EXPECT_TRUE(AsBool(*Find(states[4], "confirmed")));
  EXPECT_FALSE(AsBool(*Find(states[4], "operational"), true));
  // Idle and 10 IOPS, measured with the drive's settings back (ps3).
  EXPECT_DOUBLE_EQ(Result(r, "idle_power_psd_estimate_watts"), 0.07);
  EXPECT_GT(Result(r, "at_10_iops_iops"), 5);
  EXPECT_LT(Result(r, "at_10_iops_iops"), 12);
  EXPECT_GE(Result(r, "at_10_iops_power_psd_estimate_watts"), 0);

  // APST was off while the states ran, and is back, enabled, with its table.
  EXPECT_TRUE(drive->apst_enabled);
  EXPECT_EQ(drive->apst_table, ReadFixture(kHandmade / "feature-HANDMADE-PM981-0c.bin"));
  EXPECT_EQ(drive->apst_sets, 2);
  EXPECT_EQ(drive->state, 3);
  // The checkpoint carried the settings until they were back.
  ASSERT_GE(ctx.checkpoints_.size(), 2u);
  EXPECT_EQ(AsUint(*Find(ctx.checkpoints_.front(), "power_state")), 3u);
  EXPECT_TRUE(ctx.checkpoints_.back().is_null());
}

// QEMU's case (its feature 02h is not changeable): every state refused, the
// phase completes with each recorded unsupported, and the drive, never
// moved, is not sent a Set Features 02h to restore it.
TEST_F(PowerStatesTest, ADriveRefusingEveryStateIsRecordedAndNotRestored) {
  auto drive = std::make_shared<FakeDrive>();
  drive->refused = {0, 1, 2, 3, 4};
  FakeDriveContext ctx(drive, file_);
  PhaseReport report;
  ASSERT_TRUE(RunKind(Quick(), ctx, report));
  EXPECT_DOUBLE_EQ(Result(report.results, "power_states_supported_ratio"), 0);
  const auto& states = Items(*Find(report.series, "power_states"));
  ASSERT_EQ(states.size(), 5u);
  for (const Json& st : states) {
    EXPECT_FALSE(AsBool(*Find(st, "supported"), true));
    EXPECT_NE(AsString(*Find(st, "error")).find("Invalid Field"), std::string::npos);
  }
  EXPECT_EQ(drive->set_states, (std::vector<std::uint32_t>{0, 1, 2, 3, 4}))
      << "a Set Features 02h beyond one try per state";
  EXPECT_EQ(drive->state, 3);
  EXPECT_TRUE(drive->apst_enabled);
  EXPECT_GE(Result(report.results, "idle_power_psd_estimate_watts"), 0);
}

// The runner on a loop device with the fake controller: history, metrics,
// the drive busy while it runs, restore on abort, and recovery restoring a
// crashed run's settings.
class PowerStatesRunnerTest : public PowerStatesTest {
 protected:
  void SetUp() override {
    PowerStatesTest::SetUp();
    config_.state_directory = (dir_ / "state").string();
    options_.state_directory = config_.state_directory;
    options_.paths.study_register = config_.state_directory + "/register";
    options_.controller = [this](const std::string&) {
      return std::make_unique<FakeController>(drive_);
    };
  }
  config::PhaseConfig Phase(config::PowerStatesParams p) {
    config::PhaseConfig c;
    c.name = "ps";
    c.target = "loop";
    c.params = p;
    return c;
  }
  std::shared_ptr<FakeDrive> drive_ = std::make_shared<FakeDrive>();
  config::Config config_;
  PhaseRunnerOptions options_;
};

config::AgingTarget LoopTarget(const LoopDevice& loop) {
  config::AgingTarget t;
  t.name = "loop";
  t.block_device = loop.device();
  t.serial = loop.serial();
  return t;  // no destroy_data: power-states writes nothing
}

TEST_F(PowerStatesRunnerTest, RunsOnALoopDeviceIntoHistoryAndMetricsWithTheDriveBusy) {
  LoopDevice loop(16);
  if (loop.device().empty()) GTEST_SKIP() << "losetup failed (needs root)";
  config_.aging.targets = {LoopTarget(loop)};
  config_.aging.phases = {Phase(Quick())};
  const std::string before = [&] {
    std::ifstream in(loop.backing(), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();

  MetricStore store;
  DriveBusyBoard busy;
  std::string busy_seen;
  options_.on_drive_busy = [&](const std::string& serial, const std::string& phase) {
    busy.SetBusy(serial, "phase " + phase);
    busy_seen = busy.Busy(serial);
  };
  options_.on_drive_idle = [&](const std::string& serial) { busy.ClearBusy(serial); };
  auto r = RunPhase(config_, "ps", options_, {}, nullptr);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(AsString(*Find(*r, "outcome")), "completed") << DumpJson(*r, 2);
  EXPECT_EQ(busy_seen, "phase ps");
  EXPECT_EQ(busy.Busy(loop.serial()), "");
  EXPECT_EQ(AsString(*Find(*r, "kind")), "power-states");
  EXPECT_DOUBLE_EQ(Result(*Find(*r, "results"), "ps4_power_psd_estimate_watts"), 0.005);
  EXPECT_GT(Result(*Find(*r, "results"), "ps4_exit_latency_p50_seconds"), 0);
  EXPECT_EQ(Find(*r, "restore"), nullptr);  // checkpoint only
  EXPECT_EQ(drive_->state, 3);
  EXPECT_TRUE(drive_->apst_enabled);
  const std::string after = [&] {
    std::ifstream in(loop.backing(), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  EXPECT_EQ(after, before) << "power-states wrote to its target";

  PhaseService service(store, nullptr, nullptr);
  service.Start(config_);
  const std::string text = *store.Render();
  service.Stop();
  EXPECT_TRUE(std::regex_search(
      text, std::regex(R"(drivewatch_phase_result_seconds\{[^}]*measure="ps4_exit_latency_p50"[^}]*phase="ps")")))
      << text;
  // The time-weighted average of 0.07 W samples: 0.07 to a rounding.
  std::smatch ps3;
  ASSERT_TRUE(std::regex_search(
      text, ps3,
      std::regex(R"(drivewatch_phase_result_watts\{[^}]*measure="ps3_power_psd_estimate"[^}]*\} ([0-9.e-]+))")))
      << text;
  EXPECT_NEAR(std::stod(ps3[1].str()), 0.07, 1e-9) << text;
}

// The drive is busy while its state changes: the read latency probe (real,
// reading the same loop device at 100 IOPS) submits nothing from the moment
// the phase marks the drive busy until it is idle again, and every Set
// Features the phase sends, the APST ones included, falls in that span.
TEST_F(PowerStatesRunnerTest, TheReadLatencyProbePausesWhileTheDriveChangesState) {
  LoopDevice loop(16);
  if (loop.device().empty()) GTEST_SKIP() << "losetup failed (needs root)";
  config_.aging.targets = {LoopTarget(loop)};
  config_.aging.phases = {Phase(Quick())};

  ReadTarget target;
  target.kind = ReadTarget::Kind::kBlockDevice;
  target.labels = {{"target", "loop"}};
  target.path = loop.device();
  ReadLatencySettings settings;
  settings.rates = {100};
  ReadLatencyProbe probe(target, settings);
  std::jthread reader([&](std::stop_token stop) { probe.Run(stop); });
  for (int i = 0; i < 300 && probe.stats().reads < 5; ++i) {
    std::this_thread::sleep_for(milliseconds{10});
  }
  ASSERT_GE(probe.stats().reads, 5u) << "the probe does not read the loop device";

  DriveBusyBoard busy;
  std::mutex mu;
  std::chrono::steady_clock::time_point paused_at{};
  std::uint64_t reads_at_pause = 0, reads_at_idle = 0;
  int sets = 0, sets_while_busy = 0, sets_with_a_read_after_pause = 0;
  options_.on_drive_busy = [&](const std::string& serial, const std::string& phase) {
    busy.SetBusy(serial, "phase " + phase);
    probe.Pause();
    std::lock_guard lock(mu);
    paused_at = std::chrono::steady_clock::now();
    reads_at_pause = probe.stats().reads;
  };
  options_.on_drive_idle = [&](const std::string& serial) {
    busy.ClearBusy(serial);
    {
      std::lock_guard lock(mu);
      reads_at_idle = probe.stats().reads;
    }
    probe.Resume();
  };
  drive_->on_set_features = [&] {
    std::lock_guard lock(mu);
    ++sets;
    if (busy.Busy(loop.serial()) == "phase ps") ++sets_while_busy;
    if (probe.stats().last_submit > paused_at) ++sets_with_a_read_after_pause;
  };
  auto r = RunPhase(config_, "ps", options_, {}, nullptr);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(AsString(*Find(*r, "outcome")), "completed") << DumpJson(*r, 2);
  drive_->on_set_features = nullptr;
  {
    std::lock_guard lock(mu);
    EXPECT_GT(sets, 5) << "every state entered, APST off and back";
    EXPECT_EQ(sets_while_busy, sets);
    EXPECT_EQ(sets_with_a_read_after_pause, 0)
        << "the read latency probe submitted a read while the phase held the drive";
    // At most the one read in flight when the pause came completed after it.
    EXPECT_LE(reads_at_idle, reads_at_pause + 1);
  }
  // Idle again, the probe reads again.
  const std::uint64_t after = probe.stats().reads;
  for (int i = 0; i < 300 && probe.stats().reads < after + 5; ++i) {
    std::this_thread::sleep_for(milliseconds{10});
  }
  EXPECT_GE(probe.stats().reads, after + 5) << "the probe did not resume";
}

TEST_F(PowerStatesRunnerTest, AnAbortedRunRestoresAndACrashedOnesSettingsAreRestoredByRecovery) {
  LoopDevice loop(16);
  if (loop.device().empty()) GTEST_SKIP() << "losetup failed (needs root)";
  config_.aging.targets = {LoopTarget(loop)};
  auto p = Quick();
  p.dwell = milliseconds{30'000};
  config_.aging.phases = {Phase(p)};
  std::stop_source stop;
  std::thread t([&] {
    std::this_thread::sleep_for(milliseconds{1'500});
    stop.request_stop();
  });
  auto r = RunPhase(config_, "ps", options_, stop.get_token(), nullptr);
  t.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(AsString(*Find(*r, "outcome")), "aborted") << DumpJson(*r, 2);
  EXPECT_EQ(drive_->state, 3);
  EXPECT_TRUE(drive_->apst_enabled);

  // A crash: the checkpoint of a run that had put the drive in ps4 with
  // APST off. Recovery puts back what it saved.
  std::filesystem::create_directories(config_.state_directory + "/phases");
  {
    std::lock_guard lock(drive_->mu);
    drive_->state = 4;
    drive_->apst_enabled = false;
  }
  Json restore = Json::object();
  restore["kind"] = "power-states";
  restore["serial"] = drive_->Id().serial;
  restore["power_state"] = 3;
  Json apst = Json::object();
  apst["enabled"] = true;
  Json table = Json::array();
  for (std::uint8_t b : drive_->apst_table) table.push_back(std::uint64_t{b});
  apst["table"] = table;
  restore["apst"] = apst;
  Json c = Json::object();
  c["version"] = 1;
  c["run"] = "ps-crashed";
  c["phase"] = "ps";
  c["kind"] = "power-states";
  c["target"] = "loop";
  c["device"] = loop.device();
  c["start"] = 1.0;
  c["checkpoint"] = 2.0;
  c["restore"] = restore;
  std::ofstream(CheckpointPath(config_.state_directory, "ps")) << DumpJson(c) << "\n";
  const std::vector<Json> recovered =
      RecoverInterrupted(config_.state_directory, options_.controller);
  ASSERT_EQ(recovered.size(), 1u);
  EXPECT_EQ(drive_->state, 3);
  EXPECT_TRUE(drive_->apst_enabled);
  EXPECT_EQ(Find(recovered[0], "restore"), nullptr);
  EXPECT_NE(AsString(*Find(recovered[0], "reason")).find("restored power state 3"),
            std::string::npos)
      << DumpJson(recovered[0], 2);

  // Another drive behind the device now: nothing is sent, and it says why.
  restore["serial"] = "SOMEONE-ELSE";
  c["restore"] = restore;
  c["run"] = "ps-crashed-2";
  std::ofstream(CheckpointPath(config_.state_directory, "ps")) << DumpJson(c) << "\n";
  drive_->set_states.clear();
  const std::vector<Json> again = RecoverInterrupted(config_.state_directory, options_.controller);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_TRUE(drive_->set_states.empty());
  EXPECT_NE(AsString(*Find(again[0], "reason")).find("not restored"), std::string::npos);
}

TEST_F(PowerStatesRunnerTest, ATargetWithoutASerialIsRefused) {
  config::AgingTarget t;
  t.name = "loop";  // a directory target: no drive, no serial
  t.directory = dir_.string();
  t.file_size = 8u << 20;
  t.min_free_ratio = 0.01;
  config_.aging.targets = {t};
  config_.aging.phases = {Phase(Quick())};
  auto r = RunPhase(config_, "ps", options_, {}, nullptr);
  ASSERT_TRUE(r);
  EXPECT_EQ(AsString(*Find(*r, "outcome")), "refused");
  EXPECT_NE(AsString(*Find(*r, "reason")).find("names no drive"), std::string::npos)
      << DumpJson(*r, 2);
  EXPECT_TRUE(drive_->set_states.empty());
}

}  // namespace
}  // namespace drivewatch::aging
