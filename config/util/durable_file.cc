// SPDX-License-Identifier: Apache-2.0
#include "config/util/durable_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
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

// Reads from `fd` until its end or until `limit` bytes are in.
Expected<std::string> ReadUpTo(int fd, std::size_t limit, const std::string& path) {
  std::string out;
  char buf[16384];
  while (out.size() < limit) {
    const ssize_t n = ::read(fd, buf, std::min(sizeof buf, limit - out.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      return SysError(errno, path, "read");
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
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
  util::FdCloser closer(fd);
  return ReadUpTo(fd, std::string::npos, path);
}

Expected<std::string> ReadWholeFile(const std::string& path, std::size_t max_bytes,
                                    std::string_view what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SysError(errno, path, "open");
  util::FdCloser closer(fd);
  const auto too_large = [&](const std::string& size) {
    return Error{EFBIG, -1,
                 path + ": " + size + ", larger than " + std::string(what) +
                     " may be (expected at most " + std::to_string(max_bytes) + " bytes)"};
  };
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    return too_large(std::to_string(st.st_size) + " bytes");
  }
  // Not regular (a FIFO, a /proc file), or growing: its size says nothing,
  // so what it yields is bounded instead.
  Expected<std::string> data = ReadUpTo(fd, max_bytes + 1, path);
  if (data && data->size() > max_bytes) {
    return too_large("more than " + std::to_string(max_bytes) + " bytes");
  }
  return data;
}

Expected<std::string> ReadFileHead(const std::string& path, std::size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SysError(errno, path, "open");
  util::FdCloser closer(fd);
  return ReadUpTo(fd, max_bytes, path);
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
