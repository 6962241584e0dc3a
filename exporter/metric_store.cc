// SPDX-License-Identifier: Apache-2.0
#include "exporter/metric_store.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace drivewatch {

namespace {

using Label = std::pair<std::string, std::string>;

// prometheus-cpp writes a double through an ostream in the classic locale at
// precision max_digits10 - 1, that is printf's "%.16g", and NaN and the
// infinities as below. std::to_chars with a precision is specified as that
// printf in the "C" locale.
void AppendDouble(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "Nan";
    return;
  }
  if (std::isinf(v)) {
    out += v < 0 ? "-Inf" : "+Inf";
    return;
  }
  char buf[32];
  std::to_chars_result r;
  // A whole number below 1e16 has at most 16 digits, which "%.16g" writes
  // as an integer; that path is much faster. -0 keeps its sign, as in printf.
  const auto whole = static_cast<std::int64_t>(std::fabs(v) < 1e16 ? v : 0);
  if (static_cast<double>(whole) == v && !(v == 0 && std::signbit(v))) {
    r = std::to_chars(buf, buf + sizeof buf, whole);
  } else {
    r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 16);
  }
  out.append(buf, r.ptr);
}

void AppendCount(std::string& out, std::uint64_t v) {
  char buf[24];
  out.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

// A label value as the text format quotes it: \\, \" and \n.
void AppendEscaped(std::string& out, std::string_view v) {
  std::size_t done = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const char c = v[i];
    if (c != '\\' && c != '"' && c != '\n') continue;
    out.append(v.data() + done, i - done);
    out += '\\';
    out += c == '\n' ? 'n' : c;
    done = i + 1;
  }
  out.append(v.data() + done, v.size() - done);
}

// Appends `v` to a sort key so that comparing keys bytewise orders label
// lists as std::vector<ClientMetric::Label>'s operator< did (by name, then
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

detail::PreparedScope Prepare(std::vector<Sample> samples) {
  detail::PreparedScope scope;
  scope.samples = std::move(samples);
  scope.offsets.reserve(2 * scope.samples.size() + 1);
  std::vector<const Label*> sorted;
  for (const Sample& s : scope.samples) {
    sorted.clear();
    for (const Label& l : s.labels) sorted.push_back(&l);
    std::sort(sorted.begin(), sorted.end(),
              [](const Label* a, const Label* b) { return *a < *b; });
    scope.offsets.push_back(static_cast<std::uint32_t>(scope.text.size()));
    for (const Label* l : sorted) {
      AppendKey(scope.text, l->first);
      AppendKey(scope.text, l->second);
    }
    scope.offsets.push_back(static_cast<std::uint32_t>(scope.text.size()));
    for (const Label* l : sorted) {
      if (l != sorted.front()) scope.text += ',';
      scope.text += l->first;
      scope.text += "=\"";
      AppendEscaped(scope.text, l->second);
      scope.text += '"';
    }
  }
  scope.offsets.push_back(static_cast<std::uint32_t>(scope.text.size()));
  return scope;
}

struct Series {
  const Sample* sample;
  std::string_view key;
  std::string_view label_text;
};

struct Family {
  const MetricDesc* desc = nullptr;  // of the first sample: HELP and TYPE
  std::vector<Series> series;        // in scope order until sorted
};

}  // namespace

void MetricStore::Publish(const std::string& scope,
                          std::vector<Sample> samples) {
  detail::PreparedScope prepared = Prepare(std::move(samples));
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

std::shared_ptr<const std::string> MetricStore::Render() const {
  std::lock_guard lock(mu_);
  if (rendered_) return rendered_;

  // Group by metric name, keeping scope order within a family. Samples of
  // one probe share a descriptor, so a name is looked up once per
  // descriptor rather than once per sample.
  std::map<std::string_view, Family> families;
  std::unordered_map<const MetricDesc*, Family*> family_of;
  for (const auto& [name, scope] : scopes_) {
    const std::string_view text = scope.text;
    const std::uint32_t* offset = scope.offsets.data();
    for (const Sample& s : scope.samples) {
      Family*& family = family_of[s.desc];
      if (family == nullptr) {
        family = &families[s.desc->name];
        if (family->desc == nullptr) family->desc = s.desc;
      }
      family->series.push_back(
          Series{&s, text.substr(offset[0], offset[1] - offset[0]),
                 text.substr(offset[1], offset[2] - offset[1])});
      offset += 2;
    }
  }

  std::string text;
  text.reserve(rendered_size_ + rendered_size_ / 16 + 4096);
  const auto less = [](const Series& a, const Series& b) {
    return a.key < b.key;
  };
  // Not a structured binding: the lambdas below capture `name`, which
  // clang 14 (the fuzzing build) does not allow for a binding.
  for (auto& entry : families) {
    const auto& name = entry.first;
    auto& family = entry.second;
    auto& series = family.series;
    // Scopes are sorted by serial, so a family is often in order already.
    if (!std::is_sorted(series.begin(), series.end(), less)) {
      std::stable_sort(series.begin(), series.end(), less);
    }
    const MetricType type = family.desc->type;
    if (family.desc->help[0] != '\0') {
      text += "# HELP ";
      text += name;
      text += ' ';
      text += family.desc->help;
      text += '\n';
    }
    text += "# TYPE ";
    text += name;
    text += type == MetricType::kCounter     ? " counter\n"
            : type == MetricType::kHistogram ? " histogram\n"
                                             : " gauge\n";
    const Series* previous = nullptr;
    for (const Series& one : series) {
      // Two scopes never publish the same series; if a bug made them, the
      // first one wins rather than emitting an invalid duplicate.
      if (previous != nullptr && previous->key == one.key) continue;
      previous = &one;
      const Sample& s = *one.sample;
      const auto head = [&](std::string_view suffix) {
        text += name;
        text += suffix;
        if (!one.label_text.empty()) {
          text += '{';
          text += one.label_text;
          text += '}';
        }
        text += ' ';
      };
      if (type != MetricType::kHistogram) {
        // A sample of another type than its family's first renders as 0,
        // as it did through prometheus-cpp's ClientMetric.
        head("");
        AppendDouble(text, s.desc->type == type ? s.value : 0);
        text += '\n';
        continue;
      }
      const HistogramValue* h =
          s.desc->type == MetricType::kHistogram ? s.histogram.get() : nullptr;
      const std::uint64_t count = h != nullptr ? h->count : 0;
      head("_count");
      AppendCount(text, count);
      text += '\n';
      head("_sum");
      AppendDouble(text, h != nullptr ? h->sum : 0);
      text += '\n';
      const auto bucket = [&](double le, std::uint64_t cumulative) {
        text += name;
        text += "_bucket{";
        text += one.label_text;
        text += one.label_text.empty() ? "le=\"" : ",le=\"";
        AppendDouble(text, le);
        text += "\"} ";
        AppendCount(text, cumulative);
        text += '\n';
      };
      if (h != nullptr) {
        const std::size_t n =
            std::min(h->upper_bounds.size(), h->cumulative_counts.size());
        for (std::size_t i = 0; i < n; ++i) {
          bucket(h->upper_bounds[i], h->cumulative_counts[i]);
        }
      }
      // The text format needs the +Inf bucket, equal to the count.
      bucket(std::numeric_limits<double>::infinity(), count);
    }
  }
  rendered_size_ = text.size();
  rendered_ = std::make_shared<const std::string>(std::move(text));
  return rendered_;
}

}  // namespace drivewatch
