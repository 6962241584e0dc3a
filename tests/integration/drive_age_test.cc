// SPDX-License-Identifier: Apache-2.0
// The drive's age in every run record (aging/runner/drive_age.h): the phase runner
// reads the SMART / Health log through the run's controller as the run
// starts and records power-on hours, Percentage Used, data written and the
// target's capacity (and TMT1/TMT2 when HCTM is on), which `drivewatch
// report` reads back. The run is real (a fill on a directory target,
// io_uring, O_DIRECT); the controller answers from the hand-made PM981
// recording (tests/fixtures/handmade), because no real NVMe drive here is
// ours to run a phase on, and QEMU's log reads 0 power-on hours and 0 %
// used.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "aging/history/history.h"
#include "aging/runner/drive_age.h"
#include "aging/runner/phase_runner.h"
#include "probes/drive/smart_log.h"
#include "tests/common/recorded_drive_layer.h"
#include "tests/integration/phase_run_fixture.h"

namespace drivewatch::aging {
namespace {

using drivewatch::testing::RecordedDriveLayer;

constexpr std::uint64_t kTargetBytes = 8u << 20;

void PutLe(Bytes& b, std::size_t at, std::uint64_t v, std::size_t width) {
  for (std::size_t i = 0; i < width; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

class DriveAgeTest : public PhaseRunFixture {
 protected:
  void SetUp() override {
    PhaseRunFixture::SetUp();
    config::AgingTarget t = DataFileTarget("t", kTargetBytes);
    config_.aging.targets = {t};
    config::PhaseConfig c;
    c.name = "fill";
    c.target = "t";
    c.params = config::FillParams{};
    config_.aging.phases = {c};
    RecordedDriveLayer layer({std::filesystem::path(DW_FIXTURE_DIR) / "handmade"});
    recording_ = layer.recordings().at(0);
  }

  // The hand-made log's counters sit above 2^64 to catch decoding bugs;
  // a drive a year into its life reads like this.
  void Realistic() {
    Bytes& log = recording_.smart_log;
    std::fill(log.begin() + 32, log.begin() + 192, 0);
    log[5] = 3;                                // Percentage Used
    PutLe(log, 48, 17'586'666, 8);             // Data Units Written
    PutLe(log, 128, 8'760, 8);                 // Power On Hours
  }

  Json Run() {
    options_.controller = [this](const std::string&) {
      return std::make_unique<RecordedDriveLayer::RecordedController>(&recording_);
    };
    auto r = RunPhase(config_, "fill", options_, {}, nullptr);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? *r : Json();
  }

  RecordedDriveLayer::Recording recording_;
};

TEST_F(DriveAgeTest, EveryRunRecordsTheDrivesAgeAsItStarts) {
  Realistic();
  const Json r = Run();
  ASSERT_EQ(AsString(*Find(r, "outcome")), "completed") << DumpJson(r, 2);
  const Json* snapshot = Find(r, "drive_at_start");
  ASSERT_NE(snapshot, nullptr) << DumpJson(r, 2);
  auto age = DriveAgeFromJson(*snapshot);
  ASSERT_TRUE(age) << age.error().message;
  EXPECT_EQ(age->power_on_hours, 8'760u);
  EXPECT_EQ(age->percentage_used, 3u);
  EXPECT_DOUBLE_EQ(age->data_written_bytes, 17'586'666 * 512'000.0);
  EXPECT_EQ(age->capacity_bytes, kTargetBytes);
  EXPECT_DOUBLE_EQ(age->DriveWrites(), 17'586'666 * 512'000.0 / kTargetBytes);
  // HCTMA set, Get Features 10h 015a015dh: TMT1 346 K, TMT2 349 K.
  EXPECT_EQ(age->tmt1_k, std::optional<std::uint16_t>(346));
  EXPECT_EQ(age->tmt2_k, std::optional<std::uint16_t>(349));
  EXPECT_GE(age->time, AsDouble(*Find(r, "start")));
  EXPECT_LE(age->time, AsDouble(*Find(r, "end")));

  // What the history holds is what was returned.
  auto h = HistoryFile(HistoryPath(config_.state_directory)).Read();
  ASSERT_TRUE(h);
  ASSERT_EQ(h->records.size(), 1u);
  EXPECT_EQ(*Find(h->records[0], "drive_at_start"), *snapshot);
}

TEST_F(DriveAgeTest, ACounterNoDriveCanReachIsRecordedButNotTrustedOnReadBack) {
  // The unpatched log: Power On Hours 2^64 + 8,760.
  const Json r = Run();
  ASSERT_EQ(AsString(*Find(r, "outcome")), "completed") << DumpJson(r, 2);
  ASSERT_NE(Find(r, "drive_at_start"), nullptr);
  auto age = DriveAgeFromJson(*Find(r, "drive_at_start"));
  ASSERT_FALSE(age);
  EXPECT_NE(age.error().message.find("drive_at_start.power_on_hours is 18446744073709559808.0"),
            std::string::npos)
      << age.error().message;
  EXPECT_NE(age.error().message.find("(expected a whole number of hours)"), std::string::npos)
      << age.error().message;
}

TEST_F(DriveAgeTest, WithoutHostControlledThermalManagementThereIsNoTmt) {
  Realistic();
  recording_.id_ctrl[322] = 0;  // HCTMA bit 0 clear
  const Json r = Run();
  ASSERT_NE(Find(r, "drive_at_start"), nullptr) << DumpJson(r, 2);
  EXPECT_EQ(Find(*Find(r, "drive_at_start"), "tmt1_k"), nullptr);
  EXPECT_EQ(Find(*Find(r, "drive_at_start"), "tmt2_k"), nullptr);
}

TEST_F(DriveAgeTest, ALogThatCannotBeReadLeavesTheAgeOutAndTheRunGoesOn) {
  recording_.smart_log.clear();  // Get Log Page 02h answers Invalid Field
  const Json r = Run();
  EXPECT_EQ(AsString(*Find(r, "outcome")), "completed") << DumpJson(r, 2);
  EXPECT_EQ(Find(r, "drive_at_start"), nullptr) << DumpJson(r, 2);
}

TEST_F(DriveAgeTest, ATargetWithoutAControllerHasNoAge) {
  auto r = RunPhase(config_, "fill", options_, {}, nullptr);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(AsString(*Find(*r, "outcome")), "completed") << DumpJson(*r, 2);
  EXPECT_EQ(Find(*r, "drive_at_start"), nullptr);
}

}  // namespace
}  // namespace drivewatch::aging
