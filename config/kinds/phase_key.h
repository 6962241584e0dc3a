// SPDX-License-Identifier: Apache-2.0
// What every phase kind is made of: a key of [[aging.phases]] (PhaseKey),
// and the keys more than one kind shares. Each kind has its own header
// beside this one; config/phase_kinds.h lists them.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string_view>

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

// The retention kinds' keys (docs/retention.md).
inline constexpr PhaseKey kStudyKey{
    .name = "study", .type = PhaseKeyType::kName,
    .missing = "missing study (expected the retention study's name, e.g. study = "
               "\"lab-2026-q4\")",
    .doc = "The retention study's name."};

// Each struct's Keys(self, f) calls f(key, member) for every key of the
// kind, in the order ToToml() writes them; `Self` is the struct, const or
// not.

}  // namespace drivewatch::config
