#include "probes/read_latency_probe.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace drivewatch {
namespace {

TEST(ReadLatencyProbeTest, EveryMetricIsDocumented) {
  std::ifstream in(std::string(DW_SOURCE_DIR) + "/docs/metrics.md");
  std::stringstream doc;
  doc << in.rdbuf();
  ASSERT_FALSE(doc.str().empty());
  for (const MetricDesc* m : ReadLatencyProbe::Metrics()) {
    EXPECT_NE(doc.str().find("`" + std::string(m->name) + "`"), std::string::npos)
        << m->name << " is not listed in docs/metrics.md";
  }
}

}  // namespace
}  // namespace drivewatch
