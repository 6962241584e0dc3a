// SPDX-License-Identifier: Apache-2.0
// `drivewatch report`'s trim section: write throughput before and after
// the deallocate.
#include "aging/report/drive_report_detail.h"
#include "aging/report/report_format.h"
#include "config/kinds/trim.h"

namespace drivewatch::aging::drive_report_detail {
namespace {

using report_format::Format;

}  // namespace

Json TrimSection(const Selection& s) {
  Json section = Section("trim", "Trim");
  const auto picks = PickRuns(s, [](const Run& r) {
    return r.kind == config::TrimParams::kName && r.Result("write_before_trim_bytes_per_second");
  });
  section["runs"] = RunsJson(picks);
  auto result = [](std::string key) {
    return [key](const Run& r) { return Value(r.Result(key)); };
  };
  section["tables"].push_back(RunTable(
      "trim", "Write speed before and after deallocating", picks,
      {{"write_before_trim_bytes_per_second", "write before trim", "bytes_per_second",
        result("write_before_trim_bytes_per_second"), nullptr},
       {"write_after_trim_bytes_per_second", "write after trim", "bytes_per_second",
        result("write_after_trim_bytes_per_second"), nullptr},
       {"trim_efficiency_ratio", "after / before", "x", result("trim_efficiency_ratio"), nullptr},
       {"trim_mean_seconds", "deallocate mean", "ms", result("trim_mean_seconds"), nullptr},
       {"trim_p99_seconds", "deallocate p99", "ms", result("trim_p99_seconds"), nullptr},
       {"trim_max_seconds", "deallocate max", "ms", result("trim_max_seconds"), nullptr}}));
  section["expectation"] =
      "Deallocating (trim) half of a nearly full drive gives it its write speed back: a drive "
      "with an SLC cache writes faster after it than before. Rule: trim efficiency, the write "
      "speed after the deallocate over before it, of 0.9 or more keeps or gives back the speed; "
      "under 0.5 writing got slower, and trim does not help.";
  if (const Pick* p = Latest(picks)) {
    if (auto e = p->run->Result("trim_efficiency_ratio")) {
      const std::string at = Format("trim efficiency %.2f\xc3\x97 (%s)", *e, p->label.c_str());
      if (*e >= 1.5) {
        section["verdict"] = Verdict("pass", at + ": writing is faster after the deallocate");
      } else if (*e >= 0.9) {
        section["verdict"] = Verdict("pass", at + ": the write speed is kept");
      } else if (*e >= 0.5) {
        section["verdict"] =
            Verdict("info", at + ": writing is somewhat slower after the deallocate");
      } else {
        section["verdict"] = Verdict(
            "fail", at + ": writing is much slower after the deallocate: trim does not help");
      }
    }
  }
  Json chart = LineChart("trim", "Write throughput before and after trim", ChartAxis("time", "s"),
                         ChartAxis("write", "MB/s"));
  for (const Pick& p : picks) {
    if (!p.run) continue;
    if (const auto* before = p.run->Numbers("write_before_trim_bytes_per_second")) {
      AddLine(chart, p.label + " before trim", OverTime(*before), true, p.label);
    }
    if (const auto* after = p.run->Numbers("write_after_trim_bytes_per_second")) {
      AddLine(chart, p.label + " after trim", OverTime(*after), false, p.label);
    }
  }
  if (!Items(chart["series"]).empty()) section["charts"].push_back(std::move(chart));
  return section;
}

}  // namespace drivewatch::aging::drive_report_detail
