// SPDX-License-Identifier: Apache-2.0
// Keeps a storm of like log lines from flooding the journal. A flapping
// drive raises SMART events by the hundred per hot-plug cycle, and each one
// would be an info line. Per key (a drive and an event kind, say), the first
// `burst` lines of a period are written. The rest are counted, and when the
// period ends one summary line gives their count and the latest of them.
// While the storm goes on, each period yields that summary line alone; a
// key whose period passed with nothing held back starts afresh.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "config/util/log.h"
#include "exporter/clock.h"

namespace drivewatch {

class LogLimiter {
 public:
  using Sink = std::function<void(log::Level, std::string_view)>;

  // `sink` receives the lines that are written (log::Write by default).
  LogLimiter(const Clock& clock, int burst, Clock::Monotonic::duration period,
             Sink sink = log::Write);

  // Writes `line` unless `key` already had `burst` lines in this period.
  // Any thread.
  void Write(log::Level level, const std::string& key, std::string_view line);

  // Writes the summary of every period that has ended and forgets idle keys.
  // Call it regularly (the daemon does every 10 s): a storm that stops gets
  // its summary without waiting for the key's next line.
  void Flush();

  int burst() const { return burst_; }

 private:
  struct KeyState {
    Clock::Monotonic::time_point period_start;
    int written = 0;
    std::uint64_t held_back = 0;
    bool storming = false;  // the last period held lines back
    log::Level level = log::Level::kInfo;
    std::string latest;     // the latest line held back
  };

  // Ends `state`'s period if it is over, writing its summary. Returns true
  // when the key is idle (nothing written or held back in the new period).
  bool EndPeriodIfDue(const std::string& key, KeyState& state,
                      Clock::Monotonic::time_point now);

  const Clock& clock_;
  const int burst_;
  const Clock::Monotonic::duration period_;
  const Sink sink_;
  std::mutex mu_;
  std::map<std::string, KeyState> keys_;
};

}  // namespace drivewatch
