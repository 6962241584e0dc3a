// SPDX-License-Identifier: Apache-2.0
// Internal to the phase runner (aging/runner/phase_runner.cc), its recovery
// (aging/runner/phase_recovery.cc) and the endurance reset (aging/phases/endurance.cc):
// the flocks in <state>/phases that keep at most
// one heavy phase on a target and on a drive, across processes, and the
// recording of a checkpoint a killed run left behind.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include <unistd.h>

#include "aging/runner/phase_runner.h"
#include "config/util/expected.h"
#include "config/util/json.h"

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
// character but [A-Za-z0-9.-] of the name or serial made '_'. A run holds
// its target's lock for as long as its checkpoint exists (RunPhase), and
// recovery takes it to tell a live run from a crashed one.
std::string TargetLockPath(const std::string& state_directory, const std::string& target);
std::string DriveLockPath(const std::string& state_directory, const std::string& serial);

// Records the run a checkpoint left behind as interrupted, and removes the
// checkpoint: at startup for every checkpoint, and by a run that finds its
// phase's checkpoint when it starts (a run killed while the daemon went
// on), which must not overwrite it. A run keeps its target's lock until
// its checkpoint is gone, so a checkpoint whose target another process
// holds belongs to a run that is still going (a phase run by hand while
// the daemon starts, or the other way round): it is left alone, and the
// error is EBUSY. The lock is kept while the checkpoint is recorded, so no
// run starts on the target meanwhile; `held_target` names a target whose
// lock the caller holds already. Returns the record appended, if any; on
// error the checkpoint stays (nothing may be lost).
std::optional<Json> RecordInterrupted(const std::string& state_directory,
                                      const std::string& phase,
                                      const std::string& held_target, Status* error,
                                      const ControllerOpener& open);

// Removes the work directory (PhaseContext::WorkDirectory) a run of
// `target` left, if any: the kind that made it releases it first
// (KindReleaseWork: a server it started there is stopped). Called with
// the target's lock held: by a run as it starts and as it ends, and by
// recovery for an interrupted run's target. Ok when there is none.
Status ReleaseLeftoverWork(const std::string& state_directory, const std::string& target);

}  // namespace drivewatch::aging::phase_detail
