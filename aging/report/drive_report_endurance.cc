// SPDX-License-Identifier: Apache-2.0
// `drivewatch report`'s endurance section: the passes on record (step
// records) and the test's verdict.
#include <algorithm>

#include "aging/report/drive_report_detail.h"
#include "aging/report/report_format.h"
#include "config/kinds/endurance.h"

namespace drivewatch::aging::drive_report_detail {
namespace {

using report_format::Format;

// The passes of `drive` kept (Inputs::steps), by time.
std::vector<const Step*> StepsOf(const Selection& s, const std::string& drive) {
  std::vector<const Step*> out;
  for (const Step& st : s.inputs->steps) {
    if (st.drive == drive) out.push_back(&st);
  }
  return out;
}

struct StepPick {
  std::string label, drive;
  const Step* step = nullptr;
  std::string note;
};

// The rows: the drive's first and latest pass, a run id's last pass, and
// the baseline drive's latest.
std::vector<StepPick> PickSteps(const Selection& s, const std::vector<const Step*>& mine,
                                const Inputs::StepTotals& totals) {
  std::vector<StepPick> picks;
  const bool has_first = std::find(s.runs.begin(), s.runs.end(), "first") != s.runs.end();
  for (const std::string& item : s.runs) {
    StepPick p{item == "first" ? "fresh" : item == "latest" ? "aged" : item, s.drive};
    if (item == "first" || item == "latest") {
      if (mine.empty()) {
        p.note = "no pass on record";
      } else if (item == "first") {
        p.step = mine.front();
      } else if (totals.count == 1 && has_first) {
        p.note = "one pass on record, shown as fresh";
      } else {
        p.step = mine.back();
      }
      picks.push_back(p);
      continue;
    }
    for (const Step* st : mine) {
      if (st->run == item) p.step = st;
    }
    if (p.step) picks.push_back(p);
  }
  if (!s.baseline.empty()) {
    const auto theirs = StepsOf(s, s.baseline);
    StepPick p{"baseline", s.baseline, theirs.empty() ? nullptr : theirs.back()};
    if (!p.step) p.note = "no pass on record";
    picks.push_back(p);
  }
  return picks;
}

// The "runs" member: each row's pass as a run (RunsJson's shape), with its
// test and pass number.
Json StepRunsJson(const Selection& s, const std::vector<StepPick>& picks) {
  Json runs = Json::array();
  for (const StepPick& p : picks) {
    Json row = Json::object();
    row["label"] = p.label;
    row["drive"] = p.drive;
    if (!p.step) {
      row["run"] = Json();
      row["note"] = p.note;
    } else {
      Json& run = row["run"];
      run["id"] = p.step->run;
      run["phase"] = p.step->phase;
      run["kind"] = std::string(config::EnduranceParams::kName);
      run["start"] = p.step->time;
      run["end"] = p.step->time;
      run["source"] = p.step->source;
      run["test"] = p.step->test;
      run["step"] = p.step->step;
      run["age"] = Json();
      for (const Run& r : s.inputs->runs) {
        if (r.id == p.step->run && r.drive == p.step->drive && r.age) run["age"] = AgeJson(*r.age);
      }
    }
    runs.push_back(std::move(row));
  }
  return runs;
}

struct Field {
  const char* key;
  const char* label;
  const char* unit;
  double scale;
};
constexpr Field kFields[] = {{"host_bytes", "written in the pass", "bytes", 1},
                             {"percentage_used", "Percentage Used", "pct", 1},
                             {"available_spare_percent", "available spare", "pct", 1},
                             {"media_errors", "media errors", "count", 1},
                             {"temperature_celsius", "temperature", "celsius", 1},
                             {"waf_ratio", "WAF", "x", 1}};

// A table of passes, a row each.
Json PassTable(std::string id, std::string title,
               const std::vector<std::pair<std::string, const Step*>>& rows) {
  Json t = Json::object();
  t["id"] = std::move(id);
  t["title"] = std::move(title);
  Json& cols = t["columns"];
  cols = Json::array();
  cols.push_back(Column("pass", "pass", "count"));
  for (const Field& f : kFields) cols.push_back(Column(f.key, f.label, f.unit));
  Json& out = t["rows"];
  out = Json::array();
  for (const auto& [label, st] : rows) {
    Json row = Row(label);
    row["values"]["pass"] = st ? Json(st->step) : Json();
    for (const Field& f : kFields) {
      Json v;
      if (st) {
        if (auto it = st->values.find(f.key); it != st->values.end()) v = it->second * f.scale;
      }
      row["values"][f.key] = v;
    }
    out.push_back(std::move(row));
  }
  return t;
}

// Where the test is: the latest endurance run that wrote.
Json ProgressTable(const Run& latest_run) {
  Json t = Json::object();
  t["id"] = "endurance_progress";
  t["title"] = "Where the test is";
  Json& cols = t["columns"];
  cols = Json::array();
  cols.push_back(Column("outcome", "latest run", "text"));
  cols.push_back(Column("host_written_bytes", "written by the test", "bytes"));
  cols.push_back(Column("drive_writes_ratio", "drive writes", "x"));
  cols.push_back(Column("target_progress_ratio", "toward its end", "percent"));
  cols.push_back(Column("run_written_bytes", "written by the run", "bytes"));
  Json row = Row(latest_run.id);
  row["values"]["outcome"] = latest_run.outcome;
  for (const char* key :
       {"host_written_bytes", "drive_writes_ratio", "target_progress_ratio", "run_written_bytes"}) {
    row["values"][key] = Value(latest_run.Result(key));
  }
  t["rows"] = Json::array();
  t["rows"].push_back(std::move(row));
  return t;
}

// Rule: a media error during the test, or available spare at its threshold,
// fails it.
void AddEnduranceVerdict(Json& section, const std::vector<const Step*>& mine,
                         const Inputs::StepTotals& totals, const Run* latest_run) {
  if (!mine.empty()) {
    const Step& first = *mine.front();
    const Step& last = *mine.back();
    auto value = [](const Step& st, const char* key) -> std::optional<double> {
      auto it = st.values.find(key);
      return it == st.values.end() ? std::nullopt : std::optional<double>(it->second);
    };
    std::string line = Format("%llu passes; the latest, pass %llu of test %s",
                              static_cast<unsigned long long>(totals.count),
                              static_cast<unsigned long long>(last.step), last.test.c_str());
    if (auto u0 = value(first, "percentage_used"), u1 = value(last, "percentage_used"); u0 && u1) {
      line += Format(": Percentage Used %.0f%% \xe2\x86\x92 %.0f%%", *u0, *u1);
    }
    if (auto w = value(last, "waf_ratio")) line += Format(", WAF %.2f", *w);
    const auto errors = value(last, "media_errors");
    const auto errors_before = value(first, "media_errors");
    if (errors && errors_before && *errors > *errors_before) {
      section["verdict"] = Verdict(
          "fail", line + Format(", %.0f media errors during the test", *errors - *errors_before));
    } else {
      section["verdict"] = Verdict("pass", line + (errors ? ", no media error during the test"
                                                          : ", media errors not on record"));
    }
  } else if (latest_run) {
    const double written = *latest_run->Result("host_written_bytes");
    std::string line = "the test is under way, no full pass yet: " + Show(written, "bytes") + " written";
    if (auto dw = latest_run->Result("drive_writes_ratio")) line += Format(" (%.2f drive writes)", *dw);
    if (auto to = latest_run->Result("target_progress_ratio")) {
      line += Format(", %.0f %% of the way to its end", *to * 100);
    }
    section["verdict"] = Verdict("info", line);
  } else {
    section["notes"].push_back("no endurance pass of this drive on record");
  }
}

}  // namespace

Json EnduranceSection(const Selection& s) {
  Json section = Section("endurance", "Endurance");
  // The passes kept of this drive (its first, its latest kPassRows, a
  // named run's last: Inputs::steps) and how many there are in all.
  const auto mine = StepsOf(s, s.drive);
  const auto totals_it = s.inputs->step_totals.find(s.drive);
  const Inputs::StepTotals totals =
      totals_it == s.inputs->step_totals.end() ? Inputs::StepTotals{} : totals_it->second;
  const std::vector<StepPick> picks = PickSteps(s, mine, totals);
  section["runs"] = StepRunsJson(s, picks);
  std::vector<std::pair<std::string, const Step*>> rows;
  for (const StepPick& p : picks) rows.emplace_back(p.label, p.step);
  section["tables"].push_back(PassTable("endurance", "Passes over the whole drive", rows));
  if (totals.count > 1) {
    std::vector<std::pair<std::string, const Step*>> all;
    const std::size_t listed = std::min(mine.size(), kPassRows);
    const std::uint64_t from = totals.count - std::min<std::uint64_t>(totals.count, listed);
    const bool one_test = totals.one_test;
    for (std::size_t i = mine.size() - listed; i < mine.size(); ++i) {
      all.emplace_back(
          (one_test ? "" : "test " + mine[i]->test + " ") + "pass " + std::to_string(mine[i]->step),
          mine[i]);
    }
    section["tables"].push_back(PassTable("passes", "Every pass of the drive", all));
    if (from > 0)
      section["notes"].push_back(
          Format("the first %zu passes are left out of the list", static_cast<std::size_t>(from)));
  }
  // Where the test is, from the drive's latest endurance run that wrote
  // (whatever its outcome: a test of months is runs cut short by
  // max_duration), so a test without a full pass yet shows what it wrote.
  const Run* latest_run = nullptr;
  for (const Run& r : s.inputs->runs) {
    if (r.drive == s.drive && r.kind == config::EnduranceParams::kName && r.outcome != "refused" &&
        r.Result("host_written_bytes")) {
      latest_run = &r;
    }
  }
  if (latest_run) section["tables"].push_back(ProgressTable(*latest_run));
  section["expectation"] =
      "Writing the drive over and over wears it: Percentage Used grows by about 100 % over its "
      "rated drive writes, the write amplification (WAF) stays near 1 for sequential writes and "
      "a few for JESD219's mix. Rule: a media error during the test, or available spare at its "
      "threshold, fails it.";
  AddEnduranceVerdict(section, mine, totals, latest_run);
  return section;
}

}  // namespace drivewatch::aging::drive_report_detail
