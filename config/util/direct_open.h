// SPDX-License-Identifier: Apache-2.0
// The one O_DIRECT opener of an I/O target (a block device or a regular
// file), shared by the read-latency probe's IoTarget and the workload
// engine. It only opens and measures: whether a write may happen is the
// interlocks' decision (aging/safety/interlocks.h), made before anything calls
// this with kReadWrite.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "config/util/expected.h"

namespace drivewatch::util {

enum class DirectAccess { kRead, kReadWrite };

struct DirectFile {
  // The caller owns it on success; OpenDirect() closes it on failure.
  int fd = -1;
  struct stat st {};
  // Bytes: BLKGETSIZE64 for a block device, st_size for a regular file.
  std::uint64_t size = 0;
  // BLKSSZGET for a block device; the file system's direct I/O alignment
  // (statx STATX_DIOALIGN, Linux 6.1) for a file, or 512 where unknown.
  std::uint32_t logical_block_size = 512;
};

// Opens `path` with O_DIRECT. A block device opened for writing is opened
// O_EXCL as well, so the kernel refuses to mount it, swap on it or let
// dm/md claim it while we write (and refuses us, EBUSY, while any of them
// holds it). One opened for reading is opened O_NOATIME where the caller may
// (it owns the file, or has CAP_FOWNER), so reading it writes no access time.
// Any other kind of file opens too: the caller checks st.st_mode.
Expected<DirectFile> OpenDirect(const std::string& path, DirectAccess access);

}  // namespace drivewatch::util
