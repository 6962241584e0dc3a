// SPDX-License-Identifier: Apache-2.0
// The sqlite kind's story (aging/phases/sqlite_phase.cc) on real SQLite, in
// a scratch directory handed over as the run's work directory (the
// runner's own, through the write gate, is tested in
// tests/run/app_phase_test.sh).
#include <sqlite3.h>

#include <atomic>
#include <string>

#include <gtest/gtest.h>

#include "aging/phases/phase.h"
#include "tests/common/scratch_dir.h"
#include "tests/unit/aging/fake_phase_context.h"

namespace drivewatch::aging {
namespace {

using testing::FakePhaseContext;
using testing::ScratchDir;

config::SqliteParams Params(std::uint32_t threads, std::uint32_t inserts,
                            std::string journal_mode = "wal",
                            std::string synchronous = "normal") {
  config::SqliteParams p;
  p.threads = threads;
  p.inserts = inserts;
  p.journal_mode = std::move(journal_mode);
  p.synchronous = std::move(synchronous);
  return p;
}

// One answer of `sql` on the database at `path`, as text.
std::string Ask(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string answer = "(cannot open)";
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    answer = "(no row)";
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      answer = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
  }
  sqlite3_close_v2(db);
  return answer;
}

double Result(const PhaseReport& r, const char* key) {
  const Json* v = Find(r.results, key);
  return v != nullptr ? AsDouble(*v) : -1;
}

TEST(SqlitePhaseTest, EachThreadInsertsItsRowsIntoItsOwnIndexedDatabase) {
  ScratchDir dir("sqlite");
  const config::SqliteParams p = Params(2, 300);
  FakePhaseContext ctx(p);
  ctx.work_directory = dir.path();
  PhaseReport report;
  Status s = RunKind(p, ctx, report);
  ASSERT_TRUE(s) << s.error().message;

  // The work directory was asked for what the databases may hold.
  ASSERT_EQ(ctx.work_bytes.size(), 1u);
  EXPECT_EQ(ctx.work_bytes[0], 2 * (300 * 256 + (8u << 20)));
  for (const char* db : {"thread-0.db", "thread-1.db"}) {
    EXPECT_EQ(Ask(dir / db, "SELECT count(*) FROM pts1"), "300") << db;
    EXPECT_EQ(Ask(dir / db, "SELECT count(DISTINCT F2) FROM pts1"), "300") << db;
    EXPECT_EQ(Ask(dir / db, "SELECT name FROM sqlite_master WHERE type = 'index'"), "pts1_i");
    EXPECT_EQ(Ask(dir / db, "PRAGMA journal_mode"), "wal") << db;
  }
  EXPECT_EQ(Result(report, "insert_operations"), 600);
  const double elapsed = Result(report, "elapsed_seconds");
  ASSERT_GT(elapsed, 0);
  EXPECT_DOUBLE_EQ(Result(report, "insert_operations_per_second"), 600 / elapsed);
  const double p50 = Result(report, "commit_p50_seconds");
  EXPECT_GT(p50, 0);
  EXPECT_LE(p50, Result(report, "commit_p99_seconds"));
  EXPECT_LE(Result(report, "commit_p99_seconds"), Result(report, "commit_p99_9_seconds"));
  EXPECT_LE(Result(report, "commit_p99_9_seconds"), Result(report, "commit_max_seconds"));
  EXPECT_GT(Result(report, "commit_mean_seconds"), 0);
  // Commits happen within the elapsed time, one thread's after another's.
  EXPECT_LE(Result(report, "commit_mean_seconds") * 300, elapsed * 1.01);
  EXPECT_DOUBLE_EQ(Result(report, "fill_ratio"), 0.5);
  // The spread: inserts per second over five segments of each thread's
  // rows, and the commit mean's standard error.
  EXPECT_EQ(Result(report, "insert_segments"), 5);
  EXPECT_GE(Result(report, "insert_operations_per_second_se"), 0);
  EXPECT_LT(Result(report, "insert_operations_per_second_se"),
            Result(report, "insert_operations_per_second"));
  EXPECT_GT(Result(report, "commit_mean_seconds_se"), 0);
  EXPECT_LT(Result(report, "commit_mean_seconds_se"), Result(report, "commit_mean_seconds"));
}

TEST(SqlitePhaseTest, TheJournalModeIsTheConfiguredOne) {
  ScratchDir dir("sqlite-delete");
  const config::SqliteParams p = Params(1, 20, "delete", "full");
  FakePhaseContext ctx(p);
  ctx.work_directory = dir.path();
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  EXPECT_EQ(Ask(dir / "thread-0.db", "PRAGMA journal_mode"), "delete");
  EXPECT_EQ(Ask(dir / "thread-0.db", "SELECT count(*) FROM pts1"), "20");
}

TEST(SqlitePhaseTest, AStoppedRunKeepsWhatItInserted) {
  ScratchDir dir("sqlite-stop");
  const config::SqliteParams p = Params(2, 2'000'000, "wal", "off");
  FakePhaseContext ctx(p);
  ctx.work_directory = dir.path();
  // Stopped at the first progress past zero: rows are in, far from all.
  ctx.on_progress = [&](std::string_view step, double fraction) {
    EXPECT_EQ(step, "insert");
    if (fraction > 0) ctx.Stop();
  };
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  const double inserted = Result(report, "insert_operations");
  EXPECT_GT(inserted, 0);
  EXPECT_LT(inserted, 4'000'000);
  const long on_disk = std::stol(Ask(dir / "thread-0.db", "SELECT count(*) FROM pts1")) +
                       std::stol(Ask(dir / "thread-1.db", "SELECT count(*) FROM pts1"));
  EXPECT_EQ(on_disk, static_cast<long>(inserted));
  EXPECT_GT(Result(report, "commit_p50_seconds"), 0);
}

TEST(SqlitePhaseTest, ARefusedWorkDirectoryEndsTheRunBeforeAnyDatabase) {
  const config::SqliteParams p = Params(1, 10);
  FakePhaseContext ctx(p);  // no work directory: refused
  PhaseReport report;
  Status s = RunKind(p, ctx, report);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().errnum, EPERM);
  EXPECT_EQ(s.error().message, ctx.work_refusal.message);
  EXPECT_TRUE(report.results.empty());
}

TEST(SqlitePhaseTest, ADatabaseThatCannotBeMadeIsNamed) {
  ScratchDir dir("sqlite-gone");
  const config::SqliteParams p = Params(1, 10);
  FakePhaseContext ctx(p);
  ctx.work_directory = dir / "missing";
  PhaseReport report;
  Status s = RunKind(p, ctx, report);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find(dir / "missing/thread-0.db: cannot open: "), std::string::npos)
      << s.error().message;
}

}  // namespace
}  // namespace drivewatch::aging
