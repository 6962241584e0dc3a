// SPDX-License-Identifier: Apache-2.0
// What the retention phases' unit tests share: a study written by
// retention-write through the fake context (fake_phase_context.h) on a
// scratch file, whose data the study's blocks really hold.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "aging/phases/phase.h"
#include "aging/retention/retention_study.h"
#include "tests/unit/aging/fake_phase_context.h"

namespace drivewatch::testing {

class RetentionStudyTest : public ::testing::Test {
 protected:
  static constexpr std::uint64_t kOffset = 1u << 20;
  static constexpr std::uint64_t kLength = 2u << 20;

  void SetUp() override {
    file_ = ZeroFile(dir_, "target", 4u << 20);
    std::filesystem::create_directories(dir_ / "state");
  }
  void Prepare(FakePhaseContext& ctx) {
    ctx.UseFile(file_);
    ctx.state_dir = dir_ / "state";
    ctx.register_path = dir_ / "register";
    ctx.facts["serial"] = "S1";
    ctx.facts["firmware"] = "F1";
  }
  config::RetentionWriteParams WriteParams() const {
    config::RetentionWriteParams p;
    p.study = "s1";
    p.region_offset = kOffset;
    p.region_length = kLength;
    return p;
  }
  // Writes study s1 through retention-write, to its end.
  void WriteStudy() {
    const config::RetentionWriteParams p = WriteParams();
    FakePhaseContext ctx(p);
    Prepare(ctx);
    aging::PhaseReport report;
    const Status s = RunKind(p, ctx, report);
    ASSERT_TRUE(s) << s.error().message;
  }
  // Overwrites 16 bytes at `offset` of the target, as a drive that lost
  // them would return them.
  void Damage(std::uint64_t offset) {
    const int fd = ::open(file_.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, "not the pattern!", 16, static_cast<off_t>(offset)), 16);
    ::close(fd);
  }
  Json Study() {
    auto s = aging::LoadStudy(dir_ / "state", "s1");
    EXPECT_TRUE(s) << s.error().message;
    return s ? *s : Json();
  }

  const ScratchDir dir_{"retention-phase"};
  std::string file_;
};

}  // namespace drivewatch::testing
