// SPDX-License-Identifier: Apache-2.0
#include "exporter/probe_registry.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "config/probe_section.h"
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

// A probe switched and paced by its own config section's enabled and
// interval keys ("probes.health"), as the config schema declares them.
std::function<config::ProbeSettings(const config::Config&)> SectionSettings(
    std::string section) {
  // A section without both keys is a mistake in this file; refuse it when
  // the registry is made, which every daemon start and test does, rather
  // than run the probe with made-up settings.
  if (!config::ProbeSectionSettings(config::Defaults(), section)) {
    throw std::logic_error("probe registry: config section [" + section +
                           "] has no enabled and interval keys");
  }
  return [section = std::move(section)](const config::Config& c) {
    return *config::ProbeSectionSettings(c, section);
  };
}

}  // namespace

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
  return {
      {"health", [] { return std::make_unique<HealthProbe>(); },
       SectionSettings("probes.health")},
      {"thermal", [] { return std::make_unique<ThermalProbe>(); },
       SectionSettings("probes.thermal")},
      // Keeps the drive's SMART / temperature AENs on, at the thermal
      // probe's pace (re-applied after controller resets).
      {"async_events", [] { return std::make_unique<AsyncEventProbe>(); },
       [](const config::Config& c) {
         return config::ProbeSettings{c.thermal.enabled && c.async_events,
                                      c.thermal.interval};
       }},
      {"power", [] { return std::make_unique<PowerProbe>(); },
       SectionSettings("probes.power")},
      // Power at drivewatch's 10-IOPS load and idle: ticks every second
      // and samples only inside such windows ([probes.power] switches it).
      ConfiguredProbe<PowerDrawProbe>(
          "power_draw",
          [load] { return std::make_unique<PowerDrawProbe>(load); },
          [](const config::Config& c) {
            return config::ProbeSettings{c.power.enabled,
                                         PowerDrawProbe::kTick};
          },
          [](PowerDrawProbe& probe, const config::Config& c,
             const ControllerInfo& info) {
            probe.Configure(MeterOf(c, info), c.power.interval, c.power_at_load_max_age);
          }),
      // Device self-tests: results, progress and the schedule.
      ConfiguredProbe<SelfTestProbe>(
          "self_test", [] { return std::make_unique<SelfTestProbe>(); },
          SectionSettings("probes.self_test"),
          [store, busy](SelfTestProbe& probe, const config::Config& c,
                        const ControllerInfo& info) {
            probe.Configure(SelfTestOf(c, info), store(c), busy);
          }),
      ConfiguredProbe<ErrorLogProbe>(
          "error_log", [] { return std::make_unique<ErrorLogProbe>(); },
          SectionSettings("probes.error_log"),
          [store](ErrorLogProbe& probe, const config::Config& c,
                  const ControllerInfo&) { probe.SetStateStore(store(c)); }),
      ConfiguredProbe<PersistentEventLogProbe>(
          "persistent_event_log",
          [] { return std::make_unique<PersistentEventLogProbe>(); },
          SectionSettings("probes.persistent_event_log"),
          [store](PersistentEventLogProbe& probe, const config::Config& c,
                  const ControllerInfo&) { probe.SetStateStore(store(c)); }),
      // The OCP SMART / Health Information Extended log (C0h).
      {"ocp_smart", [] { return std::make_unique<OcpSmartProbe>(); },
       SectionSettings("probes.ocp_smart")},
  };
}

}  // namespace drivewatch
