// SPDX-License-Identifier: Apache-2.0
// A retention study file (<state>/retention/<name>.json) as LoadStudy
// reads it, then what `drivewatch retention` does with it: the pattern,
// the time accounting, the reports and the list.
//
// Properties: a record that fails validation is never reported as a
// result (every format's verdict is DAMAGED, never PASS); one that loads
// passes ValidateStudy, is not DAMAGED in its report, and saved again loads
// back the same.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "aging/report/retention_report.h"
#include "aging/retention/retention_study.h"
#include "config/util/json.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using namespace drivewatch;
using namespace drivewatch::aging;

std::string Verdict(const Json& study, double now) {
  auto report = ParseJson(RenderRetentionReport(study, ReportFormat::kJson, now));
  DW_FUZZ_CHECK(report.ok(), "the JSON report does not parse");
  const Json* summary = Find(*report, "summary");
  DW_FUZZ_CHECK(summary && Find(*summary, "verdict"), "the JSON report has no verdict");
  return AsString(*Find(*summary, "verdict"));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const double now = 1.75e9;  // 2025-06

  // The file as LoadStudy takes it: checksum, JSON, every field.
  auto record = ParseStudyRecord(bytes, "fuzz.json", "");
  if (record) {
    DW_FUZZ_CHECK(ValidateStudy(*record).ok(), "a loaded record fails validation");
    DW_FUZZ_CHECK(Verdict(*record, now) != "DAMAGED", "a loaded record reports DAMAGED");
    auto again = ParseStudyRecord(SerializeStudy(*record), "fuzz.json", "");
    DW_FUZZ_CHECK(again.ok(), "a saved record does not load back");
    Json expected = Json::object();  // SerializeStudy puts the version first
    expected["version"] = 2;
    for (const auto& [k, v] : Members(*record)) {
      if (k != "version") expected[k] = v;
    }
    DW_FUZZ_CHECK(*again == expected, "a saved record loads back different");
  } else {
    DW_FUZZ_CHECK(record.error().errnum == EBADMSG, "a record refused without EBADMSG");
  }

  auto study = ParseJson(bytes);
  if (!study) return 0;
  const bool valid = ValidateStudy(*study).ok();
  if (!valid) {
    DW_FUZZ_CHECK(Verdict(*study, now) == "DAMAGED", "a record that fails validation is judged");
    const std::string text = RenderRetentionReport(*study, ReportFormat::kText, now);
    const auto line = text.find('\n');
    DW_FUZZ_CHECK(line != std::string::npos && text.compare(line + 1, 9, "DAMAGED: ") == 0,
                  "the text report of a damaged record does not say DAMAGED");
    const std::string html = RenderRetentionReport(*study, ReportFormat::kHtml, now);
    DW_FUZZ_CHECK(html.find("<div class=\"verdict damaged\" id=\"verdict\">DAMAGED: ") != std::string::npos,
                  "the HTML report of a damaged record does not say DAMAGED");
  }
  if (!study->is_object() || !Find(*study, "study")) return 0;
  (void)PatternOf(*study);
  const Json* smart = Find(*study, "smart_at_write");
  for (double kelvin : {std::nan(""), 298.15, 0.0}) {
    const auto ages = ComputeAges(*study, now, smart, kelvin);
    (void)ages;
  }
  for (auto format : {ReportFormat::kText, ReportFormat::kJson, ReportFormat::kHtml}) {
    (void)RenderRetentionReport(*study, format, now);
  }
  const std::string list = RenderRetentionList({*study}, now);
  DW_FUZZ_CHECK(valid || list.find("DAMAGED") != std::string::npos,
                "the list shows a damaged record without saying so");
  Json copy = *study;
  AddTemperatureSample(copy, now, 310.0, 600);
  AddTemperatureSample(copy, now + 60, 312.0, 600);
  if (const Json* baseline = Find(*study, "baseline")) {
    if (const Json* verifies = Find(*study, "verifies")) {
      for (const auto& v : Items(*verifies)) (void)CompareWithBaseline(*baseline, v);
    }
  }
  return 0;
}
