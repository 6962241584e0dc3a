// SPDX-License-Identifier: Apache-2.0
// Every light probe, described once: its name, whether it runs and how
// often by default, and what it reads. Its [probes.NAME] section with the
// `enabled` and `interval` keys comes from the description: the schema
// (config/schema.cc) makes the two keys, so the loader reads them, ToToml()
// and the example config write them, drivewatch.toml(5) and check-config
// know them. config/ includes nothing of probes/ or exporter/, so the
// descriptions are config's own data; exporter/probe_registry.cc binds each
// to the probe it makes, and refuses to start when the two lists differ.
#pragma once

#include <chrono>
#include <span>
#include <string_view>

namespace drivewatch::config {

struct ProbeDescription {
  // The section [probes.NAME], and the probe's name in the registry, its
  // metrics' scope and the logs.
  std::string_view name;
  // What the probe reads, and that `enabled` switches it: the doc of the
  // `enabled` key, as the example config and drivewatch.toml(5) print it.
  std::string_view reads;
  // The doc of the `interval` key; empty: the key has none.
  std::string_view interval_doc;
  bool enabled = true;
  std::chrono::milliseconds interval{60'000};
  // The longest interval the key takes; the shortest is 1s.
  std::chrono::milliseconds max_interval = std::chrono::hours{24};
};

// In the order of their sections in the example config.
std::span<const ProbeDescription> ProbeCatalog();
// The probe described as `name`, or null.
const ProbeDescription* FindProbeDescription(std::string_view name);

}  // namespace drivewatch::config
