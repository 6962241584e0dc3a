// SPDX-License-Identifier: Apache-2.0
// LastFillRatio (aging/runner/phase_runner.h): the fill level the history leaves
// a target at, which perf's reads stay inside; and the other hooks the runner
// asks a kind (aging/phases/phase.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <string>
#include <string_view>
#include <type_traits>

#include "aging/phases/phase.h"
#include "aging/runner/phase_runner.h"

namespace drivewatch::aging {
namespace {

Json Record(const std::string& text) {
  auto j = ParseJson(text);
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

// Every kind of the registry (config/phase_kinds.h), after a fill to 50 %:
// what a completed run of it with no results leaves. A kind added to the
// registry fails here until its rule is written down in this table.
TEST(FillLevelTest, EveryKindOfTheRegistryHasItsRule) {
  const std::map<std::string_view, double> expected = {
      {"fill", -1},  // a fill without its fill_ratio
      {"reclaim", 0.5},          {"perf", 0.5},      {"trim", -1},
      {"retention-write", 0.5},  {"retention-verify", 0.5},
      {"power-states", 0.5},     {"endurance", 0.5}, {"replay", 0.5},
      {"sqlite", 0.5},  // its databases are files beside the target's own
      {"pgbench", 0.5},  // its cluster too
  };
  std::size_t kinds = 0;
  config::ForEachPhaseKind([&](const auto& params) {
    ++kinds;
    const std::string_view name = params.kName;
    const Json run = Record(std::string(R"({"kind":")") + std::string(name) +
                            R"(","target":"t","outcome":"completed","results":{}})");
    auto rule = expected.find(name);
    ASSERT_NE(rule, expected.end()) << "kind " << name << " has no fill level rule here";
    EXPECT_EQ(LastFillRatio({Fill(0.5), run}, "t"), rule->second) << name;
  });
  EXPECT_EQ(kinds, expected.size());
}

// A kind that writes and says nothing of the fill level leaves it unknown,
// so the perf runs after it cannot trust a stale level; one that only
// reads leaves it as it was. (Two structs shaped as kinds, not registered:
// the hooks' defaults are what a new kind gets.)
struct WritingKind {
  static constexpr std::string_view kName = "writes";
  static constexpr bool kWrites = true;
};
struct ReadingKind {
  static constexpr std::string_view kName = "reads";
  static constexpr bool kWrites = false;
};

TEST(FillLevelTest, ANewWritingKindLeavesItUnknownByDefault) {
  const Json run = Record(R"({"kind":"x","target":"t","outcome":"completed"})");
  EXPECT_EQ(FillLevelAfter(WritingKind{}, run, 0.5), -1);
  EXPECT_EQ(FillLevelAfter(ReadingKind{}, run, 0.5), 0.5);
  // A record of a kind this build does not know leaves the level alone.
  EXPECT_EQ(LastFillRatio({Fill(0.5), Record(R"({"kind":"sqlite","target":"t","outcome":"completed"})")},
                          "t"),
            0.5);
}

// Only a retention study writes less than the whole target, as itself.
TEST(KindHooksTest, OnlyARetentionStudyNarrowsItsWrites) {
  config::ForEachPhaseKind([](const auto& params) {
    using Params = std::decay_t<decltype(params)>;
    if constexpr (!std::is_same_v<Params, config::RetentionWriteParams>) {
      const WriteScope scope = KindWriteScope(params);
      EXPECT_EQ(scope.study, "") << params.kName;
      EXPECT_EQ(scope.offset, 0u) << params.kName;
      EXPECT_EQ(scope.length, 0u) << params.kName;
    }
  });
  config::RetentionWriteParams study;
  study.study = "lab";
  study.region_offset = 1u << 20;
  study.region_length = 4u << 20;
  const WriteScope scope = KindWriteScope(study);
  EXPECT_EQ(scope.study, "lab");
  EXPECT_EQ(scope.offset, 1u << 20);
  EXPECT_EQ(scope.length, 4u << 20);
}

// A verify without its study fails before it opens a device, and says what
// to run first; every other kind needs nothing.
TEST(KindHooksTest, AVerifyNeedsItsStudyFirst) {
  const std::string dir = ::testing::TempDir() + "dw-preflight-" + std::to_string(getpid());
  config::RetentionVerifyParams verify;
  verify.study = "lab-2026-q4";
  const Status s = KindPreflight(verify, dir);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("lab-2026-q4"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("; run its retention-write phase first"), std::string::npos)
      << s.error().message;
  config::ForEachPhaseKind([&](const auto& params) {
    using Params = std::decay_t<decltype(params)>;
    if constexpr (!std::is_same_v<Params, config::RetentionVerifyParams>) {
      EXPECT_TRUE(KindPreflight(params, dir)) << params.kName;
    }
  });
}

}  // namespace
}  // namespace drivewatch::aging
