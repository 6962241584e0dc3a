// The narrow seam between probes and the metric store. Probes describe what
// they measured as samples; they know metric names and units but nothing of
// Prometheus types or HTTP. Only exporter/ turns samples into families.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace drivewatch {

enum class MetricType { kGauge, kCounter };

// A metric's identity and help text. Instances are static constants defined
// next to the probe that emits them; docs/metrics.md lists every one.
struct MetricDesc {
  const char* name;
  const char* help;
  MetricType type;
};

using Labels = std::vector<std::pair<std::string, std::string>>;

class SampleSink {
 public:
  virtual ~SampleSink() = default;
  // Records one sample. `labels` must not repeat a name; the store adds
  // nothing of its own, so per-drive samples carry `serial` themselves.
  virtual void Add(const MetricDesc& desc, Labels labels, double value) = 0;
};

}  // namespace drivewatch
