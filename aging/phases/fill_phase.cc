// SPDX-License-Identifier: Apache-2.0
// fill: from an empty (trimmed) target, write sequentially up to
// fill_percent of it, and read the SLC cache off the 1-second throughput
// series (aging/phases/slc_cache.h). The review's "half-drive fill" is
// fill_percent = 50.
#include "aging/phases/phase.h"
#include "aging/phases/slc_cache.h"

namespace drivewatch::aging {

Json ThroughputSeries(const WorkloadResult& result) {
  Json series = Json::array();
  for (const ThroughputSample& s : result.samples) series.push_back(s.bytes_per_second());
  return series;
}

Expected<WorkloadResult> TrimRange(PhaseContext& ctx, std::uint64_t bytes,
                                   std::string_view step, double from,
                                   double to) {
  WorkloadSpec trim;
  trim.read_percent = 0;
  trim.write_percent = 0;
  trim.trim_percent = 100;
  trim.access = Access::kSequential;
  trim.block_size = 2u << 20;
  trim.queue_depth = 1;
  trim.length = bytes / trim.block_size * trim.block_size;
  if (trim.length == 0) return WorkloadResult{};
  return ctx.Run(trim, step, from, to);
}

Status RunKind(const config::FillParams& phase, PhaseContext& ctx, PhaseReport& report) {
  const std::uint64_t capacity = ctx.capacity();

  // An SLC cache only shows on an empty drive: deallocate everything first.
  auto trimmed = TrimRange(ctx, capacity, "trim", 0, 0.05);
  if (!trimmed) return trimmed.error();
  if (ctx.stopped()) return Ok{};
  report.results["trimmed_bytes"] = trimmed->total.trim_bytes;

  WorkloadSpec fill;
  fill.access = Access::kSequential;
  fill.block_size = phase.block_size;
  fill.queue_depth = phase.queue_depth;
  const auto target_bytes = static_cast<std::uint64_t>(
      static_cast<double>(capacity) * phase.fill_percent / 100.0);
  fill.length = target_bytes / phase.block_size * phase.block_size;
  fill.data_seed = static_cast<std::uint64_t>(
      std::chrono::system_clock::now().time_since_epoch().count());
  auto written = ctx.Run(fill, "sequential write", 0.05, 1.0);
  if (!written) return written.error();

  std::vector<double> series;
  for (const ThroughputSample& s : written->samples) {
    series.push_back(s.bytes_per_second());
  }
  report.series["throughput_bytes_per_second"] = ThroughputSeries(*written);
  // Each sample's own length: the last one covers what was left of its
  // second, so a report reckons data written from bytes, not seconds.
  Json lengths = Json::array();
  for (const ThroughputSample& s : written->samples) lengths.push_back(s.seconds);
  report.series["throughput_seconds"] = lengths;
  report.results["written_bytes"] = written->total.write_bytes;
  report.results["fill_ratio"] =
      static_cast<double>(written->total.write_bytes) / static_cast<double>(capacity);
  report.results["write_mean_bytes_per_second"] =
      written->total.seconds > 0 ? written->total.write_bytes / written->total.seconds : 0.0;

  SlcDetectionParams params;
  params.drop_fraction = phase.slc_drop_fraction;
  params.sustain = std::chrono::duration_cast<std::chrono::seconds>(phase.slc_sustain);
  params.median_window =
      std::chrono::duration_cast<std::chrono::seconds>(phase.slc_median_window);
  SlcDetection slc = DetectSlcCache(series, params);
  if (!slc.exhausted) {
    // The series' last second may be partial: the bound is what was written.
    slc.cache_bytes = static_cast<double>(written->total.write_bytes);
    slc.seconds_to_exhaust = written->total.seconds;
  }
  // Without a sustained drop the cache is at least what was written (or
  // there is none: the two look alike), so it is reported as a bound.
  report.results[slc.exhausted ? "slc_cache_bytes" : "slc_cache_lower_bound_bytes"] =
      slc.cache_bytes;
  report.results["slc_exhausted_after_seconds"] = slc.seconds_to_exhaust;
  report.results["before_cache_bytes_per_second"] = slc.before_bytes_per_second;
  if (slc.exhausted) {
    report.results["after_cache_bytes_per_second"] = slc.after_bytes_per_second;
  }
  report.results["write_p99_9_seconds"] = written->write_latency.Quantile(0.999);
  if (written->errors > 0) {
    return Error{EIO, -1, "fill: " + std::to_string(written->errors) +
                              " write errors, first: " + written->first_error};
  }
  return Ok{};
}

std::optional<double> ResultRatio(const Json& record, std::string_view key) {
  const Json* results = Find(record, "results");
  const Json* v = results ? Find(*results, key) : nullptr;
  if (v == nullptr || !v->is_number()) return std::nullopt;
  const double ratio = AsDouble(*v, -1);
  if (!(ratio >= 0 && ratio <= 1)) return std::nullopt;
  return ratio;
}

// A completed fill leaves the level it measured; an unfinished one, from
// an empty target, leaves it unknown.
double FillLevelAfter(const config::FillParams&, const Json& record, double /*level*/) {
  const Json* outcome = Find(record, "outcome");
  if (outcome == nullptr || AsString(*outcome) != "completed") return -1;
  return ResultRatio(record, "fill_ratio").value_or(-1);
}

}  // namespace drivewatch::aging
