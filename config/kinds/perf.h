// SPDX-License-Identifier: Apache-2.0
// The perf kind and its matrix of cells (its story: aging/phases/perf_phase.cc).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/kinds/phase_key.h"

namespace drivewatch::config {

inline constexpr PhaseKey kPerfDurationKey{
    .name = "perf_duration", .type = PhaseKeyType::kDuration, .min = 1'000, .max = 3'600'000,
    .doc = "How long each measurement runs."};
inline constexpr PhaseKey kPerfMixedIopsKey{
    .name = "perf_mixed_iops", .type = PhaseKeyType::kNumber, .min = 1, .max = 1e6,
    .expected = "I/Os per second from 1 to 1000000",
    .doc = "The fixed rate of the mixed read/write loads, in I/Os per second."};

// perf's matrix (docs/aging.md "The perf matrix"): each [[aging.phases.cells]]
// table is one PerfCell, with these keys.
inline constexpr std::string_view kCellAccesses[] = {"sequential", "random"};
inline constexpr std::string_view kCellOperations[] = {"read", "write", "trim", "mix"};
inline constexpr PhaseKey kCellNameKey{
    .name = "name", .type = PhaseKeyType::kName,
    .missing = "missing name (expected the cell's name, unique in the phase, e.g. name = "
               "\"rand_read_4k_qd1\")",
    .doc = "The cell's name: its results are <name>_bytes_per_second, <name>_iops, ..., "
           "and its metrics carry measure=\"<name>\"."};
inline constexpr PhaseKey kCellAccessKey{
    .name = "access", .type = PhaseKeyType::kName,
    .missing = "missing access (expected \"sequential\" or \"random\")",
    .doc = "How offsets follow one another.", .choices = kCellAccesses};
inline constexpr PhaseKey kCellOperationKey{
    .name = "operation", .type = PhaseKeyType::kName,
    .missing = "missing operation (expected \"read\", \"write\", \"trim\" or \"mix\")",
    .doc = "What each I/O does; \"mix\" reads read_percent of the I/Os and writes the rest.",
    .choices = kCellOperations};
inline constexpr PhaseKey kCellReadPercentKey{
    .name = "read_percent", .type = PhaseKeyType::kInteger, .min = 1, .max = 99,
    .doc = "operation = \"mix\" only: the share of reads, in percent."};
inline constexpr PhaseKey kCellBlockSizeKey{
    .name = "block_size", .type = PhaseKeyType::kSize, .min = 512, .max = 2 << 20,
    .multiple = 512, .expected = kBlockSizeKey.expected,
    .missing = "missing block_size (expected the size of each I/O, e.g. block_size = \"4KiB\")",
    .doc = "The size of each I/O, a multiple of the target's logical block size."};
inline constexpr PhaseKey kCellQueueDepthKey{
    .name = "queue_depth", .type = PhaseKeyType::kInteger, .min = 1, .max = 256,
    .doc = "How many I/Os each job keeps in flight; queue_depth x jobs is at most 256."};
inline constexpr PhaseKey kCellJobsKey{
    .name = "jobs", .type = PhaseKeyType::kInteger, .min = 1, .max = 64,
    .doc = "Independent rings on their own threads, each with queue_depth in flight (fio's "
           "numjobs): results summed, latencies merged."};
inline constexpr PhaseKey kCellRateIopsKey{
    .name = "rate_iops", .type = PhaseKeyType::kNumber, .min = 1, .max = 1e7,
    .expected = "I/Os per second from 1 to 10000000",
    .doc = "Paces the cell at this many I/Os per second (one job); unset: as fast as the "
           "target goes."};
inline constexpr PhaseKey kCellDurationKey{
    .name = "duration", .type = PhaseKeyType::kDuration, .min = 1'000, .max = 86'400'000,
    .doc = "How long the cell runs (one round of it with steady_state); unset, and without "
           "bytes: the phase's perf_duration."};
inline constexpr PhaseKey kCellBytesKey{
    .name = "bytes", .type = PhaseKeyType::kSize, .min = 4096, .max = kNoLimit,
    .multiple = 512,
    .expected = " is not a usable byte count (expected a multiple of 512B, at least 4KiB, "
                "such as \"1GiB\")",
    .doc = "Instead of duration: how many bytes the cell moves (per round with "
           "steady_state)."};
inline constexpr PhaseKey kCellKeys[] = {
    kCellNameKey,       kCellAccessKey,  kCellOperationKey, kCellReadPercentKey,
    kCellBlockSizeKey,  kCellQueueDepthKey, kCellJobsKey,   kCellRateIopsKey,
    kCellDurationKey,   kCellBytesKey};

// One cell of a perf matrix: a workload and its name.
struct PerfCell {
  std::string name;
  std::string access;     // "sequential" or "random"
  std::string operation;  // "read", "write", "trim" or "mix"
  std::optional<std::uint32_t> read_percent;  // "mix" only
  std::uint32_t block_size = 0;
  std::uint32_t queue_depth = 1;
  std::uint32_t jobs = 1;
  std::optional<double> rate_iops;
  std::optional<std::chrono::milliseconds> duration;  // neither: perf_duration
  std::optional<std::uint64_t> bytes;

  template <class Self, class F>
  static void Keys(Self& c, F&& f) {
    f(kCellNameKey, c.name);
    f(kCellAccessKey, c.access);
    f(kCellOperationKey, c.operation);
    f(kCellReadPercentKey, c.read_percent);
    f(kCellBlockSizeKey, c.block_size);
    f(kCellQueueDepthKey, c.queue_depth);
    f(kCellJobsKey, c.jobs);
    f(kCellRateIopsKey, c.rate_iops);
    f(kCellDurationKey, c.duration);
    f(kCellBytesKey, c.bytes);
  }
  bool operator==(const PerfCell&) const = default;
};

inline constexpr std::string_view kPerfPresets[] = {"builtin", "phoronix"};
inline constexpr PhaseKey kPresetKey{
    .name = "preset", .type = PhaseKeyType::kName,
    .doc = "A named matrix run before the listed cells: \"builtin\", the built-in matrix "
           "(so cells add to it), or \"phoronix\", the cells of Phoronix's fio storage runs "
           "(docs/aging.md); unset: only the cells, or without cells the built-in matrix.",
    .choices = kPerfPresets};
inline constexpr PhaseKey kCellsKey{
    .name = "cells", .type = PhaseKeyType::kTables,
    .doc = "The matrix, one [[aging.phases.cells]] table per workload; with neither cells "
           "nor preset, the built-in matrix runs (sequential, random, QD1 and mixed).",
    .fields = kCellKeys};
// SNIA SSS PTS preconditioning and steady state (docs/aging.md).
inline constexpr PhaseKey kPurgeKey{
    .name = "purge", .type = PhaseKeyType::kBool,
    .doc = "Deallocate the whole target before anything else."};
inline constexpr PhaseKey kPreconditionKey{
    .name = "precondition", .type = PhaseKeyType::kBool,
    .doc = "Workload-independent preconditioning before the cells: twice the target's "
           "capacity in 128 KiB sequential writes."};
inline constexpr PhaseKey kSteadyStateKey{
    .name = "steady_state", .type = PhaseKeyType::kBool,
    .doc = "Run each cell in rounds until the last five are in steady state (SNIA SSS PTS) or "
           "max_rounds; the cell's results are the last five rounds'."};
inline constexpr PhaseKey kMaxRoundsKey{
    .name = "max_rounds", .type = PhaseKeyType::kInteger, .min = 5, .max = 1000,
    .doc = "With steady_state: the most rounds a cell runs."};
// How often a perf cell runs (the Phoronix Test Suite's way: docs/aging.md).
inline constexpr PhaseKey kRunsKey{
    .name = "runs", .type = PhaseKeyType::kInteger, .min = 1, .max = 100,
    .doc = "Each cell runs at least this many times; its throughput and IOPS are the mean of "
           "its runs, with their standard error and count, and every run is on record. With "
           "steady_state: the rounds of the measurement window are the runs."};
inline constexpr PhaseKey kMaxRunsKey{
    .name = "max_runs", .type = PhaseKeyType::kInteger, .min = 1, .max = 100,
    .doc = "A cell whose standard error is over max_standard_error of its mean after `runs` "
           "runs again, up to this many runs in all."};
inline constexpr PhaseKey kMaxStandardErrorKey{
    .name = "max_standard_error", .type = PhaseKeyType::kNumber, .min = 0.001, .max = 1,
    .expected = "a fraction of the mean from 0.001 to 1",
    .doc = "The standard error of a cell's mean (its runs' standard deviation over the square "
           "root of their count) that is small enough, as a fraction of the mean: IOPS for "
           "random cells, throughput for sequential ones."};

// perf: a matrix of measurements at the current fill level, each cell
// perf_duration long unless it says otherwise. Without cells or a preset,
// the built-in matrix (whose queue_depth and perf_mixed_iops are the
// phase's keys).
struct PerfParams {
  static constexpr std::string_view kName = "perf";
  static constexpr bool kWrites = true;
  std::uint32_t queue_depth = 32;
  std::chrono::milliseconds perf_duration{30'000};
  double perf_mixed_iops = 1000;  // the fixed rate of the mixed loads
  std::optional<std::string> preset;
  std::vector<PerfCell> cells;
  bool purge = false;
  bool precondition = false;
  bool steady_state = false;
  std::uint32_t max_rounds = 25;
  std::uint32_t runs = 3;
  std::uint32_t max_runs = 10;
  double max_standard_error = 0.02;

  template <class Self, class F>
  static void Keys(Self& p, F&& f) {
    f(kQueueDepthKey, p.queue_depth);
    f(kPerfDurationKey, p.perf_duration);
    f(kRunsKey, p.runs);
    f(kMaxRunsKey, p.max_runs);
    f(kMaxStandardErrorKey, p.max_standard_error);
    f(kPerfMixedIopsKey, p.perf_mixed_iops);
    f(kPresetKey, p.preset);
    f(kCellsKey, p.cells);
    f(kPurgeKey, p.purge);
    f(kPreconditionKey, p.precondition);
    f(kSteadyStateKey, p.steady_state);
    f(kMaxRoundsKey, p.max_rounds);
  }
  bool operator==(const PerfParams&) const = default;
};

// The cells of a preset, in the order they run; empty for a name that is
// none (config/phase_kinds.cc). "builtin" is the built-in matrix as
// DefaultPerfCells gives it for a phase of default keys on 512-byte blocks
// (its names and operations, for the config's checks).
std::span<const PerfCell> PresetCells(std::string_view preset);
// The built-in matrix of phase `p` on a target of `logical_block` bytes:
// sequential read and write (128 KiB at p.queue_depth), random 4 KiB read
// and write, QD1 random read and write of one logical block (512 B at
// least), and 4 KiB 90/10 and 50/50 mixes at p.perf_mixed_iops.
std::vector<PerfCell> DefaultPerfCells(const PerfParams& p, std::uint32_t logical_block);

}  // namespace drivewatch::config
