// SPDX-License-Identifier: Apache-2.0
// The Error Information log probe (probes/error_log.h): log 01h decoded
// from bytes built field by field, and new entries counted once across
// restarts against the same state store.
#include "probes/error_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "admin_log_fixtures.h"
#include "probe_test_util.h"

namespace drivewatch {
namespace {

using testing::FakeController;
using testing::IdentifyWith;
using testing::Info;
using testing::Key;
using testing::PutLe;
using testing::RecordingSink;
using testing::Value;
using ::testing::HasSubstr;

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

}  // namespace
}  // namespace drivewatch
