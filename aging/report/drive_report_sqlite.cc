// SPDX-License-Identifier: Apache-2.0
// `drivewatch report`'s SQLite section: inserts per second and commit
// latency, fresh against aged against the baseline, one section per phase
// and fill level, so a row is only ever set beside a run of the same
// threads, inserts, journal mode and synchronous level at the same fill.
#include <cmath>
#include <set>
#include <tuple>
#include <utility>

#include "aging/report/drive_report_detail.h"
#include "aging/report/report_format.h"
#include "config/kinds/sqlite.h"

namespace drivewatch::aging::drive_report_detail {
namespace {

using report_format::Format;

// A rate more than this far below fresh has fallen with age (when the
// drop is also beyond the runs' noise).
constexpr double kSlowerRatio = 0.8;

bool IsSqlite(const Run& r) {
  return r.kind == config::SqliteParams::kName && r.Result("insert_operations_per_second");
}

std::string Title(const std::string& phase, int level) {
  return "SQLite inserts, phase " + phase +
         (level < 0 ? std::string(" (fill level not on record)")
                    : Format(" at %d %% fill", level));
}

Json SqliteSection(const Selection& s, const std::string& phase, int level) {
  Json section = Section(
      "sqlite_" + phase + (level < 0 ? std::string() : Format("_fill_%d", level)),
      Title(phase, level));
  const auto picks = PickRuns(s, [&](const Run& r) {
    return IsSqlite(r) && r.phase == phase && FillLevel(r) == level;
  });
  section["runs"] = RunsJson(picks);
  const auto value = [](std::string key) {
    return [key](const Run& r) { return Value(r.Result(key)); };
  };
  ColumnSpec rate{"insert_operations_per_second", "inserts/s", "count",
                  value("insert_operations_per_second"), nullptr};
  rate.spread_key = "insert_operations_per_second_se";
  rate.count_key = "insert_segments";
  ColumnSpec mean{"commit_mean_seconds", "commit mean", "ms", value("commit_mean_seconds"),
                  nullptr};
  mean.spread_key = "commit_mean_seconds_se";
  mean.count_key = "insert_operations";
  std::vector<ColumnSpec> columns = {
      {"elapsed_seconds", "elapsed", "s", value("elapsed_seconds"), nullptr}, rate, mean};
  for (const auto& [key, label, q] :
       {std::tuple{"commit_p50_seconds", "commit p50", 0.5},
        std::tuple{"commit_p99_seconds", "commit p99", 0.99},
        std::tuple{"commit_p99_9_seconds", "commit p99.9", 0.999}}) {
    const double quantile = q;
    columns.push_back({key, label, "ms", value(key), [quantile](const Run& r) {
                         return TailMark(r.Result("insert_operations"), quantile);
                       }});
  }
  Json table = RunTable("sqlite", "SQLite insertion (pts/sqlite)", picks, columns);
  section["expectation"] =
      "Phoronix's pts/sqlite times a fixed number of inserts, each its own transaction: the "
      "more per second, the better. Rule: an aged drive more than 20 % below its fresh rate, "
      "by more than twice the combined standard error of the two (over five segments of each "
      "run), has slowed with age.";
  const Pick* fresh = Labelled(picks, "fresh");
  const Pick* latest = Latest(picks);
  if (latest != nullptr) {
    const double now = *latest->run->Result("insert_operations_per_second");
    std::string line = latest->label + " inserts " + Show(now, "count") + "rows/s";
    bool slower = false;
    if (fresh != nullptr && fresh != latest) {
      const double then = *fresh->run->Result("insert_operations_per_second");
      const double se_now = latest->run->Result("insert_operations_per_second_se").value_or(0);
      const double se_then = fresh->run->Result("insert_operations_per_second_se").value_or(0);
      const double noise = 2 * std::sqrt(se_now * se_now + se_then * se_then);
      slower = now < kSlowerRatio * then && then - now > noise;
      line += Format(", %.2f\xc3\x97 its fresh ", then > 0 ? now / then : 0.0) +
              Show(then, "count") + "rows/s";
    }
    if (const Pick* base = Labelled(picks, "baseline"); base != nullptr) {
      const double b = *base->run->Result("insert_operations_per_second");
      line += Format(", %.2f\xc3\x97 the baseline's ", b > 0 ? now / b : 0.0) +
              Show(b, "count") + "rows/s";
    }
    section["verdict"] = slower ? Verdict("fail", line + ": slowed with age")
                                : Verdict("pass", line);
  }
  if (AnyIndicative(table)) section["notes"].push_back(std::string(kIndicativeNote));
  section["tables"].push_back(std::move(table));
  return section;
}

}  // namespace

std::vector<Json> SqliteSections(const Selection& s) {
  std::set<std::pair<std::string, int>> groups;
  for (const Run& r : s.inputs->runs) {
    if ((r.drive == s.drive || r.drive == s.baseline) && r.completed() && IsSqlite(r)) {
      groups.insert({r.phase, FillLevel(r)});
    }
  }
  std::vector<Json> out;
  for (const auto& [phase, level] : groups) out.push_back(SqliteSection(s, phase, level));
  if (out.empty()) {
    Json section = Section("sqlite", "SQLite inserts");
    section["expectation"] =
        "Phoronix's pts/sqlite times a fixed number of inserts, each its own transaction: the "
        "more per second, the better.";
    section["verdict"] = Verdict("info", "no sqlite run on record");
    section["runs"] = Json::array();
    section["notes"].push_back(
        "no sqlite run on record: the sqlite phase times SQLite inserts on a directory "
        "target (docs/aging.md)");
    out.push_back(std::move(section));
  }
  return out;
}

}  // namespace drivewatch::aging::drive_report_detail
