// SPDX-License-Identifier: Apache-2.0
// The persistent event log probe (probes/persistent_event_log.h): log 0Dh
// decoded from events built field by field, damaged logs decoded without
// reading outside them, and each event counted once.
#include "probes/persistent_event_log.h"

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
