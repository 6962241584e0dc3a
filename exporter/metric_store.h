// The metric store: the latest samples of every probe run, grouped by scope,
// rendered to the Prometheus text format on demand. A scrape reads only this
// store, never a drive (DESIGN.md decision 1).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "probes/sample_sink.h"

namespace drivewatch {

struct Sample {
  const MetricDesc* desc;  // static lifetime
  Labels labels;
  double value = 0;  // gauges and counters
  std::shared_ptr<const HistogramValue> histogram = nullptr;  // histograms
};

// Collects the samples of one probe run; published only if the run succeeds.
class BatchSink : public SampleSink {
 public:
  void Add(const MetricDesc& desc, Labels labels, double value) override {
    samples_.push_back(Sample{&desc, std::move(labels), value, nullptr});
  }
  void AddHistogram(const MetricDesc& desc, Labels labels,
                    std::shared_ptr<const HistogramValue> value) override {
    samples_.push_back(Sample{&desc, std::move(labels), 0, std::move(value)});
  }
  std::vector<Sample>& samples() { return samples_; }

 private:
  std::vector<Sample> samples_;
};

class MetricStore {
 public:
  // Replaces everything previously published under `scope` ("health/SN1",
  // "drive/SN1", ...) with `samples`, atomically for readers.
  void Publish(const std::string& scope, std::vector<Sample> samples);
  // Drops a scope's series.
  void Remove(const std::string& scope);
  // Drops every scope whose name starts with `prefix`.
  void RemovePrefix(const std::string& prefix);

  // The text exposition (format 0.0.4) of everything published, families
  // sorted by name and series by labels. Cheap when nothing changed since
  // the last call: the rendered text is cached and shared.
  std::shared_ptr<const std::string> Render() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::vector<Sample>> scopes_;  // guarded by mu_
  mutable std::shared_ptr<const std::string> rendered_;  // guarded by mu_
};

}  // namespace drivewatch
