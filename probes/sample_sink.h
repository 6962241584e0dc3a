// SPDX-License-Identifier: Apache-2.0
// The narrow seam between probes and the metric store. Probes describe what
// they measured as samples; they know metric names and units but nothing of
// Prometheus types or HTTP. Only exporter/ turns samples into families.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace drivewatch {

enum class MetricType { kGauge, kCounter, kHistogram };

// A metric's identity and help text. Instances are static constants defined
// next to the probe that emits them; docs/metrics.md lists every one.
struct MetricDesc {
  const char* name;
  const char* help;
  MetricType type;
};

using Labels = std::vector<std::pair<std::string, std::string>>;

// A classic Prometheus histogram, as the text format carries it: cumulative
// counts at increasing upper bounds (the +Inf bucket is `count`).
struct HistogramValue {
  std::vector<double> upper_bounds;             // increasing, finite
  std::vector<std::uint64_t> cumulative_counts; // same size as upper_bounds
  std::uint64_t count = 0;                      // all observations
  double sum = 0;                               // of all observations
};

class SampleSink {
 public:
  virtual ~SampleSink() = default;
  // Records one sample. `labels` must not repeat a name; the store adds
  // nothing of its own, so per-drive samples carry `serial` themselves.
  virtual void Add(const MetricDesc& desc, Labels labels, double value) = 0;
  // Records one histogram; `desc.type` must be kHistogram. Shared, because
  // a histogram may be large and the store keeps it as it is.
  virtual void AddHistogram(const MetricDesc& desc, Labels labels,
                            std::shared_ptr<const HistogramValue> value) = 0;
};

}  // namespace drivewatch
