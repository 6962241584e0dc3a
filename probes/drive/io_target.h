// SPDX-License-Identifier: Apache-2.0
// IoTarget: the drive layer's path for data I/O. One target is a namespace's
// block device, another block device, or a file in a directory, opened
// O_RDONLY | O_DIRECT so no read is served from the page cache. The reads
// themselves go through the read reactor's io_uring (probes/latency/read_reactor.h),
// which serves every target from one thread; a target is the open file and
// what it is (size, device number, identity for CheckStillThere).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "config/util/expected.h"

struct io_uring;

namespace drivewatch {

// io_uring_queue_init with the newest setup flags the kernel takes, tried
// newest first (a kernel that lacks one refuses it with EINVAL):
// SINGLE_ISSUER | DEFER_TASKRUN (6.1), SINGLE_ISSUER | COOP_TASKRUN (6.0),
// COOP_TASKRUN, none. SINGLE_ISSUER lets the kernel skip submission locking;
// DEFER_TASKRUN runs completion work only when the ring's thread enters to
// wait. The ring belongs to the thread that creates it. Returns 0 or -errno.
int InitSingleIssuerRing(unsigned entries, io_uring* ring);

struct ReadOutcome {
  enum class Kind {
    kOk,       // the whole block was read
    kError,    // failed, or short (errnum 0): see errnum
    kTimeout,  // no completion within the timeout; still in flight
  };
  Kind kind = Kind::kOk;
  int errnum = 0;
  // CLOCK_MONOTONIC, taken just before the system call that submitted the
  // read and just after the call that reaped its completion returned (as
  // fio times a read: its service latency, submission to completion). For
  // a timeout, `completed` is when the timeout was noticed.
  std::chrono::steady_clock::time_point submitted;
  std::chrono::steady_clock::time_point completed;
  std::uint64_t latency_ns() const {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(completed -
                                                             submitted)
            .count());
  }
};

class IoTarget {
 public:
  // Opens a block device read-only. `block_size` must be a multiple of its
  // logical block size.
  static Expected<std::unique_ptr<IoTarget>> OpenBlockDevice(
      const std::string& path, std::uint32_t block_size);
  // Opens an existing file read-only (see PrepareTestFile).
  static Expected<std::unique_ptr<IoTarget>> OpenFile(const std::string& path,
                                                      std::uint32_t block_size);
  ~IoTarget();
  IoTarget(const IoTarget&) = delete;
  IoTarget& operator=(const IoTarget&) = delete;

  const std::string& path() const { return path_; }
  // Bytes readable: the device's size, or the file's when opened.
  std::uint64_t size() const { return size_; }
  std::uint32_t block_size() const { return block_size_; }
  // The block device's number (st_rdev) as opened, for identity checks in
  // sysfs (namespace_identity.h); 0 for files.
  dev_t device_number() const { return rdev_; }
  // The open descriptor (O_RDONLY | O_DIRECT), the target's own until it is
  // destroyed.
  int fd() const { return fd_; }

  // For files: fails with ENOENT when the path no longer names the open
  // file (removed or replaced). Block devices always pass.
  Status CheckStillThere() const;

 private:
  IoTarget() = default;
  static Expected<std::unique_ptr<IoTarget>> Open(const std::string& path,
                                                  std::uint32_t block_size,
                                                  bool is_file);
  std::string path_;
  bool is_file_ = false;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::uint32_t block_size_ = 0;
  std::uint64_t ino_ = 0, dev_ = 0;
  dev_t rdev_ = 0;
};

// Lays out fio's "test directory" style target: `directory/name` of exactly
// `size` bytes of non-zero data, written and fsynced once (a preallocated
// but unwritten extent would be read as zeros without touching the media),
// then published by rename. An existing file of the right size is reused;
// one of another size is replaced. Refuses to create a file that would
// leave less than `min_free_ratio` of the file system free. Returns the
// file's path.
Expected<std::string> PrepareTestFile(const std::string& directory,
                                      const std::string& name,
                                      std::uint64_t size,
                                      double min_free_ratio);

}  // namespace drivewatch
