// SPDX-License-Identifier: Apache-2.0
// pgbench: PostgreSQL's TPC-B-like benchmark on a server drivewatch starts
// for the run, the way Phoronix's pts/pgbench measures a drive:
//   1. The run's work directory is made on the target's file system
//      (PhaseContext::WorkDirectory: the write gate, a retention study,
//      the free-space reserve), sized for the scale factor; the cluster
//      and socket directories in it are handed to the account the server
//      runs as (drivewatch's own; when drivewatch runs as root, which
//      PostgreSQL refuses, Debian's postgres account): the server's life
//      is pgbench_phase_server.cc's.
//   2. Debian's PostgreSQL binaries (the newest /usr/lib/postgresql/N/bin)
//      make a private cluster there (initdb), start it (pg_ctl) listening
//      on a Unix socket in that directory only, no TCP, and fill it
//      (pgbench -i -s scale). None of that is timed.
//   3. pgbench runs `clients` sessions over `jobs` threads for `run_time`,
//      TPC-B-like or select-only, logging every transaction's latency into
//      FIFOs drivewatch reads as it goes: nothing of the log reaches the
//      drive under test.
//   4. Results: TPS as pgbench counts it (without the connections' set-up),
//      the latency's mean and quantiles from the per-transaction log, and
//      the server's own WAL fsyncs over the timed part (pg_stat_wal).
//   5. The server is stopped, and what its account made taken apart as
//      that account; the runner removes the rest of the work directory. A
//      server left by a crash is stopped first (KindReleaseWork).
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "aging/phases/pgbench_phase_server.h"
#include "aging/phases/phase.h"
#include "probes/latency/latency_histogram.h"

namespace drivewatch::aging {
namespace {

using Clock = std::chrono::steady_clock;

using pgbench::ChildFifos;
using pgbench::FifoName;
using pgbench::kDatabase;
using pgbench::Server;

// A number after `key` on a line of pgbench's output ("tps = 1234.5 (...").
std::optional<double> Figure(const std::string& output, const std::string& key) {
  const std::size_t at = output.rfind(key);
  if (at == std::string::npos) return std::nullopt;
  const char* begin = output.c_str() + at + key.size();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end == begin) return std::nullopt;
  return v;
}

// What pgbench's per-transaction logs (-l) say: every transaction's
// latency, and how many ended in each second.
struct Transactions {
  LatencyHistogram latency;
  double square_sum = 0;  // seconds squared, for the mean's spread
  std::map<long long, double> per_second;  // by Unix second
};

// One line of pgbench's log, "client_id transaction_no time script_no
// time_epoch time_us" (time: the latency, in µs), into `t`; false when it
// is not one.
bool TakeLine(std::string_view line, Transactions& t) {
  unsigned long long client = 0, tx = 0, us = 0, script = 0, epoch = 0;
  const std::string text(line);
  if (std::sscanf(text.c_str(), "%llu %llu %llu %llu %llu", &client, &tx, &us, &script,
                  &epoch) != 5) {
    return false;
  }
  t.latency.Add(us * 1000);
  t.square_sum += static_cast<double>(us) * 1e-6 * static_cast<double>(us) * 1e-6;
  t.per_second[static_cast<long long>(epoch)] += 1;
  return true;
}

// Reads pgbench's per-transaction log from the FIFO `path` as pgbench
// writes it, so nothing of it reaches the drive under test: until its
// writer closes it, or `done` (pgbench has exited) before any writer came.
// A line that is not pgbench's goes to `error`.
void ReadFifo(const std::string& path, const std::atomic<bool>& done, Transactions& t,
              std::string& error) {
  int fd = -1;
  while ((fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
    if (errno != ENOENT || done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::fcntl(fd, F_SETPIPE_SZ, 1 << 20);  // room for bursts; best effort
  std::string pending;
  std::vector<char> buf(1 << 16);
  bool writer = false;
  std::uint64_t line_no = 0;
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, 100);
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n > 0) {
      writer = true;
      pending.append(buf.data(), static_cast<std::size_t>(n));
      std::size_t from = 0;
      for (std::size_t nl; (nl = pending.find('\n', from)) != std::string::npos; from = nl + 1) {
        ++line_no;
        if (!TakeLine(std::string_view(pending).substr(from, nl - from), t) && error.empty()) {
          error = path + ":" + std::to_string(line_no) +
                  ": not a pgbench transaction log line (expected \"client_id transaction_no "
                  "time script_no time_epoch time_us\")";
        }
      }
      pending.erase(0, from);
      continue;
    }
    if (n == 0 && writer) break;        // pgbench closed its log
    if (done && (n == 0 || errno == EAGAIN)) break;
    if (n == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // no writer yet
  }
  ::close(fd);
}

// The standard error of the mean transactions per second over the run's
// whole seconds (its first and last, cut short, left out); nullopt under
// three of them.
std::optional<std::pair<double, double>> TpsSpread(const Transactions& t) {
  if (t.per_second.size() < 5) return std::nullopt;
  std::vector<double> v;
  for (auto it = std::next(t.per_second.begin()); it != std::prev(t.per_second.end()); ++it) {
    v.push_back(it->second);
  }
  const Spread spread = SpreadOf(v);
  return std::pair{*spread.se, static_cast<double>(spread.n)};
}

// What the data may take: pgbench's ~15 MiB per scale unit, twice over
// for WAL and indexes, and 256 MiB for the cluster and the logs.
std::uint64_t ClusterBytes(const config::PgbenchParams& p) {
  return std::uint64_t{p.scale} * (32u << 20) + (256u << 20);
}

}  // namespace

Status KindTools(const config::PgbenchParams&) {
  if (auto bin = pgbench::PostgresBin(); !bin) return bin.error();
  if (auto account = pgbench::ServerAccount(); !account) return account.error();
  return Ok{};
}

Status KindPreflight(const config::PgbenchParams& p, const std::string&) {
  return KindTools(p);
}

Status CheckKindTools(const config::PhaseParams& params) {
  return std::visit([](const auto& p) { return KindTools(p); }, params);
}

Status KindReleaseWork(const config::PgbenchParams&, const std::string& work_directory) {
  return pgbench::Release(work_directory);
}

namespace {

// The timed pgbench, its per-transaction log streamed through FIFOs (a
// reader each), into `all`; its output in `text`.
Status Measure(const config::PgbenchParams& p, PhaseContext& ctx, const Server& s,
               Transactions& all, std::string& text) {
  const unsigned jobs = std::min(p.jobs, p.clients);
  std::vector<std::string> argv = s.Client("pgbench");
  argv.insert(argv.end(),
              {"-c", std::to_string(p.clients), "-j", std::to_string(jobs), "-T",
               std::to_string(std::max<long long>(1, p.run_time.count() / 1000)), "-l",
               "--log-prefix=" + s.work + "/tx", "-n"});
  if (p.mode == "select-only") argv.push_back("-S");
  argv.push_back(kDatabase);
  ctx.Progress("run", 0);
  Server timed = s;
  timed.log = s.work + "/pgbench.out";
  std::vector<Transactions> logs(jobs);
  std::vector<std::string> errors(jobs);
  std::atomic<bool> done{false};
  std::vector<std::jthread> readers;
  ChildFifos fifos{s.work + "/tx", jobs, [&](pid_t pid) {
                     for (unsigned n = 0; n < jobs; ++n) {
                       char name[4096];
                       FifoName(s.work + "/tx", pid, n, name);
                       readers.emplace_back([&, n, path = std::string(name)] {
                         ReadFifo(path, done, logs[n], errors[n]);
                       });
                     }
                   }};
  const auto start = Clock::now();
  Status status = timed.Run(
      argv, "running pgbench", &ctx,
      [&] {
        ctx.Progress("run", std::chrono::duration<double>(Clock::now() - start) / p.run_time);
      },
      &fifos);
  done = true;
  readers.clear();  // joined
  for (unsigned n = 0; n < jobs; ++n) {
    all.latency.Merge(logs[n].latency);
    all.square_sum += logs[n].square_sum;
    for (const auto& [second, count] : logs[n].per_second) all.per_second[second] += count;
    if (status && !errors[n].empty()) status = Error{EBADMSG, -1, errors[n]};
  }
  std::ifstream in(timed.log);
  text.assign(std::istreambuf_iterator<char>(in), {});
  return status;
}

// The results: pgbench's own figures from its output, the latency from its
// transaction log, the server's WAL fsyncs.
void Results(const std::string& text, const Transactions& t, const Server& s, PhaseContext& ctx,
             Json& r) {
  if (auto tps = Figure(text, "tps = ")) r["transaction_operations_per_second"] = *tps;
  if (auto n = Figure(text, "number of transactions actually processed: ")) {
    r["transaction_operations"] = *n;
  }
  if (auto ms = Figure(text, "latency average = ")) r["latency_mean_seconds"] = *ms / 1000;
  if (const LatencyHistogram& h = t.latency; h.count() > 0) {
    r["latency_p50_seconds"] = h.Quantile(0.5);
    r["latency_p99_seconds"] = h.Quantile(0.99);
    r["latency_p99_9_seconds"] = h.Quantile(0.999);
    r["latency_max_seconds"] = static_cast<double>(h.max_ns()) * 1e-9;
    r["logged_transactions"] = h.count();
    if (h.count() > 1) {
      const double n = static_cast<double>(h.count());
      const double mean = h.sum_seconds() / n;
      r["latency_mean_seconds_se"] =
          std::sqrt(std::max(0.0, (t.square_sum - n * mean * mean) / (n - 1)) / n);
    }
    if (auto spread = TpsSpread(t)) {
      r["transaction_operations_per_second_se"] = spread->first;
      r["transaction_seconds"] = spread->second;
    }
  }
  if (auto syncs = s.Ask("SELECT wal_sync FROM pg_stat_wal")) {
    char* end = nullptr;
    const double v = std::strtod(syncs->c_str(), &end);
    if (end != syncs->c_str()) r["fsync_operations"] = v;
  }
  if (ctx.fill_ratio() >= 0) r["fill_ratio"] = ctx.fill_ratio();
}

}  // namespace

Status RunKind(const config::PgbenchParams& p, PhaseContext& ctx, PhaseReport& report) {
  auto bin = pgbench::PostgresBin();
  if (!bin) return bin.error();
  auto account = pgbench::ServerAccount();
  if (!account) return account.error();
  auto dir = ctx.WorkDirectory(ClusterBytes(p), "scale");
  if (!dir) return dir.error();
  Server s{*bin, *dir, *dir + "/tools.log", *account, ""};
  Status status = pgbench::Start(p.scale, p.clients, ctx, s);
  if (status && !ctx.stopped()) {
    (void)s.Ask("SELECT pg_stat_reset_shared('wal')");
    Transactions all;
    std::string text;
    status = Measure(p, ctx, s, all, text);
    Results(text, all, s, ctx, report.results);
  }
  // Stopped whatever happened: the runner removes the directory next.
  if (Status stopped = KindReleaseWork(p, *dir); !stopped && status) status = stopped;
  return status;
}

double FillLevelAfter(const config::PgbenchParams&, const Json&, double level) {
  return level;  // the target's own file is not written
}

}  // namespace drivewatch::aging
