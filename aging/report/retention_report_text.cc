// SPDX-License-Identifier: Apache-2.0
// The text rendering of a retention study report.
#include "aging/report/retention_report_model.h"

#include <algorithm>

namespace drivewatch::aging::retention_report_detail {

std::string RenderText(const Json& study, const Summary& s, double now) {
  std::string out;
  out += "Retention study " + Str(study, {"study"}) + " (" + Str(study, {"id"}) + ")\n";
  out += s.line + "\n\n";

  out += "Drive\n";
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

  out += "\nTime";
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

  if (const Json* events = study.Find("events"); events && !events->items().empty()) {
    out += "\nEvents\n";
    std::vector<std::vector<std::string>> rows;
    for (const Json& e : events->items()) {
      rows.push_back({Utc(Num(e, {"time"})), Str(e, {"kind"}), Str(e, {"detail"})});
    }
    out += Table(rows, "  ", 99);
  }

  if (s.reads.empty()) {
    out += "\nNo read-back yet.\n";
    return out;
  }

  out += "\nReads\n";
  std::vector<std::vector<std::string>> rows = {
      {"read", "date", "age", "blocks", "ok", "unreadable", "wrong", "misplaced",
       "stale", "outcome"}};
  for (const Read& r : s.reads) {
    rows.push_back({r.label, Utc(r.start), Duration(Num(*r.json, {"age_seconds"})),
                    Count(r.blocks), r.ok ? Count(*r.ok) : "-", Count(r.bad[0]),
                    Count(r.bad[1]), Count(r.bad[2]), Count(r.bad[3]),
                    r.outcome.empty() ? "-" : r.outcome});
  }
  out += Table(rows, "  ");

  out += "\nRead latency";
  if (s.has_baseline) out += " (change against the baseline)";
  out += "\n";
  rows = {{""}};
  for (const Read& r : s.reads) rows[0].push_back(r.label);
  const Read* base = s.Baseline();
  auto latency_row = [&](std::string name, std::optional<double> Read::*field) {
    std::vector<std::string> row = {std::move(name)};
    for (const Read& r : s.reads) {
      std::string cell = Latency(r.*field);
      if (base && &r != base && r.comparable) {
        const std::string d = Delta(r.*field, base->*field);
        if (!d.empty()) cell += " (" + d + ")";
      }
      row.push_back(cell);
    }
    rows.push_back(row);
  };
  auto ratio_row = [&](std::string name, std::optional<double> Read::*field) {
    std::vector<std::string> row = {std::move(name)};
    for (const Read& r : s.reads) {
      std::string cell = Percent(r.*field);
      if (base && &r != base && r.comparable) {
        const std::string d = DeltaPoints(r.*field, base->*field);
        if (!d.empty()) cell += " (" + d + ")";
      }
      row.push_back(cell);
    }
    rows.push_back(row);
  };
  latency_row("p50", &Read::p50);
  latency_row("p99", &Read::p99);
  latency_row("p99.9", &Read::p999);
  latency_row("max", &Read::max);
  {
    std::vector<std::string> row = {"n (reads timed)"};
    for (const Read& r : s.reads) row.push_back(r.histogram ? Count(r.reads) : "-");
    rows.push_back(row);
  }
  ratio_row("> 10 ms", &Read::over10);
  ratio_row("> 100 ms", &Read::over100);
  out += Table(rows, "  ");
  out += "  " + s.MethodNote() + "\n";

  const Read* judged = s.Judged();
  out += "\nBad blocks (" + judged->label + ")\n";
  if (judged->bad_total == 0) {
    out += "  none\n";
  } else {
    rows.clear();
    for (std::size_t c = 0; c < kClasses.size(); ++c) {
      rows.push_back({std::string(kClassLabels[c]), Count(judged->bad[c])});
    }
    out += Table(rows, "  ");
    if (const std::vector<RangeRow> ranges = RangeRows(*judged); !ranges.empty()) {
      rows.clear();
      for (const RangeRow& range : ranges) rows.push_back({range.lbas, range.klass, range.detail});
      out += Table(rows, "  ", 99);
      if (judged->json->Find("ranges_truncated") &&
          judged->json->Find("ranges_truncated")->AsBool()) {
        out += "  (more ranges not recorded)\n";
      }
    }
  }

  out += "\nSMART since the write\n";
  rows = {{"", "at write"}};
  for (const Read& r : s.reads) rows[0].push_back(r.label);
  for (std::size_t f = 0; f < kSmartFields.size(); ++f) {
    std::vector<std::string> row = {std::string(kSmartLabels[f]),
                                    Str(study, {"smart_at_write", kSmartFields[f]})};
    for (const Read& r : s.reads) row.push_back(Signed(SmartDelta(r, kSmartFields[f])));
    rows.push_back(row);
  }
  out += Table(rows, "  ");
  return out;
}

}  // namespace drivewatch::aging::retention_report_detail
