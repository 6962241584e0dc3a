// SPDX-License-Identifier: Apache-2.0
#include "probes/power_meter.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "config/util/sys.h"

extern char** environ;

namespace drivewatch {
namespace {

using Steady = std::chrono::steady_clock;

// Enough for any number a meter prints; more is a misbehaving command.
constexpr std::size_t kMaxOutput = 4096;

using util::SysError;
using util::Trim;

Expected<double> ReadHwmon(const std::string& path) {
  const std::string what = "meter hwmon " + util::Quote(path);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SysError(errno, what, "open");
  char buf[64];
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  const int saved = errno;
  close(fd);
  if (n < 0) return SysError(saved, what, "read");
  const std::string text = Trim(std::string(buf, static_cast<std::size_t>(n)));
  char* end = nullptr;
  errno = 0;
  const long long microwatts = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || microwatts < 0) {
    return Error{EBADMSG, -1,
                 what + ": read \"" + text +
                     "\", expected a non-negative integer of microwatts"};
  }
  return static_cast<double>(microwatts) / 1e6;
}

std::string FormatTimeout(std::chrono::milliseconds ms) {
  if (ms.count() % 1000 == 0) return std::to_string(ms.count() / 1000) + "s";
  return std::to_string(ms.count()) + "ms";
}

// Starts `command` with its stdout on `stdout_fd` and stdin and stderr on
// /dev/null; posix_spawn's error number, 0 when it started.
int Spawn(const std::vector<std::string>& command, int stdout_fd, pid_t* pid) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null",
                                   O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, stdout_fd, STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null",
                                   O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so a timeout kills whatever it started too. The
  // daemon blocks SIGTERM/SIGINT/SIGHUP for sigwait; the child gets them
  // back.
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);

  std::vector<char*> argv;
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int rc = posix_spawn(pid, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return rc;
}

int RemainingMs(Steady::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Reads the command's stdout until it closes it or has printed more than
// kMaxOutput; false when the deadline came first.
bool ReadOutput(int fd, Steady::time_point deadline, std::string* out) {
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, RemainingMs(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    char buf[512];
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;  // EOF: the command closed its stdout
    out->append(buf, static_cast<std::size_t>(n));
    if (out->size() > kMaxOutput) return true;
  }
}

// Waits for the command to exit; false when the deadline came first.
bool AwaitExit(pid_t pid, Steady::time_point deadline, int* status) {
  for (;;) {
    const pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return true;
    if (RemainingMs(deadline) == 0) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// The watts an exited command printed, or why it gave none.
Expected<double> Outcome(const std::string& what, const std::string& out, int status) {
  if (out.size() > kMaxOutput) {
    return Error{EBADMSG, -1,
                 what + ": printed more than " + std::to_string(kMaxOutput) +
                     " bytes, expected one number of watts"};
  }
  if (WIFSIGNALED(status)) {
    return Error{ECHILD, -1,
                 what + ": killed by signal " + std::to_string(WTERMSIG(status))};
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Error{ECHILD, -1,
                 what + ": exit status " + std::to_string(WEXITSTATUS(status)) +
                     ", expected 0"};
  }
  return ParseWatts(out, what);
}

Expected<double> RunCommand(const PowerMeterSpec& spec) {
  const std::string what = "meter command " + util::Quote(spec.command.at(0));
  const auto deadline = Steady::now() + spec.timeout;
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return SysError(errno, what, "pipe");
  pid_t pid = 0;
  const int rc = Spawn(spec.command, pipe_fds[1], &pid);
  close(pipe_fds[1]);
  if (rc != 0) {
    close(pipe_fds[0]);
    return SysError(rc, what, "start");
  }
  std::string out;
  bool timed_out = !ReadOutput(pipe_fds[0], deadline, &out);
  close(pipe_fds[0]);
  int status = 0;
  if (!timed_out) timed_out = !AwaitExit(pid, deadline, &status);
  if (timed_out) {
    kill(-pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return Error{ETIMEDOUT, -1,
                 what + ": timed out after " + FormatTimeout(spec.timeout) +
                     ", killed"};
  }
  return Outcome(what, out, status);
}

}  // namespace

Expected<double> ParseWatts(const std::string& text, const std::string& what) {
  const std::string t = Trim(text);
  char* end = nullptr;
  errno = 0;
  const double watts = t.empty() ? NAN : std::strtod(t.c_str(), &end);
  if (t.empty() || *end != '\0' || errno != 0 || !std::isfinite(watts) ||
      watts < 0 || t.find_first_of("xXnN") != std::string::npos) {
    std::string shown = t.substr(0, 40);
    for (char& c : shown) {
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    }
    return Error{EBADMSG, -1,
                 what + ": printed \"" + shown +
                     "\", expected one non-negative number of watts"};
  }
  return watts;
}

Expected<double> ReadPowerMeter(const PowerMeterSpec& spec) {
  if (!spec.hwmon_path.empty()) return ReadHwmon(spec.hwmon_path);
  if (!spec.command.empty()) return RunCommand(spec);
  return Error{EINVAL, -1, "meter: neither hwmon nor command is set"};
}

}  // namespace drivewatch
