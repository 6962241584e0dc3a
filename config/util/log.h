// SPDX-License-Identifier: Apache-2.0
// Minimal leveled logging to stderr, which systemd sends to the journal.
// Under systemd (JOURNAL_STREAM set) each line starts with a syslog priority
// prefix "<N>" so `journalctl -p warning` works; elsewhere lines carry a
// timestamp. Lines are written with one write(2) so threads don't interleave.
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <string_view>

namespace drivewatch::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

inline std::atomic<Level>& MinLevel() {
  static std::atomic<Level> level{Level::kInfo};
  return level;
}
inline void SetLevel(Level level) { MinLevel().store(level); }

inline void Write(Level level, std::string_view msg) {
  if (level < MinLevel().load(std::memory_order_relaxed)) return;
  static const bool journal = std::getenv("JOURNAL_STREAM") != nullptr;
  static constexpr const char* kNames[] = {"debug", "info", "warn", "error"};
  static constexpr int kSyslog[] = {7, 6, 4, 3};
  const int i = static_cast<int>(level);
  std::string line;
  line.reserve(msg.size() + 48);
  if (journal) {
    line += '<';
    line += std::to_string(kSyslog[i]);
    line += '>';
  } else {
    const auto now = std::chrono::system_clock::now();
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char ts[64];
    std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ ",
                  tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                  tm.tm_min, tm.tm_sec, static_cast<int>(ms));
    line += ts;
  }
  line += kNames[i];
  line += ": ";
  line += msg;
  line += '\n';
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, line.data(), line.size());
}

inline void Debug(std::string_view m) { Write(Level::kDebug, m); }
inline void Info(std::string_view m) { Write(Level::kInfo, m); }
inline void Warn(std::string_view m) { Write(Level::kWarn, m); }
inline void Error(std::string_view m) { Write(Level::kError, m); }

}  // namespace drivewatch::log
