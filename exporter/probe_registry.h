// SPDX-License-Identifier: Apache-2.0
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
#include "probes/probe_state.h"

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
// each drive from `load` (null: no load is known, every window is idle),
// the self-test probe asking `busy` whether a heavy phase has a drive
// (null: never), and the log probes keeping what they counted in files in
// the config's state directory when `durable_state` is set (the daemon),
// else in memory.
std::vector<ProbeRegistration> MakeProbeRegistry(
    const DriveLoadBoard* load, const DriveBusyBoard* busy = nullptr,
    bool durable_state = false);
// MakeProbeRegistry(nullptr), made once: for runs without the read latency
// service (tests, benchmarks).
const std::vector<ProbeRegistration>& RegisteredProbes();

}  // namespace drivewatch
