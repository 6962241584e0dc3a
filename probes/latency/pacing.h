// SPDX-License-Identifier: Apache-2.0
// Arrival pacing for probes that issue I/O at a low, steady rate: the read
// latency probe at 10 and 100 IOPS, and a power probe measuring "power at
// 10 IOPS". A Pacer only computes when each I/O is due; the read reactor
// (read_reactor.h) waits for it, among every target's deadlines:
//
//   Pacer pacer(10, ArrivalProcess::kFixed, Now());
//   ... when pacer.next() has come: issue one I/O (queue depth 1) ...
//   ... on its completion:          pacer.Advance(Now());
//
// Arrivals are on an absolute schedule (start + k / rate), so wake-up
// jitter and I/O time never accumulate into drift: over a run the achieved
// rate is the configured one. If the I/O is slow and the schedule falls
// more than one mean interval behind, the missed arrivals are skipped (and
// counted) rather than issued back to back, which would measure a burst
// instead of the configured rate.
//
// Why the reads are not scheduler jobs: the scheduler (exporter/
// scheduler.h) decides at whole-job granularity and hands work to strands
// that drop a run when the previous one is busy; at 100 IOPS an arrival is
// due every 10 ms and its timing is the measurement, so the reactor keeps
// absolute CLOCK_MONOTONIC deadlines of its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>
#include <stop_token>

namespace drivewatch {

enum class ArrivalProcess {
  kFixed,    // every 1/rate seconds, like fio's rate_iops
  kPoisson,  // exponentially distributed gaps with mean 1/rate: spreads
             // the idle time before each I/O over a wide range
};

class Pacer {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  // `rate` is arrivals per second (> 0). The first arrival is at `start`.
  // `seed` fixes the Poisson gaps (tests); the fixed schedule ignores it.
  Pacer(double rate, ArrivalProcess process, TimePoint start,
        std::uint64_t seed = 1);

  // When the next I/O is due.
  TimePoint next() const { return next_; }
  // Moves to the arrival after next(); call once the I/O due at next() was
  // issued. Arrivals already more than one mean interval in the past at
  // `now` are skipped; returns how many were.
  std::uint64_t Advance(TimePoint now);

  double rate() const { return rate_; }
  Duration mean_interval() const { return mean_; }

 private:
  Duration Gap();

  double rate_;
  ArrivalProcess process_;
  Duration mean_;
  TimePoint start_;
  std::uint64_t arrivals_ = 0;  // fixed schedule: start + arrivals * mean
  TimePoint next_;
  std::mt19937_64 rng_;
  std::exponential_distribution<double> exp_;
};

// Sleeps until `deadline` (steady clock, absolute) or until `stop` is
// requested, whichever comes first; returns false when stopped. Waits on a
// condition variable that the stop request notifies: no periodic wake-up
// (the heavy phases' idle steps and watchers).
bool SleepUntil(std::chrono::steady_clock::time_point deadline,
                const std::stop_token& stop);

}  // namespace drivewatch
