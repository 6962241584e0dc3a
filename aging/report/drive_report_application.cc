// SPDX-License-Identifier: Apache-2.0
// `drivewatch report`'s application sections, sqlite and pgbench: an
// application's rate (inserts, transactions per second) with its spread,
// and its latency, fresh against aged against the baseline. One section
// per phase and fill level, so a row is only ever set beside a run of the
// same parameters (a phase's) at the same fill.
#include <cmath>
#include <set>
#include <tuple>
#include <utility>

#include "aging/report/drive_report_detail.h"
#include "aging/report/report_format.h"
#include "config/kinds/pgbench.h"
#include "config/kinds/sqlite.h"

namespace drivewatch::aging::drive_report_detail {
namespace {

using report_format::Format;

// A rate more than this far below fresh has fallen with age (when the
// drop is also beyond the runs' noise).
constexpr double kSlowerRatio = 0.8;

// What differs between the application sections.
struct Application {
  std::string_view kind;      // the phase kind
  std::string_view name;      // "SQLite inserts"
  std::string_view table;     // the table's title
  std::string_view rate;      // its results key: "insert_operations_per_second"
  std::string_view rate_label, rate_count;  // "inserts/s"; the key of its spread's n
  std::string_view unit;      // the verdict's: "rows/s"
  std::string_view latency;   // the latency keys' stem: "commit"
  std::string_view latency_count;  // the key of the latency's n
  std::string_view expectation;
  std::string_view none;      // the note when no run is on record
};

constexpr Application kSqlite{
    config::SqliteParams::kName, "SQLite inserts", "SQLite insertion (pts/sqlite)",
    "insert_operations_per_second", "inserts/s", "insert_segments", "rows/s", "commit",
    "insert_operations",
    "Phoronix's pts/sqlite times a fixed number of inserts, each its own transaction: the more "
    "per second, the better. Rule: an aged drive more than 20 % below its fresh rate, by more "
    "than twice the combined standard error of the two (over five segments of each run), has "
    "slowed with age.",
    "no sqlite run on record: the sqlite phase times SQLite inserts on a directory target "
    "(docs/aging.md)"};
constexpr Application kPgbench{
    config::PgbenchParams::kName, "PostgreSQL pgbench", "pgbench (pts/pgbench)",
    "transaction_operations_per_second", "TPS", "transaction_seconds", "TPS", "latency",
    "logged_transactions",
    "Phoronix's pts/pgbench runs PostgreSQL's TPC-B-like (or select-only) transactions for a "
    "fixed time: the more per second, the better. Rule: an aged drive more than 20 % below its "
    "fresh TPS, by more than twice the combined standard error of the two (over each run's "
    "seconds), has slowed with age.",
    "no pgbench run on record: the pgbench phase runs pgbench against a PostgreSQL server on a "
    "directory target (docs/aging.md)"};

std::string Key(std::string_view stem, std::string_view tail) {
  return std::string(stem) + "_" + std::string(tail);
}

bool Measured(const Application& app, const Run& r) {
  return r.kind == app.kind && r.Result(app.rate);
}

std::string Title(const Application& app, const std::string& phase, int level) {
  return std::string(app.name) + ", phase " + phase +
         (level < 0 ? std::string(" (fill level not on record)")
                    : Format(" at %d %% fill", level));
}

std::vector<ColumnSpec> Columns(const Application& app) {
  const auto value = [](std::string key) {
    return [key](const Run& r) { return Value(r.Result(key)); };
  };
  const std::string rate_key(app.rate);
  ColumnSpec rate{rate_key, std::string(app.rate_label), "count", value(rate_key), nullptr};
  rate.spread_key = rate_key + "_se";
  rate.count_key = app.rate_count;
  const std::string mean_key = Key(app.latency, "mean_seconds");
  ColumnSpec mean{mean_key, std::string(app.latency) + " mean", "ms", value(mean_key), nullptr};
  mean.spread_key = mean_key + "_se";
  mean.count_key = app.latency_count;
  std::vector<ColumnSpec> columns = {rate, mean};
  if (app.kind == config::SqliteParams::kName) {
    columns.insert(columns.begin(),
                   {"elapsed_seconds", "elapsed", "s", value("elapsed_seconds"), nullptr});
  }
  const std::string count(app.latency_count);
  for (const auto& [tail, label, q] : {std::tuple{"p50_seconds", "p50", 0.5},
                                       std::tuple{"p99_seconds", "p99", 0.99},
                                       std::tuple{"p99_9_seconds", "p99.9", 0.999}}) {
    const double quantile = q;
    columns.push_back({Key(app.latency, tail), std::string(app.latency) + " " + label, "ms",
                       value(Key(app.latency, tail)), [count, quantile](const Run& r) {
                         return TailMark(r.Result(count), quantile);
                       }});
  }
  if (app.kind == config::PgbenchParams::kName) {
    columns.push_back({"fsync_operations", "WAL fsyncs", "count", value("fsync_operations"),
                       nullptr, true});
  }
  return columns;
}

// The latest run's rate against fresh (judged) and the baseline.
Json RateVerdict(const Application& app, const std::vector<Pick>& picks) {
  const Pick* latest = Latest(picks);
  const auto rate = [&](const Pick* p) { return *p->run->Result(app.rate); };
  const auto se = [&](const Pick* p) {
    return p->run->Result(std::string(app.rate) + "_se").value_or(0);
  };
  const std::string unit(app.unit);
  const double now = rate(latest);
  std::string line = latest->label + " " + Show(now, "count") + unit;
  bool slower = false;
  if (const Pick* fresh = Labelled(picks, "fresh"); fresh != nullptr && fresh != latest) {
    const double then = rate(fresh);
    const double noise = 2 * std::sqrt(se(latest) * se(latest) + se(fresh) * se(fresh));
    slower = now < kSlowerRatio * then && then - now > noise;
    line += Format(", %.2f\xc3\x97 its fresh ", then > 0 ? now / then : 0.0) +
            Show(then, "count") + unit;
  }
  if (const Pick* base = Labelled(picks, "baseline"); base != nullptr) {
    const double b = rate(base);
    line += Format(", %.2f\xc3\x97 the baseline's ", b > 0 ? now / b : 0.0) +
            Show(b, "count") + unit;
  }
  return slower ? Verdict("fail", line + ": slowed with age") : Verdict("pass", line);
}

Json ApplicationSection(const Application& app, const Selection& s, const std::string& phase,
                        int level) {
  Json section = Section(std::string(app.kind) + "_" + phase +
                             (level < 0 ? std::string() : Format("_fill_%d", level)),
                         Title(app, phase, level));
  const auto picks = PickRuns(s, [&](const Run& r) {
    return Measured(app, r) && r.phase == phase && FillLevel(r) == level;
  });
  section["runs"] = RunsJson(picks);
  Json table = RunTable(std::string(app.kind), std::string(app.table), picks, Columns(app));
  section["expectation"] = std::string(app.expectation);
  if (Latest(picks) != nullptr) section["verdict"] = RateVerdict(app, picks);
  if (AnyIndicative(table)) section["notes"].push_back(std::string(kIndicativeNote));
  section["tables"].push_back(std::move(table));
  return section;
}

std::vector<Json> ApplicationSections(const Application& app, const Selection& s) {
  std::set<std::pair<std::string, int>> groups;
  for (const Run& r : s.inputs->runs) {
    if ((r.drive == s.drive || r.drive == s.baseline) && r.completed() && Measured(app, r)) {
      groups.insert({r.phase, FillLevel(r)});
    }
  }
  std::vector<Json> out;
  for (const auto& [phase, level] : groups) out.push_back(ApplicationSection(app, s, phase, level));
  if (out.empty()) {
    Json section = Section(std::string(app.kind), std::string(app.name));
    section["expectation"] = std::string(app.expectation);
    section["verdict"] = Verdict("info", "no " + std::string(app.kind) + " run on record");
    section["runs"] = Json::array();
    section["notes"].push_back(std::string(app.none));
    out.push_back(std::move(section));
  }
  return out;
}

}  // namespace

std::vector<Json> SqliteSections(const Selection& s) { return ApplicationSections(kSqlite, s); }
std::vector<Json> PgbenchSections(const Selection& s) { return ApplicationSections(kPgbench, s); }

}  // namespace drivewatch::aging::drive_report_detail
