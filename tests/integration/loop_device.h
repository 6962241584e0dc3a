// SPDX-License-Identifier: Apache-2.0
// A loop device over a file in /var/tmp, for tests that need a real block
// device (root, as in CI). Detached and removed on destruction.
#pragma once

#include <unistd.h>

#include <climits>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace drivewatch::testing {

// Runs a shell command; its stdout without the trailing newline, or
// nullopt-like empty string with `ok` false on a non-zero exit.
inline std::string Shell(const std::string& command, bool* ok = nullptr) {
  std::string out;
  FILE* p = popen((command + " 2>/dev/null").c_str(), "r");
  if (p == nullptr) {
    if (ok) *ok = false;
    return out;
  }
  std::array<char, 4096> buf;
  while (std::size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  const int rc = pclose(p);
  if (ok) *ok = rc == 0;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class LoopDevice {
 public:
  // A loop device of `mib` MiB, with direct I/O so O_DIRECT reaches the
  // backing file, and `sector_size` logical blocks (0: losetup's 512 B).
  // device() is empty when it could not be made.
  explicit LoopDevice(int mib, int sector_size = 0) {
    char tmpl[] = "/var/tmp/dw-loop-XXXXXX";
    const int fd = mkstemp(tmpl);
    if (fd < 0) return;
    close(fd);
    backing_ = tmpl;
    if (truncate(backing_.c_str(), static_cast<off_t>(mib) << 20) != 0) return;
    device_ = Shell("losetup --direct-io=on --show -f " +
                    (sector_size ? "--sector-size " + std::to_string(sector_size) + " " : "") +
                    backing_);
  }
  ~LoopDevice() {
    if (!device_.empty()) Shell("losetup -d " + device_);
    if (!backing_.empty()) unlink(backing_.c_str());
  }
  LoopDevice(const LoopDevice&) = delete;
  LoopDevice& operator=(const LoopDevice&) = delete;

  const std::string& device() const { return device_; }
  const std::string& backing() const { return backing_; }
  // The identity drivewatch reads for a loop device (aging/safety/interlocks.h).
  std::string serial() const {
    char resolved[PATH_MAX];
    return "loop:" + std::string(realpath(backing_.c_str(), resolved) ? resolved : backing_.c_str());
  }

 private:
  std::string backing_;
  std::string device_;
};

}  // namespace drivewatch::testing
