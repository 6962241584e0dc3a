// SPDX-License-Identifier: Apache-2.0
#include "aging/phases/perf_summary.h"

#include <cmath>
#include <cstdio>
#include <optional>

namespace drivewatch::aging {
namespace {

std::optional<double> Number(const Json* object, const std::string& key) {
  const Json* v = object ? Find(*object, key) : nullptr;
  if (v == nullptr || !v->is_number()) return std::nullopt;
  const double d = AsDouble(*v);
  return std::isfinite(d) && d >= 0 ? std::optional<double>(d) : std::nullopt;
}

// `v` as `format` prints it, or "-", right-aligned in `width`.
std::string Column(const char* format, std::optional<double> v, int width) {
  char text[64] = "-";
  if (v) std::snprintf(text, sizeof text, format, *v);
  char buf[80];
  std::snprintf(buf, sizeof buf, " %*s", width, text);
  return buf;
}

}  // namespace

std::string RenderPerfSummary(const Json& record) {
  const Json* kind = Find(record, "kind");
  const Json* series = Find(record, "series");
  const Json* cells = series ? Find(*series, "cells") : nullptr;
  const Json* results = Find(record, "results");
  if (kind == nullptr || AsString(*kind) != "perf" || cells == nullptr ||
      Items(*cells).empty()) {
    return "";
  }
  // Steady state per cell, when the run tracked it.
  const Json* steady = Find(*series, "steady_state");
  std::size_t width = 4;
  for (const Json& c : Items(*cells)) {
    width = std::max(width, Find(c, "name") ? AsString(*Find(c, "name")).size() : 0);
  }
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-*s %10s %10s %11s %13s %13s%s\n", static_cast<int>(width),
                "cell", "MB/s", "MiB/s", "IOPS", "read p99.9", "write p99.9",
                steady ? "  steady state" : "");
  out += line;
  for (const Json& c : Items(*cells)) {
    const Json* n = Find(c, "name");
    if (n == nullptr || !n->is_string()) continue;
    const std::string& name = AsString(*n);
    const std::string operation = Find(c, "operation") ? AsString(*Find(c, "operation")) : "";
    std::optional<double> bps = Number(results, name + "_bytes_per_second");
    std::optional<double> iops = Number(results, name + "_iops");
    // Every I/O of a cell is block_size bytes: one figure gives the other
    // (the built-in matrix records only one of them).
    const std::optional<double> block = Number(&c, "block_size");
    if (block && *block > 0) {
      if (!bps && iops) bps = *iops * *block;
      if (!iops && bps) iops = *bps / *block;
    }
    // A single-operation cell of the built-in matrix names its latency
    // without the operation.
    std::optional<double> read = Number(results, name + "_read_p99_9_seconds");
    std::optional<double> write = Number(results, name + "_write_p99_9_seconds");
    if (!read && operation == "read") read = Number(results, name + "_p99_9_seconds");
    if (!write && operation == "write") write = Number(results, name + "_p99_9_seconds");
    const auto scaled = [](std::optional<double> v, double by) {
      return v ? std::optional<double>(*v / by) : std::nullopt;
    };
    std::string row = name + std::string(width - name.size(), ' ');
    row += Column("%.1f", scaled(bps, 1e6), 10);
    row += Column("%.1f", scaled(bps, 1048576.0), 10);
    row += Column("%.0f", iops, 11);
    row += Column("%.3f ms", scaled(read, 1e-3), 13);
    row += Column("%.3f ms", scaled(write, 1e-3), 13);
    if (steady) {
      std::string state = "-";
      for (const Json& s : Items(*steady)) {
        if (!Find(s, "name") || AsString(*Find(s, "name")) != name) continue;
        const bool reached = Find(s, "steady") && AsBool(*Find(s, "steady"));
        const std::uint64_t rounds = Find(s, "rounds") ? AsUint(*Find(s, "rounds")) : 0;
        state = std::string(reached ? "reached" : "not reached") + ", " +
                std::to_string(rounds) + (rounds == 1 ? " round" : " rounds");
      }
      row += "  " + state;
    }
    out += row + "\n";
  }
  return out;
}

}  // namespace drivewatch::aging
