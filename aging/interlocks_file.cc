// SPDX-License-Identifier: Apache-2.0
// The interlocks of a directory target: drivewatch's own file in the
// operator's test directory, and the free-space reserve it must leave.
#include "aging/interlocks.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "aging/interlocks_refusal.h"
#include "config/util/sys.h"
#include "config/util/text.h"

namespace drivewatch::aging {
namespace {

using interlocks_detail::Humanize;
using interlocks_detail::KeyFor;
using interlocks_detail::kNoOverride;
using interlocks_detail::Refuse;
using util::FdCloser;
using util::Quote;
using util::SysError;

Error DirectoryError(const config::AgingTarget& target, int err) {
  const std::string directory = "aging target " + Quote(target.name) + ": directory " +
                                target.directory + " (aging.targets.directory) ";
  if (err == ENOENT) return Error{err, -1, directory + "does not exist"};
  return SysError(err, directory + "is not usable");
}

}  // namespace

std::string AgingFilePath(const config::AgingTarget& target) {
  return target.directory + "/drivewatch-aging-" + target.name + ".dat";
}

Status CheckFileReserve(const config::AgingTarget& target, std::uint64_t size) {
  const std::string path = AgingFilePath(target);
  struct statvfs vfs;
  if (::statvfs(target.directory.c_str(), &vfs) != 0) {
    return DirectoryError(target, errno);
  }
  // What the file already holds is not taken again.
  long double allocated = 0;
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    allocated = static_cast<long double>(st.st_blocks) * 512;
  }
  const long double frsize = vfs.f_frsize;
  const long double total = static_cast<long double>(vfs.f_blocks) * frsize;
  const long double available = static_cast<long double>(vfs.f_bavail) * frsize;
  const long double free_after =
      available - (static_cast<long double>(size) - allocated);
  const long double reserve = target.min_free_ratio * total;
  if (free_after < reserve) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%g%%", target.min_free_ratio * 100);
    return Refuse(path,
                  "making it " + Humanize(size) + " would leave " +
                      Humanize(free_after < 0 ? 0 : free_after) + " free of " +
                      Humanize(total) + " on its file system (" +
                      Humanize(available) +
                      " free now), below the reserve of " + ratio + " (" +
                      Humanize(reserve) + ")",
                  "lower file_size or " + KeyFor(target, "free_space_reserve"));
  }
  return Ok{};
}

Expected<std::string> PrepareAgingFile(const config::AgingTarget& target) {
  if (target.directory.empty()) {
    return Error{
        EINVAL, -1,
        "aging target " + Quote(target.name) + " is not a directory target"};
  }
  struct stat dir_st;
  if (::stat(target.directory.c_str(), &dir_st) != 0) {
    return DirectoryError(target, errno);
  }
  if (!S_ISDIR(dir_st.st_mode)) return DirectoryError(target, ENOTDIR);
  const std::string path = AgingFilePath(target);
  const std::uint64_t size = target.file_size;
  if (auto ok = CheckFileReserve(target, size); !ok) return ok.error();

  // Only ever our own regular file: not a symlink, device, FIFO, or a hard
  // link to somebody else's file.
  struct stat st;
  bool created = false;
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) {
      return Refuse(path, "it exists and is not a regular file",
                    "remove it; " + std::string(kNoOverride));
    }
  } else if (errno == ENOENT) {
    created = true;
  } else {
    return SysError(errno, path);
  }
  FdCloser fd(::open(path.c_str(),
                     O_CREAT | O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                     0640));
  if (fd.get() < 0) {
    const int err = errno;
    if (err == ELOOP) {
      return Refuse(path, "it is a symbolic link",
                    "remove it; " + std::string(kNoOverride));
    }
    return SysError(err, path, "open");
  }
  const auto fail = [&](const std::string& what) -> Error {
    const int err = errno;
    if (created) ::unlink(path.c_str());
    return SysError(err, path, what);
  };
  if (::fstat(fd.get(), &st) != 0) return fail("fstat");
  if (!S_ISREG(st.st_mode)) {
    return Refuse(path, "it is not a regular file",
                  "remove it; " + std::string(kNoOverride));
  }
  if (st.st_nlink > 1) {
    return Refuse(path,
                  "it has " + std::to_string(st.st_nlink) +
                      " hard links; writing it would change another file",
                  "remove it; " + std::string(kNoOverride));
  }
  if (static_cast<std::uint64_t>(st.st_size) > size &&
      ::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
    return fail("ftruncate");
  }
  if (size > 0 && ::fallocate(fd.get(), 0, 0, static_cast<off_t>(size)) != 0) {
    if (errno != EOPNOTSUPP) return fail("fallocate");
    // No fallocate (e.g. some network file systems): glibc writes zeros.
    if (const int rc = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(size));
        rc != 0) {
      errno = rc;
      return fail("posix_fallocate");
    }
  }
  if (::fsync(fd.get()) != 0) return fail("fsync");
  // A new directory entry is durable only once the directory is synced.
  if (created) {
    FdCloser dir(
        ::open(target.directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir.get() >= 0) ::fsync(dir.get());
  }
  return path;
}

}  // namespace drivewatch::aging
