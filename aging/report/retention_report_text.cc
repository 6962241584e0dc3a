// SPDX-License-Identifier: Apache-2.0
// The text rendering of a retention study report.
#include "aging/report/retention_report_model.h"

#include <algorithm>

namespace drivewatch::aging::retention_report_detail {
namespace {

using Rows = std::vector<std::vector<std::string>>;

std::string DriveAndStudy(const Json& study, double now) {
  std::string out = "Drive\n";
  out += Table({{"model", Str(study, {"model"})},
                {"serial", Str(study, {"serial"})},
                {"firmware", Str(study, {"firmware"})},
                {"device", Str(study, {"device"}) + " (namespace " + Str(study, {"nsid"}) + ")"},
                {"target", Str(study, {"target"})}},
               "  ", 99);
  out += "\nStudy\n";
  std::string state = Str(study, {"state"});
  if (Str(study, {"reason"}) != "-") state += " (" + Str(study, {"reason"}) + ")";
  out += Table({{"state", state},
                {"region", RegionText(study)},
                {"pattern", PatternText(study)},
                {"written", WrittenText(study, now)}},
               "  ", 99);
  return out;
}

std::string Time(const Summary& s) {
  std::string out = "\nTime";
  if (s.estimated) {
    out += " (estimated now, no verify yet)";
  } else if (const Read* last = s.LastVerify()) {
    out += " (as of " + last->label + ", " + Utc(last->start) + ")";
  }
  out += "\n";
  out += Table({{"wall age", Duration(s.wall)},
                {"powered on", Duration(s.powered_on)},
                {"powered off", PoweredOffText(s)},
                {"equivalent age", EquivalentText(s)}},
               "  ", 99);
  return out;
}

std::string Events(const Json& study) {
  const Json* events = Find(study, "events");
  if (!events || Items(*events).empty()) return "";
  Rows rows;
  for (const Json& e : Items(*events)) {
    rows.push_back({Utc(Num(e, {"time"})), Str(e, {"kind"}), Str(e, {"detail"})});
  }
  return "\nEvents\n" + Table(rows, "  ", 99);
}

std::string Reads(const Summary& s) {
  Rows rows = {{"read", "date", "age", "blocks", "ok", "unreadable", "wrong", "misplaced",
                "stale", "outcome"}};
  for (const Read& r : s.reads) {
    rows.push_back({r.label, Utc(r.start), Duration(Num(*r.json, {"age_seconds"})),
                    Count(r.blocks), r.ok ? Count(*r.ok) : "-", Count(r.bad[0]),
                    Count(r.bad[1]), Count(r.bad[2]), Count(r.bad[3]),
                    r.outcome.empty() ? "-" : r.outcome});
  }
  return "\nReads\n" + Table(rows, "  ");
}

// A row of the latency table: each read's value of `field` as `show`
// writes it, with its change against the baseline as `change` writes it.
std::vector<std::string> LatencyRow(const Summary& s, std::string name,
                                    std::optional<double> Read::*field,
                                    std::string (*show)(std::optional<double>),
                                    std::string (*change)(std::optional<double>,
                                                          std::optional<double>)) {
  const Read* base = s.Baseline();
  std::vector<std::string> row = {std::move(name)};
  for (const Read& r : s.reads) {
    std::string cell = show(r.*field);
    if (base && &r != base && r.comparable) {
      const std::string d = change(r.*field, base->*field);
      if (!d.empty()) cell += " (" + d + ")";
    }
    row.push_back(cell);
  }
  return row;
}

std::string ReadLatency(const Summary& s) {
  std::string out = "\nRead latency";
  if (s.has_baseline) out += " (change against the baseline)";
  out += "\n";
  Rows rows = {{""}};
  for (const Read& r : s.reads) rows[0].push_back(r.label);
  rows.push_back(LatencyRow(s, "p50", &Read::p50, Latency, Delta));
  rows.push_back(LatencyRow(s, "p99", &Read::p99, Latency, Delta));
  rows.push_back(LatencyRow(s, "p99.9", &Read::p999, Latency, Delta));
  rows.push_back(LatencyRow(s, "max", &Read::max, Latency, Delta));
  std::vector<std::string> timed = {"n (reads timed)"};
  for (const Read& r : s.reads) timed.push_back(r.histogram ? Count(r.reads) : "-");
  rows.push_back(timed);
  rows.push_back(LatencyRow(s, "> 10 ms", &Read::over10, Percent, DeltaPoints));
  rows.push_back(LatencyRow(s, "> 100 ms", &Read::over100, Percent, DeltaPoints));
  out += Table(rows, "  ");
  out += "  " + s.MethodNote() + "\n";
  return out;
}

std::string BadBlocks(const Summary& s) {
  const Read* judged = s.Judged();
  std::string out = "\nBad blocks (" + judged->label + ")\n";
  if (judged->bad_total == 0) return out + "  none\n";
  Rows rows;
  for (std::size_t c = 0; c < kClasses.size(); ++c) {
    rows.push_back({std::string(kClassLabels[c]), Count(judged->bad[c])});
  }
  out += Table(rows, "  ");
  if (const std::vector<RangeRow> ranges = RangeRows(*judged); !ranges.empty()) {
    rows.clear();
    for (const RangeRow& range : ranges) rows.push_back({range.lbas, range.klass, range.detail});
    out += Table(rows, "  ", 99);
    if (Find(*judged->json, "ranges_truncated") &&
        AsBool(*Find(*judged->json, "ranges_truncated"))) {
      out += "  (more ranges not recorded)\n";
    }
  }
  return out;
}

std::string Smart(const Json& study, const Summary& s) {
  Rows rows = {{"", "at write"}};
  for (const Read& r : s.reads) rows[0].push_back(r.label);
  for (std::size_t f = 0; f < kSmartFields.size(); ++f) {
    std::vector<std::string> row = {std::string(kSmartLabels[f]),
                                    Str(study, {"smart_at_write", kSmartFields[f]})};
    for (const Read& r : s.reads) row.push_back(Signed(SmartDelta(r, kSmartFields[f])));
    rows.push_back(row);
  }
  return "\nSMART since the write\n" + Table(rows, "  ");
}

}  // namespace

std::string RenderText(const Json& study, const Summary& s, double now) {
  std::string out;
  out += "Retention study " + Str(study, {"study"}) + " (" + Str(study, {"id"}) + ")\n";
  out += s.line + "\n\n";
  out += DriveAndStudy(study, now);
  out += Time(s);
  out += Events(study);
  if (s.reads.empty()) {
    out += "\nNo read-back yet.\n";
    return out;
  }
  out += Reads(s);
  out += ReadLatency(s);
  out += BadBlocks(s);
  out += Smart(study, s);
  return out;
}

}  // namespace drivewatch::aging::retention_report_detail
