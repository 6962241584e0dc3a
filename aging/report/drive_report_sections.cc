// SPDX-License-Identifier: Apache-2.0
// `drivewatch report`'s sections other than perf's: identity and age, the
// fill and its SLC cache, reclaim, workload replay, low power, trim,
// endurance and retention. Each picks its rows (PickRuns), fills its
// tables and charts, and ends with its expectation and a verdict from the
// rule the expectation states (docs/report.md lists them).
#include <algorithm>
#include <cmath>
#include <set>

#include "aging/report/drive_report_detail.h"
#include "aging/report/report_format.h"
#include "aging/report/retention_report_model.h"
#include "config/config.h"

namespace drivewatch::aging::drive_report_detail {
namespace {

using report_format::Format;

constexpr double kDetrimentalSeconds = 0.3;
constexpr double kLowIdleWatts = 0.010;
constexpr double kLowTenIopsWatts = 0.100;

Json Text(const std::string& s) { return s.empty() ? Json() : Json(s); }

std::optional<double> AgeField(const Run& r, double (*f)(const DriveAge&)) {
  if (!r.age) return std::nullopt;
  return f(*r.age);
}

std::string Show(double v, std::string_view unit) {
  return ShowValue(Json(v), unit) + " " + UnitLabel(unit);
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : std::string(sep)) + p;
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

// The value and source of a power result "<measure>_power_<source>_watts".
std::optional<std::pair<double, std::string>> Power(const Run& r, const std::string& measure) {
  const std::string prefix = measure + "_power_";
  for (const auto& [key, v] : r.results) {
    if (key.size() > prefix.size() + 6 && key.compare(0, prefix.size(), prefix) == 0 &&
        key.compare(key.size() - 6, 6, "_watts") == 0) {
      return std::pair{v, key.substr(prefix.size(), key.size() - prefix.size() - 6)};
    }
  }
  return std::nullopt;
}

// The power states a power-states run has results for.
std::vector<int> StatesOf(const Run& r) {
  std::vector<int> out;
  for (int n = 0; n < 32; ++n) {
    if (r.Result(Format("ps%d_exit_latency_declared_seconds", n)) || Power(r, Format("ps%d", n))) {
      out.push_back(n);
    }
  }
  return out;
}

// The rows' values of one column, for charts.
std::vector<std::optional<double>> Across(
    const std::vector<int>& states, const Run* run,
    const std::function<std::optional<double>(const Run&, int)>& f) {
  std::vector<std::optional<double>> out;
  for (int n : states) out.push_back(run ? f(*run, n) : std::nullopt);
  return out;
}

}  // namespace

Json IdentitySection(const Selection& s) {
  Json section = Section("identity", "Identity and age");
  const auto picks = PickRuns(s, [](const Run&) { return true; });
  section["runs"] = RunsJson(picks);
  section["tables"].Push(RunTable(
      "identity", "Identity", picks,
      {{"model", "model", "text", [](const Run& r) { return Text(r.model); }, nullptr},
       {"firmware", "firmware", "text", [](const Run& r) { return Text(r.firmware); }, nullptr},
       {"serial", "serial", "text", [](const Run& r) { return Json(r.drive); }, nullptr},
       {"capacity_bytes", "capacity", "bytes",
        [](const Run& r) {
          return Value(AgeField(r, [](const DriveAge& a) { return double(a.capacity_bytes); }));
        },
        nullptr},
       {"tmt1_celsius", "TMT1", "celsius",
        [](const Run& r) {
          return r.age && r.age->tmt1_k ? Json(*r.age->tmt1_k - 273.15) : Json();
        },
        nullptr},
       {"tmt2_celsius", "TMT2", "celsius",
        [](const Run& r) {
          return r.age && r.age->tmt2_k ? Json(*r.age->tmt2_k - 273.15) : Json();
        },
        nullptr}}));
  section["tables"].Push(RunTable(
      "age", "Age at the start of the run", picks,
      {{"power_on_hours", "power-on", "hours",
        [](const Run& r) {
          return Value(AgeField(r, [](const DriveAge& a) { return double(a.power_on_hours); }));
        },
        nullptr},
       {"percentage_used", "Percentage Used", "pct",
        [](const Run& r) {
          return Value(AgeField(r, [](const DriveAge& a) { return double(a.percentage_used); }));
        },
        nullptr},
       {"data_written_bytes", "data written", "tb",
        [](const Run& r) {
          return Value(AgeField(r, [](const DriveAge& a) { return a.data_written_bytes; }));
        },
        nullptr},
       {"drive_writes", "drive writes", "x",
        [](const Run& r) {
          return Value(AgeField(r, [](const DriveAge& a) { return a.DriveWrites(); }));
        },
        nullptr}}));
  section["expectation"] =
      "Fresh and aged are the same drive: the same model, and the same firmware unless it was "
      "updated between them, which can explain a change in any table. TMT1 and TMT2 are the "
      "host's thermal throttle points, known when host controlled thermal management is on.";
  // Without a fresh row (--runs latest), the one row there is.
  const Pick* aged = Labelled(picks, "aged");
  const Pick* fresh = Labelled(picks, "fresh");
  if (fresh == nullptr) {
    fresh = Latest(picks);
    aged = nullptr;
  }
  if (fresh == nullptr) return section;
  std::vector<std::string> parts;
  if (aged && aged->run->firmware != fresh->run->firmware) {
    parts.push_back("firmware changed " + fresh->run->firmware + " \xe2\x86\x92 " +
                    aged->run->firmware + " between fresh and aged");
  } else {
    parts.push_back("firmware " +
                    (fresh->run->firmware.empty() ? std::string("unknown") : fresh->run->firmware) +
                    (aged ? " throughout" : ""));
  }
  if (aged && fresh->run->age && aged->run->age) {
    const DriveAge& f = *fresh->run->age;
    const DriveAge& a = *aged->run->age;
    parts.push_back(Format(
        "aged %s power-on hours, %u%% used and %.2f drive writes later",
        report_format::Grouped(double(a.power_on_hours) - double(f.power_on_hours), 0).c_str(),
        a.percentage_used - std::min(a.percentage_used, f.percentage_used),
        a.DriveWrites() - f.DriveWrites()));
  } else if (!fresh->run->age) {
    parts.push_back("the drive's age is not on record for its runs");
  }
  section["verdict"] = Verdict("info", Join(parts, "; "));
  return section;
}

namespace {

bool IsFill(const Run& r) {
  return r.kind == "fill" &&
         (r.Result("slc_cache_bytes") || r.Result("slc_cache_lower_bound_bytes"));
}

Json FillSection(const Selection& s, int level) {
  Json section = Section(level < 0 ? std::string("fill_unknown") : Format("fill_%d", level),
                         level < 0 ? std::string("Fill and SLC cache (fill level not on record)")
                                   : Format("Fill to %d %% and SLC cache", level));
  const auto picks =
      PickRuns(s, [level](const Run& r) { return IsFill(r) && FillLevel(r) == level; });
  section["runs"] = RunsJson(picks);
  auto bound = [](const Run& r) {
    return r.Result("slc_cache_bytes") ? std::string() : std::string("at_least");
  };
  section["tables"].Push(RunTable(
      "fill", "Sequential fill of the empty drive", picks,
      {{"slc_cache_bytes", "SLC cache", "bytes",
        [](const Run& r) {
          auto v = r.Result("slc_cache_bytes");
          return Value(v ? v : r.Result("slc_cache_lower_bound_bytes"));
        },
        bound},
       {"before_cache_bytes_per_second", "write in cache", "bytes_per_second",
        [](const Run& r) { return Value(r.Result("before_cache_bytes_per_second")); }, nullptr},
       {"after_cache_bytes_per_second", "write after cache", "bytes_per_second",
        [](const Run& r) { return Value(r.Result("after_cache_bytes_per_second")); }, nullptr},
       {"slc_exhausted_after_seconds", "cache lasts", "s",
        [](const Run& r) { return Value(r.Result("slc_exhausted_after_seconds")); }, bound},
       {"write_mean_bytes_per_second", "mean write", "bytes_per_second",
        [](const Run& r) { return Value(r.Result("write_mean_bytes_per_second")); }, nullptr},
       {"write_p99_9_seconds", "write p99.9", "ms",
        [](const Run& r) { return Value(r.Result("write_p99_9_seconds")); }, nullptr},
       {"written_bytes", "written", "bytes",
        [](const Run& r) { return Value(r.Result("written_bytes")); }, nullptr},
       {"fill_ratio", "filled", "percent",
        [](const Run& r) { return Value(r.Result("fill_ratio")); }, nullptr}}));
  section["expectation"] =
      "A client drive writes into an SLC cache first; during a half-drive fill of the empty "
      "drive the cache runs out and the write speed drops to the native (TLC/QLC) speed. Rule: "
      "the cache is found where the throughput stays below 60 % of its first plateau (docs/"
      "aging.md); no such drop means the cache is at least what was written, or there is none.";
  std::vector<std::string> parts;
  for (const Pick& p : picks) {
    if (!p.run || p.label == "baseline") continue;
    if (auto c = p.run->Result("slc_cache_bytes")) {
      std::string part = p.label + " " + Show(*c, "bytes");
      if (auto after = p.run->Result("after_cache_bytes_per_second")) {
        part += ", then " + Show(*after, "bytes_per_second");
      }
      parts.push_back(part);
    } else if (auto b = p.run->Result("slc_cache_lower_bound_bytes")) {
      parts.push_back(p.label + " none found in " + Show(*b, "bytes") + " written");
    }
  }
  if (!parts.empty()) {
    const bool found = std::any_of(picks.begin(), picks.end(), [](const Pick& p) {
      return p.run && p.label != "baseline" && p.run->Result("slc_cache_bytes");
    });
    section["verdict"] =
        Verdict("info", (found ? "SLC cache found: "
                               : "no SLC cache found (a cache at least as large as "
                                 "what was written, or none): ") +
                            Join(parts, "; "));
  }
  const std::string id = section["id"].AsString();
  Json time = LineChart(id + "_time", "Fill throughput over time", ChartAxis("time", "s"),
                        ChartAxis("write", "MB/s"));
  Json bytes = LineChart(id + "_bytes", "Fill throughput against data written",
                         ChartAxis("written", "GB"), ChartAxis("write", "MB/s"));
  for (const Pick& p : picks) {
    const std::vector<double>* series =
        p.run ? p.run->Numbers("throughput_bytes_per_second") : nullptr;
    if (series == nullptr) continue;
    const std::vector<double>* lengths = p.run->Numbers("throughput_seconds");
    AddLine(time, p.label, OverTime(*series, lengths));
    AddLine(bytes, p.label, OverBytes(*series, lengths, p.run->Result("written_bytes")));
    if (auto c = p.run->Result("slc_cache_bytes")) {
      if (auto t = p.run->Result("slc_exhausted_after_seconds")) {
        AddMarker(time, *t, "SLC cache ends (" + p.label + ")", p.label);
      }
      AddMarker(bytes, *c / 1e9, "SLC cache ends (" + p.label + ")", p.label);
    }
  }
  if (!time["series"].items().empty()) {
    section["charts"].Push(std::move(time));
    section["charts"].Push(std::move(bytes));
  }
  return section;
}

}  // namespace

std::vector<Json> FillSections(const Selection& s) {
  std::set<int> levels = {50};
  for (const Run& r : s.inputs->runs) {
    if ((r.drive == s.drive || r.drive == s.baseline) && r.completed() && IsFill(r)) {
      levels.insert(FillLevel(r));
    }
  }
  std::vector<int> order(levels.begin(), levels.end());
  std::stable_partition(order.begin(), order.end(), [](int l) { return l >= 0; });
  std::vector<Json> out;
  for (int level : order) out.push_back(FillSection(s, level));
  return out;
}

Json ReclaimSection(const Selection& s) {
  Json section = Section("reclaim", "SLC reclaim after idle");
  auto idles_of = [](const Run& r) {
    std::set<std::string> out;
    for (const auto& [key, v] : r.results) {
      for (std::string_view suffix : {"_fast_stage_bytes", "_fast_stage_lower_bound_bytes"}) {
        if (key.rfind("idle_", 0) == 0 && key.size() > suffix.size() + 5 &&
            key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0) {
          out.insert(key.substr(0, key.size() - suffix.size()));
        }
      }
    }
    return out;
  };
  const auto picks =
      PickRuns(s, [&](const Run& r) { return r.kind == "reclaim" && !idles_of(r).empty(); });
  section["runs"] = RunsJson(picks);
  std::vector<std::string> idles;
  for (const Pick& p : picks) {
    if (!p.run) continue;
    for (const std::string& i : idles_of(*p.run)) {
      if (std::find(idles.begin(), idles.end(), i) == idles.end()) idles.push_back(i);
    }
  }
  auto length = [](const std::string& idle) {
    const auto d = config::ParseDuration(std::string_view(idle).substr(5));
    return d ? d->count() : INT64_MAX;
  };
  std::stable_sort(idles.begin(), idles.end(), [&](const std::string& a, const std::string& b) {
    return length(a) < length(b);
  });
  auto fast = [](const Run& r, const std::string& idle) {
    auto v = r.Result(idle + "_fast_stage_bytes");
    return v ? v : r.Result(idle + "_fast_stage_lower_bound_bytes");
  };
  std::vector<ColumnSpec> columns;
  for (const std::string& idle : idles) {
    columns.push_back({idle + "_fast_stage_bytes", "after " + idle.substr(5) + " idle", "bytes",
                       [idle, fast](const Run& r) { return Value(fast(r, idle)); },
                       [idle](const Run& r) {
                         return r.Result(idle + "_fast_stage_bytes") ? std::string()
                                                                     : std::string("at_least");
                       }});
  }
  if (columns.empty()) {
    columns.push_back({"fast_stage_bytes", "fast stage after an idle", "bytes",
                       [](const Run&) { return Json(); }, nullptr});
  }
  section["tables"].Push(
      RunTable("fast_stage", "Data written at full speed after each idle", picks, columns));
  section["expectation"] =
      "Left idle, a drive folds its SLC cache into TLC/QLC and writes fast again: the longer the "
      "idle, the longer the fast stage of the write after it. Rule: the drive reclaims when the "
      "fast stage after the longest idle is longer than after the shortest (a write that never "
      "slowed down had the cache for all of it).";
  if (const Pick* p = Latest(picks); p && !idles.empty()) {
    const auto first = fast(*p->run, idles.front());
    const auto last = fast(*p->run, idles.back());
    const bool never_slowed = std::all_of(idles.begin(), idles.end(), [&](const std::string& i) {
      return !p->run->Result(i + "_fast_stage_bytes");
    });
    std::string line = "after " + idles.front().substr(5) + " idle " +
                       (first ? Show(*first, "bytes") : std::string(kNotMeasured)) +
                       " at full speed, after " + idles.back().substr(5) + " " +
                       (last ? Show(*last, "bytes") : std::string(kNotMeasured)) + " (" + p->label +
                       ")";
    if (never_slowed) {
      section["verdict"] = Verdict("pass", line + ": no write ran out of cache");
    } else if (first && last && *last > *first) {
      section["verdict"] = Verdict("pass", line + ": the drive reclaims its cache while idle");
    } else {
      section["verdict"] = Verdict("fail", line + ": the fast stage does not grow with idle time");
    }
  }
  for (const Pick& p : picks) {
    if (!p.run) continue;
    Json chart = LineChart("reclaim_" + p.label, "Writes after each idle (" + p.label + ")",
                           ChartAxis("time after the idle", "s"), ChartAxis("write", "MB/s"));
    for (const std::string& idle : idles) {
      if (const auto* series = p.run->Numbers(idle + "_throughput_bytes_per_second")) {
        AddLine(chart, "after " + idle.substr(5), OverTime(*series));
      }
    }
    if (!chart["series"].items().empty()) section["charts"].Push(std::move(chart));
  }
  return section;
}

// A replay's latencies: each operation's quantiles, the only keys its
// verdict judges (recorded_span_seconds and replay_duration_seconds are
// times, not latencies).
constexpr std::pair<const char*, const char*> kReplayQuantiles[] = {
    {"p50", "p50"}, {"p99", "p99"}, {"p99_9", "p99.9"}};

Json ReplaySection(const Selection& s) {
  Json section = Section("replay", "Workload replay");
  const auto picks = PickRuns(
      s, [](const Run& r) { return r.kind == "replay" && r.Result("replay_duration_seconds"); });
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
    section["notes"].Push(
        "no replay run on record: the replay phase replays a block trace "
        "(docs/aging.md)");
  }
  if (indicative) section["notes"].Push(std::string(kIndicativeNote));
  section["tables"].Push(std::move(summary));
  for (Json& t : latency) section["tables"].Push(std::move(t));
  return section;
}

Json LowPowerSection(const Selection& s) {
  Json section = Section("low_power", "Low power");
  const auto picks = PickRuns(s, [](const Run& r) {
    return r.kind == "power-states" &&
           (Power(r, "idle") || Power(r, "at_10_iops") || !StatesOf(r).empty());
  });
  section["runs"] = RunsJson(picks);
  auto watts = [](const char* measure) {
    return [measure](const Run& r) {
      auto p = Power(r, measure);
      return p ? Json(p->first) : Json();
    };
  };
  auto source = [](const char* measure) {
    return [measure](const Run& r) {
      auto p = Power(r, measure);
      return p ? Json(p->second) : Json();
    };
  };
  auto deepest = [](const Run& r) -> std::optional<int> {
    const auto states = StatesOf(r);
    if (states.empty()) return std::nullopt;
    return states.back();
  };
  section["tables"].Push(RunTable(
      "low_power", "Idle, deepest state and 10 IOPS", picks,
      {{"idle_power_watts", "idle", "mW", watts("idle"), nullptr},
       {"idle_power_source", "idle measured by", "text", source("idle"), nullptr},
       {"deepest_state", "deepest state", "text",
        [deepest](const Run& r) {
          auto n = deepest(r);
          return n ? Json(Format("ps%d", *n)) : Json();
        },
        nullptr},
       {"deepest_state_exit_latency_p50_seconds", "its exit", "us",
        [deepest](const Run& r) {
          auto n = deepest(r);
          return n ? Value(r.Result(Format("ps%d_exit_latency_p50_seconds", *n))) : Json();
        },
        nullptr},
       {"deepest_state_exit_latency_declared_seconds", "declared EXLAT", "us",
        [deepest](const Run& r) {
          auto n = deepest(r);
          return n ? Value(r.Result(Format("ps%d_exit_latency_declared_seconds", *n))) : Json();
        },
        nullptr},
       {"at_10_iops_power_watts", "at 10 IOPS", "mW", watts("at_10_iops"), nullptr},
       {"at_10_iops_power_source", "10 IOPS measured by", "text", source("at_10_iops"), nullptr}}));

  std::vector<int> states;
  for (const Pick& p : picks) {
    if (!p.run) continue;
    for (int n : StatesOf(*p.run)) {
      if (std::find(states.begin(), states.end(), n) == states.end()) states.push_back(n);
    }
  }
  std::sort(states.begin(), states.end());
  const Pick* latest = Latest(picks);
  Json per_state = Json::Object();
  per_state["id"] = "power_states";
  per_state["title"] = "Each power state: power and measured exit latency";
  Json& columns = per_state["columns"];
  columns = Json::Array();
  Json& rows = per_state["rows"];
  rows = Json::Array();
  for (const Pick& p : picks) {
    columns.Push(Column(p.label + "_power_watts", p.label + " power", "mW"));
    columns.Push(Column(p.label + "_exit_latency_p50_seconds", p.label + " exit", "us"));
  }
  columns.Push(Column("exit_latency_declared_seconds", "declared EXLAT", "us"));
  auto state_power = [](const Run& r, int n) -> std::optional<double> {
    auto p = Power(r, Format("ps%d", n));
    return p ? std::optional<double>(p->first) : std::nullopt;
  };
  auto state_exit = [](const Run& r, int n) {
    return r.Result(Format("ps%d_exit_latency_p50_seconds", n));
  };
  auto declared = [](const Run& r, int n) {
    return r.Result(Format("ps%d_exit_latency_declared_seconds", n));
  };
  for (int n : states) {
    Json row = Row(Format("ps%d", n));
    for (const Pick& p : picks) {
      row["values"][p.label + "_power_watts"] = p.run ? Value(state_power(*p.run, n)) : Json();
      row["values"][p.label + "_exit_latency_p50_seconds"] =
          p.run ? Value(state_exit(*p.run, n)) : Json();
    }
    row["values"]["exit_latency_declared_seconds"] =
        latest ? Value(declared(*latest->run, n)) : Json();
    rows.Push(std::move(row));
  }
  if (!states.empty()) section["tables"].Push(std::move(per_state));

  section["expectation"] =
      "Idle with APST on, a client drive sits in its deepest non-operational state and draws a "
      "few mW (the reference drive: 3.3 mW, PS4 exit about 23.8 ms); at 10 IOPS it should get "
      "back there between reads, not stay at active power (the reference drive drew 1.2 W). "
      "Rule: idle under 10 mW and 10-IOPS power under 100 mW is low power.";
  if (latest) {
    const auto idle = Power(*latest->run, "idle");
    const auto ten = Power(*latest->run, "at_10_iops");
    if (idle && ten) {
      std::string line = latest->label + ": idle " + Show(idle->first, "mW") + ", at 10 IOPS " +
                         Show(ten->first, "mW");
      const bool estimated = idle->second == "psd_estimate" || ten->second == "psd_estimate";
      if (estimated) {
        section["verdict"] =
            Verdict("info", line +
                                " (estimated from the power state descriptors, not measured: add a "
                                "power meter, [[probes.power.meters]], to judge it)");
      } else if (idle->first < kLowIdleWatts && ten->first < kLowTenIopsWatts) {
        section["verdict"] = Verdict("pass", line + ": low power idle and at 10 IOPS");
      } else if (idle->first < kLowIdleWatts) {
        section["verdict"] = Verdict(
            "fail", line +
                        ": low power idle, but not at 10 IOPS: the drive does not get back to "
                        "its low-power states between reads");
      } else {
        section["verdict"] = Verdict("fail", line + ": not low power when idle");
      }
    }
  }
  if (!states.empty()) {
    std::vector<std::string> groups;
    for (int n : states) groups.push_back(Format("ps%d", n));
    Json power = BarChart("power_states_power", "Power in each state", groups,
                          ChartAxis("power", "mW", true));
    Json exit = BarChart("power_states_exit", "Exit latency of each state", groups,
                         ChartAxis("exit latency", "\xc2\xb5s", true));
    for (const Pick& p : picks) {
      std::vector<std::optional<double>> mw = Across(states, p.run, state_power);
      for (auto& v : mw) {
        if (v) *v *= 1e3;
      }
      AddBars(power, p.label, mw);
      std::vector<std::optional<double>> us = Across(states, p.run, state_exit);
      for (auto& v : us) {
        if (v) *v *= 1e6;
      }
      AddBars(exit, p.label, us);
    }
    std::vector<std::optional<double>> us =
        Across(states, latest ? latest->run : nullptr, declared);
    for (auto& v : us) {
      if (v) *v *= 1e6;
    }
    AddBars(exit, "declared", us);
    section["charts"].Push(std::move(power));
    section["charts"].Push(std::move(exit));
  }
  return section;
}

Json TrimSection(const Selection& s) {
  Json section = Section("trim", "Trim");
  const auto picks = PickRuns(s, [](const Run& r) {
    return r.kind == "trim" && r.Result("write_before_trim_bytes_per_second");
  });
  section["runs"] = RunsJson(picks);
  auto result = [](std::string key) {
    return [key](const Run& r) { return Value(r.Result(key)); };
  };
  section["tables"].Push(RunTable(
      "trim", "Write speed before and after deallocating", picks,
      {{"write_before_trim_bytes_per_second", "write before trim", "bytes_per_second",
        result("write_before_trim_bytes_per_second"), nullptr},
       {"write_after_trim_bytes_per_second", "write after trim", "bytes_per_second",
        result("write_after_trim_bytes_per_second"), nullptr},
       {"trim_efficiency_ratio", "after / before", "x", result("trim_efficiency_ratio"), nullptr},
       {"trim_mean_seconds", "deallocate mean", "ms", result("trim_mean_seconds"), nullptr},
       {"trim_p99_seconds", "deallocate p99", "ms", result("trim_p99_seconds"), nullptr},
       {"trim_max_seconds", "deallocate max", "ms", result("trim_max_seconds"), nullptr}}));
  section["expectation"] =
      "Deallocating (trim) half of a nearly full drive gives it its write speed back: a drive "
      "with an SLC cache writes faster after it than before. Rule: trim efficiency, the write "
      "speed after the deallocate over before it, of 0.9 or more keeps or gives back the speed; "
      "under 0.5 writing got slower, and trim does not help.";
  if (const Pick* p = Latest(picks)) {
    if (auto e = p->run->Result("trim_efficiency_ratio")) {
      const std::string at = Format("trim efficiency %.2f\xc3\x97 (%s)", *e, p->label.c_str());
      if (*e >= 1.5) {
        section["verdict"] = Verdict("pass", at + ": writing is faster after the deallocate");
      } else if (*e >= 0.9) {
        section["verdict"] = Verdict("pass", at + ": the write speed is kept");
      } else if (*e >= 0.5) {
        section["verdict"] =
            Verdict("info", at + ": writing is somewhat slower after the deallocate");
      } else {
        section["verdict"] = Verdict(
            "fail", at + ": writing is much slower after the deallocate: trim does not help");
      }
    }
  }
  Json chart = LineChart("trim", "Write throughput before and after trim", ChartAxis("time", "s"),
                         ChartAxis("write", "MB/s"));
  for (const Pick& p : picks) {
    if (!p.run) continue;
    if (const auto* before = p.run->Numbers("write_before_trim_bytes_per_second")) {
      AddLine(chart, p.label + " before trim", OverTime(*before), true, p.label);
    }
    if (const auto* after = p.run->Numbers("write_after_trim_bytes_per_second")) {
      AddLine(chart, p.label + " after trim", OverTime(*after), false, p.label);
    }
  }
  if (!chart["series"].items().empty()) section["charts"].Push(std::move(chart));
  return section;
}

Json EnduranceSection(const Selection& s) {
  Json section = Section("endurance", "Endurance");
  // Each pass is a step record; the rows are the drive's first and latest
  // pass, a run id's last pass, and the baseline drive's latest.
  auto steps_of = [&](const std::string& drive) {
    std::vector<const Step*> out;
    for (const Step& st : s.inputs->steps) {
      if (st.drive == drive) out.push_back(&st);
    }
    return out;
  };
  struct StepPick {
    std::string label, drive;
    const Step* step = nullptr;
    std::string note;
  };
  std::vector<StepPick> picks;
  // The passes kept of this drive (its first, its latest kPassRows, a
  // named run's last: Inputs::steps) and how many there are in all.
  const auto mine = steps_of(s.drive);
  const auto totals_it = s.inputs->step_totals.find(s.drive);
  const Inputs::StepTotals totals =
      totals_it == s.inputs->step_totals.end() ? Inputs::StepTotals{} : totals_it->second;
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
    const auto theirs = steps_of(s.baseline);
    StepPick p{"baseline", s.baseline, theirs.empty() ? nullptr : theirs.back()};
    if (!p.step) p.note = "no pass on record";
    picks.push_back(p);
  }
  Json& runs = section["runs"];
  for (const StepPick& p : picks) {
    Json row = Json::Object();
    row["label"] = p.label;
    row["drive"] = p.drive;
    if (!p.step) {
      row["run"] = Json();
      row["note"] = p.note;
    } else {
      Json& run = row["run"];
      run["id"] = p.step->run;
      run["phase"] = p.step->phase;
      run["kind"] = "endurance";
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
    runs.Push(std::move(row));
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
  auto table_of = [&](std::string id, std::string title,
                      const std::vector<std::pair<std::string, const Step*>>& rows) {
    Json t = Json::Object();
    t["id"] = std::move(id);
    t["title"] = std::move(title);
    Json& cols = t["columns"];
    cols = Json::Array();
    cols.Push(Column("pass", "pass", "count"));
    for (const Field& f : kFields) cols.Push(Column(f.key, f.label, f.unit));
    Json& out = t["rows"];
    out = Json::Array();
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
      out.Push(std::move(row));
    }
    return t;
  };
  std::vector<std::pair<std::string, const Step*>> rows;
  for (const StepPick& p : picks) rows.emplace_back(p.label, p.step);
  section["tables"].Push(table_of("endurance", "Passes over the whole drive", rows));
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
    section["tables"].Push(table_of("passes", "Every pass of the drive", all));
    if (from > 0)
      section["notes"].Push(
          Format("the first %zu passes are left out of the list", static_cast<std::size_t>(from)));
  }
  // Where the test is, from the drive's latest endurance run that wrote
  // (whatever its outcome: a test of months is runs cut short by
  // max_duration), so a test without a full pass yet shows what it wrote.
  const Run* latest_run = nullptr;
  for (const Run& r : s.inputs->runs) {
    if (r.drive == s.drive && r.kind == "endurance" && r.outcome != "refused" &&
        r.Result("host_written_bytes")) {
      latest_run = &r;
    }
  }
  if (latest_run) {
    Json t = Json::Object();
    t["id"] = "endurance_progress";
    t["title"] = "Where the test is";
    Json& cols = t["columns"];
    cols = Json::Array();
    cols.Push(Column("outcome", "latest run", "text"));
    cols.Push(Column("host_written_bytes", "written by the test", "bytes"));
    cols.Push(Column("drive_writes_ratio", "drive writes", "x"));
    cols.Push(Column("target_progress_ratio", "toward its end", "percent"));
    cols.Push(Column("run_written_bytes", "written by the run", "bytes"));
    Json row = Row(latest_run->id);
    row["values"]["outcome"] = latest_run->outcome;
    for (const char* key :
         {"host_written_bytes", "drive_writes_ratio", "target_progress_ratio", "run_written_bytes"}) {
      row["values"][key] = Value(latest_run->Result(key));
    }
    t["rows"] = Json::Array();
    t["rows"].Push(std::move(row));
    section["tables"].Push(std::move(t));
  }
  section["expectation"] =
      "Writing the drive over and over wears it: Percentage Used grows by about 100 % over its "
      "rated drive writes, the write amplification (WAF) stays near 1 for sequential writes and "
      "a few for JESD219's mix. Rule: a media error during the test, or available spare at its "
      "threshold, fails it.";
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
    section["notes"].Push("no endurance pass of this drive on record");
  }
  return section;
}

std::vector<Json> RetentionSections(const Selection& s) {
  namespace rr = retention_report_detail;
  std::vector<Json> out;
  const Study* baseline_study = nullptr;
  for (const Study& st : s.inputs->studies) {
    if (st.record && !s.baseline.empty() && st.drive == s.baseline) baseline_study = &st;
  }
  for (const Study& st : s.inputs->studies) {
    if (!st.record || st.drive != s.drive) continue;
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
    Json table = Json::Object();
    table["id"] = "reads";
    table["title"] = "Read latency of the whole region at each read";
    Json& cols = table["columns"];
    cols = Json::Array();
    for (auto [key, label, unit] :
         {std::tuple{"date", "date", "text"}, std::tuple{"age_seconds", "age", "days"},
          std::tuple{"equivalent_age_seconds", "equivalent age", "days"},
          std::tuple{"p50_seconds", "p50", "ms"}, std::tuple{"p99_seconds", "p99", "ms"},
          std::tuple{"p99_9_seconds", "p99.9", "ms"}, std::tuple{"max_seconds", "max", "ms"},
          std::tuple{"reads_timed", "n", "count"},
          std::tuple{"over_10ms_ratio", "reads over 10 ms", "percent"},
          std::tuple{"reads_over_100ms", "reads over 100 ms", "count"},
          std::tuple{"bad_blocks", "bad blocks", "count"}}) {
      cols.Push(Column(key, label, unit));
    }
    Json& rows = table["rows"];
    rows = Json::Array();
    Json chart = LineChart("retention_" + st.name, "Read latency tail: baseline and each verify",
                           ChartAxis("read latency", "latency", true),
                           ChartAxis("reads slower than this", "share", true));
    for (const auto& [label, r] : reads) {
      Json row = Row(label);
      Json& v = row["values"];
      v["date"] = rr::Utc(r->start, "%Y-%m-%d");
      v["age_seconds"] = Value(rr::Num(*r->json, {"age_seconds"}));
      v["equivalent_age_seconds"] = Value(rr::Num(*r->json, {"equivalent_age_seconds"}));
      v["p50_seconds"] = Value(r->p50);
      v["p99_seconds"] = Value(r->p99);
      v["p99_9_seconds"] = Value(r->p999);
      v["max_seconds"] = Value(r->max);
      const std::optional<double> n =
          r->histogram ? std::optional<double>(static_cast<double>(r->reads)) : std::nullopt;
      v["reads_timed"] = Value(n);
      for (auto [key, q] : {std::pair{"p99_seconds", 0.99}, std::pair{"p99_9_seconds", 0.999}}) {
        if (const std::string mark = TailMark(n, q); !mark.empty()) row["marks"][key] = mark;
      }
      v["over_10ms_ratio"] = Value(r->over10);
      v["reads_over_100ms"] = r->over100 ? Json(r->SlowReads()) : Json();
      v["bad_blocks"] = r->bad_total;
      rows.Push(std::move(row));
      if (r->histogram && r->histogram->count() != 0) {
        Points points;
        const auto tail = rr::LatencyTail(*r->histogram);
        // Every step of a fine histogram is more than a chart can show.
        const std::size_t every = tail.size() / 160 + 1;
        for (std::size_t i = 0; i < tail.size(); ++i) {
          if (i % every == 0 || i + 1 == tail.size()) points.emplace_back(tail[i].x, tail[i].y);
        }
        AddLine(chart, label, points, label == "baseline" || label.rfind("baseline drive", 0) == 0);
      }
    }
    AddMarker(chart, rr::kSlowReadSeconds, "100 ms limit");
    const bool indicative = AnyIndicative(table);
    section["tables"].Push(std::move(table));
    if (indicative) section["notes"].Push(std::string(kIndicativeNote));
    // How each distribution was taken: a 4 KiB QD1 sample, or (recorded
    // before it) the verify's own large reads, which are not the same
    // measure as the reference report's.
    section["notes"].Push(sum.MethodNote());
    if (theirs && !theirs->reads.empty()) {
      section["notes"].Push("baseline drive: " + theirs->MethodNote());
    }
    if (!chart["series"].items().empty()) section["charts"].Push(std::move(chart));
    Json link = Json::Object();
    link["label"] = "the study's own report";
    link["href"] = RetentionReportFileName(st.name);
    link["command"] = "drivewatch retention report " + st.name + " --format=html";
    section["links"] = Json::Array();
    section["links"].Push(std::move(link));
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
    out.push_back(std::move(section));
  }
  if (out.empty()) {
    Json section = Section("retention", "Retention");
    section["expectation"] =
        "Data written before months of storage reads back intact and as fast as right after the "
        "write. Rule: every block intact and no read over 100 ms.";
    section["notes"].Push("no retention study of this drive (docs/retention.md)");
    out.push_back(std::move(section));
  }
  return out;
}

}  // namespace drivewatch::aging::drive_report_detail
