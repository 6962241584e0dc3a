// SPDX-License-Identifier: Apache-2.0
// The heavy phase kinds and the [[aging.phases]] keys each one owns.
//
// A kind is one parameter struct here: its name, whether it writes its
// target, its keys (each a PhaseKey below, bound to the member that holds
// it) and their defaults (the member initializers). PhaseParams lists the
// structs; that list is the registry, and its order is the order in which
// messages and docs name the kinds. The config reads, checks and writes a
// kind's keys from its struct alone (config/config.cc), and aging/phases/phase.h
// declares one RunKind() per struct, so a kind without its story does not
// compile.
//
// Adding a kind: its struct and its place in PhaseParams here, its
// RunKind() in aging/phases/<kind>_phase.cc declared in aging/phases/phase.h, and its
// docs (docs/aging.md, config/drivewatch.toml).
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace drivewatch::config {

// How a phase key's value is written in TOML, and so how it is checked.
enum class PhaseKeyType {
  kSize,          // "128KiB": a whole multiple of `multiple` in [min, max] bytes
  kInteger,       // a whole number in [min, max]
  kNumber,        // an integer or float in [min, max]; `expected` says what
  kDuration,      // "30s" in [min, max] milliseconds
  kDurationList,  // ["1m", "2m"]: 1 to 100 durations in [min, max] milliseconds
  kName,          // letters, digits, _, - and .
  kBool,          // true or false
  kTables,        // [[aging.phases.<name>]]: an array of tables, each with `fields`
  kPath,          // an absolute path
  kText,          // a non-empty string without control characters
  kReplaySpeed,   // "recorded", "max", or a number in [min, max] (ReplaySpeed)
};

// One [[aging.phases]] key of one or more kinds.
struct PhaseKey {
  std::string_view name;
  PhaseKeyType type;
  double min = 0;
  double max = 0;
  std::uint64_t multiple = 1;  // kSize only
  // kNumber: what a good value is ("a percentage of the target from 1 to
  // 100"). kSize: what follows the quoted size that breaks the rule.
  std::string_view expected;
  // Set when every kind with this key needs it: the problem reported when
  // the key is left out.
  std::string_view missing;
  // What the key sets, for drivewatch.toml(5) (through dw_config_schema),
  // which adds its range (PhaseKeyRange) and each kind's default
  // (PhaseValueText of the struct's member initializer): neither is
  // repeated here.
  std::string_view doc;
  // kName: when not empty, the only values allowed.
  std::span<const std::string_view> choices;
  // kTables: the keys of each table.
  std::span<const PhaseKey> fields;
};

inline constexpr double kNoLimit = std::numeric_limits<double>::infinity();

inline constexpr PhaseKey kBlockSizeKey{
    .name = "block_size", .type = PhaseKeyType::kSize, .min = 512, .max = 2 << 20,
    .multiple = 512,
    .expected = " is not a usable block size (expected a multiple of 512B from 512B to 2MiB)",
    .doc = "The size of each I/O."};
inline constexpr PhaseKey kQueueDepthKey{
    .name = "queue_depth", .type = PhaseKeyType::kInteger, .min = 1, .max = 256,
    .doc = "How many I/Os are in flight at once."};
inline constexpr PhaseKey kFillPercentKey{
    .name = "fill_percent", .type = PhaseKeyType::kNumber, .min = 1, .max = 100,
    .expected = "a percentage of the target from 1 to 100",
    .doc = "How much of the target is filled, in percent."};
// fill and reclaim: the SLC cache has run out when throughput stays below
// slc_drop_fraction of the initial plateau for slc_sustain, on a rolling
// median over slc_median_window (aging/phases/slc_cache.h).
inline constexpr PhaseKey kSlcDropFractionKey{
    .name = "slc_drop_fraction", .type = PhaseKeyType::kNumber, .min = 0.05, .max = 0.95,
    .expected = "a fraction of the initial throughput from 0.05 to 0.95",
    .doc = "The SLC cache has run out when throughput stays below this fraction of "
           "the initial plateau."};
inline constexpr PhaseKey kSlcSustainKey{
    .name = "slc_sustain", .type = PhaseKeyType::kDuration, .min = 1'000, .max = 3'600'000,
    .doc = "How long throughput must stay below slc_drop_fraction."};
inline constexpr PhaseKey kSlcMedianWindowKey{
    .name = "slc_median_window", .type = PhaseKeyType::kDuration, .min = 1'000, .max = 60'000,
    .doc = "The rolling median window over the 1 s throughput series."};
inline constexpr PhaseKey kReclaimIdleKey{
    .name = "reclaim_idle", .type = PhaseKeyType::kDurationList, .min = 1'000,
    .max = 86'400'000,
    .doc = "The idle times tried in turn."};
inline constexpr PhaseKey kReclaimWriteKey{
    .name = "reclaim_write", .type = PhaseKeyType::kDuration, .min = 1'000, .max = 86'400'000,
    .doc = "How long to write after each idle time."};
inline constexpr PhaseKey kPerfDurationKey{
    .name = "perf_duration", .type = PhaseKeyType::kDuration, .min = 1'000, .max = 3'600'000,
    .doc = "How long each measurement runs."};
inline constexpr PhaseKey kPerfMixedIopsKey{
    .name = "perf_mixed_iops", .type = PhaseKeyType::kNumber, .min = 1, .max = 1e6,
    .expected = "I/Os per second from 1 to 1000000",
    .doc = "The fixed rate of the mixed read/write loads, in I/Os per second."};
inline constexpr PhaseKey kTrimPercentKey{
    .name = "trim_percent", .type = PhaseKeyType::kNumber, .min = 1, .max = 100,
    .expected = "a percentage of the target from 1 to 100",
    .doc = "The share of the target trimmed, from its start, in percent."};
// The retention kinds' keys (docs/retention.md).
inline constexpr PhaseKey kStudyKey{
    .name = "study", .type = PhaseKeyType::kName,
    .missing = "missing study (expected the retention study's name, e.g. study = "
               "\"lab-2026-q4\")",
    .doc = "The retention study's name."};
// The region of the target a study covers: [offset, offset + length), a
// length of 0 reaching to the end.
inline constexpr PhaseKey kRegionOffsetKey{
    .name = "offset", .type = PhaseKeyType::kSize, .min = 0, .max = kNoLimit,
    .multiple = 1 << 20,
    .expected = " is not a whole number of MiB (expected a multiple of 1MiB, such as \"1GiB\")",
    .doc = "Where the study's region starts, in whole MiB."};
inline constexpr PhaseKey kRegionLengthKey{
    .name = "length", .type = PhaseKeyType::kSize, .min = 0, .max = kNoLimit,
    .multiple = 1 << 20, .expected = kRegionOffsetKey.expected,
    .doc = "How long the study's region is, in whole MiB; \"0B\" reaches to the end."};
inline constexpr PhaseKey kActivationEnergyKey{
    .name = "activation_energy", .type = PhaseKeyType::kNumber, .min = 0.1, .max = 3,
    .expected = "an activation energy in eV from 0.1 to 3",
    .doc = "The Arrhenius activation energy in eV; a model, not a measurement."};
inline constexpr PhaseKey kReferenceTemperatureKey{
    .name = "reference_temperature", .type = PhaseKeyType::kNumber, .min = -40, .max = 125,
    .expected = "a temperature in °C from -40 to 125",
    .doc = "The temperature the equivalent age is expressed at, in °C."};
inline constexpr PhaseKey kStorageTemperatureKey{
    .name = "storage_temperature", .type = PhaseKeyType::kNumber, .min = -40, .max = 125,
    .expected = "a temperature in °C from -40 to 125",
    .doc = "Where the drive sat powered off, in °C; unset leaves that part of the age unknown."};
// The endurance kind's keys (docs/aging.md, "endurance").
inline constexpr std::string_view kEnduranceWorkloads[] = {"sequential", "jesd219"};
inline constexpr PhaseKey kWorkloadKey{
    .name = "workload", .type = PhaseKeyType::kName,
    .doc = "What is written, pass after pass: \"sequential\" block_size writes, or "
           "\"jesd219\", JEDEC JESD219A's enterprise mix of sizes and skewed random offsets.",
    .choices = kEnduranceWorkloads};
inline constexpr PhaseKey kDriveWritesKey{
    .name = "drive_writes", .type = PhaseKeyType::kInteger, .min = 0, .max = 1'000'000,
    .doc = "The phase ends after this many full passes over the target; 0: no bound."};
inline constexpr PhaseKey kPercentageUsedKey{
    .name = "percentage_used", .type = PhaseKeyType::kNumber, .min = 1, .max = 255,
    .expected = "a SMART Percentage Used from 1 to 255",
    .doc = "The phase ends once the drive's SMART Percentage Used is at or above this; "
           "unset: no bound."};
inline constexpr PhaseKey kBytesWrittenKey{
    .name = "bytes_written", .type = PhaseKeyType::kSize, .min = 0, .max = kNoLimit,
    .multiple = 1 << 20,
    .expected = " is not a whole number of MiB (expected a multiple of 1MiB, such as \"100TiB\")",
    .doc = "The phase ends once it has written this much, over all its resumed runs; "
           "\"0B\": no bound."};
inline constexpr PhaseKey kMaxDriveWritesPerDayKey{
    .name = "max_drive_writes_per_day", .type = PhaseKeyType::kNumber, .min = 0.001,
    .max = 1e6, .expected = "drive writes per day from 0.001 to 1000000",
    .doc = "Caps the write rate at this many full target writes per day; unset: as fast "
           "as the drive goes."};

// power-states' keys (docs/aging.md "power-states").
inline constexpr PhaseKey kDwellKey{
    .name = "dwell", .type = PhaseKeyType::kDuration, .min = 100, .max = 3'600'000,
    .doc = "How long the drive stays in each power state while its power is measured; "
           "also the idle and 10-IOPS power windows."};
inline constexpr PhaseKey kExitSamplesKey{
    .name = "exit_samples", .type = PhaseKeyType::kInteger, .min = 1, .max = 1000,
    .doc = "How many timed 4 KiB reads measure each power state's exit latency."};
inline constexpr PhaseKey kSettleKey{
    .name = "settle", .type = PhaseKeyType::kDuration, .min = 1, .max = 3'600'000,
    .doc = "How long to wait after entering a power state before each timed read, so "
           "the drive is in it (at least its ENLAT)."};

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
// replay's keys (docs/aging.md "replay").
inline constexpr PhaseKey kTraceKey{
    .name = "trace", .type = PhaseKeyType::kPath,
    .missing = "missing trace (expected the absolute path of a block trace: fio's iolog "
               "version 2 or 3, or blkparse's default output)",
    .doc = "The block trace replayed: fio's iolog version 2 or 3, or the text blkparse "
           "prints, told apart by its first line. Read when the config is loaded and again "
           "when the phase runs."};
inline constexpr PhaseKey kTraceDeviceKey{
    .name = "trace_device", .type = PhaseKeyType::kText,
    .doc = "Replays only this device's or file's I/O: blkparse's \"MAJ,MIN\" (such as "
           "\"259,0\") or a file name of an iolog; unset: every device and file of the trace, "
           "all onto the one target."};
inline constexpr PhaseKey kReplaySpeedKey{
    .name = "replay_speed", .type = PhaseKeyType::kReplaySpeed, .min = 0.001, .max = 1000,
    .expected = "\"recorded\", \"max\", or a number from 0.001 to 1000 that scales the "
                "recorded rate",
    .doc = "\"recorded\": each I/O is due at its recorded time from the start; \"max\": as "
           "fast as queue_depth allows; a number scales the recorded rate (2: twice as fast)."};

// Each struct's Keys(self, f) calls f(key, member) for every key of the
// kind, in the order ToToml() writes them; `Self` is the struct, const or
// not.

// fill: a sequential fill from an empty drive, measuring the SLC cache.
struct FillParams {
  static constexpr std::string_view kName = "fill";
  static constexpr bool kWrites = true;
  std::uint32_t block_size = 128 * 1024;
  std::uint32_t queue_depth = 32;
  double fill_percent = 50;  // up to here
  double slc_drop_fraction = 0.6;
  std::chrono::milliseconds slc_sustain{10'000};
  std::chrono::milliseconds slc_median_window{5'000};

  template <class Self, class F>
  static void Keys(Self& p, F&& f) {
    f(kBlockSizeKey, p.block_size);
    f(kQueueDepthKey, p.queue_depth);
    f(kFillPercentKey, p.fill_percent);
    f(kSlcDropFractionKey, p.slc_drop_fraction);
    f(kSlcSustainKey, p.slc_sustain);
    f(kSlcMedianWindowKey, p.slc_median_window);
  }
  bool operator==(const FillParams&) const = default;
};

// reclaim: idle for each reclaim_idle, then write for reclaim_write, to see
// how much SLC cache the drive frees while idle.
struct ReclaimParams {
  static constexpr std::string_view kName = "reclaim";
  static constexpr bool kWrites = true;
  std::uint32_t block_size = 128 * 1024;
  std::uint32_t queue_depth = 32;
  double slc_drop_fraction = 0.6;
  std::chrono::milliseconds slc_sustain{10'000};
  std::chrono::milliseconds slc_median_window{5'000};
  std::vector<std::chrono::milliseconds> reclaim_idle{
      std::chrono::milliseconds{60'000}, std::chrono::milliseconds{120'000},
      std::chrono::milliseconds{180'000}, std::chrono::milliseconds{240'000}};
  std::chrono::milliseconds reclaim_write{60'000};

  template <class Self, class F>
  static void Keys(Self& p, F&& f) {
    f(kBlockSizeKey, p.block_size);
    f(kQueueDepthKey, p.queue_depth);
    f(kSlcDropFractionKey, p.slc_drop_fraction);
    f(kSlcSustainKey, p.slc_sustain);
    f(kSlcMedianWindowKey, p.slc_median_window);
    f(kReclaimIdleKey, p.reclaim_idle);
    f(kReclaimWriteKey, p.reclaim_write);
  }
  bool operator==(const ReclaimParams&) const = default;
};

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

// trim: fill to fill_percent, trim the first trim_percent, measure.
struct TrimParams {
  static constexpr std::string_view kName = "trim";
  static constexpr bool kWrites = true;
  std::uint32_t block_size = 128 * 1024;
  std::uint32_t queue_depth = 32;
  double fill_percent = 90;
  double trim_percent = 50;

  template <class Self, class F>
  static void Keys(Self& p, F&& f) {
    f(kBlockSizeKey, p.block_size);
    f(kQueueDepthKey, p.queue_depth);
    f(kFillPercentKey, p.fill_percent);
    f(kTrimPercentKey, p.trim_percent);
  }
  bool operator==(const TrimParams&) const = default;
};

// retention-write: starts a retention study on its region, with the
// Arrhenius model of its equivalent age (docs/retention.md): activation
// energy in eV, and the temperature the age is expressed at, in °C.
struct RetentionWriteParams {
  static constexpr std::string_view kName = "retention-write";
  static constexpr bool kWrites = true;
  std::uint32_t block_size = 128 * 1024;
  std::uint32_t queue_depth = 32;
  std::string study;
  std::uint64_t region_offset = 0;  // key "offset", whole MiB
  std::uint64_t region_length = 0;  // key "length", whole MiB; 0: to the end
  double activation_energy = 1.1;
  double reference_temperature = 30;

  template <class Self, class F>
  static void Keys(Self& p, F&& f) {
    f(kBlockSizeKey, p.block_size);
    f(kQueueDepthKey, p.queue_depth);
    f(kStudyKey, p.study);
    f(kRegionOffsetKey, p.region_offset);
    f(kRegionLengthKey, p.region_length);
    f(kActivationEnergyKey, p.activation_energy);
    f(kReferenceTemperatureKey, p.reference_temperature);
  }
  bool operator==(const RetentionWriteParams&) const = default;
};

// retention-verify: reads a study back. It writes nothing.
struct RetentionVerifyParams {
  static constexpr std::string_view kName = "retention-verify";
  static constexpr bool kWrites = false;
  std::uint32_t block_size = 128 * 1024;
  std::uint32_t queue_depth = 32;
  std::string study;
  // Where the drive was stored while powered off, in °C; unset leaves the
  // powered-off part of the age unknown.
  std::optional<double> storage_temperature;

  template <class Self, class F>
  static void Keys(Self& p, F&& f) {
    f(kBlockSizeKey, p.block_size);
    f(kQueueDepthKey, p.queue_depth);
    f(kStudyKey, p.study);
    f(kStorageTemperatureKey, p.storage_temperature);
  }
  bool operator==(const RetentionVerifyParams&) const = default;
};

// power-states: enters each power state the drive lists (Set Features 02h,
// APST off for the while), measures its power and its exit latency, then
// power at idle and at 10 IOPS. It writes no data but changes the drive's
// power settings (restored after, and by recovery after a crash), so it
// runs only on a block device target, which names the drive's serial.
struct PowerStatesParams {
  static constexpr std::string_view kName = "power-states";
  static constexpr bool kWrites = false;
  static constexpr bool kChangesPowerState = true;
  std::chrono::milliseconds dwell{10'000};
  std::uint32_t exit_samples = 20;
  std::chrono::milliseconds settle{1'000};

  template <class Self, class F>
  static void Keys(Self& p, F&& f) {
    f(kDwellKey, p.dwell);
    f(kExitSamplesKey, p.exit_samples);
    f(kSettleKey, p.settle);
  }
  bool operator==(const PowerStatesParams&) const = default;
};

// endurance: writes the target over and over (sequential, or JESD219's
// enterprise mix) until drive_writes passes, percentage_used or
// bytes_written; resumes where it was after a restart.
struct EnduranceParams {
  static constexpr std::string_view kName = "endurance";
  static constexpr bool kWrites = true;
  std::string workload = "sequential";
  std::uint32_t block_size = 128 * 1024;  // sequential only
  std::uint32_t queue_depth = 32;
  std::uint32_t drive_writes = 1;
  std::optional<double> percentage_used;
  std::uint64_t bytes_written = 0;
  std::optional<double> max_drive_writes_per_day;

  template <class Self, class F>
  static void Keys(Self& p, F&& f) {
    f(kWorkloadKey, p.workload);
    f(kBlockSizeKey, p.block_size);
    f(kQueueDepthKey, p.queue_depth);
    f(kDriveWritesKey, p.drive_writes);
    f(kPercentageUsedKey, p.percentage_used);
    f(kBytesWrittenKey, p.bytes_written);
    f(kMaxDriveWritesPerDayKey, p.max_drive_writes_per_day);
  }
  bool operator==(const EnduranceParams&) const = default;
};

// replay_speed: the recorded timing, scaled, or none.
struct ReplaySpeed {
  // "max": as fast as queue_depth allows, the recorded times ignored.
  bool max = false;
  // Otherwise the recorded rate times this ("recorded" is 1; 2 is twice as
  // fast, each I/O due at half its recorded time from the start).
  double scale = 1;
  bool operator==(const ReplaySpeed&) const = default;
};

// What a replay phase's trace held when the config was loaded: not a key,
// filled by the loader's TraceInspector (config.h), which reads the trace
// on the aging side. Until a trace has been read it counts as writing.
struct TraceFacts {
  bool read = false;
  // The line of the trace's first write or trim; 0 when it has none.
  std::uint64_t first_write_line = 0;
  bool operator==(const TraceFacts&) const = default;
};

// replay: replays a block trace onto the target, folded onto its capacity,
// with its recorded timing, scaled, or as fast as queue_depth allows. It
// writes when its trace writes or trims (Writes()): then the interlocks and
// destroy_data apply as for any writing kind; a trace of reads only needs
// the target's serial.
struct ReplayParams {
  static constexpr std::string_view kName = "replay";
  // May write: whether it does is Writes(), per phase.
  static constexpr bool kWrites = true;
  std::string trace;
  std::string trace_device;  // "": every device and file
  ReplaySpeed replay_speed;
  std::uint32_t queue_depth = 32;
  TraceFacts trace_facts;

  bool Writes() const { return !trace_facts.read || trace_facts.first_write_line != 0; }

  template <class Self, class F>
  static void Keys(Self& p, F&& f) {
    f(kTraceKey, p.trace);
    f(kTraceDeviceKey, p.trace_device);
    f(kReplaySpeedKey, p.replay_speed);
    f(kQueueDepthKey, p.queue_depth);
  }
  bool operator==(const ReplayParams&) const = default;
};

// The registry of kinds.
using PhaseParams = std::variant<FillParams, ReclaimParams, PerfParams, TrimParams,
                                 RetentionWriteParams, RetentionVerifyParams,
                                 PowerStatesParams, EnduranceParams, ReplayParams>;

// Calls f(P{}) once for each kind's struct P, in registry order.
template <class F>
void ForEachPhaseKind(F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (f(std::variant_alternative_t<I, PhaseParams>{}), ...);
  }(std::make_index_sequence<std::variant_size_v<PhaseParams>>{});
}

// "fill", "reclaim", ..., in registry order.
std::span<const std::string_view> PhaseKindNames();
// A kind's parameters with their defaults, by its name.
std::optional<PhaseParams> DefaultPhaseParams(std::string_view kind);
std::string_view PhaseKindName(const PhaseParams& params);
// Whether this phase writes its target (all kinds but retention-verify and
// power-states; replay when its trace writes or trims, as far as the config
// knows: ReplayParams::Writes()): it then needs destroy_data on a block
// device, and passes the write gate.
bool PhaseKindWrites(const PhaseParams& params);
// Whether a phase of this kind changes the drive's power settings
// (power-states): it then needs a target that names the drive's serial.
bool PhaseKindChangesPowerState(const PhaseParams& params);
// Whether the kind of `params` has the key `name`.
bool PhaseKindHasKey(const PhaseParams& params, std::string_view name);
// Every kind's keys, each once, in registry order.
std::span<const PhaseKey> PhaseKindKeys();

// A key's allowed values in words, from its type and range: "1s to 1h",
// "a multiple of 512B from 512B to 2MiB", "letters, digits, _, - and .".
std::string PhaseKeyRange(const PhaseKey& key);

// A kind key's value as ToToml() writes it ("128KiB", "10s", 0.6,
// ["1m", "2m"]); an unset optional is "" (ToToml leaves the key out).
std::string PhaseValueText(const PhaseKey& key, std::uint64_t value);
std::string PhaseValueText(const PhaseKey& key, std::uint32_t value);
std::string PhaseValueText(const PhaseKey& key, double value);
std::string PhaseValueText(const PhaseKey& key, bool value);
std::string PhaseValueText(const PhaseKey& key, std::chrono::milliseconds value);
std::string PhaseValueText(const PhaseKey& key, const std::vector<std::chrono::milliseconds>& value);
std::string PhaseValueText(const PhaseKey& key, const std::string& value);
// [{ name = "a", ... }, ...]: one inline table per cell, each on its own
// line (a value may span lines in TOML, even inside an inline table).
std::string PhaseValueText(const PhaseKey& key, const std::vector<PerfCell>& value);
template <class T>
std::string PhaseValueText(const PhaseKey& key, const std::optional<T>& value) {
  return value ? PhaseValueText(key, *value) : std::string();
}
std::string PhaseValueText(const PhaseKey& key, const ReplaySpeed& value);

}  // namespace drivewatch::config
