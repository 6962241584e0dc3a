// Every light probe drivewatch knows, registered by name as node_exporter
// registers its collectors: a config section [probes.NAME] switches it and
// sets its interval.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "probes/drive_load.h"
#include "probes/probe.h"

namespace drivewatch {

struct ProbeRegistration {
  std::string name;
  // Makes one instance per drive, so probes may keep per-drive state.
  std::function<std::unique_ptr<DriveProbe>()> make;
  // This probe's settings in a config.
  std::function<config::ProbeSettings(const config::Config&)> settings;
  // Optional: hands a drive's probe its per-drive settings (e.g. the power
  // meter for that serial). Called when the probe is scheduled and after
  // every reload, from any thread; the probe synchronizes.
  std::function<void(DriveProbe&, const config::Config&,
                     const ControllerInfo&)>
      configure;
};

// Every probe, with the power draw probe reading drivewatch's own load on
// each drive from `load` (null: no load is known, every window is idle).
std::vector<ProbeRegistration> MakeProbeRegistry(const DriveLoadBoard* load);
// MakeProbeRegistry(nullptr), made once: for runs without the read latency
// service (tests, benchmarks).
const std::vector<ProbeRegistration>& RegisteredProbes();

}  // namespace drivewatch
