// SPDX-License-Identifier: Apache-2.0
// pgbench: PostgreSQL's TPC-B-like benchmark on a server drivewatch starts
// for the run, the way Phoronix's pts/pgbench measures a drive:
//   1. The run's work directory is made on the target's file system
//      (PhaseContext::WorkDirectory: the write gate, a retention study,
//      the free-space reserve), sized for the scale factor, and handed to
//      the account the server runs as (drivewatch's own; when drivewatch
//      runs as root, which PostgreSQL refuses, Debian's postgres account).
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
//   5. The server is stopped; the runner removes the work directory. A
//      server left by a crash is stopped first (KindReleaseWork).
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/un.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <variant>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "aging/phases/phase.h"
#include "probes/latency/latency_histogram.h"

namespace drivewatch::aging {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kPackage = "postgresql-15";
constexpr const char* kDatabase = "postgres";
constexpr const char* kRole = "drivewatch";
constexpr int kPort = 5432;  // only names the socket: no TCP

// Debian's PostgreSQL server binaries: the newest major version's.
Expected<std::string> PostgresBin() {
  const std::string root = "/usr/lib/postgresql";
  int best = -1;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(root, ec)) {
    const std::string name = e.path().filename();
    int major = 0;
    auto [end, err] = std::from_chars(name.data(), name.data() + name.size(), major);
    if (err != std::errc{} || end != name.data() + name.size()) continue;
    bool complete = true;
    for (const char* tool : {"initdb", "pg_ctl", "postgres", "pgbench", "psql"}) {
      complete = complete && ::access((e.path() / "bin" / tool).c_str(), X_OK) == 0;
    }
    if (complete) best = std::max(best, major);
  }
  if (best < 0) {
    return Error{ENOENT, -1,
                 "no PostgreSQL server binaries (initdb, pg_ctl, postgres, pgbench, psql) under " +
                     root + "/N/bin (expected Debian's package " + kPackage +
                     ": apt install " + kPackage + ")"};
  }
  return root + "/" + std::to_string(best) + "/bin";
}

// Who the server and its tools run as.
struct Account {
  uid_t uid;
  gid_t gid;
  std::string name;
};

Expected<Account> ServerAccount() {
  if (::geteuid() != 0) return Account{::geteuid(), ::getegid(), ""};
  const passwd* pw = ::getpwnam("postgres");
  if (pw == nullptr) {
    return Error{ENOENT, -1,
                 "PostgreSQL refuses to run as root, and there is no postgres account to run it "
                 "as (expected Debian's package " + std::string(kPackage) + ", which makes it)"};
  }
  return Account{pw->pw_uid, pw->pw_gid, pw->pw_name};
}

// FIFOs the child makes before it execs, for a tool that names its
// files after its own pid: <prefix>.<pid> and <prefix>.<pid>.<n> for n
// from 1 to count - 1 (pgbench -l, one per thread). Made by the child, as
// only it knows its pid before it runs, owned by the tool's account.
struct ChildFifos {
  std::string prefix;
  unsigned count = 0;
  // Called in drivewatch once the child runs, with its pid.
  std::function<void(pid_t)> started;
};

// "<prefix>.<pid>[.<n>]" into `out`, in the child: no allocation.
void FifoName(const std::string& prefix, pid_t pid, unsigned n, char (&out)[4096]) {
  std::size_t at = 0;
  const auto put = [&](char c) {
    if (at + 1 < sizeof out) out[at++] = c;
  };
  const auto number = [&](unsigned long v) {
    char digits[24];
    int k = 0;
    do {
      digits[k++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (k > 0) put(digits[--k]);
  };
  for (char c : prefix) put(c);
  put('.');
  number(static_cast<unsigned long>(pid));
  if (n > 0) {
    put('.');
    number(n);
  }
  out[at] = 0;
}

// Runs `argv` as `account`, its output appended to `log`, and waits,
// calling `tick` every 50 ms. When `ctx` is given and the phase is
// stopped, the tool gets SIGINT, then SIGKILL 10 s later. Returns its exit
// status (128 + signal when killed).
Expected<int> RunTool(const std::vector<std::string>& argv, const Account& account,
                      const std::string& log, PhaseContext* ctx,
                      const std::function<void()>& tick, const ChildFifos* fifos = nullptr) {
  const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (out < 0) return Error{errno, -1, log + ": cannot open: " + std::strerror(errno)};
  if (account.uid != ::geteuid() && ::fchown(out, account.uid, account.gid) != 0) {
    const int err = errno;
    ::close(out);
    return Error{err, -1, log + ": cannot hand it to the server's account: " + std::strerror(err)};
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out);
    return Error{errno, -1, argv[0] + ": cannot fork: " + std::strerror(errno)};
  }
  if (pid == 0) {
    // The child: only async-signal-safe calls until exec.
    ::dup2(out, 1);
    ::dup2(out, 2);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    for (unsigned n = 0; fifos != nullptr && n < fifos->count; ++n) {
      char name[4096];
      FifoName(fifos->prefix, ::getpid(), n, name);
      if (::mkfifo(name, 0600) != 0 ||
          (account.uid != ::geteuid() && ::chown(name, account.uid, account.gid) != 0)) {
        static constexpr char kNoFifo[] = "drivewatch: cannot make the transaction log's FIFO\n";
        (void)!::write(2, kNoFifo, sizeof kNoFifo - 1);
        ::_exit(125);
      }
    }
    if (account.uid != ::geteuid()) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(account.gid) != 0 ||
          ::setuid(account.uid) != 0) {
        static constexpr char kNoSwitch[] =
            "drivewatch: cannot switch to the server's account (setgid/setuid refused: "
            "drivewatch needs CAP_SETUID and CAP_SETGID)\n";
        (void)!::write(2, kNoSwitch, sizeof kNoSwitch - 1);
        ::_exit(126);
      }
    }
    ::execv(args[0], args.data());
    static constexpr char kNoExec[] = "drivewatch: cannot execute the tool\n";
    (void)!::write(2, kNoExec, sizeof kNoExec - 1);
    ::_exit(127);
  }
  ::close(out);
  if (fifos != nullptr && fifos->started) fifos->started(pid);
  int status = 0;
  auto interrupted = Clock::time_point::max();
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) return Error{errno, -1, argv[0] + ": waitpid failed"};
    if (ctx != nullptr && ctx->stopped()) {
      if (interrupted == Clock::time_point::max()) {
        ::kill(pid, SIGINT);
        interrupted = Clock::now();
      } else if (Clock::now() - interrupted > std::chrono::seconds{10}) {
        ::kill(pid, SIGKILL);
      }
    }
    if (tick) tick();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

// The last lines of a tool's log, for an error.
std::string Tail(const std::string& log) {
  std::ifstream in(log);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (lines.size() > 3) lines.erase(lines.begin());
  }
  std::string out;
  for (const std::string& l : lines) out += (out.empty() ? "" : " | ") + l;
  return out;
}

// What one run needs to reach its server.
struct Server {
  std::string bin, work, cluster, log;
  Account account;

  std::vector<std::string> Client(const std::string& tool) const {
    return {bin + "/" + tool, "-h", work, "-p", std::to_string(kPort), "-U", kRole};
  }
  // Runs a tool; an exit status other than 0 is an Error naming it and
  // the end of its log.
  Status Run(std::vector<std::string> argv, const std::string& doing,
             PhaseContext* ctx = nullptr, const std::function<void()>& tick = {},
             const ChildFifos* fifos = nullptr) const {
    auto rc = RunTool(argv, account, log, ctx, tick, fifos);
    if (!rc) return rc.error();
    if (*rc != 0 && !(ctx != nullptr && ctx->stopped())) {
      return Error{EIO, -1,
                   doing + ": " + argv[0] + " exited " + std::to_string(*rc) + " (" + log +
                       ": " + Tail(log) + ")"};
    }
    return Ok{};
  }
  // One value of `sql`, through psql.
  Expected<std::string> Ask(const std::string& sql) const {
    const std::string answer = work + "/answer.txt";
    std::vector<std::string> argv = Client("psql");
    for (const char* a : {"-X", "-A", "-t", "-q", "-d", kDatabase, "-o"}) argv.push_back(a);
    argv.push_back(answer);
    argv.push_back("-c");
    argv.push_back(sql);
    if (Status s = Run(argv, "asking the server " + sql); !s) return s.error();
    std::ifstream in(answer);
    std::string line;
    std::getline(in, line);
    return line;
  }
};

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

Status Start(const config::PgbenchParams& p, PhaseContext& ctx, Server& s) {
  if (s.work.size() + 20 > sizeof(sockaddr_un{}.sun_path)) {
    return Error{ENAMETOOLONG, -1,
                 s.work + ": too long for the server's Unix socket in it (.s.PGSQL.5432; at "
                          "most 107 bytes in all): give the target a shorter directory"};
  }
  if (s.account.uid != ::geteuid() && ::chown(s.work.c_str(), s.account.uid, s.account.gid) != 0) {
    return Error{errno, -1, s.work + ": cannot hand it to the account " + s.account.name};
  }
  ctx.Progress("initdb", 0);
  if (Status st = s.Run({s.bin + "/initdb", "-D", s.cluster, "-U", kRole, "-A", "trust", "-E",
                         "UTF8", "--no-instructions"},
                        "making the cluster");
      !st) {
    return st;
  }
  const std::string options = "-c listen_addresses='' -c unix_socket_directories='" + s.work +
                              "' -p " + std::to_string(kPort);
  if (Status st = s.Run({s.bin + "/pg_ctl", "-D", s.cluster, "-l", s.work + "/server.log",
                         "-w", "-t", "120", "-o", options, "start"},
                        "starting the server");
      !st) {
    return st;
  }
  ctx.Progress("initialise", 0);
  std::vector<std::string> init = s.Client("pgbench");
  init.insert(init.end(), {"-i", "-q", "-s", std::to_string(p.scale), kDatabase});
  return s.Run(init, "initialising pgbench's tables", &ctx);
}

}  // namespace

Status KindTools(const config::PgbenchParams&) {
  if (auto bin = PostgresBin(); !bin) return bin.error();
  if (auto account = ServerAccount(); !account) return account.error();
  return Ok{};
}

Status KindPreflight(const config::PgbenchParams& p, const std::string&) {
  return KindTools(p);
}

Status CheckKindTools(const config::PhaseParams& params) {
  return std::visit([](const auto& p) { return KindTools(p); }, params);
}

Status KindReleaseWork(const config::PgbenchParams&, const std::string& work_directory) {
  const std::string cluster = work_directory + "/cluster";
  if (::access((cluster + "/postmaster.pid").c_str(), F_OK) != 0) return Ok{};
  auto bin = PostgresBin();
  auto account = ServerAccount();
  if (!bin || !account) {
    return Error{ENOENT, -1,
                 "a PostgreSQL server may still run in " + cluster +
                     ", and it cannot be stopped: " +
                     (!bin ? bin.error().message : account.error().message)};
  }
  Server s{*bin, work_directory, cluster, work_directory + "/stop.log", *account};
  return s.Run({s.bin + "/pg_ctl", "-D", cluster, "-w", "-t", "60", "-m", "immediate", "stop"},
               "stopping the server");
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
  auto bin = PostgresBin();
  if (!bin) return bin.error();
  auto account = ServerAccount();
  if (!account) return account.error();
  auto dir = ctx.WorkDirectory(ClusterBytes(p), "scale");
  if (!dir) return dir.error();
  Server s{*bin, *dir, *dir + "/cluster", *dir + "/tools.log", *account};
  Status status = Start(p, ctx, s);
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
