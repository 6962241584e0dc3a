// SPDX-License-Identifier: Apache-2.0
#include "probes/io_target.h"

#include <fcntl.h>
#include <liburing.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "config/util/direct_open.h"
#include "config/util/sys.h"

namespace drivewatch {

struct IoTarget::Ring {
  io_uring ring{};
};
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kReadTag = 1;
constexpr std::uint64_t kCancelTag = 2;
// How long one wait may block before the stop token is looked at again.
constexpr auto kWaitSlice = std::chrono::milliseconds(200);

using util::SysError;

__kernel_timespec ToTimespec(Clock::duration d) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  __kernel_timespec ts{};
  ts.tv_sec = std::max<long long>(0, ns / 1'000'000'000);
  ts.tv_nsec = ns < 0 ? 0 : ns % 1'000'000'000;
  return ts;
}

}  // namespace

Expected<std::unique_ptr<IoTarget>> IoTarget::OpenBlockDevice(
    const std::string& path, std::uint32_t block_size) {
  return Open(path, block_size, /*is_file=*/false);
}

Expected<std::unique_ptr<IoTarget>> IoTarget::OpenFile(const std::string& path,
                                                       std::uint32_t block_size) {
  return Open(path, block_size, /*is_file=*/true);
}

Expected<std::unique_ptr<IoTarget>> IoTarget::Open(const std::string& path,
                                                   std::uint32_t block_size,
                                                   bool is_file) {
  std::unique_ptr<IoTarget> t(new IoTarget());
  t->path_ = path;
  t->is_file_ = is_file;
  t->block_size_ = block_size;
  auto opened = util::OpenDirect(path, util::DirectAccess::kRead);
  if (!opened) return opened.error();
  t->fd_ = opened->fd;
  const struct stat& st = opened->st;
  t->ino_ = st.st_ino;
  t->dev_ = st.st_dev;
  t->size_ = opened->size;
  if (is_file) {
    if (!S_ISREG(st.st_mode)) {
      return Error{EINVAL, -1, path + ": not a regular file"};
    }
  } else {
    if (!S_ISBLK(st.st_mode)) {
      return Error{ENOTBLK, -1, path + ": not a block device"};
    }
    t->rdev_ = st.st_rdev;
    const std::uint32_t logical = opened->logical_block_size;
    if (block_size % logical != 0) {
      return Error{EINVAL, -1,
                   path + ": block size " + std::to_string(block_size) +
                       " is not a multiple of the logical block size " +
                       std::to_string(logical)};
    }
  }
  if (t->size_ < block_size) {
    return Error{EINVAL, -1,
                 path + ": " + std::to_string(t->size_) +
                     " bytes, smaller than one block of " +
                     std::to_string(block_size)};
  }

  void* mem = ::mmap(nullptr, block_size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return SysError(errno, "mmap read buffer");
  t->buffer_ = mem;

  t->ring_ = std::make_unique<Ring>();
  int rc = InitSingleIssuerRing(4, &t->ring_->ring);
  if (rc < 0) return SysError(-rc, "io_uring_queue_init for " + path);
  t->ring_ok_ = true;
  iovec iov{t->buffer_, block_size};
  if ((rc = io_uring_register_buffers(&t->ring_->ring, &iov, 1)) < 0) {
    return SysError(-rc, "io_uring_register_buffers for " + path);
  }
  if ((rc = io_uring_register_files(&t->ring_->ring, &t->fd_, 1)) < 0) {
    return SysError(-rc, "io_uring_register_files for " + path);
  }
  return t;
}

int InitSingleIssuerRing(unsigned entries, io_uring* ring) {
  const unsigned kFlags[] = {
      IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
      IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN,
      IORING_SETUP_COOP_TASKRUN, 0};
  int rc = -EINVAL;
  for (unsigned flags : kFlags) {
    rc = io_uring_queue_init(entries, ring, flags);
    if (rc != -EINVAL) break;
  }
  return rc;
}

IoTarget::~IoTarget() {
  // With a read still in flight the kernel keeps the buffer's pages pinned
  // past the ring's exit; unmapping them here only drops our mapping.
  if (ring_ok_) io_uring_queue_exit(&ring_->ring);
  if (buffer_ != nullptr) ::munmap(buffer_, block_size_);
  if (fd_ >= 0) ::close(fd_);
}

IoTarget::Wait IoTarget::WaitForRead(Clock::time_point deadline,
                                     const std::stop_token& stop,
                                     int* result) {
  for (;;) {
    io_uring_cqe* cqe = nullptr;
    const auto now = Clock::now();
    if (now >= deadline && !submit_pending_) return Wait::kTimeout;
    __kernel_timespec ts = ToTimespec(std::min(deadline - now,
                                               Clock::duration(kWaitSlice)));
    int rc;
    if (submit_pending_) {
      submit_pending_ = false;
      rc = io_uring_submit_and_wait_timeout(&ring_->ring, &cqe, 1, &ts, nullptr);
    } else {
      rc = io_uring_wait_cqe_timeout(&ring_->ring, &cqe, &ts);
    }
    if (rc >= 0 && cqe != nullptr) {
      const std::uint64_t tag = cqe->user_data;
      const int res = cqe->res;
      io_uring_cqe_seen(&ring_->ring, cqe);
      if (tag == kReadTag) {
        *result = res;
        return Wait::kDone;
      }
      continue;  // a cancel's own completion
    }
    if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EAGAIN) {
      *result = rc;
      return Wait::kDone;
    }
    if (stop.stop_requested()) return Wait::kStopped;
  }
}

ReadOutcome IoTarget::Read(std::uint64_t offset,
                           std::chrono::nanoseconds timeout,
                           const std::stop_token& stop) {
  ReadOutcome out;
  int res = 0;
  if (in_flight_) {
    // The earlier read timed out; it must land before the buffer is reused.
    const Wait w = WaitForRead(Clock::now() + timeout, stop, &res);
    if (w == Wait::kStopped) {
      out.kind = ReadOutcome::Kind::kStopped;
      return out;
    }
    if (w == Wait::kTimeout) {
      out.kind = ReadOutcome::Kind::kStillBusy;
      return out;
    }
    in_flight_ = false;
  }

  io_uring_sqe* sqe = io_uring_get_sqe(&ring_->ring);
  if (sqe == nullptr) {
    out.kind = ReadOutcome::Kind::kError;
    out.errnum = EBUSY;
    return out;
  }
  // Index 0 of the registered files and buffers.
  io_uring_prep_read_fixed(sqe, 0, buffer_, block_size_, offset, 0);
  sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data64(sqe, kReadTag);
  submit_pending_ = true;
  in_flight_ = true;

  out.submitted = Clock::now();
  const Wait w = WaitForRead(out.submitted + timeout, stop, &res);
  out.completed = Clock::now();
  if (w == Wait::kStopped) {
    out.kind = ReadOutcome::Kind::kStopped;
    return out;
  }
  if (w == Wait::kTimeout) {
    // Ask for it back. Reads the device already holds usually cannot be
    // recalled (-EALREADY), so the next Read still waits for it.
    if (io_uring_sqe* cancel = io_uring_get_sqe(&ring_->ring)) {
      io_uring_prep_cancel64(cancel, kReadTag, 0);
      io_uring_sqe_set_data64(cancel, kCancelTag);
      io_uring_submit(&ring_->ring);
    }
    out.kind = ReadOutcome::Kind::kTimeout;
    return out;
  }
  in_flight_ = false;
  if (res < 0) {
    out.kind = ReadOutcome::Kind::kError;
    out.errnum = -res;
  } else if (static_cast<std::uint32_t>(res) != block_size_) {
    out.kind = ReadOutcome::Kind::kError;
    out.errnum = 0;  // short read: the target shrank
  }
  return out;
}

Status IoTarget::CheckStillThere() const {
  if (!is_file_) return Ok{};
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    return SysError(errno, path_ + " (open for reading)");
  }
  if (st.st_ino != ino_ || st.st_dev != dev_) {
    return Error{ENOENT, -1, path_ + ": replaced by another file"};
  }
  return Ok{};
}

namespace {

// The test file's content: non-zero, non-repeating data (so a compressing
// or deduplicating drive stores, and reads back, every block), from a
// xorshift generator seeded by the file's size. The content is also how
// drivewatch knows a file as its own: no other file begins so.
class TestPattern {
 public:
  explicit TestPattern(std::uint64_t size) : x_(0x9e3779b97f4a7c15ull ^ size) {}
  void Fill(std::vector<std::uint64_t>& words) {
    for (auto& word : words) {
      x_ ^= x_ << 13;
      x_ ^= x_ >> 7;
      x_ ^= x_ << 17;
      word = x_;
    }
  }

 private:
  std::uint64_t x_;
};

// Whether the regular file at `path`, `found` bytes long, is drivewatch's
// test file: empty (nothing in it to lose), or beginning as the test file
// of its own size, or of `size` (one of ours cut short).
bool IsOwnTestFile(const std::string& path, std::uint64_t found, std::uint64_t size) {
  if (found == 0) return true;
  const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(found, 4096));
  std::vector<char> got(n);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t r = ::pread(fd, got.data(), n, 0);
  ::close(fd);
  if (r != static_cast<ssize_t>(n)) return false;
  for (const std::uint64_t seed : {found, size}) {
    std::vector<std::uint64_t> want(512);  // 4 KiB
    TestPattern(seed).Fill(want);
    if (std::memcmp(got.data(), want.data(), n) == 0) return true;
  }
  return false;
}

}  // namespace

Expected<std::string> PrepareTestFile(const std::string& directory,
                                      const std::string& name,
                                      std::uint64_t size,
                                      double min_free_ratio) {
  const std::string path = directory + "/" + name;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    // Only ever our own regular file: a symlink or a device planted under
    // the name (the directory may be shared, /var/tmp) is neither read
    // through nor replaced.
    if (!S_ISREG(st.st_mode)) {
      return Error{EPERM, -1,
                   "test file " + path + ": it exists and is not a regular file (remove it)"};
    }
    const auto found = static_cast<std::uint64_t>(st.st_size);
    // Replacing a file is writing it: only drivewatch's own test file, made
    // earlier for another size, is replaced; somebody's file that happens to
    // bear its name is not.
    if (!IsOwnTestFile(path, found, size)) {
      return Error{EPERM, -1,
                   "test file " + path + ": it exists and drivewatch did not write it (" +
                       std::to_string(found) +
                       " bytes that do not begin with drivewatch's test pattern); move it "
                       "away, or remove it if its data may be lost"};
    }
    if (found == size) return path;  // created earlier: reuse
  }
  struct statvfs vfs {};
  if (::statvfs(directory.c_str(), &vfs) != 0) {
    return SysError(errno, "test directory " + directory);
  }
  const double total = static_cast<double>(vfs.f_blocks) * vfs.f_frsize;
  const double free_after =
      static_cast<double>(vfs.f_bavail) * vfs.f_frsize - static_cast<double>(size);
  if (free_after < total * min_free_ratio) {
    return Error{ENOSPC, -1,
                 "test file " + path + ": creating " + std::to_string(size) +
                     " bytes would leave less than " +
                     std::to_string(static_cast<int>(min_free_ratio * 100)) +
                     "% of " + directory + "'s file system free"};
  }
  // A new file of our own, never one found under the name: a stale temp
  // file from a crash is removed (unlink does not follow a symlink), and
  // O_EXCL | O_NOFOLLOW refuses whatever appears there in between.
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  const int fd =
      ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return SysError(errno, "create " + tmp);
  std::vector<std::uint64_t> chunk((1 << 20) / sizeof(std::uint64_t));
  TestPattern pattern(size);
  std::uint64_t written = 0;
  int err = 0;
  while (written < size && err == 0) {
    pattern.Fill(chunk);
    const std::size_t n = static_cast<std::size_t>(
        std::min<std::uint64_t>(size - written, chunk.size() * sizeof(std::uint64_t)));
    const char* p = reinterpret_cast<const char*>(chunk.data());
    std::size_t done = 0;
    while (done < n) {
      const ssize_t w = ::write(fd, p + done, n - done);
      if (w < 0) {
        if (errno == EINTR) continue;
        err = errno;
        break;
      }
      done += static_cast<std::size_t>(w);
    }
    written += done;
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  ::close(fd);
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    return SysError(err, "write test file " + path);
  }
  if (Status synced = util::FsyncDirectory(directory); !synced) {
    return SysError(synced.error().errnum, "fsync " + directory);
  }
  return path;
}

}  // namespace drivewatch
