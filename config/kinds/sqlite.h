// SPDX-License-Identifier: Apache-2.0
// The sqlite kind (its story: aging/phases/sqlite_phase.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "config/kinds/phase_key.h"

namespace drivewatch::config {

inline constexpr PhaseKey kSqliteThreadsKey{
    .name = "threads", .type = PhaseKeyType::kInteger, .min = 1, .max = 128,
    .doc = "How many threads insert at once, each through its own connection to its own "
           "database (Phoronix's pts/sqlite \"copies\")."};
inline constexpr PhaseKey kSqliteInsertsKey{
    .name = "inserts", .type = PhaseKeyType::kInteger, .min = 1, .max = 10'000'000,
    .doc = "How many rows each thread inserts, one transaction each."};
inline constexpr std::string_view kSqliteJournalModes[] = {"wal", "delete", "truncate",
                                                           "persist"};
inline constexpr PhaseKey kSqliteJournalModeKey{
    .name = "journal_mode", .type = PhaseKeyType::kName,
    .doc = "SQLite's PRAGMA journal_mode: how a transaction is made durable.",
    .choices = kSqliteJournalModes};
inline constexpr std::string_view kSqliteSynchronousLevels[] = {"full", "extra", "normal",
                                                                "off"};
inline constexpr PhaseKey kSqliteSynchronousKey{
    .name = "synchronous", .type = PhaseKeyType::kName,
    .doc = "SQLite's PRAGMA synchronous: when it waits for the drive (\"full\": every "
           "commit).",
    .choices = kSqliteSynchronousLevels};

// sqlite: the pts/sqlite method. `threads` threads, each with its own
// connection to its own database in the run's work directory, insert
// `inserts` rows each into an indexed table, one autocommitted INSERT at a
// time, under the configured journal mode and synchronous level.
struct SqliteParams {
  static constexpr std::string_view kName = "sqlite";
  static constexpr bool kWrites = true;
  // Its workload is an application's, on a directory target's file
  // system (PhaseContext::WorkDirectory), never a block device.
  static constexpr bool kNeedsDirectory = true;
  std::uint32_t threads = 1;
  std::uint32_t inserts = 7500;
  std::string journal_mode = "wal";
  std::string synchronous = "full";

  template <class Self, class F>
  static void Keys(Self& p, F&& f) {
    f(kSqliteThreadsKey, p.threads);
    f(kSqliteInsertsKey, p.inserts);
    f(kSqliteJournalModeKey, p.journal_mode);
    f(kSqliteSynchronousKey, p.synchronous);
  }
  bool operator==(const SqliteParams&) const = default;
};

}  // namespace drivewatch::config
