#include "exporter/probe_registry.h"

#include "probes/health_probe.h"

namespace drivewatch {

const std::vector<ProbeRegistration>& RegisteredProbes() {
  static const std::vector<ProbeRegistration> probes = {
      {"health", [] { return std::make_unique<HealthProbe>(); },
       [](const config::Config& c) { return c.health; }},
  };
  return probes;
}

}  // namespace drivewatch
