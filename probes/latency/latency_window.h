// SPDX-License-Identifier: Apache-2.0
// Sliding windows over a stream of latencies: "p99.9 over the last 15
// minutes" and "over the last hour" from one ring of time slices.
//
// Time is cut into slices of SliceLength(); each slice keeps a histogram of
// its samples, stored sparsely once the slice is over (a minute at 100 IOPS
// fills a few hundred of the 1985 buckets). A window of length W is the
// merge of the slices that end within the last W: the slice in progress
// plus the W / slice - 1 before it, so a window covers between W - slice
// and W of time. Slices older than the longest window are dropped.
//
// Time is passed in, never read, so tests drive it by hand.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "probes/latency/latency_histogram.h"

namespace drivewatch {

class LatencyWindows {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  // `lengths` must not be empty; each at least one second.
  LatencyWindows(std::vector<std::chrono::milliseconds> lengths,
                 TimePoint start);

  // The slice length for these windows: a fifteenth of the shortest, or a
  // 240th of the longest if that is more (it bounds the ring to 240
  // slices), and at least one second.
  static Duration SliceLength(const std::vector<std::chrono::milliseconds>& lengths);

  void Add(std::uint64_t ns, TimePoint now);
  void AddTimeout(std::uint64_t waited_ns, TimePoint now);

  // The samples of window `i` (in the order given to the constructor), as
  // of `now` (not before the last Add).
  LatencyHistogram Window(std::size_t i, TimePoint now) const;

  const std::vector<std::chrono::milliseconds>& lengths() const {
    return lengths_;
  }

 private:
  struct Slice {
    std::int64_t number;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> buckets;
    std::uint64_t sum_ns;
    std::uint64_t max_ns;
  };
  std::int64_t SliceNumber(TimePoint t) const;
  std::int64_t SlicesIn(std::chrono::milliseconds length) const;
  void Roll(TimePoint now);

  std::vector<std::chrono::milliseconds> lengths_;
  TimePoint start_;
  Duration slice_;
  std::int64_t longest_slices_;
  std::deque<Slice> closed_;  // oldest first
  LatencyHistogram current_;
  std::int64_t current_number_ = 0;
};

}  // namespace drivewatch
