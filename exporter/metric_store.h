// SPDX-License-Identifier: Apache-2.0
// The metric store: the latest samples of every probe run, grouped by scope,
// rendered to the Prometheus text format on demand. A scrape reads only this
// store, never a drive (DESIGN.md decision 1).
#pragma once

#include <cstddef>
#include <cstdint>
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

namespace detail {

// A scope's samples with what rendering needs of their labels, worked out
// once when they are published rather than at every scrape. For sample i,
// `text` holds its sort key in [offsets[2i], offsets[2i+1]) and its escaped
// label text (`a="x",b="y"`, sorted by name) in [offsets[2i+1],
// offsets[2i+2]).
struct PreparedScope {
  std::vector<Sample> samples;
  std::string text;
  std::vector<std::uint32_t> offsets;
};

}  // namespace detail

class MetricStore {
 public:
  // Replaces everything previously published under `scope` ("health/SN1",
  // "drive/SN1", ...) with `samples`, atomically for readers. The samples'
  // labels are sorted and escaped here, outside the lock, once per publish
  // rather than once per scrape.
  void Publish(const std::string& scope, std::vector<Sample> samples);
  // Drops a scope's series.
  void Remove(const std::string& scope);
  // Drops every scope whose name starts with `prefix`.
  void RemovePrefix(const std::string& prefix);

  // The text exposition (format 0.0.4) of everything published, families
  // sorted by name and series by labels. Cheap when nothing changed since
  // the last call: the rendered text is cached and shared.
  //
  // The text is byte for byte what prometheus-cpp 1.0's TextSerializer
  // writes for the same families (the unit test holds it to that): values
  // as printf's "%.16g", NaN as "Nan", infinities as "+Inf"/"-Inf"; label
  // values escape backslash, double quote and newline; HELP is written as
  // it is. Where two scopes publish the same series, the first scope wins.
  std::shared_ptr<const std::string> Render() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, detail::PreparedScope> scopes_;  // guarded by mu_
  mutable std::shared_ptr<const std::string> rendered_;  // guarded by mu_
  // Size of the last rendering, to reserve the next one in one go.
  mutable std::size_t rendered_size_ = 0;  // guarded by mu_
};

}  // namespace drivewatch
