// SPDX-License-Identifier: Apache-2.0
#include "exporter/log_limiter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/common/fake_clock.h"

namespace drivewatch {
namespace {

using std::chrono::seconds;

struct Captured {
  std::vector<std::string> lines;
  LogLimiter::Sink Sink() {
    return [this](log::Level, std::string_view line) { lines.emplace_back(line); };
  }
};

TEST(LogLimiterTest, WritesTheFirstFewThenOneSummaryAMinute) {
  testing::FakeClock clock;
  Captured out;
  LogLimiter limiter(clock, 3, seconds(60), out.Sink());
  for (int i = 0; i < 100; ++i) {
    limiter.Write(log::Level::kInfo, "events SN1", "event " + std::to_string(i));
  }
  ASSERT_EQ(out.lines.size(), 3u);
  EXPECT_EQ(out.lines[2], "event 2");
  limiter.Flush();  // the minute has not ended
  EXPECT_EQ(out.lines.size(), 3u);

  // The storm goes on through the next minute: its first line ends the
  // period, so the summary comes, and nothing else that minute: all 50
  // are held back.
  clock.Advance(seconds(60));
  for (int i = 100; i < 150; ++i) {
    limiter.Write(log::Level::kInfo, "events SN1", "event " + std::to_string(i));
  }
  ASSERT_EQ(out.lines.size(), 4u);
  EXPECT_EQ(out.lines[3],
            "events SN1: 97 more lines like this in the last 60 s not logged; "
            "the latest: event 99");

  // The storm stops: Flush gives the minute's summary without a new line.
  clock.Advance(seconds(61));
  limiter.Flush();
  ASSERT_EQ(out.lines.size(), 5u);
  EXPECT_EQ(out.lines[4],
            "events SN1: 50 more lines like this in the last 61 s not logged; "
            "the latest: event 149");

  // A quiet minute later the key starts afresh with its burst.
  clock.Advance(seconds(60));
  limiter.Flush();
  EXPECT_EQ(out.lines.size(), 5u);
  limiter.Write(log::Level::kInfo, "events SN1", "after");
  ASSERT_EQ(out.lines.size(), 6u);
  EXPECT_EQ(out.lines[5], "after");
}

TEST(LogLimiterTest, KeysAreCountedApart) {
  testing::FakeClock clock;
  Captured out;
  LogLimiter limiter(clock, 2, seconds(60), out.Sink());
  for (int i = 0; i < 5; ++i) {
    limiter.Write(log::Level::kInfo, "SN1", "a");
    limiter.Write(log::Level::kInfo, "SN2", "b");
  }
  EXPECT_EQ(out.lines, (std::vector<std::string>{"a", "b", "a", "b"}));
  clock.Advance(seconds(60));
  limiter.Flush();
  ASSERT_EQ(out.lines.size(), 6u);
  EXPECT_EQ(out.lines[4], "SN1: 3 more lines like this in the last 60 s not logged; the latest: a");
  EXPECT_EQ(out.lines[5], "SN2: 3 more lines like this in the last 60 s not logged; the latest: b");
}

TEST(LogLimiterTest, LinesBelowTheLogLevelAreNeitherWrittenNorCounted) {
  testing::FakeClock clock;
  Captured out;
  LogLimiter limiter(clock, 1, seconds(60), out.Sink());
  for (int i = 0; i < 10; ++i) limiter.Write(log::Level::kDebug, "k", "debug");
  clock.Advance(seconds(60));
  limiter.Flush();
  EXPECT_TRUE(out.lines.empty());
}

TEST(LogLimiterTest, ASingleHeldBackLineIsCountedInTheSingular) {
  testing::FakeClock clock;
  Captured out;
  LogLimiter limiter(clock, 1, seconds(60), out.Sink());
  limiter.Write(log::Level::kWarn, "k", "one");
  limiter.Write(log::Level::kWarn, "k", "two");
  clock.Advance(seconds(60));
  limiter.Flush();
  ASSERT_EQ(out.lines.size(), 2u);
  EXPECT_EQ(out.lines[1], "k: 1 more line like this in the last 60 s not logged; the latest: two");
}

}  // namespace
}  // namespace drivewatch
