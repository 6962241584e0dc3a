// SPDX-License-Identifier: Apache-2.0
#include "exporter/probe_registry.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exporter/state_store.h"
#include "probes/async_event_probe.h"
#include "probes/error_log.h"
#include "probes/persistent_event_log.h"
#include "probes/health_probe.h"
#include "probes/ocp_smart_probe.h"
#include "probes/power_draw_probe.h"
#include "probes/power_probe.h"
#include "probes/self_test.h"
#include "probes/thermal_probe.h"

namespace drivewatch {

namespace {

std::optional<PowerMeterSpec> MeterOf(const config::Config& c,
                                      const ControllerInfo& info) {
  for (const config::PowerMeter& m : c.power_meters) {
    if (m.serial == info.serial) {
      return PowerMeterSpec{m.hwmon, m.command, m.timeout};
    }
  }
  return std::nullopt;
}

SelfTestSettings SelfTestOf(const config::Config& c,
                            const ControllerInfo& info) {
  SelfTestSettings s{c.self_test.short_test, c.self_test.extended_test,
                     c.self_test.abort_on_shutdown};
  for (const config::SelfTestDrive& d : c.self_test.drives) {
    if (d.serial != info.serial) continue;
    if (d.short_test) s.short_test = *d.short_test;
    if (d.extended_test) s.extended_test = *d.extended_test;
  }
  return s;
}

}  // namespace

ProbeRegistration DescribedProbe(std::string name, std::function<ProbeInstance()> make) {
  return {name, std::move(make),
          [name](const config::Config& c) { return c.probe(name); }, name};
}

ProbeRegistration ServingProbe(
    std::string name, std::string serves, std::function<ProbeInstance()> make,
    std::function<config::ProbeSettings(const config::Config&)> settings) {
  return {std::move(name), std::move(make), std::move(settings), std::move(serves)};
}

void CheckProbeRegistry(const std::vector<ProbeRegistration>& probes,
                        std::span<const config::ProbeDescription> catalog) {
  const auto described = [&](std::string_view name) {
    return std::any_of(catalog.begin(), catalog.end(),
                       [&](const config::ProbeDescription& d) { return d.name == name; });
  };
  std::set<std::string_view> names;
  for (const ProbeRegistration& p : probes) {
    if (!names.insert(p.name).second) {
      throw std::logic_error("probe registry: probe \"" + p.name + "\" is registered twice");
    }
    if (!described(p.described_as)) {
      throw std::logic_error("probe registry: probe \"" + p.name + "\" names [probes." +
                             p.described_as +
                             "], which config/probe_catalog.cc does not describe");
    }
  }
  for (const config::ProbeDescription& d : catalog) {
    const bool made = std::any_of(probes.begin(), probes.end(), [&](const ProbeRegistration& p) {
      return p.name == d.name && p.described_as == d.name;
    });
    if (!made) {
      throw std::logic_error("probe registry: config/probe_catalog.cc describes probe \"" +
                             std::string(d.name) +
                             "\", which exporter/probe_registry.cc does not make");
    }
  }
}

const std::vector<ProbeRegistration>& RegisteredProbes() {
  static const std::vector<ProbeRegistration> probes = MakeProbeRegistry(nullptr);
  return probes;
}

std::vector<ProbeRegistration> MakeProbeRegistry(const DriveLoadBoard* load,
                                                 const DriveBusyBoard* busy,
                                                 bool durable_state) {
  auto store = [durable_state](const config::Config& c)
      -> std::shared_ptr<StateStore> {
    if (!durable_state) return nullptr;
    return std::make_shared<DirectoryStateStore>(c.state_directory);
  };
  std::vector<ProbeRegistration> probes{
      DescribedProbe("health", [] { return std::make_unique<HealthProbe>(); }),
      DescribedProbe("thermal", [] { return std::make_unique<ThermalProbe>(); }),
      // Keeps the drive's SMART / temperature AENs on, at the thermal
      // probe's pace (re-applied after controller resets).
      ServingProbe("async_events", "thermal", [] { return std::make_unique<AsyncEventProbe>(); },
                   [](const config::Config& c) {
                     const config::ProbeSettings& thermal = c.probe("thermal");
                     return config::ProbeSettings{thermal.enabled && c.async_events,
                                                  thermal.interval};
                   }),
      DescribedProbe("power", [] { return std::make_unique<PowerProbe>(); }),
      // Power at drivewatch's 10-IOPS load and idle: ticks every second
      // and samples only inside such windows ([probes.power] switches it).
      ServingProbe(
          "power_draw", "power",
          ConfiguredProbe<PowerDrawProbe>(
              [load] { return std::make_unique<PowerDrawProbe>(load); },
              [](PowerDrawProbe& probe, const config::Config& c, const ControllerInfo& info) {
                probe.Configure(MeterOf(c, info), c.probe("power").interval,
                                c.power_at_load_max_age);
              }),
          [](const config::Config& c) {
            return config::ProbeSettings{c.probe("power").enabled, PowerDrawProbe::kTick};
          }),
      // Device self-tests: results, progress and the schedule.
      DescribedProbe("self_test",
                     ConfiguredProbe<SelfTestProbe>(
                         [] { return std::make_unique<SelfTestProbe>(); },
                         [store, busy](SelfTestProbe& probe, const config::Config& c,
                                       const ControllerInfo& info) {
                           probe.Configure(SelfTestOf(c, info), store(c), busy);
                         })),
      DescribedProbe("error_log",
                     ConfiguredProbe<ErrorLogProbe>(
                         [] { return std::make_unique<ErrorLogProbe>(); },
                         [store](ErrorLogProbe& probe, const config::Config& c,
                                 const ControllerInfo&) { probe.SetStateStore(store(c)); })),
      DescribedProbe("persistent_event_log",
                     ConfiguredProbe<PersistentEventLogProbe>(
                         [] { return std::make_unique<PersistentEventLogProbe>(); },
                         [store](PersistentEventLogProbe& probe, const config::Config& c,
                                 const ControllerInfo&) { probe.SetStateStore(store(c)); })),
      // The OCP SMART / Health Information Extended log (C0h).
      DescribedProbe("ocp_smart", [] { return std::make_unique<OcpSmartProbe>(); }),
  };
  // A mismatch is a mistake in this file or the catalog; refuse it when
  // the registry is made, which every daemon start and test does, rather
  // than run a probe no config section switches.
  CheckProbeRegistry(probes, config::ProbeCatalog());
  return probes;
}

}  // namespace drivewatch
