// SPDX-License-Identifier: Apache-2.0
// What the parts of `drivewatch report` share (aging/report/drive_report*.cc):
// the history as checked runs and steps, the perf cells, how a section
// picks its rows, and how values are shown. Internal to the report.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "aging/history/run_record.h"
#include "aging/report/drive_report.h"
#include "aging/runner/drive_age.h"
#include "config/util/json.h"

namespace drivewatch::aging::drive_report_detail {

// A perf run's cell: one workload of the perf matrix. From series.cells,
// or, for runs recorded before it, the fixed cells named by their results.
struct Cell {
  std::string name;
  std::string access;     // "sequential", "random" or "" (not recorded)
  std::string operation;  // "read", "write", "trim", "mix" or ""
  std::optional<double> read_percent, block_size, queue_depth, jobs, rate_iops;

  bool paced() const { return rate_iops && *rate_iops > 0; }
  bool mix() const {
    return operation == "mix" || (read_percent && *read_percent > 0 && *read_percent < 100);
  }
  // "seq read 128K QD32", "rand read 4K QD1 at 10 IOPS", "mix 90/10 4K".
  std::string Label() const;
  // Its result keys: "<name>_<suffix>", for latencies "<name>_<op>_<q>"
  // (the cell's own operation; legacy QD1 cells have "<name>_<q>").
  std::string Key(std::string_view suffix) const { return name + "_" + std::string(suffix); }
};

// A run record that passed its checks.
struct Run {
  std::shared_ptr<const RunRecord> owned;  // the record, which `record` and `series` point into
  const RunRecord* record = nullptr;
  std::string source;  // the file it was read from
  std::string drive;   // serial, or "target:NAME"
  std::string id, phase, kind, outcome, target, model, firmware;
  double start = 0;
  double end = 0;
  std::optional<DriveAge> age;
  std::string age_problem;                             // why drive_at_start was not trusted
  std::map<std::string, double, std::less<>> results;  // finite, 0 or more
  // Arrays of numbers (finite, 0 or more) from "series".
  std::map<std::string, std::vector<double>, std::less<>> numbers;
  const Json* series = nullptr;  // the record's series, for arrays of records
  std::vector<Cell> cells;       // perf runs
  std::uint64_t order = 0;       // read order over all sources: ties sort by it

  std::optional<double> Result(std::string_view key) const {
    auto it = results.find(key);
    if (it == results.end()) return std::nullopt;
    return it->second;
  }
  const std::vector<double>* Numbers(std::string_view key) const {
    auto it = numbers.find(key);
    return it == numbers.end() ? nullptr : &it->second;
  }
  bool completed() const { return outcome == "completed"; }
};

// A perf run's cells: its series.cells, each checked (one that fails is
// left out and said in `problems`), or for a run recorded before the perf
// matrix, the fixed cells its results name.
std::vector<Cell> ParseCells(const Run& run, std::vector<std::string>& problems);
// Whether `name` is one of the fixed cells of runs recorded before the
// perf matrix.
bool IsLegacyCell(std::string_view name);
// A cell's latency quantile `q` ("p50", "p99", "p99_9") of operation `op`:
// "<name>_<op>_<q>_seconds", or a legacy QD1 cell's "<name>_<q>_seconds".
std::optional<double> CellLatency(const Run& run, const Cell& cell, std::string_view op,
                                  std::string_view q);
// The I/Os those quantiles rest on: "<name>_<op>_ios", or a legacy QD1
// cell's "<name>_ios"; nullopt for runs recorded before the counts were.
std::optional<double> CellCount(const Run& run, const Cell& cell, std::string_view op);

// A step record (an endurance pass) that passed its checks.
struct Step {
  std::string source;
  std::string drive, run, phase, test;
  std::uint64_t step = 0;
  double time = 0;
  std::map<std::string, double, std::less<>> values;  // numbers of "results"
  std::uint64_t order = 0;                            // read order over all sources
};

// A retention study from the state directory or named on the command line.
struct Study {
  std::string name;
  const Json* record = nullptr;  // null: damaged or unreadable
  std::string problem;
  std::string drive;
};

// The passes the endurance section lists, the latest of them.
inline constexpr std::size_t kPassRows = 100;
// The values left out that the report lists; the rest it counts.
inline constexpr std::size_t kMaxProblemsListed = 1000;

// Everything read, checked and deduplicated; of a history's runs and
// steps, those a report can show (ReadInputs). The histories stream: what
// is kept is bounded by the kinds of run on record, not by their number.
struct Inputs {
  // By start time: of the runs alike in everything a section picks rows
  // by (ClassOf in drive_report_input.cc), the first and the latest; the
  // runs `wanted_runs` names; the runs of each drive's first and latest
  // pass. So every first, latest and named row, and every group of perf
  // cells, is as the whole history would give it.
  std::vector<Run> runs;
  // By time: each drive's first pass, its latest kPassRows, and a wanted
  // run's last pass.
  std::vector<Step> steps;
  struct StepTotals {
    std::uint64_t count = 0;  // passes on record
    bool one_test = true;     // all of one endurance test
  };
  std::map<std::string, StepTotals> step_totals;  // by drive
  std::vector<Study> studies;
  Json sources = Json::array();                    // per file: counts and what was damaged
  std::vector<std::string> problems;               // values left out, with where and why
  std::uint64_t problems_unlisted = 0;             // past kMaxProblemsListed
  std::map<std::string, std::string> drive_names;  // drive -> model
};
// Fails when a history cannot be read (the error names the file).
Expected<Inputs> ReadInputs(const std::vector<HistorySource>& histories,
                            const std::vector<StudyFile>& studies,
                            const std::vector<std::string>& wanted_runs);

// One row of a section: a label ("fresh", "aged", "baseline" or a run id),
// the drive, and the run (null: not measured).
struct Pick {
  std::string label;
  std::string drive;
  const Run* run = nullptr;
  std::string note;  // why the row is empty, when it is
};

struct Selection {
  const Inputs* inputs = nullptr;
  std::string drive;
  std::string baseline;
  std::vector<std::string> runs;  // as DriveReportRequest::runs
};

// The rows of a section whose runs are the completed runs of the drive
// that `wanted` takes, by start: one per item of the selection, plus the
// baseline drive's latest.
std::vector<Pick> PickRuns(const Selection& s, const std::function<bool(const Run&)>& wanted);

// A run's age as the model shows it: power_on_hours, percentage_used,
// data_written_bytes, capacity_bytes, drive_writes.
Json AgeJson(const DriveAge& age);
// The row of that label with a run, or null.
const Pick* Labelled(const std::vector<Pick>& picks, std::string_view label);
// The last of the drive's own rows (not the baseline's) with a run: the
// one a verdict judges.
const Pick* Latest(const std::vector<Pick>& picks);
// A run's fill level in whole percent (its fill_ratio), -1 when unknown.
int FillLevel(const Run& r);
// Which rows the report has, in words: "fresh (...), aged (...), baseline
// (drive S4G..., its latest)".
std::string RowsText(const Json& model);

// The "runs" member of a section: each row's label, drive, run (id, phase,
// kind, start, end, source, age) or null with its note.
Json RunsJson(const std::vector<Pick>& picks);

// A table column read from a run: its value in the column's base unit
// (null: not measured) and, optionally, a mark on it ("at_least": a lower
// bound; "not_steady": a perf cell that did not reach steady state).
struct ColumnSpec {
  std::string key, label, unit;
  std::function<Json(const Run&)> value;
  std::function<std::string(const Run&)> mark;
  bool optional = false;  // left out when no row has a value
  // Result keys of the value's spread (a standard error, in the column's
  // unit) and of the count it rests on (the runs): shown with the value,
  // "3,646 ±43.9 (n 3)", and kept in the row under these keys; the
  // column names them as "spread" and "count".
  std::string spread_key, count_key;
};
// The text a table shows in a column's cell: the value in its unit, its
// mark, and its spread and count when the column has them.
std::string SpreadText(const Json& row, const Json& column);
// A table whose rows are the picks.
Json RunTable(std::string id, std::string title, const std::vector<Pick>& picks,
              const std::vector<ColumnSpec>& columns);
// A table row: its label, values by column key, marks.
Json Row(std::string label);
// Whether any row of a section's first table has a value.
bool AnyValue(const Json& table);

// A percentile needs its sample count: "indicative" when fewer than 10 of
// `n` samples lie beyond quantile `q` (a p99.9 of fewer than 10,000 reads,
// a p99 of fewer than 1,000), "" when enough do or n is not on record.
std::string TailMark(std::optional<double> n, double q);
// Whether any row of `table` has the mark "indicative", and the note that
// says what it means.
bool AnyIndicative(const Json& table);
inline constexpr std::string_view kIndicativeNote =
    "\xe2\x89\x88 indicative: fewer than 10 samples lie beyond this percentile (its n is "
    "beside it), so one slow I/O more or less moves it";

// Charts, drawn by the HTML report and kept in the model with their data
// (in the axes' units): lines over x, or bars in groups.
using Points = std::vector<std::pair<double, double>>;
Json ChartAxis(std::string title, std::string unit, bool log = false);
Json LineChart(std::string id, std::string title, Json x, Json y);
// A line; lines of one `group` (a row's) are drawn in one colour.
void AddLine(Json& chart, std::string name, const Points& points, bool dashed = false,
             std::string group = "");
// A vertical line at x: where something happened on `series` (empty: on
// all of them, such as a limit).
void AddMarker(Json& chart, double x, std::string label, std::string series = "");
Json BarChart(std::string id, std::string title, const std::vector<std::string>& groups, Json y);
void AddBars(Json& chart, std::string name, const std::vector<std::optional<double>>& values);
// At most `most` points, evenly picked (the first and the last kept).
Points Downsample(const Points& points, std::size_t most = 240);
// A throughput series (bytes per second, one sample a second or each of
// `seconds` long) as MB/s over time, and over the GB written by the end of
// each sample (held to `written_bytes` when the lengths are not on record).
Points OverTime(const std::vector<double>& bps);
Points OverTime(const std::vector<double>& bps, const std::vector<double>* seconds);
Points OverBytes(const std::vector<double>& bps, const std::vector<double>* seconds,
                 std::optional<double> written_bytes);

// Section parts.
Json Column(std::string key, std::string label, std::string unit);
Json Verdict(std::string status, std::string line);
Json Section(std::string id, std::string title);
// A value or null, never 0 for a missing measure.
Json Value(std::optional<double> v);

// The sections (drive_report_SECTION.cc, each picking its rows with
// PickRuns, filling its tables and charts, and ending with its expectation
// and a verdict from the rule the expectation states, which docs/report.md
// lists).
Json IdentitySection(const Selection& s);
// One per fill level (50 % always).
std::vector<Json> FillSections(const Selection& s);
Json ReclaimSection(const Selection& s);
// One table per fill level and set of cells, then QD1, low-load and mixed
// latency, one table per fill level and set of cells.
std::vector<Json> PerfSections(const Selection& s);
std::vector<Json> LatencySections(const Selection& s);
Json ReplaySection(const Selection& s);
// One per phase and fill level of the sqlite (pgbench) runs on record
// (drive_report_application.cc).
std::vector<Json> SqliteSections(const Selection& s);
std::vector<Json> PgbenchSections(const Selection& s);
Json LowPowerSection(const Selection& s);
Json TrimSection(const Selection& s);
Json EnduranceSection(const Selection& s);
std::vector<Json> RetentionSections(const Selection& s);

// The sections a drive's part of the report shows, in that order, each
// with the phase kinds whose runs or studies it shows (their kName,
// config/kinds/*.h). A new section is its drive_report_SECTION.cc and one
// entry here (drive_report_model.cc); the report's tests check that every
// kind of the registry (config/phase_kinds.h) is shown by a section.
struct SectionEntry {
  std::string_view id;
  std::vector<std::string_view> kinds;  // empty: a section of every run (identity)
  std::vector<Json> (*make)(const Selection& s);
};
std::span<const SectionEntry> DriveSections();

// Showing values: a column's unit turns a base-unit value into what the
// tables show ("bytes" in GB, "bytes_per_second" in MB/s, "iops" in
// K IOPS, "ms"/"us"/"s"/"days" from seconds, "tb" in TB, "mW" from
// watts, "percent" from a ratio, and "pct" (a percentage), "celsius",
// "hours", "count", "x", "text" as they are).
std::string UnitLabel(std::string_view unit);
std::string ShowValue(const Json& value, std::string_view unit);
// A value with its unit's label: "3,646 MB/s".
std::string Show(double v, std::string_view unit);
// The parts with `sep` between them.
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
inline constexpr std::string_view kNotMeasured = "not measured";

// The HTML page (drive_report_html.cc).
std::string RenderHtml(const Json& model);

// Rounds chart coordinates to 4 significant digits, so the model stays
// readable and stable.
double Round4(double v);

}  // namespace drivewatch::aging::drive_report_detail
