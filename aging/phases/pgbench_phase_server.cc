// SPDX-License-Identifier: Apache-2.0
// The pgbench phase's private PostgreSQL server (pgbench_phase_server.h
// draws its work directory): made by initdb, started by pg_ctl on a Unix
// socket only, asked through psql, stopped and taken apart as its own
// account, so drivewatch never needs to override file permissions.
#include "aging/phases/pgbench_phase_server.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace drivewatch::aging::pgbench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kRole = "drivewatch";
constexpr int kPort = 5432;  // only names the socket: no TCP
constexpr const char* kSocketFile = "/.s.PGSQL.5432";

}  // namespace

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
                     root + "/N/bin (expected Debian's package " + kPackage + ": apt install " +
                     kPackage + ")"};
  }
  return root + "/" + std::to_string(best) + "/bin";
}

Expected<Account> ServerAccount() {
  if (::geteuid() != 0) return Account{::geteuid(), ::getegid(), ""};
  const passwd* pw = ::getpwnam("postgres");
  if (pw == nullptr) {
    return Error{ENOENT, -1,
                 "PostgreSQL refuses to run as root, and there is no postgres account to run it "
                 "as (expected Debian's package " +
                     std::string(kPackage) + ", which makes it)"};
  }
  return Account{pw->pw_uid, pw->pw_gid, pw->pw_name};
}

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

namespace {

// Runs `argv` as `account`, its output appended to `log`, and waits,
// calling `tick` every 50 ms. When `ctx` is given and the phase is
// stopped, the tool gets SIGINT, then SIGKILL 10 s later. Returns its exit
// status (128 + signal when killed).

// Runs `argv` as `account`, its output appended to `log`, and waits,
// calling `tick` every 50 ms. When `ctx` is given and the phase is
// stopped, the tool gets SIGINT, then SIGKILL 10 s later. Returns its exit
// status (128 + signal when killed).
Expected<int> RunTool(const std::vector<std::string>& argv, const Account& account,
                      const std::string& log, PhaseContext* ctx, const std::function<void()>& tick,
                      const ChildFifos* fifos = nullptr) {
  // drivewatch's: the tool writes it through the descriptor it inherits.
  const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (out < 0) return Error{errno, -1, log + ": cannot open: " + std::strerror(errno)};
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
      // The account writes it; drivewatch reads it as its group.
      if (::mkfifo(name, 0600) != 0 || ::chmod(name, 0660) != 0 ||
          (account.uid != ::geteuid() && ::chown(name, account.uid, ::getegid()) != 0)) {
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
            "drivewatch needs CAP_SETUID and CAP_SETGID; under systemd, the drop-in "
            "share/drivewatch/systemd/pgbench.conf)\n";
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

// Makes `path` (a directory when `directory`, else an empty file) with
// `mode` and hands it to the account, in drivewatch's group: the account
// owns it, drivewatch reads it through the group's bits.
Status HandOver(const std::string& path, bool directory, mode_t mode, const Account& account) {
  const int made =
      directory ? ::mkdir(path.c_str(), 0700)
                : ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (made < 0) return Error{errno, -1, path + ": cannot make it: " + std::strerror(errno)};
  if (!directory) ::close(made);
  if (::chmod(path.c_str(), mode) != 0 ||
      (account.uid != ::geteuid() && ::chown(path.c_str(), account.uid, ::getegid()) != 0)) {
    return Error{errno, -1,
                 path + ": cannot hand it to the server's account " + account.name + ": " +
                     std::strerror(errno) +
                     " (drivewatch needs CAP_CHOWN; under systemd, the drop-in "
                     "share/drivewatch/systemd/pgbench.conf)"};
  }
  return Ok{};
}

// The socket directory's address for clients and the server: `socket`
// itself, or, when its socket's path would not fit a Unix socket's
// address (107 bytes), a link to it in a private directory under /tmp,
// named in work/socket-link for Release to remove.
Expected<std::string> SocketAddress(const std::string& work, const std::string& socket) {
  if (socket.size() + std::strlen(kSocketFile) < sizeof(sockaddr_un{}.sun_path)) return socket;
  char name[] = "/tmp/drivewatch-pg.XXXXXX";
  if (::mkdtemp(name) == nullptr || ::chmod(name, 0711) != 0) {
    return Error{errno, -1,
                 socket +
                     ": too long for a Unix socket's address, and no short link to it can "
                     "be made under /tmp: " +
                     std::strerror(errno)};
  }
  const std::string link = std::string(name) + "/s";
  std::ofstream(work + "/socket-link") << name << "\n";
  if (::symlink(socket.c_str(), link.c_str()) != 0) {
    return Error{errno, -1, link + ": cannot link it to " + socket + ": " + std::strerror(errno)};
  }
  return link;
}

// Removes the short link SocketAddress made, if any: only a directory
// named as it names them, drivewatch's, holding that link alone.
void RemoveSocketLink(const std::string& work) {
  std::ifstream in(work + "/socket-link");
  std::string dir;
  if (!std::getline(in, dir) || dir.rfind("/tmp/drivewatch-pg.", 0) != 0 ||
      dir.find('/', 5) != std::string::npos) {
    return;
  }
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) return;
  ::unlink((dir + "/s").c_str());
  ::rmdir(dir.c_str());
}

}  // namespace

std::vector<std::string> Server::Client(const std::string& tool) const {
  return {bin + "/" + tool, "-h", socket_directory, "-p", std::to_string(kPort), "-U", kRole};
}

Status Server::Run(std::vector<std::string> argv, const std::string& doing, PhaseContext* ctx,
                   const std::function<void()>& tick, const ChildFifos* fifos) const {
  auto rc = RunTool(argv, account, log, ctx, tick, fifos);
  if (!rc) return rc.error();
  if (*rc != 0 && !(ctx != nullptr && ctx->stopped())) {
    return Error{EIO, -1,
                 doing + ": " + argv[0] + " exited " + std::to_string(*rc) + " (" + log + ": " +
                     Tail(log) + ")"};
  }
  return Ok{};
}

Expected<std::string> Server::Ask(const std::string& sql) const {
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

Status Start(unsigned scale, unsigned clients, PhaseContext& ctx, Server& s) {
  // The account reaches its own directories through drivewatch's.
  if (s.account.uid != ::geteuid() && ::chmod(s.work.c_str(), 0711) != 0) {
    return Error{errno, -1,
                 s.work + ": cannot open it to the server's account: " + std::strerror(errno)};
  }
  const std::string socket = s.work + "/socket";
  for (const auto& [path, directory, mode] :
       {std::tuple{s.Cluster(), true, mode_t{0700}}, std::tuple{socket, true, mode_t{0700}},
        std::tuple{s.work + "/server.log", false, mode_t{0640}},
        std::tuple{s.work + "/answer.txt", false, mode_t{0640}}}) {
    if (Status made = HandOver(path, directory, mode, s.account); !made) return made;
  }
  auto address = SocketAddress(s.work, socket);
  if (!address) return address.error();
  s.socket_directory = *address;
  ctx.Progress("initdb", 0);
  if (Status st = s.Run({s.bin + "/initdb", "-D", s.Cluster(), "-U", kRole, "-A", "trust", "-E",
                         "UTF8", "--no-instructions"},
                        "making the cluster");
      !st) {
    return st;
  }
  // No JIT: pgbench's statements never reach its cost threshold, and a
  // service without writable executable memory (MemoryDenyWriteExecute=)
  // cannot have it.
  // PostgreSQL's 100 connections, or the clients' and a few more (pgbench's
  // own, the reserved ones) when they need more.
  const unsigned connections = std::max(100u, clients + 10);
  const std::string options = "-c listen_addresses='' -c unix_socket_directories='" +
                              s.socket_directory + "' -c jit=off -c max_connections=" +
                              std::to_string(connections) + " -p " + std::to_string(kPort);
  if (Status st = s.Run({s.bin + "/pg_ctl", "-D", s.Cluster(), "-l", s.work + "/server.log", "-w",
                         "-t", "120", "-o", options, "start"},
                        "starting the server");
      !st) {
    return st;
  }
  ctx.Progress("initialise", 0);
  std::vector<std::string> init = s.Client("pgbench");
  init.insert(init.end(), {"-i", "-q", "-s", std::to_string(scale), kDatabase});
  return s.Run(init, "initialising pgbench's tables", &ctx);
}

Status Release(const std::string& work_directory) {
  struct stat st;
  const std::string cluster = work_directory + "/cluster";
  if (::lstat(cluster.c_str(), &st) != 0) {
    if (errno != ENOENT) return Error{errno, -1, cluster + ": lstat: " + std::strerror(errno)};
    RemoveSocketLink(work_directory);
    return Ok{};
  }
  auto bin = PostgresBin();
  auto account = ServerAccount();
  if (!bin || !account) {
    return Error{ENOENT, -1,
                 "a PostgreSQL server may still run in " + cluster +
                     ", and it cannot be stopped: " +
                     (!bin ? bin.error().message : account.error().message)};
  }
  // Not handed over (the run stopped before it was): no server ran there,
  // and drivewatch removes it itself.
  if (st.st_uid != account->uid) {
    RemoveSocketLink(work_directory);
    return Ok{};
  }
  const std::string log = work_directory + "/stop.log";
  // pg_ctl status: 0 running, 3 not running, 4 no cluster (initdb killed).
  auto running = RunTool({*bin + "/pg_ctl", "-D", cluster, "status"}, *account, log, nullptr, {});
  if (!running) return running.error();
  Server s{*bin, work_directory, log, *account, ""};
  if (*running == 0) {
    if (Status stopped =
            s.Run({*bin + "/pg_ctl", "-D", cluster, "-w", "-t", "60", "-m", "immediate", "stop"},
                  "stopping the server");
        !stopped) {
      return stopped;
    }
  } else if (*running != 3 && *running != 4) {
    return Error{EIO, -1,
                 "whether a PostgreSQL server still runs in " + cluster +
                     " cannot be told: " + "pg_ctl status exited " + std::to_string(*running) +
                     " (" + log + ": " + Tail(log) + ")"};
  }
  RemoveSocketLink(work_directory);
  if (account->uid == ::geteuid()) return Ok{};
  // What the account made, taken apart as the account (never following a
  // link, never leaving the file system): drivewatch removes the rest.
  return s.Run(
      {"/usr/bin/find", cluster, work_directory + "/socket", "-xdev", "-mindepth", "1", "-delete"},
      "removing the cluster");
}

}  // namespace drivewatch::aging::pgbench
