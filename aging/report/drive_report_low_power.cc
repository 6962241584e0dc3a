// SPDX-License-Identifier: Apache-2.0
// `drivewatch report`'s low power section: power when idle and at 10
// IOPS, and each power state's power and exit latency.
#include <algorithm>

#include "aging/report/drive_report_detail.h"
#include "aging/report/report_format.h"
#include "config/kinds/power_states.h"

namespace drivewatch::aging::drive_report_detail {
namespace {

using report_format::Format;

constexpr double kLowIdleWatts = 0.010;
constexpr double kLowTenIopsWatts = 0.100;

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

// A state's power, its measured exit latency (p50), its declared one.
std::optional<double> StatePower(const Run& r, int n) {
  auto p = Power(r, Format("ps%d", n));
  return p ? std::optional<double>(p->first) : std::nullopt;
}
std::optional<double> StateExit(const Run& r, int n) {
  return r.Result(Format("ps%d_exit_latency_p50_seconds", n));
}
std::optional<double> Declared(const Run& r, int n) {
  return r.Result(Format("ps%d_exit_latency_declared_seconds", n));
}

// Idle, the deepest state and 10 IOPS, a row each pick.
Json LowPowerTable(const std::vector<Pick>& picks) {
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
  return RunTable(
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
       {"at_10_iops_power_source", "10 IOPS measured by", "text", source("at_10_iops"), nullptr}});
}

// The power states any row has results for, in order.
std::vector<int> AllStates(const std::vector<Pick>& picks) {
  std::vector<int> states;
  for (const Pick& p : picks) {
    if (!p.run) continue;
    for (int n : StatesOf(*p.run)) {
      if (std::find(states.begin(), states.end(), n) == states.end()) states.push_back(n);
    }
  }
  std::sort(states.begin(), states.end());
  return states;
}

// Each power state a row: every pick's power and exit latency, and the
// latest's declared exit latency.
Json PerStateTable(const std::vector<Pick>& picks, const std::vector<int>& states,
                   const Pick* latest) {
  Json per_state = Json::object();
  per_state["id"] = "power_states";
  per_state["title"] = "Each power state: power and measured exit latency";
  Json& columns = per_state["columns"];
  columns = Json::array();
  Json& rows = per_state["rows"];
  rows = Json::array();
  for (const Pick& p : picks) {
    columns.push_back(Column(p.label + "_power_watts", p.label + " power", "mW"));
    columns.push_back(Column(p.label + "_exit_latency_p50_seconds", p.label + " exit", "us"));
  }
  columns.push_back(Column("exit_latency_declared_seconds", "declared EXLAT", "us"));
  for (int n : states) {
    Json row = Row(Format("ps%d", n));
    for (const Pick& p : picks) {
      row["values"][p.label + "_power_watts"] = p.run ? Value(StatePower(*p.run, n)) : Json();
      row["values"][p.label + "_exit_latency_p50_seconds"] =
          p.run ? Value(StateExit(*p.run, n)) : Json();
    }
    row["values"]["exit_latency_declared_seconds"] =
        latest ? Value(Declared(*latest->run, n)) : Json();
    rows.push_back(std::move(row));
  }
  return per_state;
}

// Rule: idle under 10 mW and 10-IOPS power under 100 mW is low power.
void AddLowPowerVerdict(Json& section, const Pick& latest) {
  const auto idle = Power(*latest.run, "idle");
  const auto ten = Power(*latest.run, "at_10_iops");
  if (idle && ten) {
    std::string line = latest.label + ": idle " + Show(idle->first, "mW") + ", at 10 IOPS " +
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

// Bar charts of each state's power and exit latency.
void AddPowerStateCharts(Json& section, const std::vector<Pick>& picks,
                         const std::vector<int>& states, const Pick* latest) {
  std::vector<std::string> groups;
  for (int n : states) groups.push_back(Format("ps%d", n));
  Json power = BarChart("power_states_power", "Power in each state", groups,
                        ChartAxis("power", "mW", true));
  Json exit = BarChart("power_states_exit", "Exit latency of each state", groups,
                       ChartAxis("exit latency", "\xc2\xb5s", true));
  for (const Pick& p : picks) {
    std::vector<std::optional<double>> mw = Across(states, p.run, StatePower);
    for (auto& v : mw) {
      if (v) *v *= 1e3;
    }
    AddBars(power, p.label, mw);
    std::vector<std::optional<double>> us = Across(states, p.run, StateExit);
    for (auto& v : us) {
      if (v) *v *= 1e6;
    }
    AddBars(exit, p.label, us);
  }
  std::vector<std::optional<double>> us =
      Across(states, latest ? latest->run : nullptr, Declared);
  for (auto& v : us) {
    if (v) *v *= 1e6;
  }
  AddBars(exit, "declared", us);
  section["charts"].push_back(std::move(power));
  section["charts"].push_back(std::move(exit));
}

}  // namespace

Json LowPowerSection(const Selection& s) {
  Json section = Section("low_power", "Low power");
  const auto picks = PickRuns(s, [](const Run& r) {
    return r.kind == config::PowerStatesParams::kName &&
           (Power(r, "idle") || Power(r, "at_10_iops") || !StatesOf(r).empty());
  });
  section["runs"] = RunsJson(picks);
  section["tables"].push_back(LowPowerTable(picks));
  const std::vector<int> states = AllStates(picks);
  const Pick* latest = Latest(picks);
  if (!states.empty()) section["tables"].push_back(PerStateTable(picks, states, latest));

  section["expectation"] =
      "Idle with APST on, a client drive sits in its deepest non-operational state and draws a "
      "few mW (the reference drive: 3.3 mW, PS4 exit about 23.8 ms); at 10 IOPS it should get "
      "back there between reads, not stay at active power (the reference drive drew 1.2 W). "
      "Rule: idle under 10 mW and 10-IOPS power under 100 mW is low power.";
  if (latest) AddLowPowerVerdict(section, *latest);
  if (!states.empty()) AddPowerStateCharts(section, picks, states, latest);
  return section;
}

}  // namespace drivewatch::aging::drive_report_detail
