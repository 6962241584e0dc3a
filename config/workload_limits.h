// SPDX-License-Identifier: Apache-2.0
// The workload engine's limits (aging/engine/workload.h), in one place for the
// engine's own checks (aging/engine/workload_plan.cc) and for the configuration's,
// which refuse the same things first, located at the key (config/kinds/,
// config_perf.cc).
#pragma once

#include <cstdint>

namespace drivewatch::config {

// I/Os one ring keeps in flight.
inline constexpr std::uint32_t kWorkloadMaxQueueDepth = 256;
// Jobs of one cell (fio's numjobs), each its own ring and thread.
inline constexpr std::uint32_t kWorkloadMaxJobs = 64;
// I/Os in flight over all of a cell's jobs: queue_depth x jobs.
inline constexpr std::uint32_t kWorkloadMaxInFlight = 256;

}  // namespace drivewatch::config
