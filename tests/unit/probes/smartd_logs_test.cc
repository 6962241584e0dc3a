// SPDX-License-Identifier: Apache-2.0
// The smartd-parity probes: device self-tests (log 06h), the Error
// Information log (01h) and the persistent event log (0Dh), from byte
// fixtures built here field by field (NVMe 2.0 offsets), plus restarts
// against the same state store without counting anything twice.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "probe_test_util.h"
#include "probes/drive/identify.h"
#include "probes/error_log.h"
#include "probes/persistent_event_log.h"
#include "probes/self_test.h"

namespace drivewatch {
namespace {

using testing::FakeController;
using testing::Handmade;
using testing::kHandmadeSerial;
using testing::RecordingSink;
using ::testing::HasSubstr;

void PutLe(Bytes& b, std::size_t offset, std::uint64_t value, int width) {
  for (int i = 0; i < width; ++i) {
    b[offset + i] = static_cast<std::uint8_t>(value >> (8 * i));
  }
}

// -- fixtures ---------------------------------------------------------------

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

struct ErrEntry {
  std::uint64_t count;
  std::uint16_t sqid = 1;
  std::uint16_t cid = 7;
  std::uint8_t sct = 2;
  std::uint8_t sc = 0x81;
  std::uint64_t lba = 4096;
  std::uint32_t nsid = 1;
};

Bytes ErrorLogBytes(std::size_t capacity, const std::vector<ErrEntry>& entries) {
  Bytes b(capacity * 64);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::size_t o = i * 64;
    const ErrEntry& e = entries[i];
    PutLe(b, o, e.count, 8);
    PutLe(b, o + 8, e.sqid, 2);
    PutLe(b, o + 10, e.cid, 2);
    PutLe(b, o + 12, (e.sct << 9) | (e.sc << 1), 2);
    PutLe(b, o + 16, e.lba, 8);
    PutLe(b, o + 24, e.nsid, 4);
  }
  return b;
}

// One persistent event: a 24-byte header (EHL 21), VSI, then data.
Bytes PelEvent(std::uint8_t type, std::uint64_t ts_ms, Bytes data,
               std::size_t vsil = 0) {
  Bytes e(24 + vsil);
  e[0] = type;
  e[2] = 21;
  PutLe(e, 6, ts_ms, 8);
  PutLe(e, 20, vsil, 2);
  PutLe(e, 22, vsil + data.size(), 2);
  e.insert(e.end(), data.begin(), data.end());
  return e;
}

Bytes PelBytes(const std::vector<Bytes>& events, std::uint64_t tll_override = 0) {
  Bytes b(512);
  b[0] = 0x0d;
  PutLe(b, 4, events.size(), 4);
  for (const Bytes& e : events) b.insert(b.end(), e.begin(), e.end());
  while (b.size() % 4 != 0) b.push_back(0);
  PutLe(b, 8, tll_override != 0 ? tll_override : b.size(), 8);
  return b;
}

Bytes IdentifyWith(std::uint16_t oacs, std::uint8_t lpa, std::uint8_t elpe) {
  Bytes id = Handmade("id-ctrl-HANDMADE-PM981.bin");
  PutLe(id, 256, oacs, 2);
  id[261] = lpa;
  id[262] = elpe;
  return id;
}

ControllerInfo Info() {
  ControllerInfo info;
  info.device = "/dev/nvme0";
  info.serial = kHandmadeSerial;
  return info;
}

double Value(const RecordingSink& sink, const std::string& key) {
  for (const auto& s : sink.samples) {
    if (s.Key() == key) return s.value;
  }
  return -1;
}
bool Has(const RecordingSink& sink, const std::string& key) {
  return Value(sink, key) != -1;
}
std::string Key(const std::string& name, Labels labels) {
  labels.insert(labels.begin(), {"serial", kHandmadeSerial});
  return testing::SeriesKey(name, std::move(labels));
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

// -- error log -----------------------------------------------------------------

TEST(ErrorLogTest, DecodesEntriesAndSkipsUnused) {
  auto entries = DecodeErrorLog(ErrorLogBytes(4, {{5, 3, 0x1234, 0, 0x80, 99, 2}, {0}}));
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].error_count, 5u);
  EXPECT_EQ(entries[0].sqid, 3);
  EXPECT_EQ(entries[0].cid, 0x1234);
  EXPECT_EQ(entries[0].sct, 0);
  EXPECT_EQ(entries[0].sc, 0x80);
  EXPECT_EQ(entries[0].lba, 99u);
  EXPECT_EQ(entries[0].nsid, 2u);
  EXPECT_EQ(StatusCodeName(0, 0x80), "lba_out_of_range");
  EXPECT_EQ(StatusCodeName(2, 0x81), "unrecovered_read_error");
  EXPECT_EQ(StatusCodeName(0, 0x55), "other");
  EXPECT_EQ(StatusCodeTypeName(5), "other");
}

TEST(ErrorLogTest, CountComparisonWraps) {
  EXPECT_TRUE(ErrorCountAfter(2, 1));
  EXPECT_FALSE(ErrorCountAfter(1, 2));
  EXPECT_FALSE(ErrorCountAfter(7, 7));
  EXPECT_TRUE(ErrorCountAfter(1, ~0ull));  // wrapped past 2^64-1
  EXPECT_FALSE(ErrorCountAfter(~0ull, 1));
}

class ErrorLogProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ctrl_.SetIdentify(kIdentifyCnsController, 0, IdentifyWith(0, 0, 3));
  }
  std::unique_ptr<ErrorLogProbe> MakeProbe() {
    auto p = std::make_unique<ErrorLogProbe>(
        [] { return std::chrono::system_clock::time_point(std::chrono::seconds(1000)); },
        [this](std::string_view l) { lines_.emplace_back(l); });
    p->SetStateStore(store_);
    return p;
  }
  RecordingSink Run(ErrorLogProbe& p, const std::vector<ErrEntry>& entries) {
    ctrl_.SetLogPage(kErrorLogId, kNsidAll, ErrorLogBytes(4, entries));
    RecordingSink sink;
    EXPECT_TRUE(p.Run(ctrl_, Info(), sink).ok());
    return sink;
  }
  double Media(const RecordingSink& s) {
    return Value(s, Key("drivewatch_error_log_new_entries_total",
                        {{"sct", "media"}, {"status", "unrecovered_read_error"}}));
  }

  FakeController ctrl_;
  std::shared_ptr<MemoryStateStore> store_ = std::make_shared<MemoryStateStore>();
  std::vector<std::string> lines_;
};

TEST_F(ErrorLogProbeTest, ReadsElpePlusOneEntries) {
  auto p = MakeProbe();
  Run(*p, {});
  ASSERT_FALSE(ctrl_.calls().empty());
  EXPECT_EQ(ctrl_.calls().back().length, 4u * 64);
}

TEST_F(ErrorLogProbeTest, NewEntriesCountedOnceAcrossRestarts) {
  auto p = MakeProbe();
  RecordingSink first = Run(*p, {{10}, {9}});
  EXPECT_EQ(Media(first), -1) << "history is not counted";
  EXPECT_EQ(Value(first, Key("drivewatch_error_log_newest_sequence", {})), 10);
  EXPECT_TRUE(lines_.empty());

  // The ring wrapped: slot 0 now holds the newest, order is not trusted.
  RecordingSink second = Run(*p, {{9}, {12}, {11, 0, 3, 0, 0x02}, {10}});
  EXPECT_EQ(Media(second), 1);
  EXPECT_EQ(Value(second, Key("drivewatch_error_log_new_entries_total",
                              {{"sct", "generic"}, {"status", "invalid_field"}})), 1);
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_THAT(lines_[0], HasSubstr("error log entry 11: queue 0 command 3"));
  EXPECT_THAT(lines_[1], HasSubstr("entry 12: queue 1 command 7 status 2h/81h"));
  EXPECT_THAT(lines_[1], HasSubstr("LBA 4096 nsid 1"));

  auto restarted = MakeProbe();
  RecordingSink third = Run(*restarted, {{9}, {12}, {11}, {10}});
  EXPECT_EQ(Media(third), 1) << "kept, not counted again";
  EXPECT_EQ(lines_.size(), 2u);

  // Entries lost between reads are reported as missed.
  RecordingSink fourth = Run(*restarted, {{20}, {19}, {18}, {17}});
  EXPECT_EQ(Media(fourth), 5);
  EXPECT_EQ(Value(fourth, Key("drivewatch_error_log_missed_entries_total", {})), 4);
}

TEST_F(ErrorLogProbeTest, SixtyFourBitCountWrapsAround) {
  auto p = MakeProbe();
  Run(*p, {{~0ull - 1}});
  RecordingSink s = Run(*p, {{1}, {0xffffffffffffffffull}, {~0ull - 1}});
  // ~0 and then 1 (0 is "unused", so the count skips it on wrap; the gap
  // of one is reported as missed rather than guessed).
  EXPECT_EQ(Media(s), 2);
  EXPECT_EQ(Value(s, Key("drivewatch_error_log_newest_sequence", {})), 1);
}

// -- persistent event log -------------------------------------------------------

TEST(PersistentEventLogTest, DecodesSeveralEventTypes) {
  const Bytes log = PelBytes({
      PelEvent(0x04, 1000, Bytes(8, 0)),            // power on or reset
      PelEvent(0x0d, 2000, {7, 70}),                // 77 C over a 70 C threshold
      PelEvent(0x02, 3000, Bytes(16, 1), 4),        // firmware commit with VSI
      PelEvent(0x77, 4000, {}),                     // unknown type
  });
  const PersistentEventLog d = DecodePersistentEventLog(log);
  EXPECT_TRUE(d.problems.empty()) << d.problems[0];
  ASSERT_EQ(d.events.size(), 4u);
  EXPECT_EQ(PersistentEventTypeName(d.events[0].type), "power_on_or_reset");
  EXPECT_EQ(d.events[1].timestamp_ms, 2000u);
  auto t = DecodeThermalExcursion(d.events[1].data);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->over_celsius, 7);
  EXPECT_EQ(t->threshold_celsius, 70);
  EXPECT_EQ(d.events[2].data.size(), 16u) << "VSI skipped";
  EXPECT_EQ(PersistentEventTypeName(d.events[3].type), "other");
}

TEST(PersistentEventLogTest, TruncatedAndOversizedEventsStopDecoding) {
  // An event whose EL runs past the end of the log.
  Bytes oversized = PelEvent(0x0d, 5, {1, 2});
  PutLe(oversized, 22, 60000, 2);
  Bytes log = PelBytes({PelEvent(0x04, 1, {}), oversized, PelEvent(0x04, 9, {})});
  PersistentEventLog d = DecodePersistentEventLog(log);
  ASSERT_EQ(d.events.size(), 1u);
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_THAT(d.problems[0], HasSubstr("runs past the log end"));

  // TNEV claims more events than there are bytes: truncated header.
  Bytes short_log = PelBytes({PelEvent(0x04, 1, {})});
  PutLe(short_log, 4, 3, 4);
  d = DecodePersistentEventLog(short_log);
  EXPECT_EQ(d.events.size(), 1u);
  EXPECT_THAT(d.problems.back(), HasSubstr("header truncated"));

  // TLL beyond the buffer is clamped, TLL below the header is refused.
  Bytes big_tll = PelBytes({PelEvent(0x04, 1, {})}, 1 << 20);
  d = DecodePersistentEventLog(big_tll);
  EXPECT_EQ(d.events.size(), 1u);
  EXPECT_THAT(d.problems[0], HasSubstr("exceeds"));
  Bytes tiny_tll = PelBytes({PelEvent(0x04, 1, {})});
  PutLe(tiny_tll, 8, 100, 8);
  EXPECT_TRUE(DecodePersistentEventLog(tiny_tll).events.empty());

  // EHL too small, VSIL larger than EL, a header-only buffer.
  Bytes bad_ehl = PelEvent(0x04, 1, {});
  bad_ehl[2] = 3;
  EXPECT_THAT(DecodePersistentEventLog(PelBytes({bad_ehl})).problems[0],
              HasSubstr("header length"));
  Bytes bad_vsil = PelEvent(0x04, 1, {0, 0});
  PutLe(bad_vsil, 20, 9, 2);
  d = DecodePersistentEventLog(PelBytes({bad_vsil}));
  EXPECT_EQ(d.events.size(), 1u);
  EXPECT_TRUE(d.events[0].data.empty());
  EXPECT_THAT(d.problems[0], HasSubstr("vendor specific length"));
  EXPECT_FALSE(DecodePersistentEventLog(Bytes(10)).problems.empty());
  EXPECT_FALSE(DecodeThermalExcursion(Bytes(1)).has_value());
}

TEST(PersistentEventLogTest, AnyBytesDecodeWithoutReadingOutside) {
  // Every single-byte corruption of a valid log still decodes (ASan/UBSan
  // builds catch an out-of-bounds read; here, no crash and sane sizes).
  const Bytes good = PelBytes({PelEvent(0x0d, 2, {5, 60}), PelEvent(0x01, 3, Bytes(512, 0))});
  for (std::size_t i = 0; i < 600; ++i) {
    Bytes b = good;
    b[i] ^= 0xff;
    const PersistentEventLog d = DecodePersistentEventLog(b);
    for (const auto& e : d.events) EXPECT_LE(e.data.size(), b.size());
  }
}

class PelProbeTest : public ::testing::Test {
 protected:
  std::unique_ptr<PersistentEventLogProbe> MakeProbe() {
    auto p = std::make_unique<PersistentEventLogProbe>(
        [this](std::string_view l) { lines_.emplace_back(l); });
    p->SetStateStore(store_);
    return p;
  }
  RecordingSink Run(PersistentEventLogProbe& p) {
    RecordingSink sink;
    EXPECT_TRUE(p.Run(ctrl_, Info(), sink).ok());
    return sink;
  }
  FakeController ctrl_;
  std::shared_ptr<MemoryStateStore> store_ = std::make_shared<MemoryStateStore>();
  std::vector<std::string> lines_;
};

TEST_F(PelProbeTest, UnsupportedWhenLpaBit4IsClear) {
  ctrl_.SetIdentify(kIdentifyCnsController, 0, IdentifyWith(0, 0x07, 0));
  auto p = MakeProbe();
  RecordingSink a = Run(*p);
  Run(*p);
  EXPECT_EQ(Value(a, Key("drivewatch_feature_supported",
                         {{"feature", "persistent_event_log"}})), 0);
  EXPECT_EQ(lines_.size(), 1u);
}

TEST_F(PelProbeTest, EstablishReadReleaseAndCountOnce) {
  ctrl_.SetIdentify(kIdentifyCnsController, 0, IdentifyWith(0, 0x10, 0));
  ctrl_.SetLogPage(kPersistentEventLogId, kNsidAll,
                   PelBytes({PelEvent(0x04, 1000, {}), PelEvent(0x0d, 2000, {3, 80})}));
  auto p = MakeProbe();
  RecordingSink first = Run(*p);
  std::vector<std::uint32_t> lsps;
  for (const auto& c : ctrl_.calls()) {
    if (c.command == "log-at") lsps.push_back(c.nsid);
  }
  EXPECT_EQ(lsps, (std::vector<std::uint32_t>{1, 0, 2}));
  const std::string excursions =
      Key("drivewatch_persistent_event_log_events_total", {{"type", "thermal_excursion"}});
  EXPECT_EQ(Value(first, excursions), 0) << "history";
  EXPECT_EQ(Value(first, Key("drivewatch_persistent_event_log_events",
                             {{"type", "thermal_excursion"}})), 1);
  EXPECT_EQ(Value(first, Key("drivewatch_persistent_event_log_thermal_excursion_celsius", {})), 83);
  EXPECT_EQ(Value(first, Key("drivewatch_persistent_event_log_thermal_excursion_threshold_celsius", {})), 80);

  ctrl_.SetLogPage(kPersistentEventLogId, kNsidAll,
                   PelBytes({PelEvent(0x04, 1000, {}), PelEvent(0x0d, 2000, {3, 80}),
                             PelEvent(0x0d, 3000, {9, 80}), PelEvent(0x04, 3500, {})}));
  RecordingSink second = Run(*p);
  EXPECT_EQ(Value(second, excursions), 1);
  EXPECT_EQ(Value(second, Key("drivewatch_persistent_event_log_events_total",
                              {{"type", "power_on_or_reset"}})), 1);
  EXPECT_EQ(Value(second, Key("drivewatch_persistent_event_log_thermal_excursion_celsius", {})), 89);
  EXPECT_DOUBLE_EQ(Value(second, Key("drivewatch_persistent_event_log_last_processed_timestamp_seconds", {})), 3.5);

  auto restarted = MakeProbe();
  RecordingSink third = Run(*restarted);
  EXPECT_EQ(Value(third, excursions), 1) << "not counted again";
}

}  // namespace
}  // namespace drivewatch
