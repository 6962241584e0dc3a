// SPDX-License-Identifier: Apache-2.0
// `drivewatch report`'s perf tables: perf runs' cells (drive_report_cells.cc)
// laid out as sequential and random performance at each fill level, QD1
// latency, low-load latency and mixed loads.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "aging/report/drive_report_detail.h"
#include "aging/report/report_format.h"
#include "config/kinds/perf.h"

namespace drivewatch::aging::drive_report_detail {
namespace {

using report_format::Format;

constexpr double kDetrimentalSeconds = 0.3;  // the reference report's low-load line
constexpr double kKeptRatio = 0.8;           // aged against fresh, throughput
constexpr double kLatencyGrowth = 2;         // aged against fresh, QD1 p99.9

// The cell's headline: bytes/s for sequential, IOPS for random.
std::string HeadlineKey(const Run& run, const Cell& c) {
  if (c.access == "sequential") return c.Key("bytes_per_second");
  if (c.access == "random") return c.Key("iops");
  return run.Result(c.Key("bytes_per_second")) ? c.Key("bytes_per_second") : c.Key("iops");
}

bool Throughput(const Cell& c) {
  return !c.paced() && !c.mix() &&
         (c.operation == "read" || c.operation == "write" || c.operation == "trim");
}
bool Qd1(const Cell& c) {
  return !c.paced() && !c.mix() && c.access != "sequential" && c.queue_depth &&
         *c.queue_depth == 1 && (!c.jobs || *c.jobs <= 1) &&
         (c.operation == "read" || c.operation == "write");
}
bool LowLoad(const Cell& c) { return c.paced() && !c.mix() && c.operation == "read"; }
bool Mixed(const Cell& c) { return c.mix(); }

ColumnSpec LatencyColumn(const Cell& c, std::string_view op, std::string_view q, std::string label,
                         bool optional) {
  const std::string key = c.name + "_" + std::string(op) + "_" + std::string(q) + "_seconds";
  const double quantile = q == "p50" ? 0.5 : q == "p99" ? 0.99 : 0.999;
  return {key,
          std::move(label),
          "ms",
          [c, op = std::string(op), q = std::string(q)](const Run& r) {
            return Value(CellLatency(r, c, op, q));
          },
          [c, op = std::string(op), quantile](const Run& r) {
            return TailMark(CellCount(r, c, op), quantile);
          },
          optional};
}

// The sample count beside a cell's percentiles ("n"); left out when no
// row has one (runs recorded before the counts were).
ColumnSpec CountColumn(const Cell& c, std::string_view op, std::string label) {
  return {c.name + "_" + std::string(op) + "_ios", std::move(label), "count",
          [c, op = std::string(op)](const Run& r) { return Value(CellCount(r, c, op)); }, nullptr,
          true};
}

void NoteIndicative(Json& section, const Json& table) {
  if (AnyIndicative(table)) section["notes"].push_back(std::string(kIndicativeNote));
}

std::string Ms(double seconds) { return ShowValue(Json(seconds), "ms") + " ms"; }

// "latencies over 300 ms are detrimental", over every latency value of the
// drive's rows.
Json DetrimentalVerdict(const Json& table) {
  double worst = -1;
  std::string where;
  std::vector<std::string> over;
  for (const Json& row : Items(*Find(table, "rows"))) {
    const std::string label = AsString(*Find(row, "label"));
    if (label == "baseline") continue;
    for (const Json& col : Items(*Find(table, "columns"))) {
      const Json* v = Find(*Find(row, "values"), AsString(*Find(col, "key")));
      if (v == nullptr || v->is_null() || AsString(*Find(col, "unit")) != "ms") continue;
      const std::string what = AsString(*Find(col, "label")) + " (" + label + ")";
      if (AsDouble(*v) > kDetrimentalSeconds) over.push_back(what + " " + Ms(AsDouble(*v)));
      if (AsDouble(*v) > worst) {
        worst = AsDouble(*v);
        where = what;
      }
    }
  }
  if (worst < 0) return Verdict("not_measured", "not measured");
  if (!over.empty()) {
    std::string list;
    for (const std::string& o : over) list += (list.empty() ? "" : "; ") + o;
    return Verdict("fail", "detrimental: over 300 ms: " + list);
  }
  return Verdict("pass", "no latency over 300 ms (the worst: " + where + " " + Ms(worst) + ")");
}

bool AnyMark(const Json& table, std::string_view mark) {
  for (const Json& row : Items(*Find(table, "rows"))) {
    for (const auto& [key, m] : Members(*Find(row, "marks"))) {
      if (AsString(m) == mark) return true;
    }
  }
  return false;
}

}  // namespace

namespace {

// Perf runs lay out in one table when they ran the same cells of a kind:
// a run of the default cells and one of the Phoronix preset at the same
// fill level make two tables, not one of mostly "not measured".
struct Group {
  int level = -1;                  // throughput tables only
  std::vector<std::string> names;  // the cells, sorted
  std::vector<Cell> cells;         // as the first run lists them
};

bool HasValue(const Run& r, const Cell& c, bool (*which)(const Cell&)) {
  if (which == Throughput) return r.Result(HeadlineKey(r, c)).has_value();
  if (r.Result(c.Key("iops"))) return true;
  for (const char* op : {"read", "write"}) {
    for (const char* q : {"p50", "p99", "p99_9"}) {
      if (CellLatency(r, c, op, q)) return true;
    }
  }
  return false;
}

// The cells that make a run's group. A QD1 random cell does not: runs of
// the perf phase recorded before the perf matrix kept only latencies for
// theirs, later ones IOPS too, and both are the same table.
std::vector<std::string> Signature(const Run& r, bool (*which)(const Cell&)) {
  std::vector<std::string> out;
  if (r.kind != config::PerfParams::kName) return out;
  for (const Cell& c : r.cells) {
    if (which == Throughput && Qd1(c)) continue;
    if (which(c) && HasValue(r, c, which)) out.push_back(c.name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Group> GroupsOf(const Selection& s, bool (*which)(const Cell&), bool by_level) {
  std::vector<Group> out;
  for (const Run& r : s.inputs->runs) {
    if ((r.drive != s.drive && r.drive != s.baseline) || !r.completed()) continue;
    const std::vector<std::string> names = Signature(r, which);
    if (names.empty()) continue;
    const int level = by_level ? FillLevel(r) : -1;
    if (std::none_of(out.begin(), out.end(),
                     [&](const Group& g) { return g.level == level && g.names == names; })) {
      out.push_back(Group{level, names, {}});
    }
  }
  // Its columns: the cells of every run in it, in the order they list them.
  for (Group& g : out) {
    for (const Run& r : s.inputs->runs) {
      if ((r.drive != s.drive && r.drive != s.baseline) || !r.completed() ||
          (by_level && FillLevel(r) != g.level) || Signature(r, which) != g.names) {
        continue;
      }
      for (const Cell& c : r.cells) {
        const bool seen = std::any_of(g.cells.begin(), g.cells.end(),
                                      [&](const Cell& o) { return o.name == c.name; });
        if (!seen && which(c) && HasValue(r, c, which)) g.cells.push_back(c);
      }
    }
  }
  return out;
}

// The Phoronix storage cells (NOTES.md): 4 KiB random read and write at
// QD1 and QD32, 2 MiB sequential read at QD1, 8 and 32, write at QD8.
bool PhoronixCell(const Cell& c) {
  if (!c.block_size || !c.queue_depth || (c.jobs && *c.jobs > 1) || c.paced()) return false;
  const double bs = *c.block_size, qd = *c.queue_depth;
  if (c.access == "random" && bs == 4096 && (c.operation == "read" || c.operation == "write")) {
    return qd == 1 || qd == 32;
  }
  if (c.access == "sequential" && bs == 2097152) {
    return c.operation == "read" ? (qd == 1 || qd == 8 || qd == 32)
                                 : c.operation == "write" && qd == 8;
  }
  return false;
}

// A group's title after the kind's, and its section id's suffix, when a
// table of the kind has company: the Phoronix preset, or its cells' names.
std::pair<std::string, std::string> GroupName(const Group& g, std::size_t company) {
  const bool fixed = std::all_of(g.names.begin(), g.names.end(), IsLegacyCell);
  if (company <= 1 || fixed) return {"", ""};
  const bool phoronix = std::all_of(g.cells.begin(), g.cells.end(), PhoronixCell) &&
                        std::any_of(g.cells.begin(), g.cells.end(), [](const Cell& c) {
                          return *c.block_size == 2097152 || *c.queue_depth == 1;
                        });
  if (phoronix) return {" (Phoronix cells)", "_phoronix"};
  std::string names;
  for (std::size_t i = 0; i < g.cells.size() && i < 4; ++i) {
    names += (i ? ", " : "") + g.cells[i].name;
  }
  if (g.cells.size() > 4) names += ", \xe2\x80\xa6";
  return {" (cells " + names + ")", "_" + g.cells.front().name};
}

std::function<bool(const Run&)> InGroup(const Group& g, bool (*which)(const Cell&), bool by_level) {
  return [&g, which, by_level](const Run& r) {
    return r.kind == config::PerfParams::kName && (!by_level || FillLevel(r) == g.level) &&
           Signature(r, which) == g.names;
  };
}

// Aged against fresh: a cell more than 20 % below fresh, by more than twice
// the combined standard error of the two means, has lost speed with age.
// `measures`: each cell's column and the key of its standard error.
void AddAgedVerdict(Json& section, const Pick& fresh, const Pick& aged,
                    const std::vector<std::pair<ColumnSpec, std::string>>& measures) {
  std::vector<std::string> dropped, within_noise, unknown_noise;
  double lowest = 2;
  std::string lowest_at;
  for (const auto& [c, se_key] : measures) {
    const Json f = c.value(*fresh.run), a = c.value(*aged.run);
    if (f.is_null() || a.is_null() || AsDouble(f) <= 0) continue;
    const double ratio = AsDouble(a) / AsDouble(f);
    if (ratio < lowest) {
      lowest = ratio;
      lowest_at = c.label;
    }
    if (ratio >= kKeptRatio) continue;
    const std::string what = c.label + Format(" %.0f%%", ratio * 100);
    const auto se_f = fresh.run->Result(se_key), se_a = aged.run->Result(se_key);
    if (!se_f || !se_a) {
      dropped.push_back(what);
      unknown_noise.push_back(c.label);
      continue;
    }
    // The difference of two means against twice its standard error.
    const double noise = 2 * std::sqrt(*se_f * *se_f + *se_a * *se_a);
    if (AsDouble(f) - AsDouble(a) > noise) {
      dropped.push_back(what);
    } else {
      within_noise.push_back(what + Format(" (noise \xc2\xb1%.0f%%)", noise / AsDouble(f) * 100));
    }
  }
  if (lowest_at.empty()) {
    section["verdict"] = Verdict("info", "fresh and aged share no cell to compare");
  } else if (!dropped.empty()) {
    section["verdict"] = Verdict(
        "fail", std::string("aged fell below 80 % of fresh") +
                    (unknown_noise.empty() ? ", beyond the runs' noise" : "") + ": " +
                    Join(dropped, ", "));
  } else if (!within_noise.empty()) {
    section["verdict"] = Verdict(
        "pass", "no loss beyond the runs' noise: below 80 % of fresh but within twice the "
                "combined standard error: " + Join(within_noise, ", "));
  } else {
    section["verdict"] = Verdict(
        "pass", "aged keeps 80 % or more of fresh in every cell (the lowest: " + lowest_at +
                    Format(" at %.0f%%)", lowest * 100));
  }
  if (!unknown_noise.empty()) {
    section["notes"].push_back("measured once (no standard error on record), so a drop there may "
                          "be noise: " + Join(unknown_noise, ", "));
  }
}

// A bar chart of the sequential cells and one of the random ones, a bar a row.
void AddThroughputCharts(Json& section, const std::string& id, const std::vector<Pick>& picks,
                         const std::vector<Cell>& cells, const std::vector<ColumnSpec>& columns,
                         const std::vector<std::string>& seq_groups,
                         const std::vector<std::string>& rand_groups) {
  for (const auto& [seq, groups] : {std::pair{true, seq_groups}, std::pair{false, rand_groups}}) {
    if (groups.empty()) continue;
    Json chart = BarChart(id + (seq ? "_sequential" : "_random"),
                          seq ? "Sequential throughput" : "Random IOPS", groups,
                          ChartAxis(seq ? "throughput" : "IOPS", seq ? "MB/s" : "K IOPS"));
    for (const Pick& p : picks) {
      std::vector<std::optional<double>> values;
      for (std::size_t i = 0; i < cells.size(); ++i) {
        if ((cells[i].access == "sequential") != seq) continue;
        const Json v = p.run ? columns[i].value(*p.run) : Json();
        values.push_back(v.is_null() ? std::nullopt
                                     : std::optional<double>(AsDouble(v) / (seq ? 1e6 : 1e3)));
      }
      AddBars(chart, p.label, values);
    }
    section["charts"].push_back(std::move(chart));
  }
}

Json ThroughputSection(const Selection& s, const Group& g, std::size_t company) {
  const int level = g.level;
  const auto [suffix, id_suffix] = GroupName(g, company);
  const std::string id =
      (level < 0 ? std::string("perf_fill_unknown") : Format("perf_fill_%d", level)) + id_suffix;
  Json section = Section(
      id, (level < 0 ? std::string("Sequential and random performance (fill level not on record)")
                     : Format("Sequential and random performance at %d %% fill", level)) +
              suffix);
  const auto picks = PickRuns(s, InGroup(g, Throughput, true));
  section["runs"] = RunsJson(picks);
  // Sequential first, then random, each in the order the runs list them.
  std::vector<Cell> cells = g.cells;
  std::stable_partition(cells.begin(), cells.end(),
                        [](const Cell& c) { return c.access == "sequential"; });
  std::vector<ColumnSpec> columns;
  // Each cell's measure and the key of its standard error.
  std::vector<std::pair<ColumnSpec, std::string>> measures;
  std::vector<std::string> seq_groups, rand_groups;
  for (const Cell& c : cells) {
    const bool seq = c.access == "sequential";
    (seq ? seq_groups : rand_groups).push_back(c.Label());
    const std::string key = c.Key(seq ? "bytes_per_second" : "iops");
    const std::string unit = seq ? "bytes_per_second" : "iops";
    ColumnSpec measure{key, c.Label(), unit,
                       [key](const Run& r) { return Value(r.Result(key)); },
                       [c](const Run& r) {
                         const auto steady = r.Result(c.Key("steady_state_ratio"));
                         return steady && *steady == 0 ? std::string("not_steady") : "";
                       }};
    // Its spread over the runs and how many there were, shown with it
    // (runs recorded before repeated runs have neither).
    measure.spread_key = key + "_se";
    measure.count_key = c.Key("runs");
    columns.push_back(measure);
    measures.emplace_back(measure, key + "_se");
  }
  if (columns.empty()) {
    columns.push_back({"bytes_per_second", "sequential and random cells", "bytes_per_second",
                       [](const Run&) { return Json(); }, nullptr});
  }
  Json table = RunTable("throughput", "Throughput", picks, columns);
  section["expectation"] =
      "An aged drive keeps its fresh performance. Rule: a cell more than 20 % below fresh, by "
      "more than twice the combined standard error of the two means (the runs' noise), has "
      "lost speed with age. MB/s is 10^6 bytes per second, as OpenBenchmarking prints it, so "
      "the Phoronix cells can be laid beside its tables.";
  const Pick* fresh = Labelled(picks, "fresh");
  const Pick* aged = Labelled(picks, "aged");
  if (!AnyValue(table)) {
    section["notes"].push_back(level < 0 ? std::string("no perf run without a fill level on record")
                                    : Format("no perf run at %d %% fill on record: run fill "
                                             "with fill_percent = %d, then perf",
                                             level, level));
  } else if (fresh && aged) {
    AddAgedVerdict(section, *fresh, *aged, measures);
  } else {
    section["verdict"] = Verdict("info", "one run on record: nothing to compare with yet");
  }
  if (AnyMark(table, "not_steady")) {
    section["notes"].push_back(
        "\xe2\x80\xa0 a cell that did not reach steady state (SNIA PTS) "
        "within its rounds: its value is the last round's");
  }
  if (AnyValue(table)) {
    AddThroughputCharts(section, id, picks, cells, columns, seq_groups, rand_groups);
  }
  section["tables"].push_back(std::move(table));
  return section;
}

// A latency section of group `g` (none: not measured) and its rows.
std::pair<Json, std::vector<Pick>> GroupSection(const Selection& s, const Group* g,
                                                std::size_t company, bool (*which)(const Cell&),
                                                const std::string& id, const std::string& title) {
  const auto [suffix, id_suffix] =
      g ? GroupName(*g, company) : std::pair<std::string, std::string>{};
  // A row never mixes fill levels: one section per level, as the
  // throughput tables (the reference report's 10 % and 50 % columns).
  std::string level_id, level_title;
  if (g) {
    level_id = g->level < 0 ? std::string("_fill_unknown") : Format("_fill_%d", g->level);
    level_title = g->level < 0 ? std::string(" (fill level not on record)")
                               : Format(" at %d %% fill", g->level);
  }
  Json section = Section(id + level_id + id_suffix, title + level_title + suffix);
  std::vector<Pick> picks = PickRuns(
      s, g ? InGroup(*g, which, true) : [](const Run&) { return false; });
  section["runs"] = RunsJson(picks);
  return {std::move(section), std::move(picks)};
}

Json Qd1Table(const Selection& s, const Group* g, std::size_t company) {
  auto [section, picks] = GroupSection(s, g, company, Qd1, "qd1_latency", "QD1 latency");
  std::vector<ColumnSpec> columns;
  for (const Cell& c : g ? g->cells : std::vector<Cell>{}) {
    columns.push_back(LatencyColumn(c, c.operation, "p50", c.Label() + " p50", false));
    columns.push_back(LatencyColumn(c, c.operation, "p99", c.Label() + " p99", true));
    columns.push_back(LatencyColumn(c, c.operation, "p99_9", c.Label() + " p99.9", false));
    columns.push_back(CountColumn(c, c.operation, c.Label() + " n"));
  }
  if (columns.empty()) {
    columns.push_back({"qd1_read_p99_9_seconds", "QD1 random read p99.9", "ms",
                       [](const Run&) { return Json(); }, nullptr});
  }
  Json table = RunTable("latency", "Latency at queue depth 1", picks, columns);
  section["expectation"] =
      "At queue depth 1 each I/O waits for the media alone: tens of µs for a read from TLC, more "
      "from QLC. Rule: the tail (p99.9) of the aged drive stays within 2× of fresh.";
  const Pick* fresh = Labelled(picks, "fresh");
  const Pick* aged = Labelled(picks, "aged");
  if (!AnyValue(table)) {
    section["notes"].push_back("no perf run with QD1 cells on record");
  } else if (fresh && aged) {
    std::vector<std::string> grown;
    for (const ColumnSpec& c : columns) {
      if (c.key.size() < 13 || c.key.compare(c.key.size() - 13, 13, "p99_9_seconds") != 0) continue;
      const Json f = c.value(*fresh->run), a = c.value(*aged->run);
      if (f.is_null() || a.is_null() || AsDouble(f) <= 0) continue;
      if (AsDouble(a) > kLatencyGrowth * AsDouble(f)) {
        grown.push_back(c.label + " " + Ms(AsDouble(f)) + " \xe2\x86\x92 " + Ms(AsDouble(a)));
      }
    }
    if (grown.empty()) {
      section["verdict"] = Verdict("pass", "aged p99.9 within 2\xc3\x97 of fresh in every cell");
    } else {
      std::string list;
      for (const std::string& x : grown) list += (list.empty() ? "" : "; ") + x;
      section["verdict"] = Verdict("fail", "aged p99.9 over 2\xc3\x97 fresh: " + list);
    }
  } else {
    section["verdict"] = Verdict("info", "one run on record: nothing to compare with yet");
  }
  NoteIndicative(section, table);
  section["tables"].push_back(std::move(table));
  return section;
}

Json LowLoadTable(const Selection& s, const Group* g, std::size_t company) {
  auto [section, picks] =
      GroupSection(s, g, company, LowLoad, "low_load_latency", "Low-load latency");
  std::vector<Cell> cells = g ? g->cells : std::vector<Cell>{};
  std::stable_sort(cells.begin(), cells.end(), [](const Cell& a, const Cell& b) {
    return a.rate_iops.value_or(0) < b.rate_iops.value_or(0);
  });
  std::vector<ColumnSpec> columns;
  for (const Cell& c : cells) {
    const std::string at = Format("%s IOPS", report_format::Grouped(*c.rate_iops, 0).c_str());
    columns.push_back(LatencyColumn(c, "read", "p50", at + " p50", true));
    columns.push_back(LatencyColumn(c, "read", "p99", at + " p99", true));
    columns.push_back(LatencyColumn(c, "read", "p99_9", at + " p99.9", false));
    columns.push_back(CountColumn(c, "read", at + " n"));
  }
  for (const char* rate : {"10", "100"}) {
    if (std::none_of(cells.begin(), cells.end(),
                     [&](const Cell& c) { return Format("%.0f", *c.rate_iops) == rate; })) {
      columns.push_back({std::string("read_at_") + rate + "_iops_p99_9_seconds",
                         std::string(rate) + " IOPS p99.9", "ms", [](const Run&) { return Json(); },
                         nullptr});
    }
  }
  Json table = RunTable("latency", "Random reads at a low, fixed rate: response latency, from "
                        "when each read was due", picks, columns);
  // The same reads timed from their submission, as fio times them: what to
  // lay beside fio or a reference report. A read that waited for a slow
  // one before it is late in the table above and not in this one. Runs
  // recorded before service latency was kept have none.
  std::vector<ColumnSpec> service;
  for (const Cell& c : cells) {
    const std::string at = Format("%s IOPS", report_format::Grouped(*c.rate_iops, 0).c_str());
    for (const auto& [q, label, tail] :
         {std::tuple<const char*, const char*, double>{"p50", " p50", 0.5},
          {"p99", " p99", 0.99}, {"p99_9", " p99.9", 0.999}}) {
      const std::string key = c.name + "_read_service_" + q + "_seconds";
      const double quantile = tail;  // a structured binding is not captured before clang 16
      service.push_back({key, at + " service" + label, "ms",
                         [key](const Run& r) { return Value(r.Result(key)); },
                         [c, quantile](const Run& r) {
                           return TailMark(CellCount(r, c, "read"), quantile);
                         },
                         true});
    }
  }
  Json service_table = RunTable("service_latency",
                                "The same reads: service latency, from submission (as fio times)",
                                picks, service);
  section["expectation"] =
      "At a low rate the drive idles between reads, so a read may wait for it to leave a low-"
      "power state. Rule: latencies over 300 ms are detrimental (the reference report's line), "
      "judged on response latency, which holds any wait a stall imposed on the reads behind it.";
  section["verdict"] = DetrimentalVerdict(table);
  if (!AnyValue(table)) {
    section["notes"].push_back(
        "drivewatch keeps no history of the read latency probe (its windows live in memory and "
        "in Prometheus); low-load latency comes from perf cells of random reads at rate_iops = 10 "
        "and 100 (docs/report.md)");
  }
  NoteIndicative(section, table);
  section["tables"].push_back(std::move(table));
  if (AnyValue(service_table)) section["tables"].push_back(std::move(service_table));
  return section;
}

Json MixedTable(const Selection& s, const Group* g, std::size_t company) {
  auto [section, picks] = GroupSection(s, g, company, Mixed, "mixed", "Mixed loads");
  std::vector<ColumnSpec> columns;
  for (const Cell& c : g ? g->cells : std::vector<Cell>{}) {
    columns.push_back({c.Key("iops"), c.Label(), "iops",
                       [c](const Run& r) { return Value(r.Result(c.Key("iops"))); }, nullptr});
    columns.push_back(LatencyColumn(c, "read", "p99_9", c.Label() + " read p99.9", false));
    columns.push_back(LatencyColumn(c, "write", "p99_9", c.Label() + " write p99.9", false));
    columns.push_back(CountColumn(c, "read", c.Label() + " reads n"));
    columns.push_back(CountColumn(c, "write", c.Label() + " writes n"));
  }
  if (columns.empty()) {
    columns.push_back(
        {"mixed_iops", "mixed read/write", "iops", [](const Run&) { return Json(); }, nullptr});
  }
  Json table = RunTable("mixed", "Random read/write mixes", picks, columns);
  section["expectation"] =
      "A read/write mix at a fixed rate keeps up with the rate, and its reads do not wait behind "
      "the writes. Rule: latencies over 300 ms are detrimental.";
  section["verdict"] = DetrimentalVerdict(table);
  if (!AnyValue(table)) section["notes"].push_back("no perf run with mixed cells on record");
  NoteIndicative(section, table);
  section["tables"].push_back(std::move(table));
  return section;
}

}  // namespace

std::vector<Json> PerfSections(const Selection& s) {
  std::vector<Group> groups = GroupsOf(s, Throughput, true);
  // The reference report's two fill levels always have a section; runs
  // whose fill level is not on record come last.
  for (int level : {10, 50}) {
    if (std::none_of(groups.begin(), groups.end(),
                     [&](const Group& g) { return g.level == level; })) {
      groups.push_back(Group{level, {}, {}});
    }
  }
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
    return (a.level < 0 ? 1000 : a.level) < (b.level < 0 ? 1000 : b.level);
  });
  std::vector<Json> out;
  for (const Group& g : groups) {
    const auto company = static_cast<std::size_t>(std::count_if(
        groups.begin(), groups.end(), [&](const Group& o) { return o.level == g.level; }));
    out.push_back(ThroughputSection(s, g, company));
  }
  return out;
}

std::vector<Json> LatencySections(const Selection& s) {
  std::vector<Json> out;
  using Which = bool (*)(const Cell&);
  using Build = Json (*)(const Selection&, const Group*, std::size_t);
  for (auto [which, build] :
       {std::pair<Which, Build>{Qd1, Qd1Table}, std::pair<Which, Build>{LowLoad, LowLoadTable},
        std::pair<Which, Build>{Mixed, MixedTable}}) {
    std::vector<Group> groups = GroupsOf(s, which, true);
    std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
      return (a.level < 0 ? 1000 : a.level) < (b.level < 0 ? 1000 : b.level);
    });
    if (groups.empty()) out.push_back(build(s, nullptr, 0));
    for (const Group& g : groups) {
      const auto company = static_cast<std::size_t>(std::count_if(
          groups.begin(), groups.end(), [&](const Group& o) { return o.level == g.level; }));
      out.push_back(build(s, &g, company));
    }
  }
  return out;
}

}  // namespace drivewatch::aging::drive_report_detail
