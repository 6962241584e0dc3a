// SPDX-License-Identifier: Apache-2.0
// Faults of the state directory as metrics an alert can use, next to the
// log lines (compare node_exporter's node_textfile_scrape_error): whether
// the directory takes a durable write right now, and whether history.log
// reads back whole. Retention studies report their own records
// (exporter/retention_service.h).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "config/config.h"
#include "config/util/expected.h"
#include "exporter/metric_store.h"
#include "exporter/service.h"

namespace drivewatch {

class StateHealthService : public Service {
 public:
  explicit StateHealthService(MetricStore& store,
                              std::chrono::milliseconds interval = std::chrono::seconds{30});
  ~StateHealthService() override;
  void Start(const config::Config& config) override;
  void Reconfigure(const config::Config& config) override;
  void Stop() override;
  // One pass: the write probe, then history.log if it changed since the
  // last pass. Public for tests.
  void Tick();

 private:
  MetricStore& store_;
  std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::string state_directory_;  // guarded by mu_
  // Guarded by tick_mu_: what the last pass found, so each change is
  // logged once, and the history file's identity when last read.
  std::mutex tick_mu_;
  std::string write_problem_ = "-";
  std::string history_problem_ = "-";
  struct FileStamp {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = -1;
    std::int64_t mtime_ns = 0;
    bool operator==(const FileStamp&) const = default;
  } history_stamp_;
  std::string history_path_;
  double history_damaged_ = 0;
  bool history_readable_ = true;
  std::jthread thread_;
};

// Creates, writes 4 KiB to, fsyncs and unlinks a probe file in `directory`
// (created first if missing): a read-only mount, a full file system, lost
// permissions or an I/O error all fail it. The error names the directory,
// the call and errno's text.
Status ProbeDirectoryWritable(const std::string& directory);

}  // namespace drivewatch
