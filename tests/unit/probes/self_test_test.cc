// SPDX-License-Identifier: Apache-2.0
// The device self-test probe (probes/self_test.h): log 06h decoded from
// bytes built field by field, new failures counted once across restarts
// against the same state store, and the schedule that starts tests.
#include "probes/self_test.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "admin_log_fixtures.h"
#include "probe_test_util.h"

namespace drivewatch {
namespace {

using testing::FakeController;
using testing::Has;
using testing::IdentifyWith;
using testing::Info;
using testing::Key;
using testing::kHandmadeSerial;
using testing::PutLe;
using testing::RecordingSink;
using testing::Value;
using ::testing::HasSubstr;

struct StResult {
  std::uint8_t code = kSelfTestShort;
  std::uint8_t result = 0;
  std::uint64_t poh = 100;
  std::uint8_t segment = 0;
  std::uint8_t valid = 0;
  std::uint32_t nsid = 0;
  std::uint64_t lba = 0;
};

Bytes SelfTestLogBytes(std::uint8_t current, std::uint8_t percent,
                       const std::vector<StResult>& results) {
  Bytes b(kSelfTestLogSize);
  b[0] = current;
  b[1] = percent;
  for (int i = 0; i < 20; ++i) b[4 + i * 28] = 0x0f;  // unused
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::size_t o = 4 + i * 28;
    const StResult& r = results[i];
    b[o] = static_cast<std::uint8_t>(r.code << 4 | r.result);
    b[o + 1] = r.segment;
    b[o + 2] = r.valid;
    PutLe(b, o + 4, r.poh, 8);
    PutLe(b, o + 12, r.nsid, 4);
    PutLe(b, o + 16, r.lba, 8);
  }
  return b;
}

// -- self-test log decoding --------------------------------------------------

TEST(SelfTestLogTest, DecodesEveryResultCode) {
  std::vector<StResult> results;
  for (std::uint8_t code = 0; code <= 0x9; ++code) {
    results.push_back({kSelfTestExtended, code, 1000u + code});
  }
  results.push_back({kSelfTestShort, 0xa, 999});  // reserved
  auto log = DecodeSelfTestLog(SelfTestLogBytes(0, 0, results));
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->results.size(), results.size());
  const char* names[] = {"passed", "aborted_by_command", "aborted_by_reset",
                         "aborted_namespace_removed", "aborted_by_format",
                         "fatal_error", "failed_unknown_segment",
                         "failed_segment", "aborted_unknown",
                         "aborted_by_sanitize", "reserved"};
  for (std::size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(SelfTestResultName(log->results[i].result), names[i]);
    EXPECT_EQ(log->results[i].power_on_hours, results[i].poh);
    EXPECT_EQ(SelfTestFailed(log->results[i].result), i >= 5 && i <= 7) << i;
  }
  EXPECT_EQ(SelfTestResultName(0xf), "reserved");
}

TEST(SelfTestLogTest, CurrentOperationAndFailingLba) {
  auto log = DecodeSelfTestLog(SelfTestLogBytes(
      kSelfTestExtended, 42,
      {{kSelfTestShort, 7, 55, 3, 0x03, 2, 0x1'0000'0001ull}}));
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->current_operation, kSelfTestExtended);
  EXPECT_EQ(log->completion_percent, 42);
  ASSERT_EQ(log->results.size(), 1u);
  EXPECT_EQ(log->results[0].segment, 3);
  EXPECT_TRUE(log->results[0].NsidValid());
  EXPECT_TRUE(log->results[0].LbaValid());
  EXPECT_EQ(log->results[0].nsid, 2u);
  EXPECT_EQ(log->results[0].failing_lba, 0x1'0000'0001ull);
}

TEST(SelfTestLogTest, ShortBufferIsAnError) {
  Bytes b(100);
  auto log = DecodeSelfTestLog(b);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.error().errnum, EBADMSG);
}

// -- the self-test probe ------------------------------------------------------

class SelfTestProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("TZ", "UTC", 1);
    tzset();
    ctrl_.SetIdentify(kIdentifyCnsController, 0, IdentifyWith(1 << 4, 0, 0));
  }
  std::unique_ptr<SelfTestProbe> MakeProbe(SelfTestSettings settings = {}) {
    auto p = std::make_unique<SelfTestProbe>([this] { return now_; },
                                             [this](std::string_view l) {
                                               lines_.emplace_back(l);
                                             });
    p->Configure(settings, store_, &busy_);
    return p;
  }
  RecordingSink Run(SelfTestProbe& p) {
    RecordingSink sink;
    EXPECT_TRUE(p.Run(ctrl_, Info(), sink).ok());
    return sink;
  }
  void SetLog(std::uint8_t current, std::uint8_t percent,
              const std::vector<StResult>& r) {
    ctrl_.SetLogPage(kSelfTestLogId, kNsidAll,
                     SelfTestLogBytes(current, percent, r));
  }
  int SelfTestCalls(std::uint8_t stc) {
    int n = 0;
    for (const auto& c : ctrl_.calls()) n += c.command == "self-test" && c.id == stc;
    return n;
  }

  FakeController ctrl_;
  std::shared_ptr<MemoryStateStore> store_ = std::make_shared<MemoryStateStore>();
  DriveBusyBoard busy_;
  // 2026-01-04 01:59:00 UTC, a Sunday.
  std::chrono::system_clock::time_point now_{std::chrono::seconds(1767491940)};
  std::vector<std::string> lines_;
};

TEST_F(SelfTestProbeTest, UnsupportedWhenOacsBit4IsClear) {
  ctrl_.SetIdentify(kIdentifyCnsController, 0, IdentifyWith(0, 0, 0));
  auto p = MakeProbe();
  RecordingSink a = Run(*p);
  RecordingSink b = Run(*p);
  EXPECT_EQ(Value(a, Key("drivewatch_feature_supported", {{"feature", "self_test"}})), 0);
  EXPECT_EQ(lines_.size(), 1u) << "logged once";
  EXPECT_THAT(lines_[0], HasSubstr("OACS bit 4 is clear"));
  for (const auto& c : ctrl_.calls()) EXPECT_NE(c.command, "log");
}

TEST_F(SelfTestProbeTest, HistoryIsNotCountedNewFailuresAre) {
  SetLog(0, 0, {{kSelfTestShort, 5, 90}, {kSelfTestExtended, 7, 80, 2, 3, 1, 777}});
  auto p = MakeProbe();
  RecordingSink first = Run(*p);
  EXPECT_EQ(Value(first, Key("drivewatch_self_test_failures_total", {{"type", "short"}})), 0);
  EXPECT_EQ(Value(first, Key("drivewatch_self_test_last_result",
                             {{"result", "fatal_error"}, {"type", "short"}})), 1);
  EXPECT_EQ(Value(first, Key("drivewatch_self_test_failing_segment", {{"type", "extended"}})), 2);
  EXPECT_EQ(Value(first, Key("drivewatch_self_test_failing_lba",
                             {{"nsid", "1"}, {"type", "extended"}})), 777);
  EXPECT_EQ(Value(first, Key("drivewatch_self_test_last_power_on_seconds",
                             {{"type", "short"}})), 90 * 3600);

  // A running extended test, then its failure, then a passing short test.
  SetLog(kSelfTestExtended, 30, {{kSelfTestShort, 5, 90}, {kSelfTestExtended, 7, 80, 2, 3, 1, 777}});
  RecordingSink running = Run(*p);
  EXPECT_EQ(Value(running, Key("drivewatch_self_test_in_progress", {{"type", "extended"}})), 1);
  EXPECT_DOUBLE_EQ(Value(running, Key("drivewatch_self_test_completion_ratio", {})), 0.3);
  SetLog(0, 0, {{kSelfTestShort, 0, 92}, {kSelfTestExtended, 6, 91},
                {kSelfTestShort, 5, 90}, {kSelfTestExtended, 7, 80, 2, 3, 1, 777}});
  RecordingSink after = Run(*p);
  EXPECT_FALSE(Has(after, Key("drivewatch_self_test_completion_ratio", {})));
  EXPECT_EQ(Value(after, Key("drivewatch_self_test_failures_total", {{"type", "extended"}})), 1);
  EXPECT_EQ(Value(after, Key("drivewatch_self_test_failures_total", {{"type", "short"}})), 0);
  EXPECT_EQ(Value(after, Key("drivewatch_self_test_last_result",
                             {{"result", "passed"}, {"type", "short"}})), 1);

  // A restart (a new probe, the same store) counts nothing again.
  auto restarted = MakeProbe();
  RecordingSink again = Run(*restarted);
  EXPECT_EQ(Value(again, Key("drivewatch_self_test_failures_total", {{"type", "extended"}})), 1);
  EXPECT_EQ(Value(again, Key("drivewatch_self_test_failures_total", {{"type", "short"}})), 0);
}

TEST_F(SelfTestProbeTest, IdenticalResultsInARowAreEachCounted) {
  SetLog(0, 0, {{kSelfTestShort, 5, 90}});
  auto p = MakeProbe();
  Run(*p);
  // The same failure twice more within the same power-on hour.
  SetLog(0, 0, {{kSelfTestShort, 5, 90}, {kSelfTestShort, 5, 90}, {kSelfTestShort, 5, 90}});
  RecordingSink s = Run(*p);
  EXPECT_EQ(Value(s, Key("drivewatch_self_test_failures_total", {{"type", "short"}})), 2);
}

TEST_F(SelfTestProbeTest, ScheduleStartsDueTestsOnceAndWaitsWhileBusy) {
  SelfTestSettings settings;
  settings.short_test = *config::ParseSchedule("daily 02:00");
  settings.extended_test = *config::ParseSchedule("weekly sun 03:00");
  SetLog(0, 0, {});
  auto p = MakeProbe(settings);
  Run(*p);  // 01:59: nothing due
  EXPECT_EQ(SelfTestCalls(kSelfTestShort), 0);

  now_ += std::chrono::minutes(2);  // 02:01
  busy_.SetBusy(kHandmadeSerial, "phase fill");
  Run(*p);
  EXPECT_EQ(SelfTestCalls(kSelfTestShort), 0) << "busy drive";
  busy_.ClearBusy(kHandmadeSerial);
  now_ += std::chrono::minutes(1);
  RecordingSink s = Run(*p);
  EXPECT_EQ(SelfTestCalls(kSelfTestShort), 1);
  EXPECT_EQ(Value(s, Key("drivewatch_self_test_started_total", {{"type", "short"}})), 1);
  now_ += std::chrono::minutes(1);
  Run(*p);
  EXPECT_EQ(SelfTestCalls(kSelfTestShort), 1) << "one start per slot";

  // A restart within the same slot does not start it again.
  auto restarted = MakeProbe(settings);
  Run(*restarted);
  EXPECT_EQ(SelfTestCalls(kSelfTestShort), 1);

  // 03:01 on Sunday: the extended test; a running test holds it back.
  now_ += std::chrono::minutes(58);
  SetLog(kSelfTestShort, 50, {});
  Run(*restarted);
  EXPECT_EQ(SelfTestCalls(kSelfTestExtended), 0);
  SetLog(0, 0, {{kSelfTestShort, 0, 101}});
  Run(*restarted);
  EXPECT_EQ(SelfTestCalls(kSelfTestExtended), 1);

  // More than an hour late: the slot is skipped, not run late.
  now_ += std::chrono::hours(23) + std::chrono::minutes(30);  // Mon 02:31
  Run(*restarted);
  EXPECT_EQ(SelfTestCalls(kSelfTestShort), 2);
  now_ += std::chrono::hours(24) + std::chrono::minutes(30);  // Tue 03:01
  auto late = MakeProbe(settings);
  Run(*late);
  EXPECT_EQ(SelfTestCalls(kSelfTestShort), 2);
}

TEST_F(SelfTestProbeTest, AbortsOnStopOnlyWhenConfiguredAndStartedByUs) {
  SelfTestSettings settings;
  settings.short_test = *config::ParseSchedule("daily 02:00");
  now_ += std::chrono::minutes(2);
  SetLog(0, 0, {});
  auto keep = MakeProbe(settings);
  Run(*keep);
  keep->Stop(ctrl_, Info());
  EXPECT_EQ(SelfTestCalls(kSelfTestAbort), 0);

  settings.abort_on_shutdown = true;
  store_ = std::make_shared<MemoryStateStore>();
  auto abort = MakeProbe(settings);
  Run(*abort);
  SetLog(kSelfTestShort, 10, {});
  Run(*abort);
  abort->Stop(ctrl_, Info());
  EXPECT_EQ(SelfTestCalls(kSelfTestAbort), 1);

  // A test running that drivewatch did not start is left alone.
  store_ = std::make_shared<MemoryStateStore>();
  auto manual = MakeProbe(SelfTestSettings{{}, {}, true});
  Run(*manual);
  manual->Stop(ctrl_, Info());
  EXPECT_EQ(SelfTestCalls(kSelfTestAbort), 1);
}

}  // namespace
}  // namespace drivewatch
