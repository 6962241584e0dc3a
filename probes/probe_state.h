// SPDX-License-Identifier: Apache-2.0
// Durable per-drive memory for the probes that read logs a drive keeps for
// years (self-test results, error information, persistent events): what
// drivewatch has already counted must survive a restart, or the history
// would be counted again. Probes see only this small interface; the
// exporter backs it with crash-safe files in the state directory
// (config/util/durable_file.h), tests with memory or a temporary directory.
#pragma once

#include <cerrno>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "config/util/expected.h"

namespace drivewatch {

class StateStore {
 public:
  virtual ~StateStore() = default;
  // The content last saved under `name`; an error with errnum ENOENT when
  // nothing was ever saved.
  virtual Expected<std::string> Load(const std::string& name) = 0;
  // Replaces the content under `name` atomically: after a crash a Load
  // sees the old content or the new, never a mix.
  virtual Status Save(const std::string& name, const std::string& content) = 0;
};

// Keeps everything in memory: for `collect --once` and tests.
class MemoryStateStore : public StateStore {
 public:
  Expected<std::string> Load(const std::string& name) override {
    std::lock_guard lock(mu_);
    auto it = files_.find(name);
    if (it == files_.end()) return Error{ENOENT, -1, name + ": not saved yet"};
    return it->second;
  }
  Status Save(const std::string& name, const std::string& content) override {
    std::lock_guard lock(mu_);
    files_[name] = content;
    return Ok{};
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string> files_;
};

// "key value" lines, the format of the probes' state files: one key per
// line, the value is the rest of the line. Later lines win; lines without a
// space are ignored (a torn write cannot happen, see StateStore::Save, but a
// hand edit can).
std::multimap<std::string, std::string> ParseStateLines(std::string_view text);

// Which drives a heavy phase (aging/) is working on now. Work that must
// never overlap one, such as a scheduled device self-test, asks Busy()
// before it starts. Heavy phases mark a drive for their whole run with
// SetBusy(serial, "phase NAME") and ClearBusy(serial) at the end
// (exporter/phase_service.cc). Thread-safe.
class DriveBusyBoard {
 public:
  void SetBusy(const std::string& serial, std::string reason) {
    std::lock_guard lock(mu_);
    busy_[serial] = std::move(reason);
  }
  void ClearBusy(const std::string& serial) {
    std::lock_guard lock(mu_);
    busy_.erase(serial);
  }
  // Why the drive is busy ("phase fill"), or empty when it is not.
  std::string Busy(const std::string& serial) const {
    std::lock_guard lock(mu_);
    auto it = busy_.find(serial);
    return it == busy_.end() ? std::string() : it->second;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::string> busy_;
};

}  // namespace drivewatch
