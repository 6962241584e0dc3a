// SPDX-License-Identifier: Apache-2.0
// Internal to the workload engine (aging/engine/workload*.cc): a spec checked
// against its target into a plan (aging/engine/workload_plan.cc), and the order of
// a run's operations and blocks, inline because the engine asks for one of
// each per I/O (aging/engine/workload.cc).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "aging/engine/data_pattern.h"
#include "aging/engine/workload.h"
#include "config/util/expected.h"

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

// Drawn access (WorkloadSpec::size_mix, lba_zones): each I/O's size by its
// share, its zone by its share of accesses, then an aligned offset
// uniformly in the zone, all from one SplitMix64 stream seeded by `seed`.
class DrawnAccess {
 public:
  DrawnAccess(const WorkloadSpec& s, std::uint64_t region_length, std::uint32_t lbs)
      : region_(region_length), lbs_(lbs), state_(s.seed) {
    std::uint32_t cum = 0;
    for (const SizeShare& share : s.size_mix) sizes_.push_back({share.size, cum += share.percent});
    if (sizes_.empty()) sizes_.push_back({s.block_size, 100});
    fixed_size_ = s.size_mix.empty();
    double region_cum = 0;
    cum = 0;
    for (const LbaZone& z : s.lba_zones) {
      const std::uint64_t begin = static_cast<std::uint64_t>(region_ * region_cum / 100);
      region_cum += z.region_percent;
      const std::uint64_t end = std::min(region_, static_cast<std::uint64_t>(region_ * region_cum / 100));
      zones_.push_back({begin, end, cum += z.access_percent});
    }
    if (zones_.empty() || region_cum >= 100 - 1e-9) {
      if (zones_.empty()) zones_.push_back({0, region_, 100});
      zones_.back().end = region_;
    }
  }
  // The next I/O's offset (relative to the region) and size.
  std::uint64_t Next(std::uint32_t* size) {
    const std::uint64_t s = Pick(sizes_)->size;
    *size = static_cast<std::uint32_t>(s);
    const std::uint64_t align = fixed_size_ ? s : std::max<std::uint64_t>(lbs_, s >= 4096 ? 4096 : lbs_);
    const Zone& z = *Pick(zones_);
    const std::uint64_t last = (region_ - s) / align * align;  // the last start that fits
    const std::uint64_t lo = std::min(last, (z.begin + align - 1) / align * align);
    const std::uint64_t hi = z.end > lo + s ? std::min(last, (z.end - s) / align * align) : lo;
    return lo + detail::SplitMix64(state_) % ((hi - lo) / align + 1) * align;
  }

 private:
  struct Share {
    std::uint64_t size;
    std::uint32_t below;  // cumulative percent up to and including this one
  };
  struct Zone {
    std::uint64_t begin, end;
    std::uint32_t below;
  };
  template <class T>
  const T* Pick(const std::vector<T>& v) {
    const std::uint32_t r = static_cast<std::uint32_t>(detail::SplitMix64(state_) % 100);
    for (const T& e : v) {
      if (r < e.below) return &e;
    }
    return &v.back();
  }
  std::uint64_t region_;
  std::uint32_t lbs_;
  std::uint64_t state_;
  bool fixed_size_ = true;
  std::vector<Share> sizes_;
  std::vector<Zone> zones_;
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
