// SPDX-License-Identifier: Apache-2.0
#include "probes/latency/latency_window.h"

#include <algorithm>

namespace drivewatch {

LatencyWindows::Duration LatencyWindows::SliceLength(
    const std::vector<std::chrono::milliseconds>& lengths) {
  const auto [shortest, longest] =
      std::minmax_element(lengths.begin(), lengths.end());
  const Duration by_shortest = *shortest / 15;
  const Duration by_longest = *longest / 240;
  return std::max({by_shortest, by_longest,
                   Duration(std::chrono::seconds(1))});
}

LatencyWindows::LatencyWindows(std::vector<std::chrono::milliseconds> lengths,
                               TimePoint start)
    : lengths_(std::move(lengths)),
      start_(start),
      slice_(SliceLength(lengths_)),
      longest_slices_(SlicesIn(*std::max_element(lengths_.begin(), lengths_.end()))) {}

std::int64_t LatencyWindows::SliceNumber(TimePoint t) const {
  if (t < start_) return 0;
  return (t - start_) / slice_;
}

std::int64_t LatencyWindows::SlicesIn(std::chrono::milliseconds length) const {
  return std::max<std::int64_t>(1, Duration(length) / slice_);
}

void LatencyWindows::Roll(TimePoint now) {
  const std::int64_t number = SliceNumber(now);
  if (number <= current_number_) return;
  if (current_.count() > 0) {
    closed_.push_back(Slice{current_number_, current_.NonZero(),
                            current_.sum_ns(), current_.max_ns()});
    current_.Clear();
  }
  current_number_ = number;
  while (!closed_.empty() &&
         closed_.front().number <= number - longest_slices_) {
    closed_.pop_front();
  }
}

void LatencyWindows::Add(std::uint64_t ns, TimePoint now) {
  Roll(now);
  current_.Add(ns);
}

void LatencyWindows::AddTimeout(std::uint64_t waited_ns, TimePoint now) {
  Roll(now);
  current_.AddTimeout(waited_ns);
}

LatencyHistogram LatencyWindows::Window(std::size_t i, TimePoint now) const {
  const std::int64_t now_number = std::max(SliceNumber(now), current_number_);
  const std::int64_t first = now_number - SlicesIn(lengths_.at(i)) + 1;
  LatencyHistogram out;
  for (const Slice& s : closed_) {
    if (s.number >= first) out.MergeSparse(s.buckets, s.sum_ns, s.max_ns);
  }
  if (current_number_ >= first) out.Merge(current_);
  return out;
}

}  // namespace drivewatch
