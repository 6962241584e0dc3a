// SPDX-License-Identifier: Apache-2.0
// reclaim: how fast the drive empties its SLC cache when left idle. For
// each idle time k (default 1, 2, 3 and 4 minutes): no I/O for k, then
// sequential writes for reclaim_write (default 1 minute), and the length
// of the fast stage before throughput drops (aging/phases/slc_cache.h). A drive
// that folds its cache quickly shows a long fast stage after a short
// idle. Run it after a fill, which leaves the cache exhausted; the writes
// continue where the last fill stopped and wrap within the target.
#include <cmath>

#include "aging/phases/phase.h"
#include "aging/phases/slc_cache.h"
#include "config/config.h"

namespace drivewatch::aging {

Status RunKind(const config::ReclaimParams& phase, PhaseContext& ctx, PhaseReport& report) {
  const std::uint64_t capacity = ctx.capacity();
  const double fill = ctx.fill_ratio();
  std::uint64_t position =
      fill > 0 ? static_cast<std::uint64_t>(fill * static_cast<double>(capacity)) /
                     phase.block_size * phase.block_size
               : 0;
  if (position >= capacity) position = 0;

  SlcDetectionParams params;
  params.drop_fraction = phase.slc_drop_fraction;
  params.sustain = std::chrono::duration_cast<std::chrono::seconds>(phase.slc_sustain);
  params.median_window =
      std::chrono::duration_cast<std::chrono::seconds>(phase.slc_median_window);

  // Progress is shared out by time: each loop is its idle plus its write.
  double total = 0;
  for (auto idle : phase.reclaim_idle) total += (idle + phase.reclaim_write).count();
  double done = 0;
  Json loops = Json::array();
  for (auto idle : phase.reclaim_idle) {
    const std::string name =
        "idle_" + config::FormatDuration(std::chrono::duration_cast<std::chrono::milliseconds>(idle));
    const double idle_to = (done + idle.count()) / total;
    if (!ctx.Idle(idle, name, done / total, idle_to)) return Ok{};
    done += idle.count();

    WorkloadSpec write;
    write.access = Access::kSequential;
    write.block_size = phase.block_size;
    write.queue_depth = phase.queue_depth;
    write.start = position;
    write.wrap = true;
    write.max_time = phase.reclaim_write;
    auto result = ctx.Run(write, name + " write", idle_to,
                          (done + phase.reclaim_write.count()) / total);
    if (!result) return result.error();
    done += phase.reclaim_write.count();
    position = result->next_start;

    std::vector<double> series;
    for (const ThroughputSample& s : result->samples) series.push_back(s.bytes_per_second());
    SlcDetection slc = DetectSlcCache(series, params);
    if (!slc.exhausted) {
      slc.cache_bytes = static_cast<double>(result->total.write_bytes);
      slc.seconds_to_exhaust = result->total.seconds;
    }
    // Without a drop within the write the fast stage lasted at least the
    // whole write.
    const std::string bound = slc.exhausted ? "" : "_lower_bound";
    report.results[name + "_fast_stage" + bound + "_seconds"] = slc.seconds_to_exhaust;
    report.results[name + "_fast_stage" + bound + "_bytes"] = slc.cache_bytes;
    report.results[name + "_fast_bytes_per_second"] = slc.before_bytes_per_second;
    if (slc.exhausted) {
      report.results[name + "_slow_bytes_per_second"] = slc.after_bytes_per_second;
    }
    report.series[name + "_throughput_bytes_per_second"] = ThroughputSeries(*result);
    ctx.Checkpoint(report);
    if (result->errors > 0) {
      return Error{EIO, -1, "reclaim: " + std::to_string(result->errors) +
                                " write errors, first: " + result->first_error};
    }
    if (ctx.stopped()) return Ok{};
  }
  return Ok{};
}

// reclaim's writes continue where the last fill stopped, so the level is
// taken as the fill left it, as the perf runs after a fill and a reclaim
// expect.
double FillLevelAfter(const config::ReclaimParams&, const Json& /*record*/, double level) {
  return level;
}

}  // namespace drivewatch::aging
