// SPDX-License-Identifier: Apache-2.0
// sqlite: SQLite insertion timing, the way Phoronix's pts/sqlite measures a
// drive with an application rather than fio:
//   1. The run's work directory is made on the target's file system
//      (PhaseContext::WorkDirectory: the write gate, a retention study,
//      the free-space reserve), sized for what the databases will hold.
//   2. Each of `threads` threads opens its own database there
//      (thread-N.db) through its own connection, sets PRAGMA journal_mode
//      and synchronous as configured (default WAL and FULL: every commit
//      waits for the drive), and creates the pts/sqlite table
//      pts1 (I SMALLINT, DT TIMESTAMP DEFAULT CURRENT_TIMESTAMP, F1
//      VARCHAR(4), F2 VARCHAR(16)) with an index on I. The file system is
//      synced (syncfs) so the setup's writes are on the drive. None of
//      that is timed.
//   3. The threads start together and each inserts `inserts` rows, one
//      autocommitted INSERT (one transaction) at a time, each timed around
//      the statement that commits it.
//   4. Results: the elapsed time from the first insert to the last commit,
//      inserts per second over it, and the commit latency's quantiles (as
//      fio computes percentiles: aging/engine's histogram). The runner
//      removes the work directory afterwards.
#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <chrono>
#include <latch>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "aging/phases/phase.h"
#include "probes/latency/latency_histogram.h"

namespace drivewatch::aging {
namespace {

using Clock = std::chrono::steady_clock;

// The run's spread: its inserts in this many equal segments, each
// thread's timed, so inserts per second has a standard error as perf's
// rounds give theirs.
constexpr int kSegments = 5;

// What one thread did.
struct Inserter {
  std::string database;
  LatencyHistogram commits;
  double commit_square_sum = 0;  // seconds squared, for the mean's spread
  std::uint64_t inserted = 0;
  Clock::time_point first{}, last{};
  // When each segment ended (its inserts are (k+1) * inserts / kSegments).
  std::array<Clock::time_point, kSegments> segment_end{};
  int segments_done = 0;
  std::string error;  // empty: none
};

// "thread-0.db: disk I/O error (SQLITE_IOERR, 10)": a SQLite error naming
// its database.
std::string SqliteError(sqlite3* db, const std::string& database, const std::string& doing) {
  const int code = db != nullptr ? sqlite3_extended_errcode(db) : SQLITE_NOMEM;
  return database + ": " + doing + ": " + (db != nullptr ? sqlite3_errmsg(db) : "out of memory") +
         " (" + sqlite3_errstr(code) + ", " + std::to_string(code) + ")";
}

// A closing handle.
struct Connection {
  sqlite3* db = nullptr;
  sqlite3_stmt* insert = nullptr;
  ~Connection() {
    sqlite3_finalize(insert);
    sqlite3_close_v2(db);
  }
};

// The pts/sqlite table, and its index.
constexpr const char* kSchema =
    "CREATE TABLE pts1 (I SMALLINT NOT NULL, DT TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, "
    "F1 VARCHAR(4) NOT NULL, F2 VARCHAR(16) NOT NULL);"
    "CREATE INDEX pts1_i ON pts1 (I);";

// Opens and prepares a thread's database; an error names it.
bool Open(const config::SqliteParams& p, Inserter& in, Connection& c) {
  if (sqlite3_open_v2(in.database.c_str(), &c.db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    in.error = SqliteError(c.db, in.database, "cannot open");
    return false;
  }
  const std::string pragmas =
      "PRAGMA journal_mode=" + p.journal_mode + "; PRAGMA synchronous=" + p.synchronous + ";";
  if (sqlite3_exec(c.db, pragmas.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    in.error = SqliteError(c.db, in.database, "cannot set " + pragmas);
    return false;
  }
  if (sqlite3_exec(c.db, kSchema, nullptr, nullptr, nullptr) != SQLITE_OK) {
    in.error = SqliteError(c.db, in.database, "cannot create table pts1");
    return false;
  }
  if (sqlite3_prepare_v2(c.db, "INSERT INTO pts1 (I, F1, F2) VALUES (?1, ?2, ?3)", -1,
                         &c.insert, nullptr) != SQLITE_OK) {
    in.error = SqliteError(c.db, in.database, "cannot prepare the INSERT");
    return false;
  }
  return true;
}

// Row `n`'s fields: the same rows on every run, letters for F1 and F2.
void Row(std::uint64_t n, char (&f1)[5], char (&f2)[17]) {
  std::uint64_t x = n * 0x9E3779B97F4A7C15ull + 1;
  for (char* s : {f1, f2}) {
    const int len = s == f1 ? 4 : 16;
    for (int i = 0; i < len; ++i) {
      x ^= x >> 29;
      x *= 0xBF58476D1CE4E5B9ull;
      s[i] = static_cast<char>('a' + x % 26);
    }
    s[len] = 0;
  }
}

// What the threads share: rows inserted, threads finished, and whether
// one failed (the others then stop too).
struct Shared {
  std::atomic<std::uint64_t> inserted{0};
  std::atomic<std::uint32_t> finished{0};
  std::atomic<bool> failed{false};
};

// One thread's inserts, each its own transaction, timed around the step
// that commits it.
void Insert(const config::SqliteParams& p, PhaseContext& ctx, Inserter& in, Connection& c,
            Shared& shared) {
  char f1[5], f2[17];
  in.first = Clock::now();
  for (std::uint32_t i = 0; i < p.inserts && !ctx.stopped() &&
                            !shared.failed.load(std::memory_order_relaxed);
       ++i) {
    Row(i, f1, f2);
    sqlite3_bind_int(c.insert, 1, static_cast<int>(i % 32768));
    sqlite3_bind_text(c.insert, 2, f1, 4, SQLITE_STATIC);
    sqlite3_bind_text(c.insert, 3, f2, 16, SQLITE_STATIC);
    const auto start = Clock::now();
    const int rc = sqlite3_step(c.insert);
    const auto end = Clock::now();
    if (rc != SQLITE_DONE) {
      in.error = SqliteError(c.db, in.database, "INSERT " + std::to_string(i + 1) + " failed");
      shared.failed = true;
      return;
    }
    sqlite3_reset(c.insert);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count();
    in.commits.Add(static_cast<std::uint64_t>(ns));
    in.commit_square_sum += static_cast<double>(ns) * 1e-9 * static_cast<double>(ns) * 1e-9;
    in.last = end;
    ++in.inserted;
    while (in.segments_done < kSegments &&
           in.inserted == (in.segments_done + 1) * std::uint64_t{p.inserts} / kSegments) {
      in.segment_end[in.segments_done++] = end;
    }
    shared.inserted.fetch_add(1, std::memory_order_relaxed);
  }
}

// Inserts per second in each segment (every thread's rate in it, summed:
// the threads insert at once), when every thread finished every segment.
std::vector<double> SegmentRates(const config::SqliteParams& p,
                                 const std::vector<Inserter>& threads) {
  std::vector<double> rates(kSegments, 0.0);
  for (const Inserter& in : threads) {
    if (in.inserted != p.inserts || p.inserts < kSegments) return {};
    Clock::time_point from = in.first;
    for (int k = 0; k < kSegments; ++k) {
      const std::uint64_t rows = (k + 1) * std::uint64_t{p.inserts} / kSegments -
                                 k * std::uint64_t{p.inserts} / kSegments;
      const double s = std::chrono::duration<double>(in.segment_end[k] - from).count();
      if (s <= 0) return {};
      rates[k] += static_cast<double>(rows) / s;
      from = in.segment_end[k];
    }
  }
  return rates;
}

// The results of what the threads did, so far.
void Report(const config::SqliteParams& p, const std::vector<Inserter>& threads,
            PhaseContext& ctx, PhaseReport& report) {
  LatencyHistogram commits;
  double squares = 0;
  std::uint64_t inserted = 0;
  Clock::time_point first = Clock::time_point::max(), last{};
  for (const Inserter& in : threads) {
    commits.Merge(in.commits);
    squares += in.commit_square_sum;
    inserted += in.inserted;
    if (in.inserted == 0) continue;
    first = std::min(first, in.first);
    last = std::max(last, in.last);
  }
  Json& r = report.results;
  r["insert_operations"] = inserted;
  if (inserted == 0) return;
  const double elapsed = std::chrono::duration<double>(last - first).count();
  r["elapsed_seconds"] = elapsed;
  if (elapsed > 0) r["insert_operations_per_second"] = static_cast<double>(inserted) / elapsed;
  const double n = static_cast<double>(commits.count());
  const double mean = commits.sum_seconds() / n;
  r["commit_mean_seconds"] = mean;
  if (n > 1) {
    const double variance = std::max(0.0, (squares - n * mean * mean) / (n - 1));
    r["commit_mean_seconds_se"] = std::sqrt(variance / n);
  }
  if (const std::vector<double> rates = SegmentRates(p, threads); !rates.empty()) {
    r["insert_operations_per_second_se"] = *SpreadOf(rates).se;
    r["insert_segments"] = kSegments;
  }
  r["commit_p50_seconds"] = commits.Quantile(0.5);
  r["commit_p99_seconds"] = commits.Quantile(0.99);
  r["commit_p99_9_seconds"] = commits.Quantile(0.999);
  r["commit_max_seconds"] = static_cast<double>(commits.max_ns()) * 1e-9;
  if (ctx.fill_ratio() >= 0) r["fill_ratio"] = ctx.fill_ratio();
}

// What the databases may hold at most: rows and their index entries at a
// generous 256 bytes each, and a WAL of SQLite's default checkpoint size
// (1,000 pages of 4 KiB) twice over, per thread.
std::uint64_t DatabaseBytes(const config::SqliteParams& p) {
  return std::uint64_t{p.threads} * (std::uint64_t{p.inserts} * 256 + (8u << 20));
}

}  // namespace

Expected<std::string> PhaseContext::WorkDirectory(std::uint64_t, std::string_view) {
  return Error{ENOTSUP, -1, "this phase context has no directory target"};
}

Status RunKind(const config::SqliteParams& p, PhaseContext& ctx, PhaseReport& report) {
  auto dir = ctx.WorkDirectory(DatabaseBytes(p), "threads or inserts");
  if (!dir) return dir.error();
  std::vector<Inserter> threads(p.threads);
  std::vector<Connection> connections(p.threads);
  for (std::uint32_t t = 0; t < p.threads; ++t) {
    threads[t].database = *dir + "/thread-" + std::to_string(t) + ".db";
    if (!Open(p, threads[t], connections[t])) return Error{EIO, -1, threads[t].error};
  }
  // What setting up wrote (the directory, the databases, their schema)
  // reaches the drive before the clock starts, so every run times its
  // inserts from the same clean state, not the file system's write-back.
  if (const int fd = ::open(dir->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
    ::syncfs(fd);
    ::close(fd);
  }
  Shared shared;
  std::latch start(p.threads);
  {
    std::vector<std::jthread> workers;
    for (std::uint32_t t = 0; t < p.threads; ++t) {
      workers.emplace_back([&, t] {
        start.arrive_and_wait();
        Insert(p, ctx, threads[t], connections[t], shared);
        shared.finished.fetch_add(1);
      });
    }
    // Progress from this thread alone, ten times a second.
    const double total = static_cast<double>(std::uint64_t{p.threads} * p.inserts);
    while (shared.finished.load() < p.threads) {
      ctx.Progress("insert", static_cast<double>(shared.inserted.load()) / total);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  Report(p, threads, ctx, report);
  for (const Inserter& in : threads) {
    if (!in.error.empty()) return Error{EIO, -1, in.error};
  }
  return Ok{};
}

double FillLevelAfter(const config::SqliteParams&, const Json&, double level) {
  return level;  // the target's own file is not written
}

}  // namespace drivewatch::aging
