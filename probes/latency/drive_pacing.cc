// SPDX-License-Identifier: Apache-2.0
// DrivePacing: one drive's read rate dealt round-robin over its namespaces
// (drive_pacing.h).
#include "probes/latency/drive_pacing.h"

#include <algorithm>
#include <cmath>

namespace drivewatch {

void DrivePacing::Join(const void* member) {
  std::lock_guard lock(mu_);
  if (std::find(members_.begin(), members_.end(), member) != members_.end()) return;
  members_.push_back(member);
  ++generation_;
}

void DrivePacing::Leave(const void* member) {
  std::lock_guard lock(mu_);
  auto it = std::find(members_.begin(), members_.end(), member);
  if (it == members_.end()) return;
  members_.erase(it);
  ++generation_;
}

DrivePacing::Share DrivePacing::ShareOf(const void* member) const {
  std::lock_guard lock(mu_);
  auto it = std::find(members_.begin(), members_.end(), member);
  if (it == members_.end()) return Share{0, 1, generation_};
  return Share{static_cast<std::size_t>(it - members_.begin()), members_.size(),
               generation_};
}

Turn TurnAt(std::chrono::steady_clock::time_point epoch, std::size_t rates,
            std::chrono::steady_clock::duration period,
            std::chrono::steady_clock::duration idle,
            std::chrono::steady_clock::time_point now) {
  const auto cycle = period * static_cast<long>(rates) + idle;
  const auto since = std::max(now - epoch, std::chrono::steady_clock::duration::zero());
  const auto cycle_start = now - since % cycle;
  const auto into = now - cycle_start;
  Turn t;
  if (into >= period * static_cast<long>(rates)) {
    t.idle = true;
    t.start = cycle_start + period * static_cast<long>(rates);
    t.end = cycle_start + cycle;
    return t;
  }
  t.rate_index = static_cast<std::size_t>(into / period);
  t.start = cycle_start + period * static_cast<long>(t.rate_index);
  t.end = t.start + period;
  return t;
}

std::chrono::steady_clock::time_point FirstShareArrival(
    std::chrono::steady_clock::time_point turn_start, double rate,
    const DrivePacing::Share& share, std::chrono::steady_clock::time_point now) {
  using Seconds = std::chrono::duration<double>;
  const double n = static_cast<double>(share.count);
  const double offset = static_cast<double>(share.index) / rate;
  const double since = Seconds(now - turn_start).count() - offset;
  // Rounds of the drive's schedule (n arrivals each) already past.
  const double rounds = since <= 0 ? 0 : std::ceil(since * rate / n);
  return turn_start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          Seconds(offset + rounds * n / rate));
}

std::uint32_t ShareRate(std::uint32_t rate, const DrivePacing::Share& share) {
  const auto n = static_cast<std::uint32_t>(share.count);
  return rate / n + (share.index < rate % n ? 1 : 0);
}

}  // namespace drivewatch
