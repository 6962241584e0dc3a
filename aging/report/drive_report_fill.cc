// SPDX-License-Identifier: Apache-2.0
// `drivewatch report`'s fill sections, one per fill level: the SLC cache
// found, and the fill's throughput over time and against data written.
#include <algorithm>
#include <set>

#include "aging/report/drive_report_detail.h"
#include "aging/report/report_format.h"
#include "config/kinds/fill.h"

namespace drivewatch::aging::drive_report_detail {
namespace {

using report_format::Format;

bool IsFill(const Run& r) {
  return r.kind == config::FillParams::kName &&
         (r.Result("slc_cache_bytes") || r.Result("slc_cache_lower_bound_bytes"));
}

// The fill's throughput over time and against data written, with where
// each row's SLC cache ran out.
void AddFillCharts(Json& section, const std::vector<Pick>& picks) {
  const std::string id = AsString(section["id"]);
  Json time = LineChart(id + "_time", "Fill throughput over time", ChartAxis("time", "s"),
                        ChartAxis("write", "MB/s"));
  Json bytes = LineChart(id + "_bytes", "Fill throughput against data written",
                         ChartAxis("written", "GB"), ChartAxis("write", "MB/s"));
  for (const Pick& p : picks) {
    const std::vector<double>* series =
        p.run ? p.run->Numbers("throughput_bytes_per_second") : nullptr;
    if (series == nullptr) continue;
    const std::vector<double>* lengths = p.run->Numbers("throughput_seconds");
    AddLine(time, p.label, OverTime(*series, lengths));
    AddLine(bytes, p.label, OverBytes(*series, lengths, p.run->Result("written_bytes")));
    if (auto c = p.run->Result("slc_cache_bytes")) {
      if (auto t = p.run->Result("slc_exhausted_after_seconds")) {
        AddMarker(time, *t, "SLC cache ends (" + p.label + ")", p.label);
      }
      AddMarker(bytes, *c / 1e9, "SLC cache ends (" + p.label + ")", p.label);
    }
  }
  if (!Items(time["series"]).empty()) {
    section["charts"].push_back(std::move(time));
    section["charts"].push_back(std::move(bytes));
  }
}

Json FillSection(const Selection& s, int level) {
  Json section = Section(level < 0 ? std::string("fill_unknown") : Format("fill_%d", level),
                         level < 0 ? std::string("Fill and SLC cache (fill level not on record)")
                                   : Format("Fill to %d %% and SLC cache", level));
  const auto picks =
      PickRuns(s, [level](const Run& r) { return IsFill(r) && FillLevel(r) == level; });
  section["runs"] = RunsJson(picks);
  auto bound = [](const Run& r) {
    return r.Result("slc_cache_bytes") ? std::string() : std::string("at_least");
  };
  section["tables"].push_back(RunTable(
      "fill", "Sequential fill of the empty drive", picks,
      {{"slc_cache_bytes", "SLC cache", "bytes",
        [](const Run& r) {
          auto v = r.Result("slc_cache_bytes");
          return Value(v ? v : r.Result("slc_cache_lower_bound_bytes"));
        },
        bound},
       {"before_cache_bytes_per_second", "write in cache", "bytes_per_second",
        [](const Run& r) { return Value(r.Result("before_cache_bytes_per_second")); }, nullptr},
       {"after_cache_bytes_per_second", "write after cache", "bytes_per_second",
        [](const Run& r) { return Value(r.Result("after_cache_bytes_per_second")); }, nullptr},
       {"slc_exhausted_after_seconds", "cache lasts", "s",
        [](const Run& r) { return Value(r.Result("slc_exhausted_after_seconds")); }, bound},
       {"write_mean_bytes_per_second", "mean write", "bytes_per_second",
        [](const Run& r) { return Value(r.Result("write_mean_bytes_per_second")); }, nullptr},
       {"write_p99_9_seconds", "write p99.9", "ms",
        [](const Run& r) { return Value(r.Result("write_p99_9_seconds")); }, nullptr},
       {"written_bytes", "written", "bytes",
        [](const Run& r) { return Value(r.Result("written_bytes")); }, nullptr},
       {"fill_ratio", "filled", "percent",
        [](const Run& r) { return Value(r.Result("fill_ratio")); }, nullptr}}));
  section["expectation"] =
      "A client drive writes into an SLC cache first; during a half-drive fill of the empty "
      "drive the cache runs out and the write speed drops to the native (TLC/QLC) speed. Rule: "
      "the cache is found where the throughput stays below 60 % of its first plateau (docs/"
      "aging.md); no such drop means the cache is at least what was written, or there is none.";
  std::vector<std::string> parts;
  for (const Pick& p : picks) {
    if (!p.run || p.label == "baseline") continue;
    if (auto c = p.run->Result("slc_cache_bytes")) {
      std::string part = p.label + " " + Show(*c, "bytes");
      if (auto after = p.run->Result("after_cache_bytes_per_second")) {
        part += ", then " + Show(*after, "bytes_per_second");
      }
      parts.push_back(part);
    } else if (auto b = p.run->Result("slc_cache_lower_bound_bytes")) {
      parts.push_back(p.label + " none found in " + Show(*b, "bytes") + " written");
    }
  }
  if (!parts.empty()) {
    const bool found = std::any_of(picks.begin(), picks.end(), [](const Pick& p) {
      return p.run && p.label != "baseline" && p.run->Result("slc_cache_bytes");
    });
    section["verdict"] =
        Verdict("info", (found ? "SLC cache found: "
                               : "no SLC cache found (a cache at least as large as "
                                 "what was written, or none): ") +
                            Join(parts, "; "));
  }
  AddFillCharts(section, picks);
  return section;
}

}  // namespace

std::vector<Json> FillSections(const Selection& s) {
  std::set<int> levels = {50};
  for (const Run& r : s.inputs->runs) {
    if ((r.drive == s.drive || r.drive == s.baseline) && r.completed() && IsFill(r)) {
      levels.insert(FillLevel(r));
    }
  }
  std::vector<int> order(levels.begin(), levels.end());
  std::stable_partition(order.begin(), order.end(), [](int l) { return l >= 0; });
  std::vector<Json> out;
  for (int level : order) out.push_back(FillSection(s, level));
  return out;
}

}  // namespace drivewatch::aging::drive_report_detail
