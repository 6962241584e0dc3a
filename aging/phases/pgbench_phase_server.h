// SPDX-License-Identifier: Apache-2.0
// The pgbench phase's private PostgreSQL server: Debian's binaries run as
// the server's account, in the run's work directory (pgbench_phase.cc is
// the phase; this file is the server's life: made, started, asked,
// stopped, removed).
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "aging/phases/phase.h"

namespace drivewatch::aging::pgbench {

inline constexpr const char* kPackage = "postgresql-15";
inline constexpr const char* kDatabase = "postgres";

// Debian's PostgreSQL server binaries: the newest major version's
// /usr/lib/postgresql/N/bin, or an Error naming the package.
Expected<std::string> PostgresBin();

// Who the server and its tools run as: drivewatch's own account, or, when
// drivewatch runs as root (which PostgreSQL refuses), Debian's postgres.
struct Account {
  uid_t uid;
  gid_t gid;
  std::string name;
};
Expected<Account> ServerAccount();

// FIFOs the child makes before it execs, for a tool that names its files
// after its own pid: <prefix>.<pid> and <prefix>.<pid>.<n> for n from 1
// to count - 1 (pgbench -l, one per thread). Made by the child, as only it
// knows its pid before it runs; the tool's account writes them, drivewatch
// reads them.
struct ChildFifos {
  std::string prefix;
  unsigned count = 0;
  // Called in drivewatch once the child runs, with its pid.
  std::function<void(pid_t)> started;
};
// "<prefix>.<pid>[.<n>]" into `out`, in the child: no allocation.
void FifoName(const std::string& prefix, pid_t pid, unsigned n, char (&out)[4096]);

// One run's server: where its binaries, cluster and socket are, and where
// its tools' output goes.
//   work/          drivewatch's (0711 when the account is another one)
//   work/cluster/  the account's, 0700: the data directory
//   work/socket/   the account's, 0700: the server's only socket
//   work/*.log     drivewatch's; server.log and answer.txt the account's,
//                  readable by drivewatch's group
// Nothing the account owns needs drivewatch to override file permissions
// (CAP_DAC_OVERRIDE): only to hand things over (CAP_CHOWN), to switch
// account (CAP_SETUID, CAP_SETGID) and to stop a tool (CAP_KILL).
struct Server {
  std::string bin, work, log;
  Account account;
  // Where clients reach the socket directory: work/socket, or a short
  // link to it when that path is too long for a Unix socket's address.
  std::string socket_directory;

  std::string Cluster() const { return work + "/cluster"; }
  std::vector<std::string> Client(const std::string& tool) const;
  // Runs a tool as the account; an exit status other than 0 is an Error
  // naming it and the end of its log. When `ctx` is given and the phase is
  // stopped, the tool gets SIGINT, then SIGKILL 10 s later; `tick` is
  // called every 50 ms.
  Status Run(std::vector<std::string> argv, const std::string& doing, PhaseContext* ctx = nullptr,
             const std::function<void()>& tick = {}, const ChildFifos* fifos = nullptr) const;
  // One value of `sql`, through psql.
  Expected<std::string> Ask(const std::string& sql) const;
};

// Makes the cluster in `s.work` (initdb), starts the server on its socket
// only (pg_ctl) with room for `clients` sessions, and fills pgbench's
// tables at `scale` (pgbench -i).
Status Start(unsigned scale, unsigned clients, PhaseContext& ctx, Server& s);

// Stops a server left running in `work_directory` (a crash's, or this
// run's), and removes what the account owns there, so that drivewatch can
// remove the rest.
Status Release(const std::string& work_directory);

}  // namespace drivewatch::aging::pgbench
