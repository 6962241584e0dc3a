// SPDX-License-Identifier: Apache-2.0
// Internal to the workload engine (aging/workload*.cc): a spec checked
// against its target into a plan (aging/workload_plan.cc), and the order of
// a run's operations and blocks, inline because the engine asks for one of
// each per I/O (aging/workload.cc).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

#include "aging/data_pattern.h"
#include "aging/workload.h"
#include "probes/expected.h"

namespace drivewatch::aging::workload_detail {

enum class Op : std::uint8_t { kRead, kWrite, kTrim };

// The operation of each I/O, by smooth weighted round robin: every I/O each
// kind earns its percent in credit and the richest kind pays 100. Credits
// return to zero after every 100 I/Os, so each 100 hold the exact shares,
// and any window is within one I/O of them.
class OpMix {
 public:
  OpMix(std::uint32_t read, std::uint32_t write, std::uint32_t trim)
      : weight_{static_cast<int>(read), static_cast<int>(write),
                static_cast<int>(trim)} {}
  Op Next() {
    int best = 0;
    for (int k = 0; k < 3; ++k) {
      credit_[k] += weight_[k];
      if (credit_[k] > credit_[best]) best = k;
    }
    credit_[best] -= 100;
    return static_cast<Op>(best);
  }

 private:
  int weight_[3];
  int credit_[3] = {0, 0, 0};
};

// Random block order: each pass visits every block of the region exactly
// once (as fio does with its random map), in an order scrambled by a keyed
// bijection on the next power of two; values past the region are skipped,
// at most half of them. Constant memory, a few multiplies per I/O.
class BlockPermutation {
 public:
  BlockPermutation(std::uint64_t blocks, std::uint64_t seed)
      : blocks_(blocks), seed_(seed) {
    bits_ = std::max(1, static_cast<int>(std::bit_width(blocks - 1)));
    mask_ = bits_ >= 64 ? ~0ULL : (1ULL << bits_) - 1;
    shift_ = std::max(1, bits_ / 2);
    NewKeys();
  }
  std::uint64_t Next() {
    for (;;) {
      if (counter_ > mask_ || (counter_ == 0 && wrapped_)) {
        counter_ = 0;
        NewKeys();
      }
      const std::uint64_t x = Permute(counter_++);
      if (counter_ == 0) wrapped_ = true;  // 64-bit domain
      if (x < blocks_) return x;
    }
  }

 private:
  void NewKeys() {
    for (int r = 0; r < kRounds; ++r) {
      mul_[r] = detail::SplitMix64(seed_) | 1;  // odd: invertible mod 2^bits
      add_[r] = detail::SplitMix64(seed_);
    }
    wrapped_ = false;
  }
  std::uint64_t Permute(std::uint64_t x) const {
    for (int r = 0; r < kRounds; ++r) {
      x = (x * mul_[r] + add_[r]) & mask_;
      x ^= x >> shift_;
    }
    return x;
  }
  static constexpr int kRounds = 3;
  std::uint64_t blocks_;
  std::uint64_t seed_;
  int bits_ = 1;
  int shift_ = 1;
  std::uint64_t mask_ = 1;
  std::uint64_t counter_ = 0;
  bool wrapped_ = false;
  std::uint64_t mul_[kRounds] = {};
  std::uint64_t add_[kRounds] = {};
};

// The region and bounds after validation.
struct Plan {
  std::uint64_t region_offset = 0;
  std::uint64_t region_length = 0;
};

// Checks `s` against `target`; errors read "workload on PATH: KEY VALUE:
// expected ...".
Expected<Plan> Validate(const WorkloadTarget& target, const WorkloadSpec& s);

}  // namespace drivewatch::aging::workload_detail
