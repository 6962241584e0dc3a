// Every light probe drivewatch knows, registered by name as node_exporter
// registers its collectors: a config section [probes.NAME] switches it and
// sets its interval.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "probes/probe.h"

namespace drivewatch {

struct ProbeRegistration {
  std::string name;
  // Makes one instance per drive, so probes may keep per-drive state.
  std::function<std::unique_ptr<DriveProbe>()> make;
  // This probe's settings in a config.
  std::function<config::ProbeSettings(const config::Config&)> settings;
};

const std::vector<ProbeRegistration>& RegisteredProbes();

}  // namespace drivewatch
