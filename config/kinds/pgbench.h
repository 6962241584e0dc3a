// SPDX-License-Identifier: Apache-2.0
// The pgbench kind (its story: aging/phases/pgbench_phase.cc).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "config/kinds/phase_key.h"

namespace drivewatch::config {

inline constexpr PhaseKey kPgbenchScaleKey{
    .name = "scale", .type = PhaseKeyType::kInteger, .min = 1, .max = 10'000,
    .doc = "pgbench's scale factor (-s): 100,000 accounts and about 15 MiB of data each."};
inline constexpr PhaseKey kPgbenchClientsKey{
    .name = "clients", .type = PhaseKeyType::kInteger, .min = 1, .max = 1'000,
    .doc = "Concurrent database sessions (pgbench -c)."};
inline constexpr PhaseKey kPgbenchJobsKey{
    .name = "jobs", .type = PhaseKeyType::kInteger, .min = 1, .max = 256,
    .doc = "pgbench's worker threads (-j); at most clients."};
inline constexpr PhaseKey kPgbenchRunTimeKey{
    .name = "run_time", .type = PhaseKeyType::kDuration, .min = 1'000, .max = 86'400'000,
    .doc = "How long the timed transactions run (pgbench -T)."};
inline constexpr std::string_view kPgbenchModes[] = {"read-write", "select-only"};
inline constexpr PhaseKey kPgbenchModeKey{
    .name = "mode", .type = PhaseKeyType::kName,
    .doc = "\"read-write\": pgbench's TPC-B-like transaction; \"select-only\": -S.",
    .choices = kPgbenchModes};

// pgbench: Phoronix's pts/pgbench on a directory target's file system. A
// private PostgreSQL cluster in the run's work directory, on a Unix socket
// there only, initialised at `scale`, then `clients` sessions over `jobs`
// threads for `run_time`.
struct PgbenchParams {
  static constexpr std::string_view kName = "pgbench";
  static constexpr bool kWrites = true;
  static constexpr bool kNeedsDirectory = true;
  std::uint32_t scale = 100;
  std::uint32_t clients = 10;
  std::uint32_t jobs = 1;
  std::chrono::milliseconds run_time{60'000};
  std::string mode = "read-write";

  template <class Self, class F>
  static void Keys(Self& p, F&& f) {
    f(kPgbenchScaleKey, p.scale);
    f(kPgbenchClientsKey, p.clients);
    f(kPgbenchJobsKey, p.jobs);
    f(kPgbenchRunTimeKey, p.run_time);
    f(kPgbenchModeKey, p.mode);
  }
  bool operator==(const PgbenchParams&) const = default;
};

}  // namespace drivewatch::config
