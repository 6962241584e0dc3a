// SPDX-License-Identifier: Apache-2.0
// The power-states phase's story (aging/phases/power_states_phase.cc)
// against the fake context (fake_phase_context.h) and the fake drive of
// tests/common/fake_power_states_drive.h (five states, ps3 and ps4
// non-operational): the commands it sends, each state's power and exit
// latency, the drive's settings put back whatever the end; a target
// without a controller or of another serial, a stop, a failed read or
// workload. tests/integration/power_states_test.cc runs it with real reads,
// through the runner and its recovery.
#include <gtest/gtest.h>

#include "aging/phases/phase.h"
#include "tests/common/fake_power_states_drive.h"
#include "tests/unit/aging/fake_phase_context.h"

namespace drivewatch::aging {
namespace {

using std::chrono::milliseconds;
using testing::FakePhaseContext;
using testing::FakePowerStatesController;
using testing::FakePowerStatesDrive;
using testing::Result;

constexpr std::chrono::microseconds kRead{50};

class PowerStatesPhaseTest : public ::testing::Test {
 protected:
  PowerStatesPhaseTest() : ctrl_(drive_), ctx_(Params(), {10}) {
    ctx_.ctrl = &ctrl_;
    // A read takes 50 µs, plus the state's exit latency when it wakes the drive.
    ctx_.timed_read = [this](std::uint64_t offset, std::uint32_t) {
      reads_.push_back(offset);
      return Expected<std::chrono::nanoseconds>(kRead + drive_->WakeForRead());
    };
  }
  static config::PowerStatesParams Params() {
    config::PowerStatesParams p;
    p.dwell = milliseconds{20};
    p.exit_samples = 3;
    p.settle = milliseconds{1};
    return p;
  }
  std::shared_ptr<FakePowerStatesDrive> drive_ = std::make_shared<FakePowerStatesDrive>();
  FakePowerStatesController ctrl_;
  FakePhaseContext ctx_;
  std::vector<std::uint64_t> reads_;
};

TEST_F(PowerStatesPhaseTest, EachStateEnteredMeasuredAndTheDrivesSettingsPutBack) {
  drive_->refused = {2};
  PhaseReport report;
  ASSERT_TRUE(RunKind(Params(), ctx_, report));
  const Json& r = report.results;
  // Each state entered, then again before each exit-latency read; ps2
  // refused once and skipped; then the state found at the start (ps3).
  EXPECT_EQ(drive_->set_states, (std::vector<std::uint32_t>{0, 0, 0, 0, 1, 1, 1, 1, 2, 3, 3, 3,
                                                            3, 4, 4, 4, 4, 3}));
  EXPECT_EQ(ctx_.idles[0].first, "ps0 power");
  EXPECT_EQ(ctx_.idles[1].first, "ps0 exit latency");
  EXPECT_EQ(ctx_.idles[1].second, milliseconds{1});
  EXPECT_EQ(reads_.size(), 12u);
  // PSD estimates: IDLP when reported (ps4 0.0050 W), else MP.
  EXPECT_DOUBLE_EQ(Result(report, "ps0_power_psd_estimate_watts"), 8.0) << DumpJson(r, 2);
  EXPECT_DOUBLE_EQ(Result(report, "ps3_power_psd_estimate_watts"), 0.07);
  EXPECT_DOUBLE_EQ(Result(report, "ps4_power_psd_estimate_watts"), 0.005);
  EXPECT_DOUBLE_EQ(Result(report, "ps0_max_power_declared_watts"), 8.0);
  EXPECT_DOUBLE_EQ(Result(report, "ps4_exit_latency_declared_seconds"), 0.008);
  // Exit latency: the read alone in an operational state, the read and the
  // state's EXLAT in a non-operational one.
  EXPECT_DOUBLE_EQ(Result(report, "ps0_exit_latency_p50_seconds"), 50e-6);
  EXPECT_DOUBLE_EQ(Result(report, "ps3_exit_latency_p50_seconds"), 0.0012 + 50e-6);
  EXPECT_DOUBLE_EQ(Result(report, "ps4_exit_latency_max_seconds"), 0.008 + 50e-6);
  EXPECT_LT(Result(report, "ps2_exit_latency_p50_seconds"), 0);
  EXPECT_DOUBLE_EQ(Result(report, "power_states_supported_ratio"), 0.8);
  const auto& states = Items(*Find(report.series, "power_states"));
  ASSERT_EQ(states.size(), 5u);
  EXPECT_FALSE(AsBool(*Find(states[2], "supported"), true));
  EXPECT_EQ(AsString(*Find(states[2], "error")),
            "fake: set features: Invalid Field in Command (0x4002)");
  EXPECT_TRUE(AsBool(*Find(states[4], "confirmed")));
  EXPECT_EQ(AsUint(*Find(states[4], "exit_samples")), 3u);
  // Idle and 10 IOPS with the drive's settings back (ps3).
  EXPECT_DOUBLE_EQ(Result(report, "idle_power_psd_estimate_watts"), 0.07);
  ASSERT_EQ(ctx_.steps, std::vector<std::string>{"10 IOPS power"});
  const WorkloadSpec& load = ctx_.specs[0];
  EXPECT_EQ(load.access, Access::kRandom);
  EXPECT_EQ(load.read_percent, 100u);
  EXPECT_EQ(load.block_size, 4096u);
  EXPECT_EQ(load.queue_depth, 1u);
  EXPECT_DOUBLE_EQ(load.rate_iops, 10);
  EXPECT_EQ(load.max_time, milliseconds{20});
  EXPECT_DOUBLE_EQ(Result(report, "at_10_iops_iops"), 10);

  // APST off while the states ran, back on with its table after.
  EXPECT_EQ(drive_->apst_sets, 2);
  EXPECT_TRUE(drive_->apst_enabled);
  EXPECT_EQ(drive_->state, 3);
  // The settings were in the checkpoints until they were back.
  EXPECT_EQ(AsUint(*Find(ctx_.checkpoints.front().restore, "power_state")), 3u);
  EXPECT_EQ(AsString(*Find(ctx_.checkpoints.front().restore, "serial")), drive_->Id().serial);
  EXPECT_TRUE(ctx_.checkpoints.back().restore.is_null());
  EXPECT_TRUE(report.restore.is_null());
}

TEST_F(PowerStatesPhaseTest, AStopPutsTheSettingsBackAndKeepsThemInTheReport) {
  ctx_.stop_at_step = 2;  // ps0's first exit-latency settle
  PhaseReport report;
  ASSERT_TRUE(RunKind(Params(), ctx_, report));
  EXPECT_TRUE(reads_.empty());
  EXPECT_TRUE(ctx_.specs.empty());
  EXPECT_DOUBLE_EQ(Result(report, "ps0_power_psd_estimate_watts"), 8.0);
  EXPECT_EQ(Find(report.results, "ps1_power_psd_estimate_watts"), nullptr);
  EXPECT_EQ(Find(report.results, "idle_power_psd_estimate_watts"), nullptr);
  EXPECT_EQ(drive_->state, 3);
  EXPECT_TRUE(drive_->apst_enabled);
  EXPECT_EQ(drive_->apst_sets, 2);
  EXPECT_FALSE(report.restore.is_null());
}

TEST_F(PowerStatesPhaseTest, AFailedReadOrWorkloadEndsThePhaseWithTheSettingsBack) {
  {
    ctx_.timed_read = [](std::uint64_t, std::uint32_t) -> Expected<std::chrono::nanoseconds> {
      return Error{EIO, -1, "t: read of 4096 bytes at 0: Input/output error"};
    };
    PhaseReport report;
    const Status s = RunKind(Params(), ctx_, report);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().message, "t: read of 4096 bytes at 0: Input/output error");
    EXPECT_EQ(drive_->state, 3);
    EXPECT_TRUE(drive_->apst_enabled);
  }
  {
    FakePhaseContext ctx(Params());
    ctx.ctrl = &ctrl_;
    ctx.failing_steps.emplace("10 IOPS power", Error{EIO, -1, "10 IOPS power: cannot start"});
    PhaseReport report;
    const Status s = RunKind(Params(), ctx, report);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().message, "10 IOPS power: cannot start");
    EXPECT_GT(Result(report, "idle_power_psd_estimate_watts"), 0);
    EXPECT_EQ(drive_->state, 3);
  }
}

TEST_F(PowerStatesPhaseTest, ATargetWithoutAControllerOrOfAnotherSerialIsRefused) {
  {
    FakePhaseContext ctx(Params());
    PhaseReport report;
    const Status s = RunKind(Params(), ctx, report);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().errnum, EINVAL);
    EXPECT_EQ(s.error().message,
              "target t is not an NVMe namespace: power-states needs admin commands "
              "(Identify, Set Features 02h and 0Ch) to the drive's controller");
  }
  ctx_.is_nvme = true;
  ctx_.facts["serial"] = "SOMEONE-ELSE";
  PhaseReport report;
  const Status s = RunKind(Params(), ctx_, report);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().errnum, EPERM);
  EXPECT_EQ(s.error().message, "target t: the controller reports serial \"" +
                                   drive_->Id().serial +
                                   "\", not \"SOMEONE-ELSE\" (aging.targets.serial)");
  EXPECT_TRUE(drive_->set_states.empty());
  EXPECT_EQ(drive_->apst_sets, 0);
}

}  // namespace
}  // namespace drivewatch::aging
