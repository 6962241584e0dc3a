// SPDX-License-Identifier: Apache-2.0
// Every metric of the read latency probe is defined here. Series carry the
// target's identity (serial and nsid for a namespace, target for a
// configured device or file); the rate-dependent ones add rate (IOPS).
#include <chrono>
#include <iterator>
#include <string>

#include "probes/latency/read_latency_probe_detail.h"

namespace drivewatch {
namespace {

using Clock = std::chrono::steady_clock;
constexpr MetricType kGauge = MetricType::kGauge;
constexpr MetricType kCounter = MetricType::kCounter;

constexpr MetricDesc kLatency{
    "drivewatch_read_latency_seconds",
    "Latency of the probe's O_DIRECT random reads since drivewatch started "
    "reading the target, by rate (IOPS): submission to completion, each "
    "read timestamped on its own with CLOCK_MONOTONIC. Timed-out reads are "
    "counted only in the +Inf bucket.",
    MetricType::kHistogram};
constexpr MetricDesc kWindowQuantile{
    "drivewatch_read_latency_window_seconds",
    "Read latency percentile (50, 99, 99.9) over the sliding window, by "
    "rate; from a log-linear histogram with at most 0.78% error. +Inf when "
    "the percentile falls among timed-out reads. Absent while the window has "
    "no reads; check drivewatch_read_latency_window_enough_samples.",
    kGauge};
constexpr MetricDesc kWindowMax{
    "drivewatch_read_latency_window_max_seconds",
    "Slowest read in the sliding window, by rate (exact); +Inf if a read "
    "timed out.",
    kGauge};
constexpr MetricDesc kWindowSamples{
    "drivewatch_read_latency_window_samples",
    "Reads (completed or timed out) the window's percentiles rest on, by "
    "rate.",
    kGauge};
constexpr MetricDesc kWindowEnough{
    "drivewatch_read_latency_window_enough_samples",
    "1 when the window holds enough reads for the percentile to mean "
    "something: at least 10 reads beyond it, i.e. samples * (1 - p/100) >= "
    "10 (20 for p50, 1000 for p99, 10000 for p99.9: about 17 minutes at 10 "
    "IOPS); else 0.",
    kGauge};
constexpr MetricDesc kIdleGapQuantile{
    "drivewatch_read_latency_idle_gap_seconds",
    "Read latency percentile (50, 99, 99.9) over the sliding window, all "
    "rates together, by the idle gap before the read (time since the "
    "previous read on the target completed). Separates power-state exit "
    "from media latency; see docs/read-latency.md.",
    kGauge};
constexpr MetricDesc kIdleGapSamples{
    "drivewatch_read_latency_idle_gap_samples",
    "Reads in the sliding window after an idle gap of this class.", kGauge};
constexpr MetricDesc kErrors{
    "drivewatch_read_errors_total",
    "Probe reads that failed, by error: the errno name (EIO, ENODEV, ...), "
    "short_read for a read past the end of a shrunk target, or ENOENT for a "
    "test file that was removed.",
    kCounter};
constexpr MetricDesc kTimeouts{
    "drivewatch_read_timeouts_total",
    "Probe reads without a completion within the timeout.", kCounter};
constexpr MetricDesc kSkipped{
    "drivewatch_read_latency_skipped_arrivals_total",
    "Scheduled reads not issued because the previous read at queue depth 1 "
    "ran more than one interval late, by rate.",
    kCounter};
constexpr MetricDesc kPaused{
    "drivewatch_read_latency_paused",
    "1 while the probe is paused on the target (a heavy phase is using the "
    "drive), else 0.",
    kGauge};
constexpr MetricDesc kTargetUp{
    "drivewatch_read_latency_target_up",
    "1 when the target is open for reading, 0 when it could not be opened "
    "(the error is logged).",
    kGauge};
constexpr MetricDesc kIdentityMismatches{
    "drivewatch_read_latency_identity_mismatches_total",
    "Times the namespace's block device, when opened, belonged to another "
    "drive or namespace (sysfs serial and nsid of the opened device); "
    "nothing was read from it and the probe retries with what the next "
    "discovery finds.",
    kCounter};
constexpr MetricDesc kTargetInfo{
    "drivewatch_read_latency_target_info",
    "The target's kind (namespace, block_device, file), path and read block "
    "size in bytes; always 1.",
    kGauge};

constexpr const MetricDesc* kAllMetrics[] = {
    &kLatency,        &kWindowQuantile, &kWindowMax, &kWindowSamples,
    &kWindowEnough,   &kIdleGapQuantile, &kIdleGapSamples, &kErrors,
    &kTimeouts,       &kSkipped,        &kPaused,    &kTargetUp,
    &kTargetInfo,     &kIdentityMismatches,
};

using read_latency_detail::kBounds;
using read_latency_detail::kNumBounds;

constexpr double kQuantiles[] = {0.5, 0.99, 0.999};
// The `percentile` label ("quantile" is reserved for summaries).
constexpr const char* kPercentileNames[] = {"50", "99", "99.9"};

Labels With(const Labels& base, Labels extra) {
  Labels out = base;
  for (auto& l : extra) out.push_back(std::move(l));
  return out;
}

const char* KindName(ReadTarget::Kind kind) {
  switch (kind) {
    case ReadTarget::Kind::kNamespace: return "namespace";
    case ReadTarget::Kind::kBlockDevice: return "block_device";
    case ReadTarget::Kind::kFile: return "file";
  }
  return "";
}

}  // namespace

std::span<const MetricDesc* const> ReadLatencyProbe::Metrics() {
  return kAllMetrics;
}

void ReadLatencyProbe::Emit(SampleSink& sink) const { EmitAt(sink, Clock::now()); }

void ReadLatencyProbe::EmitAt(SampleSink& sink, TimePoint now) const {
  std::lock_guard lock(mu_);
  const Labels& id = target_.labels;
  sink.Add(kTargetInfo,
           With(id, {{"kind", KindName(target_.kind)},
                     {"path", device_path_},
                     {"block_size", std::to_string(settings_.block_size)}}),
           1);
  sink.Add(kTargetUp, id, up_ ? 1 : 0);
  sink.Add(kPaused, id, paused_ > 0 ? 1 : 0);
  sink.Add(kTimeouts, id, static_cast<double>(timeouts_));
  if (target_.kind == ReadTarget::Kind::kNamespace) {
    sink.Add(kIdentityMismatches, id, static_cast<double>(identity_mismatches_));
  }
  for (const auto& [name, n] : errors_) {
    sink.Add(kErrors, With(id, {{"error", name}}), static_cast<double>(n));
  }

  for (const auto& [rate, rs] : rates_) {
    const Labels by_rate = With(id, {{"rate", std::to_string(rate)}});
    auto h = std::make_shared<HistogramValue>();
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < kNumBounds; ++i) {
      cumulative += rs->exported[i];
      h->upper_bounds.push_back(kBounds[i]);
      h->cumulative_counts.push_back(cumulative);
    }
    h->count = rs->exported_count;
    h->sum = rs->exported_sum;
    sink.AddHistogram(kLatency, by_rate, std::move(h));
    sink.Add(kSkipped, by_rate, static_cast<double>(rs->skipped));

    for (std::size_t w = 0; w < settings_.windows.size(); ++w) {
      const Labels by_window = With(by_rate, {{"window", settings_.window_names[w]}});
      const LatencyHistogram window = rs->windows.Window(w, now);
      const double n = static_cast<double>(window.count());
      sink.Add(kWindowSamples, by_window, n);
      for (std::size_t q = 0; q < std::size(kQuantiles); ++q) {
        const Labels by_quantile = With(by_window, {{"percentile", kPercentileNames[q]}});
        sink.Add(kWindowEnough, by_quantile,
                 n * (1 - kQuantiles[q]) >= 10 - 1e-9 ? 1 : 0);
        if (n > 0) sink.Add(kWindowQuantile, by_quantile, window.Quantile(kQuantiles[q]));
      }
      if (n > 0) sink.Add(kWindowMax, by_window, window.MaxSeconds());
    }
  }

  for (std::size_t c = 0; c < kIdleGapClasses; ++c) {
    const Labels by_gap = With(id, {{"idle_gap", IdleGapName(static_cast<IdleGap>(c))}});
    for (std::size_t w = 0; w < settings_.windows.size(); ++w) {
      const LatencyHistogram window = idle_[c]->Window(w, now);
      if (window.count() == 0) continue;  // keeps rare classes from adding series
      const Labels by_window = With(by_gap, {{"window", settings_.window_names[w]}});
      sink.Add(kIdleGapSamples, by_window, static_cast<double>(window.count()));
      for (std::size_t q = 0; q < std::size(kQuantiles); ++q) {
        sink.Add(kIdleGapQuantile, With(by_window, {{"percentile", kPercentileNames[q]}}),
                 window.Quantile(kQuantiles[q]));
      }
    }
  }
}

}  // namespace drivewatch
