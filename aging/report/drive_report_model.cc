// SPDX-License-Identifier: Apache-2.0
// `drivewatch report`'s model: which runs make each table's rows, and the
// document every format renders (aging/report/drive_report.h).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <set>

#include "aging/report/drive_report_detail.h"
#include "aging/report/report_format.h"

namespace drivewatch::aging {
namespace drive_report_detail {
namespace {

using report_format::Format;
using report_format::Grouped;

// About three significant digits, whole numbers grouped: 0.081, 2.04,
// 24.5, 3,012.
std::string Adaptive(double v) {
  const double a = std::fabs(v);
  if (a == 0) return "0";
  if (a < 1) return Format("%.3f", v);
  if (a < 10) return Format("%.2f", v);
  if (a < 100) return Format("%.1f", v);
  return Grouped(v, 0);
}

}  // namespace

Json AgeJson(const DriveAge& a) {
  Json out = Json::object();
  out["power_on_hours"] = a.power_on_hours;
  out["percentage_used"] = std::uint64_t{a.percentage_used};
  out["data_written_bytes"] = a.data_written_bytes;
  out["capacity_bytes"] = a.capacity_bytes;
  out["drive_writes"] = Round4(a.DriveWrites());
  return out;
}

double Round4(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double digits = std::ceil(std::log10(std::fabs(v)));
  const double factor = std::pow(10.0, 4 - digits);
  return std::round(v * factor) / factor;
}

std::string UnitLabel(std::string_view unit) {
  if (unit == "bytes") return "GB";
  if (unit == "tb") return "TB";
  if (unit == "bytes_per_second") return "MB/s";
  if (unit == "iops") return "K IOPS";
  if (unit == "ms") return "ms";
  if (unit == "us") return "\xc2\xb5s";
  if (unit == "s") return "s";
  if (unit == "mW") return "mW";
  if (unit == "percent" || unit == "pct") return "%";
  if (unit == "celsius")
    return "\xc2\xb0"
           "C";
  if (unit == "hours") return "h";
  if (unit == "days") return "days";
  if (unit == "x") return "\xc3\x97";
  return "";
}

std::string ShowValue(const Json& value, std::string_view unit) {
  if (value.is_string()) return AsString(value).empty() ? "-" : AsString(value);
  if (!value.is_number()) return std::string(kNotMeasured);
  const double v = AsDouble(value);
  if (unit == "bytes") return Adaptive(v / 1e9);
  if (unit == "tb") return Adaptive(v / 1e12);
  if (unit == "bytes_per_second") return Adaptive(v / 1e6);
  if (unit == "iops") return Adaptive(v / 1e3);
  if (unit == "ms") return Adaptive(v * 1e3);
  if (unit == "us") return v * 1e6 < 10 ? Format("%.1f", v * 1e6) : Grouped(v * 1e6, 0);
  if (unit == "s") return v < 10 ? Format("%.2f", v) : Grouped(v, 1);
  if (unit == "mW") return Adaptive(v * 1e3);
  if (unit == "percent") return Format("%.1f", v * 100);
  if (unit == "pct") return Format("%.0f", v);
  if (unit == "celsius") return Format("%.0f", v);
  if (unit == "days") return Format("%.1f", v / 86400);
  if (unit == "hours" || unit == "count") return Grouped(v, 0);
  if (unit == "x") return Format("%.2f", v);
  return Adaptive(v);
}

std::string Show(double v, std::string_view unit) {
  return ShowValue(Json(v), unit) + " " + UnitLabel(unit);
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : std::string(sep)) + p;
  return out;
}

Json Value(std::optional<double> v) { return v && std::isfinite(*v) ? Json(*v) : Json(); }

Json Column(std::string key, std::string label, std::string unit) {
  Json c = Json::object();
  c["key"] = std::move(key);
  c["label"] = std::move(label);
  c["unit"] = std::move(unit);
  return c;
}

Json Verdict(std::string status, std::string line) {
  Json v = Json::object();
  v["status"] = std::move(status);
  v["line"] = std::move(line);
  return v;
}

Json Section(std::string id, std::string title) {
  Json s = Json::object();
  s["id"] = std::move(id);
  s["title"] = std::move(title);
  s["runs"] = Json::array();
  s["tables"] = Json::array();
  s["charts"] = Json::array();
  s["notes"] = Json::array();
  s["expectation"] = "";
  s["verdict"] = Verdict("not_measured", "not measured");
  return s;
}

Json Row(std::string label) {
  Json r = Json::object();
  r["label"] = std::move(label);
  r["values"] = Json::object();
  r["marks"] = Json::object();
  return r;
}

Json RunTable(std::string id, std::string title, const std::vector<Pick>& picks,
              const std::vector<ColumnSpec>& columns) {
  Json t = Json::object();
  t["id"] = std::move(id);
  t["title"] = std::move(title);
  Json& cols = t["columns"];
  cols = Json::array();
  Json& rows = t["rows"];
  rows = Json::array();
  std::vector<Json> built;
  for (const Pick& p : picks) built.push_back(Row(p.label));
  for (const ColumnSpec& c : columns) {
    bool any = false;
    std::vector<Json> values;
    for (const Pick& p : picks) {
      values.push_back(p.run ? c.value(*p.run) : Json());
      any = any || !values.back().is_null();
    }
    if (c.optional && !any) continue;
    Json column = Column(c.key, c.label, c.unit);
    for (const auto& [name, key] : {std::pair{"spread", &c.spread_key}, {"count", &c.count_key}}) {
      if (key->empty()) continue;
      bool recorded = false;
      for (std::size_t i = 0; i < picks.size(); ++i) {
        const auto v = picks[i].run ? picks[i].run->Result(*key) : std::nullopt;
        built[i]["values"][*key] = Value(v);
        recorded = recorded || v.has_value();
      }
      if (recorded) column[name] = *key;
    }
    cols.push_back(std::move(column));
    for (std::size_t i = 0; i < picks.size(); ++i) {
      built[i]["values"][c.key] = values[i];
      if (picks[i].run && c.mark && !values[i].is_null()) {
        if (const std::string m = c.mark(*picks[i].run); !m.empty()) built[i]["marks"][c.key] = m;
      }
    }
  }
  for (Json& r : built) rows.push_back(std::move(r));
  return t;
}

std::string SpreadText(const Json& row, const Json& column) {
  std::string out;
  const Json* values = Find(row, "values");
  if (const Json* key = Find(column, "spread")) {
    const Json* unit = Find(column, "unit");
    if (const Json* se = Find(*values, AsString(*key)); se && !se->is_null()) {
      out += "\xc2\xb1" + ShowValue(*se, unit ? AsString(*unit) : "");
    }
  }
  if (const Json* key = Find(column, "count")) {
    if (const Json* n = Find(*values, AsString(*key)); n && !n->is_null()) {
      out += std::string(out.empty() ? "" : " ") + "(n " + ShowValue(*n, "count") + ")";
    }
  }
  return out;
}

bool AnyValue(const Json& table) {
  if (const Json* rows = Find(table, "rows")) {
    for (const Json& r : Items(*rows)) {
      for (const auto& [key, v] : Members(*Find(r, "values"))) {
        if (!v.is_null()) return true;
      }
    }
  }
  return false;
}

std::string TailMark(std::optional<double> n, double q) {
  if (!n) return "";
  return *n * (1 - q) < 10 - 1e-9 ? "indicative" : "";
}

bool AnyIndicative(const Json& table) {
  for (const Json& r : Items(*Find(table, "rows"))) {
    for (const auto& [key, m] : Members(*Find(r, "marks"))) {
      if (AsString(m) == "indicative") return true;
    }
  }
  return false;
}

Json ChartAxis(std::string title, std::string unit, bool log) {
  Json a = Json::object();
  a["title"] = std::move(title);
  a["unit"] = std::move(unit);
  a["scale"] = log ? "log" : "linear";
  return a;
}

Json LineChart(std::string id, std::string title, Json x, Json y) {
  Json c = Json::object();
  c["id"] = std::move(id);
  c["title"] = std::move(title);
  c["type"] = "line";
  c["x"] = std::move(x);
  c["y"] = std::move(y);
  c["series"] = Json::array();
  c["markers"] = Json::array();
  return c;
}

void AddLine(Json& chart, std::string name, const Points& points, bool dashed, std::string group) {
  Json s = Json::object();
  s["name"] = std::move(name);
  s["dashed"] = dashed;
  if (!group.empty()) s["group"] = std::move(group);
  Json& pts = s["points"];
  pts = Json::array();
  for (const auto& [x, y] : points) {
    Json p = Json::array();
    p.push_back(Round4(x));
    p.push_back(Round4(y));
    pts.push_back(std::move(p));
  }
  chart["series"].push_back(std::move(s));
}

void AddMarker(Json& chart, double x, std::string label, std::string series) {
  Json m = Json::object();
  m["x"] = Round4(x);
  m["label"] = std::move(label);
  m["series"] = series.empty() ? Json() : Json(std::move(series));
  chart["markers"].push_back(std::move(m));
}

Json BarChart(std::string id, std::string title, const std::vector<std::string>& groups, Json y) {
  Json c = Json::object();
  c["id"] = std::move(id);
  c["title"] = std::move(title);
  c["type"] = "bars";
  c["y"] = std::move(y);
  Json& g = c["groups"];
  g = Json::array();
  for (const std::string& name : groups) g.push_back(name);
  c["series"] = Json::array();
  return c;
}

void AddBars(Json& chart, std::string name, const std::vector<std::optional<double>>& values) {
  Json s = Json::object();
  s["name"] = std::move(name);
  Json& v = s["values"];
  v = Json::array();
  for (const auto& x : values) v.push_back(x ? Json(Round4(*x)) : Json());
  chart["series"].push_back(std::move(s));
}

Points Downsample(const Points& points, std::size_t most) {
  if (points.size() <= most || most < 2) return points;
  // Every k-th point, not averages: a step (the SLC cache running out)
  // stays a step instead of becoming a ramp.
  Points out;
  const double step = static_cast<double>(points.size() - 1) / static_cast<double>(most - 1);
  for (std::size_t i = 0; i < most; ++i) {
    out.push_back(points[static_cast<std::size_t>(std::llround(step * static_cast<double>(i)))]);
  }
  return out;
}

// A 1-second throughput series as (seconds, MB/s), and against the GB
// written by the end of each second.
Points OverTime(const std::vector<double>& bps) {
  Points out;
  for (std::size_t i = 0; i < bps.size(); ++i)
    out.emplace_back(static_cast<double>(i), bps[i] / 1e6);
  return Downsample(out);
}
// A fill's throughput against data written, from bytes: each sample's
// rate times its own length (`seconds`, series.throughput_seconds; runs
// recorded before it: 1 s each, with the total held to `written_bytes`,
// since the last sample covered only part of its second).
Points OverBytes(const std::vector<double>& bps, const std::vector<double>* seconds,
                 std::optional<double> written_bytes) {
  const bool lengths = seconds != nullptr && seconds->size() == bps.size();
  Points out;
  double written = 0;
  for (std::size_t i = 0; i < bps.size(); ++i) {
    written += bps[i] * (lengths ? (*seconds)[i] : 1.0);
    if (!lengths && written_bytes) written = std::min(written, *written_bytes);
    out.emplace_back(written / 1e9, bps[i] / 1e6);
  }
  return Downsample(out);
}
// Over time, each sample at its start, from the samples' lengths when on
// record.
Points OverTime(const std::vector<double>& bps, const std::vector<double>* seconds) {
  if (seconds == nullptr || seconds->size() != bps.size()) return OverTime(bps);
  Points out;
  double t = 0;
  for (std::size_t i = 0; i < bps.size(); ++i) {
    out.emplace_back(t, bps[i] / 1e6);
    t += (*seconds)[i];
  }
  return Downsample(out);
}

std::vector<Pick> PickRuns(const Selection& s, const std::function<bool(const Run&)>& wanted) {
  auto candidates = [&](const std::string& drive) {
    std::vector<const Run*> out;
    for (const Run& r : s.inputs->runs) {
      if (r.drive == drive && r.completed() && wanted(r)) out.push_back(&r);
    }
    return out;
  };
  const std::vector<const Run*> mine = candidates(s.drive);
  const bool has_first = std::find(s.runs.begin(), s.runs.end(), "first") != s.runs.end();
  std::vector<Pick> picks;
  for (const std::string& item : s.runs) {
    Pick p;
    p.drive = s.drive;
    if (item == "first" || item == "latest") {
      p.label = item == "first" ? "fresh" : "aged";
      if (mine.empty()) {
        p.note = "no complete run on record";
      } else if (item == "first") {
        p.run = mine.front();
      } else if (mine.size() == 1 && has_first) {
        p.note = "one complete run on record, shown as fresh";
      } else {
        p.run = mine.back();
      }
      picks.push_back(std::move(p));
      continue;
    }
    // A run id: a row in the tables of its measure only.
    for (const Run* r : mine) {
      if (r->id == item) {
        p.label = item;
        p.run = r;
        picks.push_back(std::move(p));
        break;
      }
    }
  }
  if (!s.baseline.empty()) {
    Pick p;
    p.label = "baseline";
    p.drive = s.baseline;
    const std::vector<const Run*> theirs = candidates(s.baseline);
    for (const Run* r : theirs) {
      if (std::find(s.runs.begin(), s.runs.end(), r->id) != s.runs.end()) p.run = r;
    }
    if (p.run == nullptr && !theirs.empty()) p.run = theirs.back();
    if (p.run == nullptr) p.note = "no complete run on record";
    picks.push_back(std::move(p));
  }
  return picks;
}

const Pick* Labelled(const std::vector<Pick>& picks, std::string_view label) {
  for (const Pick& p : picks) {
    if (p.run && p.label == label) return &p;
  }
  return nullptr;
}

const Pick* Latest(const std::vector<Pick>& picks) {
  const Pick* out = nullptr;
  for (const Pick& p : picks) {
    if (p.run && p.label != "baseline") out = &p;
  }
  return out;
}

int FillLevel(const Run& r) {
  const auto f = r.Result("fill_ratio");
  return f && *f <= 1 ? static_cast<int>(std::lround(*f * 100)) : -1;
}

std::string RowsText(const Json& model) {
  std::string out;
  for (const Json& r : Items(*Find(model, "runs"))) {
    const std::string item = AsString(r);
    out += (out.empty() ? "" : ", ") +
           (item == "first"    ? std::string("fresh (the first complete run of each measure)")
            : item == "latest" ? std::string("aged (the latest)")
                               : "run " + report_format::Printable(item));
  }
  const Json* baseline = Find(model, "baseline");
  if (baseline && !baseline->is_null()) {
    out += ", baseline (drive " + report_format::Printable(AsString(*baseline)) + ", its latest)";
  }
  return out;
}

Json RunsJson(const std::vector<Pick>& picks) {
  Json out = Json::array();
  for (const Pick& p : picks) {
    Json row = Json::object();
    row["label"] = p.label;
    row["drive"] = p.drive;
    if (p.run == nullptr) {
      row["run"] = Json();
      row["note"] = p.note;
    } else {
      Json& run = row["run"];
      run["id"] = p.run->id;
      run["phase"] = p.run->phase;
      run["kind"] = p.run->kind;
      run["start"] = p.run->start;
      run["end"] = p.run->end;
      run["source"] = p.run->source;
      run["age"] = p.run->age ? AgeJson(*p.run->age) : Json();
      if (!p.run->age_problem.empty()) run["age_problem"] = p.run->age_problem;
    }
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace drive_report_detail

using namespace drive_report_detail;

std::string RetentionReportFileName(const std::string& study) {
  std::string safe;
  for (char c : study) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    safe += ok ? c : '_';
  }
  return "retention-" + safe + ".html";
}

namespace {

// The drives a report covers: those --drive names, or every drive on
// record but the baseline; an error when --drive, --baseline or --runs
// names what the history does not hold.
Expected<std::vector<std::string>> ReportedDrives(const Inputs& in,
                                                  const DriveReportRequest& request) {
  std::set<std::string> on_record;
  for (const Run& r : in.runs) on_record.insert(r.drive);
  for (const Step& s : in.steps) on_record.insert(s.drive);
  for (const Study& s : in.studies) {
    if (s.record) on_record.insert(s.drive);
  }
  auto known = [&] {
    std::string list;
    for (const std::string& d : on_record) list += (list.empty() ? "" : ", ") + d;
    return list.empty() ? std::string("none: the history holds no runs") : list;
  };
  for (const std::string& d : request.drives) {
    if (!on_record.count(d)) {
      return Error{
          EINVAL, -1,
          "--drive " + d + ": no run of that drive on record (drives on record: " + known() + ")"};
    }
    if (d == request.baseline) {
      return Error{EINVAL, -1, "--drive " + d + " is also the --baseline (expected another drive)"};
    }
  }
  if (!request.baseline.empty() && !on_record.count(request.baseline)) {
    return Error{EINVAL, -1,
                 "--baseline " + request.baseline +
                     ": no run of that drive on record (drives on record: " + known() + ")"};
  }
  std::vector<std::string> drives = request.drives;
  if (drives.empty()) {
    for (const std::string& d : on_record) {
      if (d != request.baseline) drives.push_back(d);
    }
  }
  for (const std::string& item : request.runs) {
    if (item == "first" || item == "latest") continue;
    const bool found = std::any_of(in.runs.begin(), in.runs.end(), [&](const Run& r) {
      return r.id == item && (r.drive == request.baseline ||
                              std::find(drives.begin(), drives.end(), r.drive) != drives.end());
    });
    if (!found) {
      return Error{EINVAL, -1,
                   "--runs " + item +
                       ": no run with that id of the drives reported on (expected first, latest "
                       "or a run id as drivewatch history --format=json shows it)"};
    }
  }
  return drives;
}

}  // namespace

Expected<Json> BuildDriveReport(const std::vector<HistorySource>& histories,
                                const std::vector<StudyFile>& studies,
                                const DriveReportRequest& request) {
  auto read = ReadInputs(histories, studies, request.runs);
  if (!read) return read.error();
  const Inputs& in = *read;
  auto reported = ReportedDrives(in, request);
  if (!reported) return reported.error();
  const std::vector<std::string>& drives = *reported;

  Json model = Json::object();
  model["report"] = "drivewatch report";
  model["version"] = 1;
  model["generated"] = request.generated;
  model["baseline"] = request.baseline.empty() ? Json() : Json(request.baseline);
  Json& runs = model["runs"];
  runs = Json::array();
  for (const std::string& r : request.runs) runs.push_back(r);
  model["sources"] = in.sources;
  Json& problems = model["problems"];
  problems = Json::array();
  for (const std::string& p : in.problems) problems.push_back(p);
  if (in.problems_unlisted > 0) {
    problems.push_back(Format("and %llu more values left out, not listed",
                         static_cast<unsigned long long>(in.problems_unlisted)));
  }
  Json& out = model["drives"];
  out = Json::array();
  for (const std::string& drive : drives) {
    Json d = Json::object();
    d["drive"] = drive;
    auto name = in.drive_names.find(drive);
    d["model"] = name == in.drive_names.end() ? Json() : Json(name->second);
    Selection s{&in, drive, request.baseline, request.runs};
    Json& sections = d["sections"];
    sections = Json::array();
    for (const SectionEntry& entry : DriveSections()) {
      for (Json& section : entry.make(s)) sections.push_back(std::move(section));
    }
    out.push_back(std::move(d));
  }
  return model;
}

}  // namespace drivewatch::aging
