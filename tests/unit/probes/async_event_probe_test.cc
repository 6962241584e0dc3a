// SPDX-License-Identifier: Apache-2.0
// The async_events probe: switches on the SMART / temperature AENs (feature
// 0Bh bits 7:0), keeps the kernel's notice bits, re-applies them after a
// reset, and degrades plainly.
#include "probes/async_event_probe.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "probes/drive/features.h"
#include "tests/unit/probes/probe_test_util.h"

namespace drivewatch {
namespace {

using testing::FakeController;
using testing::RecordingSink;

class AsyncEventProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    info_.device = "/dev/nvme0";
    info_.serial = "SN1";
    // What the kernel leaves: the namespace attribute notice only.
    ctrl_.SetFeatureResult(kFeatureAsyncEventConfig, 0, 0x100);
  }
  Status Run() {
    sink_.samples.clear();
    return probe_.Run(ctrl_, info_, sink_);
  }
  double Value(const std::string& name) const {
    for (const auto& s : sink_.samples) {
      if (name == s.desc->name) return s.value;
    }
    return -1;
  }
  std::vector<FakeController::Call> Sets() const {
    std::vector<FakeController::Call> out;
    for (const auto& c : ctrl_.calls()) {
      if (c.command == "set-feature") out.push_back(c);
    }
    return out;
  }

  std::vector<std::string> logged_;
  AsyncEventProbe probe_{[this](std::string_view l) { logged_.emplace_back(l); }};
  FakeController ctrl_;
  ControllerInfo info_;
  RecordingSink sink_;
};

TEST_F(AsyncEventProbeTest, SetsBits7To0KeepingTheKernelsNotices) {
  ASSERT_TRUE(Run().ok());
  const std::vector<FakeController::Call> expected = {
      {"set-feature", 0x0b, 0x1ff, 0}};
  EXPECT_EQ(Sets(), expected);
  EXPECT_EQ(Value("drivewatch_async_event_smart_enabled_raw"), 255);
  EXPECT_EQ(Value("drivewatch_feature_supported"), 1);
  // Already set: read only.
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(Sets().size(), 1u);
  // A controller reset made the kernel write its notices back.
  ctrl_.SetFeatureResult(kFeatureAsyncEventConfig, 0, 0x100);
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(Sets().size(), 2u);
  EXPECT_EQ(Value("drivewatch_async_event_smart_enabled_raw"), 255);
}

TEST_F(AsyncEventProbeTest, FallsBackToTheNvme10BitsWhenTheRestAreReserved) {
  // A controller that takes bits 4:0 but refuses 7:5: the first Set fails
  // with Invalid Field, the second goes through.
  class Picky : public FakeController {
   public:
    Expected<std::uint32_t> SetFeature(std::uint8_t fid,
                                       std::uint32_t cdw11) override {
      if ((cdw11 & 0xe0) != 0) {
        (void)FakeController::SetFeature(fid, 0xdead);  // recorded, then refused
        SetFeatureResult(fid, 0, 0x100);
        return InvalidField("set feature 0Bh");
      }
      return FakeController::SetFeature(fid, cdw11);
    }
  } picky;
  picky.SetFeatureResult(kFeatureAsyncEventConfig, 0, 0x100);
  ASSERT_TRUE(probe_.Run(picky, info_, sink_).ok());
  EXPECT_EQ(Value("drivewatch_async_event_smart_enabled_raw"), 0x1f);
  EXPECT_TRUE(logged_.empty());
}

TEST_F(AsyncEventProbeTest, UnsupportedFeatureIsReportedOnce) {
  ctrl_.SetFeatureAnswer(kFeatureAsyncEventConfig, 0,
                         FakeController::InvalidField("get feature 0Bh"));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Run().ok());
    EXPECT_EQ(Value("drivewatch_feature_supported"), 0);
    EXPECT_EQ(Value("drivewatch_async_event_smart_enabled_raw"), -1);
  }
  EXPECT_EQ(logged_.size(), 1u);
}

TEST_F(AsyncEventProbeTest, NoPrivilegeFailsTheRunAndSaysItFallsBackToPolling) {
  ctrl_.FailSetFeature(kFeatureAsyncEventConfig,
                       Error{EACCES, -1,
                             "/dev/nvme0: set feature 0Bh: Permission denied"});
  const Status status = Run();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().errnum, EACCES);
  EXPECT_EQ(status.error().message,
            "/dev/nvme0: set feature 0Bh: Permission denied; cannot enable "
            "temperature and SMART asynchronous events, so temperature and "
            "health changes are seen at the next poll");
}

TEST(AsyncEventProbeMetricsTest, EveryMetricIsDocumentedWithHelp) {
  testing::ExpectDocumented(AsyncEventProbe::Metrics());
}

}  // namespace
}  // namespace drivewatch
