// SPDX-License-Identifier: Apache-2.0
#include "aging/runner/phase_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

namespace drivewatch::aging::phase_detail {
namespace {

std::string SafeName(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_';
  return out;
}

}  // namespace

Expected<StateLock> StateLock::Take(const std::string& path, const std::string& holder) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return Error{errno, -1, path + ": " + std::strerror(errno)};
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[256] = {};
    const ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    close(fd);
    std::string who = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "another run";
    while (!who.empty() && who.back() == '\n') who.pop_back();
    return Error{err == EWOULDBLOCK ? EBUSY : err, -1, "busy: " + who};
  }
  const std::string text = holder + " (pid " + std::to_string(getpid()) + ")\n";
  if (ftruncate(fd, 0) == 0) (void)!pwrite(fd, text.data(), text.size(), 0);
  StateLock lock;
  lock.fd_ = fd;
  return lock;
}

std::string TargetLockPath(const std::string& state_directory, const std::string& target) {
  return state_directory + "/phases/target-" + SafeName(target) + ".lock";
}

std::string DriveLockPath(const std::string& state_directory, const std::string& serial) {
  return state_directory + "/phases/drive-" + SafeName(serial) + ".lock";
}

}  // namespace drivewatch::aging::phase_detail
