// SPDX-License-Identifier: Apache-2.0
#include "probes/latency/latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace drivewatch {
namespace {
constexpr std::uint64_t kExactLimit = 2 * LatencyHistogram::kSubBuckets;  // 128
}  // namespace

std::size_t LatencyHistogram::Index(std::uint64_t ns) {
  if (ns < kExactLimit) return static_cast<std::size_t>(ns);
  if (ns >= kMaxValueNs) return kOverflowIndex;
  const unsigned msb = 63u - static_cast<unsigned>(std::countl_zero(ns));
  const unsigned shift = msb - kBits;
  return (shift + 1) * kSubBuckets + ((ns >> shift) & (kSubBuckets - 1));
}

std::uint64_t LatencyHistogram::LowerBound(std::size_t index) {
  if (index < kExactLimit) return index;
  if (index >= kOverflowIndex) return kMaxValueNs;
  const std::size_t shift = index / kSubBuckets - 1;
  const std::uint64_t offset = index % kSubBuckets;
  return (std::uint64_t{1} << (shift + kBits)) + (offset << shift);
}

std::uint64_t LatencyHistogram::UpperBound(std::size_t index) {
  if (index < kExactLimit) return index + 1;
  if (index >= kOverflowIndex) return std::numeric_limits<std::uint64_t>::max();
  const std::size_t shift = index / kSubBuckets - 1;
  return LowerBound(index) + (std::uint64_t{1} << shift);
}

double LatencyHistogram::RepresentativeSeconds(std::size_t index) {
  if (index >= kOverflowIndex) return std::numeric_limits<double>::infinity();
  if (index < kExactLimit) return static_cast<double>(index) * 1e-9;
  const double lo = static_cast<double>(LowerBound(index));
  const double hi = static_cast<double>(UpperBound(index));
  return (lo + hi) / 2 * 1e-9;
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (std::size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ns_ += other.sum_ns_;
  max_ns_ = std::max(max_ns_, other.max_ns_);
}

void LatencyHistogram::Clear() { *this = LatencyHistogram(); }

double LatencyHistogram::Quantile(double q) const {
  if (count_ == 0) return 0;
  const double wanted = std::ceil(q * static_cast<double>(count_));
  const std::uint64_t rank =
      std::clamp<std::uint64_t>(static_cast<std::uint64_t>(wanted), 1, count_);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      if (i == kOverflowIndex) return std::numeric_limits<double>::infinity();
      // The midpoint can lie above the largest value actually seen.
      return std::min(RepresentativeSeconds(i),
                      static_cast<double>(max_ns_) * 1e-9);
    }
  }
  return std::numeric_limits<double>::infinity();
}

double LatencyHistogram::MaxSeconds() const {
  if (has_overflow()) return std::numeric_limits<double>::infinity();
  return static_cast<double>(max_ns_) * 1e-9;
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> LatencyHistogram::NonZero()
    const {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    if (counts_[i] != 0) {
      out.emplace_back(static_cast<std::uint32_t>(i),
                       static_cast<std::uint32_t>(counts_[i]));
    }
  }
  return out;
}

void LatencyHistogram::MergeSparse(
    const std::vector<std::pair<std::uint32_t, std::uint32_t>>& buckets,
    std::uint64_t sum_ns, std::uint64_t max_ns) {
  for (const auto& [index, n] : buckets) {
    counts_[index] += n;
    count_ += n;
  }
  sum_ns_ += sum_ns;
  max_ns_ = std::max(max_ns_, max_ns);
}

}  // namespace drivewatch
