// SPDX-License-Identifier: Apache-2.0
// The phase kinds of the registry (config/phase_kinds.h) as the config's
// messages list them, so a message test does not repeat the registry by
// hand and a new kind needs no edit here.
#pragma once

#include <string>
#include <string_view>

#include "config/phase_kinds.h"

namespace drivewatch::testing {

// "\"fill\", \"reclaim\", ...": every kind in registry order, or when `key`
// is given only the kinds that take that key.
inline std::string QuotedKindList(std::string_view key = {}) {
  std::string out;
  config::ForEachPhaseKind([&](auto params) {
    if (!key.empty() && !config::PhaseKindHasKey(config::PhaseParams{params}, key)) return;
    if (!out.empty()) out += ", ";
    out += "\"" + std::string(decltype(params)::kName) + "\"";
  });
  return out;
}

}  // namespace drivewatch::testing
