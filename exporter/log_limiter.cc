// SPDX-License-Identifier: Apache-2.0
#include "exporter/log_limiter.h"

#include <utility>

namespace drivewatch {

LogLimiter::LogLimiter(const Clock& clock, int burst,
                       Clock::Monotonic::duration period, Sink sink)
    : clock_(clock), burst_(burst), period_(period), sink_(std::move(sink)) {}

void LogLimiter::Write(log::Level level, const std::string& key,
                       std::string_view line) {
  // Below the log level nothing would be written; don't count it either.
  if (level < log::MinLevel().load(std::memory_order_relaxed)) return;
  const auto now = clock_.Now();
  std::lock_guard lock(mu_);
  auto [it, added] = keys_.try_emplace(key);
  KeyState& state = it->second;
  if (added) {
    state.period_start = now;
  } else {
    EndPeriodIfDue(key, state, now);
  }
  if (!state.storming && state.written < burst_) {
    ++state.written;
    sink_(level, line);
    return;
  }
  ++state.held_back;
  state.level = level;
  state.latest = line;
}

void LogLimiter::Flush() {
  const auto now = clock_.Now();
  std::lock_guard lock(mu_);
  for (auto it = keys_.begin(); it != keys_.end();) {
    if (EndPeriodIfDue(it->first, it->second, now)) {
      it = keys_.erase(it);
    } else {
      ++it;
    }
  }
}

bool LogLimiter::EndPeriodIfDue(const std::string& key, KeyState& state,
                                Clock::Monotonic::time_point now) {
  if (now - state.period_start < period_) return false;
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(now - state.period_start)
          .count();
  const bool idle = state.written == 0 && state.held_back == 0;
  state.storming = state.held_back > 0;
  if (state.storming) {
    sink_(state.level,
          key + ": " + std::to_string(state.held_back) +
              (state.held_back == 1 ? " more line" : " more lines") +
              " like this in the last " + std::to_string(seconds) +
              " s not logged; the latest: " + state.latest);
  }
  state.period_start = now;
  state.written = 0;
  state.held_back = 0;
  state.latest.clear();
  return idle;
}

}  // namespace drivewatch
