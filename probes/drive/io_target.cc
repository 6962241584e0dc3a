// SPDX-License-Identifier: Apache-2.0
#include "probes/drive/io_target.h"

#include <fcntl.h>
#include <liburing.h>
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

using util::SysError;

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
  if (fd_ >= 0) ::close(fd_);
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

namespace {

// Writes `size` bytes of the test pattern to `fd`; 0, or the errno of the
// write that failed.
int WritePattern(int fd, std::uint64_t size) {
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
  return err;
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
  int err = WritePattern(fd, size);
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
