// SPDX-License-Identifier: Apache-2.0
// The probes' durable memory as they see it (probes/probe_state.h): the
// "key value" lines of their state files, read back from whatever a hand
// edit left; the in-memory store; and the board of drives a heavy phase
// holds.
#include "probes/probe_state.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace drivewatch {
namespace {

std::vector<std::pair<std::string, std::string>> Lines(std::string_view text) {
  const auto parsed = ParseStateLines(text);
  return {parsed.begin(), parsed.end()};
}

TEST(ProbeStateTest, ValueIsTheRestOfTheLine) {
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(Lines("count 41\nlast 2026-01-04 01:59\n"),
            (Pairs{{"count", "41"}, {"last", "2026-01-04 01:59"}}));
  EXPECT_EQ(Lines("count 41"), (Pairs{{"count", "41"}}));  // no final newline
  EXPECT_EQ(Lines("empty \n"), (Pairs{{"empty", ""}}));
}

TEST(ProbeStateTest, HandEditsAreSkippedNotFatal) {
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  // A line without a space, one starting with one, blank lines: left out.
  EXPECT_EQ(Lines("garbage\n value\n\n\ncount 7\n"), (Pairs{{"count", "7"}}));
  EXPECT_TRUE(Lines("").empty());
  EXPECT_TRUE(Lines("\n\n").empty());
  // A key given twice keeps both, in file order, for the probe to choose.
  EXPECT_EQ(Lines("seen 1\nseen 2\n"), (Pairs{{"seen", "1"}, {"seen", "2"}}));
}

TEST(ProbeStateTest, MemoryStoreSaysEnoentUntilSaved) {
  MemoryStateStore store;
  auto missing = store.Load("S1-error-log");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().errnum, ENOENT);
  EXPECT_EQ(missing.error().message, "S1-error-log: not saved yet");
  ASSERT_TRUE(store.Save("S1-error-log", "count 41\n"));
  ASSERT_TRUE(store.Save("S1-error-log", "count 42\n"));  // replaces
  EXPECT_EQ(*store.Load("S1-error-log"), "count 42\n");
}

TEST(ProbeStateTest, BusyBoardSaysWhyUntilCleared) {
  DriveBusyBoard board;
  EXPECT_EQ(board.Busy("S1"), "");
  board.SetBusy("S1", "phase fill");
  EXPECT_EQ(board.Busy("S1"), "phase fill");
  EXPECT_EQ(board.Busy("S2"), "");
  board.ClearBusy("S1");
  EXPECT_EQ(board.Busy("S1"), "");
}

}  // namespace
}  // namespace drivewatch
