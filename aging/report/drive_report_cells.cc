// SPDX-License-Identifier: Apache-2.0
// A perf run's cells for `drivewatch report`: its series.cells, each
// checked, or the fixed cells of a run recorded before the perf matrix,
// and the result keys of a cell's latencies and counts.
#include <algorithm>
#include <cmath>
#include <set>
#include <span>
#include <tuple>

#include "aging/report/drive_report_detail.h"
#include "aging/report/report_format.h"

namespace drivewatch::aging::drive_report_detail {
namespace {

using report_format::Format;

// The perf phase's fixed cells before the perf matrix (aging/phases/perf_phase.cc
// at the time): their results keys name them; their queue depth and the
// mixed loads' rate were the config's and are not on record.
struct LegacyCell {
  const char* name;
  const char* access;
  const char* operation;
  double read_percent;
  double block_size;   // 0: from <name>_block_size_bytes
  double queue_depth;  // 0: not recorded
  const char* key;     // a result key the cell always has
};
constexpr LegacyCell kLegacyCells[] = {
    {"seq_read", "sequential", "read", 100, 131072, 0, "seq_read_bytes_per_second"},
    {"seq_write", "sequential", "write", 0, 131072, 0, "seq_write_bytes_per_second"},
    {"rand_read_4k", "random", "read", 100, 4096, 0, "rand_read_4k_iops"},
    {"rand_write_4k", "random", "write", 0, 4096, 0, "rand_write_4k_iops"},
    {"qd1_rand_read", "random", "read", 100, 0, 1, "qd1_rand_read_p99_9_seconds"},
    {"qd1_rand_write", "random", "write", 0, 0, 1, "qd1_rand_write_p99_9_seconds"},
    {"mixed_90_10", "random", "mix", 90, 4096, 0, "mixed_90_10_iops"},
    {"mixed_50_50", "random", "mix", 50, 4096, 0, "mixed_50_50_iops"},
};

bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

std::string SizeText(double bytes) {
  if (bytes >= 1048576 && std::fmod(bytes, 1048576) == 0) return Format("%.0fM", bytes / 1048576);
  if (bytes >= 1024 && std::fmod(bytes, 1024) == 0) return Format("%.0fK", bytes / 1024);
  return Format("%.0fB", bytes);
}

}  // namespace

bool IsLegacyCell(std::string_view name) {
  return std::any_of(std::begin(kLegacyCells), std::end(kLegacyCells),
                     [&](const LegacyCell& l) { return name == l.name; });
}

std::string Cell::Label() const {
  std::string out;
  if (mix()) {
    out = "mix";
    if (read_percent) out += Format(" %.0f/%.0f", *read_percent, 100 - *read_percent);
  } else {
    out = access == "sequential" ? "seq" : access == "random" ? "rand" : "";
    out += (out.empty() ? "" : " ") + (operation.empty() ? name : operation);
  }
  if (block_size) out += " " + SizeText(*block_size);
  if (queue_depth) {
    out += Format(" QD%.0f", *queue_depth);
    if (jobs && *jobs > 1) out += Format("\xc3\x97%.0f", *jobs);
  }
  if (paced()) out += Format(" at %s IOPS", report_format::Grouped(*rate_iops, 0).c_str());
  return out;
}

std::vector<Cell> ParseCells(const Run& run, std::vector<std::string>& problems) {
  std::vector<Cell> out;
  const Json* cells = run.series ? Find(*run.series, "cells") : nullptr;
  if (cells == nullptr) {
    for (const LegacyCell& l : kLegacyCells) {
      if (!run.Result(l.key)) continue;
      Cell c;
      c.name = l.name;
      c.access = l.access;
      c.operation = l.operation;
      c.read_percent = l.read_percent;
      c.block_size = l.block_size != 0 ? std::optional<double>(l.block_size)
                                       : run.Result(std::string(l.name) + "_block_size_bytes");
      if (l.queue_depth != 0) c.queue_depth = l.queue_depth;
      out.push_back(std::move(c));
    }
    return out;
  }
  const std::string where = run.source + ": run " + run.id + ": series.cells";
  if (!cells->is_array()) {
    problems.push_back(where + " is not an array (expected the perf cells): no cell shown");
    return out;
  }
  std::set<std::string> names;
  std::size_t i = 0;
  for (const Json& e : Items(*cells)) {
    const std::string at = where + "[" + std::to_string(i++) + "]";
    const Json* name = Find(e, "name");
    if (!e.is_object() || name == nullptr || !name->is_string() ||
        !ValidName(AsString(*name))) {
      problems.push_back(at + ": no valid name (expected letters, digits, _ . -): left out");
      continue;
    }
    Cell c;
    c.name = AsString(*name);
    if (!names.insert(c.name).second) {
      problems.push_back(at + ": " + c.name + " again: left out");
      continue;
    }
    std::string problem;
    static constexpr std::string_view kAccess[] = {"sequential", "random"};
    static constexpr std::string_view kOperation[] = {"read", "write", "trim", "mix"};
    for (auto [key, field, allowed] :
         {std::tuple{"access", &c.access, std::span<const std::string_view>(kAccess)},
          std::tuple{"operation", &c.operation, std::span<const std::string_view>(kOperation)}}) {
      const Json* v = Find(e, key);
      if (v == nullptr) continue;
      if (!v->is_string() ||
          std::find(allowed.begin(), allowed.end(), AsString(*v)) == allowed.end()) {
        problem = std::string(key) + " is " + DumpJson(*v);
        break;
      }
      *field = AsString(*v);
    }
    for (auto [key, field, most] :
         {std::tuple{"read_percent", &c.read_percent, 100.0},
          std::tuple{"block_size", &c.block_size, 1e12},
          std::tuple{"queue_depth", &c.queue_depth, 1e6}, std::tuple{"jobs", &c.jobs, 1e6},
          std::tuple{"rate_iops", &c.rate_iops, 1e12}}) {
      const Json* v = Find(e, key);
      if (v == nullptr || !problem.empty()) continue;
      const double d = AsDouble(*v, -1);
      if (!v->is_number() || !std::isfinite(d) || d < 0 || d > most) {
        problem = std::string(key) + " is " + DumpJson(*v);
        break;
      }
      *field = d;
    }
    if (!problem.empty()) {
      problems.push_back(at + " (" + c.name + "): " + problem + ": left out");
      continue;
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<double> CellCount(const Run& run, const Cell& cell, std::string_view op) {
  if (auto v = run.Result(cell.name + "_" + std::string(op) + "_ios")) return v;
  if (cell.operation == op) return run.Result(cell.name + "_ios");
  return std::nullopt;
}

std::optional<double> CellLatency(const Run& run, const Cell& cell, std::string_view op,
                                  std::string_view q) {
  const std::string quantile(q);
  if (auto v = run.Result(cell.name + "_" + std::string(op) + "_" + quantile + "_seconds"))
    return v;
  // Before the perf matrix, a QD1 cell did one operation and named its
  // quantiles without it.
  if (cell.operation == op) return run.Result(cell.name + "_" + quantile + "_seconds");
  return std::nullopt;
}

}  // namespace drivewatch::aging::drive_report_detail
