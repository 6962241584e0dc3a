// SPDX-License-Identifier: Apache-2.0
// `drivewatch report`: a drive's aging runs laid out the way a lab's test
// report is (docs/report.md): identity and age, the fill and its SLC cache,
// reclaim, sequential and random performance at each fill level, QD1,
// low-load and mixed latency, workload replay, low power, trim, endurance
// and retention, each table with a row for the drive fresh (its first
// complete run of that measure), aged (its latest) and a baseline drive,
// and each section ending with an expectation and a one-line verdict from
// a stated rule. A missing measure is "not measured", never 0.
//
// Building and rendering are separate and pure: BuildDriveReport turns
// history records and retention studies into the report's model, a JSON
// document of documented, stable shape (it is the JSON format as printed);
// RenderDriveReport turns a model into text, markdown or one self-contained
// HTML page with inline SVG charts. Neither reads a file or the clock.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "aging/history/history.h"
#include "aging/retention/retention_study.h"
#include "config/util/expected.h"
#include "config/util/json.h"

namespace drivewatch::aging {

// One history (aging/history/history.h), with the name the report shows for it
// (the path as given). The report streams it: `read` calls its argument
// with each good record in file order and returns what was left out, so a
// history of years is never held whole.
struct HistorySource {
  std::string name;
  std::function<Expected<HistoryDamage>(const std::function<void(Json&&)>&)> read;

  // The file at `path`, streamed each time it is read.
  static HistorySource File(std::string name, std::string path);
  // Records already in memory (a test's, the fuzzer's).
  static HistorySource Held(std::string name, HistoryContents contents);
};

struct DriveReportRequest {
  // The drives to report on, by serial ("target:NAME" for a directory
  // target, which has none). Empty: every drive in the history but the
  // baseline.
  std::vector<std::string> drives;
  // A drive whose latest run of each measure is the "baseline" row of
  // every table; empty: none.
  std::string baseline;
  // The rows of each table: "first" (labelled fresh: the drive's first
  // complete run of the measure), "latest" (aged: its latest), or a run id
  // (that run, in the tables of its measure).
  std::vector<std::string> runs = {"first", "latest"};
  // Unix seconds shown as the report's date.
  double generated = 0;
};

// The report's model. Records are deduplicated across sources (the same
// run, by run id, start and drive, counts once); records and studies that
// fail their checks are listed as damaged and give no result. Fails with
// EINVAL, naming what is missing and what is on record, when the request
// names a drive, a baseline or a run that no source holds, or the baseline
// among the drives.
Expected<Json> BuildDriveReport(const std::vector<HistorySource>& histories,
                                const std::vector<StudyFile>& studies,
                                const DriveReportRequest& request);

enum class DriveReportFormat { kText, kMarkdown, kJson, kHtml };

// The model as text for a terminal, markdown for a wiki, JSON (the model
// itself, indented) or HTML (no script, no external resource; strings from
// the history are escaped).
std::string RenderDriveReport(const Json& model, DriveReportFormat format);

// The file name the HTML report links a retention study's own report under
// ("retention-<study>.html", next to the report).
std::string RetentionReportFileName(const std::string& study);

}  // namespace drivewatch::aging
