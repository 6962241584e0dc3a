// SPDX-License-Identifier: Apache-2.0
// What `drivewatch retention list` and `drivewatch retention report` print:
// pure functions over a retention study's JSON state
// (<state>/retention/<study>.json, see docs/retention.md). They read no
// files and no clock, so the CLI, the daemon and tests render the same way.
#pragma once

#include <string>
#include <vector>

#include "aging/json.h"

namespace drivewatch::aging {

enum class ReportFormat { kText, kJson, kHtml };

// One study's report. `now` (Unix seconds) is used only for ages shown as
// "x days ago" and for the time accounting of a study with no verify yet.
//   kText: a readable multi-section report.
//   kJson: the study pretty-printed with a computed "summary" member (the
//          verdict, ages, bad-block totals and latency shift against the
//          baseline).
//   kHtml: one self-contained page (inline CSS and SVG, no script, no
//          external resource): verdict, facts, time accounting, latency
//          chart and table, bad-block map and SMART deltas.
// Fields may be missing (a study still writing has no baseline); they show
// as "-" and never throw. Every string from the study is escaped in HTML.
std::string RenderRetentionReport(const Json& study, ReportFormat format,
                                  double now);

// `drivewatch retention list`: an aligned table, one line per study (name,
// state, serial, target, region size, written date, age, equivalent age,
// last verify date and its bad-block total); "no retention studies\n" when
// `studies` is empty.
std::string RenderRetentionList(const std::vector<Json>& studies, double now);

}  // namespace drivewatch::aging
