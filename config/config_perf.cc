// SPDX-License-Identifier: Apache-2.0
// The perf kind's own rules: what each cell of its matrix may be, and what
// the matrix as a whole may ask of its target (docs/aging.md "The perf
// matrix"). Everything the workload engine would refuse is refused here
// first, located at the key that breaks it.
#include <string>

#include "config/checks.h"
#include "config/loader.h"
#include "config/phase_kinds.h"
#include "config/workload_limits.h"

namespace drivewatch::config::detail {
namespace {

constexpr std::uint32_t kMaxInFlight = kWorkloadMaxInFlight;
// The keys' own ranges (config/kinds/) are the engine's.
static_assert(kQueueDepthKey.max == kWorkloadMaxQueueDepth);
static_assert(kCellQueueDepthKey.max == kWorkloadMaxQueueDepth);
static_assert(kCellJobsKey.max == kWorkloadMaxJobs);

bool Reads(const PerfCell& cell) { return cell.operation == "read" || cell.operation == "mix"; }

}  // namespace

void Loader::CheckPerfCell(const toml::table& t, const std::string& path, const PerfCell& cell) {
  const auto at = [&](std::string_view key) {
    const toml::node* n = t.get(key);
    return n != nullptr ? n->source().begin : t.source().begin;
  };
  if (cell.operation == "mix" && !cell.read_percent) {
    Report(t.source().begin, path + ".read_percent",
           "missing read_percent (expected the share of reads of operation = \"mix\", e.g. "
           "read_percent = 70)");
  }
  if (cell.operation != "mix" && cell.read_percent) {
    Report(at("read_percent"), path + ".read_percent",
           "operation " + Quote(cell.operation) +
               " has no read percent (expected read_percent only with operation = \"mix\")");
  }
  if (cell.duration && cell.bytes) {
    Report(at("bytes"), path + ".bytes",
           "both duration and bytes are set (expected one of them, or neither for the "
           "phase's perf_duration)");
  }
  if (cell.queue_depth * cell.jobs > kMaxInFlight) {
    Report(at("jobs"), path + ".jobs",
           "queue_depth " + std::to_string(cell.queue_depth) + " x jobs " +
               std::to_string(cell.jobs) + " = " + std::to_string(cell.queue_depth * cell.jobs) +
               " I/Os in flight (expected at most " + std::to_string(kMaxInFlight) + ")");
  }
  if (cell.rate_iops && cell.jobs > 1) {
    Report(at("rate_iops"), path + ".rate_iops",
           "a paced cell runs one job, not " + std::to_string(cell.jobs) +
               " (expected jobs = 1 with rate_iops)");
  }
}

void Loader::CheckPerfPhase(const toml::table& e, const PerfParams& perf,
                            const ReadTarget* target) {
  constexpr std::string_view kPath = "aging.phases";
  const std::span<const PerfCell> preset = perf.preset ? PresetCells(*perf.preset)
                                                       : std::span<const PerfCell>{};
  const toml::node* preset_node = e.get("preset");
  const toml::array* cell_nodes = e.get("cells") ? e.get("cells")->as_array() : nullptr;
  // Where the listed cell i, or its key, is: cells come in the order written.
  const auto cell_at = [&](std::size_t i, std::string_view key) {
    const toml::table* t = cell_nodes && i < cell_nodes->size()
                               ? cell_nodes->get(i)->as_table()
                               : nullptr;
    const toml::node* n = t ? t->get(key) : nullptr;
    return n ? n->source().begin : t ? t->source().begin : e.source().begin;
  };
  const auto cell_key = [&](std::size_t i, std::string_view key) {
    return std::string(kPath) + ".cells[" + std::to_string(i) + "]." + std::string(key);
  };

  if (perf.max_runs < perf.runs) {
    const toml::node* n = e.get("max_runs") ? e.get("max_runs") : e.get("runs");
    Report(n ? n->source().begin : e.source().begin,
           std::string(kPath) + (e.get("max_runs") ? ".max_runs" : ".runs"),
           "max_runs " + std::to_string(perf.max_runs) + " is below runs " +
               std::to_string(perf.runs) + " (expected max_runs >= runs)");
  }
  for (std::size_t i = 0; i < perf.cells.size(); ++i) {
    for (const PerfCell& p : preset) {
      if (p.name != perf.cells[i].name) continue;
      Report(cell_at(i, "name"), cell_key(i, "name"),
             Quote(p.name) + " is already a cell of preset " + Quote(*perf.preset) +
                 " (expected names unique in the phase, preset cells included)");
    }
  }

  if (target != nullptr) {
    const std::optional<LogicalBlockSize> lbs = TargetLogicalBlockSize(
        target->target.block_device, target->target.directory);
    const auto problem = [&](const PerfCell& cell) {
      return Quote(FormatSize(cell.block_size)) + " is not a multiple of the logical block size " +
             FormatSize(lbs->bytes) + " of target " + Quote(target->target.name) + " (" +
             lbs->source + ") (expected a multiple of " + FormatSize(lbs->bytes) + ")";
    };
    // The built-in matrix fits its QD1 cells to the target's block size.
    for (const PerfCell& p : perf.preset == "builtin" ? std::span<const PerfCell>{} : preset) {
      if (!lbs || p.block_size % lbs->bytes == 0) continue;
      Report(preset_node ? preset_node->source().begin : e.source().begin,
             std::string(kPath) + ".preset",
             "cell " + Quote(p.name) + " of preset " + Quote(*perf.preset) + ": block_size " +
                 problem(p));
    }
    for (std::size_t i = 0; i < perf.cells.size(); ++i) {
      if (!lbs || perf.cells[i].block_size % lbs->bytes == 0) continue;
      Report(cell_at(i, "block_size"), cell_key(i, "block_size"), problem(perf.cells[i]));
    }
  }

  if (perf.purge && !perf.precondition) {
    // Without cells or a preset, the built-in matrix reads.
    std::string reader = preset.empty() && perf.cells.empty() ? "seq_read" : "";
    for (const PerfCell& p : preset) {
      if (reader.empty() && Reads(p)) reader = p.name;
    }
    for (const PerfCell& c : perf.cells) {
      if (reader.empty() && Reads(c)) reader = c.name;
    }
    if (const toml::node* purge = e.get("purge"); purge != nullptr && !reader.empty()) {
      Report(purge->source().begin, std::string(kPath) + ".purge",
             "purge without precondition leaves nothing stored, so cell " + Quote(reader) +
                 " would read deallocated blocks, which a drive answers without reading its "
                 "media (expected precondition = true beside purge, or only cells that write "
                 "or trim)");
    }
  }
}

}  // namespace drivewatch::config::detail
