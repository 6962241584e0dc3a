// SPDX-License-Identifier: Apache-2.0
// The retention-write kind (its story: aging/phases/retention_write_phase.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "config/kinds/phase_key.h"

namespace drivewatch::config {

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

}  // namespace drivewatch::config
