// SPDX-License-Identifier: Apache-2.0
// Every byte of the exposition is written by prometheus::TextSerializer. It
// runs when a probe publishes, once per series, so that a scrape only sorts
// and joins what it wrote: the serializer goes through an ostream, a few
// microseconds a series, which over the ~9,400 series of 64 drives would be
// tens of milliseconds at every scrape instead of once per publish.
#include "exporter/metric_store.h"

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <deque>
#include <limits>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace drivewatch {

namespace {

using detail::PreparedScope;
using Span = PreparedScope::Span;
using SeriesText = PreparedScope::SeriesText;

prometheus::MetricType ToPrometheus(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return prometheus::MetricType::Counter;
    case MetricType::kHistogram:
      return prometheus::MetricType::Histogram;
    case MetricType::kGauge:
      break;
  }
  return prometheus::MetricType::Gauge;
}

// A sample as prometheus-cpp's ClientMetric: labels sorted by name, as its
// Family keeps them; the value in the field of the sample's own type. A
// sample of another type than its family's first thus renders as that
// type's zero. The +Inf bucket, which the text format needs, is the count.
prometheus::ClientMetric ToClientMetric(Sample& s) {
  prometheus::ClientMetric m;
  m.label.reserve(s.labels.size());
  for (auto& [name, value] : s.labels) {
    m.label.push_back({std::move(name), std::move(value)});
  }
  std::sort(m.label.begin(), m.label.end());
  switch (s.desc->type) {
    case MetricType::kCounter:
      m.counter.value = s.value;
      break;
    case MetricType::kGauge:
      m.gauge.value = s.value;
      break;
    case MetricType::kHistogram: {
      const HistogramValue* h = s.histogram.get();
      if (h == nullptr) break;
      m.histogram.sample_count = h->count;
      m.histogram.sample_sum = h->sum;
      const std::size_t n = std::min(h->upper_bounds.size(), h->cumulative_counts.size());
      m.histogram.bucket.reserve(n + 1);
      for (std::size_t i = 0; i < n; ++i) {
        m.histogram.bucket.push_back({h->cumulative_counts[i], h->upper_bounds[i]});
      }
      break;
    }
  }
  // Every series has the +Inf bucket, so that one of another type, or
  // without a value, in a histogram family still has it (of count 0).
  m.histogram.bucket.push_back(
      {m.histogram.sample_count, std::numeric_limits<double>::infinity()});
  return m;
}

// Appends `v` to a sort key so that comparing keys bytewise orders label
// lists as std::vector<ClientMetric::Label>'s operator< does (by name, then
// value, pair by pair, a prefix first): each string ends in 00 00, and a NUL
// inside one is written 00 FF.
void AppendKey(std::string& key, std::string_view v) {
  for (std::size_t nul; (nul = v.find('\0')) != std::string_view::npos;) {
    key.append(v.data(), nul);
    key += '\0';
    key += '\xff';
    v.remove_prefix(nul + 1);
  }
  key += v;
  key.append(2, '\0');
}

std::uint32_t Position(std::ostringstream& out) {
  return static_cast<std::uint32_t>(out.tellp());
}

// Serializes `family` into `out`: its HELP and TYPE lines (`header`), then
// for each metric its sort key and the lines TextSerializer writes for it
// alone (`series`). Each metric is serialized as a family of one, whose own
// HELP and TYPE lines are skipped afterwards (SkipHeaders).
void Serialize(prometheus::MetricFamily& family, std::ostringstream& out, Span& header,
               std::vector<SeriesText>& series) {
  const prometheus::TextSerializer serializer;
  std::vector<prometheus::MetricFamily> one(1);
  one[0].name = family.name;
  one[0].help = family.help;
  one[0].type = family.type;
  header.begin = Position(out);
  serializer.Serialize(out, one);
  header.end = Position(out);
  one[0].metric.resize(1);
  series.resize(family.metric.size());
  std::string key;
  for (std::size_t i = 0; i < family.metric.size(); ++i) {
    prometheus::ClientMetric& m = family.metric[i];
    key.clear();
    for (const auto& l : m.label) {
      AppendKey(key, l.name);
      AppendKey(key, l.value);
    }
    series[i].key.begin = Position(out);
    out.write(key.data(), static_cast<std::streamsize>(key.size()));
    series[i].key.end = series[i].lines.begin = Position(out);
    std::swap(one[0].metric[0], m);
    serializer.Serialize(out, one);
    std::swap(one[0].metric[0], m);
    series[i].lines.end = Position(out);
  }
}

// A series' lines start after the HELP and TYPE lines its family-of-one
// call wrote; no sample line starts with '#'.
void SkipHeaders(const std::string& text, std::vector<SeriesText>& series) {
  for (SeriesText& s : series) {
    while (s.lines.begin < s.lines.end && text[s.lines.begin] == '#') {
      const std::size_t nl = text.find('\n', s.lines.begin);
      s.lines.begin = nl == std::string::npos || nl >= s.lines.end
                          ? s.lines.end
                          : static_cast<std::uint32_t>(nl + 1);
    }
  }
}

// Fills in `scope`'s text, headers and series spans from its families.
void SerializeAll(PreparedScope& scope) {
  std::ostringstream out;
  scope.headers.resize(scope.families.size());
  scope.series.resize(scope.families.size());
  for (std::size_t f = 0; f < scope.families.size(); ++f) {
    Serialize(scope.families[f], out, scope.headers[f], scope.series[f]);
  }
  scope.text = std::move(out).str();
  for (auto& series : scope.series) SkipHeaders(scope.text, series);
}

PreparedScope Prepare(std::vector<Sample> samples) {
  PreparedScope scope;
  // One family per metric name, in the order names first appear; a name is
  // looked up once per descriptor rather than once per sample.
  std::unordered_map<const MetricDesc*, std::size_t> family_of;
  std::unordered_map<std::string_view, std::size_t> family_named;
  for (Sample& s : samples) {
    auto [at, added] = family_of.try_emplace(s.desc, scope.families.size());
    if (added) {
      auto [named, new_name] = family_named.try_emplace(s.desc->name, scope.families.size());
      if (new_name) {
        prometheus::MetricFamily f;
        f.name = s.desc->name;
        f.help = s.desc->help;
        f.type = ToPrometheus(s.desc->type);
        scope.families.push_back(std::move(f));
      }
      at->second = named->second;
    }
    scope.families[at->second].metric.push_back(ToClientMetric(s));
  }
  SerializeAll(scope);
  return scope;
}

std::string_view View(const std::string& text, Span span) {
  return std::string_view(text).substr(span.begin, span.end - span.begin);
}

// What Render and Collect merge: one family's series from every scope.
struct MergedSeries {
  std::string_view key;
  std::string_view lines;
  const prometheus::ClientMetric* metric;
};
struct MergedFamily {
  const prometheus::MetricFamily* first = nullptr;  // help and type
  std::string_view header;
  std::vector<MergedSeries> series;
};

// Groups every scope's families by name (map order: sorted), their series
// sorted by labels, a series two scopes publish kept once (the first). A
// scope whose family has another type than the first scope's is serialized
// again under that type, into `retyped`, as one family would be.
std::map<std::string_view, MergedFamily> Merge(
    const std::map<std::string, PreparedScope>& scopes, std::deque<PreparedScope>& retyped) {
  std::map<std::string_view, MergedFamily> merged;
  for (const auto& entry : scopes) {
    const PreparedScope* scope = &entry.second;
    for (std::size_t f = 0; f < scope->families.size(); ++f) {
      const prometheus::MetricFamily& family = scope->families[f];
      MergedFamily& m = merged[family.name];
      if (m.first == nullptr) {
        m.first = &family;
        m.header = View(scope->text, scope->headers[f]);
      }
      const PreparedScope* from = scope;
      std::size_t index = f;
      if (family.type != m.first->type) {
        PreparedScope& again = retyped.emplace_back();
        again.families.push_back(family);
        again.families[0].type = m.first->type;
        SerializeAll(again);
        from = &again;
        index = 0;
      }
      const auto& texts = from->series[index];
      for (std::size_t i = 0; i < texts.size(); ++i) {
        m.series.push_back(MergedSeries{View(from->text, texts[i].key),
                                        View(from->text, texts[i].lines),
                                        &from->families[index].metric[i]});
      }
    }
  }
  const auto less = [](const MergedSeries& a, const MergedSeries& b) { return a.key < b.key; };
  const auto same = [](const MergedSeries& a, const MergedSeries& b) { return a.key == b.key; };
  for (auto& [name, family] : merged) {
    auto& series = family.series;
    // Scopes are sorted by serial, so a family is often in order already.
    if (!std::is_sorted(series.begin(), series.end(), less)) {
      std::stable_sort(series.begin(), series.end(), less);
    }
    series.erase(std::unique(series.begin(), series.end(), same), series.end());
  }
  return merged;
}

}  // namespace

void MetricStore::Publish(const std::string& scope, std::vector<Sample> samples) {
  PreparedScope prepared = Prepare(std::move(samples));
  std::lock_guard lock(mu_);
  scopes_[scope] = std::move(prepared);
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

std::vector<prometheus::MetricFamily> MetricStore::Collect() const {
  std::lock_guard lock(mu_);
  std::deque<PreparedScope> retyped;
  std::vector<prometheus::MetricFamily> out;
  for (const auto& [name, merged] : Merge(scopes_, retyped)) {
    prometheus::MetricFamily& family = out.emplace_back();
    family.name = merged.first->name;
    family.help = merged.first->help;
    family.type = merged.first->type;
    family.metric.reserve(merged.series.size());
    for (const MergedSeries& s : merged.series) family.metric.push_back(*s.metric);
  }
  return out;
}

std::shared_ptr<const std::string> MetricStore::Render() const {
  std::lock_guard lock(mu_);
  if (rendered_) return rendered_;
  std::deque<PreparedScope> retyped;
  std::string text;
  text.reserve(rendered_size_ + rendered_size_ / 16 + 4096);
  for (const auto& [name, family] : Merge(scopes_, retyped)) {
    text += family.header;
    for (const MergedSeries& s : family.series) text += s.lines;
  }
  rendered_size_ = text.size();
  rendered_ = std::make_shared<const std::string>(std::move(text));
  return rendered_;
}

}  // namespace drivewatch
