// SPDX-License-Identifier: Apache-2.0
// LastFillRatio (aging/runner/phase_runner.h): the fill level the history leaves
// a target at, which perf's reads stay inside.
#include <gtest/gtest.h>

#include "aging/runner/phase_runner.h"

namespace drivewatch::aging {
namespace {

Json Record(const std::string& text) {
  auto j = Json::Parse(text);
  EXPECT_TRUE(j) << text;
  return j ? *j : Json();
}

Json Fill(double ratio, const char* outcome = "completed", const char* target = "t") {
  return Record(std::string(R"({"kind":"fill","target":")") + target + R"(","outcome":")" +
                outcome + R"(","results":{"fill_ratio":)" + std::to_string(ratio) + "}}");
}

// A perf record with `preparation` (a JSON array), `results` (members) and
// cells of the given operations.
Json Perf(const std::string& preparation, const std::string& results,
          std::vector<std::string> operations = {"read"}) {
  std::string cells;
  for (const std::string& op : operations) {
    cells += std::string(cells.empty() ? "" : ",") + R"({"name":"c","operation":")" + op + "\"}";
  }
  return Record(R"({"kind":"perf","target":"t","outcome":"completed","results":{)" + results +
                R"(},"series":{)" +
                (preparation.empty() ? "" : "\"preparation\":" + preparation + ",") +
                R"("cells":[)" + cells + "]}}");
}

TEST(FillLevelTest, FillsAndTrimsAsBefore) {
  EXPECT_EQ(LastFillRatio({}, "t"), -1);
  EXPECT_EQ(LastFillRatio({Fill(0.5)}, "t"), 0.5);
  EXPECT_EQ(LastFillRatio({Fill(0.5), Fill(0.1)}, "t"), 0.1);
  EXPECT_EQ(LastFillRatio({Fill(0.5), Fill(0.9, "aborted")}, "t"), -1);
  EXPECT_EQ(LastFillRatio({Fill(0.5), Record(R"({"kind":"trim","target":"t","outcome":"completed"})")},
                          "t"),
            -1);
  // Another target's records, and step records, leave it alone.
  EXPECT_EQ(LastFillRatio({Fill(0.5), Fill(0.2, "completed", "u")}, "t"), 0.5);
  EXPECT_EQ(LastFillRatio({Fill(0.5), Record(R"({"record":"step","kind":"fill","target":"t",)"
                                             R"("outcome":"completed","results":{"fill_ratio":1}})")},
                          "t"),
            0.5);
  // A damaged fill_ratio is no level.
  EXPECT_EQ(LastFillRatio({Record(R"({"kind":"fill","target":"t","outcome":"completed",)"
                                  R"("results":{"fill_ratio":"half"}})")},
                          "t"),
            -1);
  EXPECT_EQ(LastFillRatio({Fill(1.5)}, "t"), -1);
}

TEST(FillLevelTest, APerfRunWithoutPreparationKeepsTheLevelUnlessACellTrims) {
  EXPECT_EQ(LastFillRatio({Fill(0.5), Perf("", R"("fill_ratio":0.5)", {"read", "write", "mix"})},
                          "t"),
            0.5);
  EXPECT_EQ(LastFillRatio({Fill(0.5), Perf("", R"("fill_ratio":0.5)", {"read", "trim"})}, "t"), -1);
  // Without a fill on record it stays unknown.
  EXPECT_EQ(LastFillRatio({Perf("", "", {"write"})}, "t"), -1);
}

TEST(FillLevelTest, PreconditioningWritesTheWholeTarget) {
  const Json done = Perf(R"(["purge","precondition"])",
                         R"("purged_bytes":1,"preconditioned_bytes":2,"fill_ratio":1.0)");
  EXPECT_EQ(LastFillRatio({Fill(0.1), done}, "t"), 1);
  EXPECT_EQ(LastFillRatio({done}, "t"), 1);
  EXPECT_EQ(LastFillRatio({Perf(R"(["precondition"])", R"("preconditioned_bytes":2,"fill_ratio":1)")},
                          "t"),
            1);
  // A later fill sets it again.
  EXPECT_EQ(LastFillRatio({done, Fill(0.5)}, "t"), 0.5);
}

TEST(FillLevelTest, APreparationCutShortAfterTouchingTheTargetLeavesItUnknown) {
  // Purged, then preconditioning stopped in its first pass.
  EXPECT_EQ(LastFillRatio({Fill(0.5), Perf(R"(["purge","precondition"])",
                                           R"("purged_bytes":1,"preconditioned_bytes":1)")},
                          "t"),
            -1);
  // Refused before its first write: nothing changed.
  EXPECT_EQ(LastFillRatio({Fill(0.5), Perf(R"(["purge","precondition"])", "")}, "t"), 0.5);
}

TEST(FillLevelTest, APurgeWithoutPreconditioningEmptiesTheTarget) {
  // Its cells then write anywhere: unknown, unless none wrote.
  EXPECT_EQ(LastFillRatio({Fill(0.5), Perf(R"(["purge"])", R"("purged_bytes":1,"fill_ratio":0)",
                                           {"write"})},
                          "t"),
            -1);
  EXPECT_EQ(LastFillRatio({Fill(0.5), Perf(R"(["purge"])", R"("purged_bytes":1,"fill_ratio":0)",
                                           {"read"})},
                          "t"),
            0);
}

// A replay that trimmed leaves the level unknown, as a trim phase does; so
// does one killed before its record could say. Writes only, or a refusal,
// leave the fill's level standing.
TEST(FillLevelTest, AReplayThatTrimmedLeavesItUnknown) {
  const Json fill = Fill(0.5);
  const auto replay = [](const char* outcome, const char* results) {
    return Record(std::string(R"({"kind":"replay","target":"t","outcome":")") + outcome +
                  R"(","results":{)" + results + "}}");
  };
  EXPECT_EQ(LastFillRatio({fill, replay("completed", R"("trimmed_bytes":0)")}, "t"), 0.5);
  EXPECT_EQ(LastFillRatio({fill, replay("refused", "")}, "t"), 0.5);
  EXPECT_LT(LastFillRatio({fill, replay("aborted", R"("trimmed_bytes":4096)")}, "t"), 0);
  EXPECT_LT(LastFillRatio({fill, replay("interrupted", "")}, "t"), 0);
}

}  // namespace
}  // namespace drivewatch::aging
