// SPDX-License-Identifier: Apache-2.0
// unplug_hold: holds two of drivewatch's threads at known points, so that
// the "unplug" VM scenario (tests/vm/unplug) lands a hot-unplug between the
// two commands of one SMART read by construction, instead of racing the
// guest kernel for it. Runs in the guest, as root:
//
//   unplug_hold PID CONTROLLER_NODE TIMEOUT_S <commands >report
//
// It traces PID's threads (ptrace, system call stops) and holds, each in its
// system call entry stop:
//   discovery  the thread that opens /sys/class/nvme (the start of every
//              discovery scan), so the daemon cannot see the controller go
//              and stop its probes before they have sent their commands;
//   probe      the first thread that sends Get Log Page 02h (the SMART log)
//              on CONTROLLER_NODE right after a successful Identify
//              Controller on it: the health or the thermal probe, half-way
//              through its run.
// Every other thread is let go (a thread seen sleeping for its I/O or its
// pacing at once: the read latency and HTTP threads, whose system calls
// would otherwise all stop here). Once both are held it prints
// "ready discovery=TID probe=TID" and reads commands, one a line:
//   probe       let the probe's Get Log Page go on
//   discovery   let the discovery scan go on
// It exits 0 when both are let go (end of input lets go of both), 1 if
// TIMEOUT_S passed before both were held (everything is let go, and what it
// saw is on stderr), 2 on a usage or ptrace error.
//
// Why not from the host: QEMU completes an admin command as soon as the
// guest rings the doorbell (no block I/O behind Identify or the SMART log
// to hold), and the daemon's discovery, which stops the probes of a
// controller it sees "deleting", runs every second at a phase the host
// cannot see. A thread held at a system call is a point the host can wait
// for.

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

namespace {

// <linux/nvme_ioctl.h>: _IOWR('N', 0x41, struct nvme_passthru_cmd) and
// _IOWR('N', 0x48, struct nvme_passthru_cmd64). Both structs start with
// opcode (byte 0) and have cdw10 at byte 40.
constexpr unsigned long kAdminCmd = 0xC0484E41;
constexpr unsigned long kAdminCmd64 = 0xC0504E47;
constexpr std::uint8_t kOpGetLogPage = 0x02;
constexpr std::uint8_t kOpIdentify = 0x06;
constexpr std::uint32_t kCnsController = 0x01;  // Identify CDW10 bits 7:0
constexpr std::uint32_t kLidSmart = 0x02;       // Get Log Page CDW10 bits 7:0

struct Thread {
  std::uint64_t nr = 0;  // the system call of the last entry stop
  std::uint64_t args[6] = {};
  // The last admin command this thread sent on the controller was a
  // successful Identify Controller.
  bool identified = false;
  bool letting_go = false;  // interrupted to be detached at its next stop
};

pid_t g_pid;
std::string g_node;
std::map<pid_t, Thread> g_threads;
pid_t g_discovery = 0;
pid_t g_probe = 0;
volatile sig_atomic_t g_timed_out = 0;
unsigned g_admin_seen = 0;  // for the timeout's report
unsigned g_scans_seen = 0;

void OnAlarm(int) { g_timed_out = 1; }

bool ReadMemory(pid_t tid, std::uint64_t addr, void* out, std::size_t len) {
  iovec local{out, len};
  iovec remote{reinterpret_cast<void*>(addr), len};
  return process_vm_readv(tid, &local, 1, &remote, 1, 0) ==
         static_cast<ssize_t>(len);
}

std::string ReadString(pid_t tid, std::uint64_t addr) {
  char buf[64] = {};
  // The path may end near a page boundary: read what fits.
  for (std::size_t len = sizeof(buf) - 1; len > 0; len /= 2) {
    if (ReadMemory(tid, addr, buf, len)) return std::string(buf, strnlen(buf, len));
  }
  return {};
}

bool IsController(std::uint64_t fd) {
  char link[64];
  std::snprintf(link, sizeof(link), "/proc/%d/fd/%llu", static_cast<int>(g_pid),
                static_cast<unsigned long long>(fd));
  char target[256];
  const ssize_t n = readlink(link, target, sizeof(target) - 1);
  return n > 0 && std::string(target, static_cast<std::size_t>(n)) == g_node;
}

// An admin passthrough on the controller: its opcode and CDW10.
bool AdminCommand(pid_t tid, const Thread& t, std::uint8_t* opcode,
                  std::uint32_t* cdw10) {
  if (t.nr != SYS_ioctl || (t.args[1] != kAdminCmd && t.args[1] != kAdminCmd64) ||
      !IsController(t.args[0])) {
    return false;
  }
  unsigned char cmd[44];
  if (!ReadMemory(tid, t.args[2], cmd, sizeof(cmd))) return false;
  *opcode = cmd[0];
  std::memcpy(cdw10, cmd + 40, sizeof(*cdw10));
  return true;
}

// System calls of threads that are not the discovery or a drive's probe
// thread: those sleep in their I/O or pacing (read latency), or in an event
// loop (HTTP).
bool NotOurs(std::uint64_t nr) {
  switch (nr) {
    case SYS_io_uring_enter:
    case SYS_clock_nanosleep:
    case SYS_nanosleep:
    case SYS_epoll_wait:
    case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
    case SYS_epoll_pwait2:
#endif
      return true;
    default:
      return false;
  }
}

void Detach(pid_t tid, int sig) {
  ptrace(PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(sig)));
  g_threads.erase(tid);
}

// A system call stop: hold, let go or resume the thread.
void OnSyscallStop(pid_t tid, Thread& t) {
  __ptrace_syscall_info info{};
  if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, reinterpret_cast<void*>(sizeof(info)),
             &info) <= 0) {
    ptrace(PTRACE_SYSCALL, tid, nullptr, nullptr);
    return;
  }
  if (t.letting_go) {
    Detach(tid, 0);
    return;
  }
  std::uint8_t opcode = 0;
  std::uint32_t cdw10 = 0;
  if (info.op == PTRACE_SYSCALL_INFO_ENTRY) {
    t.nr = info.entry.nr;
    std::memcpy(t.args, info.entry.args, sizeof(t.args));
    if (NotOurs(t.nr)) {
      Detach(tid, 0);
      return;
    }
    if (t.nr == SYS_openat && ReadString(tid, t.args[1]) == "/sys/class/nvme") {
      ++g_scans_seen;
      if (g_discovery == 0) {
        g_discovery = tid;
        std::printf("held discovery %d\n", static_cast<int>(tid));
        std::fflush(stdout);
        return;  // stays in its entry stop
      }
    }
    if (AdminCommand(tid, t, &opcode, &cdw10)) {
      ++g_admin_seen;
      const bool smart = opcode == kOpGetLogPage && (cdw10 & 0xff) == kLidSmart;
      if (smart && t.identified && g_probe == 0) {
        g_probe = tid;
        std::printf("held probe %d\n", static_cast<int>(tid));
        std::fflush(stdout);
        return;
      }
      t.identified = false;
    }
  } else if (info.op == PTRACE_SYSCALL_INFO_EXIT) {
    if (AdminCommand(tid, t, &opcode, &cdw10) && opcode == kOpIdentify &&
        (cdw10 & 0xff) == kCnsController) {
      t.identified = info.exit.rval == 0 && !info.exit.is_error;
    }
  }
  ptrace(PTRACE_SYSCALL, tid, nullptr, nullptr);
}

// Waits for and handles one stop of a traced thread. False when waitpid
// failed (the alarm, or no thread left).
bool Step() {
  int status = 0;
  const pid_t tid = waitpid(-1, &status, __WALL);
  if (tid < 0) return false;
  auto it = g_threads.find(tid);
  if (it == g_threads.end()) return true;
  if (WIFEXITED(status) || WIFSIGNALED(status)) {
    g_threads.erase(it);
    return true;
  }
  if (!WIFSTOPPED(status)) return true;
  const int sig = WSTOPSIG(status);
  const int event = status >> 16;
  if (sig == (SIGTRAP | 0x80)) {
    OnSyscallStop(tid, it->second);
  } else if (event == PTRACE_EVENT_STOP) {
    // The stop PTRACE_INTERRUPT asked for (or a group stop).
    if (it->second.letting_go) {
      Detach(tid, 0);
    } else {
      ptrace(PTRACE_SYSCALL, tid, nullptr, nullptr);
    }
  } else {
    // A signal for the daemon: deliver it.
    if (it->second.letting_go) {
      Detach(tid, sig);
    } else {
      ptrace(PTRACE_SYSCALL, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(sig)));
    }
  }
  return true;
}

// Lets go of every thread except the held ones (all of them with `all`).
void LetGo(bool all) {
  for (auto& [tid, t] : g_threads) {
    // The held threads are in a stop already: detached below.
    if (tid == g_discovery || tid == g_probe) continue;
    t.letting_go = true;
    ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr);
  }
  alarm(0);
  g_timed_out = 0;
  for (;;) {
    bool pending = false;
    for (auto& [tid, t] : g_threads) pending |= t.letting_go;
    if (!pending) break;
    if (!Step() && errno != EINTR) break;
  }
  if (all) {
    if (g_discovery != 0 && g_threads.count(g_discovery)) Detach(g_discovery, 0);
    if (g_probe != 0 && g_threads.count(g_probe)) Detach(g_probe, 0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: unplug_hold PID CONTROLLER_NODE TIMEOUT_S\n");
    return 2;
  }
  g_pid = static_cast<pid_t>(std::atoi(argv[1]));
  g_node = argv[2];
  const unsigned timeout = static_cast<unsigned>(std::atoi(argv[3]));

  const std::string task_dir = "/proc/" + std::to_string(g_pid) + "/task";
  DIR* d = opendir(task_dir.c_str());
  if (d == nullptr) {
    std::fprintf(stderr, "unplug_hold: %s: %s\n", task_dir.c_str(), std::strerror(errno));
    return 2;
  }
  while (const dirent* e = readdir(d)) {
    const pid_t tid = static_cast<pid_t>(std::atoi(e->d_name));
    if (tid <= 0) continue;
    if (ptrace(PTRACE_SEIZE, tid, nullptr,
               reinterpret_cast<void*>(static_cast<long>(PTRACE_O_TRACESYSGOOD))) != 0 ||
        ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) {
      std::fprintf(stderr, "unplug_hold: ptrace %d: %s\n", static_cast<int>(tid),
                   std::strerror(errno));
      continue;
    }
    g_threads[tid];
  }
  closedir(d);
  if (g_threads.empty()) return 2;

  struct sigaction sa {};
  sa.sa_handler = OnAlarm;  // no SA_RESTART: the alarm ends waitpid
  sigaction(SIGALRM, &sa, nullptr);
  alarm(timeout);
  while ((g_discovery == 0 || g_probe == 0) && !g_timed_out) {
    if (!Step() && errno != EINTR) break;
  }
  if (g_discovery == 0 || g_probe == 0) {
    std::fprintf(stderr,
                 "unplug_hold: after %u s: discovery %s, probe %s (%u scans and "
                 "%u admin commands on %s seen, %zu threads traced)\n",
                 timeout, g_discovery ? "held" : "not held", g_probe ? "held" : "not held",
                 g_scans_seen, g_admin_seen, g_node.c_str(), g_threads.size());
    LetGo(true);
    return 1;
  }
  LetGo(false);
  std::printf("ready discovery=%d probe=%d\n", static_cast<int>(g_discovery),
              static_cast<int>(g_probe));
  std::fflush(stdout);

  char line[64];
  while ((g_discovery != 0 || g_probe != 0) && std::fgets(line, sizeof(line), stdin)) {
    const std::string cmd(line, strcspn(line, "\r\n"));
    pid_t* which = cmd == "probe" ? &g_probe : cmd == "discovery" ? &g_discovery : nullptr;
    if (which == nullptr || *which == 0) continue;
    Detach(*which, 0);
    *which = 0;
    std::printf("released %s\n", cmd.c_str());
    std::fflush(stdout);
  }
  if (g_probe != 0) Detach(g_probe, 0);
  if (g_discovery != 0) Detach(g_discovery, 0);
  return 0;
}
