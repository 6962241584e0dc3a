// SPDX-License-Identifier: Apache-2.0
// Every light probe drivewatch knows, registered by name as node_exporter
// registers its collectors. A probe is described once, in config/'s probe
// catalog (config/probe_catalog.cc: its name, defaults and what it reads),
// which gives it its [probes.NAME] section with the enabled and interval
// keys; this registry binds each description to the probe it makes. A new
// light probe is its files, probes/NAME_probe.{h,cc}, its description in
// the catalog, and its line (and include) in MakeProbeRegistry(). config/
// may not include probes/, so the two lists are two: the registry refuses
// to be made (std::logic_error, at every start and in every test) when a
// description has no probe or a probe no description.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/probe_catalog.h"
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
  // The described probe (config/probe_catalog.h) whose [probes.NAME]
  // section switches this one: `name` itself, or for a probe that serves a
  // described one (async_events serves thermal), that probe.
  std::string described_as;
};

// A described probe, switched and paced by its own [probes.NAME] section.
ProbeRegistration DescribedProbe(std::string name, std::function<ProbeInstance()> make);

// A probe that serves the described probe `serves`: switched by that
// probe's section, with `settings` derived from it.
ProbeRegistration ServingProbe(
    std::string name, std::string serves, std::function<ProbeInstance()> make,
    std::function<config::ProbeSettings(const config::Config&)> settings);

// Makes a probe of type P that takes per-drive settings: `configure` gets
// the P that `make` made.
template <typename P>
std::function<ProbeInstance()> ConfiguredProbe(
    std::function<std::unique_ptr<P>()> make,
    std::function<void(P&, const config::Config&, const ControllerInfo&)> configure) {
  return [make = std::move(make), configure = std::move(configure)] {
    std::unique_ptr<P> probe = make();
    P& typed = *probe;
    return ProbeInstance(std::move(probe),
                         [&typed, configure](const config::Config& c, const ControllerInfo& info) {
                           configure(typed, c, info);
                         });
  };
}

// Throws std::logic_error naming the mismatch when `probes` and `catalog`
// differ: a description that no registration makes under its name, a
// registration whose described_as the catalog does not describe, or two
// registrations of one name.
void CheckProbeRegistry(const std::vector<ProbeRegistration>& probes,
                        std::span<const config::ProbeDescription> catalog);

// Every probe, checked against the catalog (CheckProbeRegistry), with the
// power draw probe reading drivewatch's own load on each drive from `load`
// (null: no load is known, every window is idle), the self-test probe
// asking `busy` whether a heavy phase has a drive (null: never), and the
// log probes keeping what they counted in files in the config's state
// directory when `durable_state` is set (the daemon), else in memory.
std::vector<ProbeRegistration> MakeProbeRegistry(
    const DriveLoadBoard* load, const DriveBusyBoard* busy = nullptr,
    bool durable_state = false);
// MakeProbeRegistry(nullptr), made once: for runs without the read latency
// service (tests, benchmarks).
const std::vector<ProbeRegistration>& RegisteredProbes();

}  // namespace drivewatch
