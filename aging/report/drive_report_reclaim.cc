// SPDX-License-Identifier: Apache-2.0
// `drivewatch report`'s SLC reclaim section: data written at full speed
// after each idle, and whether it grows with idle time.
#include <algorithm>
#include <set>

#include "aging/report/drive_report_detail.h"
#include "config/kinds/reclaim.h"
#include "config/config.h"

namespace drivewatch::aging::drive_report_detail {
namespace {

// One chart a row: its writes after each idle.
void AddReclaimCharts(Json& section, const std::vector<Pick>& picks,
                      const std::vector<std::string>& idles) {
  for (const Pick& p : picks) {
    if (!p.run) continue;
    Json chart = LineChart("reclaim_" + p.label, "Writes after each idle (" + p.label + ")",
                           ChartAxis("time after the idle", "s"), ChartAxis("write", "MB/s"));
    for (const std::string& idle : idles) {
      if (const auto* series = p.run->Numbers(idle + "_throughput_bytes_per_second")) {
        AddLine(chart, "after " + idle.substr(5), OverTime(*series));
      }
    }
    if (!Items(chart["series"]).empty()) section["charts"].push_back(std::move(chart));
  }
}

}  // namespace

Json ReclaimSection(const Selection& s) {
  Json section = Section("reclaim", "SLC reclaim after idle");
  auto idles_of = [](const Run& r) {
    std::set<std::string> out;
    for (const auto& [key, v] : r.results) {
      for (std::string_view suffix : {"_fast_stage_bytes", "_fast_stage_lower_bound_bytes"}) {
        if (key.rfind("idle_", 0) == 0 && key.size() > suffix.size() + 5 &&
            key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0) {
          out.insert(key.substr(0, key.size() - suffix.size()));
        }
      }
    }
    return out;
  };
  const auto picks =
      PickRuns(s, [&](const Run& r) { return r.kind == config::ReclaimParams::kName && !idles_of(r).empty(); });
  section["runs"] = RunsJson(picks);
  std::vector<std::string> idles;
  for (const Pick& p : picks) {
    if (!p.run) continue;
    for (const std::string& i : idles_of(*p.run)) {
      if (std::find(idles.begin(), idles.end(), i) == idles.end()) idles.push_back(i);
    }
  }
  auto length = [](const std::string& idle) {
    const auto d = config::ParseDuration(std::string_view(idle).substr(5));
    return d ? d->count() : INT64_MAX;
  };
  std::stable_sort(idles.begin(), idles.end(), [&](const std::string& a, const std::string& b) {
    return length(a) < length(b);
  });
  auto fast = [](const Run& r, const std::string& idle) {
    auto v = r.Result(idle + "_fast_stage_bytes");
    return v ? v : r.Result(idle + "_fast_stage_lower_bound_bytes");
  };
  std::vector<ColumnSpec> columns;
  for (const std::string& idle : idles) {
    columns.push_back({idle + "_fast_stage_bytes", "after " + idle.substr(5) + " idle", "bytes",
                       [idle, fast](const Run& r) { return Value(fast(r, idle)); },
                       [idle](const Run& r) {
                         return r.Result(idle + "_fast_stage_bytes") ? std::string()
                                                                     : std::string("at_least");
                       }});
  }
  if (columns.empty()) {
    columns.push_back({"fast_stage_bytes", "fast stage after an idle", "bytes",
                       [](const Run&) { return Json(); }, nullptr});
  }
  section["tables"].push_back(
      RunTable("fast_stage", "Data written at full speed after each idle", picks, columns));
  section["expectation"] =
      "Left idle, a drive folds its SLC cache into TLC/QLC and writes fast again: the longer the "
      "idle, the longer the fast stage of the write after it. Rule: the drive reclaims when the "
      "fast stage after the longest idle is longer than after the shortest (a write that never "
      "slowed down had the cache for all of it).";
  if (const Pick* p = Latest(picks); p && !idles.empty()) {
    const auto first = fast(*p->run, idles.front());
    const auto last = fast(*p->run, idles.back());
    const bool never_slowed = std::all_of(idles.begin(), idles.end(), [&](const std::string& i) {
      return !p->run->Result(i + "_fast_stage_bytes");
    });
    std::string line = "after " + idles.front().substr(5) + " idle " +
                       (first ? Show(*first, "bytes") : std::string(kNotMeasured)) +
                       " at full speed, after " + idles.back().substr(5) + " " +
                       (last ? Show(*last, "bytes") : std::string(kNotMeasured)) + " (" + p->label +
                       ")";
    if (never_slowed) {
      section["verdict"] = Verdict("pass", line + ": no write ran out of cache");
    } else if (first && last && *last > *first) {
      section["verdict"] = Verdict("pass", line + ": the drive reclaims its cache while idle");
    } else {
      section["verdict"] = Verdict("fail", line + ": the fast stage does not grow with idle time");
    }
  }
  AddReclaimCharts(section, picks, idles);
  return section;
}

}  // namespace drivewatch::aging::drive_report_detail
