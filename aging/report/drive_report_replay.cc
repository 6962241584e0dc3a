// SPDX-License-Identifier: Apache-2.0
// `drivewatch report`'s workload replay section: each operation's latency
// quantiles, any over 300 ms detrimental.
#include "aging/report/drive_report_detail.h"
#include "aging/report/report_format.h"
#include "config/kinds/replay.h"

namespace drivewatch::aging::drive_report_detail {
namespace {

using report_format::Format;

constexpr double kDetrimentalSeconds = 0.3;

// A replay's latencies: each operation's quantiles, the only keys its
// verdict judges (recorded_span_seconds and replay_duration_seconds are
// times, not latencies).
constexpr std::pair<const char*, const char*> kReplayQuantiles[] = {
    {"p50", "p50"}, {"p99", "p99"}, {"p99_9", "p99.9"}};

// The drive's latencies over 300 ms, each with its operation, quantile and
// row.
std::vector<std::string> Detrimental(const std::vector<Pick>& picks) {
  std::vector<std::string> over;
  for (const Pick& p : picks) {
    if (!p.run || p.label == "baseline") continue;
    for (const char* op : {"read", "write", "trim"}) {
      for (const auto& [q, label] : kReplayQuantiles) {
        const auto v = p.run->Result(std::string(op) + "_" + q + "_seconds");
        if (v && *v > kDetrimentalSeconds) {
          over.push_back(std::string(op) + " " + label + " " + Show(*v, "ms") + " (" + p.label +
                         ")");
        }
      }
    }
  }
  return over;
}

}  // namespace

Json ReplaySection(const Selection& s) {
  Json section = Section("replay", "Workload replay");
  const auto picks = PickRuns(
      s, [](const Run& r) { return r.kind == config::ReplayParams::kName && r.Result("replay_duration_seconds"); });
  section["runs"] = RunsJson(picks);
  auto result = [](std::string key, std::string older = "") {
    return [key, older](const Run& r) {
      auto v = r.Result(key);
      return Value(v || older.empty() ? v : r.Result(older));
    };
  };
  // What the replay did, then one latency table per operation, so no
  // table is wider than the page.
  Json summary = RunTable(
      "replay", "Replay of a recorded workload", picks,
      {{"replay_duration_seconds", "replay took", "s", result("replay_duration_seconds"), nullptr},
       {"recorded_span_seconds", "recorded span", "s", result("recorded_span_seconds"), nullptr,
        true},
       {"replay_bytes_per_second", "throughput", "bytes_per_second",
        result("replay_bytes_per_second", "bytes_per_second"), nullptr, true},
       {"replay_iops", "IOPS", "iops", result("replay_iops", "iops"), nullptr, true},
       {"replayed_ios", "I/Os replayed", "count", result("replayed_ios"), nullptr, true},
       {"late_ios", "late I/Os", "count", result("late_ios"), nullptr, true}});
  std::vector<Json> latency;
  bool indicative = false;
  for (const char* op : {"read", "write", "trim"}) {
    std::vector<ColumnSpec> columns;
    const std::string count = std::string(op) + "_ios";
    for (const auto& [q, label] : kReplayQuantiles) {
      const std::string key = std::string(op) + "_" + q + "_seconds";
      const double quantile = std::string_view(q) == "p50" ? 0.5
                              : std::string_view(q) == "p99" ? 0.99 : 0.999;
      columns.push_back({key, std::string(op) + " " + label, "ms", result(key),
                         [count, quantile](const Run& r) {
                           return TailMark(r.Result(count), quantile);
                         }});
    }
    columns.push_back({count, std::string(op) + " n", "count", result(count), nullptr, true});
    Json table = RunTable(std::string("replay_") + op, std::string("Replay ") + op + " latency",
                          picks, columns);
    if (AnyIndicative(table)) indicative = true;
    if (AnyValue(table)) latency.push_back(std::move(table));
  }
  section["expectation"] =
      "The reference report replays the JEDEC client workload and times it: the shorter, the "
      "better, compared with the drive fresh and with the baseline. Latencies over 300 ms are "
      "detrimental.";
  const std::vector<std::string> over = Detrimental(picks);
  const Pick* latest = Latest(picks);
  if (latest) {
    const double took = *latest->run->Result("replay_duration_seconds");
    std::string line = latest->label + " replays in " + Show(took, "s");
    for (const char* other : {"fresh", "baseline"}) {
      const Pick* o = Labelled(picks, other);
      if (o && o != latest) {
        const double t = *o->run->Result("replay_duration_seconds");
        line += Format(", %.2f\xc3\x97 the %s run's %s", t > 0 ? took / t : 0.0, other,
                       Show(t, "s").c_str());
      }
    }
    section["verdict"] =
        over.empty() ? Verdict("pass", line + "; no latency over 300 ms")
                     : Verdict("fail", line + "; detrimental, over 300 ms: " + Join(over, "; "));
  }
  if (!AnyValue(summary)) {
    section["notes"].push_back(
        "no replay run on record: the replay phase replays a block trace "
        "(docs/aging.md)");
  }
  if (indicative) section["notes"].push_back(std::string(kIndicativeNote));
  section["tables"].push_back(std::move(summary));
  for (Json& t : latency) section["tables"].push_back(std::move(t));
  return section;
}

}  // namespace drivewatch::aging::drive_report_detail
