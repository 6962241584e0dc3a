// SPDX-License-Identifier: Apache-2.0
// The fill level the history leaves a target at (aging/runner/phase_runner.h):
// each run record of the target, in order, hands the level to its kind's
// FillLevelAfter (aging/phases/phase.h).
#include "aging/runner/phase_runner.h"

#include <optional>
#include <variant>

#include "aging/history/history.h"
#include "aging/phases/phase.h"

namespace drivewatch::aging {

double FillRatioAfter(const Json& r, const std::string& target, double level) {
  const Json* t = r.Find("target");
  if (t == nullptr || t->AsString() != target || !IsRunRecord(r)) return level;
  if (r.Find("outcome") == nullptr) return level;
  const Json* kind = r.Find("kind");
  if (kind == nullptr || kind->type() != Json::Type::kString) return level;
  // The kind the record names decides; a kind this build does not know
  // (a newer drivewatch's record) leaves the level as it was.
  const std::optional<config::PhaseParams> params = config::DefaultPhaseParams(kind->AsString());
  if (!params) return level;
  return std::visit([&](const auto& p) { return FillLevelAfter(p, r, level); }, *params);
}

double LastFillRatio(const std::vector<Json>& history, const std::string& target) {
  double level = -1;
  for (const Json& r : history) level = FillRatioAfter(r, target, level);
  return level;
}

}  // namespace drivewatch::aging
