// SPDX-License-Identifier: Apache-2.0
// `drivewatch report`'s retention sections, one per retention study of
// the drive, summarized as `drivewatch retention report` does.
#include <optional>
#include <tuple>

#include "aging/report/drive_report_detail.h"
#include "aging/report/retention_report_model.h"

namespace drivewatch::aging::drive_report_detail {
namespace {

namespace rr = retention_report_detail;

// The reads table: its columns, and its rows to come (ReadRow).
Json ReadsTable() {
  Json table = Json::object();
  table["id"] = "reads";
  table["title"] = "Read latency of the whole region at each read";
  Json& cols = table["columns"];
  cols = Json::array();
  for (auto [key, label, unit] :
       {std::tuple{"date", "date", "text"}, std::tuple{"age_seconds", "age", "days"},
        std::tuple{"equivalent_age_seconds", "equivalent age", "days"},
        std::tuple{"p50_seconds", "p50", "ms"}, std::tuple{"p99_seconds", "p99", "ms"},
        std::tuple{"p99_9_seconds", "p99.9", "ms"}, std::tuple{"max_seconds", "max", "ms"},
        std::tuple{"reads_timed", "n", "count"},
        std::tuple{"over_10ms_ratio", "reads over 10 ms", "percent"},
        std::tuple{"reads_over_100ms", "reads over 100 ms", "count"},
        std::tuple{"bad_blocks", "bad blocks", "count"}}) {
    cols.push_back(Column(key, label, unit));
  }
  table["rows"] = Json::array();
  return table;
}

// One read of the whole region: its date, age and latencies.
Json ReadRow(const std::string& label, const rr::Read& r) {
  Json row = Row(label);
  Json& v = row["values"];
  v["date"] = rr::Utc(r.start, "%Y-%m-%d");
  v["age_seconds"] = Value(rr::Num(*r.json, {"age_seconds"}));
  v["equivalent_age_seconds"] = Value(rr::Num(*r.json, {"equivalent_age_seconds"}));
  v["p50_seconds"] = Value(r.p50);
  v["p99_seconds"] = Value(r.p99);
  v["p99_9_seconds"] = Value(r.p999);
  v["max_seconds"] = Value(r.max);
  const std::optional<double> n =
      r.histogram ? std::optional<double>(static_cast<double>(r.reads)) : std::nullopt;
  v["reads_timed"] = Value(n);
  for (auto [key, q] : {std::pair{"p99_seconds", 0.99}, std::pair{"p99_9_seconds", 0.999}}) {
    if (const std::string mark = TailMark(n, q); !mark.empty()) row["marks"][key] = mark;
  }
  v["over_10ms_ratio"] = Value(r.over10);
  v["reads_over_100ms"] = r.over100 ? Json(r.SlowReads()) : Json();
  v["bad_blocks"] = r.bad_total;
  return row;
}

// The latency tail of a read, for its chart.
Points TailPoints(const LatencyHistogram& histogram) {
  Points points;
  const auto tail = rr::LatencyTail(histogram);
  // Every step of a fine histogram is more than a chart can show.
  const std::size_t every = tail.size() / 160 + 1;
  for (std::size_t i = 0; i < tail.size(); ++i) {
    if (i % every == 0 || i + 1 == tail.size()) points.emplace_back(tail[i].x, tail[i].y);
  }
  return points;
}

// The section of one study of the drive, set beside the baseline drive's
// study when there is one.
Json StudySection(const Study& st, const Study* baseline_study) {
  Json section = Section("retention_" + st.name, "Retention: study " + st.name);
  const rr::Summary sum = rr::Summarize(*st.record, 0);
  std::vector<std::pair<std::string, const rr::Read*>> reads;
  for (const rr::Read& r : sum.reads) reads.emplace_back(r.label, &r);
  std::optional<rr::Summary> theirs;
  if (baseline_study) {
    theirs = rr::Summarize(*baseline_study->record, 0);
    if (const rr::Read* last = theirs->Judged()) {
      reads.emplace_back("baseline drive, " + last->label, last);
    }
  }
  Json table = ReadsTable();
  Json chart = LineChart("retention_" + st.name, "Read latency tail: baseline and each verify",
                         ChartAxis("read latency", "latency", true),
                         ChartAxis("reads slower than this", "share", true));
  for (const auto& [label, r] : reads) {
    table["rows"].push_back(ReadRow(label, *r));
    if (r->histogram && r->histogram->count() != 0) {
      AddLine(chart, label, TailPoints(*r->histogram),
              label == "baseline" || label.rfind("baseline drive", 0) == 0);
    }
  }
  AddMarker(chart, rr::kSlowReadSeconds, "100 ms limit");
  const bool indicative = AnyIndicative(table);
  section["tables"].push_back(std::move(table));
  if (indicative) section["notes"].push_back(std::string(kIndicativeNote));
  // How each distribution was taken: a 4 KiB QD1 sample, or (recorded
  // before it) the verify's own large reads, which are not the same
  // measure as the reference report's.
  section["notes"].push_back(sum.MethodNote());
  if (theirs && !theirs->reads.empty()) {
    section["notes"].push_back("baseline drive: " + theirs->MethodNote());
  }
  if (!Items(chart["series"]).empty()) section["charts"].push_back(std::move(chart));
  Json link = Json::object();
  link["label"] = "the study's own report";
  link["href"] = RetentionReportFileName(st.name);
  link["command"] = "drivewatch retention report " + st.name + " --format=html";
  section["links"] = Json::array();
  section["links"].push_back(std::move(link));
  section["expectation"] =
      "Data written before months of storage reads back intact and as fast as right after the "
      "write. Rule: every block intact and no read over 100 ms (the reference report's limit).";
  const std::string status = sum.verdict == "PASS"   ? "pass"
                             : sum.verdict == "FAIL" ? "fail"
                                                     : "info";
  // The study's own verdict line, without its leading "PASS: ".
  std::string line = sum.line;
  if (line.rfind(sum.verdict + ": ", 0) == 0) line = line.substr(sum.verdict.size() + 2);
  section["verdict"] = Verdict(status, line);
  return section;
}

}  // namespace

std::vector<Json> RetentionSections(const Selection& s) {
  std::vector<Json> out;
  const Study* baseline_study = nullptr;
  for (const Study& st : s.inputs->studies) {
    if (st.record && !s.baseline.empty() && st.drive == s.baseline) baseline_study = &st;
  }
  for (const Study& st : s.inputs->studies) {
    if (st.record && st.drive == s.drive) out.push_back(StudySection(st, baseline_study));
  }
  if (out.empty()) {
    Json section = Section("retention", "Retention");
    section["expectation"] =
        "Data written before months of storage reads back intact and as fast as right after the "
        "write. Rule: every block intact and no read over 100 ms.";
    section["notes"].push_back("no retention study of this drive (docs/retention.md)");
    out.push_back(std::move(section));
  }
  return out;
}

}  // namespace drivewatch::aging::drive_report_detail
