// SPDX-License-Identifier: Apache-2.0
// The write gate (aging/safety/interlocks.h, CheckWritePass) on real targets: a
// disk image named as block_device is never written, a region an active
// retention study holds is refused at open and before a write pass, and a
// clean, acknowledged target is still written once the study has ended.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "aging/history/history.h"
#include "aging/retention/retention_study.h"
#include "aging/runner/phase_runner.h"
#include "aging/safety/interlocks.h"
#include "tests/integration/loop_device.h"
#include "tests/integration/phase_run_fixture.h"

namespace drivewatch::aging {
namespace {

using drivewatch::testing::LoopDevice;
using drivewatch::testing::Shell;

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class WriteGateTest : public PhaseRunFixture {
 protected:

  config::PhaseConfig Phase(std::string name, config::PhaseParams params, std::string target) {
    config::PhaseConfig p;
    p.name = std::move(name);
    p.target = std::move(target);
    if (auto* perf = std::get_if<config::PerfParams>(&params)) {
      perf->perf_duration = std::chrono::milliseconds{300};
      perf->runs = 1;  // one run of each cell: the gate is the subject here
    }
    if (auto* study = std::get_if<config::RetentionWriteParams>(&params)) {
      study->study = "lab";
      study->block_size = 64 * 1024;
      study->region_offset = 4u << 20;
      study->region_length = 4u << 20;
    }
    p.params = std::move(params);
    return p;
  }

  Json Run(const std::string& phase, PhaseObserver* observer = nullptr) {
    auto r = RunPhase(config_, phase, options_, {}, observer);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? *r : Json();
  }
  static std::string Outcome(const Json& r) {
    return Find(r, "outcome") ? AsString(*Find(r, "outcome")) : "?";
  }
  static std::string Reason(const Json& r) {
    return Find(r, "reason") ? AsString(*Find(r, "reason")) : "";
  }

};

// The review's case: an ext4 disk image named as block_device, a wrong
// serial, no destroy_data. Even with the acknowledgement and the
// signature override set, a regular file under block_device is refused
// and not one byte of it changes.
TEST_F(WriteGateTest, ADiskImageNamedAsBlockDeviceIsNeverWritten) {
  const std::string image = (dir_ / "vm.img").string();
  bool ok = false;
  Shell("truncate -s 16M " + image + " && mkfs.ext4 -q -F " + image, &ok);
  ASSERT_TRUE(ok) << "mkfs.ext4";
  const std::string before = Contents(image);
  config::AgingTarget t;
  t.name = "vm";
  t.block_device = image;
  t.serial = "WRONG";
  config_.aging.targets = {t};
  for (const config::PhaseParams& kind :
       {config::PhaseParams{config::FillParams{}}, config::PhaseParams{config::TrimParams{}},
        config::PhaseParams{config::PerfParams{}},
        config::PhaseParams{config::RetentionWriteParams{}}}) {
    config_.aging.phases = {Phase("p", kind, "vm")};
    for (bool acknowledged : {false, true}) {
      config_.aging.targets[0].destroy_data = acknowledged;
      config_.aging.targets[0].allow_signatures = acknowledged;
      const Json r = Run("p");
      EXPECT_EQ(Outcome(r), "refused") << DumpJson(r, 2);
      EXPECT_EQ(Reason(r), image + ": refusing to write: it is a regular file, not a block "
                                   "device (aging.targets.block_device names a whole device "
                                   "such as /dev/nvme1n1; to age a file, give target \"vm\" a "
                                   "directory instead, where drivewatch writes only its own file)");
    }
  }
  EXPECT_TRUE(Contents(image) == before) << "the image was written";
  EXPECT_FALSE(std::filesystem::exists(RetentionDirectory(config_.state_directory) + "/lab.json"));
}

// What runs before every write pass, on the descriptor written through.
TEST_F(WriteGateTest, TheWritePassGateRefusesWhatTheTargetIsNot) {
  const std::string image = (dir_ / "disk.img").string();
  { std::ofstream(image) << std::string(1 << 20, 'x'); }
  const int fd = ::open(image.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  config::AgingTarget t;
  t.name = "disk";
  t.block_device = image;
  t.serial = "S1";
  t.destroy_data = true;
  const WritePass pass{config_.state_directory, 0, 4096, ""};
  Status s = CheckWritePass(t, fd, pass);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().errnum, EPERM);
  EXPECT_EQ(s.error().message.rfind(image + ": refusing to write: it is a regular file, not a "
                                            "block device", 0),
            0u)
      << s.error().message;
  ::close(fd);

  // A directory target's file swapped for another after it was opened.
  config::AgingTarget f = DataFileTarget("f", 1u << 20);
  auto path = PrepareAgingFile(f, pass, options_.paths);
  ASSERT_TRUE(path) << path.error().message;
  const int ffd = ::open(path->c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(ffd, 0);
  EXPECT_TRUE(CheckWritePass(f, ffd, pass, options_.paths)) << "its own file, freshly opened";
  const std::string other = (dir_ / "data" / "other").string();
  { std::ofstream(other) << "somebody's file"; }
  ASSERT_EQ(::rename(other.c_str(), path->c_str()), 0);
  s = CheckWritePass(f, ffd, pass, options_.paths);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message,
            *path + ": refusing to write: the open file is not this target's own regular file "
                    "any more (no config key overrides this)");
  ::close(ffd);
}

// A loop device with a study in its middle: every other writer of those
// bytes is refused, by whatever target entry it reaches the drive; a
// study beside it is fine; once the study ends the drive is written.
TEST_F(WriteGateTest, AnActiveStudysRegionIsRefusedUntilTheStudyEnds) {
  LoopDevice loop(16);
  if (loop.device().empty()) GTEST_SKIP() << "losetup failed (needs root)";
  config::AgingTarget t;
  t.name = "loop";
  t.block_device = loop.device();
  t.serial = loop.serial();
  t.destroy_data = true;
  config::AgingTarget alias = t;  // the same drive under another name
  alias.name = "alias";
  config_.aging.targets = {t, alias};
  config::PhaseConfig study = Phase("lab-write", config::RetentionWriteParams{}, "loop");
  config::PhaseConfig overlapping = study;
  overlapping.name = "other-write";
  std::get<config::RetentionWriteParams>(overlapping.params).study = "other";
  overlapping.target = "alias";
  std::get<config::RetentionWriteParams>(overlapping.params).region_offset = 6u << 20;
  config::PhaseConfig beside = overlapping;
  beside.name = "beside-write";
  std::get<config::RetentionWriteParams>(beside.params).study = "beside";
  std::get<config::RetentionWriteParams>(beside.params).region_offset = 8u << 20;
  config_.aging.phases = {study, overlapping, beside,
                          Phase("fill", config::FillParams{}, "loop"),
                          Phase("trim", config::TrimParams{}, "alias")};
  const Json written = Run("lab-write");
  ASSERT_EQ(Outcome(written), "completed") << DumpJson(written, 2);
  const std::string before = Contents(loop.backing());
  const std::string held =
      "overlap the region [4MiB, 8MiB) held by retention study \"lab\" (active, " +
      StudyPath(config_.state_directory, "lab") +
      ") (end the study first: drivewatch retention end lab)";

  for (const char* phase : {"fill", "trim", "other-write"}) {
    const Json r = Run(phase);
    EXPECT_EQ(Outcome(r), "refused") << phase;
    EXPECT_NE(Reason(r).find(loop.device() + ": refusing to write: bytes ["), std::string::npos)
        << Reason(r);
    EXPECT_NE(Reason(r).find(held), std::string::npos) << Reason(r);
  }
  EXPECT_TRUE(Contents(loop.backing()) == before) << "a refused phase wrote";
  EXPECT_FALSE(LoadStudy(config_.state_directory, "other")) << "no study record for a refusal";

  const Json side = Run("beside-write");
  EXPECT_EQ(Outcome(side), "completed") << DumpJson(side, 2);

  // Ended, the study holds nothing, and is verified no more.
  ASSERT_TRUE(EndStudy(config_.state_directory, "lab", "test"));
  auto ended = LoadStudy(config_.state_directory, "lab");
  ASSERT_TRUE(ended) << ended.error().message;
  EXPECT_EQ(AsString(*Find(*ended, "state")), "ended");
  EXPECT_EQ(AsString(*Find(*ended, "end_reason")), "test");
  EXPECT_TRUE(EndStudy(config_.state_directory, "lab", "again")) << "ending twice is fine";
  // A fill deallocates the whole target first: "beside" still holds it.
  Json fill = Run("fill");
  EXPECT_EQ(Outcome(fill), "refused");
  EXPECT_NE(Reason(fill).find("held by retention study \"beside\""), std::string::npos)
      << Reason(fill);
  ASSERT_TRUE(EndStudy(config_.state_directory, "beside", "test"));
  const std::string mid = Contents(loop.backing());
  fill = Run("fill");
  EXPECT_EQ(Outcome(fill), "completed") << DumpJson(fill, 2);
  EXPECT_TRUE(Contents(loop.backing()) != mid) << "the clean, acknowledged target was not written";
}

// A study that appears while a phase runs is honoured at the next write
// pass: the gate runs before every pass, not only at open.
TEST_F(WriteGateTest, AStudyThatAppearsMidRunStopsTheNextWritePass) {
  config::AgingTarget a = DataFileTarget("a", 16u << 20);
  config::AgingTarget b = a;
  b.name = "b";
  config_.aging.targets = {a, b};
  config::PhaseConfig study = Phase("lab-write", config::RetentionWriteParams{}, "b");
  std::get<config::RetentionWriteParams>(study.params).region_offset = 0;
  config_.aging.phases = {study, Phase("perf", config::PerfParams{}, "a")};
  ASSERT_EQ(Outcome(Run("lab-write")), "completed");
  // The record as it would be had the study been written on target a.
  auto record = LoadStudy(config_.state_directory, "lab");
  ASSERT_TRUE(record) << record.error().message;
  // As a record from before storage was recorded: only its device names
  // where it is, and the gate resolves that device.
  Json moved = Json::object();
  for (const auto& [key, value] : Members(*record)) {
    if (key != "storage") moved[key] = value;
  }
  moved["target"] = "a";
  moved["device"] = AgingFilePath(a);
  ASSERT_TRUE(EndStudy(config_.state_directory, "lab", "moved to a below"));

  struct AddStudyOnFirstProgress : PhaseObserver {
    std::string state;
    Json study;
    bool added = false;
    void OnProgress(const PhaseStatus&) override {
      if (added) return;
      added = true;
      Status s = SaveStudy(state, study);
      EXPECT_TRUE(s) << (s ? "" : s.error().message);
    }
    void OnEnd(const Json&) override {}
  } observer;
  observer.state = config_.state_directory;
  observer.study = moved;
  const Json r = Run("perf", &observer);
  EXPECT_TRUE(observer.added);
  EXPECT_EQ(Outcome(r), "refused") << DumpJson(r, 2);
  EXPECT_NE(Reason(r).find("held by retention study \"lab\" (active"), std::string::npos)
      << Reason(r);
}

// A study record that cannot be read holds every target: what it covers
// is unknown, so nothing is written until it is repaired or moved away.
TEST_F(WriteGateTest, AnUnreadableStudyRecordHoldsEveryTarget) {
  config::AgingTarget a = DataFileTarget("a", 4u << 20);
  config_.aging.targets = {a};
  config_.aging.phases = {Phase("fill", config::FillParams{}, "a")};
  std::filesystem::create_directories(RetentionDirectory(config_.state_directory));
  const std::string bad = StudyPath(config_.state_directory, "broken");
  { std::ofstream(bad) << "{\"study\": \"broken\", \"region\": "; }
  Json r = Run("fill");
  EXPECT_EQ(Outcome(r), "refused");
  EXPECT_NE(Reason(r).find("refusing to write: a retention study record in " +
                           RetentionDirectory(config_.state_directory) +
                           " cannot be trusted, so the region it holds is unknown: "),
            std::string::npos)
      << Reason(r);
  EXPECT_NE(Reason(r).find(bad), std::string::npos) << Reason(r);
  std::filesystem::remove(bad);
  r = Run("fill");
  EXPECT_EQ(Outcome(r), "completed") << DumpJson(r, 2);
}

}  // namespace
}  // namespace drivewatch::aging
