// SPDX-License-Identifier: Apache-2.0
#include "config/util/direct_open.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>

#include "config/util/sys.h"

namespace drivewatch::util {
namespace {

Status Measure(DirectFile& f, const std::string& path) {
  if (::fstat(f.fd, &f.st) != 0) return SysError(errno, "fstat " + path);
  if (S_ISBLK(f.st.st_mode)) {
    if (::ioctl(f.fd, BLKGETSIZE64, &f.size) != 0) {
      return SysError(errno, "BLKGETSIZE64 " + path);
    }
    int logical = 0;
    if (::ioctl(f.fd, BLKSSZGET, &logical) != 0 || logical <= 0) {
      return SysError(errno, "BLKSSZGET " + path);
    }
    f.logical_block_size = static_cast<std::uint32_t>(logical);
  } else if (S_ISREG(f.st.st_mode)) {
    f.size = static_cast<std::uint64_t>(f.st.st_size);
    struct statx stx {};
    if (::statx(f.fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
        (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align != 0) {
      f.logical_block_size = stx.stx_dio_offset_align;
    }
  }
  return Ok{};
}

}  // namespace

Expected<DirectFile> OpenDirect(const std::string& path, DirectAccess access) {
  const bool write = access == DirectAccess::kReadWrite;
  int flags = (write ? O_RDWR : O_RDONLY) | O_DIRECT | O_CLOEXEC;
  struct stat before {};
  const bool exclusive =
      write && ::stat(path.c_str(), &before) == 0 && S_ISBLK(before.st_mode);
  if (exclusive) flags |= O_EXCL;
  DirectFile f;
  // A read leaves the target's access time alone: no metadata write on the
  // drive under observation for the probe's sake. O_NOATIME is the owner's
  // (or CAP_FOWNER's); anyone else reads as before.
  f.fd = write ? -1 : ::open(path.c_str(), flags | O_NOATIME);
  if (write || (f.fd < 0 && errno == EPERM)) f.fd = ::open(path.c_str(), flags);
  if (f.fd < 0) {
    const int err = errno;
    if (err == EBUSY && exclusive) {
      return Error{EBUSY, -1,
                   path + ": in use (mounted, swapped on, or held by device-mapper, md "
                          "or another exclusive opener); drivewatch writes only to an "
                          "unused device"};
    }
    return SysError(err, "open " + path + (write ? " O_RDWR" : " O_RDONLY") +
                             (exclusive ? "|O_EXCL" : "") + "|O_DIRECT");
  }
  if (Status measured = Measure(f, path); !measured) {
    ::close(f.fd);
    return measured.error();
  }
  return f;
}

}  // namespace drivewatch::util
