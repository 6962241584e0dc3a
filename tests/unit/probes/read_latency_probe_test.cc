// SPDX-License-Identifier: Apache-2.0
#include "probes/latency/read_latency_probe.h"

#include <gtest/gtest.h>

#include "tests/unit/probes/probe_test_util.h"

#include <fstream>
#include <sstream>

namespace drivewatch {
namespace {

TEST(ReadLatencyProbeTest, EveryMetricIsDocumentedWithHelp) {
  testing::ExpectDocumented(ReadLatencyProbe::Metrics());
}

}  // namespace
}  // namespace drivewatch
