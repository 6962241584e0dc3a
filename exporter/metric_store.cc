#include "exporter/metric_store.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

namespace drivewatch {

void MetricStore::Publish(const std::string& scope,
                          std::vector<Sample> samples) {
  std::lock_guard lock(mu_);
  scopes_[scope] = std::move(samples);
  rendered_.reset();
}

void MetricStore::Remove(const std::string& scope) {
  std::lock_guard lock(mu_);
  if (scopes_.erase(scope) > 0) rendered_.reset();
}

void MetricStore::RemovePrefix(const std::string& prefix) {
  std::lock_guard lock(mu_);
  auto it = scopes_.lower_bound(prefix);
  while (it != scopes_.end() && it->first.compare(0, prefix.size(), prefix) == 0) {
    it = scopes_.erase(it);
    rendered_.reset();
  }
}

namespace {

prometheus::ClientMetric ToClientMetric(const Sample& s) {
  prometheus::ClientMetric m;
  m.label.reserve(s.labels.size());
  for (const auto& [name, value] : s.labels) m.label.push_back({name, value});
  std::sort(m.label.begin(), m.label.end());
  switch (s.desc->type) {
    case MetricType::kCounter:
      m.counter.value = s.value;
      break;
    case MetricType::kGauge:
      m.gauge.value = s.value;
      break;
    case MetricType::kHistogram:
      if (s.histogram) {
        const HistogramValue& h = *s.histogram;
        m.histogram.sample_count = h.count;
        m.histogram.sample_sum = h.sum;
        for (size_t i = 0; i < h.upper_bounds.size() && i < h.cumulative_counts.size(); ++i) {
          m.histogram.bucket.push_back({h.cumulative_counts[i], h.upper_bounds[i]});
        }
        // The text format needs the +Inf bucket, equal to the count.
        m.histogram.bucket.push_back({h.count, std::numeric_limits<double>::infinity()});
      }
      break;
  }
  return m;
}

}  // namespace

std::shared_ptr<const std::string> MetricStore::Render() const {
  std::lock_guard lock(mu_);
  if (rendered_) return rendered_;

  // Group by metric name. Two scopes never publish the same series; if a bug
  // made them, the first one wins rather than emitting an invalid duplicate.
  std::map<std::string, prometheus::MetricFamily> families;
  for (const auto& [scope, samples] : scopes_) {
    for (const Sample& s : samples) {
      auto& family = families[s.desc->name];
      if (family.name.empty()) {
        family.name = s.desc->name;
        family.help = s.desc->help;
        family.type = s.desc->type == MetricType::kCounter
                          ? prometheus::MetricType::Counter
                      : s.desc->type == MetricType::kHistogram
                          ? prometheus::MetricType::Histogram
                          : prometheus::MetricType::Gauge;
      }
      family.metric.push_back(ToClientMetric(s));
    }
  }
  std::vector<prometheus::MetricFamily> out;
  out.reserve(families.size());
  for (auto& [name, family] : families) {
    auto& metrics = family.metric;
    std::stable_sort(metrics.begin(), metrics.end(),
                     [](const auto& a, const auto& b) { return a.label < b.label; });
    metrics.erase(std::unique(metrics.begin(), metrics.end(),
                              [](const auto& a, const auto& b) {
                                return a.label == b.label;
                              }),
                  metrics.end());
    out.push_back(std::move(family));
  }
  std::ostringstream text;
  prometheus::TextSerializer().Serialize(text, out);
  rendered_ = std::make_shared<const std::string>(std::move(text).str());
  return rendered_;
}

}  // namespace drivewatch
