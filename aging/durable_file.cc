// SPDX-License-Identifier: Apache-2.0
#include "aging/durable_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "config/util/sys.h"

namespace drivewatch {
namespace {

using util::SysError;

Status WriteAll(int fd, const std::string& content, const std::string& path) {
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return SysError(errno, path, "write");
    }
    done += static_cast<size_t>(n);
  }
  return Ok{};
}

}  // namespace

Status WriteFileAtomically(const std::string& path, const std::string& content,
                           int mode) {
  const std::filesystem::path target(path);
  const std::string dir = target.has_parent_path()
                              ? target.parent_path().string()
                              : std::string(".");
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                        mode);
  if (fd < 0) return SysError(errno, tmp, "create");
  Status written = WriteAll(fd, content, tmp);
  if (written && ::fsync(fd) != 0) written = SysError(errno, tmp, "fsync");
  if (::close(fd) != 0 && written) written = SysError(errno, tmp, "close");
  if (!written) {
    ::unlink(tmp.c_str());
    return written;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return SysError(err, path, "rename into place");
  }
  return util::FsyncDirectory(dir);
}

Expected<std::string> ReadWholeFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SysError(errno, path, "open");
  std::string out;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return SysError(err, path, "read");
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

Status EnsureDirectory(const std::string& dir) {
  std::error_code ec;
  const bool created = std::filesystem::create_directories(dir, ec);
  if (ec) return Error{ec.value(), -1, dir + ": create directory: " + ec.message()};
  // An existing directory keeps its mode: it may be systemd's StateDirectory.
  if (created) {
    std::filesystem::permissions(dir, std::filesystem::perms(0750),
                                 std::filesystem::perm_options::replace, ec);
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return SysError(errno, dir, "not writable");
  }
  return Ok{};
}

}  // namespace drivewatch
