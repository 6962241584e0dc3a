// SPDX-License-Identifier: Apache-2.0
// perf: a matrix of measurements at the target's current fill level (run
// it after fills to 10% and 50%), each cell a workload of its own over the
// written part of the target, so reads hit data the drive really stores (an
// unwritten LBA reads back as zeros without touching the media) and writes
// overwrite it without changing the fill level.
//
// The matrix is the phase's cells, after its preset's (config/kinds/perf.h,
// PresetCells); with neither, the built-in one, whose results keep the keys
// they have always had:
//   sequential read and write, 128 KiB at queue_depth: bytes/s
//   random 4 KiB read and write at queue_depth: IOPS
//   random 512 B read and write at QD1: p50 and p99.9 latency (at the
//     logical block size when the target's is larger than 512 B)
//   mixed random 4 KiB 90/10 and 50/50 read/write at perf_mixed_iops: the
//     achieved IOPS and each operation's p99.9.
// A configured cell reports <cell>_bytes_per_second, <cell>_iops and, for
// each operation it has, <cell>_<op>_p50/_p99/_p99_9_seconds.
//
// SNIA SSS PTS preparation (PTS 2.0.2): `purge` deallocates the whole
// target first; `precondition` then writes it twice over in 128 KiB
// sequential writes (workload-independent preconditioning), each pass a
// write pass of its own through the write gate. With `steady_state` each
// cell runs in rounds of its own workload (workload-dependent
// preconditioning) until the last five are steady (aging/phases/steady_state.h)
// or max_rounds, and its results are the last five rounds': the PTS's
// measurement window.
#include <algorithm>
#include <cmath>
#include <optional>

#include "aging/phases/phase.h"
#include "aging/phases/steady_state.h"

namespace drivewatch::aging {
namespace {

// How a cell's results are named: a configured cell reports everything; a
// cell of the built-in matrix the keys it has always had, so dashboards and
// alert rules written for them keep working.
enum class Naming { kFull, kThroughput, kIops, kQd1Latency, kPacedMix };

struct Cell {
  config::PerfCell def;
  Naming naming = Naming::kFull;
};

// Preconditioning as the PTS writes it: 128 KiB sequential, twice the
// capacity, here at QD32 in two passes.
constexpr std::uint32_t kPreconditionBlock = 128 * 1024;
constexpr std::uint32_t kPreconditionQueueDepth = 32;
constexpr int kPreconditionPasses = 2;

// The built-in matrix (config::DefaultPerfCells), with the result keys its
// cells have always had, so dashboards and alert rules written for them
// keep working.
std::vector<Cell> BuiltInMatrix(const config::PerfParams& p, std::uint32_t logical_block) {
  std::vector<Cell> out;
  for (const config::PerfCell& c : config::DefaultPerfCells(p, logical_block)) {
    const Naming naming = c.access == "sequential"        ? Naming::kThroughput
                          : c.operation == "mix"          ? Naming::kPacedMix
                          : c.name.rfind("qd1_", 0) == 0 ? Naming::kQd1Latency
                                                          : Naming::kIops;
    out.push_back(Cell{c, naming});
  }
  return out;
}

std::vector<Cell> Matrix(const config::PerfParams& p, std::uint32_t logical_block) {
  if (!p.preset && p.cells.empty()) return BuiltInMatrix(p, logical_block);
  std::vector<Cell> m;
  if (p.preset == "builtin") {
    m = BuiltInMatrix(p, logical_block);
  } else if (p.preset) {
    for (const config::PerfCell& c : config::PresetCells(*p.preset)) m.push_back(Cell{c});
  }
  for (const config::PerfCell& c : p.cells) m.push_back(Cell{c});
  return m;
}

std::uint32_t ReadPercent(const config::PerfCell& c) {
  if (c.operation == "mix") return c.read_percent.value_or(0);
  return c.operation == "read" ? 100 : 0;
}

// The cell's workload over [0, region) of the target; `round` varies the
// random order and the data from one round to the next.
WorkloadSpec SpecOf(const config::PerfCell& c, std::size_t index, std::size_t round,
                    std::uint64_t region, std::chrono::milliseconds default_duration) {
  WorkloadSpec spec;
  spec.access = c.access == "sequential" ? Access::kSequential : Access::kRandom;
  spec.read_percent = ReadPercent(c);
  spec.trim_percent = c.operation == "trim" ? 100 : 0;
  spec.write_percent = 100 - spec.read_percent - spec.trim_percent;
  spec.block_size = c.block_size;
  spec.queue_depth = c.queue_depth;
  spec.jobs = c.jobs;
  spec.rate_iops = c.rate_iops.value_or(0);
  spec.length = region / spec.block_size * spec.block_size;
  spec.wrap = true;
  if (c.bytes) {
    spec.max_bytes = *c.bytes;
  } else {
    spec.max_time = c.duration.value_or(default_duration);
  }
  spec.seed = index + 1 + round * 0x10000;
  spec.data_seed = spec.seed;
  return spec;
}

// The cell's definition as the record keeps it (series.cells), so a reader
// of the history knows what each cell measured.
Json Definition(const config::PerfCell& c, std::chrono::milliseconds default_duration) {
  Json d = Json::object();
  d["name"] = c.name;
  d["access"] = c.access;
  d["operation"] = c.operation;
  d["read_percent"] = ReadPercent(c);
  d["block_size"] = c.block_size;
  d["queue_depth"] = c.queue_depth;
  d["jobs"] = c.jobs;
  d["rate_iops"] = c.rate_iops.value_or(0);
  if (c.bytes) {
    d["bytes"] = *c.bytes;
  } else {
    d["duration_seconds"] =
        std::chrono::duration<double>(c.duration.value_or(default_duration)).count();
  }
  return d;
}

// The latencies of a cell's rounds in the measurement window (its
// throughput and IOPS are the mean of the rounds': Report).
struct Measured {
  LatencyHistogram read, write, trim;  // response
  LatencyHistogram read_service, write_service, trim_service;
  void Add(const WorkloadResult& r) {
    read.Merge(r.read_latency);
    write.Merge(r.write_latency);
    trim.Merge(r.trim_latency);
    read_service.Merge(r.read_service);
    write_service.Merge(r.write_service);
    trim_service.Merge(r.trim_service);
  }
};

// The variable steady state tracks: IOPS for random cells, throughput for
// sequential ones.
double Tracked(const config::PerfCell& c, const WorkloadResult& r) {
  if (c.access == "sequential") return r.total.bytes_per_second();
  return r.total.seconds > 0 ? r.total.ios() / r.total.seconds : 0.0;
}


// Every cell records its throughput and IOPS (the mean of its runs, with
// their standard error and count), and for each operation it does p50,
// p99 and p99.9 over all its runs' I/Os with their count. The built-in
// QD1 cells name their quantiles without the operation, as they always
// have.
void Report(const Cell& cell, const WorkloadSpec& spec, const Measured& m,
            const std::vector<const WorkloadResult*>& runs, Json& results, Json& series) {
  const std::string& name = cell.def.name;
  std::vector<double> bps, iops;
  for (const WorkloadResult* r : runs) {
    bps.push_back(r->total.bytes_per_second());
    iops.push_back(r->total.seconds > 0 ? r->total.ios() / r->total.seconds : 0.0);
  }
  const Spread b = SpreadOf(bps), i = SpreadOf(iops);
  results[name + "_bytes_per_second"] = b.mean;
  results[name + "_iops"] = i.mean;
  results[name + "_runs"] = std::uint64_t{b.n};
  if (b.se) results[name + "_bytes_per_second_se"] = *b.se;
  if (i.se) results[name + "_iops_se"] = *i.se;
  Json every = Json::object();
  every["name"] = name;
  every["bytes_per_second"] = Json::array();
  every["iops"] = Json::array();
  for (double x : bps) every["bytes_per_second"].push_back(x);
  for (double x : iops) every["iops"].push_back(x);
  series.push_back(std::move(every));
  const struct {
    const char* op;
    const LatencyHistogram* response;
    const LatencyHistogram* service;
  } ops[] = {{"read", spec.read_percent > 0 ? &m.read : nullptr, &m.read_service},
             {"write", spec.write_percent > 0 ? &m.write : nullptr, &m.write_service},
             {"trim", spec.trim_percent > 0 ? &m.trim : nullptr, &m.trim_service}};
  for (const auto& [op, h, service] : ops) {
    if (h == nullptr) continue;
    const std::string key = cell.naming == Naming::kQd1Latency ? name : name + "_" + op;
    results[key + "_p50_seconds"] = h->Quantile(0.5);
    results[key + "_p99_seconds"] = h->Quantile(0.99);
    results[key + "_p99_9_seconds"] = h->Quantile(0.999);
    results[key + "_ios"] = h->count();  // the samples under the quantiles
    // A paced cell's I/O may wait for a slot past when it was due: the
    // quantiles above count from then (response), these from the
    // submission, as fio times (service). Unpaced, the two are the same.
    if (spec.rate_iops > 0) {
      results[key + "_service_p50_seconds"] = service->Quantile(0.5);
      results[key + "_service_p99_seconds"] = service->Quantile(0.99);
      results[key + "_service_p99_9_seconds"] = service->Quantile(0.999);
    }
  }
  if (cell.naming == Naming::kQd1Latency) results[name + "_block_size_bytes"] = spec.block_size;
}

Status IoErrors(const std::string& step, const WorkloadResult& r) {
  if (r.errors == 0) return Ok{};
  return Error{EIO, -1, step + ": " + std::to_string(r.errors) + " I/O errors, first: " +
                            r.first_error};
}

// purge and precondition (SNIA PTS): each a write pass through ctx.Run,
// which checks the write gate before it. Progress [0, to).
Status Prepare(const config::PerfParams& phase, PhaseContext& ctx, double to,
               PhaseReport& report) {
  const std::uint64_t capacity = ctx.capacity();
  const int steps = (phase.purge ? 1 : 0) + (phase.precondition ? kPreconditionPasses : 0);
  int step = 0;
  const auto from = [&] { return to * step / steps; };
  if (phase.purge) {
    // The capacity is whole MiB: 2 MiB deallocates where they divide it.
    WorkloadSpec purge;
    purge.read_percent = purge.write_percent = 0;
    purge.trim_percent = 100;
    purge.access = Access::kSequential;
    purge.block_size = capacity % (2u << 20) == 0 ? 2u << 20 : 1u << 20;
    purge.queue_depth = 1;
    auto r = ctx.Run(purge, "purge", from(), to * (step + 1) / steps);
    if (!r) return r.error();
    report.results["purged_bytes"] = r->total.trim_bytes;
    if (ctx.stopped()) return Ok{};
    if (Status s = IoErrors("purge", *r); !s) return s;
    ++step;
    ctx.Checkpoint(report);
  }
  if (phase.precondition) {
    std::uint64_t written = 0;
    for (int pass = 1; pass <= kPreconditionPasses; ++pass) {
      WorkloadSpec fill;
      fill.access = Access::kSequential;
      fill.block_size = kPreconditionBlock;
      fill.queue_depth = kPreconditionQueueDepth;
      fill.seed = fill.data_seed = 0x5EED0000 + pass;
      const std::string name = "precondition " + std::to_string(pass) + "/" +
                               std::to_string(kPreconditionPasses);
      auto r = ctx.Run(fill, name, from(), to * (step + 1) / steps);
      if (!r) return r.error();
      written += r->total.write_bytes;
      report.results["preconditioned_bytes"] = written;
      if (ctx.stopped()) return Ok{};
      if (Status s = IoErrors(name, *r); !s) return s;
      ++step;
      ctx.Checkpoint(report);
    }
  }
  return Ok{};
}

// A cell's rounds (runs, or rounds to steady state) as they ran.
struct CellRounds {
  std::vector<WorkloadResult> rounds;
  std::vector<double> tracked;
  std::optional<SteadyStateWindow> window;
  WorkloadSpec spec;  // the last round's
  Status io = Ok{};   // I/O errors: the cell is reported, then the run fails
  bool stopped = false;  // the phase was stopped in a round
};

// Runs cell `index` of the matrix over [0, region) between progress `from`
// and `to`: without steady_state `runs` times, and again while the standard
// error of its mean is over max_standard_error of it, up to max_runs (the
// Phoronix Test Suite's way); with it, until the last five rounds are
// steady or max_rounds. An Error: a round could not run.
Status RunRounds(const config::PerfParams& phase, PhaseContext& ctx, const Cell& cell,
                 std::size_t index, std::uint64_t region, double from, double to,
                 CellRounds& out) {
  const std::size_t runs_min = phase.steady_state ? 1 : phase.runs;
  const std::size_t rounds_max =
      phase.steady_state ? phase.max_rounds : std::max(phase.runs, phase.max_runs);
  std::uint64_t start = 0;
  for (std::size_t round = 0; round < rounds_max && out.io; ++round) {
    out.spec = SpecOf(cell.def, index, round, region, phase.perf_duration);
    out.spec.start = start < out.spec.length ? start : 0;
    auto r = ctx.Run(out.spec, cell.def.name,
                     from + (to - from) * static_cast<double>(round) / rounds_max,
                     from + (to - from) * static_cast<double>(round + 1) / rounds_max);
    if (!r) return r.error();
    if (ctx.stopped()) {
      out.stopped = true;
      return Ok{};
    }
    out.io = IoErrors(cell.def.name, *r);
    start = r->next_start;
    out.tracked.push_back(Tracked(cell.def, *r));
    out.rounds.push_back(std::move(*r));
    if (!out.io) break;
    if (phase.steady_state) {
      out.window = CheckSteadyState(out.tracked);
      if (out.window && out.window->steady) break;
      continue;
    }
    if (out.rounds.size() < runs_min) continue;
    const Spread spread = SpreadOf(out.tracked);
    if (!spread.se || *spread.se <= phase.max_standard_error * spread.mean) break;
  }
  return Ok{};
}

// With steady_state: whether the cell reached it, and its rounds'
// values in series.steady_state; `first` is the window's first round.
void ReportSteadyState(const Cell& cell, const CellRounds& c, std::size_t first,
                       PhaseReport& report) {
  const bool steady = c.window && c.window->steady;
  report.results[cell.def.name + "_steady_state_ratio"] = steady ? 1.0 : 0.0;
  Json s = Json::object();
  s["name"] = cell.def.name;
  s["tracked"] = cell.def.access == "sequential" ? "bytes_per_second" : "iops";
  s["steady"] = steady;
  s["rounds"] = c.rounds.size();
  Json values = Json::array();
  for (double v : c.tracked) values.push_back(v);
  s["values"] = values;
  s["window_first_round"] = first + 1;
  if (c.window) {
    s["average"] = c.window->average;
    s["range"] = c.window->range;
    s["slope"] = c.window->slope;
    s["excursion"] = c.window->excursion;
  }
  report.series["steady_state"].push_back(s);
}

}  // namespace

Status RunKind(const config::PerfParams& phase, PhaseContext& ctx, PhaseReport& report) {
  const std::uint64_t capacity = ctx.capacity();
  const std::uint32_t logical_block = ctx.logical_block_size();
  const std::vector<Cell> matrix = Matrix(phase, logical_block);

  // check-config refuses what it can see; the target's logical block size
  // is only certain now. Nothing has been written yet.
  for (const Cell& c : matrix) {
    if (c.def.block_size % logical_block == 0) continue;
    return Error{EPERM, -1,
                 "cell " + c.def.name + ": block_size " + config::FormatSize(c.def.block_size) +
                     " is not a multiple of the target's logical block size " +
                     config::FormatSize(logical_block) + " (expected a multiple of " +
                     config::FormatSize(logical_block) + " in [[aging.phases.cells]] of phase " +
                     ctx.phase().name + ")"};
  }

  Json definitions = Json::array();
  for (const Cell& c : matrix) definitions.push_back(Definition(c.def, phase.perf_duration));
  report.series["cells"] = definitions;

  const double prepared = phase.precondition ? 0.5 : phase.purge ? 0.05 : 0;
  if (phase.purge || phase.precondition) {
    // What the run set out to do to the target, on record before it starts:
    // the fill level it leaves depends on it (LastFillRatio).
    Json steps = Json::array();
    if (phase.purge) steps.push_back("purge");
    if (phase.precondition) steps.push_back("precondition");
    report.series["preparation"] = steps;
    if (Status s = Prepare(phase, ctx, prepared, report); !s) return s;
    if (ctx.stopped()) return Ok{};
  }

  // The written part; the whole target when no fill is on record, when
  // preconditioning wrote all of it, and after a purge (whose cells only
  // write: check-config refuses reads of a purged target).
  const double fill = phase.precondition ? 1.0 : phase.purge ? 0.0 : ctx.fill_ratio();
  std::uint64_t region = capacity;
  if (fill > 0 && fill < 1) {
    region = std::max<std::uint64_t>(
        1u << 20, static_cast<std::uint64_t>(fill * static_cast<double>(capacity)) >> 20 << 20);
  }
  if (fill >= 0) report.results["fill_ratio"] = fill;
  report.results["region_bytes"] = region;

  report.series["runs"] = Json::array();
  const std::size_t n = matrix.size();
  for (std::size_t i = 0; i < n; ++i) {
    const Cell& cell = matrix[i];
    const double from = prepared + (1 - prepared) * static_cast<double>(i) / n;
    const double to = prepared + (1 - prepared) * static_cast<double>(i + 1) / n;
    CellRounds c;
    if (Status s = RunRounds(phase, ctx, cell, i, region, from, to, c); !s) return s;
    if (c.stopped) return Ok{};  // a partial measurement is no result

    // The measurement window: the last five rounds with steady state (all
    // of them when fewer ran), else every run.
    Measured m;
    const std::size_t first =
        phase.steady_state ? c.rounds.size() - std::min(c.rounds.size(), kSteadyStateWindow) : 0;
    std::vector<const WorkloadResult*> window_runs;
    for (std::size_t k = first; k < c.rounds.size(); ++k) {
      m.Add(c.rounds[k]);
      window_runs.push_back(&c.rounds[k]);
    }
    Report(cell, c.spec, m, window_runs, report.results, report.series["runs"]);
    if (phase.steady_state) ReportSteadyState(cell, c, first, report);
    if (!c.io) return c.io;
    ctx.Checkpoint(report);
  }
  return Ok{};
}

// The fill level a perf run leaves, from the level before it. Its cells
// write inside the written part and leave it as it was; a trim cell makes
// holes in it. A purge and a preconditioning (series.preparation) set it:
// the run's fill_ratio once they are done, unknown when they were cut short
// after touching the target.
double FillLevelAfter(const config::PerfParams&, const Json& record, double level) {
  const Json* series = Find(record, "series");
  const Json* preparation = series ? Find(*series, "preparation") : nullptr;
  if (preparation != nullptr && !Items(*preparation).empty()) {
    const Json* results = Find(record, "results");
    const bool touched =
        results && (Find(*results, "purged_bytes") || Find(*results, "preconditioned_bytes"));
    if (std::optional<double> ratio = ResultRatio(record, "fill_ratio")) {
      level = *ratio;
    } else if (touched) {
      return -1;
    }
  }
  const Json* cells = series ? Find(*series, "cells") : nullptr;
  if (cells == nullptr) return level;
  for (const Json& cell : Items(*cells)) {
    const Json* op = Find(cell, "operation");
    const std::string operation = op ? AsString(*op) : "";
    // A purged target's cells write anywhere in it.
    if (operation == "trim" || (level == 0 && operation != "read")) return -1;
  }
  return level;
}

Spread SpreadOf(const std::vector<double>& v) {
  Spread s;
  s.n = v.size();
  if (v.empty()) return s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  if (v.size() < 2) return s;
  double squares = 0;
  for (double x : v) squares += (x - s.mean) * (x - s.mean);
  s.se = std::sqrt(squares / static_cast<double>(v.size() - 1) / static_cast<double>(v.size()));
  return s;
}

}  // namespace drivewatch::aging
