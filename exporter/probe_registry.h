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
#include "probes/latency/drive_load.h"
#include "probes/probe.h"
#include "probes/probe_state.h"

namespace drivewatch {

// One drive's instance of a probe, with what hands it its per-drive
// settings (e.g. the power meter for that serial), bound to the probe's own
// type when it was made, so nothing casts a DriveProbe back. Called when
// the probe is scheduled and after every reload, from any thread; the
// probe synchronizes.
struct ProbeInstance {
  template <typename P>
  ProbeInstance(std::unique_ptr<P> p) : probe(std::move(p)) {}  // NOLINT
  ProbeInstance(std::unique_ptr<DriveProbe> p,
                std::function<void(const config::Config&,
                                   const ControllerInfo&)>
                    c)
      : probe(std::move(p)), configure(std::move(c)) {}

  std::unique_ptr<DriveProbe> probe;
  std::function<void(const config::Config&, const ControllerInfo&)> configure;
};

struct ProbeRegistration {
  std::string name;
  // Makes one instance per drive, so probes may keep per-drive state.
  std::function<ProbeInstance()> make;
  // This probe's settings in a config.
  std::function<config::ProbeSettings(const config::Config&)> settings;
};

// A registration for a probe of type P that takes per-drive settings:
// `configure` gets the P that `make` made.
template <typename P>
ProbeRegistration ConfiguredProbe(
    std::string name, std::function<std::unique_ptr<P>()> make,
    std::function<config::ProbeSettings(const config::Config&)> settings,
    std::function<void(P&, const config::Config&, const ControllerInfo&)>
        configure) {
  return {std::move(name),
          [make = std::move(make), configure = std::move(configure)] {
            std::unique_ptr<P> probe = make();
            P& typed = *probe;
            return ProbeInstance(
                std::move(probe),
                [&typed, configure](const config::Config& c,
                                    const ControllerInfo& info) {
                  configure(typed, c, info);
                });
          },
          std::move(settings)};
}

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
