// SPDX-License-Identifier: Apache-2.0
// Internal to the workload engine: a run's bookkeeping, apart from the ring
// and buffers that do its I/O (aging/engine/workload.cc's Engine, which
// builds on it): which I/O comes next and when it is due, whether another
// may start, and what the run has counted (latencies, errors, the
// per-second samples and the progress they report).
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>

#include "aging/engine/workload.h"
#include "aging/engine/workload_plan.h"
#include "probes/latency/pacing.h"

namespace drivewatch::aging::workload_detail {

using Clock = std::chrono::steady_clock;

inline constexpr std::uint64_t kNsPerSecond = 1'000'000'000;

// steady_clock is CLOCK_MONOTONIC; raw nanoseconds keep the hot path free
// of chrono conversions.
inline std::uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * kNsPerSecond +
         static_cast<std::uint64_t>(ts.tv_nsec);
}
inline Clock::time_point ToTimePoint(std::uint64_t ns) {
  return Clock::time_point(std::chrono::nanoseconds(ns));
}
inline std::uint64_t ToNs(Clock::time_point t) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch())
          .count());
}

class RunState {
 public:
  // When the first failed I/O was counted; 0 if none was.
  std::uint64_t first_error_ns() const { return first_error_ns_; }

 protected:
  RunState(WorkloadTarget& target, const WorkloadSpec& spec, const Plan& plan,
           const std::stop_token& stop, const ProgressCallback& progress)
      : target_(target),
        spec_(spec),
        plan_(plan),
        stop_(stop),
        progress_(progress),
        mix_(spec.read_percent, spec.write_percent, spec.trim_percent),
        permutation_(plan.region_length / spec.block_size, spec.seed),
        drawn_(spec, plan.region_length, target.logical_block_size()),
        drawing_(!spec.size_mix.empty() || !spec.lba_zones.empty()),
        seq_pos_(spec.start) {}

  // One I/O as the workload plans it: what, where, how much, and when it
  // is due (0: at once).
  struct PlannedIo {
    Op op = Op::kRead;
    std::uint64_t offset = 0;
    std::uint32_t size = 0;
    std::uint64_t due_ns = 0;
  };
  // The run's next I/O, or nullopt when there is none left (the end of a
  // non-wrapping region). The one place that decides what comes next: the
  // issue loop takes it when it is due and a slot is free.
  std::optional<PlannedIo> NextIo();
  // NextIo() of a run whose I/Os come from spec_.source.
  std::optional<PlannedIo> NextSourcedIo();
  // The next offset and its I/O's size, or nullopt at the end of a
  // non-wrapping region.
  std::optional<std::uint64_t> NextOffset(std::uint32_t* size);
  bool IssueAllowed(std::uint64_t now);
  // `latency_ns` is the response latency (from when a late I/O was due),
  // `service_ns` from the submitting call.
  void Count(Op op, std::uint64_t latency_ns, std::uint64_t service_ns, std::uint64_t size);
  void RecordError(Op op, std::uint64_t offset, const std::string& what);
  void RollSamples(std::uint64_t now);
  void CloseSample(std::uint64_t end_ns);
  double Fraction(std::uint64_t now) const;

  WorkloadTarget& target_;
  const WorkloadSpec& spec_;
  const Plan plan_;
  const std::stop_token& stop_;
  const ProgressCallback& progress_;
  OpMix mix_;
  BlockPermutation permutation_;
  DrawnAccess drawn_;
  bool drawing_;  // size_mix or lba_zones
  std::uint64_t seq_pos_;  // sequential: next offset relative to the region
  std::optional<Pacer> pacer_;

  std::uint64_t start_ns_ = 0;
  std::uint64_t first_error_ns_ = 0;
  std::uint64_t sample_start_ns_ = 0;
  std::uint64_t issued_bytes_ = 0;
  std::uint64_t done_bytes_ = 0;
  bool region_done_ = false;
  std::optional<PlannedIo> pending_;  // planned, waiting to be due
  ThroughputSample sample_;
  WorkloadResult result_;
};

}  // namespace drivewatch::aging::workload_detail
