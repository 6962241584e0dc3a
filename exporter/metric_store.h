// SPDX-License-Identifier: Apache-2.0
// The metric store: the latest samples of every probe run, grouped by scope,
// kept as prometheus-cpp families and rendered by its TextSerializer. A
// scrape reads only this store, never a drive (DESIGN.md decision 1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <prometheus/client_metric.h>
#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

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

// One scope as published: its samples as prometheus-cpp's data model, one
// MetricFamily per metric name (help and type of its first sample, labels
// sorted), and the text prometheus::TextSerializer writes for them, worked
// out once when they are published rather than at every scrape. `text`
// holds, for each family, its HELP and TYPE lines and, for each series, its
// sort key then its sample lines; the spans below index into it.
struct PreparedScope {
  struct Span {
    std::uint32_t begin = 0, end = 0;
  };
  struct SeriesText {
    Span key;    // labels as a bytewise-comparable sort key
    Span lines;  // the series' sample lines, as the serializer wrote them
  };
  std::vector<prometheus::MetricFamily> families;
  std::vector<Span> headers;                   // per family
  std::vector<std::vector<SeriesText>> series;  // per family, per metric
  std::string text;
};

}  // namespace detail

// The store is a prometheus::Collectable: Collect() gives every published
// family, merged across scopes, and Render() is the text prometheus-cpp's
// TextSerializer writes for exactly those families, assembled from what it
// wrote for each scope at publish time.
class MetricStore : public prometheus::Collectable {
 public:
  // Replaces everything previously published under `scope` ("health/SN1",
  // "drive/SN1", ...) with `samples`, atomically for readers. The samples
  // become prometheus-cpp families and are serialized here, outside the
  // lock, once per publish rather than once per scrape.
  void Publish(const std::string& scope, std::vector<Sample> samples);
  // Drops a scope's series.
  void Remove(const std::string& scope);
  // Drops every scope whose name starts with `prefix`.
  void RemovePrefix(const std::string& prefix);

  // Every family published, sorted by name, with the help and type of the
  // first scope (in scope-name order) that published it; its series from
  // every scope, sorted by labels. Where two scopes publish the same series,
  // the first scope's is kept.
  std::vector<prometheus::MetricFamily> Collect() const override;

  // The text exposition (format 0.0.4) of Collect()'s families, byte for
  // byte what prometheus::TextSerializer writes for them (the unit test
  // holds it to that). Cheap when nothing changed since the last call: the
  // rendered text is cached and shared.
  std::shared_ptr<const std::string> Render() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, detail::PreparedScope> scopes_;  // guarded by mu_
  mutable std::shared_ptr<const std::string> rendered_;  // guarded by mu_
  // Size of the last rendering, to reserve the next one in one go.
  mutable std::size_t rendered_size_ = 0;  // guarded by mu_
};

}  // namespace drivewatch
