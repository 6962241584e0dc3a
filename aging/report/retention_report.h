// SPDX-License-Identifier: Apache-2.0
// What `drivewatch retention list` and `drivewatch retention report` print:
// pure functions over a retention study's JSON state
// (<state>/retention/<study>.json, see docs/retention.md). They read no
// files and no clock, so the CLI, the daemon and tests render the same way.
#pragma once

#include <string>
#include <vector>

#include "config/util/json.h"

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
// A study that fails ValidateStudy (aging/retention/retention_study.h) is rendered
// as RenderDamagedStudyReport does: its verdict is DAMAGED, never a result.
std::string RenderRetentionReport(const Json& study, ReportFormat format,
                                  double now);

// The report of a study whose record cannot be trusted: `problem` is why
// (LoadStudy's or ValidateStudy's message). Verdict DAMAGED (UNREADABLE
// when `damaged` is false: the file could not be read at all); text, JSON
// ({"study", "summary": {"verdict", "verdict_line", "problem"}}) or HTML.
std::string RenderDamagedStudyReport(const std::string& name, const std::string& problem,
                                     bool damaged, ReportFormat format);

// A study file that could not be loaded, for the list.
struct UnloadableStudy {
  std::string name;
  std::string problem;  // LoadStudy's message
  bool damaged = true;  // false: unreadable (EACCES, EIO, ...)
};

// `drivewatch retention list`: an aligned table, one line per study (name,
// state, serial, target, region size, written date, age, equivalent age,
// last verify date and its bad-block total); "no retention studies\n" when
// there are none. A study that fails ValidateStudy, and every one in
// `unloadable`, shows the state DAMAGED (or UNREADABLE) and no results,
// with its problem listed under the table.
std::string RenderRetentionList(const std::vector<Json>& studies, double now,
                                const std::vector<UnloadableStudy>& unloadable = {});

}  // namespace drivewatch::aging
