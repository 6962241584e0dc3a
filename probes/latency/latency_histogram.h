// SPDX-License-Identifier: Apache-2.0
// A log-linear latency histogram, after fio's (stat.h, "plat" buckets).
//
// The scheme. Latencies are whole nanoseconds. Values below 2^(kBits+1) =
// 128 ns each get their own bucket, so they are exact. Above that, a value
// whose most significant set bit is m (2^m <= v < 2^(m+1)) falls in group
// m - kBits, which splits [2^m, 2^(m+1)) into kSubBuckets = 2^kBits = 64
// equal buckets; the bucket is chosen by the kBits bits just below the top
// bit. So every group is a power of two (the "log" part) cut into 64 equal
// slices (the "linear" part):
//
//   index(v) = v                                          if v < 128
//   index(v) = (m - kBits + 1) * 64 + ((v >> (m - kBits)) & 63)   otherwise
//
// which costs one count-leading-zeros, a shift and a mask: constant time,
// no search, no floating point. A bucket in group g is 2^(m-kBits) wide
// and starts at or above 2^m, so its width is at most 1/64 of any value in
// it; reporting the bucket's midpoint is off by at most 1/128 = 0.78% of
// the true value (DESIGN.md decision 5 asks for 1%).
//
// The exact part takes two groups' worth of indexes (0..127), so kGroups =
// 31 covers 0 to 2^36 ns (about 68.7 s) in 1984 buckets (15.5 KiB of
// counts). One more bucket, kOverflowIndex, holds values beyond that
// and reads that timed out: their latency is known only to be "at least",
// so quantiles that land there read +infinity.
//
// Two histograms of the same layout merge by adding counts, so a window is
// the sum of its slices and a fleet-wide view the sum of its drives'.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace drivewatch {

class LatencyHistogram {
 public:
  static constexpr unsigned kBits = 6;
  static constexpr std::size_t kSubBuckets = std::size_t{1} << kBits;  // 64
  static constexpr std::size_t kGroups = 31;
  static constexpr std::size_t kRegularBuckets = kGroups * kSubBuckets;
  static constexpr std::size_t kOverflowIndex = kRegularBuckets;
  static constexpr std::size_t kBuckets = kRegularBuckets + 1;
  // Smallest value that no regular bucket holds.
  static constexpr std::uint64_t kMaxValueNs = std::uint64_t{1}
                                               << (kGroups + kBits - 1);

  // The bucket holding `ns` (kOverflowIndex for ns >= kMaxValueNs).
  static std::size_t Index(std::uint64_t ns);
  // The smallest value bucket `index` holds, and the smallest it does not.
  static std::uint64_t LowerBound(std::size_t index);
  static std::uint64_t UpperBound(std::size_t index);
  // The value reported for bucket `index`: its midpoint (the exact value
  // below 128 ns); +infinity for the overflow bucket. Seconds.
  static double RepresentativeSeconds(std::size_t index);

  void Add(std::uint64_t ns) { AddToBucket(Index(ns), ns); }
  // A read that timed out: counted in the overflow bucket. `waited_ns` goes
  // into the sum, as the least it took.
  void AddTimeout(std::uint64_t waited_ns) {
    AddToBucket(kOverflowIndex, waited_ns);
  }
  void Merge(const LatencyHistogram& other);
  void Clear();

  std::uint64_t count() const { return count_; }
  // Sum of recorded values (timeouts count as their wait).
  double sum_seconds() const { return static_cast<double>(sum_ns_) * 1e-9; }
  std::uint64_t bucket(std::size_t index) const { return counts_[index]; }
  // Exact largest value added with Add(); 0 when empty.
  std::uint64_t max_ns() const { return max_ns_; }
  bool has_overflow() const { return counts_[kOverflowIndex] != 0; }

  // The q-quantile (0 < q <= 1) in seconds, as fio computes percentiles:
  // the representative value of the bucket holding the ceil(q * count)-th
  // smallest sample, clamped to the exact max. 0 when empty, +infinity when
  // that sample is in the overflow bucket.
  double Quantile(double q) const;
  // The exact max in seconds, or +infinity when a read overflowed.
  double MaxSeconds() const;

  // Non-zero buckets as (index, count), increasing. For compact storage.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> NonZero() const;
  // Adds buckets given as NonZero() returned them, plus their sum and max.
  void MergeSparse(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& buckets,
                   std::uint64_t sum_ns, std::uint64_t max_ns);
  std::uint64_t sum_ns() const { return sum_ns_; }

 private:
  void AddToBucket(std::size_t index, std::uint64_t ns) {
    ++counts_[index];
    ++count_;
    sum_ns_ += ns;
    if (index != kOverflowIndex && ns > max_ns_) max_ns_ = ns;
  }

  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t count_ = 0;
  std::uint64_t sum_ns_ = 0;
  std::uint64_t max_ns_ = 0;
};

}  // namespace drivewatch
