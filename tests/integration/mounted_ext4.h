// SPDX-License-Identifier: Apache-2.0
// A tiny ext4 file system on a loop device, mounted in a fresh directory
// under /tmp, for tests of what drivewatch does when the state directory's
// file system is full or read-only (root, as in CI). Unmounted and removed
// on destruction.
#pragma once

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace drivewatch::testing {

class MountedExt4 {
 public:
  // `size` as truncate(1) takes it ("2M"). On failure, mountpoint() is
  // empty and why() says why (the test then skips).
  explicit MountedExt4(const std::string& size = "2M") {
    if (::geteuid() != 0) {
      why_ = "needs root to mount a loop device";
      return;
    }
    char tmpl[] = "/tmp/dw_ext4.XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) {
      why_ = std::string("mkdtemp: ") + std::strerror(errno);
      return;
    }
    base_ = tmpl;
    const std::string image = base_ + "/fs.img", mnt = base_ + "/mnt";
    std::filesystem::create_directory(mnt);
    if (std::system(("truncate -s " + size + " " + image + " && mkfs.ext4 -q -F " + image +
                     " >/dev/null 2>&1").c_str()) != 0) {
      why_ = "mkfs.ext4 unavailable";
      return;
    }
    if (std::system(("mount -o loop " + image + " " + mnt + " >/dev/null 2>&1").c_str()) != 0) {
      why_ = "cannot mount a loop device here";
      return;
    }
    mountpoint_ = mnt;
  }
  ~MountedExt4() {
    if (!mountpoint_.empty() && ::umount2(mountpoint_.c_str(), 0) != 0) {
      ::umount2(mountpoint_.c_str(), MNT_DETACH);
    }
    if (!base_.empty()) std::filesystem::remove_all(base_);
  }
  MountedExt4(const MountedExt4&) = delete;
  MountedExt4& operator=(const MountedExt4&) = delete;

  const std::string& mountpoint() const { return mountpoint_; }
  const std::string& why() const { return why_; }

  // Writes `mountpoint()/filler` until the file system refuses (big
  // chunks, then smaller ones to take the last free blocks too, ext4's
  // reserve included: root writes there), then gives `leave_free` bytes
  // back. False when the file could not be made.
  bool Fill(off_t leave_free = 0) const {
    const int fd = ::open((mountpoint_ + "/filler").c_str(),
                          O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    const std::string chunk(64 * 1024, 'f');
    for (std::size_t size = chunk.size(); size >= 512; size /= 2) {
      while (::write(fd, chunk.data(), size) > 0) {
      }
    }
    const off_t full = ::lseek(fd, 0, SEEK_END);
    const bool ok = full > leave_free && ::ftruncate(fd, full - leave_free) == 0;
    ::fsync(fd);
    ::close(fd);
    return ok;
  }
  void Unfill() const { std::filesystem::remove(mountpoint_ + "/filler"); }

 private:
  std::string base_;
  std::string mountpoint_;
  std::string why_;
};

}  // namespace drivewatch::testing
