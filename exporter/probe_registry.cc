#include "exporter/probe_registry.h"

#include "probes/async_event_probe.h"
#include "probes/health_probe.h"
#include "probes/power_probe.h"
#include "probes/thermal_probe.h"

namespace drivewatch {

const std::vector<ProbeRegistration>& RegisteredProbes() {
  static const std::vector<ProbeRegistration> probes = {
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
       [](const config::Config& c) { return c.power; },
       [](DriveProbe& probe, const config::Config& c,
          const ControllerInfo& info) {
         std::optional<PowerMeterSpec> meter;
         for (const config::PowerMeter& m : c.power_meters) {
           if (m.serial != info.serial) continue;
           meter = PowerMeterSpec{m.hwmon, m.command, m.timeout};
         }
         static_cast<PowerProbe&>(probe).SetMeter(std::move(meter));
       }},
  };
  return probes;
}

}  // namespace drivewatch
