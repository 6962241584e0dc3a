// SPDX-License-Identifier: Apache-2.0
// trim: does deallocating give a full drive its write speed back? Fill to
// fill_percent (default 90), measure sequential write over the first
// tenth of the target, deallocate the first trim_percent (default 50) in
// 2 MiB commands timing each, then measure the same sequential write
// again. A drive with good trim writes the second time at (or near) its
// empty-drive speed: trim_efficiency_ratio is after / before.
#include "aging/phases/phase.h"

namespace drivewatch::aging {

Status RunKind(const config::TrimParams& phase, PhaseContext& ctx, PhaseReport& report) {
  const std::uint64_t capacity = ctx.capacity();
  auto round = [&](double fraction, std::uint32_t unit) {
    return static_cast<std::uint64_t>(static_cast<double>(capacity) * fraction) /
           unit * unit;
  };

  WorkloadSpec fill;
  fill.access = Access::kSequential;
  fill.block_size = phase.block_size;
  fill.queue_depth = phase.queue_depth;
  fill.length = round(phase.fill_percent / 100.0, phase.block_size);
  auto filled = ctx.Run(fill, "fill", 0, 0.6);
  if (!filled) return filled.error();
  report.results["filled_bytes"] = filled->total.write_bytes;
  if (ctx.stopped()) return Ok{};

  WorkloadSpec measure = fill;
  measure.length = std::max<std::uint64_t>(phase.block_size, round(0.1, phase.block_size));
  auto before = ctx.Run(measure, "write before trim", 0.6, 0.7);
  if (!before) return before.error();
  if (ctx.stopped()) return Ok{};
  report.results["write_before_trim_bytes_per_second"] = before->total.bytes_per_second();
  report.series["write_before_trim_bytes_per_second"] = ThroughputSeries(*before);
  ctx.Checkpoint(report);

  auto trimmed = TrimRange(ctx, round(phase.trim_percent / 100.0, 2u << 20), "trim", 0.7, 0.9);
  if (!trimmed) return trimmed.error();
  if (ctx.stopped()) return Ok{};
  const LatencyHistogram& t = trimmed->trim_latency;
  report.results["trimmed_bytes"] = trimmed->total.trim_bytes;
  report.results["trim_block_size_bytes"] = 2u << 20;
  report.results["trim_mean_seconds"] = t.count() > 0 ? t.sum_seconds() / t.count() : 0.0;
  report.results["trim_max_seconds"] = t.MaxSeconds();
  report.results["trim_p99_seconds"] = t.Quantile(0.99);
  ctx.Checkpoint(report);

  auto after = ctx.Run(measure, "write after trim", 0.9, 1.0);
  if (!after) return after.error();
  if (ctx.stopped()) return Ok{};
  report.results["write_after_trim_bytes_per_second"] = after->total.bytes_per_second();
  report.series["write_after_trim_bytes_per_second"] = ThroughputSeries(*after);
  const double b = before->total.bytes_per_second();
  if (b > 0) {
    report.results["trim_efficiency_ratio"] = after->total.bytes_per_second() / b;
  }
  const std::uint64_t errors = filled->errors + before->errors + trimmed->errors + after->errors;
  if (errors > 0) {
    return Error{EIO, -1, "trim: " + std::to_string(errors) + " I/O errors"};
  }
  return Ok{};
}

}  // namespace drivewatch::aging
