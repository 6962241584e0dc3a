// SPDX-License-Identifier: Apache-2.0
// The pgbench kind's story (aging/phases/pgbench_phase.cc) against a real
// PostgreSQL server (Debian's postgresql-15, which scripts/install-deps.sh
// installs for the tests), in a scratch directory handed over as the run's
// work directory (the runner's own, through the write gate, is tested in
// tests/run/app_phase_test.sh).
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "aging/phases/phase.h"
#include "tests/common/scratch_dir.h"
#include "tests/unit/aging/fake_phase_context.h"

namespace drivewatch::aging {
namespace {

using testing::FakePhaseContext;
using testing::ScratchDir;

config::PgbenchParams Params(std::string mode = "read-write") {
  config::PgbenchParams p;
  p.scale = 1;
  p.clients = 2;
  p.run_time = std::chrono::seconds{2};
  p.mode = std::move(mode);
  return p;
}

double Result(const PhaseReport& r, const char* key) {
  const Json* v = Find(r.results, key);
  return v != nullptr ? AsDouble(*v) : -1;
}

std::string Text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A scratch work directory the server's account can reach (mkdtemp makes
// it 0700).
class PgbenchPhaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(KindTools(Params())) << KindTools(Params()).error().message;
    ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
  }
  ScratchDir dir_{"pgbench"};
};

TEST_F(PgbenchPhaseTest, RunsPgbenchOnAPrivateServerAndStopsIt) {
  const config::PgbenchParams p = Params();
  FakePhaseContext ctx(p);
  ctx.work_directory = dir_.path();
  PhaseReport report;
  Status s = RunKind(p, ctx, report);
  ASSERT_TRUE(s) << s.error().message;

  // The work directory was asked for the scale's data.
  ASSERT_EQ(ctx.work_bytes.size(), 1u);
  EXPECT_EQ(ctx.work_bytes[0], (32u << 20) + (256u << 20));
  const double tps = Result(report, "transaction_operations_per_second");
  EXPECT_GT(tps, 0);
  EXPECT_GT(Result(report, "transaction_operations"), 0);
  // Every transaction is in the log, and each read-write one commits: a
  // WAL fsync each (synchronous_commit on, the default).
  EXPECT_EQ(Result(report, "logged_transactions"), Result(report, "transaction_operations"));
  EXPECT_GE(Result(report, "fsync_operations"), Result(report, "transaction_operations"));
  EXPECT_GT(Result(report, "latency_p50_seconds"), 0);
  EXPECT_LE(Result(report, "latency_p50_seconds"), Result(report, "latency_p99_seconds"));
  EXPECT_LE(Result(report, "latency_p99_seconds"), Result(report, "latency_p99_9_seconds"));
  EXPECT_GT(Result(report, "latency_mean_seconds"), 0);
  EXPECT_GT(Result(report, "latency_mean_seconds_se"), 0);
  EXPECT_DOUBLE_EQ(Result(report, "fill_ratio"), 0.5);

  // The server listened on its socket in the work directory, no TCP, and
  // is stopped.
  const std::string log = Text(dir_ / "server.log");
  EXPECT_NE(log.find("listening on Unix socket \"" + dir_.path() + "/socket/.s.PGSQL.5432\""),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("listening on IPv"), std::string::npos) << log;
  EXPECT_NE(::access((dir_ / "cluster/postmaster.pid").c_str(), F_OK), 0);
  // The transaction log went through FIFOs, not onto the drive under test.
  int logs = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
    if (e.path().filename().string().rfind("tx.", 0) != 0) continue;
    ++logs;
    EXPECT_TRUE(e.is_fifo()) << e.path();
  }
  EXPECT_EQ(logs, 1);  // one per pgbench thread (jobs = 1)
}

TEST_F(PgbenchPhaseTest, SelectOnlyCommitsNothingToTheWal) {
  const config::PgbenchParams p = Params("select-only");
  FakePhaseContext ctx(p);
  ctx.work_directory = dir_.path();
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  const double transactions = Result(report, "transaction_operations");
  EXPECT_GT(transactions, 0);
  EXPECT_LT(Result(report, "fsync_operations"), transactions / 10);
}

TEST_F(PgbenchPhaseTest, AStoppedRunStopsTheServer) {
  config::PgbenchParams p = Params();
  p.run_time = std::chrono::seconds{600};
  FakePhaseContext ctx(p);
  ctx.work_directory = dir_.path();
  ctx.on_progress = [&](std::string_view step, double fraction) {
    if (step == "run" && fraction > 0) ctx.Stop();
  };
  PhaseReport report;
  ASSERT_TRUE(RunKind(p, ctx, report));
  EXPECT_NE(::access((dir_ / "cluster/postmaster.pid").c_str(), F_OK), 0);
}

// More clients than PostgreSQL's default 100 connections: the server is
// started with room for them.
TEST_F(PgbenchPhaseTest, MoreClientsThanTheDefaultConnectionsAllGetOne) {
  config::PgbenchParams p = Params("select-only");
  p.clients = 120;
  p.jobs = 4;
  FakePhaseContext ctx(p);
  ctx.work_directory = dir_.path();
  PhaseReport report;
  Status s = RunKind(p, ctx, report);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_GT(Result(report, "transaction_operations_per_second"), 0);
}

// A work directory too deep for a Unix socket's 107-byte address: the
// server and its clients reach the socket directory through a short link
// under /tmp, which the release removes.
TEST_F(PgbenchPhaseTest, ADeepWorkDirectoryIsReachedThroughAShortLink) {
  std::string deep = dir_.path();
  while (deep.size() < 120) deep += "/a-directory-deep-down";
  std::filesystem::create_directories(deep);
  for (std::filesystem::path d = deep; d != dir_.path(); d = d.parent_path()) {
    ASSERT_EQ(::chmod(d.c_str(), 0755), 0);
  }
  const config::PgbenchParams p = Params();
  FakePhaseContext ctx(p);
  ctx.work_directory = deep;
  PhaseReport report;
  Status s = RunKind(p, ctx, report);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_GT(Result(report, "transaction_operations_per_second"), 0);
  const std::string link_dir = Text(deep + "/socket-link").substr(0, 25);
  EXPECT_EQ(link_dir.rfind("/tmp/drivewatch-pg.", 0), 0u) << link_dir;
  EXPECT_NE(Text(deep + "/server.log").find("listening on Unix socket \"" + link_dir + "/s/"),
            std::string::npos)
      << Text(deep + "/server.log");
  EXPECT_FALSE(std::filesystem::exists(link_dir)) << "the short link was not removed";
}

TEST_F(PgbenchPhaseTest, NothingToReleaseWhereNoServerRuns) {
  EXPECT_TRUE(KindReleaseWork(Params(), dir_.path()));
}

}  // namespace
}  // namespace drivewatch::aging
