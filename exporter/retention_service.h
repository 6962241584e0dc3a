// SPDX-License-Identifier: Apache-2.0
// The daemon's side of data-retention studies (docs/retention.md). Once a
// minute it takes the composite temperature of every active study's drive
// that is present (found by serial and namespace, whatever its kernel name
// this boot) into the study's Arrhenius accounting, and it exports every
// study in the state directory as drivewatch_retention_* metrics: ages,
// the last verify's bad blocks by class and latency quantiles against the
// baseline. Verifies themselves are heavy phases (retention-verify), run by
// the phase service on their schedule.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "config/config.h"
#include "exporter/metric_store.h"

namespace drivewatch {

class RetentionService {
 public:
  explicit RetentionService(MetricStore& store,
                            std::chrono::milliseconds interval = std::chrono::minutes{1},
                            std::string sysfs_root = "/sys");
  ~RetentionService();
  void Start(const config::Config& config);
  void Reconfigure(const config::Config& config);
  void Stop();
  // One pass at `now` (Unix seconds): samples, then publishes. Public for
  // tests.
  void Tick(double now);

 private:
  MetricStore& store_;
  std::chrono::milliseconds interval_;
  std::string sysfs_root_;
  std::mutex mu_;
  std::string state_directory_;  // guarded by mu_
  std::jthread thread_;
};

}  // namespace drivewatch
