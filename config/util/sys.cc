// SPDX-License-Identifier: Apache-2.0
#include "config/util/sys.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace drivewatch::util {
namespace {

// sysfs serves at most a page per attribute.
constexpr std::size_t kMaxAttribute = 4096;

}  // namespace

Error SysError(int err, std::string_view subject, std::string_view call) {
  std::string message(subject);
  if (!call.empty()) {
    message += ": ";
    message += call;
  }
  message += ": ";
  message += std::strerror(err);
  return Error{err, -1, std::move(message)};
}

FdCloser::~FdCloser() {
  if (fd_ >= 0) ::close(fd_);
}

Status FsyncDirectory(const std::string& dir) {
  FdCloser fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return SysError(errno, dir, "open directory");
  if (::fsync(fd.get()) != 0) return SysError(errno, dir, "fsync directory");
  return Ok{};
}

Expected<std::string> ReadAttribute(const std::string& path, std::string_view blanks) {
  FdCloser fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return SysError(errno, path);
  std::string text;
  char buf[kMaxAttribute];
  while (text.size() < kMaxAttribute) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return SysError(errno, path, "read");
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  return Trim(text, blanks);
}

}  // namespace drivewatch::util
