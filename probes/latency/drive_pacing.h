// SPDX-License-Identifier: Apache-2.0
// Per-drive pacing for the read latency probe: the configured rate is the
// drive's, not each namespace's. The namespaces of one drive (one serial)
// share one DrivePacing; each target that is open for reading joins it, and
// the drive's arrival schedule (start + k / rate, or a Poisson process of
// the rate) is dealt round-robin to the members: arrival k goes to member
// k mod N, so each namespace reads at rate / N and the drive at the rate.
// Each namespace keeps its own histograms.
//
// The turns of the rates and the idle period are counted from the drive's
// epoch (TurnAt), so every namespace of a drive is in the same turn, even
// one that joined late or reopened: a 10-IOPS turn is 10 IOPS on the
// drive.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace drivewatch {

class DrivePacing {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  explicit DrivePacing(TimePoint epoch) : epoch_(epoch) {}

  TimePoint epoch() const { return epoch_; }

  // A member's place among the drive's open targets.
  struct Share {
    std::size_t index = 0;  // its arrivals are index, index + count, ...
    std::size_t count = 1;
    std::uint64_t generation = 0;  // changes whenever membership does
  };
  // `member` identifies the target (its probe); joining twice is a no-op.
  void Join(const void* member);
  void Leave(const void* member);
  // A member not joined reads alone: {0, 1}.
  Share ShareOf(const void* member) const;

 private:
  const TimePoint epoch_;
  mutable std::mutex mu_;
  std::vector<const void*> members_;  // mu_, in joining order
  std::uint64_t generation_ = 0;      // mu_
};

// Where `now` falls in the cycle of `rates` turns of `period` each, then
// `idle` without reads, counted from `epoch` (now >= epoch).
struct Turn {
  bool idle = false;
  std::size_t rate_index = 0;  // when not idle
  std::chrono::steady_clock::time_point start, end;
};
Turn TurnAt(std::chrono::steady_clock::time_point epoch, std::size_t rates,
            std::chrono::steady_clock::duration period,
            std::chrono::steady_clock::duration idle,
            std::chrono::steady_clock::time_point now);

// The member's part of the drive's `rate`, for the drive load board, which
// adds the parts up: rate / count, the remainder to the first members.
std::uint32_t ShareRate(std::uint32_t rate, const DrivePacing::Share& share);

// The member's first arrival at or after `now` on the drive's fixed
// schedule turn_start + k / rate, k = share.index mod share.count.
std::chrono::steady_clock::time_point FirstShareArrival(
    std::chrono::steady_clock::time_point turn_start, double rate,
    const DrivePacing::Share& share, std::chrono::steady_clock::time_point now);

}  // namespace drivewatch
