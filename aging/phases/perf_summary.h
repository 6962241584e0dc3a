// SPDX-License-Identifier: Apache-2.0
// The table `drivewatch phase run` prints on stderr after a perf run: one
// line per cell of the matrix with its throughput in MB/s (10^6 bytes/s)
// and MiB/s (2^20), its IOPS and its p99.9 latencies, so the numbers can
// be laid beside published tables (docs/aging.md). Read from the run's
// history record alone (series.cells and results), as `drivewatch
// history` could show it again later.
#pragma once

#include <string>

#include "config/util/json.h"

namespace drivewatch::aging {

// The table, or "" for a record that is not a perf run or has no cells.
std::string RenderPerfSummary(const Json& record);

}  // namespace drivewatch::aging
