// SPDX-License-Identifier: Apache-2.0
// The fill level the history leaves a target at (aging/runner/phase_runner.h):
// each run record of the target, in order, hands the level to its kind's
// FillLevelAfter (aging/phases/phase.h).
#include "aging/runner/phase_runner.h"

#include <optional>
#include <variant>

#include "aging/history/history.h"
#include "aging/history/run_record.h"
#include "aging/phases/phase.h"

namespace drivewatch::aging {

double FillRatioAfter(const Json& r, const std::string& target, double level) {
  if (!IsRunRecord(r)) return level;
  // A record made by hand may lack fields a run's has; one whose target,
  // kind or outcome is not there, or not as written, says nothing of it.
  const Expected<RunRecord> run = ReadRunHeader(r, RecordFields::kPresent);
  if (!run || run->target != target || run->outcome.empty() || run->kind.empty()) return level;
  // The kind the record names decides; a kind this build does not know
  // (a newer drivewatch's record) leaves the level as it was.
  const std::optional<config::PhaseParams> params = config::DefaultPhaseParams(run->kind);
  if (!params) return level;
  return std::visit([&](const auto& p) { return FillLevelAfter(p, r, level); }, *params);
}

double LastFillRatio(const std::vector<Json>& history, const std::string& target) {
  double level = -1;
  for (const Json& r : history) level = FillRatioAfter(r, target, level);
  return level;
}

}  // namespace drivewatch::aging
