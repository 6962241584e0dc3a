#include "exporter/probe_registry.h"

#include "probes/async_event_probe.h"
#include "probes/health_probe.h"
#include "probes/power_draw_probe.h"
#include "probes/power_probe.h"
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

}  // namespace

const std::vector<ProbeRegistration>& RegisteredProbes() {
  static const std::vector<ProbeRegistration> probes = MakeProbeRegistry(nullptr);
  return probes;
}

std::vector<ProbeRegistration> MakeProbeRegistry(const DriveLoadBoard* load) {
  return {
      {"health", [] { return std::make_unique<HealthProbe>(); },
       [](const config::Config& c) { return c.health; }},
      {"thermal", [] { return std::make_unique<ThermalProbe>(); },
       [](const config::Config& c) { return c.thermal; }},
      // Keeps the drive's SMART / temperature AENs on, at the thermal
      // probe's pace (re-applied after controller resets).
      {"async_events", [] { return std::make_unique<AsyncEventProbe>(); },
       [](const config::Config& c) {
         return config::ProbeSettings{c.thermal.enabled && c.async_events,
                                      c.thermal.interval};
       }},
      {"power", [] { return std::make_unique<PowerProbe>(); },
       [](const config::Config& c) { return c.power; }},
      // Power at drivewatch's 10-IOPS load and idle: ticks every second
      // and samples only inside such windows ([probes.power] switches it).
      {"power_draw", [load] { return std::make_unique<PowerDrawProbe>(load); },
       [](const config::Config& c) {
         return config::ProbeSettings{c.power.enabled, PowerDrawProbe::kTick};
       },
       [](DriveProbe& probe, const config::Config& c,
          const ControllerInfo& info) {
         static_cast<PowerDrawProbe&>(probe).Configure(MeterOf(c, info),
                                                       c.power.interval);
       }},
  };
}

}  // namespace drivewatch
