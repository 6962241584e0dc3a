// SPDX-License-Identifier: Apache-2.0
// A light probe's settings by its config section, for the probe registry
// (exporter/probe_registry.cc), which then names [probes.NAME] instead of
// the Config fields behind it.
#pragma once

#include <optional>
#include <string_view>

#include "config/config.h"

namespace drivewatch::config {

// A probe section's enabled and interval as the config schema declares
// them ("probes.health"); nullopt when no section of that path has both
// keys.
std::optional<ProbeSettings> ProbeSectionSettings(const Config& config,
                                                  std::string_view section);

}  // namespace drivewatch::config
