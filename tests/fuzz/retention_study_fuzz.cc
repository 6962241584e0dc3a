// SPDX-License-Identifier: Apache-2.0
// A retention study file (<state>/retention/<name>.json) as LoadStudy
// reads it, then what `drivewatch retention` does with it: the pattern,
// the time accounting, the reports and the list.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "aging/json.h"
#include "aging/retention_report.h"
#include "aging/retention_study.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace drivewatch::aging;
  auto study = Json::Parse(std::string_view(reinterpret_cast<const char*>(data), size));
  // LoadStudy's own check, without its file system round trip.
  if (!study || study->type() != Json::Type::kObject || !study->Find("study")) return 0;
  const double now = 1.75e9;  // 2025-06
  (void)PatternOf(*study);
  const Json* smart = study->Find("smart_at_write");
  for (double kelvin : {std::nan(""), 298.15, 0.0}) {
    const auto ages = ComputeAges(*study, now, smart, kelvin);
    (void)ages;
  }
  for (auto format : {ReportFormat::kText, ReportFormat::kJson, ReportFormat::kHtml}) {
    (void)RenderRetentionReport(*study, format, now);
  }
  (void)RenderRetentionList({*study}, now);
  Json copy = *study;
  AddTemperatureSample(copy, now, 310.0, 600);
  AddTemperatureSample(copy, now + 60, 312.0, 600);
  if (const Json* baseline = study->Find("baseline")) {
    if (const Json* verifies = study->Find("verifies")) {
      for (const auto& v : verifies->items()) (void)CompareWithBaseline(*baseline, v);
    }
  }
  return 0;
}
