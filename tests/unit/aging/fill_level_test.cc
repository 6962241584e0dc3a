// SPDX-License-Identifier: Apache-2.0
// The fill level a perf run measures over, read from the history: the last
// completed fill's, unless something after it may have deallocated part of
// what it wrote.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "aging/phase_runner.h"

namespace drivewatch::aging {
namespace {

Json Record(const std::string& kind, const std::string& outcome, Json results) {
  Json r = Json::Object();
  r["target"] = "t";
  r["kind"] = kind;
  r["outcome"] = outcome;
  r["results"] = std::move(results);
  return r;
}

Json Results(const std::string& key, double value) {
  Json r = Json::Object();
  r[key] = value;
  return r;
}

TEST(LastFillRatio, AReplayThatTrimmedLeavesItUnknown) {
  const Json fill = Record("fill", "completed", Results("fill_ratio", 0.5));
  EXPECT_DOUBLE_EQ(LastFillRatio({fill}, "t"), 0.5);
  // Writes only, or nothing done: the fill's level stands.
  EXPECT_DOUBLE_EQ(
      LastFillRatio({fill, Record("replay", "completed", Results("trimmed_bytes", 0))}, "t"), 0.5);
  EXPECT_DOUBLE_EQ(LastFillRatio({fill, Record("replay", "refused", Json::Object())}, "t"), 0.5);
  // Trimmed, or killed before its record could say.
  EXPECT_LT(LastFillRatio({fill, Record("replay", "aborted", Results("trimmed_bytes", 4096))}, "t"),
            0);
  EXPECT_LT(LastFillRatio({fill, Record("replay", "interrupted", Json::Object())}, "t"), 0);
  EXPECT_LT(LastFillRatio({fill, Record("trim", "completed", Json::Object())}, "t"), 0);
}

}  // namespace
}  // namespace drivewatch::aging
