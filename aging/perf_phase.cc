// SPDX-License-Identifier: Apache-2.0
// perf: the review's performance tables at the target's current fill
// level (run it after fills to 10% and 50%). Each measurement runs for
// perf_duration over the written part of the target, so reads hit data
// the drive really stores (an unwritten LBA reads back as zeros without
// touching the media) and writes overwrite it without changing the fill
// level:
//   sequential read and write, 128 KiB at queue_depth: bytes/s
//   random 4 KiB read and write at queue_depth: IOPS
//   random 512 B read and write at QD1: p99.9 latency (at the logical block
//     size when the target's is larger than 512 B)
//   mixed random 4 KiB 90/10 and 50/50 read/write at perf_mixed_iops: the
//     achieved IOPS and each operation's p99.9.
#include <algorithm>

#include "aging/phase.h"

namespace drivewatch::aging {
namespace {

struct Measure {
  const char* name;
  Access access;
  std::uint32_t read_percent;
  std::uint32_t block_size;  // 0: the logical block size, at least 512 B
  bool qd1;
  bool paced;
};

constexpr Measure kMeasures[] = {
    {"seq_read", Access::kSequential, 100, 128 * 1024, false, false},
    {"seq_write", Access::kSequential, 0, 128 * 1024, false, false},
    {"rand_read_4k", Access::kRandom, 100, 4096, false, false},
    {"rand_write_4k", Access::kRandom, 0, 4096, false, false},
    {"qd1_rand_read", Access::kRandom, 100, 0, true, false},
    {"qd1_rand_write", Access::kRandom, 0, 0, true, false},
    {"mixed_90_10", Access::kRandom, 90, 4096, false, true},
    {"mixed_50_50", Access::kRandom, 50, 4096, false, true},
};

}  // namespace

Status RunKind(const config::PerfParams& phase, PhaseContext& ctx, PhaseReport& report) {
  const std::uint64_t capacity = ctx.capacity();
  const double fill = ctx.fill_ratio();
  // The written part; the whole target when no fill is on record.
  std::uint64_t region = capacity;
  if (fill > 0 && fill < 1) {
    region = std::max<std::uint64_t>(
        1u << 20, static_cast<std::uint64_t>(fill * static_cast<double>(capacity)) >> 20 << 20);
  }
  if (fill >= 0) report.results["fill_ratio"] = fill;
  report.results["region_bytes"] = region;

  const std::size_t n = std::size(kMeasures);
  for (std::size_t i = 0; i < n; ++i) {
    const Measure& m = kMeasures[i];
    WorkloadSpec spec;
    spec.access = m.access;
    spec.read_percent = m.read_percent;
    spec.write_percent = 100 - m.read_percent;
    spec.block_size = m.block_size != 0
                          ? m.block_size
                          : std::max<std::uint32_t>(512, ctx.logical_block_size());
    spec.queue_depth = m.qd1 ? 1 : phase.queue_depth;
    spec.rate_iops = m.paced ? phase.perf_mixed_iops : 0;
    spec.length = region / spec.block_size * spec.block_size;
    spec.wrap = true;
    spec.max_time = phase.perf_duration;
    spec.seed = i + 1;
    spec.data_seed = i + 1;
    auto r = ctx.Run(spec, m.name, static_cast<double>(i) / n,
                     static_cast<double>(i + 1) / n);
    if (!r) return r.error();
    if (ctx.stopped()) return Ok{};  // a partial measurement is no result
    const std::string name = m.name;
    const double seconds = r->total.seconds;
    if (m.access == Access::kSequential) {
      report.results[name + "_bytes_per_second"] = r->total.bytes_per_second();
    } else if (m.qd1) {
      const LatencyHistogram& h = m.read_percent == 100 ? r->read_latency : r->write_latency;
      report.results[name + "_p99_9_seconds"] = h.Quantile(0.999);
      report.results[name + "_p50_seconds"] = h.Quantile(0.5);
      report.results[name + "_block_size_bytes"] = spec.block_size;
    } else {
      report.results[name + "_iops"] = seconds > 0 ? r->total.ios() / seconds : 0.0;
      if (m.paced) {
        report.results[name + "_read_p99_9_seconds"] = r->read_latency.Quantile(0.999);
        report.results[name + "_write_p99_9_seconds"] = r->write_latency.Quantile(0.999);
      }
    }
    if (r->errors > 0) {
      return Error{EIO, -1, name + ": " + std::to_string(r->errors) +
                                " I/O errors, first: " + r->first_error};
    }
    ctx.Checkpoint(report);
  }
  return Ok{};
}

}  // namespace drivewatch::aging
