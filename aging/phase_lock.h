// SPDX-License-Identifier: Apache-2.0
// Internal to the phase runner (aging/phase_runner.cc) and its recovery
// (aging/phase_recovery.cc): the flocks in <state>/phases that keep at most
// one heavy phase on a target and on a drive, across processes.
#pragma once

#include <string>
#include <utility>

#include <unistd.h>

#include "probes/expected.h"

namespace drivewatch::aging::phase_detail {

// An exclusive flock on a file in the state directory, held for the run.
// Take() fails with EBUSY ("busy: HOLDER (pid N)") while another holds it.
class StateLock {
 public:
  static Expected<StateLock> Take(const std::string& path, const std::string& holder);
  StateLock() = default;
  StateLock(StateLock&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  StateLock& operator=(StateLock&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  ~StateLock() {
    if (fd_ >= 0) close(fd_);  // releases the flock
  }

 private:
  int fd_ = -1;
};

// <state>/phases/target-NAME.lock and drive-SERIAL.lock, with any
// character but [A-Za-z0-9.-] of the name or serial made '_'.
std::string TargetLockPath(const std::string& state_directory, const std::string& target);
std::string DriveLockPath(const std::string& state_directory, const std::string& serial);

}  // namespace drivewatch::aging::phase_detail
